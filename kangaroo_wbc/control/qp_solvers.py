"""The QP solvers of the package behind one facade: ``solve(problem, solver=...)``.

Every solver takes a :class:`~kangaroo_wbc.control.qp.QpProblem` and returns a
:class:`~kangaroo_wbc.control.qp.QpSolution` (multipliers in OSQP's sign convention, so that
:meth:`QpSolution.kkt` checks any of them), keeps its factorisation or warm start from one call to
the next, and raises :class:`~kangaroo_wbc.errors.NoSolutionFound` when it has no usable answer.

======================  ================================================================================
name                    solver
======================  ================================================================================
``"active_set"``        the default: :class:`~kangaroo_wbc.control.qp.OsqpSolver` with its predicted
                        active set (a compiled KKT solve of the last solution's active set, accepted
                        only when optimal; OSQP, warm-started, otherwise)
``"osqp"``              :class:`~kangaroo_wbc.control.qp.OsqpSolver` alone (``active_set_prediction``
                        off): OSQP 1.x updated in place and warm-started
``"daqp"``              `DAQP <https://darnstrom.github.io/daqp/>`_, a dual active-set solver (dense),
                        warm-started from the last solution's active set
``"proxsuite"``         `ProxQP <https://github.com/Simple-Robotics/proxsuite>`_ (dense backend),
                        updated in place and warm-started from the last solution
======================  ================================================================================

A *fallback* solver (``make_solver(name, fallback=other)``; the controller's
``WbcSettings.qp_fallback_solver``, ``daqp`` by default) takes a problem the first one gives up on
(OSQP's iteration limit on a nearly infeasible QP at a hard contact switch): the tick keeps control
instead of entering the safe mode; only when both fail does the caller see ``NoSolutionFound``.

``docs/performance.md`` ("QP solvers") compares them on the QPs recorded from the closed loop
(:mod:`kangaroo_wbc_tools.bench.qp_solvers`); the default is the fastest within the KKT tolerance.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import osqp

from kangaroo_wbc.control.qp import OSQP_INFTY, OsqpSettings, OsqpSolver, QpProblem, QpSolution
from kangaroo_wbc.errors import NoSolutionFound
from kangaroo_wbc.model.compiled import finite

#: The default solver: the fastest within the KKT tolerance on the closed loop's QPs.
DEFAULT_SOLVER = "active_set"
_SOLVED = int(osqp.SolverStatus.OSQP_SOLVED)
_UNSOLVED = int(osqp.SolverStatus.OSQP_UNSOLVED)


class _DenseSolver:
    """What the dense solvers share: the settings, the problem shape ``(n, m_eq, m_in, has_box)``
    their set-up is kept for (None: none), and the solve count."""

    def __init__(self, settings: OsqpSettings | None) -> None:
        self.settings = settings or OsqpSettings()
        self._shape: tuple | None = None
        self.n_solves = 0

    def reset(self) -> None:
        """Forget the set-up problem and its warm start."""
        self._shape = None

    def _begin(self, problem: QpProblem, validate: bool) -> tuple[float, tuple[int, int, int, bool], bool]:
        """A solve's first step: the problem checked (``validate``), the start time, the problem's
        shape and whether the set-up one has it (warm start)."""
        if validate:
            problem.validate()
        shape = (problem.n, problem.n_eq, problem.n_in, problem.has_box)
        return time.perf_counter(), shape, self._shape == shape


class DaqpSolver(_DenseSolver):
    """DAQP (dense dual active-set) on a :class:`QpProblem`: the box as DAQP's simple bounds, the
    rows ``[A; G]`` as its general constraints (equalities marked), set up once per shape, then
    updated in place (DAQP keeps its working set: the warm start).

    Tolerances: ``settings.eps_abs`` as DAQP's primal tolerance (its dual tolerance stays DAQP's);
    ``settings.max_iter`` bounds its iterations (x10: an active-set iteration changes one row).
    """

    def __init__(self, settings: OsqpSettings | None = None, structure: QpProblem | None = None) -> None:
        import daqp  # an optional solver: imported when chosen

        super().__init__(settings)
        self._daqp = daqp
        self._model = None
        self._sense: np.ndarray | None = None  # the equality rows of the set-up problem
        self.n_setups = 0

    def solve(self, problem: QpProblem, check_pattern: bool = True, validate: bool = True) -> QpSolution:
        t0, shape, warm = self._begin(problem, validate)
        n, m_eq, m_in, has_box = shape
        C = np.concatenate([problem.A, problem.G], axis=0)
        lower, upper = [problem.b, problem.h_lower], [problem.b, problem.h]
        if has_box:
            lb, ub = problem.box()
            lower.insert(0, lb)
            upper.insert(0, ub)
        bl, bu = np.concatenate(lower), np.concatenate(upper)
        np.clip(bl, -OSQP_INFTY, OSQP_INFTY, out=bl)
        np.clip(bu, -OSQP_INFTY, OSQP_INFTY, out=bu)
        if (bl > bu).any():
            self.reset()
            raise NoSolutionFound("lower bound above upper bound", problem=problem)
        sense = np.where(bl == bu, 5, 0).astype(np.int32)  # equalities
        H, c = np.ascontiguousarray(problem.H, dtype=float), np.ascontiguousarray(problem.c, dtype=float)
        setup_time = 0.0
        if not warm:
            st = self.settings
            self._model = self._daqp.Model()
            self._model.settings = {**self._model.settings, "primal_tol": st.eps_abs, "iter_limit": 10 * st.max_iter}
            flag = self._model.setup(H, c, C, bu, bl, sense)[0]
            self.n_setups += 1
            if flag < 0:  # e.g. H not positive definite: DAQP keeps no model, its solve() would raise
                self.reset()
                raise NoSolutionFound(f"DAQP set-up failed (exit flag {flag})", problem=problem)
            self._shape, self._sense = shape, sense
            setup_time = time.perf_counter() - t0
        else:
            flag = (self._model.update(H=H, f=c, A=C, bupper=bu, blower=bl) if np.array_equal(sense, self._sense)
                    else self._model.update(H=H, f=c, A=C, bupper=bu, blower=bl, sense=sense))
            self._sense = sense
            if isinstance(flag, int) and flag < 0:
                self.reset()
                raise NoSolutionFound(f"DAQP update failed (exit flag {flag})", problem=problem)
        x, _, exitflag, info = self._model.solve()
        x = np.array(x, dtype=float)
        lam = np.array(info["lam"], dtype=float)  # DAQP's sign: > 0 on upper bounds, as OSQP's
        ok = exitflag == 1 and finite(x)
        y_box, y = (lam[:n], lam[n:]) if has_box else (None, lam)
        sol = QpSolution(x=x, y_eq=y[:m_eq], y_in=y[m_eq:], y_box=y_box, status="solved" if ok else f"daqp {exitflag}",
                         status_val=_SOLVED if ok else _UNSOLVED, iterations=int(info["iterations"]),
                         setup_time_s=setup_time, solve_time_s=time.perf_counter() - t0,
                         objective=float(0.5 * x @ H @ x + c @ x) if ok else float("nan"),
                         warm_started=warm, problem=problem, method="daqp")
        self.n_solves += 1
        if not ok:
            self.reset()
            raise NoSolutionFound(f"DAQP exit flag {exitflag} after {sol.iterations} iterations", problem=problem,
                                  result=sol)
        return sol


class ProxsuiteSolver(_DenseSolver):
    """ProxQP (proxsuite, dense backend) on a :class:`QpProblem`: set up once per shape, then
    updated in place and warm-started from the previous result.

    Tolerances: ``settings.eps_abs`` / ``eps_rel`` as ProxQP's; ``settings.max_iter`` its iterations.
    """

    def __init__(self, settings: OsqpSettings | None = None, structure: QpProblem | None = None) -> None:
        import proxsuite  # an optional solver: imported when chosen

        super().__init__(settings)
        self._dense = proxsuite.proxqp.dense
        self._proxqp = proxsuite.proxqp
        self._qp = None

    def solve(self, problem: QpProblem, check_pattern: bool = True, validate: bool = True) -> QpSolution:
        t0, shape, warm = self._begin(problem, validate)
        n, m_eq, m_in, has_box = shape
        lo = np.clip(problem.h_lower, -OSQP_INFTY, OSQP_INFTY)
        hi = np.clip(problem.h, -OSQP_INFTY, OSQP_INFTY)
        box = tuple(np.clip(v, -OSQP_INFTY, OSQP_INFTY) for v in problem.box()) if has_box else ()
        if (lo > hi).any() or (has_box and (box[0] > box[1]).any()):
            self.reset()
            raise NoSolutionFound("lower bound above upper bound", problem=problem)
        H = np.ascontiguousarray(problem.H, dtype=float)
        setup_time = 0.0
        if not warm:
            qp = self._dense.QP(n, m_eq, m_in, has_box)
            st = self.settings
            qp.settings.eps_abs, qp.settings.eps_rel = st.eps_abs, st.eps_rel
            qp.settings.max_iter = st.max_iter
            qp.settings.verbose = False
            qp.init(H, problem.c, problem.A, problem.b, problem.G, lo, hi, *box)
            self._qp, self._shape = qp, shape
            setup_time = time.perf_counter() - t0
        else:
            self._qp.update(H, problem.c, problem.A, problem.b, problem.G, lo, hi, *box)
        qp = self._qp
        qp.solve()
        if not warm:  # from now on: the previous result (set before a first solve, ProxQP crashes)
            qp.settings.initial_guess = self._proxqp.InitialGuess.WARM_START_WITH_PREVIOUS_RESULT
        res = qp.results
        x, z = np.array(res.x, dtype=float), np.array(res.z, dtype=float)
        ok = res.info.status == self._proxqp.QPSolverOutput.PROXQP_SOLVED and finite(x)
        sol = QpSolution(x=x, y_eq=np.array(res.y, dtype=float), y_in=z[:m_in], y_box=z[m_in:] if has_box else None,
                         status="solved" if ok else str(res.info.status), status_val=_SOLVED if ok else _UNSOLVED,
                         iterations=int(res.info.iter), setup_time_s=setup_time,
                         solve_time_s=time.perf_counter() - t0,
                         objective=float(res.info.objValue), warm_started=warm, problem=problem, method="proxsuite")
        self.n_solves += 1
        if not ok:
            self.reset()
            raise NoSolutionFound(f"ProxQP status {res.info.status} after {sol.iterations} iterations",
                                  problem=problem, result=sol)
        return sol


def _osqp(active_set_prediction: bool) -> Callable[[OsqpSettings | None, QpProblem | None], OsqpSolver]:
    """The constructor of an :class:`OsqpSolver` with the active-set prediction on or off."""
    def make(settings: OsqpSettings | None, structure: QpProblem | None) -> OsqpSolver:
        settings = replace(settings or OsqpSettings(), active_set_prediction=active_set_prediction)
        return OsqpSolver(settings, structure=structure)

    return make


#: Solver name -> constructor ``(settings, structure)``.
SOLVERS: dict[str, Callable[[OsqpSettings | None, QpProblem | None], object]] = {
    "active_set": _osqp(True),
    "osqp": _osqp(False),
    "daqp": DaqpSolver,
    "proxsuite": ProxsuiteSolver,
}


class FallbackSolver:
    """``primary``, and ``fallback`` on the problems ``primary`` raises :class:`NoSolutionFound` for
    (both keep their own warm starts)."""

    def __init__(self, primary, fallback) -> None:
        self.primary, self.fallback = primary, fallback

    def solve(self, problem: QpProblem, validate: bool = True) -> QpSolution:
        try:
            return self.primary.solve(problem, validate=validate)
        except NoSolutionFound as first:
            try:
                return self.fallback.solve(problem, validate=False)
            except NoSolutionFound:
                raise first from None

    def reset(self) -> None:
        """Forget both solvers' warm starts."""
        self.primary.reset()
        self.fallback.reset()


