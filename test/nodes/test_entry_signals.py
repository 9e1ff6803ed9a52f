"""Integration test: a node executable interrupted at any moment of its life exits 0, quietly.

Each console script of ``setup.py`` (through :mod:`kangaroo_wbc.nodes.entry`) is started as a real
process in an isolated ROS environment and sent SIGINT (or SIGTERM) once it has used 0.05 s, 0.3 s
and 1.0 s of CPU: the first two land while numpy / pinocchio / rclpy are being imported, the last
one around rclpy's initialisation or the node's construction. Every run must end with exit code 0
and no Python traceback. The moments are counted in the process's own CPU time, not wall time: on
a busy machine a wall-clock delay could land in the interpreter's own start-up (its first ~30-45 ms
of CPU, before any code of the package runs), which is outside what a package can handle and not
tested: the first moment is measured on the machine (:func:`_interpreter_start_cpu_s`, the CPU an
interpreter of the same environment uses to start and import the entry module) and the signal
comes after it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import resource
import signal
import subprocess
import sys
import time

import pytest

from test.integration.ros_harness import (  # noqa: F401 - fixture
    _node_entry_points,
    node_command,
    ros_environment,
)

pytestmark = [pytest.mark.ros, pytest.mark.integration]

#: CPU time [s] of the process after which the signal is sent.
DELAYS_S = (0.05, 0.3, 1.0)
#: Longest wall time [s] to wait for the process to use that much CPU.
CPU_WAIT_TIMEOUT_S = 60.0
#: Longest time [s] a node may take to exit after the signal.
EXIT_TIMEOUT_S = 20.0

EXECUTABLES = sorted(_node_entry_points())


def _interrupt(cmd: list[str], env: dict[str, str], delay_s: float, sig: signal.Signals):
    proc = subprocess.Popen(  # noqa: S603 - known command
        cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    _wait_for_cpu(proc, delay_s)
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{cmd}: still running {EXIT_TIMEOUT_S} s after {sig.name}")
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


@functools.lru_cache(maxsize=1)
def _interpreter_start_cpu_s(env_items: tuple) -> float:
    """CPU time [s] an interpreter of this environment uses to start (site, the editable install's
    finder) and import the entry module, before any handler of the package can be in place: the
    most of three runs, measured as the children's CPU time."""
    most = 0.0
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", "import kangaroo_wbc.nodes.entry"], env=dict(env_items),  # noqa: S603
                       check=True, capture_output=True, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        most = max(most, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return most


def _after_start(delay_s: float, env: dict[str, str]) -> float:
    """``delay_s``, or later when this machine's interpreter start-up alone takes that long (the
    signal must land in the package's own imports, not before them)."""
    return max(delay_s, _interpreter_start_cpu_s(tuple(sorted(env.items()))) + 0.02)


def _cpu_s(pid: int) -> float | None:
    """User + system CPU time [s] of process ``pid`` (None once it has exited)."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115, PTH123
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _wait_for_cpu(proc: subprocess.Popen, cpu_s: float) -> None:
    """Until ``proc`` has used ``cpu_s`` of CPU (or exited, or CPU_WAIT_TIMEOUT_S of wall time)."""
    deadline = time.monotonic() + CPU_WAIT_TIMEOUT_S
    while proc.poll() is None and time.monotonic() < deadline:
        used = _cpu_s(proc.pid)
        if used is None or used >= cpu_s:
            return
        time.sleep(0.002)


def test_every_node_executable_goes_through_the_entry_module() -> None:
    """Unit: every console script of setup.py points at kangaroo_wbc.nodes.entry."""
    from kangaroo_wbc.nodes import entry

    for name, target in _node_entry_points().items():
        assert target == f"kangaroo_wbc.nodes.entry:{name}"
        assert callable(getattr(entry, name))
    assert set(entry.NODE_MODULES) == set(_node_entry_points())


@pytest.mark.parametrize("delay_s", DELAYS_S)
@pytest.mark.parametrize("executable", EXECUTABLES)
def test_sigint_during_startup_exits_zero(executable, delay_s, ros_environment) -> None:  # noqa: F811
    """Integration: SIGINT at ``delay_s`` after the start: exit code 0, no traceback."""
    from kangaroo_wbc.nodes.entry import NODE_MODULES

    if importlib.util.find_spec(NODE_MODULES[executable]) is None:
        pytest.skip(f"{NODE_MODULES[executable]} is not part of this tree yet")
    code, out, err = _interrupt(node_command(executable), ros_environment.env,
                                _after_start(delay_s, ros_environment.env), signal.SIGINT)
    assert "Traceback" not in err + out, err
    assert code == 0, f"exit code {code}\n{err}"


@pytest.mark.parametrize("executable", ["state_estimator"])
def test_sigterm_during_imports_exits_zero(executable, ros_environment) -> None:  # noqa: F811
    """Integration: SIGTERM (launch's second escalation step) while importing: exit code 0."""
    code, out, err = _interrupt(node_command(executable), ros_environment.env, 0.3, signal.SIGTERM)
    assert "Traceback" not in err + out, err
    assert code == 0, f"exit code {code}\n{err}"


def test_missing_node_module_is_one_clear_line(monkeypatch, capsys) -> None:
    """Unit: an executable whose module is not installed: one FATAL line, exit code 1."""
    from kangaroo_wbc.nodes import entry

    monkeypatch.setitem(entry.NODE_MODULES, "sim", "kangaroo_wbc.nodes.no_such_node")
    # run() installs the node's quiet-exit handlers: this test runner's are put back after it
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        assert entry.sim() == entry.EXIT_NOT_INSTALLED
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[FATAL]" in err and "kangaroo_wbc.nodes.no_such_node" in err


def test_importing_the_entry_module_elsewhere_keeps_the_signal_handlers() -> None:
    """Only a node's own interpreter gets the quiet-exit handlers: a program importing the module
    (this test runner) keeps its SIGINT / SIGTERM handlers, or a later signal would end it with
    exit code 0 mid-run."""
    import importlib

    from kangaroo_wbc.nodes import entry

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    importlib.reload(entry)
    assert not entry.started_as_node()
    assert {s: signal.getsignal(s) for s in before} == before
