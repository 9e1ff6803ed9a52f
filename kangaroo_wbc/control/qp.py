"""Quadratic programs: one problem contract and an OSQP wrapper that updates in place.

Contract (the only one used by tasks, constraints and controllers):

.. math::

    \\min_x \\tfrac12 x^T H x + c^T x \\quad \\text{s.t.} \\quad
    A x = b, \\qquad h_{lower} \\le G x \\le h, \\qquad lb \\le x \\le ub

``h_lower`` defaults to ``-inf`` (plain ``G x <= h``); two-sided rows avoid duplicating ``G``.

:class:`OsqpSolver` stacks the constraints as OSQP's ``l <= C x <= u`` with
``C = [A; G; I]``, sets the solver up **once** on a fixed sparsity pattern (structural zeros kept
as explicit zeros) and afterwards only calls ``update(q, l, u, Px, Ax)`` and warm-starts. A
nonzero appearing outside the pattern triggers one new setup on the union pattern (counted in
:attr:`OsqpSolver.n_setups`), so correctness never depends on the caller's pattern hints.

Before OSQP, :class:`OsqpSolver` tries the previous solution's active set: one KKT solve (with
a few corrections of the set), accepted only when the result satisfies every KKT condition
(:class:`OsqpSettings`, ``active_set_prediction``). A controller's QP keeps its active set from one
tick to the next almost always, so most ticks get the exact optimum for the price of one dense
symmetric solve; OSQP, warm-started from the last solution, decides whenever the prediction fails.
:attr:`QpSolution.method` tells which path answered.

Every :class:`QpSolution` can check itself: :meth:`QpSolution.kkt` returns the primal,
dual (stationarity) and complementarity residuals of the KKT conditions, computed from the
problem data in double precision, independently of the solver's own residuals.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import osqp
import scipy.sparse as sp

from kangaroo_wbc.control.active_set import kkt_work, solve_stacked
from kangaroo_wbc.control.active_set import warm_up as _warm_up_active_set
from kangaroo_wbc.errors import InputError, NoSolutionFound
from kangaroo_wbc.model.compiled import finite

#: OSQP's infinity: bounds beyond it are treated as absent.
OSQP_INFTY = 1e30
_EMPTY = np.zeros(0)
_SOLVED = int(osqp.SolverStatus.OSQP_SOLVED)

#: ``delta`` of the active-set KKT matrix ``[[H, C^T], [C, -delta I]]`` (see :class:`OsqpSettings`).
_KKT_DUAL_REGULARISATION = 1e-10

#: Statuses accepted when the primal residual is small (see :class:`OsqpSettings`).
_ACCEPTABLE = (
    osqp.SolverStatus.OSQP_SOLVED_INACCURATE,
    osqp.SolverStatus.OSQP_MAX_ITER_REACHED,
    osqp.SolverStatus.OSQP_TIME_LIMIT_REACHED,
)


@dataclass
class QpProblem:
    """``min ½xᵀHx + cᵀx  s.t.  A x = b,  h_lower ≤ G x ≤ h,  lb ≤ x ≤ ub``.

    Matrices are dense numpy arrays (the problems of this package have tens of variables).
    ``A``/``G`` may have zero rows; ``lb``/``ub`` may be ``None`` (no box rows).
    """

    H: np.ndarray
    c: np.ndarray
    A: np.ndarray | None = None
    b: np.ndarray | None = None
    G: np.ndarray | None = None
    h: np.ndarray | None = None
    h_lower: np.ndarray | None = None
    lb: np.ndarray | None = None
    ub: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = self.c.shape[0]
        if self.A is None:
            self.A, self.b = np.zeros((0, n)), np.zeros(0)
        if self.G is None:
            self.G, self.h = np.zeros((0, n)), np.zeros(0)
        if self.h_lower is None:
            self.h_lower = np.full(self.G.shape[0], -np.inf)

    @property
    def n(self) -> int:
        return int(self.c.shape[0])

    @property
    def n_eq(self) -> int:
        return int(self.A.shape[0])

    @property
    def n_in(self) -> int:
        return int(self.G.shape[0])

    @property
    def has_box(self) -> bool:
        return self.lb is not None or self.ub is not None

    def box(self) -> tuple[np.ndarray, np.ndarray]:
        lb = np.full(self.n, -np.inf) if self.lb is None else self.lb
        ub = np.full(self.n, np.inf) if self.ub is None else self.ub
        return lb, ub

    def validate(self) -> None:
        """Raise :class:`InputError` on inconsistent shapes or non-finite data."""
        n, m_eq, m_in = self.n, self.n_eq, self.n_in
        shapes = dict(H=(n, n), A=(m_eq, n), b=(m_eq,), G=(m_in, n), h=(m_in,), h_lower=(m_in,))
        for name, shape in shapes.items():
            if getattr(self, name).shape != shape:
                raise InputError(f"QP {name} has shape {getattr(self, name).shape}, expected {shape}")
        # One reduction per array (a sum is non-finite iff an entry is, barring overflow, which is
        # rejected as well); the per-entry scan of a bound only runs when its sum is NaN.
        for name in ("H", "c", "A", "b", "G"):
            if not math.isfinite(float(np.sum(getattr(self, name)))):
                raise InputError(f"QP {name} contains non-finite values")
        for name in ("h", "h_lower", "lb", "ub"):
            arr = getattr(self, name)
            if arr is not None and math.isnan(float(np.sum(arr))) and np.any(np.isnan(arr)):
                raise InputError(f"QP {name} contains NaN")

    def kkt_residuals(
        self, x: np.ndarray, y_eq: np.ndarray, y_in: np.ndarray, y_box: np.ndarray | None
    ) -> KktResiduals:
        """KKT residuals (inf-norms) with OSQP's multiplier sign convention.

        Multipliers ``y > 0`` act on upper bounds, ``y < 0`` on lower bounds. Residuals:

        * primal: ``‖A x - b‖``, violations of ``h_lower <= G x <= h`` and of the box;
        * dual: stationarity ``‖H x + c + Aᵀ y_eq + Gᵀ y_in + y_box‖`` and multipliers pushing on
          an absent (infinite) bound;
        * complementarity: ``max |y_i| · |slack_i|`` over the finite bounds.
        """
        r_eq = self.A @ x - self.b
        gx = self.G @ x
        primal = [np.abs(r_eq), np.maximum(gx - self.h, 0.0), np.maximum(self.h_lower - gx, 0.0)]
        stat = self.H @ x + self.c + self.A.T @ y_eq + self.G.T @ y_in
        sign, comp = _inequality_residuals(gx, self.h_lower, self.h, y_in)
        signs, comps = [sign], [comp]
        if self.has_box and y_box is not None:
            lb, ub = self.box()
            primal += [np.maximum(x - ub, 0.0), np.maximum(lb - x, 0.0)]
            stat = stat + y_box
            sign, comp = _inequality_residuals(x, lb, ub, y_box)
            signs.append(sign)
            comps.append(comp)
        dual = max(float(np.max(np.abs(stat), initial=0.0)), _inf_norm(signs))
        return KktResiduals(primal=_inf_norm(primal), dual=dual, complementarity=_inf_norm(comps))


def _inf_norm(parts: list[np.ndarray]) -> float:
    return float(max((np.max(p, initial=0.0) for p in parts), default=0.0))


def _inequality_residuals(
    z: np.ndarray, lo: np.ndarray, hi: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: (multiplier on an infinite bound, ``|y⁺|·|hi - z| + |y⁻|·|z - lo|`` on finite bounds)."""
    y_up, y_dn = np.maximum(y, 0.0), np.maximum(-y, 0.0)
    fin_hi, fin_lo = np.isfinite(hi), np.isfinite(lo)
    sign = np.where(fin_hi, 0.0, y_up) + np.where(fin_lo, 0.0, y_dn)
    slack_hi = np.abs(np.where(fin_hi, hi, z) - z)
    slack_lo = np.abs(z - np.where(fin_lo, lo, z))
    return sign, y_up * slack_hi + y_dn * slack_lo


