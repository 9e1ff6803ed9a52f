"""Unit tests of the QP contract and the OSQP wrapper on reference problems with known solutions."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.control.qp import OsqpSettings, OsqpSolver, QpProblem
from kangaroo_wbc.errors import InputError, NoSolutionFound
from test.control.conftest import KKT_TOL

SOLUTION_TOL = 1e-5


def _projection_problem(rng, n=6, m=2):
    """min ½‖x - x0‖² s.t. A x = b: x* = x0 - Aᵀ(AAᵀ)⁻¹(A x0 - b)."""
    x0, A, b = rng.normal(size=n), rng.normal(size=(m, n)), rng.normal(size=m)
    x_star = x0 - A.T @ np.linalg.solve(A @ A.T, A @ x0 - b)
    return QpProblem(H=np.eye(n), c=-x0, A=A, b=b), x_star


def test_equality_constrained_projection_matches_closed_form():
    problem, x_star = _projection_problem(np.random.default_rng(0))
    sol = OsqpSolver().solve(problem)
    assert sol.solved
    np.testing.assert_allclose(sol.x, x_star, atol=SOLUTION_TOL)
    kkt = sol.kkt()
    assert kkt.ok(KKT_TOL), kkt
    assert sol.iterations > 0 and sol.solve_time_s > 0.0 and sol.setup_time_s > 0.0


def test_box_and_two_sided_inequalities_clip_and_give_signed_multipliers():
    """min ½‖x - x0‖² with box and a two-sided row: the solution is the clipped target."""
    x0 = np.array([2.0, -3.0, 0.5, 0.2])
    lb, ub = np.array([-1.0, -1.0, -1.0, -np.inf]), np.array([1.0, 1.0, 1.0, np.inf])
    G = np.array([[0.0, 0.0, 0.0, 1.0]])
    problem = QpProblem(H=np.eye(4), c=-x0, G=G, h=np.array([0.1]), h_lower=np.array([-0.1]), lb=lb, ub=ub)
    sol = OsqpSolver().solve(problem)
    np.testing.assert_allclose(sol.x, [1.0, -1.0, 0.5, 0.1], atol=SOLUTION_TOL)
    # Active upper bound -> positive multiplier, active lower -> negative (OSQP convention).
    assert sol.y_box[0] > 0.5 and sol.y_box[1] < -1.5 and abs(sol.y_box[2]) < SOLUTION_TOL
    assert sol.y_in[0] == pytest.approx(0.1, abs=SOLUTION_TOL)
    assert sol.kkt().ok(KKT_TOL)


def test_update_in_place_keeps_one_setup_and_warm_starts():
    rng = np.random.default_rng(1)
    base, _ = _projection_problem(rng)
    solver = OsqpSolver(OsqpSettings(active_set_prediction=False))  # OSQP's own in-place update
    iterations = []
    for k in range(5):
        x0 = rng.normal(size=base.n)
        A = base.A + 0.01 * k  # same pattern (dense), new values
        p = QpProblem(H=np.eye(base.n), c=-x0, A=A, b=base.b)
        sol = solver.solve(p)
        x_star = x0 - A.T @ np.linalg.solve(A @ A.T, A @ x0 - base.b)
        np.testing.assert_allclose(sol.x, x_star, atol=SOLUTION_TOL)
        iterations.append(sol.iterations)
        assert sol.warm_started == (k > 0)
    assert solver.n_setups == 1 and solver.n_solves == 5


def test_structural_zeros_are_kept_and_a_pattern_miss_sets_up_again():
    n = 3
    A0 = np.array([[1.0, 0.0, 0.0]])
    structure = QpProblem(H=np.eye(n), c=np.zeros(n), A=np.array([[1.0, 1.0, 0.0]]), b=np.zeros(1))
    solver = OsqpSolver(OsqpSettings(active_set_prediction=False), structure=structure)
    x0 = np.array([1.0, 2.0, 3.0])
    solver.solve(QpProblem(H=np.eye(n), c=-x0, A=A0, b=np.zeros(1)))
    # Entry (0, 1) was zero but declared structural: updated in place.
    sol = solver.solve(QpProblem(H=np.eye(n), c=-x0, A=np.array([[1.0, 1.0, 0.0]]), b=np.zeros(1)))
    assert solver.n_setups == 1
    np.testing.assert_allclose(sol.x, [-0.5, 0.5, 3.0], atol=SOLUTION_TOL)
    # Entry (0, 2) was never declared: one new setup, still the right answer.
    sol = solver.solve(QpProblem(H=np.eye(n), c=-x0, A=np.array([[1.0, 0.0, 1.0]]), b=np.zeros(1)))
    assert solver.n_setups == 2
    np.testing.assert_allclose(sol.x, [-1.0, 2.0, 1.0], atol=SOLUTION_TOL)


def test_infeasible_problem_raises_no_solution_found_with_problem_and_result():
    problem = QpProblem(H=np.eye(2), c=np.zeros(2), A=np.array([[1.0, 1.0], [1.0, 1.0]]), b=np.array([0.0, 1.0]))
    solver = OsqpSolver(OsqpSettings(max_iter=2000))
    with pytest.raises(NoSolutionFound) as info:
        solver.solve(problem)
    assert info.value.problem is problem
    assert "infeasible" in info.value.result.status
    # The solver recovers on the next (feasible) problem.
    ok = QpProblem(H=np.eye(2), c=np.zeros(2), A=np.array([[1.0, 1.0], [1.0, -1.0]]), b=np.array([1.0, 0.0]))
    np.testing.assert_allclose(solver.solve(ok).x, [0.5, 0.5], atol=SOLUTION_TOL)


def test_bound_conflict_is_infeasible():
    problem = QpProblem(H=np.eye(2), c=np.zeros(2), lb=np.array([1.0, 0.0]), ub=np.array([0.0, 1.0]))
    with pytest.raises(NoSolutionFound):
        OsqpSolver().solve(problem)


@pytest.mark.parametrize("field", ["H", "c", "A"])
def test_non_finite_data_raises_input_error(field):
    problem, _ = _projection_problem(np.random.default_rng(2))
    getattr(problem, field).flat[0] = np.nan
    with pytest.raises(InputError):
        OsqpSolver().solve(problem)


def test_wrong_shapes_raise_input_error():
    with pytest.raises(InputError):
        OsqpSolver().solve(QpProblem(H=np.eye(3), c=np.zeros(2)))
