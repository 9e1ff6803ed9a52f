"""The shipped node graph (separate processes, real DDS) against bad inputs from other programs.

While ``run_graph`` runs the four node processes in real time, this test plays two mistakes a
user can make on a real robot:

1. a CoM reference 0.3 m ahead of the feet, published on ``wbc/com_reference`` at 50 Hz for 4 s:
   the reference governor bounds it to the support polygon; the robot stays up and the controller's
   ``references`` status is a WARN naming the reference;
2. a second program publishing ``actuators/command`` with the controller's ``frame_id`` (0 N at
   200 Hz for ``ROGUE_S``): within 1 s an ERROR ``writers`` status names it; while both write the
   simulator applies neither (``command writers`` ERROR naming it; its watchdog damps), no actuator
   is declared faulty, the robot does not fall, and the controller's commands are applied again
   once the intruder is gone; the run's summary records two writers.
"""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("rclpy")

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

#: Wall time [s] from the controller's ready to the first fault (the behaviour starts 1 s after ready).
SETTLE_S = 2.0
COM_REFERENCE_S = 4.0
ROGUE_S = 0.5  # the robot damps meanwhile (plus the graph's 0.25 s checks on either side)
AHEAD_M = 0.3


class Intruder:
    """The test's own node: watches ``wbc/ready``, ``wbc/com_target`` and ``/diagnostics``, and
    publishes the bad inputs."""

    def __init__(self) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PointStamped
        from rclpy.executors import SingleThreadedExecutor
        from std_msgs.msg import Bool

        from kangaroo_wbc.ros import qos

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("intruder", context=self.context)
        self.lock = threading.Lock()
        self.ready = False
        self.com_target = None
        self.statuses: list[tuple[float, str, int, str]] = []  # (wall, name, level, message)
        self.node.create_subscription(Bool, "/wbc/ready", self._on_ready, qos.LATCHED)
        self.node.create_subscription(PointStamped, "/wbc/com_target", self._on_com, qos.VISUALIZATION)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, qos.DIAGNOSTICS)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while not self.stop.is_set():
            self.executor.spin_once(timeout_sec=0.05)

    def _on_ready(self, msg) -> None:
        with self.lock:
            self.ready = self.ready or msg.data

    def _on_com(self, msg) -> None:
        with self.lock:
            self.com_target = (msg.point.x, msg.point.y, msg.point.z)

    def _on_diagnostics(self, msg) -> None:
        now = time.monotonic()
        with self.lock:
            self.statuses += [(now, s.name, int.from_bytes(s.level, "little") if isinstance(s.level, bytes)
                               else int(s.level), s.message) for s in msg.status]

    def since(self, t0: float, name: str, level: int) -> list[tuple[float, str]]:
        with self.lock:
            return [(t, m) for t, n, lv, m in self.statuses if t >= t0 and n == name and lv == level]

    def publish_for(self, msg_type, topic: str, qos_profile, make, rate_hz: float, duration_s: float) -> None:
        pub = self.node.create_publisher(msg_type, topic, qos_profile)
        end = time.monotonic() + duration_s
        while time.monotonic() < end:
            pub.publish(make())
            time.sleep(1.0 / rate_hz)
        self.node.destroy_publisher(pub)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5.0)
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.context.try_shutdown()


def test_a_far_com_reference_and_a_second_command_source_do_not_drop_the_robot(isolated_domain):
    from geometry_msgs.msg import PointStamped
    from sensor_msgs.msg import JointState

    from kangaroo_wbc.robots.kangaroo.files import kangaroo_files
    from kangaroo_wbc.ros import qos
    from kangaroo_wbc_tools.graph.processes import run_graph

    result: dict = {}
    duration = SETTLE_S + COM_REFERENCE_S + ROGUE_S + 4.0
    graph = threading.Thread(target=lambda: result.update(run_graph(
        processes="separate", duration_s=duration, sim_mode="realtime",
        startup_timeout_s=240.0, wall_timeout_s=duration + 300.0)), daemon=True)
    intruder = Intruder()
    graph.start()
    try:
        deadline = time.monotonic() + 300.0
        while not (intruder.ready and intruder.com_target) and graph.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert intruder.ready and intruder.com_target, f"the graph never became ready: {result}"
        time.sleep(SETTLE_S)
        x, y, z = intruder.com_target

        def far() -> PointStamped:
            msg = PointStamped()
            msg.header.frame_id = "odom"
            msg.point.x, msg.point.y, msg.point.z = x + AHEAD_M, y, z
            return msg

        t_ref = time.monotonic()
        intruder.publish_for(PointStamped, "/wbc/com_reference", qos.SENSOR_STATE, far, 50.0, COM_REFERENCE_S)
        time.sleep(1.5)  # the last diagnostics of the period
        bounded = intruder.since(t_ref, "whole_body_controller: references", 1)
        assert bounded and "wbc/com_reference bounded: support polygon" in bounded[0][1], intruder.statuses[-20:]

        names = [n for n in _actuators(kangaroo_files()[1])]
        zero = JointState(name=names, effort=[0.0] * len(names))
        zero.header.frame_id = "whole_body_controller"  # the controller's tag, copied
        t_rogue = time.monotonic()
        intruder.publish_for(JointState, "/actuators/command", qos.COMMAND, lambda: zero, 200.0, ROGUE_S)
        errors = [(t, m) for name in ("sim: writers", "whole_body_controller: writers")
                  for t, m in intruder.since(t_rogue, name, 2)]
        assert errors, "no ERROR for the second actuators/command publisher"
        assert min(t for t, _ in errors) - t_rogue < 1.0, errors
        # named once discovery completes (a loaded machine first shows "_NODE_NAME_UNKNOWN_")
        assert any("/intruder" in m for _, m in errors), errors
        refused = intruder.since(t_rogue, "sim: command writers", 2)
        assert refused and all("refused" in m for _, m in refused), refused
        assert any("/intruder" in m for _, m in refused), refused
        time.sleep(2.0)  # the intruder gone: the controller's commands applied again
        t_back = max(t for t, _ in refused)
        assert intruder.since(t_back, "sim: command writers", 0), "commands never applied again"
        # from the far reference on (the controller loaded, then the robot damped): no actuator declared
        assert not intruder.since(t_ref, "whole_body_controller: actuators", 2), "an actuator declared faulty"
        graph.join(timeout=duration + 120.0)
    finally:
        intruder.close()
    assert result, "run_graph did not return"
    assert result["fell"] is False, result
    assert result["safe_mode_entries"] == 0, result
    assert result["min_base_height_m"] > 0.85, result
    assert result["command_writers_max"] == 2 and "/intruder" in result["command_writers_other"], result
    assert result["command_writers_refused"] > 0, result
    assert all(code == 0 for code in result["exit_codes"].values()), result


def _actuators(closures_path) -> list[str]:
    from kangaroo_wbc.model.closures import load_closure_file

    return list(load_closure_file(closures_path).actuated_joints)
