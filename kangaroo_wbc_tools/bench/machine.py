"""Description of the machine a benchmark ran on (printed in the JSON report), and its speed on
fixed workloads, so that figures from different machines can be compared.

:func:`speed_reference` times workloads that never change (their inputs are fixed and their
results checked), each the best of :data:`REPEATS` repeats of a batch of calls [µs per call]:

* ``python_sum_range_1000_us``: ``sum(range(1000))``, the interpreter's speed;
* ``python_loop_us``: a loop of 1000 float multiply-adds over a list, in Python;
* ``numpy_small_ops_us``: four ufunc calls on 12-element arrays with ``out=`` (numpy's per-call
  overhead, what a control tick spends most of its numpy time on);
* ``numpy_matmul_64_us``: a 64×64 float64 matrix product (BLAS; ``blas_threads_env`` says how many
  threads it may use);
* ``numpy_solve_12_us``: ``numpy.linalg.solve`` of a 12×12 system (LAPACK on a small matrix).

The best of the repeats is the least affected by other work on the machine; ``median_us`` is given
beside it, and ``load_average_1_5_15min`` of :func:`machine_info` says how busy the machine was.
"""

from __future__ import annotations

import os
import platform
import sys
import timeit
from importlib import metadata


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info() -> dict:
    """CPU model, core counts, OS, interpreter and the versions of the numerical packages."""
    import numpy as np
    import pinocchio as pin
    import scipy

    usable: int | None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {
        "cpu_model": _cpu_model(),
        "cores_logical": os.cpu_count(),
        "cores_usable": usable,
        "load_average_1_5_15min": load,
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "pinocchio": pin.__version__,
        "osqp": _version("osqp"),
        "mujoco": _version("mujoco"),
        "blas_threads_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                          "MKL_NUM_THREADS") if k in os.environ},
    }


#: Repeats of each timed batch (the best is reported, the median beside it).
REPEATS = 7
#: Target wall time [s] of one batch (the number of calls per batch is sized to it).
BATCH_S = 0.02


def _workloads() -> dict:
    """``{name: (callable, expected result)}``: fixed inputs, a result that can be checked."""
    import numpy as np

    rng = np.random.default_rng(20240613)
    values = [float(v) for v in rng.uniform(-1.0, 1.0, 1000)]
    x, y, z = rng.uniform(-1.0, 1.0, 12), rng.uniform(0.5, 1.0, 12), np.empty(12)
    a, b = rng.uniform(-1.0, 1.0, (64, 64)), rng.uniform(-1.0, 1.0, (64, 64))
    m = rng.uniform(-1.0, 1.0, (12, 12)) + 12.0 * np.eye(12)  # diagonally dominant: well conditioned
    rhs = rng.uniform(-1.0, 1.0, 12)

    def python_loop() -> float:
        acc = 0.0
        for v in values:
            acc = acc * 0.5 + v
        return acc

    def small_ops() -> float:
        np.multiply(x, y, out=z)
        np.add(z, x, out=z)
        np.divide(z, y, out=z)
        np.sqrt(np.abs(z, out=z), out=z)
        return float(z[0])

    return {
        "python_sum_range_1000_us": (lambda: sum(range(1000)), 499500),
        "python_loop_us": (python_loop, python_loop()),
        "numpy_small_ops_us": (small_ops, small_ops()),
        "numpy_matmul_64_us": (lambda: float((a @ b)[0, 0]), float((a @ b)[0, 0])),
        "numpy_solve_12_us": (lambda: float(np.linalg.solve(m, rhs)[0]), float(np.linalg.solve(m, rhs)[0])),
    }


def time_call(fn, repeats: int = REPEATS, batch_s: float = BATCH_S) -> dict:
    """``fn()`` timed: ``{"best_us", "median_us", "calls"}`` [µs per call] over ``repeats`` batches."""
    timer = timeit.Timer(fn)
    calls, elapsed = timer.autorange()  # calls per batch of at least 0.2 s...
    calls = max(1, int(calls * batch_s / max(elapsed, 1e-9)))  # ...scaled to batch_s
    per_call = sorted(t / calls * 1e6 for t in timer.repeat(repeat=repeats, number=calls))
    return {"best_us": float(f"{per_call[0]:.4g}"), "median_us": float(f"{per_call[len(per_call) // 2]:.4g}"),
            "calls": calls * repeats}


def speed_reference() -> dict:
    """This machine's speed on the fixed workloads of the module docstring (about 2 s)."""
    out: dict = {"what": f"fixed workloads, best of {REPEATS} batches [us per call]; "
                         "see kangaroo_wbc_tools/bench/machine.py"}
    for name, (fn, expected) in _workloads().items():
        result = fn()
        if result != expected:  # a workload that changed is no reference
            raise RuntimeError(f"speed reference {name}: result {result!r}, expected {expected!r}")
        out[name] = time_call(fn)
    return out
