"""Metrics of a closed-loop run (the JSON of ``kangaroo-wbc demo`` / ``evaluate estimation``)."""

from __future__ import annotations

import numpy as np


def _pct(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if x.size else float("nan")


def _rmse(x: np.ndarray) -> float:
    x = x[np.all(np.isfinite(x), axis=-1)] if x.ndim > 1 else x[np.isfinite(x)]
    return float(np.sqrt(np.mean(np.sum(x**2, axis=-1)))) if x.size else float("nan")


def summarize(run) -> dict:
    """Metrics of a :class:`~kangaroo_wbc.pipeline.closed_loop.ClosedLoopRun` after :meth:`run`.

    * ``com_rmse_m``: true CoM vs the controller's CoM reference, after the behaviour starts;
    * ``zmp_inside_support_ratio``: ticks whose *estimated* ZMP lies in the true support polygon
      (convex hull of the sole corners in contact), over ticks in contact with a valid estimate;
    * ``zmp_rmse_m``: estimated vs true ZMP (horizontal), ``fz_sum_over_mg``: estimated vertical
      force over m·g (mean over standing ticks off the crane);
    * estimation errors against the simulator's ground truth; timings from ``time.perf_counter``.
    """
    log, cfg = run.log, run.config
    t = log.array("t")
    crane = log.array("crane") > 0.5
    active = log.array("behaviour") > 0.5
    free = ~crane
    com_err = (log.array("com_true") - log.array("com_ref")).reshape(-1, 3)
    zmp_est, zmp_true = log.array("zmp_est").reshape(-1, 3), log.array("zmp_true").reshape(-1, 3)
    valid = (log.array("zmp_valid") > 0.5) & free & np.all(np.isfinite(zmp_true), axis=1)
    mg = run.clm.mass_kg * 9.81
    fz_est = log.array("fz_est").reshape(-1, len(run.soles)).sum(axis=1)
    released = run.release_time_s if run.release_time_s is not None else np.inf
    settled = free & (t > released + 0.3)
    wbc_ms, est_ms = log.array("wbc_ms"), log.array("est_ms")
    offsets_true = run.sim.sensors.encoder_offset[run.sim_to_model]
    cal = run.calibration
    offset_err = float(np.max(np.abs(cal.offsets - offsets_true))) if cal is not None else None
    base_err = (log.array("base_est") - log.array("base_true")).reshape(-1, 3)
    return {
        "behaviour": cfg.behaviour,
        "duration_s": round(float(t[-1] - t[0]) if t.size else 0.0, 4),
        "fell": bool(run.fell),
        "formulation": getattr(run.wbc, "formulation", "full"),
        "com_rmse_m": _rmse(com_err[active]) if active.any() else _rmse(com_err[settled]),
        "com_max_error_m": float(np.max(np.linalg.norm(com_err[settled], axis=1))) if settled.any() else None,
        "zmp_inside_support_ratio": float(np.mean(log.array("support")[valid])) if valid.any() else 0.0,
        "zmp_rmse_m": _rmse((zmp_est - zmp_true)[valid][:, :2]) if valid.any() else None,
        "fz_sum_over_mg": float(np.mean(fz_est[settled]) / mg) if settled.any() else None,
        "qp_failures": int(run.qp_failures),
        "safe_mode_ticks": int(run.safe_mode_ticks),
        "wbc_ms_p50": round(_pct(wbc_ms, 50), 4),
        "wbc_ms_p99": round(_pct(wbc_ms, 99), 4),
        "estimator_ms_p50": round(_pct(est_ms, 50), 4),
        "estimator_ms_p99": round(_pct(est_ms, 99), 4),
        "calibration_iterations": int(cal.iterations) if cal is not None else None,
        "release_time_s": run.release_time_s,
        "calibration_offset_error_m": offset_err,
        "passive_position_rmse_rad": _rmse(log.array("passive_q_err")),
        "passive_velocity_rmse_rad_s": _rmse(log.array("passive_v_err")),
        "max_closure_error": float(np.max(log.array("closure_error"))) if t.size else None,
        "base_position_drift_m": float(np.linalg.norm(base_err[-1])) if t.size else None,
        "sim_time_s": round(float(run.sim.time), 4),
        "wall_time_s": round(run.wall_time_s, 3),
        "rtf": round(float(run.sim.time) / max(run.wall_time_s, 1e-9), 4),
        "pipelined": bool(run.config.pipelined),
    }
