"""Order of the stamps of one input stream: out-of-order samples and restarted clocks.

An estimator that keeps state between samples (a filter, the latest joint state) must not let an
older sample overwrite a newer one. :class:`StampOrder` keeps the newest accepted stamp ``t_max``
of one stream and classifies each new stamp ``t``:

* ``t > t_max``: :attr:`StampVerdict.NEW` (accepted, ``t_max = t``);
* ``t == t_max``: :attr:`StampVerdict.REPEATED` (accepted: a republished sample, e.g. the
  simulator waiting in lockstep);
* ``t < t_max``: :attr:`StampVerdict.OUT_OF_ORDER` (rejected), unless it is the
  ``restart_after``-th such sample in a row: then the source's clock went back for good (simulator
  reset, replayed bag) and the sample is accepted as :attr:`StampVerdict.RESTARTED`
  (``t_max = t``); the caller resets what depends on time.

Stamps are float seconds [s].
"""

from __future__ import annotations

import enum

from kangaroo_wbc.errors import InputError


class StampVerdict(enum.Enum):
    """Classification of one stamp by :meth:`StampOrder.update`."""

    NEW = "new"
    REPEATED = "repeated"
    OUT_OF_ORDER = "out-of-order"
    RESTARTED = "restarted"


class StampOrder:
    """Out-of-order detection on one stream (module docstring).

    Args:
        restart_after: out-of-order samples in a row accepted as a restarted clock (>= 2, so that a
            single late sample is always rejected).

    Raises:
        InputError: ``restart_after`` below 2.
    """

    def __init__(self, restart_after: int = 10) -> None:
        if restart_after < 2:
            raise InputError(f"StampOrder.restart_after must be >= 2, got {restart_after}")
        self.restart_after = int(restart_after)
        self.newest_s: float | None = None
        self.out_of_order_in_a_row = 0
        #: by how much [s] the last out-of-order stamp was older than the newest accepted one
        self.last_lag_s = 0.0

    def update(self, stamp_s: float) -> StampVerdict:
        """Classify ``stamp_s`` [s] and update the newest accepted stamp."""
        if self.newest_s is None or stamp_s > self.newest_s:
            self.newest_s, self.out_of_order_in_a_row = stamp_s, 0
            return StampVerdict.NEW
        if stamp_s == self.newest_s:
            self.out_of_order_in_a_row = 0
            return StampVerdict.REPEATED
        self.out_of_order_in_a_row += 1
        self.last_lag_s = self.newest_s - stamp_s
        if self.out_of_order_in_a_row >= self.restart_after:
            self.newest_s, self.out_of_order_in_a_row = stamp_s, 0
            return StampVerdict.RESTARTED
        return StampVerdict.OUT_OF_ORDER


__all__ = ["StampOrder", "StampVerdict"]
