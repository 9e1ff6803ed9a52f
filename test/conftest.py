"""Suite-wide fixtures."""

from __future__ import annotations

import os
import signal

import pytest

_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: Under ``CI=true`` a skip is a failure unless its reason is one of these: tools a pip-only ROS
#: environment cannot have (the launch stack ships with a ROS 2 installation). A missing fixture,
#: generated file or Python dependency is a broken checkout there, not a reason to skip.
CI_ACCEPTED_SKIPS = (
    "launch_ros is not installed",
    "launch_testing is not installed",
    "colcon is not installed",
)


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI, a skip for any reason outside :data:`CI_ACCEPTED_SKIPS` fails the test."""
    outcome = yield
    report = outcome.get_result()
    if not hasattr(report, "wasxfail"):
        _fail_unaccepted_skip(report, "skipped")


def _fail_unaccepted_skip(report, what: str) -> None:
    """Turn a skipped ``report`` into a failure under CI unless its reason is accepted."""
    if not (_in_ci() and report.skipped):
        return
    reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
    if not any(accepted in reason for accepted in CI_ACCEPTED_SKIPS):
        report.outcome = "failed"
        report.longrepr = f"{what} under CI=true, which accepts no skip for this reason: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """The same for a whole module skipped at collection (``pytest.importorskip``, module-level
    ``pytest.skip``)."""
    outcome = yield
    _fail_unaccepted_skip(outcome.get_result(), "module skipped")


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


@pytest.fixture
def isolated_domain(monkeypatch):
    """Integration fixture: an isolated DDS domain for this run (children inherit the environment)."""
    from test.integration.ros_harness import allocate_domain_id

    monkeypatch.setenv("ROS_DOMAIN_ID", str(allocate_domain_id()))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
