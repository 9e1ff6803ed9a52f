"""Publication of preserialised messages from a native thread, off the interpreter.

At 1 kHz every ``rcl_publish`` of a matched topic costs 25-40 µs on a small machine (the DDS
write to another process: a copy into shared memory and a wake-up of the reader), and rclpy holds
the interpreter lock throughout. A node's control thread publishing five topics a tick spends a
sixth of its millisecond there, and a Python thread that published for it would need the lock
back after each message.

:class:`PublicationThread` hands the bytes to a thread that is not a Python thread: a compiled
function (numba ``cfunc``) started with ``pthread_create``, which waits on a POSIX semaphore and
calls ``rcl_publish_serialized_message`` for each queued message. The caller pays a copy into a
ring of fixed slots and a ``sem_post`` (a few µs); the DDS write runs on another core. Messages of
one publisher leave in the order they were queued. When the ring is full or a message is larger
than a slot, :meth:`PublicationThread.send` returns False and the caller publishes it itself.

The thread never touches Python objects: publisher handles are kept in use (rclpy's
``Destroyable`` guard) from :meth:`PublicationThread.register` until :meth:`PublicationThread.stop`,
which every owner calls before destroying its node (:class:`~kangaroo_wbc.ros.node_base.KangarooNode`
does). :func:`publication_thread` returns None where the rcl library cannot be loaded by name
(then nodes publish as usual).
"""

from __future__ import annotations

import ctypes
import functools
import threading
from typing import Any

import numpy as np

#: Ring slots and the bytes each holds (a 76-joint JointState with three arrays: ~3.3 kB).
SLOTS = 64
SLOT_BYTES = 8192

# control block (uint64 words), shared with the native thread
_SEM, _HEAD, _TAIL, _STOP, _ERRORS, _BASE = 0, 1, 2, 3, 4, 5
_PUBS = 8  # SLOTS publisher pointers
_MSGS = _PUBS + SLOTS  # SLOTS rcl_serialized_message_t: buffer, length, capacity, allocator (5 words)
_MSG_WORDS = 8
_SEM_WORD = _MSGS + SLOTS * _MSG_WORDS  # the sem_t (32 bytes on 64-bit Linux; 8 words reserved)
_WORDS = _SEM_WORD + 8

_lock = threading.Lock()
_shared: PublicationThread | None = None
_failed = False


@functools.cache
def _compile(rcl: Any, rcutils: Any, libc: Any):
    """The native thread's body, compiled for these libraries (addresses are baked in: no cache)."""
    import numba
    from numba import types

    publish = rcl.rcl_publish_serialized_message
    publish.argtypes, publish.restype = (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64), ctypes.c_int
    reset_error = rcutils.rcutils_reset_error
    reset_error.argtypes, reset_error.restype = (), None
    wait = libc.sem_wait
    wait.argtypes, wait.restype = (ctypes.c_uint64,), ctypes.c_int

    @numba.cfunc(types.voidptr(types.voidptr), nopython=True)  # type: ignore[call-arg]  # stub lacks nopython
    def main(arg):  # pragma: no cover - runs in the native thread (tested through its effects)
        ctl = numba.carray(arg, (_WORDS,), np.uint64)
        one = np.uint64(1)
        while True:
            wait(ctl[_SEM])
            tail = ctl[_TAIL]
            while tail < ctl[_HEAD]:
                slot = int(tail % np.uint64(SLOTS))
                msg = ctl[_BASE] + np.uint64(8 * (_MSGS + slot * _MSG_WORDS))
                if publish(ctl[_PUBS + slot], msg, np.uint64(0)) != 0:
                    ctl[_ERRORS] += one
                    reset_error()
                tail += one
                ctl[_TAIL] = tail
            if ctl[_STOP] != 0:
                return arg

    return main


