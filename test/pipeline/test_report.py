"""Integration tests of the demo report's figures (:mod:`kangaroo_wbc_tools.pipeline.report`): units on
every axis, the crane phase on every time plot, the soles and estimate/truth told apart.
"""

from __future__ import annotations

import re

import pytest
from matplotlib.colors import to_rgba

from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig
from kangaroo_wbc_tools.pipeline.report import CRANE_SHADE, figures, write_report

UNIT = re.compile(r"\[[^\]]+\]")
CRANE_LABEL = "on the crane"


@pytest.fixture(scope="module")
def stand_run():
    """Integration fixture: 1.0 s of standing after boot (seeded) and its summary."""
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=1.0, seed=1))
    return run, run.run()


@pytest.fixture(scope="module")
def stand_figures(stand_run):
    """The report's figures of the standing run, by file name."""
    return figures(*stand_run)


def _labelled_x(ax) -> bool:
    """The x axis has a label with a unit, or shares its x axis with an axis that has one."""
    def has_unit(a):
        return bool(UNIT.search(a.get_xlabel()))

    return has_unit(ax) or any(has_unit(o) for o in ax.figure.axes
                               if o is not ax and ax.get_shared_x_axes().joined(ax, o))


def _time_axes(fig):
    return [ax for ax in fig.axes if "time [s]" in ax.get_xlabel() or
            any("time [s]" in o.get_xlabel() for o in fig.axes if ax.get_shared_x_axes().joined(ax, o))]


def test_every_axis_of_every_figure_has_a_unit(stand_figures):
    assert set(stand_figures) == {"com_zmp.png", "wrenches.png", "closure_calibration_timing.png"}
    for name, fig in stand_figures.items():
        for ax in fig.axes:
            assert UNIT.search(ax.get_ylabel()), f"{name}: y axis {ax.get_ylabel()!r} without a unit"
            assert _labelled_x(ax), f"{name}: x axis {ax.get_xlabel()!r} without a unit"


def test_every_time_plot_shades_the_crane_phase_labelled_once(stand_run, stand_figures):
    run, _ = stand_run
    assert run.release_time_s is not None
    for name, fig in stand_figures.items():
        axes = _time_axes(fig)
        assert axes, name
        for ax in axes:
            spans = [(p.get_x(), p.get_x() + p.get_width()) for p in ax.patches
                     if p.get_facecolor()[:3] == to_rgba(CRANE_SHADE["color"])[:3]]
            assert len(spans) == 1, name
            start, stop = spans[0]
            assert start == 0.0  # the robot boots on the crane
            assert abs(stop - run.release_time_s) <= 2 * run.dt
        legend_texts = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
        assert sum(CRANE_LABEL in t for t in legend_texts) == 1, name


def test_soles_and_estimate_vs_truth_are_told_apart(stand_run, stand_figures):
    run, _ = stand_run
    fig = stand_figures["wrenches.png"]
    lines = {line.get_label(): line for ax in fig.axes for line in ax.get_lines()}
    colours = {}
    for sole in run.soles:
        estimate = next(v for k, v in lines.items() if k.startswith(sole) and "estimated" in k)
        truth = next(v for k, v in lines.items() if k.startswith(sole) and "true" in k)
        assert estimate.axes is truth.axes  # each sole on an axis of its own: neither hides the other
        colours[sole] = to_rgba(estimate.get_color())[:3]
        assert estimate.get_linestyle() != truth.get_linestyle()
    left, right = run.soles
    assert colours[left] != colours[right]
    assert lines[next(k for k in lines if k.startswith(left))].axes is not \
        lines[next(k for k in lines if k.startswith(right))].axes


def test_the_timing_histogram_shows_the_distribution_with_p50_and_p99(stand_run, stand_figures):
    """The timing panel: a log time axis whose bins are log-spaced, so the bulk of the ticks spreads
    over many bins (it once sat in the first of 50 linear bins); each series' p50 and p99 are
    vertical lines at the log's percentiles."""
    import numpy as np

    run, _ = stand_run
    ax = next(a for a in stand_figures["closure_calibration_timing.png"].axes if a.get_title() == "timing")
    assert ax.get_xscale() == "log"
    for name in ("wbc_ms", "est_ms"):
        v = run.log.array(name)
        v = v[np.isfinite(v) & (v > 0)]
        p50, p99 = np.percentile(v, [50, 99])
        xs = [line.get_xdata()[0] for line in ax.get_lines()]
        assert any(np.isclose(x, p50) for x in xs) and any(np.isclose(x, p99) for x in xs), (name, xs)
    heights = [patch.get_height() for patch in ax.patches]
    widths = sorted({round(np.log(p.get_x() + p.get_width()) - np.log(p.get_x()), 9) for p in ax.patches})
    assert np.ptp(widths) < 1e-6  # equal widths on the log axis
    n_series = 2
    filled = sum(h > 0 for h in heights) / n_series
    assert filled >= 5, f"the ticks fill {filled} bins per series"
    assert max(heights) < 0.9 * len(run.log.array("wbc_ms"))  # no single bin holds nearly every tick


def test_write_report_writes_every_file(stand_run, tmp_path):
    run, summary = stand_run
    files = write_report(tmp_path / "report", run, summary)
    assert set(files) == {"com_zmp.png", "wrenches.png", "closure_calibration_timing.png", "summary.json",
                          "report.md"}
    for f in files:
        assert (tmp_path / "report" / f).stat().st_size > (10_000 if f.endswith(".png") else 10)


def test_a_run_interrupted_before_its_first_estimate_still_gives_figures(tmp_path):
    """The log is empty (interrupted on the crane, calibrating): the figures are drawn, empty."""
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=1.0, seed=2))
    run.start()
    for _ in range(20):
        run.tick()
    run.finish()
    assert len(run.log.array("t")) == 0
    files = write_report(tmp_path / "report", run, {"behaviour": "stand"})
    assert "wrenches.png" in files
