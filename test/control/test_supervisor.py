"""Unit tests of the supervisor: behaviours on the WBC and the safe mode (never NaN)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.control.contacts import ContactSpec
from kangaroo_wbc.control.supervisor import SafetySettings, WbcSupervisor
from kangaroo_wbc.control.wbc import ActuatorLimits, WbcSettings, WholeBodyController
from kangaroo_wbc.errors import InputError
from test.control.conftest import ankle_dead_point_configuration, digit_contacts, digit_limits


@pytest.fixture()
def supervisor(digit_fb):
    wbc = WholeBodyController(
        digit_fb, digit_contacts(), WbcSettings(base_frame="torso"), digit_limits(digit_fb)
    )
    return WbcSupervisor(wbc, SafetySettings(damping_n_s_per_m=100.0))


def _rest(clm):
    return clm.q_ref.copy(), np.zeros(clm.model.nv)


def test_control_then_safe_on_bad_input_then_recovery(supervisor, digit_fb):
    q, v = _rest(digit_fb)
    cmd = supervisor.tick(0.0, q, v)
    assert cmd.mode == "control" and np.all(np.isfinite(cmd.tau_a))
    v_bad = v.copy()
    v_bad[digit_fb.idx_v_a[0]] = np.nan
    cmd = supervisor.tick(0.001, q, v_bad)
    assert cmd.mode == "safe" and np.all(np.isfinite(cmd.tau_a)) and "non-finite" in cmd.reason
    v_moving = v.copy()
    v_moving[digit_fb.idx_v_a] = 0.1
    cmd = supervisor.tick(0.002, q, v_moving, state_age_s=1.0)
    assert cmd.mode == "safe" and "stale" in cmd.reason
    np.testing.assert_allclose(cmd.tau_a, -100.0 * 0.1)  # damping
    assert supervisor.tick(0.003, q, v).mode == "control"  # transient: control resumes


def test_tilt_latches_until_reset(supervisor, digit_fb):
    q, v = _rest(digit_fb)
    supervisor.tick(0.0, q, v)
    fallen = q.copy()
    fallen[3:7] = pin.Quaternion(pin.exp3(np.array([1.2, 0.0, 0.0]))).coeffs()
    assert supervisor.tick(0.001, fallen, v).latched
    cmd = supervisor.tick(0.002, q, v)
    assert cmd.mode == "safe" and cmd.latched
    supervisor.reset()
    assert supervisor.tick(0.003, q, v).mode == "control"


def test_qp_failure_gives_safe_mode(digit_fb):
    n = digit_fb.n_a
    weak = ActuatorLimits(
        np.full(n, -1e-3),
        np.full(n, 1e-3),
        np.full(n, -np.inf),
        np.full(n, np.inf),
        np.full(n, np.inf),
    )
    pushing = [
        ContactSpec.rectangle(c.name, c.frame, 0.16, 0.08, normal_force_min_n=1000.0)
        for c in digit_contacts()
    ]
    sup = WbcSupervisor(
        WholeBodyController(digit_fb, pushing, WbcSettings(base_frame="torso"), weak)
    )
    cmd = sup.tick(0.0, *_rest(digit_fb))
    assert cmd.mode == "safe" and sup.stats.qp_failures == 1
    assert cmd.reason.startswith(("QP infeasible: OSQP", "QP solver failed: OSQP")), cmd.reason
    np.testing.assert_array_equal(cmd.tau_a, 0.0)  # damping of a still robot


class _FailingController:
    """The controller, whose step raises ``error`` (default NoSolutionFound: a solver giving up)
    while ``failing``."""

    def __init__(self, wbc: WholeBodyController, error: Exception | None = None) -> None:
        self.wbc, self.failing, self.error = wbc, False, error

    def __getattr__(self, name):
        return getattr(self.wbc, name)

    def step(self, *args, **kwargs):
        from kangaroo_wbc.errors import NoSolutionFound

        if self.failing:
            raise self.error or NoSolutionFound("the solver gave up")
        return self.wbc.step(*args, **kwargs)


def test_a_library_exception_in_the_controller_gives_safe_mode_not_a_traceback(digit_fb):
    """An exception from outside the package (a solver library's RuntimeError) ends in the safe
    mode with its text in the reason, counted; control resumes once it stops."""
    wbc = WholeBodyController(digit_fb, digit_contacts(), WbcSettings(base_frame="torso"), digit_limits(digit_fb))
    controller = _FailingController(wbc, RuntimeError("Model has not been set up. Call setup() first."))
    sup = WbcSupervisor(controller)
    q, v = _rest(digit_fb)
    assert sup.tick(0.0, q, v).mode == "control"
    controller.failing = True
    cmd = sup.tick(0.5, q, v)
    assert cmd.mode == "safe" and sup.stats.internal_errors == 1
    assert cmd.reason == "internal error (RuntimeError: Model has not been set up. Call setup() first.)"
    assert np.isfinite(cmd.tau_a).all()
    controller.failing = False
    assert sup.tick(0.6, q, v).mode == "control"


def test_qp_failure_right_after_control_holds_the_last_command(digit_fb):
    """A QP failure within qp_failure_hold_s of a control tick repeats its forces (mode hold);
    failures beyond that fall back to the safe mode."""
    wbc = WholeBodyController(digit_fb, digit_contacts(), WbcSettings(base_frame="torso"), digit_limits(digit_fb))
    controller = _FailingController(wbc)
    sup = WbcSupervisor(controller, SafetySettings(qp_failure_hold_s=0.02))
    q, v = _rest(digit_fb)
    good = sup.tick(0.0, q, v)
    assert good.mode == "control" and np.abs(good.tau_a).max() > 1.0
    controller.failing = True
    held = sup.tick(0.01, q, v)
    assert held.mode == "hold" and sup.stats.qp_failures == 1 and "QP solver failed" in held.reason
    np.testing.assert_array_equal(held.tau_a, good.tau_a)
    late = sup.tick(0.03, q, v)  # 30 ms after the last control tick: the fallback
    assert late.mode == "safe" and sup.stats.qp_failures == 2
    controller.failing = False
    assert sup.tick(0.04, q, v).mode == "control"
    with pytest.raises(InputError, match="qp_failure_hold_s"):
        SafetySettings(qp_failure_hold_s=1.0)


def test_stale_restarts_the_behaviour_from_the_next_state(supervisor, digit_fb):
    """No state for a while (watchdog): safe, zero force; the behaviour restarts where the robot is."""
    q, v = _rest(digit_fb)
    assert supervisor.tick(0.0, q, v).mode == "control"
    first = supervisor.behaviour
    cmd = supervisor.stale(0.6)
    assert (
        cmd.mode == "safe"
        and not cmd.latched
        and cmd.reason == "stale state (no state for 600 ms)"
    )
    np.testing.assert_array_equal(cmd.tau_a, 0.0)
    assert supervisor.stats.stale == 1
    moved = q.copy()
    moved[0] += 0.05  # the robot was moved meanwhile
    assert supervisor.tick(1.0, moved, v).mode == "control"
    assert supervisor.behaviour is not first and supervisor.behaviour.t0 == 1.0
    np.testing.assert_allclose(
        supervisor.behaviour.state.com, supervisor.controller.pm.com, atol=1e-12
    )
    assert supervisor.behaviour.state.com[0] - first.state.com[0] == pytest.approx(0.05, abs=1e-9)


def test_near_singular_kangaroo_configuration_gives_safe_mode(kangaroo_fb):
    """The ankle's lower rods near their dead point: J_lu ill-conditioned (pivot ratio ~2e-4 < 1e-3),
    ModelError from the model update, safe mode naming the sub-mechanism (damping, not latched);
    control resumes at the standing configuration."""
    from kangaroo_wbc.errors import ModelError
    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    clm = kangaroo_fb
    corners = ("_corner_fl", "_corner_fr", "_corner_rl", "_corner_rr")
    contacts = [
        ContactSpec.from_corner_frames(clm.model, s, s, [s + c for c in corners])
        for s in ("left_sole", "right_sole")
    ]
    wbc = WholeBodyController(clm, contacts, WbcSettings(min_jlu_pivot_ratio=1e-3))
    sup = WbcSupervisor(wbc, SafetySettings(damping_n_s_per_m=200.0))
    stand, v = standing_configuration(clm), np.zeros(clm.model.nv)
    near = ankle_dead_point_configuration(clm, 0.005)
    assert sup.tick(0.0, stand, v).mode == "control"
    moving = v.copy()
    moving[clm.idx_v_a] = 0.01
    cmd = sup.tick(0.001, near, moving)
    assert cmd.mode == "safe" and not cmd.latched and sup.stats.singular == 1
    assert cmd.reason.startswith("singular configuration: J_lu ill-conditioned: LU pivot ratio"), (
        cmd.reason
    )
    assert "22 passive joints (left_ankle_" in cmd.reason and "dead point" in cmd.reason
    np.testing.assert_allclose(cmd.tau_a, -200.0 * 0.01)
    assert sup.tick(0.002, stand, v).mode == "control"
    # the check, not an exactly singular matrix: without it the model update goes through
    wbc.pm.min_pivot_ratio = 0.0
    wbc.pm.update(near, np.zeros(wbc.pm.n_nu))
    wbc.pm.min_pivot_ratio = 1e-3
    with pytest.raises(ModelError, match="ill-conditioned"):
        wbc.pm.update(near, np.zeros(wbc.pm.n_nu))


def test_behaviour_switch_and_measured_contacts(supervisor, digit_fb):
    q, v = _rest(digit_fb)
    supervisor.select("weight_shift", stance="right", shift_s=0.01, lift_s=0.5, hold_s=1.0)
    supervisor.tick(0.0, q, v)
    cmd = supervisor.tick(0.2, q, v, measured_contacts=["right", "left"])
    assert cmd.output.active_contacts == ("right",)
    supervisor.select("stand")
    cmd = supervisor.tick(0.3, q, v, measured_contacts=["left"])  # right sole measured unloaded
    assert cmd.output.active_contacts == ("left",)
    with pytest.raises(InputError):
        supervisor.select("moonwalk")
