"""Unit tests of the simulated ros2_control system and the in-process link (no ROS).

The simulated robot's samples (noise, boot offsets, motor torques) go through the system's
broadcasters and the nodes' boundary: every number the chain gets is compared with the simulator's
own sample (actuator space: bit for bit; serial space: the homed readings, through the exact maps
and back, within ``TOL``). Commands go the other way through the boundary and the simulated effort
controllers, with their behaviour on bad messages.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="the simulator needs mujoco")

from kangaroo_wbc.components.ros2_control.hand_over import STRICT, CommandGate  # noqa: E402
from kangaroo_wbc.components.ros2_control.link import Ros2ControlLink  # noqa: E402
from kangaroo_wbc.components.ros2_control.settings import build_boundary, build_system  # noqa: E402
from kangaroo_wbc.components.ros2_control.system import JOINT_STATE_FRAME_ID  # noqa: E402
from kangaroo_wbc.components.samples import Level, NameMap  # noqa: E402
from kangaroo_wbc.components.simulated_robot import SimulatedRobot, SimulatedRobotConfig  # noqa: E402
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo  # noqa: E402

TOL = 1e-9
LEFT, RIGHT = "leg_left_effort_controller", "leg_right_effort_controller"


@pytest.fixture(scope="module")
def clm():
    """Unit fixture: the Kangaroo model, floating base."""
    return load_kangaroo(floating_base=True)


@pytest.fixture(scope="module")
def robot():
    """Unit fixture: a simulated Kangaroo (seed 4), moved for 50 ms so that velocities are non-zero."""
    r = SimulatedRobot(SimulatedRobotConfig(seed=4))
    for _ in range(50):
        r.step()
    return r


def link(clm, robot, space: str) -> Ros2ControlLink:
    p = SimpleNamespace(joint_space=space, hardware_map="", ros2_controllers="")
    return Ros2ControlLink(build_boundary(clm, p), build_system(clm, p, robot.actuator_names,
                                                                robot.passive_encoder_names))


def active(lk: Ros2ControlLink):
    """The link's system with its effort controllers switched in (the hand-over's request)."""
    plan = lk.system.plan
    assert lk.system.switch(plan.effort, plan.hold, STRICT) == (True, "")
    return lk.system


def test_actuator_space_broadcast_is_the_native_sample(clm, robot):
    lk = link(clm, robot, "actuator")
    act, enc, imu = robot.samples()
    state = lk.system.broadcast(act, enc, imu)
    hw = lk.system.hw
    assert state.names == hw.commanded() + [j.name for j in hw.role("encoder")]  # the <ros2_control> block's order
    n_act = len(hw.commanded())
    assert np.isnan(state.effort[n_act:]).all() and np.isfinite(state.effort[:n_act]).all()  # encoders: no effort
    a, e, i = lk.native(state)
    to_model = NameMap(robot.actuator_names, clm.actuated_joint_names)
    assert np.array_equal(a.position, to_model(act.position))  # raw readings: the estimator calibrates
    assert np.array_equal(a.velocity, to_model(act.velocity))
    assert np.allclose(a.effort, to_model(act.effort), rtol=1e-12, atol=0)  # motor torque -> axial force -> back
    assert np.array_equal(e.position, NameMap(robot.passive_encoder_names, clm.absolute_encoders)(enc.position))
    assert np.array_equal(i.angular_velocity, imu.angular_velocity) and state.imu_frame_id == "imu"
    assert a.stamp_s == e.stamp_s == i.stamp_s == act.stamp_s
    assert JOINT_STATE_FRAME_ID == "base_link"


def test_serial_space_round_trip_gives_the_homed_readings(clm, robot):
    lk = link(clm, robot, "serial")
    act, enc, imu = robot.samples()
    offset = robot.encoder_offsets
    assert np.any(offset != 0.0)  # relative encoders: the homed driver removes them
    state = lk.system.broadcast(act, enc, imu, offset)
    assert state.names == lk.system.hw.commanded() and np.isfinite(state.effort).all()
    a, _, _ = lk.native(state)
    to_model = NameMap(robot.actuator_names, clm.actuated_joint_names)
    assert np.max(np.abs(a.position - to_model(act.position - offset))) <= TOL
    assert np.max(np.abs(a.velocity - to_model(act.velocity))) <= TOL
    scale = np.max(np.abs(act.effort))
    assert np.max(np.abs(a.effort - to_model(act.effort))) <= TOL * scale


@pytest.mark.parametrize("space", ["actuator", "serial"])
def test_commands_reach_the_actuators_unchanged(clm, robot, space):
    lk = link(clm, robot, space)
    act, enc, imu = robot.samples()
    lk.native(lk.system.broadcast(act, enc, imu, robot.encoder_offsets))
    force = np.random.default_rng(5).normal(scale=300.0, size=clm.n_a)
    cmd = lk.command(force, None, ready=True, stamp_s=act.stamp_s)
    expected = NameMap(clm.actuated_joint_names, robot.actuator_names)(force)
    assert cmd is not None and cmd.stamp_s == act.stamp_s
    assert np.max(np.abs(cmd.force - expected)) <= TOL * np.max(np.abs(force))


def test_nothing_goes_out_before_the_controller_is_ready(clm, robot):
    lk = link(clm, robot, "actuator")
    lk.native(lk.system.broadcast(*robot.samples()))
    assert lk.command(np.ones(clm.n_a), None, ready=False, stamp_s=0.1) is None
    assert lk.system.counts["valid"] == 0 and lk.gate.withheld == 1
    assert lk.command(np.ones(clm.n_a), None, ready=True, stamp_s=0.2) is not None
    assert lk.command(np.ones(clm.n_a), None, ready=False, stamp_s=0.3) is not None  # safe mode after hand-over
    gate = CommandGate()
    assert not gate.admit(False, 0.0) and gate.status().message.startswith("holding")


def test_a_command_needs_every_controller(clm, robot):
    system = active(link(clm, robot, "actuator"))
    cmd, events = system.on_command(LEFT, np.ones(6))
    assert cmd is None and not events
    cmd, _ = system.on_command(LEFT, np.full(6, 2.0))  # the same controller again: still waits for the other
    assert cmd is None
    cmd, _ = system.on_command(RIGHT, np.full(6, 3.0))
    assert cmd is not None
    left = [robot.actuator_names.index(n) for n in system.controllers[LEFT]]
    assert np.all(cmd.force[left] == 2.0)


def test_wrong_size_is_refused_and_the_last_command_kept(clm, robot):
    system = active(link(clm, robot, "actuator"))
    system.on_command(LEFT, np.ones(6))
    system.on_command(RIGHT, np.ones(6))
    cmd, events = system.on_command(LEFT, np.ones(5))
    assert cmd is None and events[0].level == Level.ERROR and "leg_left_effort_controller/commands" in events[0].message
    assert "5 values for the 6 joints" in events[0].message and "keeping its last command" in events[0].message
    cmd, _ = system.on_command(RIGHT, np.full(6, 7.0))  # the refused message counted as the left one's answer
    left = [robot.actuator_names.index(n) for n in system.controllers[LEFT]]
    assert cmd is not None and np.all(cmd.force[left] == 1.0)
    assert system.counts["refused"] == 1 and system.status().level == Level.ERROR
    assert system.status().level == Level.OK  # reported once


def test_non_finite_command_is_dropped(clm, robot):
    system = active(link(clm, robot, "actuator"))
    system.on_command(LEFT, np.ones(6))
    system.on_command(RIGHT, np.ones(6))
    bad = np.ones(6)
    bad[2] = np.nan
    cmd, events = system.on_command(LEFT, bad)
    assert cmd is None and events[0].level == Level.WARN and system.controllers[LEFT][2] in events[0].message
    cmd, _ = system.on_command(RIGHT, np.ones(6))  # the dropped message is no answer: the left one is awaited
    assert cmd is None
    cmd, _ = system.on_command(LEFT, np.full(6, 4.0))
    assert cmd is not None and np.isfinite(cmd.force).all()


def test_unknown_controller_and_second_publisher_are_refused(clm, robot):
    system = active(link(clm, robot, "actuator"))
    cmd, events = system.on_command("leg_left_position_controller", np.ones(6))
    assert cmd is None and events[0].level == Level.ERROR and LEFT in events[0].message
    events = system.refuse(LEFT, "other publishers ['/teleop'] than 'whole_body_controller'")
    assert events[0].level == Level.ERROR and "/teleop" in events[0].message
    assert system.counts["refused"] == 1
