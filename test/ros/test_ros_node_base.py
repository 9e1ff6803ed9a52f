"""Tests of kangaroo_wbc.ros.node_base.

Unit part: a KangarooNode in-process (parameters, diagnostics timer, change hook).
Integration part: ``run_nodes`` in a real process (script written into tmp) stopped by SIGINT and
SIGTERM, checking the shutdown hook still publishes and the exit codes.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
import textwrap
import time

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from kangaroo_wbc.ros.diagnostics import Level  # noqa: E402
from kangaroo_wbc.ros.node_base import EXIT_CONFIG_ERROR, KangarooNode  # noqa: E402
from kangaroo_wbc.ros.params import parameter  # noqa: E402
from test.integration.ros_harness import RosHarness, ros_harness  # noqa: E402,F401


@dataclasses.dataclass
class LoopParams:
    rate_hz: float = parameter(1000.0, "Loop rate [Hz]", bounds=(1.0, 2000.0))


class LoopNode(KangarooNode):
    def __init__(self, **kwargs) -> None:
        super().__init__("loop_node", LoopParams, diagnostics_period_s=0.05, **kwargs)
        self.changes: list[set[str]] = []
        self.fail_diagnostics = False

    def on_parameters_changed(self, params, changed) -> None:
        self.changes.append(changed)

    def diagnostic_statuses(self):
        if self.fail_diagnostics:
            raise RuntimeError("boom")
        return [self.diagnostics.status("loop", Level.OK, "ok", {"rate_hz": self.params.rate_hz})]


def spin_until(executor, condition, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
    return condition()


def test_kangaroo_node_in_process(make_node, rclpy_context) -> None:
    node = LoopNode(context=rclpy_context)
    listener = make_node("base_listener")
    received: list[DiagnosticArray] = []
    listener.create_subscription(DiagnosticArray, "/diagnostics", received.append, 10)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    executor.add_node(listener)
    try:
        assert spin_until(executor, lambda: received)
        assert received[0].status[0].name == "loop_node: loop"
        assert node.set_parameters([Parameter("rate_hz", value=500.0)])[0].successful
        assert node.params.rate_hz == 500.0 and node.changes == [{"rate_hz"}]
        assert not node.set_parameters([Parameter("rate_hz", value=0.5)])[0].successful
        node.fail_diagnostics = True
        received.clear()
        assert spin_until(executor, lambda: any(s.level == b"\x02" for a in received for s in a.status))
    finally:
        executor.shutdown()
        node.destroy_node()


class PickyNode(KangarooNode):
    """Subscribes ``picky/in``: a text ``"bad"`` is an InputError, ``"bug"`` a ZeroDivisionError,
    anything else is kept as the node's input; ``picky/info`` takes the message info too."""

    def __init__(self, **kwargs) -> None:
        super().__init__("picky_node", diagnostics_period_s=0.0, **kwargs)
        self.kept: list[str] = []
        self.infos = 0
        self.create_subscription(String, "picky/in", self._on_text, 10)
        self.create_subscription(String, "picky/info", self._on_info, 10)

    def _on_text(self, msg: String) -> None:
        from kangaroo_wbc.errors import InputError

        if msg.data == "bad":
            raise InputError("text: not acceptable")
        if msg.data == "bug":
            _ = 1 / 0
        self.kept.append(msg.data)

    def _on_info(self, msg: String, info) -> None:
        self.infos += info is not None


def test_a_callback_exception_is_a_diagnostic_not_an_exit(make_node, rclpy_context) -> None:
    """Unit: the subscription guard turns a rejected message into a WARN ``inputs`` status naming
    the topic, a failing callback into an ERROR, keeps the previous input and keeps spinning."""
    node = PickyNode(context=rclpy_context)
    talker = make_node("picky_talker")
    pub = talker.create_publisher(String, "picky/in", 10)
    pub_info = talker.create_publisher(String, "picky/info", 10)
    received: list[DiagnosticArray] = []
    talker.create_subscription(DiagnosticArray, "/diagnostics", received.append, 10)
    executor = SingleThreadedExecutor(context=rclpy_context)
    executor.add_node(node)
    executor.add_node(talker)

    def inputs_status(level: Level):
        return [s for a in received for s in a.status
                if s.name == "picky_node: inputs" and s.level == bytes([int(level)])]

    try:
        assert spin_until(executor, lambda: node.count_subscribers("/diagnostics") > 0
                          and pub.get_subscription_count() > 0)
        pub.publish(String(data="good"))
        assert spin_until(executor, lambda: node.kept == ["good"])
        for _ in range(3):
            pub.publish(String(data="bad"))
        assert spin_until(executor, lambda: inputs_status(Level.WARN))
        assert "/picky/in: message rejected: text: not acceptable" in inputs_status(Level.WARN)[0].message
        pub.publish(String(data="bug"))
        assert spin_until(executor, lambda: inputs_status(Level.ERROR))
        error = inputs_status(Level.ERROR)[0].message
        assert "/picky/in: callback failed: ZeroDivisionError" in error and "_on_text" in error
        assert node.kept == ["good"]  # the rejected messages changed nothing
        pub.publish(String(data="later"))
        assert spin_until(executor, lambda: node.kept == ["good", "later"])  # still taking input
        assert spin_until(executor, lambda: node.input_faults.topics["/picky/in"][1] == 4)
        pub_info.publish(String(data="x"))
        assert spin_until(executor, lambda: node.infos == 1)  # (msg, info) callbacks get the info
    finally:
        executor.shutdown()
        node.destroy_node()


def test_node_without_parameters(rclpy_context) -> None:
    node = KangarooNode("bare_node", diagnostics_period_s=0.0, context=rclpy_context)
    assert node.params is None
    assert node.diagnostic_statuses()[0].message == "running"
    node.destroy_node()


