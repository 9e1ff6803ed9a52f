"""What the launch_testing tests share: the launched stack, the test's own node, exit codes.

Imported by the test modules after their ``pytest.importorskip`` of launch_testing / launch_ros.
"""

from __future__ import annotations  # noqa: I001 (launch/ of this repository is not the launch package)

import threading
import time

import rclpy
from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.events.process import ProcessExited
from launch.launch_description_sources import PythonLaunchDescriptionSource
from rclpy.experimental import EventsExecutor

import launch_testing.actions

PACKAGE = "kangaroo_wbc"


def launched_stack(**arguments: str) -> LaunchDescription:
    """``kangaroo_wbc.launch.py backend:=sim rviz:=false`` with ``arguments``, ready to test."""
    launch_file = f"{get_package_share_directory(PACKAGE)}/launch/kangaroo_wbc.launch.py"
    stack = IncludeLaunchDescription(PythonLaunchDescriptionSource(launch_file),
                                     launch_arguments={"backend": "sim", "rviz": "false", **arguments}.items())
    return LaunchDescription([stack, launch_testing.actions.ReadyToTest()])


class GraphListener:
    """The test's node (its own rclpy context) spun by the events executor in a thread (the
    listener's subscriptions take little of the 2 cores); subclasses add their subscriptions."""

    def __init__(self, name: str) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.lock = threading.Lock()
        self.executor = EventsExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)

    def start(self) -> None:
        """Spin in the thread (after the subclass made its subscriptions)."""
        self.thread.start()

    def _spin(self) -> None:
        while not self.stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5.0)
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.context.try_shutdown()


def exited(proc_info) -> list[str]:
    """``"<process>: exit code <n>"`` of every launched process that has exited."""
    return [f"{event.process_name}: exit code {event.returncode}" for event in proc_info
            if isinstance(event, ProcessExited)]


def one_process_rate_hz(ticks: int = 1500, warmup: int = 300) -> float:
    """Ticks per wall second [Hz] of the one-process loop (simulator, estimators, controller chained
    in this process, unpaced), after ``warmup`` ticks (boot, calibration): what this machine can do
    now, the reference the launched graph's command rate is compared with."""
    from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=(ticks + warmup) * 1e-3))
    run.log.enabled = False
    run.start()
    try:
        for _ in range(warmup):
            run.tick()
        t0 = time.perf_counter()
        for _ in range(ticks):
            run.tick()
        return ticks / (time.perf_counter() - t0)
    finally:
        run.finish()
