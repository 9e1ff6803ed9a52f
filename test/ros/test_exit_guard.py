"""Unit tests: the exit guard ends a process whose teardown stalls, even holding the interpreter
lock, with the given exit code; a disarmed guard does nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time


def _run(body: str, timeout_s: float = 20.0) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=timeout_s)
    return done, time.monotonic() - t0


def test_a_stall_holding_the_interpreter_lock_ends_with_the_given_code():
    done, _ = _run("""
        import ctypes, time
        from kangaroo_wbc.ros import exit_guard
        exit_guard.prepare()
        t0 = time.monotonic()
        exit_guard.arm(0.5, 7, "test teardown")
        ctypes.PyDLL(None).sleep(15)  # a native call that keeps the interpreter lock
        print("not reached")
    """)
    assert done.returncode == 7, done.stderr
    assert "not reached" not in done.stdout
    assert "test teardown still running after 0.5 s" in done.stderr


def test_a_disarmed_guard_lets_the_process_finish():
    done, _ = _run("""
        import time
        from kangaroo_wbc.ros import exit_guard
        exit_guard.arm(0.3, 7)
        exit_guard.disarm()
        time.sleep(1.0)
        exit_guard.arm(0.3, 8)
        exit_guard.arm(5.0, 9)  # replaces the 0.3 s guard
        time.sleep(1.0)
        print("finished", time.monotonic(), flush=True)
    """)
    ended = time.monotonic()  # the system's monotonic clock: the child's is the same
    assert done.returncode == 0 and "finished" in done.stdout, done.stderr
    # the interpreter's exit did not wait for the last guard (5 s after it was armed); counted from
    # the child's last line, so that a slow start on a loaded machine does not count
    assert ended - float(done.stdout.split()[-1]) < 3.0
