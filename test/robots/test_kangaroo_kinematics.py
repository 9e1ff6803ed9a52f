"""Kinematics of the Kangaroo full model over its actuator box (paper Table II, Section IV).

Unit tests (no ROS, no simulator): closure FK at the corners of the stroke box, output ranges,
passive-joint limits, conditioning of J_l,u, the knee/ankle transmission, encoder calibration.
"""

from __future__ import annotations

import itertools

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.robots.kangaroo import ACTUATORS
from kangaroo_wbc.robots.kangaroo.files import standing_configuration
from kangaroo_wbc.robots.kangaroo.params import FIG15_OVERRIDES

#: Table II output ranges are matched to this tolerance [deg].
RANGE_TOL_DEG = 1.5
#: Bound on cond(J_l,u) (64 x 64, rows in [m] and [rad]) over the actuator box.
MAX_COND_J_LU = 1.0e3
#: Bound on the condition number of the encoder calibration map (relative actuators -> encoders).
MAX_COND_CALIBRATION = 1.0e2
#: Foot orientation change w.r.t. the pelvis over the whole leg-length stroke [deg] (Figs. 12-13).
MAX_TRANSMISSION_DEVIATION_DEG = 3.0
#: Tolerance on joint limits [rad] or [m] (the zero configuration is written to 1e-9 m).
LIMIT_TOL = 1e-6


def _stroke(clm, key: str, side: str = "left") -> tuple[float, float]:
    i = clm.model.getJointId(f"{side}_{key}_actuator")
    iq = clm.model.joints[i].idx_q
    return float(clm.model.lowerPositionLimit[iq]), float(clm.model.upperPositionLimit[iq])


def _both_legs(clm, strokes: dict[str, float]) -> np.ndarray:
    th = np.zeros(clm.n_a)
    for side in ("left", "right"):
        for k, v in strokes.items():
            th[clm.actuated_joint_names.index(f"{side}_{k}_actuator")] = v
    return th


def _box_samples(clm) -> list[dict[str, float]]:
    """All 64 corners of a leg's stroke box, a knee x ankle grid and a hip grid."""
    lim = {k: _stroke(clm, k) for k in ACTUATORS}
    samples = [dict(zip(ACTUATORS, c)) for c in itertools.product(*(lim[k] for k in ACTUATORS))]
    mid = {k: 0.5 * (lo + hi) for k, (lo, hi) in lim.items()}
    for s, a, b in itertools.product(np.linspace(*lim["leg_length"], 7), np.linspace(*lim["ankle_inner"], 3),
                                     np.linspace(*lim["ankle_outer"], 3)):
        samples.append(dict(mid, leg_length=s, ankle_inner=a, ankle_outer=b))
    for a, b in itertools.product(np.linspace(*lim["hip_inner"], 5), np.linspace(*lim["hip_outer"], 5)):
        samples.append(dict(mid, hip_inner=a, hip_outer=b))
    return samples


@pytest.fixture(scope="module")
def box(kangaroo):
    """Closed configurations over the actuator box, both legs driven alike (unit-test data)."""
    out = []
    for strokes in _box_samples(kangaroo):
        q, info = kangaroo.closure_fk(_both_legs(kangaroo, strokes), kangaroo.q_ref)
        assert info.converged, strokes
        out.append(q)
    return out


def _in_limits(clm, q: np.ndarray) -> bool:
    m = clm.model
    return bool(np.all(q >= m.lowerPositionLimit - LIMIT_TOL) and np.all(q <= m.upperPositionLimit + LIMIT_TOL))


@pytest.fixture(scope="module")
def reachable(kangaroo, box):
    """The box samples of the reachable set: every joint within its URDF limits (unit-test data)."""
    return [q for q in box if _in_limits(kangaroo, q)]


def test_closure_fk_converges_over_the_box(kangaroo, box):
    for q in box:
        assert np.max(np.abs(kangaroo.closure_error(q))) < 1e-10


def test_only_the_lower_ankle_rods_pitch_limits_cut_the_box(kangaroo, box, reachable):
    """Every joint stays within its URDF limits over the stroke box except the lower ankle rods'
    pitch, whose limits (10 deg inside the lever/rod dead points) cut the box at deep knee flexion
    with the ankle actuators toward the foot-down end and at the straight knee toward the other:
    the reachable set (urdf/README.md, "Ankle window: knee-dependent limits")."""
    m = kangaroo.model
    rods = [m.joints[m.getJointId(f"{side}_ankle_{part}_lower_rod_pitch")].idx_q for side in ("left", "right")
            for part in ("inner", "outer")]
    Q = np.array(box)
    out = (Q < m.lowerPositionLimit - LIMIT_TOL) | (Q > m.upperPositionLimit + LIMIT_TOL)
    assert np.array_equal(np.any(out, axis=1), np.any(out[:, rods], axis=1))  # the rods' limits bind first
    assert 0 < len(box) - len(reachable) < len(box) // 2


