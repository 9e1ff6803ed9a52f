"""Unit tests of the reduced (centroidal two-stage) WBC against the projected dynamics."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.control.reduced_wbc import ReducedSettings, ReducedWholeBodyController
from kangaroo_wbc.control.wbc import WbcSettings
from kangaroo_wbc.model import projected_dynamics
from test.control.conftest import assert_kkt, digit_contacts, digit_limits, random_state

FRAMES = ["right_sole", "left_sole"]


def _reduced(clm, **kw):
    return ReducedWholeBodyController(clm, digit_contacts(), WbcSettings(base_frame="torso"), digit_limits(clm),
                                      ReducedSettings(**kw))


def test_chains_split_the_actuators_per_leg(digit_fb):
    red = _reduced(digit_fb)
    right, left = red._chains["right"][0], red._chains["left"][0]
    assert len(right) == len(left) == 6 and not set(right) & set(left)


def test_swing_leg_inertia_is_the_sum_of_its_bodies(digit_fb):
    clm = digit_fb
    red = _reduced(clm)
    q, nu, v = random_state(clm, 2)
    red.pm.update(q, nu)
    Y = pin.Inertia.Zero()
    for r in red._chains["left"][1]:
        Y += red.pm.data.oYcrb[r]
    m, data = clm.model, clm.model.createData()
    pin.forwardKinematics(m, data, q)
    roots = set(red._chains["left"][1])
    ref = pin.Inertia.Zero()
    for j in range(1, m.njoints):
        if roots & set(m.supports[j]):
            ref += data.oMi[j].act(m.inertias[j])
    np.testing.assert_allclose(Y.matrix(), ref.matrix(), atol=1e-10)


@pytest.mark.parametrize("swing_in_lqp1", [None, False])
def test_single_support_forces_are_eq_29_and_dynamics_consistent(digit_fb, swing_in_lqp1):
    clm = digit_fb
    red = _reduced(clm, swing_task_in_lqp1=swing_in_lqp1)
    q, nu, v = random_state(clm, 5, speed=0.1)
    red.step(q, v, active_contacts=("right",))  # first tick (J_G history)
    out = red.step(q, v, active_contacts=("right",))
    assert_kkt(out.qp)
    assert_kkt(out.qp2)
    pd = projected_dynamics(clm, q, v, FRAMES, 6)
    wrench = np.concatenate([out.wrenches["right"], out.wrenches["left"]])
    np.testing.assert_allclose(out.tau_a, pd.actuated_forces(out.nu_dot, wrench), atol=1e-8)
    np.testing.assert_allclose(out.forces["left"], 0.0)
    # Stance sole fixed (eq. (25b)); with n_uc = 6 eq. (30) fixes the swing leg and the base rows hold.
    acc = red.pm.jacobian("right_sole") @ out.nu_dot + red.pm.drift("right_sole")
    assert np.max(np.abs(acc)) < 1e-2
    base = pd.base_residual(out.nu_dot, wrench)
    if swing_in_lqp1 is None:
        assert np.max(np.abs(base)) < 1e-2 * max(1.0, np.abs(pd.h[:6]).max())
    # else: the swing task trades eq. (30) off in LQP 2 (weighted method), so the base rows of the
    # assembled solution are only approximately balanced: the paper's known approximation.


def test_double_support_is_the_full_controller(digit_fb):
    clm = digit_fb
    red = _reduced(clm)
    q, nu, v = random_state(clm, 6)
    out = red.step(q, v, active_contacts=("right", "left"))
    assert "lqp2" not in out.timing  # one QP: the full controller's
    full = red.full
    np.testing.assert_allclose(out.tau_a, full.last_output.tau_a)


def test_actuator_modes_reach_both_qps(digit_fb):
    """A limp actuator (:meth:`WholeBodyController.set_actuator_mode`) gives no force whether it is
    in the stance chain (LQP 1's eq. (14) rows) or the swing chain (LQP 2's eq. (69) rows); a locked
    one keeps its acceleration at 0 (the stroke box both QPs read)."""
    clm = digit_fb
    red = _reduced(clm)
    stance, swing = red._chains["right"][0], red._chains["left"][0]
    names = clm.actuated_joint_names
    limp = (names[stance[1]], names[swing[2]])
    locked = names[swing[0]]
    for n in limp:
        red.set_actuator_mode(n, "limp")
    red.set_actuator_mode(locked, "locked")
    q, nu, v = random_state(clm, 7, speed=0.0)
    red.step(q, v, active_contacts=("right",))
    out = red.step(q, v, active_contacts=("right",))
    assert_kkt(out.qp)
    for n in limp:
        assert abs(out.tau_a[names.index(n)]) < 1e-6
    assert abs(out.nu_dot[red.pm.n_b + names.index(locked)]) < 1e-6
    assert red.active_limits()["passive_joint_limits"] == []
