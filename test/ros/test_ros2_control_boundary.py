"""The ros2_control boundary: broadcaster arrays -> native samples, forces -> controller data, bad input.

Unit tests (no rclpy: the boundary takes plain arrays; a subprocess checks it imports no rclpy).
States come from the model (closure FK of random strokes), so every expected number is computed
independently of the boundary: the native contract for the actuator space, the exact maps of
:mod:`kangaroo_wbc.model.serial_map` for the serial space.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import yaml

from kangaroo_wbc.errors import ConfigError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.hardware_map import load_hardware_map
from kangaroo_wbc.model.serial_map import SerialJointMap
from kangaroo_wbc.robots.kangaroo.robot import standing_configuration
from kangaroo_wbc.robots.kangaroo.ros2_control import ROOT
from kangaroo_wbc.ros.backends.ros2_control import (
    BoundaryInputError,
    Ros2ControlBoundary,
    Ros2ControlConfig,
)
from test.robots.conftest import CLOSURES, URDF

MAP = ROOT / "config" / "hardware_map.yaml"
CONTROLLERS = {"actuator": ROOT / "config" / "ros2_controllers.yaml",
               "serial": ROOT / "config" / "ros2_controllers_serial.yaml"}
TOL = 1e-9
EXTRA = ["arm_left_1_joint", "torso_joint"]  # joints of the robot the map does not know: ignored


@pytest.fixture(scope="module")
def clm() -> ClosedLoopModel:
    """The Kangaroo, floating base (unit-test data)."""
    return ClosedLoopModel.from_files(URDF, CLOSURES, floating_base=True)


def boundary(clm, space, override=None) -> Ros2ControlBoundary:
    hw = load_hardware_map(MAP, override, joint_space=space)
    return Ros2ControlBoundary(hw, clm, Ros2ControlConfig.from_file(CONTROLLERS[space]))


def shuffled(rng, names, *arrays):
    """The message's arrays in a random order, with extra joints (NaN efforts, as the broadcaster
    fills interfaces a joint lacks)."""
    names = list(names) + EXTRA
    arrays = [np.r_[a, np.zeros(len(EXTRA)) if k < 2 else np.full(len(EXTRA), np.nan)] for k, a in enumerate(arrays)]
    p = rng.permutation(len(names))
    return [names[i] for i in p], *[a[p] for a in arrays]


def test_boundary_imports_no_rclpy():
    code = "import sys, kangaroo_wbc.ros.backends.ros2_control; print('rclpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_config_from_the_generated_controllers_file():
    cfg = Ros2ControlConfig.from_file(CONTROLLERS["serial"])
    assert cfg.use_local_topics and cfg.joint_states_topic() == "/joint_state_broadcaster/joint_states"
    assert cfg.imu_topic("/robot/") == "/robot/imu_sensor_broadcaster/imu"
    assert cfg.command_topics() == {"leg_left_effort_controller": "/leg_left_effort_controller/commands",
                                    "leg_right_effort_controller": "/leg_right_effort_controller/commands"}
    assert cfg.controllers["leg_left_effort_controller"][3] == "leg_left_length_joint"
    assert Ros2ControlConfig(use_local_topics=False).joint_states_topic("/ns") == "/ns/joint_states"


def test_controllers_file_must_match_the_map(clm, tmp_path):
    doc = yaml.safe_load(CONTROLLERS["serial"].read_text())
    joints = doc["leg_left_effort_controller"]["ros__parameters"]["joints"]
    joints[1], joints[2] = joints[2], joints[1]
    bad = tmp_path / "c.yaml"
    bad.write_text(yaml.safe_dump(doc))
    hw = load_hardware_map(MAP, joint_space="serial")
    with pytest.raises(ConfigError, match="effort controllers .* differ from those of"):
        Ros2ControlBoundary(hw, clm, Ros2ControlConfig.from_file(bad))
    doc = yaml.safe_load(CONTROLLERS["serial"].read_text())
    doc["imu_sensor_broadcaster"]["ros__parameters"]["frame_id"] = "imu_link"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="imu_sensor_broadcaster.frame_id: 'imu_link', the hardware map"):
        Ros2ControlBoundary(hw, clm, Ros2ControlConfig.from_file(bad))


@pytest.mark.parametrize("effort_kind", ["axial_force", "motor_torque"])
def test_actuator_space_state_and_commands(clm, effort_kind):
    rng = np.random.default_rng(1)
    over = {"joint_spaces": {"actuator": {"joints": {n: {"effort_state": effort_kind, "effort_command": effort_kind}
                                                     for n in clm.actuated_joint_names}}}}
    b = boundary(clm, "actuator", over)
    hw = b.hw
    q = standing_configuration(clm)
    theta, theta_dot, force = q[clm.idx_q_a] + 0.003, rng.normal(size=12), rng.normal(scale=500, size=12)
    per_n = np.array([hw.joint(n).motor_torque_per_newton() for n in clm.actuated_joint_names])
    effort = force if effort_kind == "axial_force" else force * per_n
    enc = q[[clm.model.joints[clm.model.getJointId(n)].idx_q for n in clm.absolute_encoders]]
    names = clm.actuated_joint_names + clm.absolute_encoders
    msg = shuffled(rng, names, np.r_[theta, enc], np.r_[theta_dot, np.zeros(10)], np.r_[effort, np.full(10, np.nan)])
    s = b.state(*msg, stamp_s=12.5)
    assert np.array_equal(s.actuators.position, theta) and np.array_equal(s.actuators.velocity, theta_dot)
    assert np.allclose(s.actuators.effort, force * per_n, rtol=1e-12, atol=0)  # motor torque, eq. (47)
    assert np.array_equal(s.encoders.position, enc) and s.actuators.stamp_s == s.encoders.stamp_s == 12.5
    data = b.commands(force)
    for name, joints in hw.controllers.items():
        rows = [clm.actuated_joint_names.index(hw.joint(j).model) for j in joints]
        expected = force[rows] * (per_n[rows] if effort_kind == "motor_torque" else 1.0)
        assert np.allclose(data[name], expected, rtol=1e-12, atol=0)


def test_serial_space_state_and_commands(clm):
    """Serial joints (PAL's names, one of them with a sign and zero) -> the model's actuator state,
    and forces -> serial torques that do the same virtual work."""
    rng = np.random.default_rng(2)
    over = {"joint_spaces": {"serial": {"joints": {"leg_right_5_joint": {"scale": -1.0, "offset": 0.1}}}}}
    b = boundary(clm, "serial", over)
    hw = b.hw
    smap = SerialJointMap(clm, [hw.joint(n).model for n in hw.commanded()])
    q = standing_configuration(clm)
    theta = q[clm.idx_q_a] + rng.uniform(-0.004, 0.004, 12)
    theta_dot, force = rng.normal(scale=0.05, size=12), rng.normal(scale=500, size=12)
    ref = smap.to_serial(theta, theta_dot, q)
    tau_y = smap.serial_torques(ref.q, force)
    scale = np.array([hw.joint(n).scale for n in hw.commanded()])
    offset = np.array([hw.joint(n).offset for n in hw.commanded()])
    msg = shuffled(rng, hw.commanded(), scale * ref.y + offset, scale * ref.y_dot, tau_y / scale)
    s = b.state(*msg, stamp_s=3.0)
    assert np.max(np.abs(s.actuators.position - theta)) <= TOL
    assert np.max(np.abs(s.actuators.velocity - theta_dot)) <= TOL
    lead_eff = np.array([[e["screw_lead_m"], e["screw_efficiency"]] for e in
                         (clm.closure_file.actuators[n] for n in clm.actuated_joint_names)])
    motor = force * lead_eff[:, 0] / (2 * np.pi * lead_eff[:, 1])
    assert np.max(np.abs(s.actuators.effort - motor)) <= TOL * np.max(np.abs(motor))
    idx = [clm.model.joints[clm.model.getJointId(n)].idx_q for n in clm.absolute_encoders]
    assert np.max(np.abs(s.encoders.position - ref.q[idx])) <= TOL
    data = b.commands(force)
    sent = np.concatenate([data[c] for c in hw.controllers])
    assert np.max(np.abs(sent * scale - tau_y)) <= TOL * np.max(np.abs(tau_y))
    assert (sent * scale) @ ref.y_dot == pytest.approx(force @ theta_dot, rel=1e-9)  # same power


def test_bad_joint_states_are_named_and_change_nothing(clm):
    rng = np.random.default_rng(3)
    b = boundary(clm, "serial")
    hw = b.hw
    smap = SerialJointMap(clm, [hw.joint(n).model for n in hw.commanded()])
    q = standing_configuration(clm)
    ref = smap.to_serial(q[clm.idx_q_a], np.zeros(12), q)
    names, pos, vel, eff = shuffled(rng, hw.commanded(), ref.y, ref.y_dot, np.zeros(12))
    with pytest.raises(BoundaryInputError, match="no joint state converted yet") as err:
        b.commands(np.zeros(12))
    assert err.value.key == "command.no_state"
    b.state(names, pos, vel, eff, 0.0)
    q_before = b.q.copy()

    def expect(key, match, *args):
        with pytest.raises(BoundaryInputError, match=match) as e:
            b.state(*args)
        assert e.value.key == key
        assert np.array_equal(b.q, q_before)

    drop = names.index("leg_left_length_joint")
    expect("joint_states.missing", r"\['leg_left_length_joint'\] missing",
           names[:drop] + names[drop + 1:], np.delete(pos, drop), np.delete(vel, drop), np.delete(eff, drop), 1.0)
    expect("joint_states.duplicate", r"listed twice",
           names + [names[0]], np.r_[pos, 0], np.r_[vel, 0], np.r_[eff, 0], 1.0)
    expect("joint_states.velocity_size", r"velocity has 13 values for 14 names", names, pos, vel[:-1], eff, 1.0)
    v = vel.copy()
    v[names.index("leg_right_4_joint")] = np.nan
    expect("joint_states.velocity_nan", r"non-finite velocity of \['leg_right_4_joint'\]", names, pos, v, eff, 1.0)
    e = eff.copy()
    e[names.index("leg_left_1_joint")] = np.inf
    expect("joint_states.effort_nan", r"non-finite effort of \['leg_left_1_joint'\]", names, pos, vel, e, 1.0)
    far = pos.copy()
    far[names.index("leg_left_length_joint")] = 3.0  # knee beyond its stroke
    expect("joint_states.unreachable", r"serial joints not mapped to the actuators", names, far, vel, eff, 1.0)
    expect("joint_states.stamp", r"non-finite stamp", names, pos, vel, eff, float("nan"))
    s = b.state(names, pos, vel, np.full(len(names), np.nan), 1.0)  # no effort interfaces at all: None
    assert s.actuators.effort is None


def test_bad_commands_and_imu_are_named(clm):
    b = boundary(clm, "actuator")
    for force, key in (([0.0] * 11, "command.size"), ([0.0] * 11 + [np.nan], "command.nan")):
        with pytest.raises(BoundaryInputError) as err:
            b.commands(force)
        assert err.value.key == key
    q = [0.0, 0.0, 0.0, 1.0]
    sample = b.imu("imu", q, [0.1, 0.0, 0.0], [0.0, 0.0, 9.81], 4.0)
    assert np.array_equal(sample.orientation_xyzw, q) and sample.stamp_s == 4.0
    for args, kwargs, key, match in (
        (("imu_link", q, [0] * 3, [0] * 3, 4.0), {}, "imu.frame", "frame_id 'imu_link' is not the model's IMU frame"),
        (("imu", q, [0] * 3, [0] * 3, 4.0), {"orientation_covariance0": -1.0}, "imu.orientation", "no orientation"),
        (("imu", q, [0, np.nan, 0], [0] * 3, 4.0), {}, "imu.nan", "angular_velocity"),
        (("imu", [0, 0, 0, 2.0], [0] * 3, [0] * 3, 4.0), {}, "imu.quaternion", "norm 2 is not 1"),
    ):
        with pytest.raises(BoundaryInputError, match=match) as err:
            b.imu(*args, **kwargs)
        assert err.value.key == key


def test_interface_renaming_is_read(tmp_path):
    doc = yaml.safe_load(CONTROLLERS["actuator"].read_text())
    jsb = doc["joint_state_broadcaster"]["ros__parameters"]
    jsb["map_interface_to_joint_state"] = {"effort": "motor_torque"}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    cfg = Ros2ControlConfig.from_file(path)
    assert cfg.map_interface_to_joint_state["effort"] == "motor_torque"
    assert cfg.map_interface_to_joint_state["velocity"] == "velocity"
    jsb["map_interface_to_joint_state"] = {"current": "effort"}
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match="map_interface_to_joint_state: expected keys among"):
        Ros2ControlConfig.from_file(path)
