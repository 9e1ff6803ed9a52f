"""Unit tests of the Table III quantities (eq. (31)-(34)) on TALOS and on a closed mechanism."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import ModelError
from kangaroo_wbc_tools.analysis.table3 import (
    PAPER_TABLE3,
    inertia_report,
    serial_model,
    table3,
    table3_error,
)


@pytest.fixture(scope="module")
def talos():
    from kangaroo_wbc_tools.analysis.talos import talos_lower_body

    try:
        return talos_lower_body()
    except ModelError as exc:
        pytest.skip(str(exc))


def test_talos_lower_body_keeps_only_legs(talos):
    model, q = talos
    assert model.nq == 12
    assert all(n.startswith("leg_") for n in list(model.names)[1:])
    assert 25.0 < sum(i.mass for i in model.inertias) < 45.0
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    # nominal pose: soles about a metre below the pelvis, feet apart
    left = data.oMf[model.getFrameId("left_sole_link")].translation
    right = data.oMf[model.getFrameId("right_sole_link")].translation
    assert -1.2 < left[2] < -0.8 and left[1] > 0 > right[1]


def test_cartesian_inertia_is_inverse_of_operational_mobility(talos):
    """For a serial leg, Lambda^-1 = J M^-1 J^T + eps I (eq. (31))."""
    model, q = talos
    clm = serial_model(model)
    rep = inertia_report(clm, q, "left_sole_link")
    data = model.createData()
    pin.computeJointJacobians(model, data, q)
    pin.updateFramePlacements(model, data)
    J = pin.getFrameJacobian(model, data, model.getFrameId("left_sole_link"), pin.LOCAL_WORLD_ALIGNED)
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    np.testing.assert_allclose(np.linalg.inv(rep.Lambda), J @ np.linalg.solve(M, J.T) + 1e-5 * np.eye(6),
                               atol=1e-9)
    assert rep.camm.shape == (3, 12)


def test_ratios_of_a_robot_with_itself_are_one(talos):
    model, q = talos
    rep = inertia_report(serial_model(model), q, "left_sole_link")
    t3 = table3(rep, rep)
    for key in ("linear", "angular", "camm"):
        np.testing.assert_allclose(t3[key], 1.0)


def test_heavier_legs_give_larger_ratios(talos):
    """Doubling every mass of TALOS doubles both indices (they are linear in the inertias)."""
    model, q = talos
    heavy = model.copy()
    for j in range(1, heavy.njoints):
        I = heavy.inertias[j]
        heavy.inertias[j] = pin.Inertia(2 * I.mass, I.lever, 2 * I.inertia)
    t3 = table3(inertia_report(serial_model(heavy), q, "left_sole_link"),
                inertia_report(serial_model(model), q, "left_sole_link"))
    np.testing.assert_allclose(t3["linear"] + t3["camm"], 2.0, rtol=1e-3)


def test_table3_error_is_the_largest_relative_error_of_the_nine_ratios():
    assert table3_error(PAPER_TABLE3) == 0.0
    ours = {k: list(v) for k, v in PAPER_TABLE3.items()}
    ours["angular"][0] = PAPER_TABLE3["angular"][0] * 0.5  # 50 % low
    ours["camm"][2] = PAPER_TABLE3["camm"][2] * 1.3  # 30 % high
    assert table3_error(ours) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        table3_error({"linear": [1.0], "angular": [1.0, 1.0, 1.0], "camm": [1.0, 1.0, 1.0]})
