"""What the node-graph runner reports about its own processes, with the nodes replaced by stand-in
processes (unit tests: no ROS, no node starts): no process is started once ``stop()`` returned
True, and a process that exits with a code other than 0 makes ``controller_stayed_ready`` false."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kangaroo_wbc_tools.graph import processes


@pytest.fixture
def stand_ins(monkeypatch):
    """``_start`` replaced: every "node" is a Python process that sleeps until SIGINT (exit 0), or
    exits at once with the code in ``codes`` (by name); the names started are recorded."""
    started: list[str] = []
    codes: dict[str, int] = {}

    def start(name, argv, params_file, log_dir):
        started.append(name)
        code = codes.get(name)
        script = (f"import sys; sys.exit({code})" if code is not None else
                  "import signal, sys, time\nsignal.signal(signal.SIGINT, lambda *a: sys.exit(0))\n"
                  "print('ready', flush=True)\ntime.sleep(60)")
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        if code is None:
            assert proc.stdout.readline().strip() == "ready"  # its handler is in place
        else:
            proc.wait()  # a node that failed before it was asked to stop
        return proc

    monkeypatch.setattr(processes, "_start", start)
    return started, codes


def test_no_process_is_started_after_a_signal(stand_ins, tmp_path):
    """Unit: ``stop()`` True after two starts: the start-up ends (GraphStartError naming the
    interrupt, with the exit codes of the processes it had started), no third process."""
    started, _ = stand_ins
    polls = []

    def stop() -> bool:
        polls.append(len(started))
        return len(started) >= 2

    with pytest.raises(processes.GraphStartError, match="interrupted before the controller was ready") as info:
        processes.run_graph(processes="separate", duration_s=1.0, stop=stop, log_dir=tmp_path)
    assert started == list(processes.EXECUTABLES[:2])
    assert info.value.exit_codes == dict.fromkeys(started, 0)


def test_a_node_that_failed_voids_controller_stayed_ready(stand_ins, monkeypatch, tmp_path):
    """Unit: the observer saw the controller ready throughout, but one node exited with code 1:
    the summary says the controller did not stay ready, and the exit codes say why."""
    _, codes = stand_ins
    codes["whole_body_controller"] = 1
    monkeypatch.setattr(processes, "_observe", lambda procs, *a, **k: {"controller_stayed_ready": True})
    result = processes.run_graph(processes="separate", duration_s=1.0, log_dir=tmp_path)
    assert result["exit_codes"]["whole_body_controller"] == 1
    assert result["exit_codes"]["sim"] == 0
    assert result["controller_stayed_ready"] is False


def test_every_node_exiting_zero_keeps_the_observers_word(stand_ins, monkeypatch, tmp_path):
    """Unit: the counter-case: every exit code 0, the observer's ``controller_stayed_ready`` stands."""
    monkeypatch.setattr(processes, "_observe", lambda procs, *a, **k: {"controller_stayed_ready": True})
    result = processes.run_graph(processes="separate", duration_s=1.0, log_dir=tmp_path)
    assert set(result["exit_codes"].values()) == {0}
    assert result["controller_stayed_ready"] is True
