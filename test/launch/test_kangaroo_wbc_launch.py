"""launch_testing: the launched node graph stands the robot up (backend sim, both deployments).

Launches ``kangaroo_wbc.launch.py backend:=sim rviz:=false`` with ``deployment`` separate and
composed (``launch_testing.parametrize``) and checks, from the moment the whole-body controller
starts publishing ``actuators/command``:

- the robot stands: for ``OBSERVE_S`` the estimated base height (``estimation/base_odometry``)
  and the simulator's true one (``sim/ground_truth/base_odometry``) stay within
  ``HEIGHT_TOLERANCE_M`` of the model's standing height (soles flat on the ground at the standing
  actuator positions, :func:`~kangaroo_wbc.robots.kangaroo.robot.standing_configuration`);
- ``/diagnostics``: every kangaroo_wbc node of the graph reports all its statuses OK at least once;
- the controller publishes ``actuators/command`` at ``MIN_COMMAND_RATE_HZ`` or more (wall clock,
  over the observation window);
- after shutdown every process exited with code 0.

Run it with launch_testing installed and kangaroo_wbc in an ament prefix (a colcon workspace, or
``scripts/launch_tools.sh`` beside the pip environment; docs/install.md)::

    launch_test test/launch/test_kangaroo_wbc_launch.py      # or: pytest test/launch/

Where launch_testing is not installed the module is skipped, with the reason.
"""

from __future__ import annotations

import time
import unittest

import pytest

pytest.importorskip("launch_testing", reason="launch_testing is not installed (pip ROS wheels); "
                    "use a ROS 2 installation or scripts/launch_tools.sh (docs/install.md)")
pytest.importorskip("launch_ros", reason="launch_ros is not installed")

import launch_testing  # noqa: E402, I001 (launch/ of this repository is not the launch package)
import launch_testing.asserts  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.serialized import stamp_of_serialized  # noqa: E402
from test.launch.listener import GraphListener, exited, launched_stack  # noqa: E402

#: Longest wait [s, wall] from the launch to the first actuators/command (imports, calibration).
STARTUP_TIMEOUT_S = 120.0
#: Observation window [s, wall] from the first actuators/command.
OBSERVE_S = 10.0
#: Largest deviation [m] of the base height from the standing height.
HEIGHT_TOLERANCE_M = 0.02
#: Smallest rate [Hz, wall clock] of actuators/command over the window.
MIN_COMMAND_RATE_HZ = 950.0
#: An odometry sample is deserialised when its stamp is this much [s] after the last one kept (the
#: estimate comes at 1 kHz, the simulator's ground truth at 100 Hz by default).
ODOMETRY_PERIOD_S = 0.01
#: Every N-th command's stamp is read (for the report: simulated time against wall time).
COMMAND_STAMP_DECIMATION = 100


def standing_height_m() -> float:
    """Base height [m] of the model standing with flat soles on z = 0."""
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

    return float(standing_configuration(load_kangaroo(floating_base=True))[2])


@pytest.mark.launch_test
@launch_testing.parametrize("deployment", ["separate", "composed"])
def generate_test_description(deployment):
    return launched_stack(deployment=deployment), {}


def _level(level: bytes | int) -> int:
    """A DiagnosticStatus level (``byte``: bytes in rclpy) as an int."""
    return int.from_bytes(level, "little") if isinstance(level, bytes) else int(level)


class Observer(GraphListener):
    """Subscriptions of the test and what they received."""

    def __init__(self) -> None:
        super().__init__("kangaroo_wbc_launch_test")
        self.commands: list[float] = []  # wall receive times [s]
        self.command_stamps: list[tuple[float, float]] = []  # (wall, header stamp) [s], decimated
        self.heights: dict[str, list[tuple[float, float]]] = {"estimated": [], "true": []}
        self.ok_nodes: set[str] = set()
        self.last_levels: dict[str, dict[str, int]] = {}
        self._counts = {"estimated": -1.0, "true": -1.0}  # stamp [s] of the last sample kept
        sub = self.node.create_subscription
        sub(JointState, "/actuators/command", self._on_command, qos.SENSOR_BEST_EFFORT, raw=True)
        sub(Odometry, "/estimation/base_odometry", lambda m: self._on_odometry("estimated", m),
            qos.SENSOR_BEST_EFFORT, raw=True)
        sub(Odometry, "/sim/ground_truth/base_odometry", lambda m: self._on_odometry("true", m),
            qos.SENSOR_BEST_EFFORT, raw=True)
        sub(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)
        self.start()

    def _on_command(self, raw: bytes) -> None:
        now = time.monotonic()
        with self.lock:
            self.commands.append(now)
            if len(self.commands) % COMMAND_STAMP_DECIMATION:
                return
        stamp = deserialize_message(raw, JointState).header.stamp
        with self.lock:
            self.command_stamps.append((now, stamp.sec + 1e-9 * stamp.nanosec))

    def _on_odometry(self, which: str, raw: bytes) -> None:
        stamp = stamp_of_serialized(raw)
        if stamp < self._counts[which] + ODOMETRY_PERIOD_S - 1e-6:
            return
        self._counts[which] = stamp
        z = deserialize_message(raw, Odometry).pose.pose.position.z
        with self.lock:
            self.heights[which].append((time.monotonic(), z))

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        by_node: dict[str, list[int]] = {}
        for status in msg.status:
            node, _, check = status.name.partition(": ")
            by_node.setdefault(node, []).append(_level(status.level))
            self.last_levels.setdefault(node, {})[check] = by_node[node][-1]
        with self.lock:
            self.ok_nodes |= {n for n, levels in by_node.items()
                              if all(level == _level(DiagnosticStatus.OK) for level in levels)}


