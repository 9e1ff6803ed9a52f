"""SIGINT / SIGTERM end a run at a tick boundary with its results written (exit 130 / 143, no
traceback); a SIGKILL of the CLI leaves none of the node processes it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest.mock import ANY

import pytest

from test.cli.conftest import cli_command, cli_env

#: Wall time [s] before the signal: start-up (imports, model) is about 2 s here; the loop runs after.
SIGNAL_AFTER_S = 5.0


#: ... and at least this long [s] after the loop started (a loaded machine starts slower).
LOOP_TIME_S = 2.0


def _wait_for_the_loop(proc: subprocess.Popen) -> None:
    """Until the progress display's first line (``--progress on``): the loop is running."""
    line = proc.stderr.readline()
    assert "0%" in line, (line, proc.poll())


def _start(args: list[str], cwd: Path, domain_id: int | None = None) -> subprocess.Popen:
    return subprocess.Popen(cli_command(*args), cwd=cwd, env=cli_env(domain_id), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.integration
def test_sigint_ends_the_demo_with_its_report_and_bag_for_the_time_run(tmp_path, workdir):
    """Integration: ``demo --duration 10 --out D`` interrupted after 5 s of wall time: exit 130,
    no traceback, ``summary.json`` says interrupted and covers a positive time shorter than asked,
    the bag is closed and opens."""
    from rosbags.rosbag2 import Reader

    out = tmp_path / "D"
    t0 = time.monotonic()
    proc = _start(["demo", "--duration", "10", "--out", str(out), "--json", "--progress", "on"], workdir)
    _wait_for_the_loop(proc)
    time.sleep(max(SIGNAL_AFTER_S - (time.monotonic() - t0), LOOP_TIME_S))
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    # simulated time since boot, and the logged span (from the controller's start) within it
    assert 0.0 < summary["sim_time_s"] < 10.0
    assert 0.0 <= summary["duration_s"] <= summary["sim_time_s"]
    assert json.loads(stdout.splitlines()[-1]) == {**summary, "report_files": ANY, "bag": ANY, "bag_messages": ANY}
    assert (out / "report.md").is_file()
    with Reader(out / "bag") as reader:  # closed: its metadata and MCAP summary written
        assert reader.message_count == json.loads(stdout.splitlines()[-1])["bag_messages"] > 0
        assert reader.duration * 1e-9 <= summary["sim_time_s"] + 1e-3  # the time run, no more


@pytest.mark.integration
def test_sigterm_ends_the_soak_with_its_report(workdir):
    """Integration: ``soak`` (one process) stopped by SIGTERM: exit 143, the JSON report of the
    ticks run, interrupted."""
    t0 = time.monotonic()
    proc = _start(["soak", "--minutes", "1", "--json", "--progress", "on"], workdir)
    _wait_for_the_loop(proc)
    time.sleep(max(SIGNAL_AFTER_S - (time.monotonic() - t0), LOOP_TIME_S))
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    report = json.loads(stdout.splitlines()[-1])
    assert report["interrupted"] is True and 0 < report["ticks"] < 60_000


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead


@pytest.fixture
def domain_id(monkeypatch) -> int:
    """Integration fixture: a ROS domain of this test alone."""
    pytest.importorskip("rclpy")
    from test.integration.ros_harness import allocate_domain_id

    return allocate_domain_id()


@pytest.mark.integration
@pytest.mark.ros
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG and /proc are Linux only")
def test_sigkill_of_the_cli_ends_its_node_processes(workdir, domain_id):
    """Integration: ``demo --processes separate`` killed with SIGKILL (no cleanup of its own):
    its four node processes are gone within a few seconds."""
    proc = _start(["demo", "--processes", "separate", "--duration", "60", "--no-report"], workdir, domain_id)
    children: list[int] = []
    try:
        deadline = time.monotonic() + 60.0
        while len(children) < 4:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the CLI did not start its four nodes"
            time.sleep(0.1)
            children = _children(proc.pid)
        time.sleep(1.0)  # the nodes past their own start-up
        assert all(_alive(pid) for pid in children)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    deadline = time.monotonic() + 5.0
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [pid for pid in children if _alive(pid)]
    for pid in survivors:  # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert not survivors, "node processes outlived the CLI"


@pytest.mark.integration
@pytest.mark.ros
@pytest.mark.slow
def test_sigint_stops_the_node_graph_in_order_and_writes_its_summary(tmp_path, workdir, domain_id):
    """Integration: ``demo --processes separate`` interrupted once running: exit 130, every node
    stopped cleanly (exit code 0), ``summary.json`` says interrupted."""
    out = tmp_path / "graph"
    proc = _start(["demo", "--processes", "separate", "--sim-mode", "realtime", "--duration", "120",
                   "--out", str(out), "--json", "--progress", "on"], workdir, domain_id)
    deadline = time.monotonic() + 120.0
    first = proc.stderr.readline()  # the progress display's first line: the graph is running
    assert first.startswith("graph"), (first, proc.poll())
    assert time.monotonic() < deadline
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and 0.0 < summary["duration_s"] < 120.0
    assert summary["exit_codes"] == {name: 0 for name in summary["exit_codes"]} and len(summary["exit_codes"]) == 4
    assert (out / "logs" / "sim.log").is_file()
