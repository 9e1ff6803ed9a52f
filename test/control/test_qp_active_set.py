"""The active-set prediction of :class:`OsqpSolver`: exact KKT solutions, accepted only when optimal."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.control.qp import OsqpSettings, OsqpSolver, QpProblem
from kangaroo_wbc.errors import NoSolutionFound
from test.control.conftest import KKT_TOL

OSQP_ONLY = OsqpSettings(active_set_prediction=False, eps_abs=1e-9, eps_rel=1e-9, max_iter=20000)


def _drifting_problems(n_ticks: int, seed: int = 0) -> list[QpProblem]:
    """A slowly changing QP with equalities, two-sided rows and a box, several rows active."""
    rng = np.random.default_rng(seed)
    n, m_eq, m_in = 8, 2, 6
    L = rng.normal(size=(n, n))
    H0 = L @ L.T + 0.5 * np.eye(n)
    A0, G0 = rng.normal(size=(m_eq, n)), rng.normal(size=(m_in, n))
    c0, c1 = 3.0 * rng.normal(size=n), rng.normal(size=n)
    out = []
    for k in range(n_ticks):
        s = 0.02 * k
        out.append(
            QpProblem(
                H=H0 + 0.1 * np.sin(s) * np.eye(n),
                c=c0 + np.sin(s) * c1,
                A=A0 + 0.01 * np.cos(s),
                b=np.array([0.1 * np.sin(s), 0.2]),
                G=G0,
                h=np.full(m_in, 0.5),
                h_lower=np.full(m_in, -0.5),
                lb=np.full(n, -0.4),
                ub=np.full(n, 0.4),
            )
        )
    return out


def test_predicted_active_set_gives_the_exact_optimum_and_is_used_on_most_ticks():
    problems = _drifting_problems(200)
    fast, ref = OsqpSolver(), OsqpSolver(OSQP_ONLY)
    methods = []
    for p in problems:
        a, b = fast.solve(p), ref.solve(p)
        methods.append(a.method)
        kkt = a.kkt()
        tol = 1e-7 if a.method == "active-set" else KKT_TOL  # exact KKT solve / OSQP's tolerance
        assert max(kkt.primal, kkt.dual, kkt.complementarity) < tol, (a.method, kkt)
        np.testing.assert_allclose(a.x, b.x, atol=1e-5)
        assert a.objective == pytest.approx(b.objective, abs=1e-6)
    assert methods[0] == "osqp"  # the first solve has no prediction
    # at least some rows are active (the test would be trivial otherwise) ...
    last = fast.solve(problems[-1])
    assert np.count_nonzero(np.abs(np.concatenate([last.y_in, last.y_box])) > 1e-6) >= 2
    # ... and the prediction (with its corrections) carries the sequence
    assert methods.count("active-set") >= 0.9 * len(problems), methods.count("osqp")


def test_dependent_active_rows_are_handled():
    """Two identical rows active at the optimum (the apex of a friction pyramid has the same kind)."""
    G = np.array([[-1.0, 0.0], [-2.0, 0.0], [0.0, 1.0]])
    p = QpProblem(H=np.eye(2), c=np.array([1.0, -1.0]), G=G, h=np.array([0.0, 0.0, 0.5]))
    solver = OsqpSolver()
    first = solver.solve(p)
    second = solver.solve(p)
    assert first.method == "osqp" and second.method == "active-set"
    np.testing.assert_allclose(second.x, [0.0, 0.5], atol=1e-8)
    assert second.kkt().ok(1e-7)


def test_a_changed_active_set_is_corrected_or_left_to_osqp():
    """The target jumps across the box: the predicted set is wrong; the answer is still optimal."""
    solver = OsqpSolver(OsqpSettings(active_set_iterations=0))
    lb, ub = -np.ones(3), np.ones(3)
    solver.solve(
        QpProblem(H=np.eye(3), c=-np.array([2.0, 2.0, 2.0]), lb=lb, ub=ub)
    )  # upper bounds active
    sol = solver.solve(QpProblem(H=np.eye(3), c=-np.array([-2.0, 0.3, -2.0]), lb=lb, ub=ub))
    assert sol.method == "osqp"  # no corrections allowed: OSQP decides
    np.testing.assert_allclose(sol.x, [-1.0, 0.3, -1.0], atol=1e-5)
    corrected = OsqpSolver(OsqpSettings(active_set_iterations=3))
    corrected.solve(QpProblem(H=np.eye(3), c=-np.array([2.0, 2.0, 2.0]), lb=lb, ub=ub))
    sol = corrected.solve(QpProblem(H=np.eye(3), c=-np.array([-2.0, 0.3, -2.0]), lb=lb, ub=ub))
    assert sol.method == "active-set" and sol.iterations >= 1
    np.testing.assert_allclose(sol.x, [-1.0, 0.3, -1.0], atol=1e-10)


def test_an_infeasible_problem_is_never_accepted_by_the_prediction():
    solver = OsqpSolver(OsqpSettings(max_iter=2000))
    A = np.array([[1.0, 1.0]])
    solver.solve(
        QpProblem(
            H=np.eye(2), c=np.zeros(2), A=A, b=np.array([1.0]), lb=np.zeros(2), ub=np.ones(2)
        )
    )
    with pytest.raises(NoSolutionFound):  # x1 + x2 = 3 cannot hold inside the unit box
        solver.solve(
            QpProblem(
                H=np.eye(2), c=np.zeros(2), A=A, b=np.array([3.0]), lb=np.zeros(2), ub=np.ones(2)
            )
        )


def test_schur_kkt_solve_matches_the_full_kkt_matrix_and_defers_on_a_singular_hessian():
    """The Schur-complement KKT solve (Cholesky of the free Hessian within its envelope) equals a
    dense solve of the whole KKT matrix on a controller-like Hessian (dense block + diagonal);
    with a zero-curvature variable it declines, and the active-set solve still finds the optimum
    through the LU of the whole matrix."""
    from kangaroo_wbc.control.active_set import INFINITY, _kkt_schur, solve_active_set

    rng = np.random.default_rng(11)
    nd, n, k, delta = 5, 12, 4, 1e-10
    B = rng.standard_normal((nd, nd))
    H = np.diag(rng.uniform(0.5, 2.0, n))
    H[:nd, :nd] += B @ B.T
    C = rng.standard_normal((k, n)) * (rng.random((k, n)) < 0.6)
    free, act = np.arange(n), np.arange(k)
    rhs, sol = rng.standard_normal(n + k), np.empty(n + k)
    assert _kkt_schur(H, C, free, n, act, k, rhs, delta, sol)
    K = np.block([[H, C.T], [C, -delta * np.eye(k)]])
    np.testing.assert_allclose(sol, np.linalg.solve(K, rhs), rtol=0, atol=1e-10)
    # min x0^2/2 + (x1 - 3)^2/2 + 0 * x2^2 s.t. x0 + x2 = 1, x1 + x2 = 2: ((1 - x2)^2 + (x2 + 1)^2)/2, x2 = 0
    H0 = np.diag([1.0, 1.0, 0.0])
    c0 = np.array([0.0, -3.0, 0.0])
    A = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    assert not _kkt_schur(H0, A, np.arange(3), 3, np.arange(2), 2, np.zeros(5), delta, np.empty(5))
    x, y_g, y_b = np.empty(3), np.empty(2), np.empty(3)
    it = solve_active_set(H0, c0, A, np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.full(3, -INFINITY),
                          np.full(3, INFINITY), np.zeros(2, dtype=np.int8), np.full(3, 2, dtype=np.int8), 2, 1e-9,
                          1e-9, delta, x, y_g, y_b)
    assert it >= 0
    np.testing.assert_allclose(x, [1.0, 2.0, 0.0], atol=1e-8)


def test_one_call_path_equals_the_two_step_active_set_solve():
    """``solve_stacked`` (bounds, stacked rows, KKT solve, objective in one compiled call) gives the
    two-step path's solution, sides and objective; crossed or NaN bounds solve nothing."""
    from kangaroo_wbc.control.active_set import BAD_BOUNDS, solve_stacked

    problems = _drifting_problems(60, seed=3)
    solver = OsqpSolver()
    solver.solve(problems[0])  # OSQP: the first prediction
    for p in problems[1:]:
        l, u = solver._bounds(p)
        side_g, side_b = solver._active[0].copy(), solver._active[1].copy()
        ref = solver._active_set_solve(p, l, u)
        stacked_sides = (solver._active[0].copy(), solver._active[1].copy())
        solver._active = (side_g, side_b)
        n, m_g = p.n, p.n_eq + p.n_in
        work = (np.empty((m_g, n)), np.empty(m_g + n), np.empty(m_g + n), np.empty(m_g, dtype=np.int8),
                np.empty(n, dtype=np.int8))
        x, y = np.empty(n), np.empty(m_g + n)
        st = solver.settings
        code, objective = solve_stacked(p.H, p.c, p.A, p.b, p.G, p.h_lower, p.h, p.lb, p.ub, side_g, side_b,
                                        st.active_set_iterations, st.active_set_primal_tol, st.active_set_dual_tol,
                                        1e-10, *work, x, y)
        np.testing.assert_array_equal(work[1], l)
        np.testing.assert_array_equal(work[2], u)
        if ref is None:
            assert code < 0
            solver.solve(p)  # OSQP takes the tick, as in the solver
            continue
        assert code == ref[2]
        np.testing.assert_allclose(x, ref[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(y, ref[1], rtol=0, atol=1e-9)
        assert objective == pytest.approx(0.5 * ref[0] @ p.H @ ref[0] + p.c @ ref[0], rel=1e-12, abs=1e-12)
        np.testing.assert_array_equal(work[3], stacked_sides[0])
        np.testing.assert_array_equal(work[4], stacked_sides[1])
        solver._active = stacked_sides
    p = problems[-1]
    st = solver.settings
    sides = (solver._active[0].copy(), solver._active[1].copy())
    for field, value in (("ub", -1.0), ("h_lower", np.nan), ("b", np.nan)):
        bad = QpProblem(**{k: getattr(p, k).copy() for k in ("H", "c", "A", "b", "G", "h", "h_lower", "lb", "ub")})
        getattr(bad, field)[1] = value  # ub below lb = -0.4, NaN lower bound, NaN equality
        n, m_g = bad.n, bad.n_eq + bad.n_in
        code, _ = solve_stacked(bad.H, bad.c, bad.A, bad.b, bad.G, bad.h_lower, bad.h, bad.lb, bad.ub,
                                sides[0].copy(), sides[1].copy(), st.active_set_iterations,
                                st.active_set_primal_tol, st.active_set_dual_tol, 1e-10, np.empty((m_g, n)),
                                np.empty(m_g + n), np.empty(m_g + n), np.empty(m_g, dtype=np.int8),
                                np.empty(n, dtype=np.int8), np.empty(n), np.empty(m_g + n))
        assert code == BAD_BOUNDS, field
        # through the solver, predicted set in place: the one-call path never answers with the bad
        # bound clipped away (crossed: raises; NaN: the general path decides, a finite x or a raise)
        solver._active, solver._active_shape = (sides[0].copy(), sides[1].copy()), solver._shape_of(bad)
        n_fast = solver.n_active_set
        if field == "ub":
            with pytest.raises(NoSolutionFound, match="lower bound above upper bound"):
                solver.solve(bad, validate=False)
        else:
            try:
                assert np.isfinite(solver.solve(bad, validate=False).x).all()
            except NoSolutionFound:
                pass
        assert solver.n_active_set == n_fast
