"""The acceptance commands of the Kangaroo model, run through the command line in process:
``kangaroo-wbc model info|check`` on the committed files and ``kangaroo-wbc analyze --quick``.

Integration of CLI + model + analysis (no ROS, no simulator); ``analyze --quick`` takes ~15 s.
"""

from __future__ import annotations

import json

import pytest

from kangaroo_wbc_tools.cli import main

from .conftest import CLOSURES, URDF

TABLE_II = {"hip_yaw": (1, 2, 2), "hip_pitch_roll": (2, 8, 8), "knee": (1, 6, 6), "ankle": (2, 16, 16)}


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_model_info_json(capsys):
    assert main(["model", "info", str(URDF), "--closures", str(CLOSURES), "--json"]) == 0
    info = _json(capsys)
    assert (info["n_joints"], info["n_actuated"], info["n_passive"]) == (76, 12, 64)
    assert info["n_constraints"] == info["constraint_rank"] == 64
    assert 35.0 <= info["mass_kg"] <= 37.0
    subs = info["submechanisms"]
    assert len(subs) == 8
    for side in ("left", "right"):
        for kind, counts in TABLE_II.items():
            s = subs[f"{side}_{kind}"]
            assert (s["n_actuated"], s["n_passive"], s["n_constraints"]) == counts


def test_model_check_json(capsys):
    assert main(["model", "check", str(URDF), "--closures", str(CLOSURES), "--json"]) == 0
    assert _json(capsys)["ok"] is True


def test_analyze_quick_writes_the_report(tmp_path, capsys):
    out = tmp_path / "analysis"
    assert main(["analyze", "--quick", "--out", str(out), "--json"]) == 0
    s = _json(capsys)
    assert 1.0 < s["max_condition_number"] < 1e3 and s["closure_fk_failures"] == 0
    assert s["foot_orientation_deviation_deg"] < 1.0
    assert 0.0 <= s["sole_force_peak_stroke_fraction"] <= 1.0
    for key in ("linear", "angular", "camm"):
        assert len(s["table3"][key]) == 3 and all(x > 0.0 for x in s["table3"][key])
    worst = max(abs(x / p - 1.0) for k in s["table3"] for x, p in zip(s["table3"][k], s["table3_paper"][k]))
    assert s["table3_error"] == pytest.approx(worst, abs=1e-4) and worst > 0.0
    # The committed mass distribution (urdf/README.md, "Mass distribution (Table III)"): 0.6925, four of
    # the nine ratios within 25 % of the paper's (linear x, y, angular x, CAMM x).
    assert s["table3_error"] < 0.70
    within = [k + a for k in s["table3"] for a, x, p in zip("xyz", s["table3"][k], s["table3_paper"][k])
              if abs(x / p - 1.0) <= 0.25]
    assert within == ["linearx", "lineary", "angularx", "cammx"]
    assert s["ankle_pitch_window_deg"] == s["ankle_pitch_range_deg"]
    assert s["singularity_samples"] == 64 and 0 < s["unreachable_samples"] < 64
    lo, hi = s["ankle_pitch_window_deg"]
    assert lo <= -36.0 and hi >= 34.0  # Table II at the standing knee
    aw = s["ankle_window"]
    assert aw["table_ii_at_standing_knee"] is True
    assert min(aw["dead_point_margin_deg"]) > 9.9  # the rods' pitch limits: 10 deg from the dead points
    windows = list(aw["common_mode_deg_at_knee"].values())
    assert windows[1] == pytest.approx([lo, hi], abs=0.05)  # at the standing knee, as the QP IK found
    assert windows[-1][1] - windows[-1][0] < hi - lo  # shrinks at deep knee flexion
    report = (out / "report.md").read_text()
    for png in ("singularity_condition_numbers", "joint_limit_shapes", "foot_manipulability", "transmission",
                "ankle_window"):
        assert (out / f"{png}.png").stat().st_size > 10_000
        assert f"({png}.png)" in report
    assert "Knee-dependent ankle pitch window" in report


@pytest.mark.parametrize("argv", [["model", "info", "missing.urdf"], ["analyze", "--side", "middle"]])
def test_bad_arguments_fail_with_a_message(argv, capsys):
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    assert rc == 2
    assert "error" in capsys.readouterr().err
