"""Unit tests of :class:`SimulatedRobot` (no ROS): crane, release handshake, command guard, watchdog,
latency measurement."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="the simulator needs mujoco")

from kangaroo_wbc.components.samples import ActuatorCommand, Level  # noqa: E402
from kangaroo_wbc.components.simulated_robot import SimulatedRobot, SimulatedRobotConfig  # noqa: E402

HANG_DRIFT_M = 1e-3  # [m] actuator creep allowed while the hold PD keeps the hanging legs
TICK = 1e-3  # [s]


@pytest.fixture
def robot() -> SimulatedRobot:
    """Unit fixture: a fresh simulated Kangaroo (1 kHz, seed 0), on the crane."""
    return SimulatedRobot(SimulatedRobotConfig(seed=0))


def zeros(robot: SimulatedRobot, stamp_s: float | None = None) -> ActuatorCommand:
    return ActuatorCommand(np.zeros(len(robot.actuator_names)), robot.time if stamp_s is None else stamp_s)


def run(robot: SimulatedRobot, seconds: float, command: bool = False) -> list:
    """Step ``seconds``, submitting a zero-force command before every step if ``command``."""
    events = []
    for _ in range(int(round(seconds / TICK))):
        if command:
            events += robot.submit(zeros(robot), 0.0)
        events += robot.step()
    return events


def test_robot_hangs_still_until_commanded(robot):
    z0, theta0 = robot.base_position()[2], robot.sim.actuator_positions()
    robot.set_controller_ready(True)  # ready alone, without commands, does not release the crane
    run(robot, 0.5)
    assert robot.base_held and robot.mode == "hold"
    assert robot.base_position()[2] == z0
    assert np.max(np.abs(robot.sim.actuator_positions() - theta0)) < HANG_DRIFT_M
    assert robot.time == pytest.approx(0.5)


def delayed(release_delay_s: float = 0.2) -> SimulatedRobot:
    return SimulatedRobot(SimulatedRobotConfig(seed=0, release_delay_s=release_delay_s))


def test_commands_before_ready_are_not_applied(robot):
    """The driver holds the hanging robot until the controller is ready (its early commands are
    safe-mode ones computed before calibration)."""
    run(robot, 0.1, command=True)
    assert robot.base_held and robot.mode == "hold"
    robot.set_controller_ready(True)
    run(robot, 0.002, command=True)
    assert robot.mode == "command"


def test_crane_released_only_after_ready_and_delay():
    robot = delayed()
    run(robot, 0.1, command=True)
    assert robot.base_held  # commanded but not ready
    robot.set_controller_ready(True)
    t_ready = robot.time
    released_at = None
    for _ in range(400):
        robot.submit(zeros(robot), 0.0)
        events = robot.step()
        if any(e.key == "crane" for e in events):
            released_at = robot.time - TICK  # the release happens before the step
    assert released_at == pytest.approx(t_ready + robot.config.release_delay_s, abs=1.5 * TICK)
    assert not robot.base_held
    robot.set_controller_ready(False)  # safe mode after the release: the robot is not hung up again
    run(robot, 0.01, command=True)
    assert not robot.base_held


def test_ready_without_fresh_commands_keeps_the_crane():
    robot = delayed()
    robot.set_controller_ready(True)
    run(robot, 0.05, command=True)
    run(robot, 0.4)  # commands stop: the watchdog returns to the hold PD, the crane waits
    assert robot.base_held and robot.mode == "hold"
    run(robot, 0.002, command=True)  # ready for longer than the delay and fresh again: released
    assert not robot.base_held


def test_commands_clamped_or_rejected(robot):
    robot.set_controller_ready(True)
    limits = robot.sim.force_limits
    request = np.zeros(len(limits))
    request[0] = 10.0 * limits[0]
    events = robot.submit(ActuatorCommand(request, 0.0), 0.0)
    assert [e.level for e in events] == [Level.WARN] and robot.actuator_names[0] in events[0].message
    robot.step()
    assert robot.sim.command[0] == limits[0]
    for bad in (np.full(len(limits), math.nan), np.zeros(len(limits) - 1), np.array([np.inf] + [0.0] * 11)):
        events = robot.submit(ActuatorCommand(bad, 0.0), 1.0)
        assert [e.level for e in events] == [Level.ERROR]
    robot.step()
    assert robot.sim.command[0] == limits[0]  # the last valid command stays
    assert robot.counts["rejected"] == 3 and robot.counts["clamped"] == 1
    status = {s.name: s for s in robot.statuses(1.5)}["command"]
    assert status.level == Level.ERROR


def test_watchdog_falls_back_to_hold_then_damping():
    robot = delayed()
    timeout = robot.config.watchdog_timeout_s
    robot.set_controller_ready(True)
    run(robot, 0.02, command=True)
    assert robot.mode == "command"
    events = run(robot, timeout + 2 * TICK)
    assert robot.mode == "hold" and any(e.key == "watchdog" and e.level == Level.WARN for e in events)
    assert robot.base_held
    run(robot, robot.config.release_delay_s + 2 * TICK, command=True)
    assert not robot.base_held
    events = run(robot, timeout + 2 * TICK)
    assert robot.mode == "damping" and any(e.key == "watchdog" and e.level == Level.WARN for e in events)
    velocity = robot.sim.actuator_velocities()  # the damping acts on the velocity before the step
    robot.step()
    limits = robot.sim.force_limits
    np.testing.assert_array_equal(robot.sim.command,
                                  np.clip(-robot.config.watchdog_damping_n_s_per_m * velocity, -limits, limits))
    status = {s.name: s for s in robot.statuses(0.0)}["watchdog"]
    assert status.level == Level.WARN
    assert status.values["trips"] == 2  # command -> hold on the crane, command -> damping after the release


def test_latency_measured_from_stamps(robot):
    act, enc, imu = robot.samples(wall_s=10.0)
    assert act.stamp_s == enc.stamp_s == imu.stamp_s == robot.time
    assert act.position.shape == (len(robot.actuator_names),)
    assert enc.position.shape == (len(robot.passive_encoder_names),)
    robot.submit(zeros(robot, stamp_s=act.stamp_s), 10.004)
    robot.submit(zeros(robot, stamp_s=act.stamp_s), 10.009)  # a second answer to the same sample: not timed
    robot.submit(zeros(robot, stamp_s=123.0), 10.010)  # a stamp never handed out: not timed
    robot.step()
    act, _, _ = robot.samples(wall_s=20.0)
    robot.submit(zeros(robot, stamp_s=act.stamp_s), 20.0015)
    np.testing.assert_allclose(robot.latency_ms(reset=True), [4.0, 1.5], atol=1e-6)
    assert robot.latency_ms().size == 0  # a new window
    latency = {s.name: s for s in robot.statuses(21.0)}["latency"]
    assert latency.values["samples"] == 2 and latency.values["p50_ms"] == pytest.approx(2.75, abs=1e-6)


def test_nan_never_reaches_mujoco(robot, monkeypatch):
    applied = []
    original = robot.sim.set_command

    def spy(forces):
        applied.append(np.array(forces, dtype=float))
        return original(forces)

    monkeypatch.setattr(robot.sim, "set_command", spy)
    robot.set_controller_ready(True)  # commands are applied from now on
    bad = np.zeros(len(robot.actuator_names))
    bad[3] = math.nan
    for _ in range(20):
        robot.submit(ActuatorCommand(bad, robot.time), 0.0)
        robot.step()
    assert applied and all(np.all(np.isfinite(f)) for f in applied)
    assert np.all(np.isfinite(robot.sim.data.ctrl)) and np.all(np.isfinite(robot.sim.data.qpos))
    assert robot.counts["valid"] == 0 and robot.mode == "hold"


@pytest.mark.parametrize(("faults", "match"), [
    (("seize:left_ankle_inner_actuator@1",), "expected MODE:ACTUATOR@T"),
    (("lock:left_ankle_inner_actuator@-1",), "expected MODE:ACTUATOR@T"),
    (("lock:left_ankle_inner_actuatr@1",), "unknown actuator 'left_ankle_inner_actuatr'"),
])
def test_a_malformed_fault_schedule_is_an_input_error_naming_it(robot, faults, match):
    """Unit: the ``faults`` schedule (the sim node's parameter) is checked when set: a bad mode, a
    negative time or an unknown actuator is an InputError naming it; the running schedule stays."""
    from kangaroo_wbc.errors import InputError

    with pytest.raises(InputError, match=match):
        robot.config = SimulatedRobotConfig(**{**robot.config.__dict__, "faults": faults})
    assert robot.config.faults == ()
