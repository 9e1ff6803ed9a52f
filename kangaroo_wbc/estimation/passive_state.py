"""Passive-state estimator of a closed-linkage robot (Kangaroo paper, Section VI-A, eq. (35)-(40)).

Only the actuated joints are measured (``theta_bar_a``, ``theta_dot_bar_a``); the passive joints
``theta_u`` follow from the closures. At every tick ``k`` (1 kHz on Kangaroo):

.. math::

    \\dot\\theta_{a,k} &= \\bar{\\dot\\theta}_a + \\beta (\\bar\\theta_a - \\theta_{a,k})
        && \\text{(below eq. (38))} \\\\
    \\dot\\theta^*_{u,k+1} &= J_m(\\theta_k)\\, \\dot\\theta_{a,k} - \\alpha\\, J_{lu}(\\theta_k)^{-1} e_l(\\theta_k)
        && \\text{(38)} \\\\
    \\theta_{k+1} &= \\theta_k \\oplus dt\\, [\\dot\\theta^*_{u,k+1};\\ \\dot\\theta_{a,k}]
        && \\text{(39)-(40), } \\oplus = \\texttt{pin.integrate} \\\\
    \\dot\\theta_{k+1} &= [J_m(\\theta_k)\\, \\bar{\\dot\\theta}_a;\\ \\bar{\\dot\\theta}_a]
        && \\text{(35)-(36)}

with ``J_m = -J_lu^{-1} J_la`` (eq. (7)). Sign: ``e_l`` here is the closure error of
:meth:`ClosedLoopModel.closure_error` (current minus closed), so the correction that gives the
error dynamics ``de_l/dt = -alpha e_l`` of eq. (37) carries a minus sign (the paper writes ``+alpha``
for an error defined the other way round). Per tick the closure error then contracts by
``(1 - alpha dt)`` and the actuated tracking error by ``(1 - beta dt)``; both products must stay
in ``(0, 1]`` (the paper's "bounded by the rate of the estimation loop"): ``beta = 1000`` at 1 kHz
is dead-beat.

Cost per tick: one ``computeJointJacobians`` + frame placements at ``theta_{k+1}`` (the
"full-model update", reused by the next tick and by the floating-base estimator), the batched
closure Jacobian of :class:`ClosureKinematics`, one LU solve of ``J_lu`` with two right-hand
sides and one ``pin.integrate``. Floating-base coordinates are not integrated here: the
floating-base estimator writes them with :meth:`PassiveStateEstimator.set_base_state`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import EstimationError, InputError
from kangaroo_wbc.model.block_lu import factor_blocks, solve_blocks
from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel
from kangaroo_wbc.model.closure_kernel import closure_error_jacobian
from kangaroo_wbc.model.closure_kinematics import ClosureKinematics
from kangaroo_wbc.model.compiled import all_finite, buffers, compiled


@dataclass
class PassiveStateConfig:
    """Gains and limits of :class:`PassiveStateEstimator`.

    Attributes:
        alpha: closure-error gain ``alpha`` of eq. (37)-(38) [1/s] (paper: 1).
        beta: actuated-position gain ``beta`` of eq. (38) [1/s] (paper: 1000).
        dt_s: nominal period [s] (paper: 1e-3).
        reproject_above: closure error (inf-norm, [m] or [rad]) above which the estimate is
            re-projected onto the closures with closure FK (a recovery, counted in
            ``reprojections``); ``inf`` disables it.
        max_dt_s: a ``dt_s`` argument above this is rejected [s] (a stale input).
    """

    alpha: float = 1.0
    beta: float = 1000.0
    dt_s: float = 1e-3
    reproject_above: float = 0.05
    max_dt_s: float = 0.1

    def __post_init__(self) -> None:
        if not (self.dt_s > 0 and np.isfinite(self.dt_s)):
            raise InputError(f"PassiveStateConfig.dt_s must be > 0 [s], got {self.dt_s}")
        for name in ("alpha", "beta"):
            g = getattr(self, name)
            if not (np.isfinite(g) and 0 <= g * self.dt_s <= 1.0):
                raise InputError(f"PassiveStateConfig.{name} = {g} [1/s]: need 0 <= {name} * dt_s <= 1 "
                                 f"(dt_s = {self.dt_s} s), else the discrete correction overshoots")
        if not self.reproject_above > 0:
            raise InputError(f"PassiveStateConfig.reproject_above must be > 0, got {self.reproject_above}")
        if not self.max_dt_s >= self.dt_s:
            raise InputError(f"PassiveStateConfig.max_dt_s ({self.max_dt_s}) must be >= dt_s ({self.dt_s})")


class PassiveStateEstimator:
    """Full joint state ``(q, v)`` from actuator measurements, eq. (35)-(40).

    Args:
        clm: the closed-loop model.
        config: gains and limits.
        q0: initial configuration (default: the model's closed reference ``clm.q_ref``).
        model_data: keep :attr:`data` updated (False: see :attr:`data`).

    :attr:`q`, :attr:`q_at_sample`, :attr:`v` and :attr:`closure_error` are internal buffers,
    overwritten at the next tick (written in place, never rebound); copy them to keep them.
    """

    def __init__(self, clm: ClosedLoopModel, config: PassiveStateConfig | None = None,
                 q0: np.ndarray | None = None, model_data: bool = True) -> None:
        self.clm = clm
        self.config = config or PassiveStateConfig()
        self.model = clm.model
        self.kin = kin = ClosureKinematics(clm)
        #: pinocchio data (own, not ``clm.data``) holding the full-model update at :attr:`q` after
        #: every :meth:`update`: frame placements and joint Jacobians, reusable by other estimators.
        #: With ``model_data=False`` it is not updated when the compiled closure kernel is available
        #: (a caller that takes the full model from elsewhere, e.g. the controller's projected model).
        self.data = kin.data
        self.model_data = model_data
        nv, n_u = self.model.nv, clm.n_u
        #: estimated configuration ``theta_{k+1}`` (pinocchio order, base included if floating)
        self.q = np.zeros(self.model.nq)
        #: configuration at the time of the last measurement, ``theta_{k+1} (-) dt v_{k+1}``: :attr:`q`
        #: is a one-step prediction (eq. (39) integrates the measurement at ``t_k`` to ``t_k + dt``);
        #: this steps it back along the output velocity of eq. (35)-(36), so that the actuated entries
        #: equal the measurement (with ``beta dt = 1``) and the passive ones follow to ``O(dt^2)``.
        #: Publish this with the measurement's stamp.
        self.q_at_sample = np.zeros(self.model.nq)
        #: estimated velocity, eq. (35)-(36) (base twist as set by :meth:`set_base_state`)
        self.v = np.zeros(nv)
        #: closure error ``e_l(theta_k)`` evaluated at the last tick [m, rad]
        self.closure_error = np.zeros(clm.n_c)
        self._rhs = np.zeros((2, clm.n_c))
        self._step = np.zeros(nv)  # dt theta_dot*_{k+1}, eq. (39)-(40)
        self._step_back = np.zeros(nv)  # -dt v, base excluded: from theta_{k+1} back to the sample
        self._no_closures = np.zeros((0, 2))
        self.closure_error_norm = 0.0  # inf-norm of e_l(theta_k) [m or rad]
        self.reprojections = 0
        self.reset(clm.q_ref if q0 is None else q0)
        blu = kin.block_lu
        #: the one-call tick (:func:`_passive_tick`: the compiled closure kernel and a block LU of
        #: ``J_lu``), else the step-by-step path with the closure terms of :class:`ClosureKinematics`
        self._fused = bool(kin.kernel is not None and blu is not None and clm.n_c)
        ints = np.zeros((0, 0), dtype=np.int64)
        no_lu = dict(rows=ints, cols=ints, sizes=np.zeros(0, dtype=np.int64), LU=np.zeros((0, 0, 0)), piv=ints)
        arrays = dict(q=self.q, v=self.v, e=self.closure_error, idx_q_a=clm.idx_q_a, idx_v_a=clm.idx_v_a,
                      idx_v_u=clm.idx_v_u, idx_v_base=clm.idx_v_base, theta_dot_a_k=np.zeros(clm.n_a),
                      rhs=self._rhs, B=np.zeros((n_u, 2)), X=np.zeros((n_u, 2)), step=self._step,
                      step_back=self._step_back, **({k: getattr(blu, k) for k in no_lu} if self._fused else no_lu))
        #: the arrays of the compiled steps (:data:`PassiveStateBuffers`)
        self._buffers = PassiveStateBuffers.make(**arrays)
        # compile (or load) the kernels now, not in a tick: one call each on scratch copies
        scratch = PassiveStateBuffers.make(**{k: a.copy() for k, a in arrays.items()})
        e, _, J_la = kin.evaluate()
        z = np.zeros(clm.n_a)
        _correction_rhs(scratch, z, z, 1.0, 1.0, e, J_la)
        _velocities(scratch, np.zeros((n_u, 2)), z, 1e-3)
        if self._fused:  # on the model's reference configuration (the closure terms there, as evaluate() wrote)
            kernel = kin.kernel
            assert kernel is not None  # _fused implies the compiled kernel
            _passive_tick(scratch, kernel.tree, kernel.loops, True, True, z, z, 1.0, 1.0, 1e-3)

    def reset(self, q0: np.ndarray, v0: np.ndarray | None = None) -> None:
        """Restart from ``q0`` (e.g. the calibrated configuration) with velocity ``v0`` (default 0)."""
        q0 = self.clm.check_configuration(q0)
        self.q[:] = q0
        self.q_at_sample[:] = q0
        self.v[:] = 0.0 if v0 is None else np.asarray(v0, dtype=float)
        self.kin.update(self.q)

    def set_base_state(self, q_base: np.ndarray, v_base: np.ndarray | None = None) -> None:
        """Write the floating-base pose ``[p (3) [m], quat x,y,z,w (4)]`` and twist
        ``[v (3) [m/s], omega (3) [rad/s]]`` (base frame, pinocchio's free-flyer convention).

        Takes effect in the model data at the next full-model update (next :meth:`update`).
        """
        if not self.clm.floating_base:
            raise InputError("set_base_state: the model has a fixed base")
        self.q[:7] = q_base
        if v_base is not None:
            self.v[self.clm.idx_v_base] = v_base

    # ------------------------------------------------------------------ tick
    def update(self, theta_a: np.ndarray, theta_dot_a: np.ndarray, dt_s: float | None = None) -> None:
        """One estimator tick, eq. (35)-(40).

        Args:
            theta_a: measured (calibrated) actuator positions ``theta_bar_a`` [m or rad].
            theta_dot_a: measured actuator velocities ``theta_dot_bar_a`` [m/s or rad/s].
            dt_s: time since the previous tick [s] (default: the nominal ``dt_s``).

        Raises:
            EstimationError: non-finite or wrongly sized input, bad ``dt_s``, or ``J_lu``
                singular; the state is left unchanged.
        """
        cfg, kin = self.config, self.kin
        n_a = self.clm.n_a
        theta_a = np.ascontiguousarray(theta_a, dtype=float)  # one compiled signature
        theta_dot_a = np.ascontiguousarray(theta_dot_a, dtype=float)
        if theta_a.shape != (n_a,) or theta_dot_a.shape != (n_a,):
            raise EstimationError(f"actuator measurements have shapes {theta_a.shape}, {theta_dot_a.shape}; "
                                  f"expected ({n_a},)")
        if not all_finite(theta_a, theta_dot_a):
            raise EstimationError("actuator measurements contain non-finite values")
        dt = cfg.dt_s if dt_s is None else float(dt_s)
        if not 0.0 < dt <= cfg.max_dt_s:
            raise EstimationError(f"dt_s = {dt} s outside (0, {cfg.max_dt_s}]")
        alpha = min(cfg.alpha, 1.0 / dt)
        beta = min(cfg.beta, 1.0 / dt)
        buf, q = self._buffers, self.q
        if self._fused:  # eq. (35)-(40) but the integration in one compiled call
            # what another user (the wrench model terms) evaluated or factorised at theta_k is reused
            kernel = kin.kernel
            assert kernel is not None  # _fused implies the compiled kernel
            ok, self.closure_error_norm = _passive_tick(buf, kernel.tree, kernel.loops, not kin.evaluated,
                                                        not kin.factorised, theta_a, theta_dot_a, alpha, beta, dt)
            kin.mark_evaluated(bool(ok))  # e_l, J_l at theta_k; the factors of J_lu too if it is regular
        else:  # the same steps with the closure terms and the LU of ClosureKinematics
            e, _, J_la = kin.evaluate()  # e_l, J_lu, J_la at theta_k, eq. (2), (5)
            self.closure_error_norm = _correction_rhs(buf, theta_a, theta_dot_a, alpha, beta, e, J_la)
            # J_lu^{-1} [right-hand sides of eq. (38), (35)]
            sol = kin.solve(self._rhs.T) if e.size else self._no_closures
            ok = sol is not None and _velocities(buf, np.ascontiguousarray(sol), theta_dot_a, dt)
        if not ok:
            raise EstimationError("J_lu is singular: the estimate is at a kinematic singularity")
        q[:] = pin.integrate(self.model, q, self._step)  # eq. (39)-(40)
        if self.closure_error_norm > cfg.reproject_above:
            self._reproject()
        self.q_at_sample[:] = pin.integrate(self.model, q, self._step_back)
        kin.update(q, self.model_data)  # full-model update at theta_{k+1}

    def _reproject(self) -> None:
        """Closure FK from the current estimate (recovery from a large disturbance)."""
        q_fk, info = self.clm.closure_fk(self.q[self.clm.idx_q_a], self.q, raise_on_failure=False, max_iter=50)
        if info.converged:
            self.q[:] = q_fk
            self.reprojections += 1


#: The arrays of :func:`_passive_tick` (the estimator's, written in place): the state ``q``, ``v``,
#: the last ``e_l`` (``e``), the index tables, the work arrays of the tick (``theta_dot_a_k``, the
#: right-hand sides ``rhs`` (2, n_c), ``B``, ``X`` (n_u, 2), ``step = dt theta_dot*_{k+1}``,
#: ``step_back``) and the block LU of ``J_lu`` (``rows`` ... ``piv``, the estimator's
#: :class:`~kangaroo_wbc.model.block_lu.BlockLU`; empty without one).
PassiveStateBuffers = buffers("PassiveStateBuffers", (
    "q", "v", "e", "idx_q_a", "idx_v_a", "idx_v_u", "idx_v_base", "theta_dot_a_k", "rhs", "rows", "cols", "sizes",
    "LU", "piv", "B", "X", "step", "step_back"))


@compiled
def _passive_tick(buf, tree, loops, evaluate, factor, theta_a, theta_dot_a, alpha, beta, dt):
    """One tick's compiled part, eq. (35)-(40) but the integration: ``e_l``, ``J_l = [J_lu, J_la]`` at
    ``theta_k`` (unless ``evaluate`` is False: ``loops`` holds them), the right-hand sides, the
    block LU of ``J_lu`` (unless ``factor`` is False: ``buf`` holds it), one solve for both and the
    velocities. Returns ``(ok, inf-norm of e_l)``; not ok (a zero pivot, or factors or a solution
    not finite: checked on the solution): nothing written after the right-hand sides."""
    e_l, J_l, rhs, B, X = loops.e_l, loops.J_l, buf.rhs, buf.B, buf.X
    n_u = X.shape[0]
    if evaluate:  # e_l(theta_k) and J_l(theta_k), eq. (2), (5)
        closure_error_jacobian(buf.q, tree, loops, True, e_l, J_l)
    # theta_dot*_a,k (below eq. (38)); J_la theta_dot*_a,k + alpha e_l (eq. (38)), J_la theta_dot_bar_a (eq. (35))
    norm = _correction_rhs(buf, theta_a, theta_dot_a, alpha, beta, e_l, J_l[:, n_u:])
    if factor and not factor_blocks(J_l[:, :n_u], buf.rows, buf.cols, buf.sizes, buf.LU, buf.piv):
        return False, norm
    for r in range(n_u):
        B[r, 0] = rhs[0, r]
        B[r, 1] = rhs[1, r]
    solve_blocks(buf.LU, buf.piv, buf.rows, buf.cols, buf.sizes, B, X, False)  # J_lu^{-1} B
    return _velocities(buf, X, theta_dot_a, dt), norm  # eq. (35)-(36), (38)-(40)


@compiled
def _correction_rhs(buf, theta_a, theta_dot_a, alpha, beta, e, J_la):
    """Before the ``J_lu`` solve of a tick: ``theta_dot*_a,k = beta (theta_bar_a - theta_a,k) +
    theta_dot_bar_a`` (below eq. (38)), the right-hand sides ``rhs[0] = J_la theta_dot*_a,k + alpha
    e_l`` (eq. (38); the error dynamics of eq. (37)) and ``rhs[1] = J_la theta_dot_bar_a`` (eq. (35)),
    ``buf.e = e_l``; returns the inf-norm of ``e_l`` (NaN if it holds one)."""
    q, idx_q_a, e_out, theta_dot_a_k, rhs = buf.q, buf.idx_q_a, buf.e, buf.theta_dot_a_k, buf.rhs
    n_a = theta_a.shape[0]
    for i in range(n_a):  # below eq. (38)
        theta_dot_a_k[i] = (theta_a[i] - q[idx_q_a[i]]) * beta + theta_dot_a[i]
    norm = 0.0
    for r in range(e.shape[0]):
        er = e[r]
        e_out[r] = er
        a = abs(er)
        if a > norm or a != a:
            norm = a if norm == norm else norm
        s0 = 0.0
        s1 = 0.0
        for j in range(n_a):
            s0 += J_la[r, j] * theta_dot_a_k[j]
            s1 += J_la[r, j] * theta_dot_a[j]
        rhs[0, r] = s0 + alpha * er  # eq. (38), with de_l/dt = -alpha e_l of eq. (37)
        rhs[1, r] = s1  # eq. (35)
    return norm


@compiled
def _velocities(buf, sol, theta_dot_a, dt):
    """After the solve (``sol = J_lu^{-1} [rhs[0], rhs[1]]``, (n_u, 2)): the passive velocities
    ``theta_dot*_u,k+1 = -sol[:, 0]`` (eq. (38)) and the step ``dt theta_dot*_{k+1}`` of eq. (39)-(40)
    into ``buf.step``; the velocity of eq. (35)-(36) into ``buf.v`` (base entries kept) and
    ``step_back = -dt v`` without the base. False, with nothing written, if ``sol`` is not finite."""
    step, v, step_back, theta_dot_a_k = buf.step, buf.v, buf.step_back, buf.theta_dot_a_k
    idx_v_a, idx_v_u, idx_v_base = buf.idx_v_a, buf.idx_v_u, buf.idx_v_base
    for i in range(sol.shape[0]):
        if not (math.isfinite(sol[i, 0]) and math.isfinite(sol[i, 1])):
            return False
    for i in range(step.shape[0]):
        step[i] = 0.0
    for i in range(idx_v_a.shape[0]):  # actuated: theta_dot*_a,k (eq. (39)-(40)), theta_dot_bar_a (eq. (36))
        step[idx_v_a[i]] = theta_dot_a_k[i] * dt
        v[idx_v_a[i]] = theta_dot_a[i]
    for i in range(idx_v_u.shape[0]):  # passive: theta_dot*_u,k+1 (eq. (38)), J_m theta_dot_bar_a (eq. (35))
        step[idx_v_u[i]] = -sol[i, 0] * dt
        v[idx_v_u[i]] = -sol[i, 1]
    for i in range(v.shape[0]):
        step_back[i] = v[i] * -dt
    for i in range(idx_v_base.shape[0]):
        step_back[idx_v_base[i]] = 0.0
    return True


__all__ = ["PassiveStateConfig", "PassiveStateEstimator"]
