"""launch_testing: the robot stands with ``backend:=ros2_control`` (the simulator as a ros2_control
system), composed deployment, both joint spaces.

Launches ``kangaroo_wbc.launch.py backend:=ros2_control joint_space:=<space>``: the simulator
publishes what ``joint_state_broadcaster`` and ``imu_sensor_broadcaster`` publish and takes the
legs' ``JointGroupEffortController`` commands (``std_msgs/Float64MultiArray``); the state estimator
reads the broadcasters, the controller writes the effort controllers' topics (docs/ros2_control.md).
From the first effort command it checks, for ``OBSERVE_S``:

- the hand-over: the controller says ``wbc/ready`` True, and no effort command came before the
  broadcasters' first joint states (nothing reaches an uncalibrated robot: the gate opens on ready);
- both legs' effort controllers receive commands of their joints' size, all finite, at a rate;
- the robot stands: the simulator's true base height (``sim/ground_truth/base_odometry``) and the
  estimate (``estimation/base_odometry``) stay within ``HEIGHT_TOLERANCE_M`` of the model's standing
  height;
- after shutdown every process exited with code 0.

The separate deployment is left out for the reason ``test_walk_launch.py`` gives (four processes on
2 cores keep a fraction of 1 kHz); the one-process demo covers both deployments in
``kangaroo-wbc demo --backend ros2_control --processes separate`` (docs/ros2_control.md).

Run it like ``test_kangaroo_wbc_launch.py``; where launch_testing is not installed the module is
skipped, with the reason.
"""

from __future__ import annotations

import math
import time
import unittest

import pytest

pytest.importorskip("launch_testing", reason="launch_testing is not installed (pip ROS wheels); "
                    "use a ROS 2 installation or scripts/launch_tools.sh (docs/install.md)")
pytest.importorskip("launch_ros", reason="launch_ros is not installed")

import launch_testing  # noqa: E402, I001 (launch/ of this repository is not the launch package)
import launch_testing.asserts  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Bool, Float64MultiArray  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.serialized import stamp_of_serialized  # noqa: E402
from test.launch.listener import GraphListener, exited, launched_stack  # noqa: E402

STARTUP_TIMEOUT_S = 300.0
#: Observation window [s, wall] from the first effort command.
OBSERVE_S = 10.0
HEIGHT_TOLERANCE_M = 0.02
#: An odometry sample is kept when its stamp is this much [s] after the last one kept.
ODOMETRY_PERIOD_S = 0.01
#: The legs' effort controllers and their joints per joint space (config/ros2_controllers*.yaml).
LEGS = ("left", "right")


def standing_height_m() -> float:
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    return float(standing_configuration(load_kangaroo(floating_base=True))[2])


def controller_joints(joint_space: str) -> dict[str, int]:
    """``{effort controller: number of joints}`` from the package's controllers file."""
    from kangaroo_wbc.components.assembly import package_config_dir
    from kangaroo_wbc.model.hardware_map import load_hardware_map

    hw = load_hardware_map(package_config_dir() / "hardware_map.yaml", joint_space=joint_space)
    return {name: len(joints) for name, joints in hw.controllers.items()}


@pytest.mark.launch_test
@launch_testing.parametrize("joint_space", ["actuator", "serial"])
def generate_test_description(joint_space):
    return launched_stack(backend="ros2_control", joint_space=joint_space, deployment="composed"), {}