def test_passive_block_is_well_conditioned_over_the_reachable_set(kangaroo, reachable):
    """J_l,u (64 x 64) stays full rank with a bounded condition number: no singularity in the
    reachable set."""
    conds = [np.linalg.cond(kangaroo.constraint_jacobian(q)[:, kangaroo.idx_v_u]) for q in reachable]
    assert max(conds) < MAX_COND_J_LU


def test_encoder_calibration_is_well_posed(kangaroo, reachable):
    """Absolute passive encoders determine the offsets of all relative actuators (one per offset)."""
    rel = [n for n in kangaroo.actuated_joint_names if n not in kangaroo.absolute_actuators]
    enc = kangaroo.absolute_encoders
    assert len(rel) == len(enc) == 10
    assert kangaroo.absolute_actuators == ["left_leg_length_actuator", "right_leg_length_actuator"]
    rows = [kangaroo.passive_joint_names.index(n) for n in enc]
    cols = [kangaroo.actuated_joint_names.index(n) for n in rel]
    for q in reachable:
        assert np.linalg.cond(kangaroo.mapping_jacobian(q)[np.ix_(rows, cols)]) < MAX_COND_CALIBRATION


def test_hip_yaw_range(left):
    lo, hi = _stroke(left.clm, "hip_yaw")
    assert lo == pytest.approx(-0.02) and hi == pytest.approx(0.02)
    for s, target in ((lo, -30.0), (hi, 30.0)):
        yaw = np.degrees(left.joint(left.solve(hip_yaw=s), "hip_yaw_joint"))
        assert yaw == pytest.approx(target, abs=RANGE_TOL_DEG)


def test_hip_pitch_roll_ranges(left):
    """Common mode -> pitch -40..42 deg, differential mode -> roll +-27 deg (Table II)."""
    lo, hi = _stroke(left.clm, "hip_inner")
    assert lo == pytest.approx(-0.04) and hi == pytest.approx(0.04)
    cases = {(hi, hi): ("hip_pitch_joint", 42.0), (lo, lo): ("hip_pitch_joint", -40.0),
             (hi, lo): ("hip_roll_joint", 27.0), (lo, hi): ("hip_roll_joint", -27.0)}
    for (a, b), (joint, target) in cases.items():
        q = left.solve(hip_inner=a, hip_outer=b)
        assert np.degrees(left.joint(q, joint)) == pytest.approx(target, abs=RANGE_TOL_DEG)
        other = "hip_roll_joint" if joint == "hip_pitch_joint" else "hip_pitch_joint"
        assert abs(np.degrees(left.joint(q, other))) < 2.0


def test_knee_range_and_monotonic_map(left):
    """Leg-length stroke 0..0.15 m <-> knee 0..120 deg, monotonic (Table II, Fig. 12)."""
    lo, hi = _stroke(left.clm, "leg_length")
    assert (lo, hi) == pytest.approx((0.0, 0.15))
    q, knee = left.clm.q_ref, []
    for s in np.linspace(lo, hi, 16):
        q = left.solve(q, leg_length=s)
        knee.append(np.degrees(left.joint(q, "knee_joint")))
    assert knee[0] == pytest.approx(0.0, abs=RANGE_TOL_DEG)
    assert knee[-1] == pytest.approx(120.0, abs=RANGE_TOL_DEG)
    assert np.all(np.diff(knee) > 0.0)


def test_knee_transmission_keeps_the_foot_orientation(left, params):
    """Moving only the leg-length actuator keeps the sole's orientation w.r.t. the pelvis (IV-A)."""
    clm = left.clm
    stand = params.standing_actuators()
    lo, hi = _stroke(clm, "leg_length")
    q, R0, dev, ankle = clm.q_ref, None, [], []
    for s in np.linspace(lo, hi, 16):
        q = left.solve(q, **dict(stand, leg_length=s))
        pin.framesForwardKinematics(clm.model, clm.data, q)
        R = clm.data.oMf[clm.model.getFrameId("left_sole")].rotation
        R0 = R if R0 is None else R0
        dev.append(np.degrees(np.linalg.norm(pin.log3(R0.T @ R))))
        ankle.append(np.degrees(left.joint(q, "ankle_pitch_joint")))
    assert max(dev) < MAX_TRANSMISSION_DEVIATION_DEG
    assert ankle[0] - ankle[-1] > 100.0  # the ankle pitch joint follows the knee passively


