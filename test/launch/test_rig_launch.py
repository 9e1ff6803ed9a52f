"""launch_testing: the launched one-leg bench presses its force plate (backend sim, ``rig:=one_leg``).

Launches ``kangaroo_wbc.launch.py backend:=sim rig:=one_leg`` in both deployments: every node builds
the bench from the generated files (one leg, the pelvis clamped, a force plate under the sole;
docs/morphology.md, "One-leg rig"), the controller runs the ``rig`` behaviour (circles in the air,
then a 200 N press closed on the plate's reading). The test listens to the plate
(``rig/plate_wrench``, ``geometry_msgs/WrenchStamped``, world axes: pressing is ``force.z < 0``)
from the controller's first ``actuators/command`` on, for ``OBSERVE_S`` of wall time, and checks:

- the sole first stays off the plate (the circles are in the air): the plate reads less than
  ``AIR_MAX_N`` over the first ``AIR_S``;
- the press holds ``PRESS_N`` ± ``PRESS_TOL_N`` (mean of the last ``HOLD_S``);
- after shutdown every process exited with code 0.

Run it like ``test_kangaroo_wbc_launch.py`` (launch_testing installed, kangaroo_wbc in an ament
prefix); where launch_testing is not installed the module is skipped, with the reason.
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
import numpy as np  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from test.launch.listener import GraphListener, exited, launched_stack  # noqa: E402

STARTUP_TIMEOUT_S = 120.0
#: wall time [s] observed from the first actuators/command: the rig behaviour's three 1.5 s circles,
#: its approach and force ramp take about 8 s of simulated time; the separate processes run slower
#: than real time on a small machine
OBSERVE_S = 24.0
#: the circles: the plate stays unloaded this long [s] after the first command
AIR_S = 3.0
AIR_MAX_N = 5.0
#: the press: its target [N], tolerance [N] and the averaging window at the end [s]
PRESS_N = 200.0
PRESS_TOL_N = 10.0
HOLD_S = 1.0


@pytest.mark.launch_test
@launch_testing.parametrize("deployment", ["separate", "composed"])
def generate_test_description(deployment):
    return launched_stack(deployment=deployment, rig="one_leg"), {}


class Plate(GraphListener):
    """The test's node: records the plate's normal force [N] (positive: pressed) and the first command."""

    def __init__(self) -> None:
        super().__init__("kangaroo_wbc_rig_test")
        self.first_command: float | None = None
        self.force: list[tuple[float, float]] = []  # (wall, normal force)
        sub = self.node.create_subscription
        sub(JointState, "/actuators/command", self._on_command, qos.SENSOR_BEST_EFFORT, raw=True)
        sub(WrenchStamped, "/rig/plate_wrench", self._on_plate, qos.SENSOR_STATE)
        self.start()

    def _on_command(self, raw: bytes) -> None:
        if self.first_command is None:
            self.first_command = time.monotonic()

    def _on_plate(self, msg: WrenchStamped) -> None:
        with self.lock:
            self.force.append((time.monotonic(), -msg.wrench.force.z))


class TestBenchPresses(unittest.TestCase):
    def test_circles_in_the_air_then_presses_200_n(self, proc_info) -> None:
        plate = Plate()
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while plate.first_command is None and time.monotonic() < deadline:
                self.assertEqual(exited(proc_info), [], "a process exited before the first command")
                time.sleep(0.05)
            self.assertIsNotNone(plate.first_command, f"no actuators/command within {STARTUP_TIMEOUT_S} s")
            t0 = plate.first_command
            while time.monotonic() < t0 + OBSERVE_S:
                self.assertEqual(exited(proc_info), [], "a process exited on the bench")
                time.sleep(0.1)
            with plate.lock:
                force = np.array(plate.force)
        finally:
            plate.close()
        self.assertGreater(len(force), 100, "no plate readings received")
        air = force[(force[:, 0] >= t0) & (force[:, 0] <= t0 + AIR_S), 1]
        hold = force[force[:, 0] >= force[-1, 0] - HOLD_S, 1]
        text = (f"plate: max {air.max():.1f} N over the first {AIR_S} s, mean {hold.mean():.1f} N "
                f"(min {hold.min():.1f}, max {hold.max():.1f}) over the last {HOLD_S} s of {OBSERVE_S} s")
        print(text)  # noqa: T201 - the numbers of the run, also on success
        self.assertLess(air.max(), AIR_MAX_N, f"the sole touched the plate during the circles\n{text}")
        self.assertLess(abs(hold.mean() - PRESS_N), PRESS_TOL_N, f"the press missed {PRESS_N} N\n{text}")


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_exit_codes(self, proc_info) -> None:
        launch_testing.asserts.assertExitCodes(proc_info)
