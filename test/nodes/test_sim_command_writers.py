"""Integration test (DDS, the real ``sim`` node process): a second ``actuators/command`` writer that
copies the controller's ``frame_id`` is a fault — while it publishes, the simulator applies neither
command (its watchdog takes over), a ``command writers`` ERROR names the topic's writers; once the
extra writer is gone the remaining writer's commands are applied again."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from kangaroo_wbc.model.closures import load_closure_file  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.diagnostics import Level  # noqa: E402
from test.integration.ros_harness import RosEnvironment, RosHarness, ros_environment  # noqa: E402,F401
from test.nodes.test_sim_node import (  # noqa: E402
    CLOSURES,
    ENV,
    STARTUP_TIMEOUT_S,
    DiagnosticsWatch,
    command,
    command_publisher,
)

#: the graph is checked every 0.25 s; discovery on a loaded machine takes longer: a generous bound [s]
WRITERS_SEEN_S = 10.0


@pytest.fixture(scope="module")
def harness(ros_environment: RosEnvironment, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RosHarness]:
    """Module harness (integration infrastructure): the sim node process of this file."""
    if not CLOSURES.is_file():
        pytest.skip("urdf/kangaroo_closures.yaml not generated yet")
    h = RosHarness(ros_environment, tmp_path_factory.mktemp("sim_writers"))
    try:
        yield h
    finally:
        h.close()


def _stream(pub, names, stop: threading.Event) -> None:
    """Zero-force commands tagged as the controller, at 200 Hz (well inside the 50 ms watchdog)."""
    while not stop.is_set():
        pub.publish(command(names, [0.0] * len(names)))
        time.sleep(0.005)


def test_a_second_writer_copying_the_tag_stops_every_command_until_it_goes(harness: RosHarness) -> None:
    harness.probe.recorder("/diagnostics", DiagnosticArray)
    proc = harness.start_node("sim", params={"controller": "pd", "seed": 3}, env=ENV)
    harness.wait_for_message("actuators/state", JointState, timeout_s=STARTUP_TIMEOUT_S)
    harness.wait_for_subscribers("actuators/command")
    names = list(load_closure_file(CLOSURES).actuated_joints)
    diag = DiagnosticsWatch(harness)
    stops = [threading.Event(), threading.Event()]
    first = command_publisher(harness)  # the "controller"
    threads = [threading.Thread(target=_stream, args=(first, names, stops[0]), daemon=True)]
    threads[0].start()
    try:
        diag.mark()
        diag.wait("watchdog", lambda level, msg: level == Level.OK and "fresh" in msg, timeout_s=WRITERS_SEEN_S)
        diag.wait("command writers", lambda level, _: level == Level.OK, timeout_s=WRITERS_SEEN_S)
        # a second writer on the same topic, with the controller's tag
        # its own node, not spun (destroying it cannot race the probe's executor)
        intruder = rclpy.create_node("intruder", context=harness.probe.node.context)
        second = intruder.create_publisher(JointState, "/actuators/command", qos.COMMAND)
        threads.append(threading.Thread(target=_stream, args=(second, names, stops[1]), daemon=True))
        threads[1].start()
        diag.mark()
        text = diag.wait("command writers", lambda level, _: level == Level.ERROR, timeout_s=WRITERS_SEEN_S)
        assert "2 writers on actuators/command" in text and "/intruder" in text and "refused" in text
        assert "applying neither" in diag.wait("command", lambda level, m: level == Level.ERROR and "writers" in m)
        # neither applied: the watchdog's fallback although both stream at 200 Hz
        assert "no fresh command" in diag.wait("watchdog", lambda level, _: level == Level.WARN)
        # the extra writer goes: the remaining one's commands are applied again
        stops[1].set()
        threads[1].join(timeout=2.0)
        intruder.destroy_node()
        diag.mark()
        diag.wait("command writers", lambda level, _: level == Level.OK, timeout_s=WRITERS_SEEN_S)
        diag.wait("watchdog", lambda level, msg: level == Level.OK and "fresh" in msg, timeout_s=WRITERS_SEEN_S)
    finally:
        for s in stops:
            s.set()
        for t in threads:
            t.join(timeout=2.0)
    assert harness.stop(proc) == 0