def test_ankle_ranges_at_the_standing_knee(left, params):
    """Table II's ankle window at the standing knee: roll +-27 deg (differential strokes; the model
    reaches +-29.4) and pitch -36..34 deg (common strokes: -53.5..34.7), every joint within its
    limits there."""
    stand = params.standing_actuators()
    lo, hi = _stroke(left.clm, "ankle_inner")
    assert (lo, hi) == pytest.approx((-0.02, 0.02))
    q0 = left.solve(**stand)
    roll = [np.degrees(left.joint(left.solve(q0, **dict(stand, ankle_inner=a, ankle_outer=-a)), "ankle_roll_joint"))
            for a in (hi, lo)]
    assert roll[0] == pytest.approx(-roll[1], abs=1e-6) and 27.0 <= roll[0] <= 27.0 + 2 * RANGE_TOL_DEG
    qs = {a: left.solve(q0, **dict(stand, ankle_inner=a, ankle_outer=a)) for a in (lo, hi)}
    pitch = {a: np.degrees(left.joint(q, "ankle_pitch_joint")) for a, q in qs.items()}
    assert pitch[lo] >= 34.0 and pitch[hi] <= -36.0
    assert all(_in_limits(left.clm, q) for q in qs.values())


def _heel_lever_rod_angle(clm, q, side: str = "left", part: str = "inner") -> float:
    """Angle [deg] between the foot's heel lever (ankle axis -> rod end) and the lower rod, in the
    sagittal plane: 0 or 180 deg is the dead point of the lower rod (singular J_l,u)."""
    m, d = clm.model, clm.data
    pin.framesForwardKinematics(m, d, q)
    a = d.oMi[m.getJointId(f"{side}_ankle_pitch_joint")].translation
    top = d.oMi[m.getJointId(f"{side}_ankle_{part}_lower_rod_pitch")].translation
    end = d.oMf[m.getFrameId(f"{side}_ankle_{part}_rod_cut_u")].translation
    lever, rod = (end - a)[[0, 2]], (end - top)[[0, 2]]
    return float(np.degrees(np.arccos(lever @ rod / np.linalg.norm(lever) / np.linalg.norm(rod))))


def test_lower_rods_pitch_limits_keep_the_ankle_away_from_the_dead_points(left, params):
    """Why Table II's window fits (urdf/README.md, "Ankle window: knee-dependent limits").

    Along the common mode the lever/rod angle is the heel lever angle minus the rod's pitch w.r.t.
    its knee crank, so the rods' pitch limits are the dead-point margins (10 deg). The standing
    strokes over the whole knee stroke (the level foot of Figs. 12-14) and Table II's window at the
    standing knee stay more than 14 deg from the dead points; the stroke box's far corners (foot down
    at deep knee flexion, foot up at the straight knee) are past the limits, where the window shrinks.
    """
    clm, lam = left.clm, params.num("ankle.heel_lever_deg")
    lim = np.degrees(clm.passive_joint_limits().lower[clm.passive_joint_limits().names.index(
        "left_ankle_inner_lower_rod_pitch")]), np.degrees(clm.model.upperPositionLimit[
            clm.model.joints[clm.model.getJointId("left_ankle_inner_lower_rod_pitch")].idx_q])
    assert lim == pytest.approx((lam - 180.0 + 10.0, lam - 10.0))
    stand = params.standing_actuators()
    lo, hi = _stroke(clm, "ankle_inner")
    q, theta = clm.q_ref, []
    for s in np.linspace(*_stroke(clm, "leg_length"), 16):
        q = left.solve(q, **dict(stand, leg_length=s))
        theta.append(_heel_lever_rod_angle(clm, q))
        assert theta[-1] + np.degrees(left.joint(q, "ankle_inner_lower_rod_pitch")) == pytest.approx(lam, abs=1e-6)
        assert _in_limits(clm, q)
    assert theta[0] - theta[-1] == pytest.approx(120.0, abs=1.0)
    assert min(theta) > 14.0 and max(theta) < 166.0
    q0 = left.solve(**stand)
    top = left.solve(q0, **dict(stand, ankle_inner=lo, ankle_outer=lo))  # pitch 34.7 deg at the standing knee
    assert 14.0 < 180.0 - _heel_lever_rod_angle(clm, top) < 16.0
    for s, a in ((0.15, hi), (0.0, lo)):  # the far corners of the box are not reachable
        q = left.solve(left.solve(q0, **dict(stand, leg_length=s)), **dict(stand, leg_length=s, ankle_inner=a,
                                                                            ankle_outer=a))
        assert not _in_limits(clm, q)


