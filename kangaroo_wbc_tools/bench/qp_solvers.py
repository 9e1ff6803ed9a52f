"""The QP solvers of :mod:`kangaroo_wbc.control.qp_solvers` on the QPs the controller solves in the
closed loop.

``kangaroo-wbc bench qp-solvers [--duration S] [--behaviour NAME] [--json]``: runs the
in-process closed loop (:class:`~kangaroo_wbc_tools.pipeline.closed_loop.ClosedLoopRun`, simulated
Kangaroo) for ``S`` seconds with a recorder in place of the controller's solver, then solves the
recorded sequence with every solver (each warm-started along the sequence, as in the loop) and
reports per solver the median / 99th percentile / maximum wall time of a solve (the first, which
sets up, apart), the largest constraint violation and KKT residual (:meth:`QpSolution.kkt`, from
the problem data), the failures, and whether it stays within :data:`KKT_TOLERANCE`. The last line
of ``--json`` is one JSON object.

Set ``OPENBLAS_NUM_THREADS=1`` (the node does): BLAS threads only add latency to these small matrices.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from kangaroo_wbc.control.qp import OsqpSettings, QpProblem
from kangaroo_wbc.control.qp_solvers import DEFAULT_SOLVER, SOLVERS, make_solver
from kangaroo_wbc.errors import InputError, NoSolutionFound

#: The KKT tolerance a solver must meet on every QP (inf-norm of the primal, dual and
#: complementarity residuals; absolute, on rows in N and m/s² of magnitude ~1e2): what OSQP's
#: ``eps_abs = eps_rel = 1e-6`` reach on the controller's QPs.
KKT_TOLERANCE = 1e-3

_FIELDS = ("H", "c", "A", "b", "G", "h", "h_lower", "lb", "ub")


class RecordingSolver:
    """Stands in for a controller's solver: solves with it and keeps a copy of every problem."""

    def __init__(self, solver) -> None:
        self.solver = solver
        self.problems: list[QpProblem] = []

    def solve(self, problem: QpProblem, *args, **kwargs):
        self.problems.append(copy_problem(problem))
        return self.solver.solve(problem, *args, **kwargs)

    def reset(self) -> None:
        self.solver.reset()


def copy_problem(problem: QpProblem) -> QpProblem:
    """A :class:`QpProblem` with copies of ``problem``'s arrays."""
    arrays: dict[str, Any] = {f: None if getattr(problem, f) is None else getattr(problem, f).copy() for f in _FIELDS}
    return QpProblem(**arrays)


def record_closed_loop(duration_s: float = 1.5, behaviour: str = "sway", seed: int = 0,
                       progress=None) -> list[QpProblem]:
    """The QPs the whole-body controller solves in ``duration_s`` of the in-process closed loop
    (``progress``: a :class:`~kangaroo_wbc.progress.Progress` for the run's ticks)."""
    from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    run = ClosedLoopRun(LoopConfig(behaviour=behaviour, duration_s=duration_s, seed=seed))
    recorder = RecordingSolver(run.wbc.solver)
    run.wbc.solver = recorder
    run.run(progress=progress)
    return recorder.problems


def compare(problems: Sequence[QpProblem], solvers: Iterable[str] = tuple(SOLVERS),
            settings: OsqpSettings | None = None, tolerance: float = KKT_TOLERANCE) -> dict[str, dict]:
    """Solve ``problems`` in order with each solver (one solver object each: warm starts carry over);
    per solver: solve wall times [µs] after the first (``median_us``, ``p99_us``, ``max_us``), the
    first (``first_us``, with its setup), ``primal_max`` (largest constraint violation), ``kkt_max``
    (largest of the primal, dual and complementarity residuals), ``failures`` (no usable
    solution), ``methods`` (paths taken: the active-set solver's ``active-set`` or ``osqp``) and
    ``within_tolerance``."""
    out: dict[str, dict] = {}
    for name in solvers:
        solver = make_solver(name, settings)
        methods: dict[str, int] = {}
        times, primal, kkt, failures = [], [], [], 0
        for p in problems:
            t0 = time.perf_counter()
            try:
                sol = solver.solve(p, validate=False)
            except NoSolutionFound:
                times.append(time.perf_counter() - t0)
                failures += 1
                continue
            times.append(time.perf_counter() - t0)
            r = sol.kkt()
            primal.append(r.primal)
            kkt.append(max(r.primal, r.dual, r.complementarity))
            methods[sol.method] = methods.get(sol.method, 0) + 1
        t = np.asarray(times[1:] or times) * 1e6
        out[name] = {
            "median_us": float(np.median(t)), "p99_us": float(np.percentile(t, 99)), "max_us": float(t.max()),
            "first_us": float(times[0] * 1e6), "primal_max": float(max(primal, default=np.inf)),
            "kkt_max": float(max(kkt, default=np.inf)), "failures": failures, "methods": methods,
            "within_tolerance": failures == 0 and max(kkt, default=np.inf) <= tolerance,
        }
    return out


def fastest(result: dict[str, dict]) -> str | None:
    """The solver of ``result`` (:func:`compare`) with the smallest median time within tolerance."""
    ok = [(r["median_us"], name) for name, r in result.items() if r["within_tolerance"]]
    return min(ok)[1] if ok else None


def run(duration_s: float = 1.5, behaviour: str = "sway", seed: int = 0, progress=None) -> dict:
    """The whole benchmark: record, compare; ``{"solvers": compare(...), "fastest", "default",
    "meta"}`` (a JSON-ready dict)."""
    t0 = time.perf_counter()
    problems = record_closed_loop(duration_s, behaviour, seed, progress)
    if not problems:
        raise InputError(f"the controller solved no QP in {duration_s:g} s of the closed loop (it starts once the "
                         "estimators are ready): record for longer")
    res = compare(problems)
    p = problems[0] if problems else None
    return {"solvers": res, "fastest": fastest(res), "default": DEFAULT_SOLVER,
            "meta": {"qps": len(problems), "behaviour": behaviour, "duration_s": duration_s,
                     "n": p.n if p else 0, "n_eq": p.n_eq if p else 0, "n_in": p.n_in if p else 0,
                     "kkt_tolerance": KKT_TOLERANCE,
                     "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
                     "load_average": os.getloadavg()[0], "wall_s": time.perf_counter() - t0}}


def table(result: dict) -> str:
    """``result`` (:func:`run`) as a Markdown table."""
    rows = ["| solver | median µs | p99 µs | max µs | first µs | max violation | max KKT residual | failures |"
            " within tolerance |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in result["solvers"].items():
        rows.append(f"| {name} | {r['median_us']:.1f} | {r['p99_us']:.1f} | {r['max_us']:.1f} | {r['first_us']:.0f} |"
                    f" {r['primal_max']:.1e} | {r['kkt_max']:.1e} | {r['failures']} |"
                    f" {'yes' if r['within_tolerance'] else 'no'} |")
    return "\n".join(rows)
