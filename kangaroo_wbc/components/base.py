"""What every node component shares: an event queue the adapter drains and step timing."""

from __future__ import annotations

import time

from kangaroo_wbc.components.samples import Event, Level


class Component:
    """Base of the node components.

    A component never logs: it queues :class:`~kangaroo_wbc.components.samples.Event` objects
    that its adapter drains after each call (:meth:`drain_events`) and logs throttled per
    ``key``; and it keeps step-time statistics for its diagnostics.
    """

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._step_s = [0.0, 0.0, 0]  # sum, max, count since the last statuses() call

    def event(self, level: Level, key: str, message: str) -> None:
        """Queue an event (``key`` names its cause: the adapter throttles per key)."""
        self._events.append(Event(level, key, message))

    def drain_events(self) -> list[Event]:
        """The events queued since the last call (oldest first)."""
        events, self._events = self._events, []
        return events

    def _timed(self, t0: float) -> None:
        dt = time.perf_counter() - t0
        s = self._step_s
        s[0], s[1], s[2] = s[0] + dt, max(s[1], dt), s[2] + 1

    def _step_timing(self) -> dict:
        """Mean and max step time [ms] since the last call, then reset."""
        total, worst, n = self._step_s
        self._step_s = [0.0, 0.0, 0]
        return {"step_mean_ms": 1e3 * total / max(n, 1), "step_max_ms": 1e3 * worst}
