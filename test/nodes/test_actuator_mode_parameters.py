"""Integration test of the ``whole_body_controller`` node's actuator-mode parameters over DDS (real
executable, no simulator): an unknown actuator name is rejected with a clear reason (never a
traceback, the node keeps running), a valid one reaches the latched ``actuators/modes``.
"""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402

from kangaroo_wbc.ros import qos  # noqa: E402
from test.control.conftest import KANGAROO_DIR  # noqa: E402
from test.integration.ros_harness import ros_environment, ros_harness  # noqa: E402,F401 - fixtures
from test.safety.dds_faults import get_parameters, set_parameters  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(not (KANGAROO_DIR / "kangaroo.urdf").is_file(), reason="Kangaroo not generated")]


def _modes(msg: DiagnosticStatus) -> dict[str, str]:
    return {kv.key: kv.value for kv in msg.values}


def test_unknown_actuator_rejected_and_a_lock_published_latched(ros_harness):
    node = ros_harness.start_node("whole_body_controller")
    first = ros_harness.wait_for_message("/actuators/modes", DiagnosticStatus, timeout_s=60.0, qos=qos.LATCHED)
    assert set(_modes(first).values()) == {"active"} and len(_modes(first)) == 12
    result = set_parameters(ros_harness, "whole_body_controller", locked_actuators=["left_ankle"])
    assert not result.successful
    assert result.reason.startswith("locked_actuators: unknown actuator 'left_ankle'.")
    assert "left_ankle_inner_actuator" in result.reason and "Traceback" not in result.reason
    assert get_parameters(ros_harness, "whole_body_controller", "locked_actuators") == [[]]
    assert set_parameters(ros_harness, "whole_body_controller",
                          locked_actuators=["left_ankle_inner_actuator"]).successful
    # no state arrives: the node applies the operator's word from its watchdog and publishes it
    locked = ros_harness.wait_for_message(
        "/actuators/modes", DiagnosticStatus, timeout_s=20.0, qos=qos.LATCHED, include_earlier=True,
        predicate=lambda m: _modes(m).get("left_ankle_inner_actuator") == "locked")
    assert "left_ankle_inner_actuator locked (operator)" in locked.message
    assert sum(m != "active" for m in _modes(locked).values()) == 1
    both = set_parameters(ros_harness, "whole_body_controller", limp_actuators=["left_ankle_inner_actuator"])
    assert not both.successful and "both locked and limp: ['left_ankle_inner_actuator']" in both.reason
    assert ros_harness.stop(node) == 0
