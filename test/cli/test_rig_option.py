"""``kangaroo-wbc demo --rig``: an unknown rig and the options the bench does not take are refused
before anything runs (one line naming the valid rigs or the option, exit 2, nothing written)."""

from __future__ import annotations

import json

import pytest

from kangaroo_wbc.robots.kangaroo.rig import RIGS
from test.cli.conftest import assert_rejected_in_one_line, run_cli

REJECTED = [
    (["demo", "--rig", "two_legs"], "one_leg"),
    (["demo", "--rig", ""], "one_leg"),
    (["demo", "--rig", "one_leg", "--behaviour", "sway"], "--behaviour"),
    (["demo", "--rig", "one_leg", "--fault", "lock:left_ankle_inner_actuator@3"], "--fault"),
    (["demo", "--rig", "one_leg", "--payload", "6kg@torso@4"], "--payload"),
    (["demo", "--rig", "one_leg", "--pipelined"], "--pipelined"),
    (["demo", "--rig", "one_leg", "--push", "40N@1s"], "--push"),
    (["demo", "--rig", "one_leg", "--bag-decimation", "2"], "--bag-decimation"),
]


@pytest.mark.parametrize(("args", "names"), REJECTED, ids=[" ".join(a) for a, _ in REJECTED])
def test_rig_option_rejected_in_one_line_exit_2(args, names, workdir):
    """Integration: the CLI as a subprocess in an empty folder: one stderr line, exit 2, nothing written."""
    assert_rejected_in_one_line(args, names, workdir)


def test_unknown_rig_with_json_lists_the_valid_rigs(workdir):
    """Integration: with ``--json`` the last stdout line is the error object naming every valid rig."""
    proc = run_cli("demo", "--rig", "one_arm", "--json", cwd=workdir, timeout=30.0)
    assert proc.returncode == 2
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["ok"] is False and "one_arm" in result["error"]
    assert all(rig in result["error"] for rig in RIGS)
