"""Figures of a closed-loop run (the ``kangaroo-wbc demo`` report folder).

:func:`figures` builds the matplotlib figures (no pyplot state, no display), :func:`write_report`
saves them as PNG with ``summary.json`` and ``report.md``. Conventions of every figure:

* each axis is labelled with its unit (``[s]``, ``[m]``, ``[N]``, ``[ms]``; ``[-]`` when
  dimensionless);
* every time plot shades the crane phase — the robot hangs on the simulator's crane until the
  controller is ready and the crane lets go (``release_time_s`` of the run) — labelled once per
  figure: there the crane carries part of the weight, so the sole forces estimated from motor
  torques (which assume the soles carry it all) exceed the truth and the ZMP is undefined;
* one colour per sole (left blue, right red) for the estimates, solid and wide; the simulator's
  truth thin, dashed and black, drawn on top.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from kangaroo_wbc_tools.pipeline.metrics import pitch_momentum, unwrapped_yaw

#: colour of each sole's curves, in ``run.soles`` order (left, right)
SOLE_COLOURS = ("tab:blue", "tab:red")
#: estimates: solid and wide (the sole's colour); the simulator's truth: thin, dashed, black, drawn on top
ESTIMATE_STYLE = {"ls": "-", "lw": 2.2}
TRUTH_STYLE = {"ls": "--", "lw": 0.9, "color": "black"}
CRANE_SHADE: dict[str, Any] = {"color": "0.6", "alpha": 0.25, "lw": 0}
DPI = 110


def write_report(out: Path, run, summary: dict) -> list[str]:
    """PNG plots + ``summary.json`` + ``report.md`` into ``out``; returns the file names written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, fig in figures(run, summary).items():
        fig.savefig(out / name, dpi=DPI)
        files.append(name)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    lines = "\n".join(f"| {k} | {v} |" for k, v in summary.items() if not isinstance(v, dict))
    imgs = "\n\n".join(f"![{f}]({f})" for f in files)
    (out / "report.md").write_text(f"# kangaroo_wbc demo: {summary['behaviour']}\n\n| metric | value |\n|---|---|\n"
                                   f"{lines}\n\n{imgs}\n")
    return files + ["summary.json", "report.md"]


def figures(run, summary: dict) -> dict[str, Figure]:
    """The report's figures by PNG file name (a walk adds ``walk.png``, a jump ``jump.png``)."""
    out = {"com_zmp.png": com_zmp_figure(run, summary), "wrenches.png": wrenches_figure(run),
           "closure_calibration_timing.png": closure_calibration_timing_figure(run)}
    if "distance_m" in summary:
        out["walk.png"] = walk_figure(run, summary)
    if "flight_time_s" in summary:
        out["jump.png"] = jump_figure(run, summary)
    return out


