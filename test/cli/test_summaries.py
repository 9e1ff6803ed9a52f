"""The results a command writes tell the truth: strict JSON (a non-finite number is null with its
reason), the signal and its phase, the walk's command as asked and as applied (unit tests)."""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pytest

from kangaroo_wbc_tools.cli import common


def test_non_finite_numbers_become_null_with_a_reason(tmp_path, capsys):
    """Unit: NaN and ±inf at any depth (numpy included) are null in strict JSON; ``null_reasons``
    names each by its dotted key and keeps the reasons the result gave itself."""
    result = {"a": math.nan, "b": {"c": np.float64("inf"), "d": [1.0, math.nan]}, "e": np.array([1.0, -np.inf]),
              "ok": 1.5, "null_reasons": {"x": "not measured"}}
    common.print_json(result)
    line = capsys.readouterr().out.strip()
    parsed = json.loads(line, parse_constant=lambda c: pytest.fail(f"bare {c} in the JSON"))
    assert parsed["a"] is None and parsed["b"]["c"] is None and parsed["b"]["d"] == [1.0, None]
    assert parsed["e"] == [1.0, None] and parsed["ok"] == 1.5
    assert set(parsed["null_reasons"]) == {"x", "a", "b.c", "b.d[1]", "e[1]"}
    common.write_json(tmp_path / "s.json", result)
    assert json.loads((tmp_path / "s.json").read_text()) == parsed


@pytest.mark.parametrize(("signal_phase", "loop_flag", "interrupted", "phase"), [
    (None, False, False, None),
    ("run", True, True, "run"),
    ("writing figures", False, True, "writing figures"),  # the loop had finished: still a signal
    ("writing bag", False, True, "writing bag"),
])
def test_interrupted_is_true_whenever_a_signal_came(signal_phase, loop_flag, interrupted, phase):
    """Unit: ``StopSignals.record`` says interrupted, and when, for a signal in any phase."""
    stop = common.StopSignals(announce=False)
    if signal_phase is not None:
        stop.phase = signal_phase
        stop._handle(2, None)
    summary = stop.record({"interrupted": loop_flag})
    assert summary["interrupted"] is interrupted and summary["interrupted_phase"] == phase


@pytest.mark.parametrize(("cmd_vel", "applied", "clipped"), [
    (None, [0.3, 0.0, 0.0], False),
    ((-0.1, 0.0, 0.0), [-0.1, 0.0, 0.0], False),
    ((100.0, 0.0, 50.0), [0.4, 0.0, 0.5], True),
])
def test_the_walks_command_is_recorded_and_a_clip_is_a_warning(cmd_vel, applied, clipped, capsys):
    """Unit: the summary gets the command as asked and as the walk applies it; a clip is one
    warning line naming the option and the limits."""
    from kangaroo_wbc.control.behaviours import GaitSettings
    from kangaroo_wbc_tools.cli.demo_cmd import _cmd_vel_record

    g = GaitSettings()
    assert applied[0] <= g.max_forward_mps and applied[2] <= g.max_yaw_rate_radps
    record = _cmd_vel_record(argparse.Namespace(behaviour="walk", cmd_vel=cmd_vel))
    assert record["cmd_vel_applied"] == pytest.approx(applied) and record["cmd_vel_clipped"] is clipped
    err = capsys.readouterr().err
    assert (err.count("\n") == 1 and "warning: --cmd-vel 100,0,50" in err) if clipped else err == ""
    assert _cmd_vel_record(argparse.Namespace(behaviour="stand", cmd_vel=None)) == {}