def test_standing_pose(kangaroo, params):
    """Slightly bent knees, level soles under the hips, mirror-symmetric legs."""
    q = standing_configuration(kangaroo, params)
    m, d = kangaroo.model, kangaroo.data
    pin.framesForwardKinematics(m, d, q)

    def jq(name: str) -> float:
        return float(q[m.joints[m.getJointId(name)].idx_q])

    assert 5.0 < np.degrees(jq("left_knee_joint")) < 30.0
    for side in ("left", "right"):
        sole = d.oMf[m.getFrameId(f"{side}_sole")]
        assert np.degrees(np.linalg.norm(pin.log3(sole.rotation))) < 1.0
        hip = d.oMf[m.getFrameId(f"{side}_hip_roll_link")].translation
        assert abs(sole.translation[0] - hip[0]) < 0.05 and abs(sole.translation[1] - hip[1]) < 1e-6
    assert jq("left_hip_pitch_joint") == pytest.approx(jq("right_hip_pitch_joint"), abs=1e-9)
    assert jq("left_hip_roll_joint") == pytest.approx(-jq("right_hip_roll_joint"), abs=1e-9)


def test_committed_knee_relay_is_a_parallelogram(params):
    """The committed knee copies the rotation of rocker 1 to rocker 2 (equal, opposite relay arms)."""
    assert params.num("knee.rocker1_relay_arm_m") == params.num("knee.rocker2_relay_arm_m")
    assert params.num("knee.rocker1_relay_arm_deg") == pytest.approx(180.0 + params.num("knee.rocker2_arm_deg"))


def test_knee_generator_shapes_the_squat_force(params, tmp_path):
    """The generator's knee parameters can move the squat-force peak to half squat (Fig. 15).

    With FIG15_OVERRIDES the sole force produced by the leg-length actuator's maximum force, from
    the standing stroke to full compression, peaks between 0.3 and 0.7 of the squat, is lowest fully
    compressed and in between at the standing pose; knee 0..120 deg over the stroke, no dead point;
    ankle roll +-27 deg at its standing knee (wider ankle chains). The knee turns ~40 rad per metre of stroke near the
    straight leg: closure FK reaches far strokes from the zero configuration by continuation only.
    """
    from kangaroo_wbc.model import ClosedLoopModel
    from kangaroo_wbc.robots.kangaroo import generate
    from kangaroo_wbc.robots.kangaroo.robot import leg_spec
    from kangaroo_wbc_tools.analysis.mechanism import transmission_sweep
    from test.robots.conftest import Leg

    prm = params.with_overrides(FIG15_OVERRIDES)
    paths = generate(tmp_path, prm, mjcf=False)
    clm = ClosedLoopModel.from_files(paths["urdf"], paths["closures"], floating_base=False)
    q0 = standing_configuration(clm, prm)
    tr = transmission_sweep(clm, q0, leg_spec("left"), samples=61)
    assert 0.3 <= tr["sole_force_peak_stroke_fraction"] <= 0.7
    f = tr["sole_force_n"][tr["squat_mask"]]
    assert f[-1] < f[0] < f.max()
    assert tr["max_orientation_deviation_deg"] < MAX_TRANSMISSION_DEVIATION_DEG
    m = clm.model
    iq = m.joints[m.getJointId("left_knee_joint")].idx_q
    col = clm.actuated_joint_names.index("left_leg_length_actuator")
    knee, q = [], q0
    for s in tr["stroke_m"]:
        th = q[clm.idx_q_a].copy()
        th[col] = s
        q, _ = clm.closure_fk(th, q)
        knee.append(np.degrees(q[iq]))
        assert np.linalg.cond(clm.constraint_jacobian(q)[:, clm.idx_v_u]) < MAX_COND_J_LU
        if s > 0.1:  # one Newton solve from the zero configuration lands on another assembly branch
            q_far, _ = clm.closure_fk(th, clm.q_ref)
            assert np.max(np.abs(q_far - q)) < 1e-8
    assert knee[0] == pytest.approx(0.0, abs=RANGE_TOL_DEG) and knee[-1] == pytest.approx(120.0, abs=RANGE_TOL_DEG)
    assert np.all(np.diff(knee) > 0.0)
    leg, stand = Leg(clm), prm.standing_actuators()
    roll = [np.degrees(leg.joint(leg.solve(q0, **dict(stand, ankle_inner=a, ankle_outer=-a)), "ankle_roll_joint"))
            for a in _stroke(clm, "ankle_inner")]
    assert roll == pytest.approx([-27.0, 27.0], abs=RANGE_TOL_DEG)