@dataclass
class KktResiduals:
    """Inf-norm residuals of the KKT conditions of a :class:`QpProblem` at a primal-dual pair."""

    primal: float  # constraint violation [units of the rows]
    dual: float  # stationarity ‖Hx + c + Cᵀy‖∞
    complementarity: float  # max |y_i · slack_i|

    def ok(self, tol: float) -> bool:
        return max(self.primal, self.dual, self.complementarity) <= tol


@dataclass
class QpSolution:
    """Solution of a :class:`QpProblem` with solver diagnostics.

    Attributes:
        x: primal solution.
        y_eq, y_in, y_box: multipliers of the equality, inequality and box rows (OSQP signs).
        status: solver status string (``"solved"``, ``"primal infeasible"``, ...).
        iterations: ADMM iterations.
        setup_time_s: time spent in OSQP setup for this call (0 when updated in place) [s].
        solve_time_s: wall time of update + solve for this call [s].
        objective: ``½xᵀHx + cᵀx``.
        warm_started: whether the iterate was warm-started from the previous solution.
        method: ``"osqp"`` or ``"active-set"`` (the KKT solve of a predicted active set, checked
            optimal; ``iterations`` then counts its corrections).
    """

    x: np.ndarray
    y_eq: np.ndarray
    y_in: np.ndarray
    y_box: np.ndarray | None
    status: str
    status_val: int
    iterations: int
    setup_time_s: float
    solve_time_s: float
    objective: float
    warm_started: bool
    problem: QpProblem = field(repr=False)
    method: str = "osqp"

    @property
    def solved(self) -> bool:
        return self.status_val == osqp.SolverStatus.OSQP_SOLVED

    def kkt(self) -> KktResiduals:
        """KKT residuals of this solution for its problem (computed from the problem data)."""
        return self.problem.kkt_residuals(self.x, self.y_eq, self.y_in, self.y_box)


