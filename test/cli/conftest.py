"""Helpers of the command-line tests: the CLI run as a subprocess, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def cli_env(domain_id: int | None = None) -> dict[str, str]:
    """The environment of a CLI subprocess: this repository importable, DDS kept on this machine,
    ROS logs in a fresh folder."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env["ROS_LOG_DIR"] = tempfile.mkdtemp(prefix="kangaroo_wbc_cli_test_ros_log_")
    if domain_id is not None:
        env["ROS_DOMAIN_ID"] = str(domain_id)
    env.pop("PYTHONWARNINGS", None)
    return env


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "kangaroo_wbc_tools.cli", *args]


def run_cli(*args: str, cwd: Path, timeout: float = 60.0, domain_id: int | None = None,
            **kwargs) -> subprocess.CompletedProcess:
    """``python -m kangaroo_wbc_tools.cli ARGS`` in ``cwd``; output captured as text."""
    return subprocess.run(cli_command(*args), cwd=cwd, env=cli_env(domain_id), capture_output=True, text=True,
                          timeout=timeout, **kwargs)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """Unit fixture: an empty working folder for one CLI run (relative outputs land here)."""
    d = tmp_path / "cwd"
    d.mkdir()
    return d


#: A rejected command line answers within this much CPU time of its process [s] (it loads no model:
#: about 0.2-0.7 s here). CPU time, not wall time: the check holds on a busy machine too.
REJECT_WITHIN_S = 5.0


def run_cli_cpu(*args: str, cwd: Path, timeout: float = 30.0) -> tuple[subprocess.CompletedProcess, float]:
    """:func:`run_cli` and the CPU time [s] (user + system) its process used."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = run_cli(*args, cwd=cwd, timeout=timeout)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def assert_rejected_in_one_line(args, text: str, workdir: Path) -> None:
    """The CLI run with ``args`` in the empty ``workdir`` refuses them: exit code 2 within
    :data:`REJECT_WITHIN_S` of CPU time, one stderr line containing ``text``, no traceback, nothing
    written."""
    proc, cpu_s = run_cli_cpu(*args, cwd=workdir)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert cpu_s < REJECT_WITHIN_S, f"{cpu_s:.1f} s of CPU: something ran before the check"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert text in lines[0], lines[0]
    assert not any(workdir.iterdir())