def _graph_nodes() -> set[str]:
    """kangaroo_wbc node names the graph must contain (backend sim)."""
    nodes = {"sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller"}
    from ament_index_python.packages import PackageNotFoundError

    try:
        get_package_share_directory("robot_state_publisher")
    except PackageNotFoundError:
        nodes |= {"link_tf", "ground_truth_link_tf"}
    return nodes


class TestRobotStands(unittest.TestCase):
    """Active test: watch the launched graph for OBSERVE_S from the controller's first command."""

    def test_stands_reports_ok_and_commands_at_rate(self, proc_info) -> None:
        nominal = standing_height_m()
        observer = Observer()
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while not observer.commands and time.monotonic() < deadline:
                self.assertEqual(exited(proc_info), [], "a process exited before the first command")
                time.sleep(0.05)
            self.assertTrue(observer.commands,
                            f"no actuators/command within {STARTUP_TIMEOUT_S} s of the launch")
            t0 = observer.commands[0]
            while time.monotonic() < t0 + OBSERVE_S + 0.5:
                self.assertEqual(exited(proc_info), [], "a process exited while observed")
                time.sleep(0.1)
            with observer.lock:
                commands = [t for t in observer.commands if t0 <= t <= t0 + OBSERVE_S]
                stamps = [(t, s) for t, s in observer.command_stamps if t0 <= t <= t0 + OBSERVE_S]
                heights = {k: [z for t, z in v if t0 <= t <= t0 + OBSERVE_S]
                           for k, v in observer.heights.items()}
                ok_nodes = set(observer.ok_nodes)
                last_levels = dict(observer.last_levels)
        finally:
            observer.close()

        rate = (len(commands) - 1) / (commands[-1] - commands[0]) if len(commands) > 1 else 0.0
        report = [f"nominal standing height {nominal:.4f} m; actuators/command {rate:.1f} Hz "
                  f"({len(commands)} messages in {OBSERVE_S} s)"]
        if len(stamps) > 1:
            factor = (stamps[-1][1] - stamps[0][1]) / (stamps[-1][0] - stamps[0][0])
            report.append(f"command stamps advance {factor:.2f} s of simulated time per wall second")
        for which, zs in heights.items():
            if zs:
                report.append(f"{which} base height: {len(zs)} samples, min {min(zs):.4f} m, "
                              f"max {max(zs):.4f} m, last {zs[-1]:.4f} m, largest deviation "
                              f"{max(abs(z - nominal) for z in zs):.4f} m")
            else:
                report.append(f"{which} base height: no samples")
        missing = _graph_nodes() - ok_nodes
        report.append(f"nodes never all OK on /diagnostics: {sorted(missing)}; last levels "
                      f"{ {n: last_levels.get(n) for n in sorted(missing)} }")
        text = "\n".join(report)
        print(text)  # noqa: T201 - the numbers of the run, also on success

        for which, zs in heights.items():
            self.assertGreater(len(zs), OBSERVE_S * 10, f"too few {which} samples\n{text}")
            self.assertLessEqual(max(abs(z - nominal) for z in zs), HEIGHT_TOLERANCE_M,
                                 f"{which} base height left the band: the robot does not stand\n{text}")
        self.assertEqual(missing, set(), f"diagnostics never OK\n{text}")
        self.assertGreaterEqual(rate, MIN_COMMAND_RATE_HZ, f"controller too slow\n{text}")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info) -> None:
        launch_testing.asserts.assertExitCodes(proc_info)
