"""launch_testing: the launched node graph walks from cmd_vel (backend sim, composed deployment).

Launches ``kangaroo_wbc.launch.py backend:=sim behaviour:=walk deployment:=composed``, publishes
``cmd_vel`` (``geometry_msgs/Twist``, 0.3 m/s forward, 20 Hz, as a teleop does) from the
controller's first ``actuators/command`` on and checks over ``OBSERVE_S`` of simulated time (the
simulator's ground-truth stamps: a busy machine slows the simulation down, not the walk's
distance per simulated second):

- the robot walks: the simulator's true base (``sim/ground_truth/base_odometry``) moves at least
  ``MIN_DISTANCE_M`` forward and never drops below ``MIN_HEIGHT_M`` (it does not fall);
- the controller publishes its footsteps (``wbc/footsteps``);
- after the teleop stops, the walk stops: the base moves less than ``MAX_DRIFT_AFTER_STOP_M`` in
  the second half of the ``STOPPED_S`` (simulated) that follow;
- after shutdown every process exited with code 0.

The separate deployment is left out: on a 2-core machine its four processes (plus ``link_tf`` and
this test) keep ~400 Hz of commands instead of 1 kHz, and the walk fell there after 8-9 s in two of
two launches (docs/locomotion.md, "Walking in the real-time node graph").

Run it like ``test_kangaroo_wbc_launch.py`` (launch_testing installed, kangaroo_wbc in an ament
prefix); where launch_testing is not installed the module is skipped, with the reason.
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
from geometry_msgs.msg import Twist  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from visualization_msgs.msg import MarkerArray  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from test.launch.listener import GraphListener, exited, launched_stack  # noqa: E402

STARTUP_TIMEOUT_S = 120.0
#: simulated time [s] with cmd_vel published, from the first actuators/command
OBSERVE_S = 12.0
#: then without cmd_vel [s, simulated]: the walk finishes its step and stands
STOPPED_S = 6.0
#: Longest wall time [s] for the whole run after the first command (a simulator slowed to a
#: tenth of real time by a busy machine still finishes)
WALL_TIMEOUT_S = 10 * (OBSERVE_S + STOPPED_S)
#: the walk starts 1 s after ready and runs at 0.3 m/s; separate processes run slower than real time
MIN_DISTANCE_M = 1.0
MIN_HEIGHT_M = 0.8
MAX_DRIFT_AFTER_STOP_M = 0.05


@pytest.mark.launch_test
@launch_testing.parametrize("deployment", ["composed"])
def generate_test_description(deployment):
    return launched_stack(deployment=deployment, behaviour="walk"), {}


class Teleop(GraphListener):
    """The test's node: publishes cmd_vel while ``driving``, records the base and the footsteps."""

    def __init__(self) -> None:
        super().__init__("kangaroo_wbc_walk_test")
        self.first_command: float | None = None
        self.base: list[tuple[float, float, float, float]] = []  # (simulated time, x, y, z)
        self.footsteps = 0
        self.driving = False
        sub = self.node.create_subscription
        sub(JointState, "/actuators/command", self._on_command, qos.SENSOR_BEST_EFFORT, raw=True)
        sub(Odometry, "/sim/ground_truth/base_odometry", self._on_base, qos.SENSOR_BEST_EFFORT)
        sub(MarkerArray, "/wbc/footsteps", self._on_footsteps, qos.VISUALIZATION)
        self.cmd = self.node.create_publisher(Twist, "/cmd_vel", 10)
        self.node.create_timer(0.05, self._publish)
        self.start()

    def _on_command(self, raw: bytes) -> None:
        if self.first_command is None:
            self.first_command = time.monotonic()

    def _on_base(self, msg: Odometry) -> None:
        p, stamp = msg.pose.pose.position, msg.header.stamp
        with self.lock:
            self.base.append((stamp.sec + 1e-9 * stamp.nanosec, p.x, p.y, p.z))

    def sim_time(self) -> float | None:
        """The newest ground-truth stamp [s] (None: none yet)."""
        with self.lock:
            return self.base[-1][0] if self.base else None

    def wait_sim(self, until: float, wall_deadline: float, proc_info, case: unittest.TestCase, what: str) -> None:
        """Until the simulated time reaches ``until`` (a process exit or the wall deadline fails)."""
        while (self.sim_time() or -1.0) < until:
            case.assertEqual(exited(proc_info), [], f"a process exited {what}")
            case.assertLess(time.monotonic(), wall_deadline, f"the simulation did not reach t={until:.1f} s {what}")
            time.sleep(0.05)

    def _on_footsteps(self, msg: MarkerArray) -> None:
        with self.lock:
            self.footsteps += 1

    def _publish(self) -> None:
        if self.driving:
            twist = Twist()
            twist.linear.x = 0.3
            self.cmd.publish(twist)


class TestRobotWalks(unittest.TestCase):
    def test_walks_from_cmd_vel_and_stops_without_it(self, proc_info) -> None:
        teleop = Teleop()
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while teleop.first_command is None and time.monotonic() < deadline:
                self.assertEqual(exited(proc_info), [], "a process exited before the first command")
                time.sleep(0.05)
            self.assertIsNotNone(teleop.first_command, f"no actuators/command within {STARTUP_TIMEOUT_S} s")
            wall_deadline = time.monotonic() + WALL_TIMEOUT_S
            teleop.wait_sim(0.0, wall_deadline, proc_info, self, "before the ground truth")
            t0 = teleop.sim_time()
            teleop.driving = True
            teleop.wait_sim(t0 + OBSERVE_S, wall_deadline, proc_info, self, "while walking")
            teleop.driving = False
            t1 = teleop.sim_time()
            teleop.wait_sim(t1 + STOPPED_S, wall_deadline, proc_info, self, "after cmd_vel stopped")
            with teleop.lock:
                base = list(teleop.base)
                footsteps = teleop.footsteps
        finally:
            teleop.close()
        walked = [b for b in base if t0 <= b[0] <= t1]
        stopped = [b for b in base if b[0] >= t1 + STOPPED_S / 2]
        self.assertTrue(walked and stopped, "no ground truth received")
        distance = walked[-1][1] - walked[0][1]
        drift = math.hypot(stopped[-1][1] - stopped[0][1], stopped[-1][2] - stopped[0][2])
        lowest = min(b[3] for b in base if b[0] >= t0)
        text = (f"walked {distance:.3f} m forward in {t1 - t0:.1f} s (simulated), lowest base {lowest:.3f} m, "
                f"{footsteps} footstep arrays, moved {drift:.4f} m in the last {STOPPED_S / 2} s after cmd_vel stopped")
        print(text)  # noqa: T201 - the numbers of the run, also on success
        self.assertGreater(lowest, MIN_HEIGHT_M, f"the robot fell\n{text}")
        self.assertGreater(distance, MIN_DISTANCE_M, f"the robot did not walk\n{text}")
        self.assertGreater(footsteps, 5, f"no footsteps published\n{text}")
        self.assertLess(drift, MAX_DRIFT_AFTER_STOP_M, f"the walk did not stop without cmd_vel\n{text}")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info) -> None:
        launch_testing.asserts.assertExitCodes(proc_info)
