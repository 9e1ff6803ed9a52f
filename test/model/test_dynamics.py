"""Unit tests of the constrained and projected dynamics (eq. (11)-(19), (25)-(29), App. B).

The reference is a different algorithm: pinocchio's proximal constrained forward dynamics
(``constraintDynamics``) with the same loop closures as rigid 3D constraints.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.model import (
    centroidal_momentum_matrix,
    equivalent_cartesian_inertia,
    gravity_actuated,
    inverse_dynamics,
    lagrange_multipliers,
    projected_dynamics,
)
from kangaroo_wbc.model.checks import random_closed_configuration
from test.model.conftest import load

LOCAL = pin.ReferenceFrame.LOCAL


def _loop_constraints(clm):
    """pinocchio 3D constraints for closures whose rows are positions (x, y, z)."""
    cms = []
    for c in clm.closures:
        fa, fu = clm.model.frames[c.frame_a_id], clm.model.frames[c.frame_u_id]
        cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, clm.model, int(fa.parentJoint),
                                            fa.placement, int(fu.parentJoint), fu.placement, LOCAL))
    return cms


def _forward(clm, q, v, tau, cms):
    data = clm.model.createData()
    models = pin.StdVec_RigidConstraintModel()
    for cm in cms:
        models.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    cms = models
    pin.initConstraintDynamics(clm.model, data, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-12, 200)
    a = pin.constraintDynamics(clm.model, data, q, v, tau, cms, cds, prox)
    J = pin.getConstraintsJacobian(clm.model, data, cms, cds)
    return a.copy(), data.lambda_c.copy(), J


@pytest.mark.parametrize("name", ["u2ups", "rrpr", "four_bar"])
def test_inverse_dynamics_recovers_commanded_acceleration(name, mechanism_dir):
    """tau_a -> pinocchio constrained FD -> theta_ddot_a -> eq. (19) -> tau_a again."""
    clm = load(name, mechanism_dir)
    rng = np.random.default_rng(3)
    q = random_closed_configuration(clm, rng)
    v = clm.complete_velocity(q, rng.normal(0, 0.5, clm.n_a))
    tau_a = rng.normal(0, 20, clm.n_a)
    tau = np.zeros(clm.model.nv)
    tau[clm.idx_v_a] = tau_a
    a, _, _ = _forward(clm, q, v, tau, _loop_constraints(clm))
    res = inverse_dynamics(clm, q, v, a[clm.idx_v_a])
    np.testing.assert_allclose(res.a[clm.idx_v_u], a[clm.idx_v_u], atol=1e-6)
    np.testing.assert_allclose(res.tau_a, tau_a, atol=1e-6 * max(1.0, np.max(np.abs(tau_a))))


def test_gravity_compensation_holds_the_mechanism(mechanism_dir):
    """With tau_a = g_a + J_m^T g_u the constrained forward dynamics gives zero acceleration."""
    clm = load("u2ups", mechanism_dir)
    q = random_closed_configuration(clm, np.random.default_rng(1))
    tau = np.zeros(clm.model.nv)
    tau[clm.idx_v_a] = gravity_actuated(clm, q)
    a, _, _ = _forward(clm, q, np.zeros(clm.model.nv), tau, _loop_constraints(clm))
    assert np.max(np.abs(a)) < 1e-8


def test_projected_dynamics_consistent_with_full_constrained_dynamics(mechanism_dir):
    """Floating base + 6D sole contact: pinocchio's (a, lambda) satisfy eq. (62) and (69)."""
    clm = load("u2ups", mechanism_dir, floating_base=True)
    m = clm.model
    rng = np.random.default_rng(5)
    q = random_closed_configuration(clm, rng)
    q[:7] = np.r_[0.1, -0.2, 0.5, pin.Quaternion(rng.normal(size=4)).normalized().coeffs()]
    v = clm.complete_velocity(q, rng.normal(0, 0.3, clm.n_a), np.zeros(6))
    # make the sole velocity zero (a stationary contact): choose the base twist accordingly
    pin.computeJointJacobians(m, clm.data, q)
    pin.updateFramePlacements(m, clm.data)
    sole = m.getFrameId("sole")
    Js = pin.getFrameJacobian(m, clm.data, sole, LOCAL)
    T = projected_dynamics(clm, q, v).T
    JT = Js @ T
    nu = np.r_[np.zeros(6), v[clm.idx_v_a]]
    nu[:6] = -np.linalg.solve(JT[:, :6], JT[:, 6:] @ nu[6:])
    v = T @ nu
    assert np.max(np.abs(Js @ v)) < 1e-10
    fs = m.frames[sole]
    oMs = clm.data.oMf[sole]
    contact = pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, m, int(fs.parentJoint), fs.placement, 0,
                                       oMs, LOCAL)
    cms = _loop_constraints(clm) + [contact]
    tau_a = rng.normal(0, 30, clm.n_a)
    tau = np.zeros(m.nv)
    tau[clm.idx_v_a] = tau_a
    a, lam, J_all = _forward(clm, q, v, tau, cms)
    f_gen = J_all[-6:].T @ lam[-6:]  # generalized contact force (convention-free)
    pd = projected_dynamics(clm, q, v, ["sole"], reference_frame=LOCAL)
    nu_dot = np.r_[a[:6], a[clm.idx_v_a]]
    rhs = pd.T.T @ f_gen
    base_res = pd.M[pd.base_rows] @ nu_dot + pd.h[pd.base_rows] - rhs[pd.base_rows]
    assert np.max(np.abs(base_res)) < 1e-6
    tau_rec = pd.M[pd.actuated_rows] @ nu_dot + pd.h[pd.actuated_rows] - rhs[pd.actuated_rows]
    np.testing.assert_allclose(tau_rec, tau_a, atol=1e-6)
    # the same through the library's contact-force interface: f in LOCAL sole coordinates
    f_local = np.linalg.lstsq(pd.J_c_full.T, f_gen, rcond=None)[0]
    np.testing.assert_allclose(pd.actuated_forces(nu_dot, f_local), tau_a, atol=1e-6)
    assert np.max(np.abs(pd.base_residual(nu_dot, f_local))) < 1e-6
    # contact acceleration from the projected quantities vanishes for a stationary contact
    assert np.max(np.abs(pd.J_c @ nu_dot + pd.gamma_c)) < 1e-6
    # passive accelerations from eq. (10) match pinocchio's
    np.testing.assert_allclose((pd.T @ nu_dot + pd.k)[clm.idx_v_u], a[clm.idx_v_u], atol=1e-6)
    # Lagrange multipliers (eq. (28)) reproduce the passive rows of the full dynamics
    lam_l = lagrange_multipliers(clm, q, v, pd, nu_dot, f_local)
    J_l = clm.constraint_jacobian(q)
    full = pin.rnea(m, clm.data, q, v, a) - pd.J_c_full.T @ f_local - J_l.T @ lam_l
    assert np.max(np.abs(full[clm.idx_v_u])) < 1e-6


def test_projected_inertia_is_symmetric_positive_definite(mechanism_dir):
    clm = load("u2ups", mechanism_dir, floating_base=True)
    q = clm.q_ref
    pd = projected_dynamics(clm, q, np.zeros(clm.model.nv))
    np.testing.assert_allclose(pd.M, pd.M.T, atol=1e-12)
    assert np.min(np.linalg.eigvalsh(pd.M)) > 0


def test_cartesian_inertia_and_cmm(mechanism_dir):
    clm = load("u2ups", mechanism_dir, floating_base=True)
    q = clm.q_ref
    Lam = equivalent_cartesian_inertia(clm, q, "sole")
    assert Lam.shape == (6, 6)
    np.testing.assert_allclose(Lam, Lam.T, atol=1e-6 * np.max(np.abs(Lam)))
    A = centroidal_momentum_matrix(clm, q)
    assert A.shape == (6, 6 + clm.n_a)
    # a pure base translation gives linear momentum m * v
    np.testing.assert_allclose(A[:3, :3], clm.mass_kg * np.eye(3) @ clm.data.oMi[1].rotation, atol=1e-9)