def walk_figure(run, summary: dict) -> Figure:
    """A walk from above (planned footsteps, the true soles at each touchdown, base, CoM, DCM plan and
    the estimated ZMP) and its speed: the true base velocity over a stride vs the command."""
    from matplotlib.patches import Rectangle

    from kangaroo_wbc.control.behaviours import Walk

    log, walk = run.log, run.control.supervisor.behaviour
    t = log.array("t")
    plan = log.array("plan").reshape(t.size, len(Walk.TRACE))
    f = {name: plan[:, i] for i, name in enumerate(Walk.TRACE)}
    moving = np.isfinite(f["phase"]) & (f["phase"] > 0)
    q = log.array("q_true").reshape(t.size, -1)
    fig = Figure(figsize=(12, 6.5), layout="constrained")
    top = fig.subfigures(1, 2, width_ratios=(1.3, 1.0))
    ax = top[0].subplots()  # type: ignore[index]  # matplotlib: subfigures(1, 2) is an array
    size = {c.name: np.ptp(c.corners, axis=0) for c in run.wbc.contacts}
    for k, (_, step, _) in enumerate(walk.touchdowns):
        lx, ly = size[step.side][:2]
        c, s_ = np.cos(step.yaw), np.sin(step.yaw)
        corner = (step.x - c * lx / 2 + s_ * ly / 2, step.y - s_ * lx / 2 - c * ly / 2)
        ax.add_patch(Rectangle(corner, lx, ly, angle=np.degrees(step.yaw), fill=False, lw=1.0,
                               color=SOLE_COLOURS[0 if "left" in step.side else 1],
                               label=f"footstep ({step.side})" if k < 2 else None))
    com = _xyz(log, "com_true")
    zmp = _xyz(log, "zmp_est")
    valid = (log.array("zmp_valid") > 0.5) & moving
    ax.plot(q[moving, 0], q[moving, 1], color="0.3", lw=1.0, label="base (true)")
    ax.plot(com[moving, 0], com[moving, 1], color="tab:green", lw=1.6, label="CoM (true)")
    ax.plot(f["dcm_x"][moving], f["dcm_y"][moving], color="tab:purple", ls=":", lw=1.2, label="DCM plan")
    ax.plot(f["zmp_x"][moving], f["zmp_y"][moving], color="tab:orange", ls="--", lw=0.9, label="ZMP plan")
    ax.scatter(zmp[valid, 0][::20], zmp[valid, 1][::20], s=2, color="tab:orange", alpha=0.4, label="ZMP estimated")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(f"{summary.get('distance_m', 0):.2f} m in {summary.get('steps', 0)} steps, footstep error "
                 f"{1e3 * summary.get('footstep_error_m_mean', float('nan')):.1f} mm (mean)", fontsize=9)
    vx_ax, wz_ax = top[1].subplots(2, 1, sharex=True)  # type: ignore[index]  # matplotlib: an array here
    n = max(int(round(2 * walk.gait.step_s / max(run.dt, 1e-9))), 1)
    if t.size > n:
        yaw = unwrapped_yaw(q[:, 3:7])
        d = (q[n:, :2] - q[:-n, :2]) / (n * run.dt)
        heading = 0.5 * (yaw[n:] + yaw[:-n])
        vx = np.cos(heading) * d[:, 0] + np.sin(heading) * d[:, 1]
        vx_ax.plot(t[n:], vx, color="tab:blue", **ESTIMATE_STYLE, label="base forward speed (true, over a stride)")
        wz_ax.plot(t[n:], (yaw[n:] - yaw[:-n]) / (n * run.dt), color="tab:blue", **ESTIMATE_STYLE,
                   label="base yaw rate (true, over a stride)")
    vx_ax.plot(t, f["request_vx"], color="black", lw=1.0, ls="--", label="cmd_vel x")
    vx_ax.plot(t, f["cmd_vx"], color="0.5", lw=1.0, ls=":", label="command in use (rate-limited)")
    wz_ax.plot(t, f["request_wz"], color="black", lw=1.0, ls="--", label="cmd_vel yaw rate")
    vx_ax.set_ylabel("forward speed [m/s]")
    wz_ax.set_ylabel("yaw rate [rad/s]")
    wz_ax.set_xlabel("time [s]")
    for a in (vx_ax, wz_ax):
        crane_phase(a, t, log.array("crane"), run.release_time_s, labelled=a is vx_ax)
        a.legend(fontsize=7, loc="lower right")
    vx_ax.set_title(f"speed tracking RMSE {summary.get('speed_tracking_rmse_mps', float('nan')):.3f} m/s",
                    fontsize=9)
    fig.suptitle("walk: footsteps, CoM / DCM / ZMP from above, and speed")
    return fig


