"""The machine-speed reference of the bench report (kangaroo_wbc_tools.bench.machine): fixed workloads,
timed. Unit tests: they check the workloads are the fixed ones and the timings behave, never the
timings themselves (they depend on the machine)."""

from __future__ import annotations

import math

import pytest

from kangaroo_wbc_tools.bench import machine


def test_every_workload_is_timed_and_checked():
    ref = machine.speed_reference()
    assert set(ref) == {"what", *machine._workloads()}
    for name, t in ref.items():
        if name == "what":
            continue
        assert math.isfinite(t["best_us"]) and 0 < t["best_us"] <= t["median_us"], name
        assert t["calls"] >= machine.REPEATS, name


def test_workloads_are_fixed():
    """Two builds of the workloads give the same results (fixed seeds and inputs)."""
    first = {k: fn() for k, (fn, _) in machine._workloads().items()}
    again = {k: fn() for k, (fn, _) in machine._workloads().items()}
    assert first == again and first["python_sum_range_1000_us"] == 499500


def test_a_changed_workload_is_refused(monkeypatch):
    workloads = machine._workloads()
    fn, _ = workloads["python_sum_range_1000_us"]
    monkeypatch.setattr(machine, "_workloads", lambda: {"python_sum_range_1000_us": (fn, 0)})
    with pytest.raises(RuntimeError, match="expected 0"):
        machine.speed_reference()


def test_time_call_scales_with_the_work():
    """Ten times the work takes clearly longer per call (best of the repeats)."""
    small = machine.time_call(lambda: sum(range(1000)), repeats=5, batch_s=0.01)
    large = machine.time_call(lambda: sum(range(10000)), repeats=5, batch_s=0.01)
    assert large["best_us"] > 3.0 * small["best_us"], (small, large)
