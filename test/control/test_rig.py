"""The one-leg rig's controller and behaviour: the clamp as a bilateral fixture contact of the
whole-body QP, the sole's circle and the press.

Unit tests: the one-leg Kangaroo model (pinocchio), the QP solved once per test; no simulator.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.control.behaviours import (
    BEHAVIOURS,
    BehaviourState,
    RigCircleAndPress,
    make_behaviour,
)
from kangaroo_wbc.control.rig import FIXTURE, clamp_wrench, rig_controller
from kangaroo_wbc.control.wbc import WbcReferences
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.robots.kangaroo.rig import load_one_leg, rig_pose
from test.control.conftest import FD_TOL, KKT_TOL

GRAVITY = 9.81
FORCE_TOL_N = 1e-2  # QP solution vs the balance of forces [N] (solver tolerance on ~200 N)
NU_DOT_TOL = 1e-6  # [m/s², rad/s²]: the clamped base's acceleration


@pytest.fixture(scope="module")
def rig():
    """Unit-test data: the one-leg model at the rig's boot pose, at rest, pelvis at the origin."""
    clm = load_one_leg("left")
    theta, _ = rig_pose("left")
    q, _ = clm.closure_fk(np.array([theta[n] for n in clm.actuated_joint_names]), clm.q_ref)
    q[:7] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    return clm, q


def _step(clm, q, references=None):
    wbc = rig_controller(clm, "left_sole", "left")
    out = wbc.step(q, np.zeros(clm.model.nv), references=references)
    return wbc, out


def test_clamp_carries_the_weight_of_a_leg_at_rest(rig):
    """The sole holds its pose in the air: no acceleration, the clamp's wrench is the robot's weight
    (force m g up, moment (c - p_base) x m g about the pelvis)."""
    clm, q = rig
    wbc, out = _step(clm, q, WbcReferences(active_contacts=(FIXTURE,)))
    res = out.qp.kkt()
    assert res.primal < KKT_TOL and res.dual < KKT_TOL
    assert np.abs(out.nu_dot[:6]).max() < NU_DOT_TOL
    mg = clm.mass_kg * GRAVITY
    w = clamp_wrench(wbc)
    assert np.allclose(w[:3], [0.0, 0.0, mg], atol=FORCE_TOL_N)
    assert np.allclose(w[3:], np.cross(wbc.pm.com - q[:3], [0.0, 0.0, mg]), atol=FORCE_TOL_N)
    assert np.allclose(out.wrenches["left"], 0.0)


@pytest.mark.parametrize("press", [50.0, 200.0])
def test_pressing_moves_the_load_from_the_clamp_to_the_plate(rig, press):
    """With the sole a contact pushing ``press`` [N] (also below half the weight, where a lower bound
    would not be met with equality): the sole's normal force is ``press`` and the clamp carries the
    weight minus it; the fixture's friction-cone rows are zero (no unilaterality)."""
    clm, q = rig
    wbc, out = _step(clm, q, WbcReferences(active_contacts=(FIXTURE, "left"), contact_normal_force={"left": press}))
    assert out.qp.kkt().primal < KKT_TOL
    assert abs(out.wrenches["left"][2] - press) < FORCE_TOL_N
    total = clamp_wrench(wbc)[:3] + out.wrenches["left"][:3]
    assert np.allclose(total, [0.0, 0.0, clm.mass_kg * GRAVITY], atol=FORCE_TOL_N)
    cones = wbc.inequalities[0]
    M, _, _ = cones.rows(wbc.pm, wbc.contact_terms(wbc.active_contacts))
    fixture_cols = wbc.layout.force_slice(FIXTURE)
    assert not M[:, fixture_cols].any() and M[:, wbc.layout.force_slice("left")].any()


SOLE_START = np.array([0.1, 0.1, -0.8])  # [m]


def _state() -> BehaviourState:
    return BehaviourState(com=np.zeros(3), base_rotation=np.eye(3),
                          soles={"left": (np.eye(3), SOLE_START.copy()), FIXTURE: (np.eye(3), np.zeros(3))},
                          contacts=(FIXTURE,))


def test_circle_feed_forward_is_the_derivative_of_its_position():
    b = make_behaviour("rig", radius_m=0.04, period_s=1.5, turns=3)
    b.start(0.0, _state())
    h = 1e-6
    for tau in np.linspace(0.05, b.circle_s - 0.05, 23):
        p0, v, a = b.circle(tau)
        p1, v1, _ = b.circle(tau + h)
        assert np.allclose((p1 - p0) / h, v, atol=FD_TOL * 10)
        assert np.allclose((v1 - v) / h, a, atol=FD_TOL * 1e3)
    c = SOLE_START
    for tau in (0.0, b.circle_s):
        p, v, a = b.circle(tau)
        assert np.allclose(p, c) and np.allclose(v, 0.0) and np.allclose(a, 0.0)
    p, _, _ = b.circle(1.5 * b.period_s)  # the middle turn: the full radius, in the sagittal plane
    assert abs(np.linalg.norm(p - c) - b.radius_m) < 1e-12 and abs(p[1] - c[1]) < 1e-12


def test_phases_contacts_and_the_press_force_with_its_integral_correction():
    b = RigCircleAndPress(press_force_n=200.0, force_ki_per_s=10.0, force_correction_max_n=50.0)
    b.start(0.0, _state())
    ref = b.references(0.5)
    assert b.phase == "circle" and ref.active_contacts == (FIXTURE,) and ref.contact_normal_force == {"left": None}
    b.references(b.circle_s + 0.5)
    assert b.phase == "approach"
    t = b.press_starts_s + b.force_ramp_s
    assert b.references(t).contact_normal_force["left"] == pytest.approx(200.0)
    assert b.phase == "press" and b.references(t).active_contacts == (FIXTURE, "left")
    for k in range(1, 201):  # the plate reads 20 N short: the reference rises by k_i * 20 N per s ...
        b.measure_normal_force(180.0, t + k * 1e-3)
        ref = b.references(t + k * 1e-3)
    assert b.force_correction_n == pytest.approx(10.0 * 20.0 * 0.2)
    for k in range(201, 400):  # ... then saturates
        b.measure_normal_force(180.0, t + k * 1e-3)
        ref = b.references(t + k * 1e-3)
    assert b.force_correction_n == pytest.approx(50.0)
    assert ref.contact_normal_force["left"] == pytest.approx(250.0)


def test_rig_behaviour_is_built_by_name_but_not_offered_on_the_free_robot():
    assert "rig" not in BEHAVIOURS and isinstance(make_behaviour("rig"), RigCircleAndPress)
    with pytest.raises(InputError, match="turns"):
        make_behaviour("rig", turns=1)
    b = make_behaviour("rig", fixture="clamp")
    with pytest.raises(InputError, match="clamp"):
        b.start(0.0, _state())
