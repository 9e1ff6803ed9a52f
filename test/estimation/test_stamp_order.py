"""Unit tests of the stamp-order guard (``kangaroo_wbc.estimation.stamp_order``); no ROS."""

from __future__ import annotations

import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.estimation.stamp_order import StampOrder, StampVerdict


def test_increasing_and_repeated_stamps_are_accepted():
    order = StampOrder(restart_after=3)
    assert [order.update(t) for t in (1.0, 1.001, 1.001, 1.002)] == [
        StampVerdict.NEW,
        StampVerdict.NEW,
        StampVerdict.REPEATED,
        StampVerdict.NEW,
    ]
    assert order.newest_s == 1.002


def test_single_late_sample_is_rejected_and_does_not_move_the_newest():
    order = StampOrder(restart_after=3)
    order.update(10.0)
    v = order.update(9.5)
    assert v is StampVerdict.OUT_OF_ORDER
    assert order.last_lag_s == pytest.approx(0.5)
    assert order.newest_s == 10.0
    assert order.update(10.001) is StampVerdict.NEW


def test_clock_restart_is_accepted_after_restart_after_samples_in_a_row():
    order = StampOrder(restart_after=4)
    order.update(50.0)
    verdicts = [order.update(0.001 * k) for k in range(1, 7)]
    assert verdicts[:3] == [StampVerdict.OUT_OF_ORDER] * 3
    assert verdicts[3] is StampVerdict.RESTARTED
    assert verdicts[4:] == [StampVerdict.NEW] * 2


def test_an_accepted_sample_resets_the_count():
    order = StampOrder(restart_after=3)
    order.update(5.0)
    order.update(4.0)
    order.update(4.1)
    order.update(5.001)  # newer: the run of late samples ends
    assert order.update(4.2) is StampVerdict.OUT_OF_ORDER
    assert order.update(4.3) is StampVerdict.OUT_OF_ORDER


def test_bad_argument():
    with pytest.raises(InputError):
        StampOrder(restart_after=1)
