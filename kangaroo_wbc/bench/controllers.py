"""Timing benchmark of the whole-body controllers (full vs reduced, double vs single support).

``python -m kangaroo_wbc.bench.controllers [--ticks N] [--json]`` on the Kangaroo model: a smooth
trajectory of closed states around the standing pose (actuators oscillating, base moving), each
controller stepped once per state, per-phase wall times collected. The last line of ``--json`` is
one JSON object (medians and 99th percentiles in µs, QP iterations, KKT residuals).

Set ``OPENBLAS_NUM_THREADS=1`` (the node does): BLAS threads only add latency to these small
matrices.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence

import numpy as np


def trajectory(clm, n: int, rate_hz: float = 1000.0, amplitude_m: float = 0.003,
               seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n`` closed states ``(q, v)`` along a smooth actuator oscillation around ``clm``'s standing pose."""
    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    rng = np.random.default_rng(seed)
    try:
        q0 = standing_configuration(clm)
    except Exception:  # noqa: BLE001 - not the Kangaroo: use the reference configuration
        q0 = clm.q_ref.copy()
    theta0 = q0[clm.idx_q_a].copy()
    freq = rng.uniform(0.3, 1.0, clm.n_a)
    phase = rng.uniform(0, 2 * np.pi, clm.n_a)
    out, q = [], q0.copy()
    for k in range(n):
        t = k / rate_hz
        theta = theta0 + amplitude_m * np.sin(2 * np.pi * freq * t + phase)
        theta_dot = amplitude_m * 2 * np.pi * freq * np.cos(2 * np.pi * freq * t + phase)
        q, info = clm.closure_fk(theta, q, raise_on_failure=False)
        v_base = np.zeros(clm.n_b)
        if clm.n_b:
            v_base[:3] = 0.02 * np.sin(2 * np.pi * 0.5 * t)
        out.append((q.copy(), clm.complete_velocity(q, theta_dot, v_base if clm.n_b else None)))
    return out


def _stats(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values) * 1e6
    return {"median_us": float(np.median(a)), "p99_us": float(np.percentile(a, 99)), "max_us": float(a.max())}


def run(clm, contacts, states, formulations=("full", "reduced"), supports=None, warmup: int = 20) -> dict:
    """Step each controller over ``states``; per-phase timing statistics per formulation and support."""
    from kangaroo_wbc.control.reduced_wbc import ReducedWholeBodyController
    from kangaroo_wbc.control.wbc import WbcSettings, WholeBodyController

    names = [c.name for c in contacts]
    supports = supports or {"double": tuple(names), "single": (names[0],)}
    result: dict = {}
    for formulation in formulations:
        for support, active in supports.items():
            cls = ReducedWholeBodyController if formulation == "reduced" else WholeBodyController
            wbc = cls(clm, contacts, WbcSettings(base_frame="base_link"))
            phases: dict[str, list[float]] = {}
            iters, primal, dual = [], [], []
            for k, (q, v) in enumerate(states):
                c0 = time.thread_time()
                out = wbc.step(q, v, active_contacts=active)
                cpu = time.thread_time() - c0
                if k < warmup:
                    continue
                phases.setdefault("cpu", []).append(cpu)  # thread CPU time: excludes preemption
                for key, value in out.timing.items():
                    phases.setdefault(key, []).append(value)
                iters.append(out.qp.iterations)
                kkt = out.qp.kkt()
                primal.append(kkt.primal)
                dual.append(kkt.dual)
            result[f"{formulation}_{support}"] = {
                **{key: _stats(vals) for key, vals in phases.items()},
                "iterations_median": float(np.median(iters)), "iterations_max": int(max(iters)),
                "kkt_primal_max": float(max(primal)), "kkt_dual_max": float(max(dual)),
                "decision_variables": int(wbc.layout.n) if hasattr(wbc, "layout") else None,
            }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kangaroo_wbc.bench.controllers", description=__doc__)
    parser.add_argument("--ticks", type=int, default=500, help="states per case (default 500)")
    parser.add_argument("--urdf-dir", default=None, help="folder of kangaroo.urdf (default: the package's)")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)
    from kangaroo_wbc.pipeline.closed_loop import contact_specs
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm = load_kangaroo(floating_base=True, urdf_dir=args.urdf_dir)
    contacts = contact_specs(clm)
    t0 = time.perf_counter()
    states = trajectory(clm, args.ticks)
    res = run(clm, contacts, states)
    res["meta"] = {"ticks": args.ticks, "nv": int(clm.model.nv), "n_actuated": clm.n_a,
                   "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
                   "load_average": os.getloadavg()[0], "wall_s": time.perf_counter() - t0}
    for case, stats in res.items():
        if case == "meta":
            continue
        print(f"{case:16s} total {stats['total']['median_us']:7.0f} µs median, {stats['total']['p99_us']:7.0f} µs p99"
              f" (CPU {stats['cpu']['median_us']:5.0f} / {stats['cpu']['p99_us']:5.0f})"
              f" | model {stats['model']['median_us']:5.0f} solve {stats['solve']['median_us']:5.0f}"
              f" | iterations {stats['iterations_median']:.0f} (max {stats['iterations_max']})"
              f" | KKT primal {stats['kkt_primal_max']:.1e} dual {stats['kkt_dual_max']:.1e}")
    if args.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
