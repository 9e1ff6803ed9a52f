"""Smoke run of ``kangaroo-wbc soak``: 0.5 simulated minutes (30 s) of the in-process closed loop."""

from __future__ import annotations

import json
import math

import pytest

from kangaroo_wbc_tools.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KEYS = ("rss_growth_mb", "latency_ms_p99_first_minute", "latency_ms_p99_last_minute", "dropped_messages",
        "safe_mode_entries", "fell")


def test_soak_smoke_reports_sane_numbers(capsys):
    code = main(["soak", "--minutes", "0.5", "--json"])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(KEYS) <= set(report)
    assert code == 0
    assert report["fell"] is False
    assert report["safe_mode_entries"] == 0
    assert report["dropped_messages"] == 0
    assert report["latency_window"] == "third"  # < 2 minutes: first / last third
    assert report["sim_time_s"] == pytest.approx(30.0, abs=0.01)
    for key in ("rss_growth_mb", "latency_ms_p99_first_minute", "latency_ms_p99_last_minute"):
        assert math.isfinite(report[key]), key
    assert report["latency_ms_p99_first_minute"] > 0 and report["latency_ms_p99_last_minute"] > 0
    # no per-tick log is kept: after the warm-up the resident set must stay flat (the soak's target)
    assert report["rss_growth_mb"] < 10.0, report
