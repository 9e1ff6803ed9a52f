"""Unit tests: the batched closure error/Jacobian equals the core's (eq. (2)-(5)) everywhere."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.model.closure_kinematics import ClosureKinematics, lu_solve
from test.estimation.conftest import DIGIT, closed_configuration, model

MODELS = ["rrpr", "four_bar", "u2ups", DIGIT, "kangaroo"]
TOL = 1e-12  # same formulas, different operation order: rounding only


@pytest.mark.parametrize("floating", [False, True], ids=["fixed", "floating"])
@pytest.mark.parametrize("name", MODELS)
def test_matches_core_closed_and_open(name, floating, mechanism_dir):
    clm = model(name, mechanism_dir, floating)
    ck = ClosureKinematics(clm)
    rng = np.random.default_rng(1)
    q = closed_configuration(clm, 1)
    dv = np.zeros(clm.model.nv)
    dv[clm.idx_v_u] = rng.normal(0.0, 0.05, clm.n_u)
    for qq in (q, pin.integrate(clm.model, q, dv)):  # closed, then opened
        e_ref, J_ref = clm.error_and_jacobian(qq)
        ck.update(qq)
        e, J_lu, J_la = ck.evaluate()
        scale = max(1.0, float(np.max(np.abs(J_ref))))
        np.testing.assert_allclose(e, e_ref, rtol=0, atol=TOL)
        np.testing.assert_allclose(J_lu, J_ref[:, clm.idx_v_u], rtol=0, atol=TOL * scale)
        np.testing.assert_allclose(J_la, J_ref[:, clm.idx_v_a], rtol=0, atol=TOL * scale)


def test_lu_solve_matches_numpy_and_flags_singular():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(8, 8))
    B = rng.normal(size=(8, 3))
    np.testing.assert_allclose(lu_solve(A, B), np.linalg.solve(A, B), atol=1e-12)
    A[3] = 0.0
    assert lu_solve(A, B) is None
