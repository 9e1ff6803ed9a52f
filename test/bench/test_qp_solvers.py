"""The QP-solver benchmark (:mod:`kangaroo_wbc_tools.bench.qp_solvers`) and the solver facade
(:mod:`kangaroo_wbc.control.qp_solvers`) on a few small QPs: every solver meets the KKT tolerance."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.control.qp import QpProblem
from kangaroo_wbc.control.qp_solvers import DEFAULT_SOLVER, SOLVERS, make_solver, solve
from kangaroo_wbc_tools.bench.qp_solvers import (
    KKT_TOLERANCE,
    RecordingSolver,
    compare,
    fastest,
    table,
)


def _problems() -> list[QpProblem]:
    """Three small QPs of one shape (equalities, two-sided rows, a box; rows active), drifting."""
    rng = np.random.default_rng(2)
    n, m_eq, m_in = 6, 1, 4
    L = rng.normal(size=(n, n))
    H = L @ L.T + 0.5 * np.eye(n)
    A, G = rng.normal(size=(m_eq, n)), rng.normal(size=(m_in, n))
    c0, c1 = 3.0 * rng.normal(size=n), rng.normal(size=n)
    return [QpProblem(H=H, c=c0 + 0.1 * k * c1, A=A, b=np.array([0.1]), G=G, h=np.full(m_in, 0.3),
                      h_lower=np.full(m_in, -0.3), lb=np.full(n, -0.25), ub=np.full(n, 0.25)) for k in range(3)]


def test_every_solver_meets_the_kkt_tolerance_and_agrees():
    problems = _problems()
    res = compare(problems)
    assert set(res) == set(SOLVERS)
    for name, r in res.items():
        assert r["failures"] == 0 and r["within_tolerance"], (name, r)
        assert r["kkt_max"] <= KKT_TOLERANCE
    assert fastest(res) in SOLVERS
    assert "| daqp |" in table({"solvers": res})
    ref = solve(problems[-1], "daqp")  # an exact active-set solver
    assert np.count_nonzero(np.abs(np.concatenate([ref.y_in, ref.y_box])) > 1e-9) >= 1  # rows active
    for name in SOLVERS:
        sol = solve(problems[-1], solver=name)
        np.testing.assert_allclose(sol.x, ref.x, atol=1e-3)
        assert sol.kkt().ok(KKT_TOLERANCE), name


def test_solvers_by_name_and_an_unknown_name():
    assert DEFAULT_SOLVER in SOLVERS
    assert make_solver("osqp").settings.active_set_prediction is False
    assert make_solver("active_set").settings.active_set_prediction is True
    with pytest.raises(ValueError, match="valid: active_set, osqp, daqp, proxsuite"):
        make_solver("gurobi")
    with pytest.raises(ValueError, match="unknown QP solver"):
        solve(_problems()[0], solver="qpOASES")


def test_the_recorder_keeps_copies_of_the_problems():
    problems = _problems()
    rec = RecordingSolver(make_solver("daqp"))
    p = problems[0]
    c = p.c.copy()
    rec.solve(p)
    p.c[:] = 0.0  # the owner writes its arrays in place: the record keeps what was solved
    assert len(rec.problems) == 1
    np.testing.assert_array_equal(rec.problems[0].c, c)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_a_non_convex_problem_is_no_solution_found_and_the_solver_recovers(name):
    """A Hessian that is not positive semi-definite (a corrupted cost) is a NoSolutionFound from
    every solver, at set-up and at a warm update, never the solver library's own exception; the
    next good problem solves."""
    from kangaroo_wbc.errors import NoSolutionFound

    good = _problems()
    bad = QpProblem(H=-good[0].H, c=good[0].c, A=good[0].A, b=good[0].b, G=good[0].G, h=good[0].h,
                    h_lower=good[0].h_lower, lb=good[0].lb, ub=good[0].ub)
    solver = make_solver(name)
    for sequence in ([bad, good[1]], [good[0], bad, good[2]]):  # set-up, then warm update
        solver.reset()
        for p in sequence:
            if p is bad:
                try:
                    sol = solver.solve(p)
                except NoSolutionFound:
                    continue
                # a solver that returns must have returned a KKT point of the problem it was given
                assert sol.kkt().ok(KKT_TOLERANCE), (name, sol.status)
            else:
                assert solver.solve(p).kkt().ok(KKT_TOLERANCE), name
