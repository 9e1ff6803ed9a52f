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
    from kangaroo_wbc.control.active_set import INFINITY, _kkt_schur, kkt_work, solve_active_set

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
    work, arrays = kkt_work(3, 2, 2, 1e-9, 1e-9, delta)
    arrays["Cg"][:] = A
    arrays["l"][:] = [1.0, 2.0, -INFINITY, -INFINITY, -INFINITY]
    arrays["u"][:] = [1.0, 2.0, INFINITY, INFINITY, INFINITY]
    arrays["side_g"][:] = 0
    it = solve_active_set(H0, c0, work)
    assert it >= 0
    np.testing.assert_allclose(arrays["x"], [1.0, 2.0, 0.0], atol=1e-8)


def test_one_call_path_gives_the_optimum_and_keeps_its_set():
    """``solve_stacked`` (bounds, stacked rows, KKT solve, objective in one compiled call, its work in
    one buffer object) gives OSQP's optimum, the stacked bounds of the problem, the final set as the
    next prediction; crossed or NaN bounds solve nothing."""
    from kangaroo_wbc.control.active_set import BAD_BOUNDS, kkt_work, solve_stacked

    problems = _drifting_problems(60, seed=3)
    solver, ref = OsqpSolver(), OsqpSolver(OSQP_ONLY)
    solver.solve(problems[0])  # OSQP: the first prediction
    st = solver.settings
    n, m_g = problems[0].n, problems[0].n_eq + problems[0].n_in
    work, arrays = kkt_work(n, m_g, st.active_set_iterations, st.active_set_primal_tol, st.active_set_dual_tol,
                            1e-10)
    n_solved = 0
    for p in problems[1:]:
        sides = solver.solve(p)  # the solver's own prediction for the next tick, from this one
        y_all = np.concatenate([sides.y_eq, sides.y_in, sides.y_box])
        tol = 1e-6 * max(1.0, np.abs(y_all).max())
        arrays["predicted_g"][:] = np.where(y_all[:m_g] > tol, 1, np.where(y_all[:m_g] < -tol, -1, 2))
        arrays["predicted_b"][:] = np.where(y_all[m_g:] > tol, 1, np.where(y_all[m_g:] < -tol, -1, 2))
        arrays["predicted_g"][:p.n_eq] = 0
        code, objective = solve_stacked(p.H, p.c, p.A, p.b, p.G, p.h_lower, p.h, p.lb, p.ub, work)
        l, u = solver._bounds(p)
        np.testing.assert_array_equal(arrays["l"], l)
        np.testing.assert_array_equal(arrays["u"], u)
        np.testing.assert_array_equal(arrays["Cg"], np.concatenate([p.A, p.G]))
        if code < 0:
            continue
        n_solved += 1
        x, y = arrays["x"], arrays["y"]
        b = ref.solve(p)
        np.testing.assert_allclose(x, b.x, atol=1e-6)
        assert p.kkt_residuals(x, y[:p.n_eq], y[p.n_eq:m_g], y[m_g:]).ok(1e-7)
        assert objective == pytest.approx(0.5 * x @ p.H @ x + p.c @ x, rel=1e-12, abs=1e-12)
        np.testing.assert_array_equal(arrays["predicted_g"], arrays["side_g"])  # the final set, kept
        np.testing.assert_array_equal(arrays["predicted_b"], arrays["side_b"])
        active = np.abs(y) > 1e-9
        assert np.all(np.concatenate([arrays["side_g"], arrays["side_b"]])[active] != 2)
    assert n_solved >= 0.9 * (len(problems) - 1)
    p = problems[-1]
    solver.solve(p)
    kept = arrays["predicted_g"].copy(), arrays["predicted_b"].copy()
    for field, value in (("ub", -1.0), ("h_lower", np.nan), ("b", np.nan)):
        bad = QpProblem(**{k: getattr(p, k).copy() for k in ("H", "c", "A", "b", "G", "h", "h_lower", "lb", "ub")})
        getattr(bad, field)[1] = value  # ub below lb = -0.4, NaN lower bound, NaN equality
        code, _ = solve_stacked(bad.H, bad.c, bad.A, bad.b, bad.G, bad.h_lower, bad.h, bad.lb, bad.ub, work)
        assert code == BAD_BOUNDS, field
        np.testing.assert_array_equal(arrays["predicted_g"], kept[0])  # the prediction survives
        np.testing.assert_array_equal(arrays["predicted_b"], kept[1])
        # through the solver, predicted set in place: the one-call path never answers with the bad
        # bound clipped away (crossed: raises; NaN: the general path decides, a finite x or a raise)
        solver.solve(p)
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


def test_a_problem_without_box_takes_the_compiled_path():
    """No box rows: the one-call path solves with an infinite box and returns no box multipliers."""
    rng = np.random.default_rng(5)
    n = 6
    L = rng.normal(size=(n, n))
    G = rng.normal(size=(4, n))
    solver = OsqpSolver()
    for k in range(5):
        p = QpProblem(H=L @ L.T + np.eye(n), c=rng.normal(size=n) + 5.0, A=np.ones((1, n)), b=np.array([0.3]),
                      G=G, h=np.full(4, 0.2))
        sol = solver.solve(p)
        assert k > 0 or sol.method == "osqp"  # the first solve has no prediction
        assert sol.y_box is None and sol.y_in.shape == (4,)
        assert sol.kkt().ok(1e-7 if sol.method == "active-set" else KKT_TOL)
        ref = OsqpSolver(OSQP_ONLY).solve(p)
        np.testing.assert_allclose(sol.x, ref.x, atol=1e-6)
    assert solver.n_active_set >= 1
