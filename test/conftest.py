"""Suite-wide fixtures."""

from __future__ import annotations

import signal

import pytest

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@pytest.fixture(autouse=True)
def _signal_handlers_kept():
    """A test that changes this process' SIGINT/SIGTERM handlers (rclpy, a node's entry point, a
    CLI run in-process) fails, and the handlers are put back: a handler left behind would decide
    what a later test's signal does, up to ending the whole run."""
    before = {s: signal.getsignal(s) for s in _SIGNALS}
    yield
    after = {s: signal.getsignal(s) for s in _SIGNALS}
    for sig, handler in before.items():
        if after[sig] is not handler:
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
    changed = [signal.Signals(s).name for s in _SIGNALS if after[s] is not before[s]]
    assert not changed, f"the test left other handlers for {changed} in the test process"