class PublicationThread:
    """A native thread publishing queued serialised messages (see the module docstring).

    Args:
        rcl, rcutils, libc: the loaded libraries (``ctypes.CDLL``).
    """

    def __init__(self, rcl: Any, rcutils: Any, libc: Any) -> None:
        self._main = _compile(rcl, rcutils, libc)
        self._ctl = np.zeros(_WORDS, dtype=np.uint64)
        self._buffers = np.zeros((SLOTS, SLOT_BYTES), dtype=np.uint8)
        ctl = self._ctl
        base = ctl.ctypes.data
        ctl[_BASE] = base
        ctl[_SEM] = base + 8 * _SEM_WORD
        buf0 = self._buffers.ctypes.data
        msgs = ctl[_MSGS:_MSGS + SLOTS * _MSG_WORDS].reshape(SLOTS, _MSG_WORDS)
        msgs[:, 0] = buf0 + SLOT_BYTES * np.arange(SLOTS, dtype=np.uint64)
        msgs[:, 2] = SLOT_BYTES
        self._lengths = msgs[:, 1]
        self._pubs = ctl[_PUBS:_PUBS + SLOTS]
        self._libc = libc
        # sem_post as a PYFUNCTYPE (PyDLL's calling flags): a ctypes call through CDLL releases the
        # interpreter lock, and taking it back from a busy thread costs up to a switch interval
        sem_post = ctypes.cast(libc.sem_post, ctypes.c_void_p).value
        assert sem_post is not None  # the address of a function libc exports
        self._post = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(sem_post)
        self._sem = ctypes.c_void_p(int(ctl[_SEM]))
        libc.sem_init.argtypes, libc.sem_init.restype = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint), ctypes.c_int
        if libc.sem_init(self._sem, 0, 0) != 0:
            raise OSError("sem_init failed")
        self._head = 0
        self._flushed = 0
        self._deferring: int | None = None
        self._send_lock = threading.Lock()  # several producer threads (executor and loop threads)
        self._handles: list[Any] = []
        self._pointers: dict[int, int] = {}
        self.overflows = 0
        self._thread = ctypes.c_ulong()
        create = libc.pthread_create
        create.argtypes = (ctypes.POINTER(ctypes.c_ulong), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
        create.restype = ctypes.c_int
        if create(ctypes.byref(self._thread), None, ctypes.c_void_p(self._main.address), ctypes.c_void_p(base)) != 0:
            raise OSError("pthread_create failed")
        self._running = True

    def register(self, publisher: Any) -> int:
        """Keep ``publisher`` (an rclpy Publisher) alive for the thread; returns its key for :meth:`send`."""
        handle = publisher.handle
        key = id(publisher)
        if key not in self._pointers:
            handle.__enter__()  # in use: rclpy defers its destruction until stop()
            self._handles.append(handle)
            self._pointers[key] = int(handle.pointer)
        return key

    def send(self, key: int, data: bytes) -> bool:
        """Queue ``data`` (a serialised message) for the publisher registered as ``key``; False if
        it cannot be queued (stopped, ring full, larger than a slot): publish it yourself."""
        n = len(data)
        with self._send_lock:
            head = self._head
            if not self._running or n > SLOT_BYTES or head - int(self._ctl[_TAIL]) >= SLOTS:
                self.overflows += 1
                return False
            slot = head % SLOTS
            self._buffers[slot, :n] = np.frombuffer(data, dtype=np.uint8)
            self._lengths[slot] = n
            self._pubs[slot] = self._pointers[key]
            self._head = head + 1
            self._ctl[_HEAD] = head + 1
        if threading.get_ident() != self._deferring:
            self._post(self._sem)
        return True

    def defer_wakeups(self) -> None:
        """From now on, messages sent by the calling thread wait for its :meth:`flush` (one
        wake-up of the publication thread per control tick, placed where the caller would wait
        anyway, instead of one per message). Other threads' messages go at once."""
        self._deferring = threading.get_ident()

    def flush(self) -> None:
        """Wake the publication thread for what is queued (no-op if nothing is)."""
        if self._head != self._flushed:
            self._flushed = self._head
            self._post(self._sem)

    @property
    def errors(self) -> int:
        """Publications rcl refused so far."""
        return int(self._ctl[_ERRORS])

    @property
    def pending(self) -> int:
        """Messages queued and not yet published."""
        return self._head - int(self._ctl[_TAIL])

    def stop(self) -> None:
        """Publish what is queued, end the thread and release the publishers (idempotent)."""
        with self._send_lock:
            if not self._running:
                return
            self._running = False
        self._ctl[_STOP] = 1
        self._post(self._sem)
        join = self._libc.pthread_join
        join.argtypes, join.restype = (ctypes.c_ulong, ctypes.c_void_p), ctypes.c_int
        join(self._thread, None)  # ctypes releases the interpreter meanwhile
        for handle in self._handles:
            handle.__exit__(None, None, None)
        self._handles.clear()


@functools.cache
def rcl_libraries() -> tuple[Any, Any, Any]:
    """``librcl``, ``librcutils`` and the C library, loaded by name (raises OSError if absent)."""
    return ctypes.CDLL("librcl.so"), ctypes.CDLL("librcutils.so"), ctypes.CDLL(None)


def publication_thread() -> PublicationThread | None:
    """The process's :class:`PublicationThread` (started at the first call), or None where the
    rcl libraries cannot be loaded (nodes then publish themselves)."""
    global _shared, _failed
    with _lock:
        if _shared is None and not _failed:
            try:
                _shared = PublicationThread(*rcl_libraries())
            except (OSError, AttributeError, ImportError):
                _failed = True
        return _shared


def stop_publication_thread() -> None:
    """Stop the process's thread if started (before its nodes are destroyed)."""
    global _shared
    with _lock:
        shared, _shared = _shared, None
    if shared is not None:
        shared.stop()


__all__ = ["PublicationThread", "publication_thread", "rcl_libraries", "stop_publication_thread"]
