"""Integration tests of the ``sim`` node as a ros2_control system: the real executable over DDS.

With ``interface: ros2_control`` the node publishes what joint_state_broadcaster and
imu_sensor_broadcaster publish (topics from ``config/ros2_controllers*.yaml``: ``use_local_topics``,
names in the ``<ros2_control>`` block's order, three interfaces, frame ids, QoS) and takes the
effort controllers' ``<controller>/commands`` with their behaviour on bad messages; a second
publisher on a command topic is reported and refused. It stands for the controller manager: the
effort controllers are inactive at boot (their commands not applied) until a
``controller_manager/switch_controller`` request activates them; a wrong request is refused.
Isolation: ``test/integration/ros_harness.py``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")
pytest.importorskip("mujoco", reason="the simulator needs mujoco")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

from kangaroo_wbc.model.hardware_map import load_hardware_map  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.diagnostics import Level  # noqa: E402
from test.integration.ros_harness import RosEnvironment, RosHarness, ros_environment  # noqa: E402,F401
from test.nodes.test_sim_node import ENV, ROOT, STARTUP_TIMEOUT_S, DiagnosticsWatch  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.ros]

MAP = ROOT / "config" / "hardware_map.yaml"
JOINT_STATES = "/joint_state_broadcaster/joint_states"  # use_local_topics: true in the generated files
IMU = "/imu_sensor_broadcaster/imu"
LEFT = "/leg_left_effort_controller/commands"
EFFORT = ["leg_left_effort_controller", "leg_right_effort_controller"]
HOLD = ["leg_left_position_controller", "leg_right_position_controller"]
STRICT = 2


def call(harness: RosHarness, service: str, request, timeout_s: float = 20.0):
    """One service call from the probe node (its client created once per service)."""
    from controller_manager_msgs import srv

    kind = {"/controller_manager/switch_controller": srv.SwitchController,
            "/controller_manager/list_controllers": srv.ListControllers}[service]
    node = harness.probe.node
    clients = node.__dict__.setdefault("_test_clients", {})
    client = clients.get(service) or clients.setdefault(service, node.create_client(kind, service))
    deadline = time.monotonic() + timeout_s
    while not client.service_is_ready():
        assert time.monotonic() < deadline, f"{service} not offered"
        harness.check_alive()
        time.sleep(0.05)
    future = client.call_async(request)
    while not future.done():
        assert time.monotonic() < deadline, f"{service}: no answer"
        time.sleep(0.01)
    return future.result()


def states(harness: RosHarness) -> dict[str, str]:
    from controller_manager_msgs.srv import ListControllers

    return {c.name: c.state for c in call(harness, "/controller_manager/list_controllers",
                                          ListControllers.Request()).controller}


def switch(harness: RosHarness, activate: list[str], deactivate: list[str], strictness: int = STRICT):
    from controller_manager_msgs.srv import SwitchController

    return call(harness, "/controller_manager/switch_controller", SwitchController.Request(
        activate_controllers=activate, deactivate_controllers=deactivate, strictness=strictness))


@pytest.fixture(scope="module")
def harness(ros_environment: RosEnvironment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RosHarness]:
    """Module harness (integration infrastructure)."""
    h = RosHarness(ros_environment, tmp_path_factory.mktemp("sim_ros2_control"))
    try:
        yield h
    finally:
        h.close()


def start(harness: RosHarness, space: str, **params):
    harness.probe.recorder("/diagnostics", DiagnosticArray)
    proc = harness.start_node("sim", params={"interface": "ros2_control", "joint_space": space, "seed": 2, **params},
                              env=ENV)
    harness.wait_for_message(JOINT_STATES, JointState, timeout_s=STARTUP_TIMEOUT_S)
    return proc


@pytest.mark.parametrize("space", ["actuator", "serial"])
def test_broadcasters_publish_the_block_joints(harness: RosHarness, space: str) -> None:
    proc = start(harness, space)
    hw = load_hardware_map(MAP, joint_space=space)
    msg = harness.wait_for_message(JOINT_STATES, JointState)
    expected = hw.commanded() + [j.name for j in hw.joints if j.name not in hw.commanded()]
    assert list(msg.name) == expected and msg.header.frame_id == "base_link"
    assert len(msg.position) == len(msg.velocity) == len(msg.effort) == len(expected)
    n = len(hw.commanded())
    assert all(math.isfinite(v) for v in [*msg.position, *msg.velocity, *msg.effort[:n]])
    assert all(math.isnan(v) for v in msg.effort[n:])  # encoders: no effort interface
    imu = harness.wait_for_message(IMU, Imu)
    o = imu.orientation
    assert imu.header.frame_id == "imu" and math.sqrt(o.x**2 + o.y**2 + o.z**2 + o.w**2) == pytest.approx(1.0)
    assert harness.probe.node.count_publishers("/actuators/state") == 0  # not the native contract
    assert harness.stop(proc) == 0


def matched_publisher(harness: RosHarness, topic: str):
    pub = harness.probe.publisher(topic, Float64MultiArray, qos.SENSOR_STATE)
    deadline = time.monotonic() + 10.0
    while pub.get_subscription_count() < 1:
        assert time.monotonic() < deadline, f"no subscriber matched on {topic}"
        harness.check_alive()
        time.sleep(0.02)
    return pub


def test_commands_apply_only_once_switched_and_a_wrong_switch_is_refused(harness: RosHarness) -> None:
    proc = start(harness, "actuator", controller="pd", command_source="''")  # empty: any publisher
    diag = DiagnosticsWatch(harness)
    boot = states(harness)
    assert {boot[c] for c in EFFORT} == {"inactive"}
    assert {boot[c] for c in [*HOLD, "joint_state_broadcaster", "imu_sensor_broadcaster"]} == {"active"}
    pub = matched_publisher(harness, LEFT)
    diag.mark()
    pub.publish(Float64MultiArray(data=[0.0] * 5))  # an inactive controller does not even look at it
    text = diag.wait("effort_controllers", lambda level, t: level == Level.OK)
    assert "5 values" not in text
    # STRICT: an unknown name, or deactivating what is not active, switches nothing
    res = switch(harness, [*EFFORT, "leg_middle_effort_controller"], HOLD)
    assert not res.ok and "leg_middle_effort_controller" in res.message
    res = switch(harness, EFFORT, [*HOLD, EFFORT[0]])
    assert not res.ok and "not active" in res.message
    assert states(harness) == boot
    res = switch(harness, EFFORT, HOLD)
    assert res.ok, res.message
    after = states(harness)
    assert {after[c] for c in EFFORT} == {"active"} and {after[c] for c in HOLD} == {"inactive"}
    res = switch(harness, EFFORT, HOLD)  # the same again: already active
    assert not res.ok and "already active" in res.message
    diag.mark()
    pub.publish(Float64MultiArray(data=[0.0] * 5))  # now the active controller refuses it
    text = diag.wait("effort_controllers", lambda level, t: level == Level.ERROR and "5 values" in t)
    assert harness.stop(proc) == 0


def test_wrong_size_and_non_finite_commands_are_reported(harness: RosHarness) -> None:
    proc = start(harness, "actuator", controller="pd", command_source="''")  # empty: any publisher
    diag = DiagnosticsWatch(harness)
    pub = matched_publisher(harness, LEFT)
    assert switch(harness, EFFORT, HOLD).ok
    diag.mark()
    pub.publish(Float64MultiArray(data=[0.0] * 5))
    text = diag.wait("effort_controllers", lambda level, t: level == Level.ERROR and "5 values" in t)
    assert "leg_left_effort_controller/commands" in text and "refused" in text
    pub.publish(Float64MultiArray(data=[math.nan] + [0.0] * 5))
    text = diag.wait("effort_controllers", lambda level, t: level >= Level.WARN and "non-finite" in t)
    assert "leg_left_1" in text or "left_hip_yaw_actuator" in text  # the joint named
    diag.wait("command", lambda level, _: level == Level.OK)  # nothing reached the actuators' guard
    assert harness.stop(proc) == 0


def test_a_second_publisher_is_named_and_refused(harness: RosHarness) -> None:
    proc = start(harness, "serial", controller="pd")  # only the whole_body_controller node may publish
    diag = DiagnosticsWatch(harness)
    pub = matched_publisher(harness, LEFT)
    diag.mark()
    assert "kangaroo_wbc_test_probe" in diag.wait("writers", lambda level, _: level == Level.ERROR)
    pub.publish(Float64MultiArray(data=[0.0] * 6))
    text = diag.wait("effort_controllers", lambda level, t: level == Level.ERROR and "other publishers" in t)
    assert "kangaroo_wbc_test_probe" in text and "refused" in text
    # nothing of it reached the actuators: still no command (the in-process PD drives)
    diag.mark()
    assert "waiting for the first command" in diag.wait("watchdog", lambda level, _: level == Level.OK)
    assert harness.stop(proc) == 0


def test_ankle_ft_broadcasters_publish_the_foot_wrench(harness: RosHarness) -> None:
    """Each ankle F/T of the files on ``<broadcaster>/wrench`` in its sensor frame: the wrench the
    foot exerts on the leg, its F_z the sole's normal force (the simulator's truth) minus the foot's
    weight, compared sample by sample at equal stamps (the truth at 100 Hz)."""
    from geometry_msgs.msg import WrenchStamped

    from kangaroo_wbc.components.ankle_ft import GRAVITY_M_S2
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo
    from kangaroo_wbc.ros.conversions import time_msg_to_seconds

    hw = load_hardware_map(MAP)
    assert [ft.broadcaster for ft in hw.force_torque] == ["leg_left_ft_sensor_broadcaster",
                                                          "leg_right_ft_sensor_broadcaster"]
    m = load_kangaroo(floating_base=True).model
    rec = {}
    for ft in hw.force_torque:
        rec[ft.broadcaster] = harness.probe.recorder(f"/{ft.broadcaster}/wrench", WrenchStamped)
        rec[ft.sole] = harness.probe.recorder(f"/sim/ground_truth/{ft.sole}/wrench", WrenchStamped)
    proc = start(harness, "actuator", publish_ground_truth=True)
    for ft in hw.force_torque:
        harness.wait_for_message(f"/{ft.broadcaster}/wrench", WrenchStamped, timeout_s=30.0)
    time.sleep(1.0)  # samples to pair, not synchronisation
    for ft in hw.force_torque:
        foot_weight = m.inertias[m.frames[m.getFrameId(ft.frame_id)].parentJoint].mass * GRAVITY_M_S2
        with rec[ft.broadcaster].lock:
            measured = {round(time_msg_to_seconds(msg.header.stamp), 6): msg for _, msg in rec[ft.broadcaster].items}
        with rec[ft.sole].lock:
            truth = {round(time_msg_to_seconds(msg.header.stamp), 6): msg for _, msg in rec[ft.sole].items}
        pairs = [(measured[t], truth[t]) for t in sorted(set(measured) & set(truth))]
        assert len(pairs) >= 5, (len(measured), len(truth))
        for msg, gt in pairs:
            assert msg.header.frame_id == ft.frame_id
            assert msg.wrench.force.z == pytest.approx(gt.wrench.force.z - foot_weight, abs=0.5)  # a level foot
    assert harness.stop(proc) == 0
