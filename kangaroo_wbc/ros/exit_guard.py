"""A bounded teardown: a native thread that ends the process when its shutdown stalls.

A node process shuts down in two parts. First its own work: the shutdown hooks (a zero command,
last diagnostics) and the wait until subscribers acknowledged those last messages. Then the
middleware's teardown: executor, nodes and context are destroyed in rclpy and DDS, and the
interpreter finalises. That second part can block in native code (a class of rclpy/DDS teardown
hangs reported upstream), sometimes holding the interpreter lock, so that no Python thread can
run: a process asked to stop would then never exit, and a launch system kills it after its own
timeout with an error.

:func:`arm` starts a thread that is not a Python thread (a numba ``cfunc`` started with
``pthread_create``, as :mod:`kangaroo_wbc.ros.publication`). If :func:`disarm` has not been called
within the given time, it writes one line to stderr and ends the process with ``_exit(code)``.
:func:`~kangaroo_wbc.ros.node_base.run_nodes` arms it for its shutdown (every thread's stack is
written to the log before, by :mod:`faulthandler`), and a node's console entry point arms it again
for the interpreter's finalisation.
"""

from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np

#: Sleep of one step of the guard [µs]; the deadline is counted in steps.
_STEP_US = 10_000
# control block (int64 words): steps left, exit code, armed flag, message address and length
_STEPS, _CODE, _ARMED, _MSG, _LEN = 0, 1, 2, 3, 4

_lock = threading.Lock()
_guards: list[tuple[np.ndarray, np.ndarray]] = []  # control block and message of every guard (kept alive)


@functools.cache
def _compile():
    """The guard's body, compiled for this process's C library (addresses are baked in)."""
    import numba
    from numba import types

    libc = ctypes.CDLL(None)
    usleep = libc.usleep
    usleep.argtypes, usleep.restype = (ctypes.c_uint32,), ctypes.c_int
    write = libc.write
    write.argtypes, write.restype = (ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64), ctypes.c_int64
    end = libc["_exit"]
    end.argtypes, end.restype = (ctypes.c_int,), None

    @numba.cfunc(types.voidptr(types.voidptr), nopython=True)  # type: ignore[call-arg]  # stub lacks nopython
    def main(arg):  # pragma: no cover - runs in the native thread (tested through its effect)
        ctl = numba.carray(arg, (5,), np.int64)
        while ctl[_STEPS] > 0:
            usleep(_STEP_US)
            if ctl[_ARMED] == 0:
                return arg
            ctl[_STEPS] -= 1
        if ctl[_ARMED] != 0:
            write(2, np.uint64(ctl[_MSG]), np.uint64(ctl[_LEN]))
            end(np.int32(ctl[_CODE]))
        return arg

    return libc, main


def arm(after_s: float, code: int, what: str = "shutdown") -> None:
    """End the process with ``code`` if :func:`disarm` is not called within ``after_s`` [s];
    ``what`` names the stalled part in the line written to stderr. Replaces an armed guard."""
    libc, main = _compile()
    message = np.frombuffer(
        f"[ERROR] [kangaroo_wbc]: {what} still running after {after_s:g} s (stalled in the middleware's "
        f"teardown); exiting with code {code}\n".encode(), dtype=np.uint8).copy()
    ctl = np.array([max(1, int(after_s * 1e6 / _STEP_US)), code, 1, message.ctypes.data, message.size],
                   dtype=np.int64)
    disarm()
    with _lock:
        _guards.append((ctl, message))
    thread = ctypes.c_ulong()
    create = libc.pthread_create
    create.argtypes = (ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    create.restype = ctypes.c_int
    if create(ctypes.byref(thread), None, ctypes.c_void_p(main.address), ctypes.c_void_p(ctl.ctypes.data)) != 0:
        raise OSError("pthread_create failed")
    libc.pthread_detach.argtypes = (ctypes.c_ulong,)
    libc.pthread_detach(thread)


def disarm() -> None:
    """Cancel every armed guard (their threads end within one step)."""
    with _lock:
        for ctl, _ in _guards:
            ctl[_ARMED] = 0


def prepare() -> None:
    """Compile the guard now (a fraction of a second), not when the process is asked to stop."""
    _compile()


__all__ = ["arm", "disarm", "prepare"]