@dataclass
class OsqpSettings:
    """OSQP settings used by :class:`OsqpSolver` (see the OSQP documentation for each).

    ``accept_inaccurate`` accepts the statuses ``solved inaccurate``, ``maximum iterations reached``
    and ``run time limit reached`` when the KKT primal residual (computed from the problem data) is
    below ``inaccurate_primal_tol``: a controller prefers a slightly inaccurate answer to none, and
    ``max_iter`` / ``time_limit_s`` bound the worst-case solve time. The status stays visible in the
    solution.

    ``active_set_prediction``: before OSQP, the KKT solve of the previous solution's active set
    (module docstring) with up to ``active_set_iterations`` corrections of the set, accepted only
    when optimal: every row feasible to ``active_set_primal_tol`` (absolute, plus the same
    relative to the bound), every multiplier of the right sign to ``active_set_dual_tol``,
    stationarity to 1e-9 relative.
    """

    eps_abs: float = 1e-6
    eps_rel: float = 1e-6
    max_iter: int = 1000
    polish: bool = False
    adaptive_rho: bool = True
    check_termination: int = 5
    rho: float = 0.1
    sigma: float = 1e-6
    scaling: int = 10
    time_limit_s: float = 0.0  # 0: no limit
    accept_inaccurate: bool = True
    inaccurate_primal_tol: float = 1e-2
    active_set_prediction: bool = True
    active_set_iterations: int = 8
    active_set_primal_tol: float = 1e-7
    active_set_dual_tol: float = 1e-7

    def osqp_kwargs(self) -> dict:
        """OSQP's set-up keywords."""
        names = ("eps_abs", "eps_rel", "max_iter", "adaptive_rho", "check_termination", "rho", "sigma", "scaling")
        out = {name: getattr(self, name) for name in names}
        out.update(polishing=self.polish, verbose=False, warm_starting=True)
        if self.time_limit_s > 0:
            out["time_limit"] = self.time_limit_s
        return out


