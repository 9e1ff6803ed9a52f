"""Description of the machine a benchmark ran on (printed in the JSON report)."""

from __future__ import annotations

import os
import platform
import sys
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