@pytest.mark.parametrize("sim_time", [True, False])
def test_clock_taken_from_stamps(rclpy_context, sim_time: bool) -> None:
    """With use_sim_time, the clock follows the stamps given to stamp_clock and the node does not
    subscribe to /clock; stamps that are no time leave it where it is. Without, nothing changes."""
    node = KangarooNode("stamped_node", diagnostics_period_s=0.0, context=rclpy_context,
                        parameter_overrides=[Parameter("use_sim_time", Parameter.Type.BOOL, sim_time)])
    try:
        assert sim_time == bool(node.get_subscriptions_info_by_topic("/clock"))  # rclpy's TimeSource
        assert node.take_clock_from_stamps("actuators/state") is sim_time
        node.stamp_clock(12.5)
        if not sim_time:
            assert node.get_clock().now().nanoseconds * 1e-9 > 1e9  # the system clock
            return
        assert not node.get_subscriptions_info_by_topic("/clock")
        assert node.get_clock().now().nanoseconds == 12_500_000_000
        for bad in (float("nan"), float("inf"), -1.0, 0.0, 1e300):
            node.stamp_clock(bad)
            assert node.get_clock().now().nanoseconds == 12_500_000_000, bad
        node.stamp_clock(3.0)  # a simulator that restarted: its clock goes back, so does the node's
        assert node.get_clock().now().nanoseconds == 3_000_000_000
    finally:
        node.destroy_node()


SCRIPT = textwrap.dedent(
    '''
    import dataclasses, sys
    from std_msgs.msg import String
    from kangaroo_wbc.ros.node_base import KangarooNode, run_nodes
    from kangaroo_wbc.ros.params import parameter


    @dataclasses.dataclass
    class P:
        rate_hz: float = parameter(100.0, "rate [Hz]", bounds=(1.0, 2000.0))


    class Talker(KangarooNode):
        def __init__(self):
            super().__init__("base_talker", P)
            self.pub = self.create_publisher(String, "base/out", 10)
            self.create_timer(1.0 / self.params.rate_hz, lambda: self.pub.publish(String(data="tick")))

        def on_shutdown(self):
            self.pub.publish(String(data="last words"))
            print("on_shutdown ran", flush=True)


    sys.exit(run_nodes([Talker]))
    '''
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_run_nodes_clean_shutdown(ros_harness: RosHarness, tmp_path, sig) -> None:
    """SIGINT/SIGTERM: the shutdown hook still publishes, then exit code 0."""
    script = tmp_path / "base_talker.py"
    script.write_text(SCRIPT)
    proc = ros_harness.start([sys.executable, str(script)], name="base_talker")
    ros_harness.wait_for_message("base/out", String, timeout_s=20.0)
    assert ros_harness.stop(proc, sig) == 0, proc.describe()
    assert not proc.killed
    assert "on_shutdown ran" in proc.output()
    ros_harness.wait_for_message("base/out", String, timeout_s=30.0, include_earlier=True,
                                 predicate=lambda m: m.data == "last words", check_processes=False)


def test_run_nodes_config_error_exit_code(ros_harness: RosHarness, tmp_path) -> None:
    """An out-of-range parameter at start-up: one fatal line naming it and exit code 2."""
    script = tmp_path / "base_talker.py"
    script.write_text(SCRIPT)
    proc = ros_harness.start([sys.executable, str(script), "--ros-args", "-p", "rate_hz:=5000.0"],
                             name="base_talker_bad")
    code = proc.wait_exit(timeout_s=20.0)
    assert code == EXIT_CONFIG_ERROR, proc.describe()
    assert "configuration error" in proc.output() and "rate_hz" in proc.output()


@pytest.mark.parametrize(("publishers", "expected"), [
    ([("/", "whole_body_controller")], []),
    ([("/", "whole_body_controller"), ("/", "intruder")], ["/intruder"]),
    # discovery has not named the writer yet: its one unnamed publisher is not another writer
    ([("_NODE_NAMESPACE_UNKNOWN_", "_NODE_NAME_UNKNOWN_")], []),
    # ... but with the writer named, an unnamed publisher is another one, and so is a second unnamed
    ([("/", "whole_body_controller"), ("_NODE_NAMESPACE_UNKNOWN_", "_NODE_NAME_UNKNOWN_")],
     ["_NODE_NAMESPACE_UNKNOWN_/_NODE_NAME_UNKNOWN_"]),
    ([("/", "intruder"), ("_NODE_NAMESPACE_UNKNOWN_", "_NODE_NAME_UNKNOWN_")], ["/intruder"]),
    ([("/", "a"), ("/k/", "b")], ["/a", "/k/b"]),
])
def test_unexpected_writers(publishers, expected) -> None:
    from kangaroo_wbc.ros.node_base import unexpected_writers

    assert unexpected_writers(publishers, "whole_body_controller") == expected


@pytest.mark.parametrize(("now", "last", "expected"), [
    ((10.0, None), (9.0, None), 1.0),  # steady clock only
    ((10.0, 5.1), (9.0, 5.0), 0.1),  # simulated: a stalled simulation is not a silent state
    ((10.0, 5.9), (9.9, 5.0), 0.9),  # simulated time ran on without a state: silent
    ((12.5, 5.0), (10.0, 5.0), 2.5),  # the simulation stopped for longer than STALLED_CLOCK_S
    ((10.0, 5.1), (9.0, None), 1.0),  # the clocks changed: the steady one
])
def test_state_silence(now, last, expected) -> None:
    from kangaroo_wbc.ros.node_support import state_silence_s

    assert state_silence_s(now, last, 0.5) == pytest.approx(expected)