def jump_figure(run, summary: dict) -> Figure:
    """A jump: base height (true) with the phases, both soles' normal force (true) and the leg-length
    and ankle actuators' strokes."""
    from kangaroo_wbc.control.behaviours import Jump

    log = run.log
    t = log.array("t")
    plan = log.array("plan").reshape(t.size, len(Jump.TRACE))
    phase = plan[:, 0]
    q = log.array("q_true").reshape(t.size, -1)
    fig = Figure(figsize=(10, 9.5), layout="constrained")
    axes = fig.subplots(4, 1, sharex=True)
    axes[0].plot(t, q[:, 2], color="tab:blue", **ESTIMATE_STYLE, label="base height (true)")
    base = log.array("base_est").reshape(-1, 3)
    axes[0].plot(t, base[:, 2], color="tab:orange", lw=1.0, label="base height (estimated)")
    for k, name in enumerate(Jump.PHASES):
        on = phase == k
        if on.any() and name != "done":
            axes[0].axvspan(t[on][0], t[on][-1], alpha=0.08 + 0.04 * (k % 2), color="tab:gray", lw=0)
            axes[0].text(t[on][0], 1.0, name, transform=axes[0].get_xaxis_transform(), fontsize=7, va="top")
    axes[0].set_ylabel("base height [m]")
    axes[0].legend(fontsize=7, loc="lower right")
    fz = _per_sole(log, "fz_true", len(run.soles))
    for i, sole in enumerate(run.soles):
        axes[1].plot(t, fz[:, i], color=SOLE_COLOURS[i % 2], lw=1.2, label=f"{sole} normal force (true)")
    axes[1].axhline(run.clm.mass_kg * 9.81, color="tab:green", lw=0.9, ls="-.", label="m g")
    axes[1].set_ylabel("normal force [N]")
    axes[1].legend(fontsize=7, loc="upper right")
    names = run.clm.actuated_joint_names
    theta = q[:, run.clm.idx_q_a]
    for i, n in enumerate(names):
        if n.startswith("left_") and ("leg_length" in n or "ankle" in n):
            axes[2].plot(t, 1e3 * theta[:, i], lw=1.2, label=n)
    axes[2].set_ylabel("stroke [mm]")
    axes[2].legend(fontsize=7, loc="upper right")
    # what the push leaves in the body: the flight keeps it, the body pitches with it
    v = log.array("v_true").reshape(t.size, -1)
    axes[3].plot(t, pitch_momentum(run.clm.model, q, v), color="tab:red", lw=1.2,
                 label="angular momentum about the CoM, pitch (true)")
    axes[3].set_ylabel("L_y [N·m·s]")
    quat = q[:, 3:7]  # x y z w: the base's pitch from its rotated x axis
    pitch = np.degrees(np.arcsin(np.clip(-2.0 * (quat[:, 0] * quat[:, 2] - quat[:, 3] * quat[:, 1]), -1.0, 1.0)))
    twin = axes[3].twinx()
    twin.plot(t, pitch, color="tab:gray", lw=1.0, ls="--", label="base pitch (true)")
    twin.set_ylabel("base pitch [deg]")
    axes[3].legend(fontsize=7, loc="upper left")
    twin.legend(fontsize=7, loc="upper right")
    axes[3].set_xlabel("time [s]")
    for a in axes:
        crane_phase(a, t, log.array("crane"), run.release_time_s, labelled=a is axes[0])
    fig.suptitle(f"jump: flight {summary.get('flight_time_s', 0):.3f} s, apex +"
                 f"{1e3 * summary.get('apex_height_gain_m', 0):.1f} mm, ankle stroke change at take-off "
                 f"{1e3 * (summary.get('takeoff_ankle_stroke_change_m') or float('nan')):.1f} mm, pitch momentum "
                 f"at lift-off {summary.get('liftoff_pitch_momentum_nms') or float('nan'):.2f} N·m·s")
    return fig


