"""The reduced model of the ankle's lower stage (``kangaroo_wbc_tools.analysis.ankle_window``) against the
full model, the dead-point law that bounds the ankle pitch window, and the planar study of what
giving up the exact invariance costs (urdf/README.md).

Unit tests: no ROS, no simulator.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc_tools.analysis.ankle_window import (
    SEARCH_BOUNDS,
    PlanarStage,
    RodStage,
    common_mode_map,
    dead_point_margins,
    knee_window,
    planar_scan,
    planar_search,
    rod_pitch_limits,
    scan,
    search,
    solve,
    study,
)
from kangaroo_wbc_tools.cli import main as cli_main


def main(argv: list[str]) -> int:
    """``kangaroo-wbc analyze ankle-window ARGV --json`` in-process."""
    return cli_main(["analyze", "ankle-window", *argv, "--json"])


def _deg(x: float) -> float:
    return float(np.degrees(x))


def _stroke(clm, key: str) -> tuple[float, float]:
    iq = clm.model.joints[clm.model.getJointId(f"left_{key}_actuator")].idx_q
    return float(clm.model.lowerPositionLimit[iq]), float(clm.model.upperPositionLimit[iq])


@pytest.fixture(scope="module")
def stage(params) -> RodStage:
    return RodStage.from_params(params)


@pytest.fixture(scope="module")
def cranks(left, params) -> dict[float, float]:
    """Crank angle [deg] (foot pitch w.r.t. the femur = knee + ankle pitch) at each end of the
    ankle stroke, from the full model (each crank depends on its own actuator only)."""
    stand = params.standing_actuators()
    q0 = left.solve(**stand)
    out = {}
    for a in (*_stroke(left.clm, "ankle_inner"), stand["ankle_inner"]):
        q = left.solve(q0, **dict(stand, ankle_inner=a, ankle_outer=a))
        assert abs(_deg(left.joint(q, "ankle_roll_joint"))) < 1e-6
        out[a] = _deg(left.joint(q, "knee_joint") + left.joint(q, "ankle_pitch_joint"))
    return out


@pytest.mark.parametrize("leg_length", [None, 0.075, 0.15])
def test_reduced_stage_matches_the_full_model(left, params, stage, cranks, leg_length):
    """Same foot roll and pitch as the 3-D model at differential corners, at three knees (at full
    flexion the corner's foot-down stroke is the standing one: the box's corner is past the rods'
    pitch limits there)."""
    stand = params.standing_actuators()
    if leg_length is not None:
        stand["leg_length"] = leg_length
    lo, hi = _stroke(left.clm, "ankle_inner")
    if leg_length == 0.15:
        hi = stand["ankle_inner"]
    q = left.solve(**stand)
    knee = _deg(left.joint(q, "knee_joint"))
    for a_in, a_out in ((hi, lo), (lo, hi)):
        q = left.solve(q, **dict(stand, ankle_inner=a_in, ankle_outer=a_out))
        roll, pitch, smin, closed = solve(stage, knee, (cranks[a_in], cranks[a_out]))
        assert closed and smin > 0.0
        assert roll == pytest.approx(_deg(left.joint(q, "ankle_roll_joint")), abs=1e-4)
        assert pitch == pytest.approx(_deg(left.joint(q, "ankle_pitch_joint")), abs=1e-4)
        assert abs(roll) > (5.0 if leg_length == 0.15 else 15.0)


def test_table_ii_window_is_reachable_at_the_standing_knee_and_shrinks_with_the_knee(left, params, stage, cranks):
    """The cranks' range cut by the lower rods' pitch limits (:func:`knee_window`) holds Table II's
    -36..34 deg at the standing knee, 10 deg from the dead points over the whole knee stroke
    (:func:`dead_point_margins`), and narrows at deep knee flexion (the paper's Fig. 11)."""
    knee = _deg(left.joint(left.solve(**params.standing_actuators()), "knee_joint"))
    crank = (min(cranks.values()), max(cranks.values()))
    limits = rod_pitch_limits(left.clm)
    assert limits == pytest.approx((params.num("ankle.heel_lever_deg") - 170.0, params.num("ankle.heel_lever_deg")
                                    - 10.0))
    w = knee_window(crank, limits, np.array([knee]))[0]
    assert w[0] <= -36.0 and w[1] >= 34.0
    knees = np.linspace(0.0, 120.0, 121)
    ws = knee_window(crank, limits, knees)
    assert np.all(np.isfinite(ws)) and ws[-1, 1] - ws[-1, 0] < 0.7 * (w[1] - w[0])
    assert ws[0, 1] < crank[1]  # the straight knee loses a few degrees of foot-up pitch
    assert dead_point_margins(stage, ws, knees) == pytest.approx((10.0, 10.0), abs=0.1)
    # without the rods' limits the box reaches the dead points
    wide = knee_window(crank, (-180.0, 180.0), knees)
    assert dead_point_margins(stage, wide, knees) == (-np.inf, -np.inf)


def _zeros_of_det(st: RodStage, knee: float = 0.0) -> np.ndarray:
    """Crank angles [deg] where the rod map's determinant changes sign along the common mode (the
    exact solution there: zero roll, pitch = crank - knee)."""
    cr = np.arange(-180.0, 180.0, 0.25)
    det = common_mode_map(st, np.array([knee]), cr)[0][0]
    return cr[np.nonzero(np.sign(det) != np.sign(np.roll(det, -1)))[0]]


def test_rods_parallel_to_the_tibia_have_dead_points_180_deg_apart():
    """Binet-Cauchy: without lean the determinant is a sinusoid of the foot pitch, whatever the
    levers, their phases and the rod-end positions."""
    rng = np.random.default_rng(3)
    for _ in range(6):
        st = RodStage(tuple(rng.uniform(0.03, 0.09, 2)), tuple(rng.uniform(0.0, 360.0, 2)),
                      (-rng.uniform(0.015, 0.07), rng.uniform(0.015, 0.07)), (0.0, 0.0),
                      tuple(rng.uniform(-0.03, 0.03, 2)))
        z = _zeros_of_det(st)
        assert len(z) == 2
        assert z[1] - z[0] == pytest.approx(180.0, abs=0.5)


def test_lean_with_split_levers_widens_the_common_mode_but_not_the_box():
    """Both rods leaning the same way with levers 90 deg apart: the dead points of the common mode
    move more than 200 deg apart, yet the differential corners of Table II's window fail."""
    st = RodStage((0.06, 0.06), (180.0, 90.0), (-0.035, 0.035), (0.12, 0.12))
    z = _zeros_of_det(st)
    assert len(z) == 2
    assert max(z[1] - z[0], 360.0 - (z[1] - z[0])) > 200.0
    s = scan(st, (-36.0, 34.0))
    assert s.failures > 0


def test_scan_rejects_bad_grids_and_windows(stage):
    with pytest.raises(ValueError, match="grid too small"):
        scan(stage, n_knee=1)
    with pytest.raises(ValueError, match="increasing"):
        scan(stage, (34.0, -36.0))
    with pytest.raises(ValueError, match="increasing"):
        scan(stage, (float("nan"), 34.0))


def test_search_returns_a_stage_inside_its_bounds_scanned_on_the_fine_grid():
    st, s = search(generations=1, popsize=1, seed=0)
    x = [*st.lever_m, *st.lever_deg, -st.lateral_m[0], st.lateral_m[1], *st.lean_m, *st.height_m]
    bounds = [b for pair in zip(SEARCH_BOUNDS, SEARCH_BOUNDS) for b in pair]
    assert all(lo <= v <= hi for v, (lo, hi) in zip(x, bounds))
    assert s.points == 97 * 33 * 33
    assert s == scan(st, (-36.0, 34.0), n_knee=97, n_crank=33)


def test_command_line_prints_one_json_line_and_rejects_bad_windows(capsys):
    assert main(["--pitch-window", "-36", "34"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["committed"]["failures"] == 0 and out["committed"]["crank_deg"] == pytest.approx([-26.0, 44.0])
    for argv in (["--pitch-window", "30", "-30"], ["--search", "--generations", "0"]):
        assert main(argv) == 2
        assert "error:" in capsys.readouterr().err
    with pytest.raises(InputError, match="generations"):
        study(search_design=True, generations=0)


def test_stage_read_from_the_model_equals_the_parameters(kangaroo, params, stage):
    """The analysis reads the stage from the loaded model; the generator builds it from params."""
    for side in ("left", "right"):
        st = RodStage.from_model(kangaroo, side)
        assert np.allclose(st.vector()[:4], stage.vector()[:4], atol=1e-8)
        assert st.lateral_m == pytest.approx(stage.lateral_m if side == "left" else stage.lateral_m[::-1], abs=1e-9)
        assert st.lean_m == pytest.approx((0.0, 0.0), abs=1e-9) and st.tibia_m == pytest.approx(stage.tibia_m)


def test_stage_from_a_model_without_the_rods_is_refused():
    from types import SimpleNamespace

    import pinocchio as pin

    from .conftest import SERIAL_URDF

    serial = SimpleNamespace(model=pin.buildModelFromUrdf(str(SERIAL_URDF)))
    with pytest.raises(ValueError, match="no (joint|frame)"):
        RodStage.from_model(serial)


def test_common_mode_map_has_the_dead_points_180_deg_apart(stage):
    """Along the common mode the determinant changes sign at crank - knee = -heel lever angle and
    180 deg above (the lever along the rod) and keeps its sign between."""
    lam = stage.lever_deg[0]
    assert _zeros_of_det(stage, 0.1) - 0.1 == pytest.approx([-lam, 180.0 - lam], abs=0.3)  # off the grid
    for knee in (0.0, 60.0, 120.0):
        det, smin = common_mode_map(stage, np.array([knee]), np.linspace(10.0 - lam, 170.0 - lam, 161) + knee)
        assert np.all(np.sign(det) == np.sign(det[0, 0])) and np.all(smin > 0.0)


@pytest.mark.parametrize("swing", [5.0, 10.0, 25.0])
def test_planar_parallelogram_keeps_the_foot_and_obeys_the_180_deg_law(swing):
    """Crank = lever on the knee axis, rod = tibia: the foot keeps its orientation w.r.t. the femur
    over the knee stroke and the window is the crank swing; the lever sweeps 140 - (knee - 10) +-
    swing, i.e. 30 - swing .. 150 + swing deg, so its closest approach to a dead point (0 or 180 deg
    from the rod) is 30 - swing: window + 120 + margins = 180."""
    sc = planar_scan(PlanarStage((0.0, 0.0), 0.06, 0.06, 140.0, 140.0, swing))
    assert sc.failures == 0
    assert sc.pitch_window_deg == pytest.approx((-swing, swing), abs=1e-9)
    assert sc.foot_deviation_deg < 1e-9
    assert sc.min_transmission_deg == pytest.approx(30.0 - swing, abs=1e-9)


def test_planar_crank_on_the_knee_axis_cannot_hold_table_ii_even_without_invariance():
    """Any crank / lever / rod shape with the crank pivoted on the knee axis: no design reaches Table
    II's window without crossing a dead point, not even at zero margin (the crank turns 190 deg
    w.r.t. the tibia, more than a crank-rocker allows between its toggles)."""
    for seed in (0, 1):
        st, sc, meets = planar_search(off_axis_pivot=False, margin_deg=0.0, seed=seed)
        assert st.pivot_m == (0.0, 0.0)
        assert not meets
        assert sc.failures > 0 or sc.min_transmission_deg < 0.0


def test_planar_femur_pivot_fits_table_ii_by_turning_the_foot_over_the_knee_stroke():
    """With the crank pivoted on the femur off the knee axis, Table II's window fits with 6 deg to
    the dead points, but the foot then turns by more than 10 deg w.r.t. the femur over the knee
    stroke (0 in the committed parallelogram)."""
    st, sc, meets = planar_search(off_axis_pivot=True, margin_deg=6.0, seed=0)
    assert meets and sc.failures == 0
    assert sc.pitch_window_deg[0] <= -31.0 and sc.pitch_window_deg[1] >= 39.0  # -36..34 about -5
    assert sc.min_transmission_deg >= 6.0
    assert np.hypot(*st.pivot_m) > 0.005
    assert 10.0 < sc.foot_deviation_deg < 30.0
    # the same stage, re-scanned on a finer grid, keeps the margin (no point passed between nodes)
    fine = planar_scan(st, n_knee=241, n_beta=49, n_steps=120)
    assert fine.failures == 0 and fine.min_transmission_deg > 5.9


def test_planar_study_rejects_bad_input(capsys):
    with pytest.raises(ValueError, match="bad grid"):
        planar_scan(PlanarStage((0.0, 0.0), 0.06, 0.06, 140.0, 140.0, 10.0), n_beta=10)
    with pytest.raises(ValueError, match="not a stage"):
        planar_scan(PlanarStage((float("nan"), 0.0), 0.06, 0.06, 140.0, 140.0, 10.0))
    with pytest.raises(ValueError, match="not a stage"):
        planar_scan(PlanarStage((0.0, 0.0), 0.0, 0.06, 140.0, 140.0, 10.0))
    with pytest.raises(ValueError, match="standing pitch"):
        planar_search((0.0, 10.0))
    for argv in (["--planar", "femur", "--margin", "nan"], ["--planar", "femur", "--pitch-window", "0", "10"],
                 ["--planar", "hip"]):
        assert main(argv) == 2
        assert "error:" in capsys.readouterr().err
    with pytest.raises(InputError, match="standing pitch"):
        study((0.0, 10.0), planar="femur")


def test_planar_command_line_reports_the_design_and_whether_it_meets_the_window(capsys):
    assert main(["--planar", "knee-axis", "--margin", "0", "--generations", "50"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["planar"]["pivot"] == "knee-axis" and out["planar"]["meets_window_and_margin"] is False
    assert out["planar"]["stage"]["pivot_m"] == [0.0, 0.0]
    assert set(out["planar"]["scan"]) == {"pitch_window_deg", "min_transmission_deg", "foot_deviation_deg",
                                          "failures"}
