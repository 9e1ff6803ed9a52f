"""Unit tests of the QP IK of eq. (IV) (:func:`kangaroo_wbc_tools.analysis.mechanism.joint_limit_shape`) with
the passive joints' limits as rows, on the generated Kangaroo model (fixed base)."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc_tools.analysis.mechanism import joint_limit_shape

#: the QP IK's rows are linearised through J_m: the closure FK after a step may overshoot a
#: margined limit by the second-order term of the step [rad]
LINEARISATION_TOL_RAD = 2e-4
DIRECTIONS = 8


@pytest.fixture()
def kangaroo():
    from kangaroo_wbc.robots.kangaroo.robot import leg_spec, load_kangaroo, standing_configuration

    try:
        clm = load_kangaroo(floating_base=False)
    except Exception as exc:  # noqa: BLE001 - the generated files may be absent
        pytest.skip(f"generated Kangaroo model not loadable: {exc}")
    return clm, standing_configuration(clm), leg_spec("left")


def _limit(clm, name: str, upper_rad: float) -> int:
    m = clm.model
    iq = m.joints[m.getJointId(name)].idx_q
    upper = m.upperPositionLimit.copy()
    upper[iq] = upper_rad
    m.upperPositionLimit = upper
    return iq


def test_a_passive_limit_inside_the_stroke_box_bounds_the_ankle_shape(kangaroo):
    """With the strokes only, the ankle pitch at the standing knee reaches above +10°. With the
    ankle pitch joint limited to +3° (inside that reach) the QP IK stops at 3° minus the margin in
    every direction that pushes it, and the rest of the shape (roll, negative pitch) is unchanged."""
    clm, q, leg = kangaroo
    acts, outs = leg.actuators["ankle"], leg.ankle_outputs
    strokes_only = joint_limit_shape(clm, q, acts, outs, directions=DIRECTIONS, passive_margin_rad=None)
    assert np.degrees(strokes_only[:, 1].max()) > 10.0
    limit, margin = np.radians(3.0), 0.02
    _limit(clm, outs[1], limit)
    shape = joint_limit_shape(clm, q, acts, outs, directions=DIRECTIONS, passive_margin_rad=margin)
    assert shape[:, 1].max() == pytest.approx(limit - margin, abs=LINEARISATION_TOL_RAD)
    assert shape[:, 1].min() == pytest.approx(strokes_only[:, 1].min(), abs=1e-6)
    assert np.abs(shape[:, 0]).max() == pytest.approx(np.abs(strokes_only[:, 0]).max(), abs=1e-6)


def test_no_shape_point_is_past_a_margined_passive_limit(kangaroo):
    """Every passive joint at every boundary point of the hip and ankle shapes is inside its URDF
    limits moved in by the margin (up to the linearisation)."""
    clm, q, leg = kangaroo
    from kangaroo_wbc_tools.analysis import mechanism

    limits = clm.passive_joint_limits(0.02)
    seen = []

    def closure_fk(theta, q_guess, **kw):  # records every configuration the IK visits
        out = type(clm).closure_fk(clm, theta, q_guess, **kw)
        seen.append(out[0][limits.idx_q])
        return out

    clm.closure_fk = closure_fk
    try:
        for acts, outs in ((leg.actuators["hip_pitch_roll"], leg.hip_outputs),
                           (leg.actuators["ankle"], leg.ankle_outputs)):
            mechanism.joint_limit_shape(clm, q, acts, outs, directions=DIRECTIONS, passive_margin_rad=0.02)
    finally:
        del clm.closure_fk
    theta_u = np.array(seen)
    assert len(seen) > DIRECTIONS
    assert np.all(theta_u >= limits.lower - LINEARISATION_TOL_RAD)
    assert np.all(theta_u <= limits.upper + LINEARISATION_TOL_RAD)
