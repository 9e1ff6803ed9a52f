"""The hand-over's switch without ROS: the plan read from the controllers' files, the controller
manager's switch bookkeeping (ros2_control Kilted, controller_manager.cpp), the requester's states,
and the simulated effort controllers applying nothing while inactive."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kangaroo_wbc.components.ros2_control.hand_over import (
    BEST_EFFORT,
    FORCE_AUTO,
    STRICT,
    ControllerManagerModel,
    HandOverPlan,
    SwitchRequester,
)
from kangaroo_wbc.components.ros2_control.settings import (
    controllers_file,
    hand_over_plan,
    load_hardware,
)
from kangaroo_wbc.components.samples import Level
from kangaroo_wbc.errors import ConfigError

LEFT, RIGHT = "leg_left_effort_controller", "leg_right_effort_controller"
HOLD = ["leg_left_position_controller", "leg_right_position_controller"]


@pytest.mark.parametrize("space", ["actuator", "serial"])
def test_plan_of_the_package_files(space):
    p = SimpleNamespace(joint_space=space, hardware_map="", ros2_controllers="")
    plan = hand_over_plan(p, load_hardware(p)[1])
    assert plan.effort == (LEFT, RIGHT) and list(plan.hold) == HOLD
    broadcasters = ["joint_state_broadcaster", "imu_sensor_broadcaster", "leg_left_ft_sensor_broadcaster",
                    "leg_right_ft_sensor_broadcaster"]  # the ankle F/T broadcasters are in the file too
    assert set(plan.controllers) == {*broadcasters, LEFT, RIGHT, *HOLD}
    boot = plan.boot_states()
    assert boot[LEFT] == boot[RIGHT] == "inactive"
    assert all(boot[c] == "active" for c in [*broadcasters, *HOLD])


def test_plan_refuses_a_file_without_the_effort_controllers(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("controller_manager:\n  ros__parameters:\n    update_rate: 1000\n")
    with pytest.raises(ConfigError, match=LEFT):
        HandOverPlan.from_file(path, [LEFT])
    assert HandOverPlan.from_file(controllers_file("actuator"), [LEFT]).hold == (HOLD[0],)


def manager() -> ControllerManagerModel:
    return ControllerManagerModel(HandOverPlan.from_file(controllers_file("actuator"), [LEFT, RIGHT]).boot_states())


def test_the_hand_over_switch_in_one_request():
    cm = manager()
    ok, message, started = cm.switch([LEFT, RIGHT], HOLD, STRICT)
    assert ok and message == "" and started == [LEFT, RIGHT]
    assert cm.active(LEFT) and cm.active(RIGHT) and not any(cm.active(c) for c in HOLD)
    assert cm.active("joint_state_broadcaster")
    # the same request again: the effort controllers are already active, the position ones not
    ok, message, started = cm.switch([LEFT, RIGHT], HOLD, STRICT)
    assert not ok and "already active" in message and not started
    ok, message, started = cm.switch([LEFT, RIGHT], HOLD, BEST_EFFORT)  # nothing left to do: ok
    assert ok and "no controllers need to be activated" in message and not started
    assert (cm.switches, cm.refusals) == (1, 1)


def test_strict_refuses_unknown_names_and_switches_nothing():
    cm = manager()
    ok, message, _ = cm.switch([LEFT, "leg_left_efort_controller"], HOLD, STRICT)
    assert not ok and "leg_left_efort_controller" in message and "no controller with this name" in message
    assert not cm.active(LEFT) and all(cm.active(c) for c in HOLD)  # nothing switched
    ok, _, _ = cm.switch([LEFT], ["leg_left_effort_controller"], STRICT)  # deactivating an inactive one
    assert not ok and not cm.active(LEFT)


def test_best_effort_skips_what_it_cannot_do():
    cm = manager()
    ok, _, started = cm.switch([LEFT, "nope"], [HOLD[0]], BEST_EFFORT)
    assert ok and started == [LEFT] and not cm.active(HOLD[0])
    ok, message, _ = cm.switch(["nope"], [], BEST_EFFORT)  # no known name in the list: refused
    assert not ok and "nope" in message
    ok, _, started = cm.switch([RIGHT], [], FORCE_AUTO)  # FORCE_AUTO: BEST_EFFORT (not implemented there)
    assert ok and started == [RIGHT]


def test_requester_states():
    plan = HandOverPlan.from_file(controllers_file("actuator"), [LEFT, RIGHT])
    r = SwitchRequester(plan, timeout_s=2.0)
    assert not r.due(False) and r.due(True)
    assert r.request() == ([LEFT, RIGHT], HOLD, STRICT)
    r.sent(10.0)
    assert not r.due(True) and not r.withholds and r.status().level == Level.OK
    assert not r.expired(11.9, service_ready=False)
    assert r.expired(12.0, service_ready=False) and r.withholds
    status = r.status()
    assert status.level == Level.ERROR and "not offered within 2 s" in status.message
    assert "withheld" in status.message and not r.due(True)  # one request per boot
    r2 = SwitchRequester(plan, timeout_s=2.0)
    r2.sent(0.0)
    r2.answer(False, "Controller with name 'x' is already active.")
    assert r2.withholds and "already active" in r2.status().message
    r3 = SwitchRequester(plan, timeout_s=2.0)
    r3.sent(0.0)
    r3.answer(True, "")
    assert not r3.withholds and r3.status().message == "effort controllers active"
    assert not r3.expired(100.0, service_ready=True)


def test_inactive_effort_controllers_apply_nothing():
    pytest.importorskip("mujoco", reason="the simulator needs mujoco")
    from kangaroo_wbc.components.ros2_control.link import Ros2ControlLink
    from kangaroo_wbc.components.ros2_control.settings import build_boundary, build_system
    from kangaroo_wbc.components.simulated_robot import SimulatedRobot, SimulatedRobotConfig
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm, robot = load_kangaroo(floating_base=True), SimulatedRobot(SimulatedRobotConfig(seed=4))
    p = SimpleNamespace(joint_space="actuator", hardware_map="", ros2_controllers="")
    system = build_system(clm, p, robot.actuator_names, robot.passive_encoder_names)
    for c in (LEFT, RIGHT):
        assert system.on_command(c, np.ones(6)) == (None, [])
    assert system.counts["inactive"] == 2 and system.counts["valid"] == 0 and not system.effort_active
    assert system.switch([LEFT, RIGHT], HOLD, STRICT) == (True, "")
    assert system.effort_active
    cmd, _ = system.on_command(LEFT, np.ones(6))
    assert cmd is None  # a fresh buffer: the right leg's first command is awaited
    cmd, _ = system.on_command(RIGHT, np.full(6, 2.0))
    assert cmd is not None and system.counts["valid"] == 2
    # a refused switch changes nothing
    assert system.switch(["leg_middle_effort_controller"], [], STRICT)[0] is False and system.effort_active
    # in-process (one-process loop): the link switches at the first ready
    lk = Ros2ControlLink(build_boundary(clm, p), build_system(clm, p, robot.actuator_names,
                                                              robot.passive_encoder_names))
    lk.native(lk.system.broadcast(*robot.samples()))
    assert lk.command(np.ones(clm.n_a), None, ready=False, stamp_s=0.1) is None and not lk.system.effort_active
    assert lk.command(np.ones(clm.n_a), None, ready=True, stamp_s=0.2) is not None and lk.system.effort_active
    assert not lk.drain_events()