class Observer(GraphListener):
    """The effort commands, the broadcasters' first joint states, wbc/ready and the base heights."""

    def __init__(self, controllers: dict[str, int]) -> None:
        super().__init__("kangaroo_wbc_ros2_control_launch_test")
        self.first_joint_states: float | None = None
        self.ready_at: float | None = None
        self.commands: dict[str, list[float]] = {c: [] for c in controllers}  # wall receive times
        self.bad_commands: list[str] = []
        self.heights: dict[str, list[tuple[float, float]]] = {"estimated": [], "true": []}
        self._kept = {"estimated": -1.0, "true": -1.0}
        sub = self.node.create_subscription
        for name, size in controllers.items():
            sub(Float64MultiArray, f"/{name}/commands", lambda m, n=name, k=size: self._on_command(n, k, m), 10)
        sub(JointState, "/joint_state_broadcaster/joint_states", self._on_joint_states, qos.SENSOR_BEST_EFFORT,
            raw=True)
        sub(Odometry, "/estimation/base_odometry", lambda m: self._on_odometry("estimated", m),
            qos.SENSOR_BEST_EFFORT, raw=True)
        sub(Odometry, "/sim/ground_truth/base_odometry", lambda m: self._on_odometry("true", m),
            qos.SENSOR_BEST_EFFORT, raw=True)
        sub(Bool, "/wbc/ready", self._on_ready, qos.LATCHED)
        self.start()

    def _on_joint_states(self, raw: bytes) -> None:
        if self.first_joint_states is None:
            self.first_joint_states = time.monotonic()

    def _on_ready(self, msg: Bool) -> None:
        with self.lock:
            if msg.data and self.ready_at is None:
                self.ready_at = time.monotonic()

    def _on_command(self, name: str, size: int, msg: Float64MultiArray) -> None:
        now = time.monotonic()
        with self.lock:
            self.commands[name].append(now)
            if len(msg.data) != size or not all(math.isfinite(x) for x in msg.data):
                self.bad_commands.append(f"{name}: {len(msg.data)} values (expected {size}): {list(msg.data)[:4]}")

    def _on_odometry(self, which: str, raw: bytes) -> None:
        stamp = stamp_of_serialized(raw)
        if stamp < self._kept[which] + ODOMETRY_PERIOD_S - 1e-6:
            return
        self._kept[which] = stamp
        z = deserialize_message(raw, Odometry).pose.pose.position.z
        with self.lock:
            self.heights[which].append((time.monotonic(), z))


class TestRobotStands(unittest.TestCase):
    def test_hands_over_to_the_effort_controllers_and_stands(self, proc_info, joint_space) -> None:
        nominal = standing_height_m()
        controllers = controller_joints(joint_space)
        self.assertEqual(len(controllers), len(LEGS), controllers)
        observer = Observer(controllers)
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while not any(observer.commands.values()) and time.monotonic() < deadline:
                self.assertEqual(exited(proc_info), [], "a process exited before the first effort command")
                time.sleep(0.05)
            firsts = [ts[0] for ts in observer.commands.values() if ts]
            self.assertTrue(firsts, f"no effort command within {STARTUP_TIMEOUT_S} s of the launch")
            t0 = min(firsts)
            while time.monotonic() < t0 + OBSERVE_S + 0.5:
                self.assertEqual(exited(proc_info), [], "a process exited while observed")
                time.sleep(0.1)
            with observer.lock:
                rates = {c: len([t for t in ts if t0 <= t <= t0 + OBSERVE_S]) / OBSERVE_S
                         for c, ts in observer.commands.items()}
                heights = {k: [z for t, z in v if t0 <= t <= t0 + OBSERVE_S] for k, v in observer.heights.items()}
                bad = list(observer.bad_commands)
                ready_at, first_state = observer.ready_at, observer.first_joint_states
        finally:
            observer.close()
        report = [f"{joint_space}: standing height {nominal:.4f} m; effort commands per wall second "
                  + ", ".join(f"{c} {r:.0f} Hz" for c, r in rates.items())]
        for which, zs in heights.items():
            if zs:
                report.append(f"{which} base height: {len(zs)} samples, min {min(zs):.4f} m, max {max(zs):.4f} m, "
                              f"largest deviation {max(abs(z - nominal) for z in zs):.4f} m")
        text = "\n".join(report)
        print(text)  # noqa: T201 - the numbers of the run, also on success
        self.assertIsNotNone(first_state, f"joint_state_broadcaster/joint_states never seen\n{text}")
        self.assertIsNotNone(ready_at, f"the controller never said wbc/ready True\n{text}")
        self.assertLessEqual(first_state, t0, f"an effort command before the first joint states\n{text}")
        self.assertEqual(bad, [], f"malformed effort commands\n{text}")
        for c, r in rates.items():
            self.assertGreater(r, 50.0, f"{c}: too few commands\n{text}")
        for which, zs in heights.items():
            self.assertGreater(len(zs), OBSERVE_S * 10, f"too few {which} samples\n{text}")
            self.assertLessEqual(max(abs(z - nominal) for z in zs), HEIGHT_TOLERANCE_M,
                                 f"{which} base height left the band: the robot does not stand\n{text}")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info) -> None:
        launch_testing.asserts.assertExitCodes(proc_info)
