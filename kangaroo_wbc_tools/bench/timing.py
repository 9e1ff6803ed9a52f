"""Wall-clock statistics of repeated calls: median and 99th percentile over changing inputs."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Timing:
    """Statistics of ``n`` timed calls [ms]."""

    median: float
    p99: float
    mean: float
    min: float
    max: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return {"median": _round(self.median), "p99": _round(self.p99), "mean": _round(self.mean),
                "min": _round(self.min), "max": _round(self.max), "n": self.n}


def _round(x: float) -> float:
    """Four significant digits (enough for timings that vary by percents between runs)."""
    if x == 0.0 or not math.isfinite(x):
        return x
    return float(f"{x:.4g}")


def stats_ms(durations_s: Sequence[float] | np.ndarray) -> Timing:
    """:class:`Timing` of durations given in seconds."""
    t = np.asarray(durations_s, dtype=float) * 1e3
    return Timing(float(np.median(t)), float(np.percentile(t, 99)), float(np.mean(t)), float(np.min(t)),
                  float(np.max(t)), int(t.size))


def time_calls(fn: Callable[[Any], Any], inputs: Sequence[Any], warmup: int = 0,
               keep_outputs: bool = True) -> tuple[Timing, list[Any]]:
    """Call ``fn(x)`` for each ``x`` in ``inputs`` and time each call (``time.perf_counter``).

    The first ``warmup`` calls run but are not timed (caches, lazy allocations, the first
    Jacobian of a warm-started solver). Returns the statistics and the outputs of the timed calls
    (an empty list with ``keep_outputs=False``: thousands of retained results make the garbage
    collector's passes, hence the p99, longer than in a control loop that drops them). Objects that
    exist before the timed calls are frozen out of the collector's passes (``gc.freeze``), as a
    real-time node does after start-up.
    """
    clock = time.perf_counter
    for x in inputs[:warmup]:
        fn(x)
    durations = np.empty(max(len(inputs) - warmup, 0))
    outputs = []
    gc.collect()
    gc.freeze()
    try:
        for k, x in enumerate(inputs[warmup:]):
            t0 = clock()
            out = fn(x)
            durations[k] = clock() - t0
            if keep_outputs:
                outputs.append(out)
    finally:
        gc.unfreeze()
    return stats_ms(durations), outputs
