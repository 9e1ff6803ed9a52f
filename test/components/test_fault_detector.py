"""Unit tests of the actuator fault detector (:mod:`kangaroo_wbc.control.fault_detector`) and of its
use by :class:`~kangaroo_wbc.components.control.WholeBodyControl` (no ROS, no simulator).

The actuators are simulated by the ball-screw model itself: a healthy drive reads the motor torque
the model gives for the command (plus the current sensor's bias and noise), a failed driver reads
its bias and noise only.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.components.assembly import contact_specs
from kangaroo_wbc.components.control import ControlSettings, WholeBodyControl
from kangaroo_wbc.components.samples import ActuatorSample, Level
from kangaroo_wbc.control.fault_detector import ActuatorFaultDetector, FaultDetectorSettings
from kangaroo_wbc.control.supervisor import WbcSupervisor
from kangaroo_wbc.control.wbc import WbcSettings, WholeBodyController
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.estimation import paper_screws
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

DT = 1e-3
#: the current sensor of the simulated drives: per-boot bias and white noise, as a force [N]
BIAS_N, NOISE_N = 8.0, 3.0


@pytest.fixture(scope="module")
def kangaroo():
    """Unit fixture: the floating-base Kangaroo and its ball screws."""
    clm = load_kangaroo(floating_base=True)
    return clm, paper_screws(clm)


def _drive(screws, force_n, velocity, failed, rng, bias):
    """Motor torques [N·m] of drives told ``force_n``: the model's torque, zero where ``failed``;
    plus bias and noise (given as forces through eq. (47)'s gain)."""
    torque = np.where(failed, 0.0, screws.torque_from_force(force_n, velocity))
    gain = np.abs(screws.paper_gain)
    return torque + (bias + NOISE_N * rng.standard_normal(force_n.shape)) / gain


def test_a_failed_driver_is_found_within_the_window_and_a_healthy_one_never(kangaroo):
    _, screws = kangaroo
    settings = FaultDetectorSettings(window_s=0.1)
    det = ActuatorFaultDetector(screws, settings)
    n = len(screws.names)
    rng = np.random.default_rng(3)
    bias = rng.uniform(-BIAS_N, BIAS_N, n)
    failed = np.zeros(n, dtype=bool)
    fail_at, k_fail = 0.5, 4
    found_at = None
    for k in range(2000):
        t = k * DT
        force = 100.0 + 30.0 * np.sin(2 * np.pi * 0.5 * t + np.arange(n))  # loaded actuators [N]
        velocity = 0.02 * np.cos(2 * np.pi * 0.5 * t + np.arange(n))  # [m/s]
        failed[k_fail] = t >= fail_at
        if det.update(t, force, _drive(screws, force, velocity, failed, rng, bias), velocity, np.ones(n, bool)):
            assert np.flatnonzero(det.found).tolist() == [k_fail]  # only the failed one
            found_at = t if found_at is None else found_at
    assert found_at is not None, "the failed driver was not found"
    # found once its residual has been beyond the tolerance for the window (here from the failure on)
    assert fail_at + settings.window_s - DT <= found_at <= fail_at + settings.window_s + 5 * DT


def test_a_disagreement_shorter_than_the_window_and_an_unwatched_actuator_are_not_faults(kangaroo):
    _, screws = kangaroo
    det = ActuatorFaultDetector(screws, FaultDetectorSettings(window_s=0.1))
    n = len(screws.names)
    force, velocity = np.full(n, 100.0), np.zeros(n)
    good, dead = screws.torque_from_force(force, velocity), np.zeros(n)
    watched = np.ones(n, dtype=bool)
    watched[0] = False  # e.g. already declared limp: its zero torque is expected
    for k in range(300):  # 90 ms dead, 10 ms good, ...: never a whole window
        torque = good.copy() if k % 100 >= 90 else dead.copy()
        torque[0] = 0.0
        assert not det.update(k * DT, force, torque, velocity, watched)


def test_settings_are_checked():
    with pytest.raises(InputError, match="window_s"):
        FaultDetectorSettings(window_s=0.0)
    with pytest.raises(InputError, match="force_tolerance_ratio"):
        FaultDetectorSettings(force_tolerance_ratio=float("nan"))


def _control(clm, **kw) -> WholeBodyControl:
    wbc = WholeBodyController(clm, contact_specs(clm), WbcSettings(base_frame="base_link"))
    return WholeBodyControl(WbcSupervisor(wbc), ControlSettings(ready_ticks=5, **kw))


def _run(c: WholeBodyControl, clm, screws, failed_name: str, ticks: int) -> None:
    """Control ticks on the still robot; each tick's actuator sample answers the last command, the
    actuator ``failed_name`` without any torque."""
    q, v = standing_configuration(clm), np.zeros(clm.model.nv)
    i = clm.actuated_joint_names.index(failed_name)
    cmd = None
    for k in range(ticks):
        if cmd is not None:
            torque = screws.torque_from_force(cmd.tau_a, np.zeros(clm.n_a))
            torque[i] = 0.0
            c.on_actuator_sample(ActuatorSample(np.zeros(clm.n_a), np.zeros(clm.n_a), torque, k * DT))
        cmd = c.step(k * DT, q, v, 0.0)


def test_the_controller_declares_an_actuator_that_does_not_follow_limp_and_says_so(kangaroo):
    clm, screws = kangaroo
    c = _control(clm)
    name = "left_leg_length_actuator"  # carries ~130 N standing: its failure is seen
    _run(c, clm, screws, name, 200)
    assert c.actuator_modes[name] == "limp"
    assert [m for n, m in c.actuator_modes.items() if n != name] == ["active"] * (clm.n_a - 1)
    errors = [e for e in c.drain_events() if e.level == Level.ERROR and name in e.message]
    assert len(errors) == 1 and "does not produce the commanded force" in errors[0].message
    status = c.statuses()[-1]
    assert status.name == "actuators" and status.level == Level.ERROR and name in status.message
    assert status.values[name] == "limp" and status.values["driven"] == "11 of 12"
    version = c.modes_version
    c.set_actuator_mode(name, "locked")  # the operator's word replaces the detector's
    assert c.actuator_modes[name] == "locked" and c.modes_version == version + 1
    assert c.statuses()[-1].level == Level.WARN


def test_without_fault_declare_the_detector_only_reports(kangaroo):
    clm, screws = kangaroo
    c = _control(clm, fault_declare=False)
    name = "right_leg_length_actuator"
    _run(c, clm, screws, name, 200)
    assert set(c.actuator_modes.values()) == {"active"} and c.modes_version == 0
    assert c.statuses()[-1].level == Level.ERROR
    assert sum(e.level == Level.ERROR and name in e.message for e in c.drain_events()) == 1


def test_a_healthy_robot_is_never_declared(kangaroo):
    clm, screws = kangaroo
    c = _control(clm)
    q, v = standing_configuration(clm), np.zeros(clm.model.nv)
    cmd = None
    for k in range(300):
        if cmd is not None:
            torque = screws.torque_from_force(cmd.tau_a, np.zeros(clm.n_a))
            c.on_actuator_sample(ActuatorSample(np.zeros(clm.n_a), np.zeros(clm.n_a), torque, k * DT))
        cmd = c.step(k * DT, q, v, 0.0)
    status = c.statuses()[-1]
    assert set(c.actuator_modes.values()) == {"active"} and status.level == Level.OK
    assert status.values["detector_samples"] > 250  # watched from ready (5 ticks) on


def test_an_unknown_actuator_is_an_input_error(kangaroo):
    clm, _ = kangaroo
    with pytest.raises(InputError, match="left_ankle_inner_actuator"):
        _control(clm).set_actuator_mode("left_ankle", "locked")


def test_ideal_actuators_are_judged_by_eq_47_alone(kangaroo):
    """Ideal actuators' torque sensor reads eq. (47)'s inverse (no firmware feed-forward): judged
    with the drive model, moving healthy screws leave a residual of the size of the feed-forward;
    with ``drive_model=False`` the residual is zero and nothing is found."""
    clm, screws = kangaroo
    n = len(clm.actuated_joint_names)
    force, velocity = np.full(n, 50.0), np.full(n, 0.05)
    ideal = screws.torque_from_force(force, velocity, switch=False, friction=False)
    residual = {}
    for drive_model in (True, False):
        d = ActuatorFaultDetector(screws, FaultDetectorSettings(drive_model=drive_model))
        for k in range(200):
            d.update(k * DT, force, ideal, velocity, np.ones(n, dtype=bool))
        residual[drive_model] = d.residual_n.copy()
        if not drive_model:
            assert not d.found.any()
    assert residual[False].max() < 1e-9
    assert residual[True].min() > 5.0  # the feed-forward the ideal sensor does not read
