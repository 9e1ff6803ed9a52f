"""Unit test of the core benchmarks on the four-bar test data (a few samples, no ROS).

Checks the per-model keys and the closure invariant of the timed closure FK, never the timings
themselves: they depend on the machine.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc_tools.bench import core
from kangaroo_wbc_tools.bench.workload import reachable_trajectory

DATA = Path(__file__).resolve().parents[1] / "data"
N_SAMPLES = 12
WARMUP = 2
#: The four-bar's loop constrains x and z only: no pinocchio 3D/6D constraint, so no
#: ``pin_constraint_dynamics`` entry.
FOUR_BAR_KEYS = {"closure_fk_ms", "error_and_jacobian_ms", "mapping_jacobian_ms", "rnea_ms", "crba_ms",
                 "inverse_dynamics_ms", "projected_dynamics_ms"}


def test_bench_model_times_each_core_quantity_once():
    """One entry per benchmarked quantity (the model's own closure FK only), each with a positive
    median and p99 >= median, and every timed closure FK output closed to the benchmark tolerance."""
    clm = ClosedLoopModel.from_files(DATA / "four_bar.urdf", DATA / "four_bar_closures.yaml", floating_base=False)
    traj, states = reachable_trajectory(clm, N_SAMPLES)
    res = core.bench_model(clm, traj, states, WARMUP)
    out = res.as_dict()
    assert set(out) == FOUR_BAR_KEYS
    for key, t in out.items():
        assert math.isfinite(t["median"]) and t["median"] > 0, key
        assert t["p99"] >= t["median"], key
        assert t["n"] == N_SAMPLES - WARMUP, key  # the warm-up calls are not timed
    assert out["closure_fk_ms"]["tol"] == core.FK_TOL
    assert len(res.fk_outputs) == N_SAMPLES - WARMUP
    worst = max(float(np.max(np.abs(clm.closure_error(q)))) for q in res.fk_outputs)
    assert worst <= core.FK_TOL
    assert out["closure_fk_ms"]["residual_max_sampled"] <= core.FK_TOL