def com_zmp_figure(run, summary: dict) -> Figure:
    """CoM: truth vs the controller's reference; lateral ZMP: estimated vs true, with the CoM."""
    log = run.log
    t, crane = log.array("t"), log.array("crane")
    fig = Figure(figsize=(10.5, 6), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True)
    com_t, com_r = _xyz(log, "com_true"), _xyz(log, "com_ref")
    z0 = com_r[0, 2] if len(com_r) else 0.0
    crane_phase(axes[0], t, crane, run.release_time_s)
    crane_phase(axes[1], t, crane, run.release_time_s, labelled=False)
    for i, (lab, colour) in enumerate(zip("xyz", ("tab:blue", "tab:green", "tab:purple"), strict=True)):
        offset = z0 if lab == "z" else 0.0
        axes[0].plot(t, com_t[:, i] - offset, color=colour, **ESTIMATE_STYLE, label=f"CoM {lab} (true)")
        axes[0].plot(t, com_r[:, i] - offset, color=colour, ls=":", lw=1.2, label=f"CoM {lab} reference")
    axes[0].set_ylabel("CoM position [m]\n(z relative to the first reference)")
    axes[0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    zmp_e, zmp_t = _xyz(log, "zmp_est"), _xyz(log, "zmp_true")
    on_crane = crane > 0.5  # the crane carries part of the weight: no ZMP
    zmp_e[on_crane], zmp_t[on_crane] = np.nan, np.nan
    axes[1].plot(t, zmp_e[:, 1], color="tab:orange", **ESTIMATE_STYLE, label="ZMP y estimated")
    axes[1].plot(t, zmp_t[:, 1], **TRUTH_STYLE, label="ZMP y true")
    axes[1].plot(t, com_t[:, 1], color="tab:green", lw=1.0, label="CoM y (true)")
    axes[1].set_ylabel("lateral position y [m]")
    axes[1].set_xlabel("time [s]")
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle(f"{summary.get('behaviour', run.config.behaviour)}: CoM tracking and ZMP")
    return fig


def wrenches_figure(run) -> Figure:
    """Normal force of each sole (one axis per sole) and their sum, estimated vs true."""
    log = run.log
    t, crane = log.array("t"), log.array("crane")
    fz_e, fz_t = _per_sole(log, "fz_est", len(run.soles)), _per_sole(log, "fz_true", len(run.soles))
    weight_n = run.clm.mass_kg * 9.81
    fig = Figure(figsize=(9, 7), layout="constrained")
    axes = fig.subplots(len(run.soles) + 1, 1, sharex=True)
    for i, (ax, sole) in enumerate(zip(axes, run.soles, strict=False)):
        crane_phase(ax, t, crane, run.release_time_s, labelled=i == 0)
        colour = SOLE_COLOURS[i % len(SOLE_COLOURS)]
        ax.plot(t, fz_e[:, i], color=colour, **ESTIMATE_STYLE, label=f"{sole} estimated (motor torques)")
        ax.plot(t, fz_t[:, i], **TRUTH_STYLE, label=f"{sole} true (simulator)")
        ax.set_ylabel(f"{sole}\nnormal force Fz [N]")
        _force_limits(ax, t, np.c_[fz_e[:, i], fz_t[:, i]], weight_n)
        ax.legend(fontsize=7, loc="upper right", ncol=3)
    total = axes[-1]
    crane_phase(total, t, crane, run.release_time_s, labelled=False)
    total.plot(t, fz_e.sum(axis=1), color="tab:purple", **ESTIMATE_STYLE, label="sum estimated")
    total.plot(t, fz_t.sum(axis=1), **TRUTH_STYLE, label="sum true")
    total.axhline(weight_n, color="tab:green", lw=0.9, ls="-.", label=f"m g = {weight_n:.0f} N")
    total.set_ylabel("both soles\nnormal force Fz [N]")
    _force_limits(total, t, np.c_[fz_e.sum(axis=1), fz_t.sum(axis=1)], weight_n)
    total.set_xlabel("time [s]")
    total.legend(fontsize=7, loc="lower right", ncol=4)
    fig.suptitle("Sole normal forces in the world z axis: estimated from motor torques vs simulator")
    return fig


def closure_calibration_timing_figure(run) -> Figure:
    """Estimator closure error over time, calibration residual per iteration, compute time per tick."""
    log = run.log
    t, crane = log.array("t"), log.array("crane")
    fig = Figure(figsize=(12, 3.6), layout="constrained")
    axes = fig.subplots(1, 3)
    crane_phase(axes[0], t, crane, run.release_time_s)
    axes[0].semilogy(t, np.maximum(log.array("closure_error"), 1e-16), color="tab:blue", label="‖e_l‖∞")
    axes[0].set_title("estimator closure error")
    axes[0].set_xlabel("time [s]")
    axes[0].set_ylabel("‖e_l‖∞ [m or rad]")
    axes[0].legend(fontsize=7)
    hist = run.calibration.residual_history if run.calibration is not None else []
    axes[1].semilogy(np.arange(len(hist)), np.maximum(np.asarray(hist, float), 1e-16), "o-", color="tab:blue")
    axes[1].set_title("encoder calibration")
    axes[1].set_xlabel("Gauss-Newton iteration [-]")
    axes[1].set_ylabel("residual ‖e‖₂ [m, rad]")
    timing_histogram(axes[2], {"WBC": (log.array("wbc_ms"), "tab:red"),
                               "estimators": (log.array("est_ms"), "tab:blue")})
    axes[2].set_xlabel("compute time per tick [ms] (dashed p50, dotted p99)")
    axes[2].set_ylabel("control ticks [count]")
    axes[2].set_title("timing")
    return fig


#: Bins of the timing histogram, spaced evenly on a log scale (a tick's time spans decades: the
#: bulk near the median, a tail of slow ticks).
TIMING_BINS = 60


def timing_histogram(ax: Axes, series: dict[str, tuple[np.ndarray, str]]) -> None:
    """Histogram of compute times per tick [ms] of each ``series`` (name -> (times, colour)) over
    log-spaced bins on a log time axis, each series' median (p50, dashed) and 99th percentile (p99,
    dotted) marked and given in the legend with the slowest tick. Ticks without a time (NaN, 0) are
    left out."""
    finite = {name: (v[np.isfinite(v) & (v > 0.0)], c) for name, (v, c) in series.items()}
    every = np.concatenate([v for v, _ in finite.values()]) if finite else np.empty(0)
    if every.size:
        lo, hi = float(every.min()), float(every.max())
        bins = np.geomspace(lo / 1.05, hi * 1.05 if hi > lo else lo * 1.1, TIMING_BINS + 1)
        for name, (v, colour) in finite.items():
            if not v.size:
                continue
            p50, p99 = np.percentile(v, [50, 99])
            ax.hist(v, bins=bins, alpha=0.6, color=colour,  # type: ignore[arg-type]  # matplotlib takes array bins
                    label=f"{name}: p50 {p50:.3g}, p99 {p99:.3g}, max {v.max():.3g} ms")
            ax.axvline(p50, color=colour, ls="--", lw=1.0)
            ax.axvline(p99, color=colour, ls=":", lw=1.2)
        ax.set_xscale("log")
        ax.legend(fontsize=7, loc="upper right")


def crane_phase(ax: Axes, t: np.ndarray, crane: np.ndarray, release_time_s: float | None,
                labelled: bool = True) -> bool:
    """Shade the spans of ``t`` [s] where the robot hangs on the crane (``crane`` > 0.5), with a
    legend label if ``labelled`` (once per figure); the time axis starts at the boot (0 s).

    The log starts with the estimators' first state, after the encoder calibration; the robot
    boots on the crane, so a log that starts on it has hung there since 0 s: that span is shaded
    from 0. Returns whether anything was shaded.
    """
    if len(t):
        ax.set_xlim(0.0, float(t[-1]))
    on = np.asarray(crane) > 0.5
    if not on.any():
        return False
    edges = np.flatnonzero(np.diff(np.r_[0, on.astype(int), 0]))
    label = "on the crane" + (f" (released at {release_time_s:.2f} s)" if release_time_s is not None else "")
    for start, stop in zip(edges[::2], edges[1::2], strict=True):
        ax.axvspan(0.0 if start == 0 else t[start], t[min(stop, len(t) - 1)], **CRANE_SHADE,
                   label=label if labelled else None)
        labelled = False
    return True


def _force_limits(ax: Axes, t: np.ndarray, values: np.ndarray, weight_n: float) -> None:
    """Zoom on the forces of the run (up to 1.25 m g or the 99th percentile); a short impact peak
    above that (the landing at the release) is named in the axis instead of setting its scale."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return
    top = max(1.25 * weight_n, 1.1 * float(np.percentile(finite, 99)))
    ax.set_ylim(-0.05 * weight_n, top)
    peak = float(finite.max())
    if peak > top:
        k = int(np.nanargmax(np.where(np.isfinite(values), values, -np.inf)) // max(values.shape[1], 1))
        ax.annotate(f"peak {peak:.0f} N at {t[k]:.3f} s (off scale)", xy=(0.01, 0.96), xycoords="axes fraction",
                    va="top", fontsize=7, color="0.3")


def _xyz(log, key: str) -> np.ndarray:
    """A logged 3-vector column as (n, 3) (empty logs too)."""
    return log.array(key).reshape(-1, 3)


def _per_sole(log, key: str, n_soles: int) -> np.ndarray:
    return log.array(key).reshape(-1, n_soles)
