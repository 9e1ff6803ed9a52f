"""Soak run of the in-process closed loop: memory growth, latency drift and safe-mode entries.

Runs :class:`~kangaroo_wbc.pipeline.closed_loop.ClosedLoopRun` (``stand``) for ``minutes`` of
simulated time, one :meth:`~ClosedLoopRun.tick` per control period, and reports:

* ``rss_growth_mb``: resident set size at the end minus after boot (psutil if installed, else
  ``/proc/self/status`` VmRSS, else ``resource.getrusage`` peak RSS);
* ``latency_ms_p99_first_minute`` / ``latency_ms_p99_last_minute``: 99th percentile of the per-tick
  wall time of estimator + controller, over the first and the last simulated minute (runs shorter
  than 2 minutes use the first and the last third instead; ``window`` says which);
* ``dropped_messages``: always 0 — the loop is in-process and lockstep, no message can be lost
  (DDS drops are measured by the integration tests, not here);
* ``safe_mode_entries``: transitions from control into the damping fallback (a controller error);
* ``fell``: the base dropped below the fall height.
"""

from __future__ import annotations

import math
import os
import resource
import time

import numpy as np


def rss_mb() -> float:
    """Current resident set size [MB]."""
    try:
        import psutil  # type: ignore[import-not-found]

        return psutil.Process(os.getpid()).memory_info().rss / 2**20
    except ImportError:
        pass
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # peak, kB on Linux


def _p99(values: list[float]) -> float:
    return float(np.percentile(values, 99)) if values else math.nan


def run_soak(minutes: float, *, behaviour: str = "stand", seed: int = 0) -> dict:
    """Run the closed loop for ``minutes`` of simulated time after boot; returns the report."""
    from kangaroo_wbc.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    if not minutes > 0.0:
        raise ValueError(f"minutes must be > 0, got {minutes}")
    duration_s = 60.0 * minutes
    run = ClosedLoopRun(LoopConfig(behaviour=behaviour, duration_s=duration_s, seed=seed))
    run._data_true = run.clm.model.createData()  # what ClosedLoopRun.run() prepares
    run._behaviour_started = False
    w0 = time.perf_counter()
    run.boot()
    rss0 = rss_mb()
    n = int(round(duration_s / run.dt))
    safe_entries, was_safe, ticks = 0, False, 0
    for _ in range(n):
        status = run.tick()["status"]
        ticks += 1
        safe = status != "ok"
        safe_entries += int(safe and not was_safe)
        was_safe = safe
        if run.fell:
            break
    rss1 = rss_mb()
    est_ms, wbc_ms, t = run.log.array("est_ms"), run.log.array("wbc_ms"), run.log.array("t")
    latency = (est_ms + wbc_ms).tolist()
    if duration_s >= 120.0:
        window = "minute"
        first = [x for x, ti in zip(latency, t) if ti - t[0] < 60.0]
        last = [x for x, ti in zip(latency, t) if t[-1] - ti < 60.0]
    else:
        window = "third"
        k = max(1, len(latency) // 3)
        first, last = latency[:k], latency[-k:]
    return {
        "minutes": minutes,
        "behaviour": behaviour,
        "ticks": ticks,
        "sim_time_s": float(ticks * run.dt),
        "wall_time_s": time.perf_counter() - w0,
        "rss_mb_start": rss0,
        "rss_mb_end": rss1,
        "rss_growth_mb": rss1 - rss0,
        "latency_window": window,
        "latency_ms_p99_first_minute": _p99(first),
        "latency_ms_p99_last_minute": _p99(last),
        "latency_ms_max": float(max(latency)) if latency else math.nan,
        "dropped_messages": 0,
        "safe_mode_entries": safe_entries,
        "safe_mode_ticks": int(run.safe_mode_ticks),
        "fell": bool(run.fell),
    }
