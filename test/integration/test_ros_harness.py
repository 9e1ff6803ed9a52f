"""Integration tests of the ROS test harness itself, with a throwaway publisher process.

The publisher is a script written by the test into a temporary folder (not a product node): it
publishes ``sensor_msgs/JointState`` at a requested rate with a sequence number in ``position``,
and can ignore SIGINT or exit early with a given code, to exercise every harness path.
"""

from __future__ import annotations

import signal
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from test.integration.ros_harness import (  # noqa: E402,F401 - fixtures
    ProcessDied,
    RosHarness,
    node_command,
    rate_stats,
    ros_arguments,
    ros_environment,
    ros_harness,
)

PUBLISHER = textwrap.dedent(
    '''
    """Throwaway test publisher: JointState at --rate-hz, seq in position[0]."""
    import argparse, signal, sys, time
    import rclpy
    import rclpy.signals
    from rclpy.executors import ExternalShutdownException
    from rclpy.node import Node
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    from kangaroo_wbc.ros.qos import LATCHED

    parser = argparse.ArgumentParser()
    parser.add_argument("--rate-hz", type=float, default=100.0)
    parser.add_argument("--ignore-sigint", action="store_true")
    parser.add_argument("--exit-after-s", type=float, default=None)
    parser.add_argument("--exit-code", type=int, default=0)
    opts, ros_args = parser.parse_known_args()


    class Talker(Node):
        def __init__(self):
            super().__init__("throwaway_talker")
            self.pub = self.create_publisher(JointState, "test/state", 10)
            self.echo = self.create_publisher(String, "test/echo", 10)
            self.create_subscription(String, "test/input", self.echo.publish, 10)
            self.latched = self.create_publisher(String, "test/latched", LATCHED)
            self.latched.publish(String(data="published once at start-up"))
            self.seq = 0
            self.t0 = time.monotonic()
            self.create_timer(1.0 / opts.rate_hz, self.tick)

        def tick(self):
            if opts.exit_after_s is not None and time.monotonic() - self.t0 > opts.exit_after_s:
                print("exiting early", flush=True)
                sys.exit(opts.exit_code)
            msg = JointState(name=["j"], position=[float(self.seq)])
            msg.header.stamp = self.get_clock().now().to_msg()
            self.pub.publish(msg)
            self.seq += 1


    # Python's own SIGINT handler (KeyboardInterrupt in spin): rclpy's would also shut the context
    # down at once, and a timer callback then publishing on it raises (seen on a loaded machine)
    rclpy.init(args=ros_args, signal_handler_options=rclpy.signals.SignalHandlerOptions.NO)
    if opts.ignore_sigint:
        signal.signal(signal.SIGINT, lambda *a: print("ignoring SIGINT", flush=True))
    node = Talker()
    print("talker ready", flush=True)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    print(f"talker published {node.seq}", flush=True)
    rclpy.try_shutdown()
    '''
)


@pytest.fixture
def publisher_script(tmp_path: Path) -> Path:
    """The throwaway publisher script (integration-test helper, written into tmp)."""
    path = tmp_path / "throwaway_talker.py"
    path.write_text(PUBLISHER)
    return path


def start_talker(harness: RosHarness, script: Path, *args: str, name: str = "talker"):
    return harness.start([sys.executable, str(script), *args], name=name)


def test_wait_rate_and_sigint_exit_code(ros_harness: RosHarness, publisher_script: Path) -> None:
    """At 1 kHz: the wall-clock rate measured from reception matches the publisher's own rate
    (from its stamps), no message is lost (reliable QoS), and SIGINT gives exit code 0.

    The publisher is a Python timer: its own rate drops on a loaded machine, so the reference is
    what it actually published, not the nominal 1 kHz. The 20 % tolerance covers a starved
    receiver on an overloaded machine; unloaded, the two agree within 0.1 %.
    """
    talker = start_talker(ros_harness, publisher_script, "--rate-hz", "1000")
    first = ros_harness.wait_for_message("test/state", JointState, timeout_s=20.0)
    assert first.name == ["j"]
    stats = ros_harness.measure_rate("test/state", JointState, duration_s=1.5)
    print(f"measured: {stats}")
    assert stats.stamp_rate_hz is not None and stats.stamp_rate_hz > 200.0, str(stats)
    assert stats.rate_hz == pytest.approx(stats.stamp_rate_hz, rel=0.2), str(stats)
    rec = ros_harness.probe.recorder("/test/state", JointState)
    with rec.lock:
        seqs = [int(m.position[0]) for _, m in rec.items]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "a message was lost or reordered"
    assert ros_harness.stop(talker) == 0
    assert not talker.killed
    assert "talker published" in talker.output()