def make_solver(solver: str = DEFAULT_SOLVER, settings: OsqpSettings | None = None,
                structure: QpProblem | None = None, fallback: str | None = None):
    """A solver object by name (see the module docstring), for a caller that solves one problem
    after another (it keeps its set-up problem and warm start): ``make_solver(name).solve(problem)``.
    ``settings``: tolerances and limits (the OSQP ones; the others take what applies);
    ``structure``: the sparsity pattern (OSQP, see :class:`OsqpSolver`); ``fallback``: the solver
    for the problems the first one fails on (:class:`FallbackSolver`), None or the same name: none.

    Raises:
        ValueError: an unknown solver name (the message lists the valid names).
    """
    for name in (solver, fallback):
        if name is not None and (not isinstance(name, str) or name not in SOLVERS):
            raise ValueError(f"unknown QP solver {name!r}; valid: {', '.join(SOLVERS)}")
    first = SOLVERS[solver](settings, structure)
    if fallback is None or fallback == solver:
        return first
    return FallbackSolver(first, SOLVERS[fallback](settings, structure))


def solve(problem: QpProblem, solver: str = DEFAULT_SOLVER, settings: OsqpSettings | None = None) -> QpSolution:
    """Solve ``problem`` once with the solver named ``solver`` (see the module docstring).

    Raises:
        ValueError: an unknown solver name.
        InputError: inconsistent or non-finite problem data
            (:class:`kangaroo_wbc.errors.InputError`).
        NoSolutionFound: no usable solution (infeasible, iteration limit...).
    """
    return make_solver(solver, settings).solve(problem)


__all__ = ["DEFAULT_SOLVER", "SOLVERS", "DaqpSolver", "FallbackSolver", "ProxsuiteSolver", "make_solver", "solve"]
