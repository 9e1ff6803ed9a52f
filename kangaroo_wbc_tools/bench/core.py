"""Benchmarks of the closed-linkage core on one model, with pinocchio scale references.

Per model, on the states of one smooth actuator trajectory (:mod:`kangaroo_wbc_tools.bench.workload`):

* ``closure_fk`` — :meth:`ClosedLoopModel.closure_fk` (``theta_a -> theta_u``, warm start: the
  previous solution, ``tol = 1e-12``), the package's one closure FK;
* ``error_and_jacobian``, ``mapping_jacobian`` — one ``(e_l, J_l)`` sweep and ``J_m`` (eq. (7));
* ``rnea``, ``crba`` — pinocchio on the spanning tree (the scale: what the C++ costs);
* ``inverse_dynamics``, ``projected_dynamics`` — ours (eq. (19), App. B);
* ``pin_constraint_dynamics`` — pinocchio's proximal constrained forward dynamics with the same
  loops as 3D/6D rigid constraints, fed with our inverse-dynamics torques: the accelerations it
  returns must be the ones we asked for (``max_diff_accel``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from kangaroo_wbc.model import ClosedLoopModel, inverse_dynamics, projected_dynamics
from kangaroo_wbc.model.dynamics import rigid_constraint_models
from kangaroo_wbc_tools.bench.timing import Timing, time_calls
from kangaroo_wbc_tools.bench.workload import Trajectory

#: Convergence tolerance of the closure FK in the benchmark [m, rad] (inf-norm of ``e_l``).
FK_TOL = 1e-12


@dataclass
class CoreResult:
    """Timings [ms] and checks of one model."""

    timings: dict[str, Timing] = field(default_factory=dict)
    extra: dict[str, dict] = field(default_factory=dict)
    fk_outputs: list[np.ndarray] = field(default_factory=list)

    def as_dict(self) -> dict:
        out: dict = {}
        for k, t in self.timings.items():
            out[f"{k}_ms"] = t.as_dict()
            out[f"{k}_ms"].update(self.extra.get(k, {}))
        return out


def bench_model(clm: ClosedLoopModel, traj: Trajectory, states: list[np.ndarray], warmup: int) -> CoreResult:
    """Run the core benchmarks of one model along ``traj`` (``states``: its closed configurations)."""
    res = CoreResult()
    m = clm.model
    data = m.createData()
    thetas = list(traj.theta_a)

    # --- closure FK (core), warm-started along the trajectory from the reference configuration
    clm.forget_warm_start()  # start from q_ref, as after construction
    iters: list[int] = []

    def fk(theta):
        q, info = clm.closure_fk(theta, tol=FK_TOL)
        iters.append(info.iterations)
        return q

    res.timings["closure_fk"], qs = time_calls(fk, thetas, warmup)
    res.fk_outputs = qs
    resid = max(float(np.max(np.abs(clm.closure_error(q)))) for q in qs[:: max(1, len(qs) // 50)]) if clm.n_c else 0.0
    res.extra["closure_fk"] = {"newton_iterations_mean": round(float(np.mean(iters[warmup:])), 3),
                               "tol": FK_TOL, "residual_max_sampled": float(f"{resid:.3g}")}

    # --- kinematics sweeps at closed states
    res.timings["error_and_jacobian"], _ = time_calls(clm.error_and_jacobian, states, warmup, keep_outputs=False)
    res.timings["mapping_jacobian"], _ = time_calls(clm.mapping_jacobian, states, warmup, keep_outputs=False)

    # --- dynamics: consistent velocities and actuator accelerations along the trajectory
    vs = [clm.complete_velocity(q, vd) for q, vd in zip(states, traj.theta_dot_a)]
    samples = list(zip(states, vs, traj.theta_ddot_a))
    a_zero = np.zeros(m.nv)  # RNEA's cost does not depend on the values
    res.timings["rnea"], _ = time_calls(lambda s: pin.rnea(m, data, s[0], s[1], a_zero), samples, warmup,
                                        keep_outputs=False)
    res.timings["crba"], _ = time_calls(lambda s: pin.crba(m, data, s[0]), samples, warmup, keep_outputs=False)
    res.timings["inverse_dynamics"], ids = time_calls(lambda s: inverse_dynamics(clm, s[0], s[1], s[2]), samples,
                                                      warmup)
    res.timings["projected_dynamics"], _ = time_calls(lambda s: projected_dynamics(clm, s[0], s[1]), samples,
                                                      warmup, keep_outputs=False)

    # --- pinocchio's proximal constrained forward dynamics, fed with our ID torques
    try:
        constraints = rigid_constraint_models(clm)
    except ValueError:  # loops pinocchio's constraints cannot express: no comparison
        constraints = None
    if constraints is not None:
        cms = pin.StdVec_RigidConstraintModel()
        cds = pin.StdVec_RigidConstraintData()
        for cm in constraints:
            cms.append(cm)
            cds.append(cm.createData())
        pdata = m.createData()
        pin.initConstraintDynamics(m, pdata, cms, cds)
        prox = pin.ProximalSettings(1e-12, 1e-10, 50)
        taus = []
        for r in ids:
            tau = np.zeros(m.nv)
            tau[clm.idx_v_a] = r.tau_a
            taus.append(tau)
        fd_in = [(s[0], s[1], t) for s, t in zip(samples[warmup:], taus)]
        w = min(warmup, len(fd_in))
        res.timings["pin_constraint_dynamics"], accs = time_calls(
            lambda x: pin.constraintDynamics(m, pdata, x[0], x[1], x[2], cms, cds, prox).copy(), fd_in[:w] + fd_in, w)
        keep = np.sort(np.concatenate([clm.idx_v_a, clm.idx_v_u]))
        d_acc = max(float(np.max(np.abs((a - r.a)[keep]))) for a, r in zip(accs, ids))
        scale = max(float(np.max(np.abs(r.a))) for r in ids)
        extra = {"max_diff_accel_vs_ours": float(f"{d_acc:.3g}"), "accel_scale": float(f"{scale:.3g}"),
                 "what": "proximal (mu=1e-10, eps=1e-12) constrained FD; ours: inverse_dynamics -> tau_a"}
        if clm.locked_joint_names:
            extra["note"] = (f"joints {clm.locked_joint_names} are locked in our model (idle DOF) but free in "
                             "pinocchio's; accelerations differ by that DOF's motion")
        res.extra["pin_constraint_dynamics"] = extra
    return res
