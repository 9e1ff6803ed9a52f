"""Self-consistency checks of a closed-loop model (the ``model check`` command).

Each check compares two independent computations:

* closure FK from a perturbed configuration reaches ``||e_l||_inf < fk_tol``;
* ``J_l`` against central finite differences of ``e_l`` on the manifold (``pin.integrate``);
* ``Jdot_l v`` against finite differences of ``J_l v`` along the motion;
* ``J_l [J_m theta_dot_a] = 0`` (DFK consistency, eq. (6)-(7));
* power balance ``tau_a . theta_dot_a = tau_u . theta_dot_u`` for ``tau_a = J_m^T tau_u`` (eq. (18)).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pinocchio as pin

from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel

#: Tolerances of the checks (documented in docs/model.md).
FK_TOL = 1e-10
JACOBIAN_FD_TOL = 1e-6
BIAS_FD_TOL = 1e-5
POWER_TOL = 1e-9


@dataclass
class CheckReport:
    closure_fk_residual: float
    closure_fk_iterations: int
    jacobian_fd_error: float
    bias_fd_error: float
    dfk_residual: float
    power_balance_error: float
    ok: bool

    def as_dict(self) -> dict:
        return asdict(self)


def random_closed_configuration(clm: ClosedLoopModel, rng: np.random.Generator,
                                spread: float = 0.3) -> np.ndarray:
    """A closed configuration with actuators drawn around the reference (within joint limits)."""
    q_ref = clm.q_ref
    theta0 = q_ref[clm.idx_q_a]
    lo = clm.model.lowerPositionLimit[clm.idx_q_a]
    hi = clm.model.upperPositionLimit[clm.idx_q_a]
    span = np.where(np.isfinite(hi - lo) & (hi > lo), hi - lo, 1.0)
    for attempt in range(20):
        scale = spread * 0.5 ** attempt
        theta = theta0 + scale * span * rng.uniform(-0.5, 0.5, clm.n_a)
        theta = np.where(np.isfinite(lo) & (hi > lo), np.clip(theta, lo, hi), theta)
        q, info = clm.closure_fk(theta, q_ref, raise_on_failure=False, max_iter=100)
        if info.converged:
            return q
    return q_ref.copy()


def fd_jacobian(clm: ClosedLoopModel, q: np.ndarray, h: float = 1e-7) -> np.ndarray:
    """Central finite differences of ``e_l`` on the manifold."""
    J = np.zeros((clm.n_c, clm.model.nv))
    dv = np.zeros(clm.model.nv)
    for i in range(clm.model.nv):
        dv[:] = 0.0
        dv[i] = h
        ep = clm.closure_error(pin.integrate(clm.model, q, dv))
        em = clm.closure_error(pin.integrate(clm.model, q, -dv))
        J[:, i] = (ep - em) / (2 * h)
    return J


def run_checks(clm: ClosedLoopModel, seed: int = 0) -> CheckReport:
    """Run the checks at a random closed configuration drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    m = clm.model
    q = random_closed_configuration(clm, rng)
    if clm.floating_base:
        q[:3] = rng.normal(0, 0.1, 3)
        quat = pin.Quaternion(rng.normal(size=4)).normalized()
        q[3:7] = quat.coeffs()
    # 1. closure FK from a perturbed configuration
    dv = np.zeros(m.nv)
    dv[clm.idx_v_u] = rng.normal(0.0, 0.02, clm.n_u)
    q_pert = pin.integrate(m, q, dv)
    q_fk, info = clm.closure_fk(q[clm.idx_q_a], q_pert, raise_on_failure=False, max_iter=100)
    fk_res = float(np.max(np.abs(clm.closure_error(q_fk)))) if clm.n_c else 0.0
    # 2. Jacobian vs finite differences
    J = clm.constraint_jacobian(q_fk)
    J_fd = fd_jacobian(clm, q_fk)
    jac_err = float(np.max(np.abs(J - J_fd))) if J.size else 0.0
    # 3. DFK and bias
    v_a = rng.normal(0.0, 1.0, clm.n_a)
    v = clm.complete_velocity(q_fk, v_a, rng.normal(0, 1, 6) if clm.floating_base else None)
    dfk = float(np.max(np.abs(J @ v))) if J.size else 0.0
    h = 1e-6
    Jv_p = clm.constraint_jacobian(pin.integrate(m, q_fk, h * v)) @ v
    Jv_m = clm.constraint_jacobian(pin.integrate(m, q_fk, -h * v)) @ v
    bias_fd = (Jv_p - Jv_m) / (2 * h)
    bias = clm.constraint_bias(q_fk, v)
    bias_err = float(np.max(np.abs(bias - bias_fd))) if bias.size else 0.0
    # 4. power balance
    tau_u = rng.normal(0.0, 10.0, clm.n_u)
    tau_a = clm.torque_map(q_fk, tau_u)
    p_a = float(tau_a @ v[clm.idx_v_a])
    p_u = float(tau_u @ v[clm.idx_v_u])
    power_err = abs(p_a - p_u) / max(1.0, abs(p_u))
    ok = (info.converged and fk_res < FK_TOL and jac_err < JACOBIAN_FD_TOL and bias_err < BIAS_FD_TOL
          and dfk < 1e-9 and power_err < POWER_TOL)
    return CheckReport(fk_res, info.iterations, jac_err, bias_err, dfk, power_err, bool(ok))
