"""Mechanism analysis of a closed-chain leg (Kangaroo paper Section IV).

Each function takes a fixed-base :class:`ClosedLoopModel` and a :class:`~kangaroo_wbc.model.leg.LegSpec`
naming the leg's actuators, output joints and sole frame, so it applies to any leg built the same way.

* :func:`singularity_scan` — condition number of ``J_lu`` over a grid of the actuator box, restricted
  to the reachable set (passive joints within their limits).
* :func:`joint_limit_shape` — reachable output-joint region by the QP IK of eq. (IV): for each
  direction in the output plane, least-squares steps (a QP on the actuator displacements with the
  actuator strokes as a box and the passive joints' limits, linearised through ``J_m``, as rows)
  push the output joints until an actuator or passive-joint limit stops them.
* :func:`manipulability_map` — normalised manipulability of the foot (Fig. 5).
* :func:`transmission_sweep` — foot-orientation deviation over the leg-length stroke with the
  other actuators fixed (Figs. 12-13) and the sole normal force produced by the leg-length
  actuator's maximum force along the squat (Fig. 15), by virtual work.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pinocchio as pin
from scipy.optimize import lsq_linear, minimize

from kangaroo_wbc.errors import ClosureFkError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.leg import LegSpec

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def _limits(clm: ClosedLoopModel, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx = np.array([clm.actuated_joint_names.index(n) for n in names])
    lo = clm.model.lowerPositionLimit[clm.idx_q_a[idx]]
    hi = clm.model.upperPositionLimit[clm.idx_q_a[idx]]
    return idx, lo, hi


def _grid_configurations(clm: ClosedLoopModel, q_nominal: np.ndarray, actuators: list[str], levels: int,
                         progress: Callable | None, desc: str, retry: bool = False):
    """Closed configurations over a ``levels^n`` grid of the named actuators' box (others nominal).

    Closure FK is warm-started from the previous grid point (``retry``: then from ``q_nominal``);
    yields None where it does not converge.
    """
    idx, lo, hi = _limits(clm, actuators)
    points = list(itertools.product(*[np.linspace(a, b, levels) for a, b in zip(lo, hi)]))
    theta = q_nominal[clm.idx_q_a].copy()
    q_guess = q_nominal.copy()
    for p in (progress(points, total=len(points), desc=desc) if progress else points):
        theta[idx] = p
        q = None
        for guess, iters in ((q_guess, 100), (q_nominal, 200)) if retry else ((q_guess, 100),):
            try:
                q, _ = clm.closure_fk(theta, guess, max_iter=iters)
                break
            except ClosureFkError:
                continue
        if q is not None:
            q_guess = q
        yield q


#: Tolerance [rad or m] of the reachable-set test of :func:`singularity_scan` (closure FK's roundoff at a
#: limit that a grid point sits on, e.g. the straight knee).
REACHABLE_TOL = 1e-6


def singularity_scan(clm: ClosedLoopModel, q_nominal: np.ndarray, actuators: list[str], levels: int = 4,
                     progress: Callable | None = None, reachable_only: bool = True) -> dict:
    """Max and median condition number of ``J_lu`` over a ``levels^n`` grid of the actuators' box.

    With ``reachable_only`` the statistics cover the reachable set: the grid points whose closed
    configuration keeps every passive joint within its URDF limits
    (:meth:`~kangaroo_wbc.model.ClosedLoopModel.passive_joint_limits`, margin 0; the limits carry the
    model's dead-point margins, so the box's points past a dead point are not in the set). Those outside
    are counted in ``unreachable``; ``samples`` counts every grid point.
    """
    limits = clm.passive_joint_limits(0.0) if reachable_only else None
    conds, failures, samples, unreachable = [], 0, 0, 0
    for q in _grid_configurations(clm, q_nominal, actuators, levels, progress, "singularity scan", retry=True):
        samples += 1
        if q is None:
            failures += 1
            continue
        if limits is not None:
            theta_u = q[limits.idx_q]
            if np.any(theta_u < limits.lower - REACHABLE_TOL) or np.any(theta_u > limits.upper + REACHABLE_TOL):
                unreachable += 1
                continue
        J = clm.constraint_jacobian(q)[:, clm.idx_v_u]
        conds.append(float(np.linalg.cond(J)))
    conds_a = np.array(conds)
    return {"max_condition_number": float(conds_a.max()) if conds else float("inf"),
            "median_condition_number": float(np.median(conds_a)) if conds else float("inf"),
            "samples": samples, "fk_failures": failures, "unreachable": unreachable, "conditions": conds_a}


def _ik_step(A: np.ndarray, target: np.ndarray, box: tuple[np.ndarray, np.ndarray], G: np.ndarray,
             g_lo: np.ndarray, g_hi: np.ndarray) -> np.ndarray:
    """One QP IK step of eq. (IV): ``min ||A x - target||^2`` s.t. ``box[0] <= x <= box[1]`` and
    ``g_lo <= G x <= g_hi`` (the passive joints' rows). The box-only solution when it meets the rows,
    else SLSQP from it."""
    x = lsq_linear(A, target, bounds=box).x
    if G.shape[0] == 0 or (np.all(G @ x <= g_hi + 1e-12) and np.all(G @ x >= g_lo - 1e-12)):
        return x
    C = np.vstack([-G, G])
    d = np.concatenate([g_hi, -g_lo])
    res = minimize(lambda y: 0.5 * float(np.sum((A @ y - target) ** 2)), np.clip(np.zeros_like(x), *box),
                   jac=lambda y: A.T @ (A @ y - target), bounds=list(zip(*box)), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda y: d + C @ y, "jac": lambda y: C}],
                   options={"maxiter": 200, "ftol": 1e-14})
    y = res.x
    return y if np.all(C @ y >= -d - 1e-9) else np.zeros_like(x)


def joint_limit_shape(clm: ClosedLoopModel, q_nominal: np.ndarray, actuators: list[str], outputs: list[str],
                      directions: int = 48, step: float = 0.02, max_steps: int = 200,
                      passive_margin_rad: float | None = 0.0) -> np.ndarray:
    """Boundary of the reachable (output_0, output_1) region [rad] by the QP IK of eq. (IV).

    For each direction ``d`` in the output plane: repeat

    .. math::

        \\min_{\\Delta\\theta} \\| S J_m \\Delta\\theta - \\text{step}\\, d \\|^2 \\quad \\text{s.t.} \\quad
        \\theta_{min} \\le \\theta + \\Delta\\theta \\le \\theta_{max}, \\quad
        \\theta_{u,min} + m \\le \\theta_u + J_{m,u} \\Delta\\theta \\le \\theta_{u,max} - m

    over the named actuators, then closure FK, until the output stops moving. The rows are the
    passive joints with a URDF limit that these actuators move
    (:meth:`~kangaroo_wbc.model.ClosedLoopModel.passive_joint_limits`, margin ``m =
    passive_margin_rad`` [rad]; 0: the URDF's limits, which carry the model's dead-point margins;
    None: actuator strokes only); a joint already past its margined limit may not move further out.
    Returns an array (directions, 2) of boundary points.
    """
    idx, lo, hi = _limits(clm, actuators)
    sel = [clm.passive_joint_names.index(o) for o in outputs]
    iq = [clm.model.joints[clm.model.getJointId(o)].idx_q for o in outputs]
    limits = None if passive_margin_rad is None else clm.passive_joint_limits(passive_margin_rad)
    pts = []
    for phi in np.linspace(0.0, 2 * np.pi, directions, endpoint=False):
        d = np.array([np.cos(phi), np.sin(phi)])
        q = q_nominal.copy()
        for _ in range(max_steps):
            J_m = clm.mapping_jacobian(q)
            A = J_m[np.ix_(sel, idx)]  # type: ignore[arg-type]  # numpy's ix_ stub rejects lists of ints
            th = q[clm.idx_q_a]
            G, g_lo, g_hi = np.zeros((0, len(idx))), np.zeros(0), np.zeros(0)
            if limits is not None:
                G = J_m[np.ix_(limits.row_u, idx)]
                moved = np.any(np.abs(G) > 1e-12, axis=1)
                theta_u = q[limits.idx_q[moved]]
                G = G[moved]
                g_lo = np.minimum(limits.lower[moved] - theta_u, 0.0)  # past the margin: no further out
                g_hi = np.maximum(limits.upper[moved] - theta_u, 0.0)
            x = _ik_step(A, step * d, (lo - th[idx] - 1e-12, hi - th[idx] + 1e-12), G, g_lo, g_hi)
            if np.linalg.norm(A @ x) < 1e-5:
                break
            theta = th.copy()
            theta[idx] = np.clip(th[idx] + x, lo, hi)
            try:
                q, _ = clm.closure_fk(theta, q, max_iter=60)
            except ClosureFkError:
                break
        pts.append(q[iq])
    return np.array(pts)


def foot_jacobian(clm: ClosedLoopModel, q: np.ndarray, frame: str, actuators: list[str]) -> np.ndarray:
    """6 x k Jacobian of ``frame`` (LOCAL_WORLD_ALIGNED) w.r.t. the named actuators, closures included."""
    m, d = clm.model, clm.data
    pin.computeJointJacobians(m, d, q)
    pin.updateFramePlacements(m, d)
    J = pin.getFrameJacobian(m, d, m.getFrameId(frame), LWA)
    J_m = clm.mapping_jacobian(q)
    idx = [clm.actuated_joint_names.index(a) for a in actuators]
    return J[:, clm.idx_v_a[idx]] + J[:, clm.idx_v_u] @ J_m[:, idx]


def manipulability_map(clm: ClosedLoopModel, q_nominal: np.ndarray, leg: LegSpec, levels: int = 5,
                       progress: Callable | None = None) -> dict:
    """Foot positions and normalised manipulability ``sqrt(det(J J^T)) / max`` (Fig. 5).

    The hip pitch/roll and knee actuators are sampled on a grid; ``J`` is the linear part of the
    sole Jacobian w.r.t. those three actuators.
    """
    acts = leg.actuators["hip_pitch_roll"] + [leg.knee_actuator]
    pos, w = [], []
    for q in _grid_configurations(clm, q_nominal, acts, levels, progress, "manipulability"):
        if q is None:
            continue
        J = foot_jacobian(clm, q, leg.sole_frame, acts)[:3]
        w.append(float(np.sqrt(max(np.linalg.det(J @ J.T), 0.0))))
        pos.append(clm.data.oMf[clm.model.getFrameId(leg.sole_frame)].translation.copy())
    w_a = np.array(w)
    return {"positions": np.array(pos), "manipulability": w_a / w_a.max() if w else w_a}


def transmission_sweep(clm: ClosedLoopModel, q_nominal: np.ndarray, leg: LegSpec, samples: int = 41,
                       max_force_n: float | None = None) -> dict:
    """Sweep the leg-length actuator over its stroke with the other actuators fixed.

    Returns the stroke values [m], the foot-orientation deviation w.r.t. the base [deg] (angle of
    ``R_base_sole(s) R_base_sole(s_min)^T``) over the full stroke, and, along the squat from the
    nominal stroke to full compression (Fig. 15), the sole normal force [N] produced by the
    actuator's maximum force, by virtual work: ``F_z = F_max / |dz_sole / ds|``. The peak position
    is reported as a fraction of that squat (0: nominal, 1: fully compressed).
    """
    idx, lo, hi = _limits(clm, [leg.knee_actuator])
    s_nominal = float(q_nominal[clm.idx_q_a[idx[0]]])
    strokes = np.linspace(lo[0], hi[0], samples)
    theta = q_nominal[clm.idx_q_a].copy()
    m, d = clm.model, clm.data
    sole, base = m.getFrameId(leg.sole_frame), m.getFrameId(leg.base_frame)
    if max_force_n is None:
        max_force_n = float(m.effortLimit[clm.idx_v_a[idx[0]]])
    rots, fz = [], []
    q = q_nominal.copy()
    for s in strokes:
        theta[idx[0]] = s
        q, _ = clm.closure_fk(theta, q, max_iter=100)
        pin.framesForwardKinematics(m, d, q)
        rots.append(d.oMf[base].rotation.T @ d.oMf[sole].rotation)
        Jz = foot_jacobian(clm, q, leg.sole_frame, [leg.knee_actuator])[2, 0]
        fz.append(max_force_n / max(abs(Jz), 1e-9))
    R0 = rots[0]
    dev = np.degrees([np.linalg.norm(pin.log3(R @ R0.T)) for R in rots])
    fz_a = np.array(fz)
    squat = strokes >= s_nominal - 1e-12
    peak = int(np.argmax(np.where(squat, fz_a, -np.inf)))
    span = max(hi[0] - s_nominal, 1e-12)
    return {"stroke_m": strokes, "orientation_deviation_deg": dev, "sole_force_n": fz_a,
            "nominal_stroke_m": s_nominal, "squat_mask": squat,
            "max_orientation_deviation_deg": float(dev.max()) if dev.size else 0.0,
            "sole_force_peak_stroke_fraction": float((strokes[peak] - s_nominal) / span)}