def test_low_rate_and_predicate(ros_harness: RosHarness, publisher_script: Path) -> None:
    """A 50 Hz rate is measured within 5 % of nominal; predicates select later messages."""
    start_talker(ros_harness, publisher_script, "--rate-hz", "50")
    msg = ros_harness.wait_for_message(
        "test/state", JointState, timeout_s=20.0, predicate=lambda m: m.position[0] >= 5.0
    )
    assert msg.position[0] >= 5.0
    stats = ros_harness.measure_rate("test/state", JointState, duration_s=1.0)
    assert stats.rate_hz == pytest.approx(50.0, rel=0.05), str(stats)
    codes = ros_harness.stop_all()
    ros_harness.assert_exit_codes(codes)


def test_publish_to_process_round_trip(ros_harness: RosHarness, publisher_script: Path) -> None:
    """Messages published by the harness reach the process (after its subscription matched)."""
    start_talker(ros_harness, publisher_script)
    ros_harness.wait_for_subscribers("test/input", timeout_s=20.0)
    ros_harness.probe.recorder("/test/echo", String)  # subscribe before publishing
    ros_harness.wait_for_publishers("test/echo")
    ros_harness.wait_for_subscribers("test/echo")
    for attempt in range(50):  # the echo subscription may still be matching on the talker side
        ros_harness.publish("test/input", String(data=f"ping {attempt}"))
        try:
            echo = ros_harness.wait_for_message("test/echo", String, timeout_s=0.2)
            break
        except TimeoutError:
            continue
    else:
        pytest.fail("no echo from the talker")
    assert echo.data.startswith("ping")


def test_latched_topic_reaches_late_subscriber(ros_harness: RosHarness, publisher_script: Path) -> None:
    """A transient-local sample published before the probe subscribed is still received."""
    start_talker(ros_harness, publisher_script)
    ros_harness.wait_for_message("test/state", JointState, timeout_s=20.0)  # talker is up
    from kangaroo_wbc.ros.qos import LATCHED

    msg = ros_harness.wait_for_message("test/latched", String, qos=LATCHED, include_earlier=True)
    assert msg.data == "published once at start-up"


def test_process_death_is_reported(ros_harness: RosHarness, publisher_script: Path) -> None:
    """A process exiting with an error while the test waits fails fast with its output."""
    talker = start_talker(ros_harness, publisher_script, "--rate-hz", "100", "--exit-after-s", "0.3",
                          "--exit-code", "3")
    with pytest.raises(ProcessDied, match="exiting early"):
        ros_harness.wait_for_message("test/never", JointState, timeout_s=20.0)
    assert talker.returncode == 3
    with pytest.raises(AssertionError, match="unexpected exit codes"):
        ros_harness.assert_exit_codes({talker.name: talker.returncode})


def test_timeout_lists_graph(ros_harness: RosHarness, publisher_script: Path) -> None:
    """Waiting for a silent topic times out with the topics seen and the process outputs."""
    start_talker(ros_harness, publisher_script)
    ros_harness.wait_for_message("test/state", JointState, timeout_s=20.0)
    with pytest.raises(TimeoutError, match="/test/state"):
        ros_harness.wait_for_message("test/silent", JointState, timeout_s=0.5)


def test_sigint_ignored_escalates_to_kill(ros_harness: RosHarness, publisher_script: Path) -> None:
    """A process ignoring SIGINT is killed after the timeout and reported as such."""
    talker = start_talker(ros_harness, publisher_script, "--ignore-sigint")
    ros_harness.wait_for_message("test/state", JointState, timeout_s=20.0)
    code = ros_harness.stop(talker, timeout_s=1.0)
    assert talker.killed
    assert code == -signal.SIGKILL
    assert "ignoring SIGINT" in talker.output()


def test_environment_is_isolated(ros_harness: RosHarness) -> None:
    """Processes get the session's domain id, LOCALHOST discovery and a temporary log dir."""
    env = ros_harness.env
    assert env["ROS_DOMAIN_ID"] == str(ros_harness.environment.domain_id)
    assert 1 <= ros_harness.environment.domain_id <= 100
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert Path(env["ROS_LOG_DIR"]).is_dir()


def test_command_helpers() -> None:
    """Node commands resolve from setup.py; ROS arguments are formatted for rcl."""
    cmd = node_command("sim")
    assert cmd[-1].endswith("sim") or "kangaroo_wbc.nodes.sim_node" in cmd[-1]
    with pytest.raises(KeyError, match="unknown node executable"):
        node_command("no_such_node")
    args = ros_arguments(node_name="n", params={"rate_hz": 1000.0, "on": True, "v": [1.0, 2.0]},
                         remaps={"a": "b"}, namespace="/kangaroo")
    assert args[0] == "--ros-args"
    assert "rate_hz:=1000.0" in args and "on:=true" in args and "v:=[1.0, 2.0]" in args
    assert "a:=b" in args and "__ns:=/kangaroo" in args and "__node:=n" in args
    stats = rate_stats([0.0, 0.01, 0.02, 0.03], [None] * 4)
    assert stats.rate_hz == pytest.approx(100.0) and stats.stamp_rate_hz is None
