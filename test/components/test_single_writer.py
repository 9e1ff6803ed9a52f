"""Unit tests of :class:`~kangaroo_wbc.components.single_writer.SingleWriterGuard` (no ROS)."""

from __future__ import annotations

from kangaroo_wbc.components.samples import Level
from kangaroo_wbc.components.single_writer import SingleWriterGuard


def test_two_writers_are_both_refused_and_one_is_applied_again():
    g = SingleWriterGuard("actuators/command")
    assert g.status().level == Level.OK and "no writer" in g.status().message
    assert g.admit(1) is None and g.status().level == Level.OK
    why = g.admit(2, ["/intruder"])  # a second writer, whatever its tag: neither is applied
    assert why is not None and "2 writers on actuators/command" in why and "/intruder" in why
    assert "applying neither" in why and g.admit(2, ["/intruder"]) is not None
    status = g.status()
    assert status.level == Level.ERROR and "/intruder" in status.message
    assert status.values["writers"] == 2 and status.values["refused"] == 2
    assert g.admit(1) is None  # the intruder is gone
    status = g.status()
    assert status.level == Level.OK and status.values["writers_max"] == 2 and status.values["refused"] == 2


def test_the_status_is_named_per_topic():
    g = SingleWriterGuard("left_leg_controller/commands", name="command writers left")
    assert g.admit(3, ["/a", "/b"]) is not None and g.status().name == "command writers left"
    assert g.writers_max == 3
