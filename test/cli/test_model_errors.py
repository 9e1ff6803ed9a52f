"""``kangaroo-wbc model info|check`` on models users bring: every failure ends with one JSON error
object on stdout and a non-zero exit code (unit tests: the CLI in-process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kangaroo_wbc_tools.cli import main
from test.model import linkages

CASSIE = Path(__file__).resolve().parents[1] / "data" / "cassie_closed_chain.xml"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli_linkages")
    linkages.rssr(d)
    linkages.unassembled_four_bar(d, ground=0.8)
    linkages.mimic_pair(d)
    return d


def _run(capsys, *args: str) -> tuple[int, dict, str]:
    code = main(["model", *args, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out.strip().splitlines()[-1]), err


def test_typo_in_a_joint_name(folder, tmp_path, capsys):
    yml = tmp_path / "typo.yaml"
    yml.write_text((folder / "rssr_closures.yaml").read_text().replace("crank_joint", "crank_jiont"))
    code, obj, err = _run(capsys, "check", str(folder / "rssr.urdf"), "--closures", str(yml))
    assert code == 2 and obj["ok"] is False
    assert "unknown joint 'crank_jiont'" in obj["error"] and "crank_joint" in obj["error"]
    assert len(err.strip().splitlines()) == 1


def test_pose_that_cannot_assemble(folder, capsys):
    code, obj, _ = _run(capsys, "check", str(folder / "unassemblable_four_bar.urdf"), "--closures",
                        str(folder / "unassemblable_four_bar_closures.yaml"))
    assert code == 2 and obj["ok"] is False
    assert "do not close at the reference pose" in obj["error"] and "residual of" in obj["error"]


def test_reference_file_with_an_unknown_joint(folder, tmp_path, capsys):
    pose = tmp_path / "pose.yaml"
    pose.write_text("crank_jiont: 0.3\n")
    code, obj, _ = _run(capsys, "info", str(folder / "rssr.urdf"), "--closures",
                        str(folder / "rssr_closures.yaml"), "--reference", str(pose))
    assert code == 2 and "unknown joint 'crank_jiont'" in obj["error"]


def test_mimic_joint(folder, capsys):
    code, obj, _ = _run(capsys, "info", str(folder / "mimic_pair.urdf"), "--closures",
                        str(folder / "mimic_pair_closures.yaml"))
    assert code == 0 and obj["n_dof"] == 1 and obj["couplings"][0]["followers"] == {"follower": 1.0}


def test_unexpected_failure_still_prints_the_json_error(folder, capsys, monkeypatch):
    import kangaroo_wbc.model.checks as checks

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(checks, "run_checks", broken)
    code, obj, _ = _run(capsys, "check", str(folder / "rssr.urdf"), "--closures", str(folder / "rssr_closures.yaml"))
    assert code == 1 and obj == {"ok": False, "error": "kangaroo-wbc: internal error: RuntimeError: boom"}


def test_info_reports_the_rod_spin_and_the_reference(folder, capsys):
    code, obj, _ = _run(capsys, "info", str(folder / "rssr.urdf"), "--closures", str(folder / "rssr_closures.yaml"))
    assert code == 0
    assert [r["joint"] for r in obj["free_rotations"]] == ["rod_ball"]
    assert obj["reference_closure_residual"] < 1e-9 and obj["reference_assembled"] is False


def test_cassie_mjcf_checks(capsys):
    code, obj, _ = _run(capsys, "check", str(CASSIE))
    assert code == 0 and obj["ok"] is True


def test_a_signal_turned_into_another_exception_still_ends_as_the_signal(folder, capsys, monkeypatch):
    """A library may turn the command line's exception for a signal into its own (numpy's
    interrupted import raises ImportError): the command still ends as interrupted, exit 143, with
    its JSON error object."""
    import os
    import signal
    import time

    import kangaroo_wbc.model.checks as checks
    from kangaroo_wbc_tools.cli.common import Interrupted

    def interrupted_inside_a_library(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # the command line's handler raises Interrupted
            time.sleep(1.0)  # the handler runs at once: never slept through
        except Interrupted:
            raise ImportError("Importing the numpy C-extensions failed") from None
        raise AssertionError("the signal did not interrupt")

    monkeypatch.setattr(checks, "run_checks", interrupted_inside_a_library)
    code, obj, err = _run(capsys, "check", str(folder / "rssr.urdf"), "--closures", str(folder / "rssr_closures.yaml"))
    assert code == 128 + signal.SIGTERM
    assert obj == {"ok": False, "error": "kangaroo-wbc: interrupted (SIGTERM)"}
    assert "internal error" not in err


def test_the_json_error_never_imports_numpy():
    """After a signal interrupted numpy's own import, importing it again fails: the report of the
    interruption must not need it (a fresh interpreter with the command line loaded)."""
    import subprocess
    import sys

    code = ("import sys; from kangaroo_wbc_tools.cli.common import print_json; "
            "print_json({'ok': False, 'error': 'x', 'v': float('nan')}); assert 'numpy' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["v"] is None