class OsqpSolver:
    """OSQP wrapper: set up once, then update values in place and warm-start.

    Args:
        settings: :class:`OsqpSettings`.
        structure: optional problem whose nonzero entries (of ``H`` upper triangle, ``A``, ``G``)
            define the sparsity pattern; entries that are structurally nonzero but happen to be
            zero at the first call must be nonzero here. Defaults to the first problem solved.

    Use :meth:`solve` every tick; it raises :class:`NoSolutionFound` (with the problem and the
    solution attached) when OSQP does not return a usable solution.
    """

    def __init__(
        self, settings: OsqpSettings | None = None, structure: QpProblem | None = None
    ) -> None:
        self.settings = settings or OsqpSettings()
        self._structure = structure
        if self.settings.active_set_prediction:
            _warm_up_active_set()  # compiled (or loaded) now, never inside a control tick
        self._prob: osqp.OSQP | None = None
        self._shape: tuple | None = None
        self.n_setups = 0
        self.n_solves = 0
        self._warm = False
        # pattern (filled at setup)
        self._P_rows = self._P_cols = np.zeros(0, dtype=int)
        self._C_src: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._nnz_C = 0
        self._Cx = np.zeros(0)
        # active-set prediction: the compiled path's work per problem shape (it holds the predicted
        # sides of the [A; G] rows and of the box), and the shape whose sides are current (None: none)
        self._kkt: dict[tuple, SimpleNamespace] = {}
        self._predicted: tuple | None = None
        self._last_xy: tuple[np.ndarray, np.ndarray] | None = None
        self._osqp_stale = False  # OSQP's data lag behind (ticks solved by the active set)
        self.n_active_set = 0

    # ------------------------------------------------------------------ pattern
    @staticmethod
    def _mask(problem: QpProblem) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (np.triu(problem.H) != 0.0), (problem.A != 0.0), (problem.G != 0.0)

    def _setup(self, problem: QpProblem) -> None:
        t0 = time.perf_counter()
        n, m_eq, m_in = problem.n, problem.n_eq, problem.n_in
        mH, mA, mG = self._mask(problem)
        if self._structure is not None and self._shape_of(self._structure) == self._shape_of(problem):
            sH, sA, sG = self._mask(self._structure)
            mH, mA, mG = mH | sH, mA | sA, mG | sG
        if self._prob is not None and self._shape == self._shape_of(problem):
            # Re-setup after a pattern miss: keep the union with the previous pattern.
            mH[self._P_rows, self._P_cols] = True
            for block, (rows, cols, _) in zip((mA, mG), self._C_src[:2]):
                block[rows, cols] = True
        np.fill_diagonal(mH, True)  # keeps P's diagonal (regularisation-friendly, fixed pattern)
        # P: upper triangle, CSC order (column-major)
        cols, rows = np.nonzero(mH.T)
        self._P_rows, self._P_cols = rows, cols
        P = sp.csc_matrix(
            (problem.H[rows, cols].astype(float), rows, np.searchsorted(cols, np.arange(n + 1))),
            shape=(n, n),
        )
        # C = [A; G; I]: collect (row, col) per block, then sort into CSC order.
        rA, cA = np.nonzero(mA)
        rG, cG = np.nonzero(mG)
        rB = np.arange(n if problem.has_box else 0)
        blocks = [(rA, cA, rA), (rG, cG, rG + m_eq), (rB, rB, rB + m_eq + m_in)]
        all_rows = np.concatenate([b[2] for b in blocks])
        all_cols = np.concatenate([b[1] for b in blocks])
        order = np.lexsort((all_rows, all_cols))
        inv = np.empty_like(order)
        inv[order] = np.arange(order.size)
        self._C_src = []
        start = 0
        for r, c, _ in blocks:
            self._C_src.append((r, c, inv[start : start + r.size]))
            start += r.size
        self._nnz_C = order.size
        # Flat indices outside the pattern, for the per-tick miss check (one gather per block).
        oH = np.flatnonzero(~mH.ravel())
        self._outside = [
            oH[(oH // n) <= (oH % n)],
            np.flatnonzero(~mA.ravel()),
            np.flatnonzero(~mG.ravel()),
        ]
        self._Cx = np.empty(self._nnz_C)
        self._fill_C(problem)
        C = sp.csc_matrix(
            (self._Cx.copy(), all_rows[order], np.searchsorted(all_cols[order], np.arange(n + 1))),
            shape=(m_eq + m_in + rB.size, n),
        )
        l, u = self._bounds(problem)
        self._prob = osqp.OSQP()
        self._prob.setup(P, problem.c.astype(float), C, l, u, **self.settings.osqp_kwargs())
        self._shape = self._shape_of(problem)
        self._warm = False
        self.n_setups += 1
        self._last_setup_time = time.perf_counter() - t0

    @staticmethod
    def _shape_of(problem: QpProblem) -> tuple:
        return problem.n, problem.n_eq, problem.n_in, problem.has_box

    def _fill_C(self, problem: QpProblem) -> None:
        (rA, cA, iA), (rG, cG, iG), (_, _, iB) = self._C_src
        self._Cx[iA] = problem.A[rA, cA]
        self._Cx[iG] = problem.G[rG, cG]
        self._Cx[iB] = 1.0

    def _bounds(self, problem: QpProblem) -> tuple[np.ndarray, np.ndarray]:
        lb, ub = problem.box() if problem.has_box else (_EMPTY, _EMPTY)
        l, u = np.concatenate([problem.b, problem.h_lower, lb]), np.concatenate([problem.b, problem.h, ub])
        for x in (l, u):  # clip to OSQP's infinity (np.clip costs several µs more on small arrays)
            np.minimum(np.maximum(x, -OSQP_INFTY, out=x), OSQP_INFTY, out=x)
        return l, u

    def _pattern_miss(self, problem: QpProblem) -> bool:
        """True when ``problem`` has a nonzero outside the set-up pattern (upper triangle of ``H``)."""
        oH, oA, oG = self._outside
        return bool(
            np.any(problem.H.ravel()[oH])
            or np.any(problem.A.ravel()[oA])
            or np.any(problem.G.ravel()[oG])
        )

    # ------------------------------------------------------------------ solve
    def reset(self) -> None:
        """Forget the warm start (next solve starts cold) and the predicted active set; the set-up
        pattern is kept."""
        self._warm = False
        self._predicted = None
        if self._prob is not None:
            self._prob.warm_start(x=np.zeros(self._shape[0]), y=np.zeros(self._prob.m))

    def solve(
        self, problem: QpProblem, check_pattern: bool = True, validate: bool = True
    ) -> QpSolution:
        """Solve ``problem`` (update in place when the pattern allows) and return the solution.

        ``validate=False`` skips the shape/finiteness scan of the data (for callers that build the
        problem from validated inputs; a non-finite solution still raises NoSolutionFound).

        Raises:
            InputError: inconsistent or non-finite problem data.
            NoSolutionFound: OSQP did not reach a usable solution (infeasible, max iterations...).
        """
        if validate or self._prob is None:
            problem.validate()
        t0 = time.perf_counter()
        setup_time = 0.0
        if self.settings.active_set_prediction and self._predicted is not None:
            fast = self._stacked_solve(problem, t0)
            if fast is not None:
                return fast
        l, u = self._bounds(problem)
        if (l > u).any():
            rows = np.flatnonzero(l > u)
            self.reset()
            raise NoSolutionFound(
                f"lower bound above upper bound in constraint rows {rows.tolist()} "
                f"(rows: {problem.n_eq} eq, {problem.n_in} ineq, then box)",
                problem=problem,
            )
        try:
            if (
                self._prob is None
                or self._shape != self._shape_of(problem)
                or (check_pattern and self._pattern_miss(problem))
            ):
                self._setup(problem)
                setup_time = self._last_setup_time
            else:
                self._fill_C(problem)
                self._update(problem.c, l, u, problem.H[self._P_rows, self._P_cols], self._Cx)
                if self._osqp_stale and self._last_xy is not None and self._warm:
                    self._prob.warm_start(x=self._last_xy[0], y=self._last_xy[1])
            self._osqp_stale = False
            warm = self._warm
            x, y, info = self._solve_raw()
        except (osqp.OSQPException, ValueError) as exc:  # solver errors are wrapped, never leaked
            self._prob = None
            raise NoSolutionFound(f"OSQP error: {exc!r}", problem=problem) from exc
        self.n_solves += 1
        m_eq, m_g = problem.n_eq, problem.n_eq + problem.n_in
        sol = QpSolution(x=x, y_eq=y[:m_eq], y_in=y[m_eq:m_g], y_box=y[m_g:] if problem.has_box else None,
                         status=str(info.status), status_val=int(info.status_val), iterations=int(info.iter),
                         setup_time_s=setup_time, solve_time_s=time.perf_counter() - t0,
                         objective=float(info.obj_val), warm_started=warm, problem=problem)
        if not self._usable(sol):
            self._warm = False
            self.reset()
            raise NoSolutionFound(
                f"OSQP returned status {sol.status!r} after {sol.iterations} iterations",
                problem=problem,
                result=sol,
            )
        self._warm = True
        if self.settings.active_set_prediction:
            self._remember_active_set(problem, l, u, y)
        return sol

    def _update(
        self, q: np.ndarray, l: np.ndarray, u: np.ndarray, Px: np.ndarray, Ax: np.ndarray
    ) -> None:
        """In-place data update through osqp's extension object: the Python wrapper re-clips the
        bounds (done in :meth:`_bounds`) and caches data for derivatives, tens of µs per tick."""
        ext = self._prob._solver
        ext.update_data_vec(q=q, l=l, u=u)
        ext.update_data_mat(P_x=Px, P_i=None, A_x=Ax, A_i=None)

    def _solve_raw(self) -> tuple[np.ndarray, np.ndarray, object]:
        """``(x, y, info)`` copies after one OSQP solve (through the extension object, as :meth:`_update`)."""
        ext = self._prob._solver
        ext.solve()
        return np.array(ext.solution.x, dtype=float), np.array(ext.solution.y, dtype=float), ext.info

    def _usable(self, sol: QpSolution) -> bool:
        if not finite(sol.x):
            return False
        if sol.solved:
            return True
        if self.settings.accept_inaccurate and sol.status_val in _ACCEPTABLE:
            return sol.kkt().primal <= self.settings.inaccurate_primal_tol
        return False

    # ------------------------------------------------------------------ active-set prediction
    def _remember_active_set(
        self, problem: QpProblem, l: np.ndarray, u: np.ndarray, y: np.ndarray
    ) -> None:
        """Active rows of a solution: equal bounds (0), upper (+1) / lower (-1) bounds whose multiplier
        is not zero, inactive (2); kept separately for the general rows ``[A; G]`` and the box (in
        the compiled path's work of the problem's shape, with the active-set settings)."""
        tol = 1e-6 * max(1.0, float(np.max(np.abs(y), initial=0.0)))
        side = np.where(y > tol, 1, np.where(y < -tol, -1, 2)).astype(np.int8)
        side[l == u] = 0
        shape = self._shape_of(problem)
        rec = self._kkt.get(shape)
        if rec is None:
            rec = self._kkt[shape] = _kkt_record(problem.n, problem.n_eq + problem.n_in)
        st = self.settings
        rec.settings[:] = (st.active_set_iterations, st.active_set_primal_tol, st.active_set_dual_tol,
                           _KKT_DUAL_REGULARISATION)
        m_g = rec.m_g
        rec.predicted_g[:] = side[:m_g]
        rec.predicted_b[:] = side[m_g:] if problem.has_box else 2
        self._predicted = shape

    def _stacked_solve(self, problem: QpProblem, t0: float) -> QpSolution | None:
        """The predicted active set's solve in one compiled call (bounds, stacked rows, KKT solve,
        objective: :func:`~kangaroo_wbc.control.active_set.solve_stacked`); ``None`` when the
        problem's shape is not the predicted one, the result is not the optimum, or a bound is
        crossed or NaN (the general path then decides)."""
        shape = (problem.n, problem.A.shape[0], problem.G.shape[0], problem.lb is not None or problem.ub is not None)
        if shape != self._predicted:
            return None
        rec = self._kkt[shape]
        lb, ub = problem.lb, problem.ub
        code, objective = solve_stacked(problem.H, problem.c, problem.A, problem.b, problem.G, problem.h_lower,
                                        problem.h, rec.no_lb if lb is None else lb, rec.no_ub if ub is None else ub,
                                        rec.work)
        if code < 0:
            return None
        x = rec.x.copy()
        m_eq, m_g = shape[1], rec.m_g
        if shape[3]:
            y = rec.y.copy()
            y_box = y[m_g:]
        else:
            y, y_box = rec.y[:m_g].copy(), None
        self.n_solves += 1
        self.n_active_set += 1
        self._osqp_stale = True
        self._last_xy = (x, y)
        return QpSolution(x=x, y_eq=y[:m_eq], y_in=y[m_eq:m_g], y_box=y_box, status="solved",
                          status_val=_SOLVED, iterations=int(code), setup_time_s=0.0,
                          solve_time_s=time.perf_counter() - t0, objective=objective,
                          warm_started=True, problem=problem, method="active-set")


def _kkt_record(n: int, m_g: int) -> SimpleNamespace:
    """The compiled active-set path's work for one problem shape: the
    :data:`~kangaroo_wbc.control.active_set.KktWork` buffer object ``work`` and the arrays it holds by
    name (the solver reads and writes the predicted sides, the settings, the solution there), ``m_g``,
    and the infinite box ``no_lb``, ``no_ub`` passed for problems without one."""
    work, arrays = kkt_work(n, m_g, 0, 0.0, 0.0, _KKT_DUAL_REGULARISATION)
    return SimpleNamespace(work=work, m_g=m_g, no_lb=np.full(n, -np.inf), no_ub=np.full(n, np.inf), **arrays)


__all__ = [
    "QpProblem",
    "QpSolution",
    "KktResiduals",
    "OsqpSettings",
    "OsqpSolver",
    "OSQP_INFTY",
]
