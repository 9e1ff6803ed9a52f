"""Soak run of the in-process closed loop: memory growth, latency drift and safe-mode entries.

Runs :class:`~kangaroo_wbc_tools.pipeline.closed_loop.ClosedLoopRun` (``stand``) for ``minutes`` of
simulated time, one :meth:`~ClosedLoopRun.tick` per control period, and reports:

* ``rss_growth_mb``: resident set size at the end minus after a warm-up (the first
  ``WARMUP_FRACTION`` of the run, at most ``WARMUP_MAX_S`` simulated seconds: lazily built caches
  and the allocator's pools settle there); ``rss_mb_after_boot`` and ``rss_mb_after_warmup`` are
  reported too (``/proc/self/status`` VmRSS, else ``resource.getrusage`` peak RSS). The run keeps
  no per-tick log (the demo's report log is disabled): only the per-tick latencies in one
  preallocated array, so that growth means a leak;
* ``latency_ms_p99_first_minute`` / ``latency_ms_p99_last_minute``: 99th percentile of the per-tick
  wall time of estimator + controller, over the first and the last simulated minute (runs shorter
  than 2 minutes use the first and the last third instead; ``window`` says which);
* ``dropped_messages``: always 0 — the loop is in-process and lockstep, no message can be lost
  (DDS drops are measured by the integration tests, not here);
* ``safe_mode_entries``: transitions from control into the damping fallback (a controller error);
* ``fell``: the base dropped below the fall height;
* ``interrupted``: ``stop()`` ended the run early (the CLI's SIGINT / SIGTERM); the figures
  cover the ticks run (``ticks``, ``sim_time_s``).
"""

from __future__ import annotations

import math
import os
import resource
import time
from pathlib import Path

import numpy as np


def process_rss_mb(pid: int) -> float | None:
    """Resident memory [MB] of process ``pid`` (Linux ``/proc``), None if unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        pass
    return None


def rss_mb() -> float:
    """Current resident set size [MB] (without ``/proc``: the peak one of ``getrusage``)."""
    rss = process_rss_mb(os.getpid())
    return rss if rss is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


#: Share of the run (and cap [s] of simulated time) before the memory baseline is taken.
WARMUP_FRACTION = 0.1
WARMUP_MAX_S = 60.0


def _p99(values: np.ndarray) -> float:
    return float(np.percentile(values, 99)) if len(values) else math.nan


def run_soak(minutes: float, *, behaviour: str = "stand", seed: int = 0, progress=None, stop=None) -> dict:
    """Run the closed loop for ``minutes`` of simulated time after boot; returns the report.

    ``progress(iterable, total=, desc=)`` wraps the loop over simulated seconds (a progress bar);
    ``stop()`` is polled at every tick boundary and ends the run once it returns True.
    """
    from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    if not (math.isfinite(minutes) and minutes > 0.0):
        raise ValueError(f"minutes must be > 0, got {minutes}")
    duration_s = 60.0 * minutes
    run = ClosedLoopRun(LoopConfig(behaviour=behaviour, duration_s=duration_s, seed=seed))
    run.log.enabled = False  # bounded memory: the soak keeps its own statistics
    w0 = time.perf_counter()
    run.start()
    rss_boot = rss_mb()
    n = int(round(duration_s / run.dt))
    n_warm = max(1, min(int(WARMUP_FRACTION * n), int(WARMUP_MAX_S / run.dt)))
    rss_warm = rss_boot
    latency = np.full(n, np.nan)  # estimator + controller wall time per tick [ms]
    t_tick = np.full(n, np.nan)
    safe_entries, was_safe, ticks = 0, False, 0
    rss_per_minute: list[float] = []
    per_minute = max(1, int(round(60.0 / run.dt)))
    per_second = max(1, int(round(1.0 / run.dt)))
    seconds = range((n + per_second - 1) // per_second)
    interrupted = False
    it = progress(seconds, total=len(seconds), desc="soak [s]") if progress else seconds
    for sec in it:
        for i in range(sec * per_second, min(n, (sec + 1) * per_second)):
            if stop is not None and stop():
                interrupted = True
                break
            out = run.tick()
            st = out["stages_ms"]
            if out["status"] != "idle":  # calibrating on the crane: nothing to time yet
                latency[i] = st["state_estimation"] + st["model_update"] + st["contact_wrench"] + st["controller"]
            t_tick[i] = out["t"]
            ticks += 1
            safe = out["status"] == "safe"
            safe_entries += int(safe and not was_safe)
            was_safe = safe
            if i + 1 == n_warm:
                rss_warm = rss_mb()
            if (i + 1) % per_minute == 0:
                rss_per_minute.append(round(rss_mb(), 2))
            if run.fell:
                break
        if run.fell or interrupted:
            break
    getattr(it, "close", lambda: None)()  # a progress bar left early
    run.finish()
    rss1 = rss_mb()
    latency, t = latency[:ticks], t_tick[:ticks]
    timed = np.isfinite(latency)
    latency, t = latency[timed], t[timed]
    if duration_s >= 120.0 and latency.size:
        window = "minute"
        first = latency[t - t[0] < 60.0]
        last = latency[t[-1] - t < 60.0]
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
        "rss_mb_after_boot": rss_boot,
        "rss_mb_after_warmup": rss_warm,
        "rss_mb_end": rss1,
        "rss_growth_mb": rss1 - rss_warm,
        "warmup_s": float(n_warm * run.dt),
        "latency_window": window,
        "latency_ms_p99_first_minute": _p99(first),
        "latency_ms_p99_last_minute": _p99(last),
        "latency_ms_median": float(np.median(latency)) if latency.size else math.nan,
        "latency_ms_max": float(np.max(latency)) if latency.size else math.nan,
        "latency_ms_max_at_s": float(t[int(np.argmax(latency))]) if latency.size else math.nan,
        "rss_mb_per_minute": rss_per_minute,
        "dropped_messages": 0,
        "safe_mode_entries": safe_entries,
        "safe_mode_ticks": int(run.safe_mode_ticks),
        "fell": bool(run.fell),
        "interrupted": interrupted,
    }
