"""Integration test of the ``whole_body_controller`` node's ``payloads`` parameter over DDS (real
executable, no simulator): malformed entries, unknown links, non-finite or absurd masses, a link
given twice and a payload that leaves a body without mass are rejected with the reason (never a
traceback, the old value stays, the node keeps running); a valid one reaches the latched
``model/payloads`` and the model (the robot's mass in the message).
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

#: (value, text the reason must hold)
REJECTED = [
    (["torsoo:6.0"], "unknown link 'torsoo'"),
    (["base_link:nan"], "finite"),
    (["base_link:inf"], "finite"),
    (["base_link:1e6"], "at most 100 kg"),
    (["base_link"], "expected LINK:MASS_KG"),
    (["base_link:six"], "not a number"),
    (["torso:1.0", "base_link:2.0"], "given twice"),
    (["base_link:-50.0"], "without mass"),
]


def _payloads(msg: DiagnosticStatus) -> dict[str, float]:
    return {kv.key: float(kv.value) for kv in msg.values}


def test_bad_payloads_rejected_with_the_reason_and_a_payload_published_latched(ros_harness):
    node = ros_harness.start_node("whole_body_controller")
    first = ros_harness.wait_for_message("/model/payloads", DiagnosticStatus, timeout_s=60.0, qos=qos.LATCHED)
    assert _payloads(first) == {} and first.message.startswith("no payload")
    for value, reason in REJECTED:
        result = set_parameters(ros_harness, "whole_body_controller", payloads=value)
        assert not result.successful, value
        assert result.reason.startswith("payloads: ") and reason in result.reason, (value, result.reason)
        assert "Traceback" not in result.reason
    unknown = set_parameters(ros_harness, "whole_body_controller", payloads=["torsoo:6.0"]).reason
    assert "base_link" in unknown and "left_femur_link" in unknown  # the valid names
    assert get_parameters(ros_harness, "whole_body_controller", "payloads") == [[]]
    assert set_parameters(ros_harness, "whole_body_controller", payloads=["torso:6.0"]).successful
    # no state arrives: the node applies the operator's word from its watchdog and publishes it
    carried = ros_harness.wait_for_message(
        "/model/payloads", DiagnosticStatus, timeout_s=20.0, qos=qos.LATCHED, include_earlier=True,
        predicate=lambda m: _payloads(m) == {"base_link": 6.0})
    assert "base_link +6 kg (operator)" in carried.message and "robot 42.000 kg" in carried.message
    assert set_parameters(ros_harness, "whole_body_controller", payloads=["torso:0.0"]).successful  # removed
    ros_harness.wait_for_message("/model/payloads", DiagnosticStatus, timeout_s=20.0, qos=qos.LATCHED,
                                 include_earlier=True, predicate=lambda m: "robot 36.000 kg" in m.message)
    assert ros_harness.stop(node) == 0
    assert "Traceback" not in node.output()
