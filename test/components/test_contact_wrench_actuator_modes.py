"""Unit tests of :meth:`ContactWrenchEstimation.set_actuator_mode` (no ROS): the mode reaches the
estimator, an event names each change, the ``wrench`` status lists the modes, a typo changes nothing,
and a locked actuator's motor torque teaches the torque bias nothing.

The floating-base Kangaroo standing still, motor torques that balance chosen sole wrenches
(quasi-static eq. (46)), the locked actuator's reading zero (a seized screw: the lock carries it).
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.components.contact_wrench import ContactWrenchEstimation
from kangaroo_wbc.components.samples import ActuatorSample, Level
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.estimation.actuator_force import ActuatorCompensation
from kangaroo_wbc.estimation.contact_wrench import (
    ContactWrenchConfig,
    ContactWrenchEstimator,
    paper_screws,
)
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

ANKLE = "left_ankle_inner_actuator"
SOLES = ["left_sole", "right_sole"]
DT = 1e-3


@pytest.fixture(scope="module")
def standing():
    """Model, standing configuration, the true sole wrenches and the motor torques that balance
    them, with the ankle actuator's reading zero (it is locked)."""
    clm = load_kangaroo(floating_base=True)
    q = standing_configuration(clm)
    probe = ContactWrenchEstimator(clm, SOLES, config=ContactWrenchConfig(filter_enabled=False))
    probe.update_model(q)
    f = np.linalg.lstsq(probe.J_cb_T, probe.g_base, rcond=None)[0]
    tau = probe.g_pa - probe.J_cm_T @ f
    k = clm.actuated_joint_names.index(ANKLE)
    assert abs(tau[k]) > 5.0  # the lock carries a load
    torque = tau / probe.transmission.paper_gain
    torque[k] = 0.0
    return clm, q, f.reshape(2, 6), torque


def _component(clm, compensation=None) -> ContactWrenchEstimation:
    return ContactWrenchEstimation(clm, paper_screws(clm), ContactWrenchConfig(filter_enabled=False),
                                   compensation=compensation)


def _run(comp, clm, q, torque, n: int, t0: float = 0.0):
    out = None
    for i in range(n):
        t = t0 + i * DT
        comp.on_state(q, np.zeros(clm.model.nv), t)
        out = comp.step(ActuatorSample(q[clm.idx_q_a], np.zeros(clm.n_a), torque, t))
    return out


def test_the_mode_reaches_the_estimator_and_the_estimate(standing):
    clm, q, f, torque = standing
    comp = _component(clm)
    wrong = _run(comp, clm, q, torque, 1).wrench_sole_in_sole_raw.copy()
    assert np.abs(wrong - f).max() > 1.0
    comp.set_actuator_mode(ANKLE, "locked")
    assert comp.estimator.actuator_modes[ANKLE] == "locked"
    out = _run(comp, clm, q, torque, 1, t0=DT)
    np.testing.assert_allclose(out.wrench_sole_in_sole_raw, f, atol=1e-6 * np.abs(f).max())


def test_each_change_is_an_event_and_the_status_lists_the_modes(standing):
    clm, q, _, torque = standing
    comp = _component(clm)
    _run(comp, clm, q, torque, 1)
    comp.drain_events()
    assert comp.statuses()[0].values["actuator_modes"] == "all active"
    comp.set_actuator_mode(ANKLE, "locked")
    comp.set_actuator_mode("right_hip_yaw_actuator", "limp")
    comp.set_actuator_mode("right_hip_yaw_actuator", "limp")  # unchanged: no event
    events = comp.drain_events()
    assert [e.level for e in events] == [Level.WARN, Level.WARN]
    assert events[0].message.startswith(f"{ANKLE}: active -> locked")
    assert "right_hip_yaw_actuator: active -> limp" in events[1].message and "zero" in events[1].message
    _run(comp, clm, q, torque, 1, t0=DT)
    status = comp.statuses()[0]
    assert status.level == Level.OK  # the estimate runs: the modes are values, not a fault of the estimator
    assert status.values["actuator_modes"] == f"{ANKLE}: locked, right_hip_yaw_actuator: limp"
    comp.set_actuator_mode(ANKLE, "active")
    (event,) = comp.drain_events()
    assert event.level == Level.OK and event.message.startswith(f"{ANKLE}: locked -> active")
    assert comp.statuses()[0].values["actuator_modes"] == "right_hip_yaw_actuator: limp"


def test_a_typo_is_an_input_error_and_changes_nothing(standing):
    clm = standing[0]
    comp = _component(clm)
    with pytest.raises(InputError, match=ANKLE):
        comp.set_actuator_mode("left_ankle_inner", "locked")
    with pytest.raises(InputError, match="modes are"):
        comp.set_actuator_mode(ANKLE, "seized")
    assert comp.drain_events() == []
    assert set(comp.estimator.actuator_modes.values()) == {"active"}


@pytest.mark.parametrize("told", [True, False])
def test_a_locked_actuator_teaches_the_torque_bias_nothing(standing, told):
    """Released, still, on both soles: the torque bias learns from the actuated rows' residual. The
    locked actuator reads zero while its lock carries a load: told, its row is out and its bias stays
    zero (the others have nothing to learn); untold, that load would be learnt as a bias."""
    clm, q, _, torque = standing
    comp = _component(clm, ActuatorCompensation(actuator_model=False, rotor_inertia=False, torque_bias=True))
    comp.set_released(True)
    if told:
        comp.set_actuator_mode(ANKLE, "locked")
    _run(comp, clm, q, torque, 200)
    k = clm.actuated_joint_names.index(ANKLE)
    bias = comp.forces.bias_nm
    if told:
        assert bias[k] == 0.0
        assert np.abs(bias).max() < 1e-6
    else:
        assert abs(bias[k]) > 1e-2
