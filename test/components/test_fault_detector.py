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
from kangaroo_wbc.control.fault_detector import (
    ActuatorFaultDetector,
    CommandHistory,
    FaultDetectorSettings,
)
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


# ---------------------------------------------------------------------------- hold-off (no false faults)
def test_the_command_compared_is_the_one_in_effect_at_the_sample_stamp(kangaroo):
    """Unit: samples processed late (CPU load), after newer commands were sent, are compared with the
    command the drives held at the sample's stamp: a fast-changing healthy command is no fault; the
    last command sent instead would declare healthy actuators (the check can fail)."""
    _, screws = kangaroo
    n = len(screws.names)
    history = CommandHistory(n)
    held = ActuatorFaultDetector(screws, FaultDetectorSettings(window_s=0.02))
    naive = ActuatorFaultDetector(screws, FaultDetectorSettings(window_s=0.02))
    velocity, watched = np.zeros(n), np.ones(n, dtype=bool)
    lag = 40  # ticks between a sample's stamp and its processing (a 40 ms stall)
    forces = [np.full(n, 300.0 if (k // 60) % 2 else -300.0) for k in range(400)]  # a command moving fast [N]
    naive_found = False
    for k in range(400):
        history.record(k * DT, forces[k])
        if k < lag:
            continue
        stamp = (k - lag) * DT + 0.5 * DT  # taken between two commands, processed `lag` ticks later
        torque = screws.torque_from_force(forces[k - lag], velocity)  # what the drives were told then
        force = held.check(stamp, history.at(stamp))
        assert force is not None and np.array_equal(force, forces[k - lag])
        assert not held.update(stamp, force, torque, velocity, watched)
        naive_found = naive.update(stamp, forces[k], torque, velocity, watched) or naive_found
    assert naive_found, "the last command sent would have declared healthy actuators"
    assert held.held_off == 0


def test_a_sample_older_than_every_command_or_a_stale_command_gathers_no_evidence(kangaroo):
    _, screws = kangaroo
    n = len(screws.names)
    settings = FaultDetectorSettings(window_s=0.02, command_max_age_s=0.05, holdoff_s=0.1)
    det, history = ActuatorFaultDetector(screws, settings), CommandHistory(n)
    history.record(1.0, np.full(n, 100.0))
    assert history.at(0.999) is None
    assert det.check(0.999, history.at(0.999)) is None and det.held_off == 1
    assert "predates" in det.held_off_reason
    assert det.check(1.04, history.at(1.04)) is not None  # 40 ms old: in effect
    assert det.check(1.06, history.at(1.06)) is None  # 60 ms old: the drives may have damped
    assert "60 ms older" in det.held_off_reason
    history.record(1.07, np.full(n, 100.0))
    assert det.check(1.071, history.at(1.071)) is None  # fresh again, within the hold-off after the gap
    history.record(1.15, np.full(n, 100.0))
    assert det.check(1.155, history.at(1.155)) is None
    history.record(1.16, np.full(n, 100.0))
    assert det.check(1.165, history.at(1.165)) is not None  # hold-off over (1.06 + 0.1)
    with pytest.raises(InputError, match="holdoff_s"):
        FaultDetectorSettings(holdoff_s=float("inf"))


def _trip(c: WholeBodyControl, clm, screws, stall: range, damped_until: int, ticks: int) -> None:
    """Control ticks on the still, healthy robot at 1 kHz; no command during ``stall`` (the actuators'
    watchdog damps: motor torques of damping, here zero on the still robot) and the drives still damped
    until tick ``damped_until``; every sample reaches the controller (late ones included)."""
    q, v = standing_configuration(clm), np.zeros(clm.model.nv)
    cmd = None
    for k in range(ticks):
        if cmd is not None:
            torque = (np.zeros(clm.n_a) if k < damped_until and k >= stall.start
                      else screws.torque_from_force(cmd.tau_a, np.zeros(clm.n_a)))
            c.on_actuator_sample(ActuatorSample(np.zeros(clm.n_a), np.zeros(clm.n_a), torque, k * DT))
        if k not in stall:
            cmd = c.step(k * DT, q, v, 0.0)


@pytest.mark.parametrize("hold_off", [True, False])
def test_a_watchdog_trip_declares_nothing(kangaroo, hold_off):
    """Unit: the controller stalls 150 ms (the drives' watchdog damps), its commands resume and the
    drives take 20 ms more to follow: with the hold-off no healthy actuator is declared; without it
    (the check can fail) the damped actuators are declared limp."""
    clm, screws = kangaroo
    detector = (FaultDetectorSettings() if hold_off
                else FaultDetectorSettings(command_max_age_s=10.0, holdoff_s=0.0))
    c = _control(clm, fault_detector=detector)
    _trip(c, clm, screws, range(200, 350), 370, 800)
    status = c.statuses()[-1]
    if hold_off:
        assert set(c.actuator_modes.values()) == {"active"} and status.level == Level.OK
        assert status.values["detector_held_off"] > 100 and "ms" in status.values["detector_held_off_reason"]
        assert status.values["detector_samples"] > 300  # watched again after the hold-off
    else:
        assert "limp" in c.actuator_modes.values() and status.level == Level.ERROR


def test_while_the_command_topic_has_two_writers_nothing_is_declared_and_it_is_reported(kangaroo):
    """Unit: the adapter says the command topic has another writer (the robot damps: the samples
    show no commanded force): an ERROR naming it, no actuator declared, the detector held off; once
    the writer is gone the detector watches again (after its hold-off)."""
    clm, screws = kangaroo
    c = _control(clm)
    q, v = standing_configuration(clm), np.zeros(clm.model.nv)
    shared = "/actuators/command also published by /intruder"
    cmd = None
    for k in range(800):
        if cmd is not None:
            damped = 100 <= k < 300
            torque = np.zeros(clm.n_a) if damped else screws.torque_from_force(cmd.tau_a, np.zeros(clm.n_a))
            c.on_actuator_sample(ActuatorSample(np.zeros(clm.n_a), np.zeros(clm.n_a), torque, k * DT),
                                 shared if damped else "")
        cmd = c.step(k * DT, q, v, 0.0)
    assert set(c.actuator_modes.values()) == {"active"}
    errors = [e for e in c.drain_events() if e.key == "command writers"]
    assert errors and errors[0].level == Level.ERROR and "/intruder" in errors[0].message
    status = c.statuses()[-1]
    assert status.level == Level.OK and "more than one writer" in status.values["detector_held_off_reason"]
    assert status.values["detector_samples"] > 250  # watched before, and after the hold-off (0.3 s)
