"""Smoke run of ``kangaroo-wbc soak``: 0.05 simulated minutes (3 s) of the in-process closed loop."""

from __future__ import annotations

import json
import math

import pytest

from kangaroo_wbc.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KEYS = ("rss_growth_mb", "latency_ms_p99_first_minute", "latency_ms_p99_last_minute", "dropped_messages",
        "safe_mode_entries", "fell")


def test_soak_smoke_reports_sane_numbers(capsys):
    code = main(["soak", "--minutes", "0.05", "--json"])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(KEYS) <= set(report)
    assert code == 0
    assert report["fell"] is False
    assert report["safe_mode_entries"] == 0
    assert report["dropped_messages"] == 0
    assert report["latency_window"] == "third"  # < 2 minutes: first / last third
    assert report["sim_time_s"] == pytest.approx(3.0, abs=0.01)
    for key in ("rss_growth_mb", "latency_ms_p99_first_minute", "latency_ms_p99_last_minute"):
        assert math.isfinite(report[key]), key
    assert report["latency_ms_p99_first_minute"] > 0 and report["latency_ms_p99_last_minute"] > 0
    assert abs(report["rss_growth_mb"]) < 200.0  # 3 s cannot grow by hundreds of MB without a leak
