r"""Exact maps between a closed chain's actuators and a set of its serial-equivalent joints.

A robot driver may expose a closed-chain robot as a serial one: one joint per output degree of
freedom (for a biped leg: hip yaw, roll, pitch, knee, ankle pitch, roll), positions and velocities
in, joint torques out. The closed-chain model gives the exact relation of those joints to the
actuators. With ``y`` the positions of the chosen passive output joints (as many as actuators) and
``S`` their selection among the passive joints, the output Jacobian is

.. math::

    \dot y = A\, \dot\theta_a, \qquad A = S\, J_m = -S\, J_{lu}^{-1} J_{la}

(eq. (7) and (21) of the Kangaroo paper). :class:`SerialJointMap` gives both directions:

* **state in**, :meth:`SerialJointMap.to_actuators`: closure kinematics with the outputs held,
  ``e_l(q) = 0`` solved over the actuators and the other passive joints (square: each output
  replaces an actuator as a known), then ``\dot\theta_a = A^{-1} \dot y``;
* **state out**, :meth:`SerialJointMap.to_serial`: closure forward kinematics ``q(\theta_a)``
  (eq. (2)), ``y = S q``, ``\dot y = A \dot\theta_a``;
* **forces**, :meth:`SerialJointMap.serial_torques`: the output-joint torques ``\tau_y`` that do the
  same virtual work as the actuator forces ``\tau_a`` for every motion of the closed chain,
  ``\tau_y^T \dot y = \tau_a^T \dot\theta_a`` for all ``\dot\theta_a``, i.e.

  .. math::  A^T \tau_y = \tau_a, \qquad \tau_y = A^{-T} \tau_a

  (the inverse torque map, eq. (23), exact when ``A`` is square and invertible);
  :meth:`SerialJointMap.actuator_forces` is its inverse ``\tau_a = A^T \tau_y`` (eq. (18) with
  ``\tau_u = S^T \tau_y``).

**Computation** (1 kHz): the closure terms come from the model's compiled kernel
(:mod:`kangaroo_wbc.model.closure_kernel`, ``e_l`` and ``J_l`` in one call). :meth:`to_actuators`
is Newton on the unknowns ``x`` (the actuators and the non-output passive joints) with the outputs
held, ``J_x \Delta x = -e_l`` solved by the block LU of ``J_x`` (:mod:`kangaroo_wbc.model.block_lu`:
with the outputs held each leg splits into sub-mechanisms of 2 to 8 unknowns), the step applied on
the manifold by the compiled :func:`~kangaroo_wbc.model.closure_kernel.integrate_passive`; at the
solution the same factors give ``A^{-1} = -[J_x^{-1} J_y]_a`` (``J_y``: the outputs' columns), so
the velocities and the torque map at that configuration cost one block solve. Where this Newton
does not converge (a far target, a singular block) the damped Newton of
:meth:`ClosedLoopModel.newton` takes over. :meth:`output_jacobian` is ``J_m`` of the block LU of
``J_lu`` (one compiled pass).

Everything is on the closed-chain model itself: no serial approximation of the dynamics is
involved (a serial twin's lumped inertias do not enter any of these maps). ``A`` is singular where
the outputs do not determine the mechanism (an output at a dead point of its linkage); the maps
then raise :class:`~kangaroo_wbc.errors.ModelError` rather than return huge numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.errors import ClosureFkError, InputError, JointNotFound, ModelError, suggest
from kangaroo_wbc.model.block_lu import factor_blocks, solve_blocks
from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel
from kangaroo_wbc.model.closure_kernel import (
    PassiveBuffers,
    closure_error_jacobian,
    integrate_passive,
)
from kangaroo_wbc.model.compiled import compiled

#: ``A`` counts as singular above this condition number (1-norm): the torques of an output that
#: barely moves the actuators would be amplified beyond any actuator's resolution.
MAX_CONDITION = 1e8
#: Status of :func:`held_newton`.
HELD_CONVERGED, HELD_STALLED, HELD_SINGULAR = 0, 1, 2


@compiled
def held_newton(q, tree, loops, unknowns, factors, cols_in_J, e_l, J_l, tol, max_iter):
    """Newton on the closure with the serial outputs held (compiled; :meth:`SerialJointMap.to_actuators`):
    ``J_x dx = -e_l`` over the unknowns (``unknowns``: their integration tables and work buffers, a
    :data:`~kangaroo_wbc.model.closure_kernel.PassiveBuffers`), ``J_x`` factorised by blocks
    (``factors``, its columns ``cols_in_J`` in ``J_l``), the step integrated on the manifold; ``q``
    updated in place. Returns ``(status, iterations, residual)``: converged (``e_l``, ``J_l`` are
    then those of ``q``), stalled (a step did not shrink the inf-norm residual, or ``max_iter``
    steps) or singular."""
    rows, sizes, LU, piv = factors.rows, factors.sizes, factors.LU, factors.piv
    n_x = unknowns.iu.shape[0]
    B = np.empty((e_l.shape[0], 1))
    X = np.empty((n_x, 1))
    step = np.empty(n_x)
    previous = np.inf
    for it in range(max_iter + 1):
        closure_error_jacobian(q, tree, loops, True, e_l, J_l)
        err = 0.0
        for r in range(e_l.shape[0]):
            err = max(err, abs(e_l[r]))
        if err <= tol:
            return HELD_CONVERGED, it, err
        if it == max_iter or not err < previous:
            return HELD_STALLED, it, err
        if not factor_blocks(J_l, rows, cols_in_J, sizes, LU, piv):
            return HELD_SINGULAR, it, err
        previous = err
        for r in range(e_l.shape[0]):
            B[r, 0] = e_l[r]
        solve_blocks(LU, piv, rows, factors.cols, sizes, B, X, False)
        for i in range(n_x):
            step[i] = -X[i, 0]
        integrate_passive(q, step, unknowns.iq, unknowns.iu, unknowns.kind, unknowns.q)
        for i in range(q.shape[0]):
            q[i] = unknowns.q[i]
    return HELD_STALLED, max_iter, previous


@dataclass
class ChainState:
    """A closed configuration and the actuator and serial-joint states it holds.

    ``q``: the full closed configuration (base coordinates as in the guess it was solved from);
    ``theta_a`` [m or rad] / ``theta_dot_a`` [m/s or rad/s]: actuators, in the model's
    ``actuated_joint_names`` order; ``y`` / ``y_dot``: the output joints, in the map's
    ``output_joint_names`` order [rad or m, per joint type]; ``A``: the output Jacobian at ``q``
    (``y_dot = A theta_dot_a``), for the force maps at the same configuration.
    """

    q: np.ndarray
    theta_a: np.ndarray
    theta_dot_a: np.ndarray
    y: np.ndarray
    y_dot: np.ndarray
    A: np.ndarray | None = None


class SerialJointMap:
    """Exact state and force maps between actuators and serial-equivalent output joints.

    Args:
        clm: the closed-chain model.
        output_joint_names: passive 1-DOF joints of ``clm``, as many as actuators, in the order
            of the serial joint vector ``y``.
        max_step_rad: continuation step of :meth:`to_actuators` [rad or m]: outputs farther than
            this from the guess are reached in equal steps, each solved from the previous, so the
            solution stays on the assembly branch of the guess (the Kangaroo's ankle chains have a
            second branch that 0.15 rad steps from the standing pose reach in 8 of 200 sampled
            states, 0.05 rad steps in none).

    Raises:
        JointNotFound: a name that is not a passive joint of ``clm`` (the message lists close ones).
        ModelError: duplicated names, a joint with more than one degree of freedom, or a count
            different from the number of actuators.
    """

    def __init__(self, clm: ClosedLoopModel, output_joint_names: Sequence[str], max_step_rad: float = 0.05) -> None:
        names = list(output_joint_names)
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ModelError(f"serial joints: duplicated names {dup}")
        m = clm.model
        for n in names:
            if n not in clm.passive_joint_names:
                why = "an actuated joint" if n in clm.actuated_joint_names else "not a joint of the model"
                raise JointNotFound(f"serial joint {n!r} is {why}; serial joints are passive joints."
                                    + suggest(n, clm.passive_joint_names))
            j = m.joints[m.getJointId(n)]
            if j.nq != 1 or j.nv != 1:
                raise ModelError(f"serial joint {n!r} must have one degree of freedom (nq={j.nq}, nv={j.nv})")
        if len(names) != clm.n_a:
            raise ModelError(f"serial joints: {len(names)} given, the model has {clm.n_a} actuators; the "
                             f"exact maps need one serial joint per actuator")
        if not max_step_rad > 0.0:
            raise InputError(f"max_step_rad must be positive, got {max_step_rad!r}")
        self.clm = clm
        self.output_joint_names = names
        self.max_step_rad = float(max_step_rad)
        ids = [m.getJointId(n) for n in names]
        self.idx_q_out = np.array([m.joints[j].idx_q for j in ids], dtype=int)
        self.idx_v_out = np.array([m.joints[j].idx_v for j in ids], dtype=int)
        passive_pos = {int(v): k for k, v in enumerate(clm.idx_v_u)}
        #: columns of the outputs in the passive block (``S`` as indices)
        self.idx_out_in_u = np.array([passive_pos[int(v)] for v in self.idx_v_out], dtype=int)
        out = set(self.idx_v_out.tolist())
        #: unknowns of :meth:`to_actuators`: actuators and the passive joints that are not outputs
        self.idx_v_unknown = np.array(sorted(set(clm.idx_v_a.tolist())
                                             | {int(i) for i in clm.idx_v_u if int(i) not in out}), dtype=int)
        limited = [n for n in clm.actuated_joint_names + clm.passive_joint_names if m.joints[m.getJointId(n)].nq == 1]
        self._limit_names = limited
        self._limit_idx_q = np.array([m.joints[m.getJointId(n)].idx_q for n in limited], dtype=int)
        self._limit_lo = m.lowerPositionLimit[self._limit_idx_q].copy()
        self._limit_hi = m.upperPositionLimit[self._limit_idx_q].copy()
        self._q_last: np.ndarray | None = None
        # the compiled path (module docstring): the kernel, the unknowns' integration tables and
        # block LU, the actuators' rows among the unknowns, and the block LU of J_lu
        self._kernel = clm.kernel
        tables = self._kernel.integration_tables(m, self.idx_v_unknown) if self._kernel is not None else None
        self._x_lu = clm.closure_block_lu(self.idx_v_unknown) if tables is not None else None
        self._x_buffers = None
        if self._x_lu is not None and tables is not None:
            iq, iu, kind = tables
            self._x_buffers = PassiveBuffers.make(iq=iq, iu=iu, kind=kind, e=np.zeros(clm.n_c), q=np.zeros(m.nq))
            #: the block columns of J_x as columns of J_l (no copy of J_x)
            self._x_cols_in_J = np.ascontiguousarray(self.idx_v_unknown[self._x_lu.cols], dtype=np.int64)
            self._x_out = np.ascontiguousarray(self.idx_v_out, dtype=np.int64)
            self._held_newton(clm.q_ref.copy(), 0.0, 0)  # compiled (or loaded) now
        unknown_pos = {int(v): i for i, v in enumerate(self.idx_v_unknown)}
        self._a_in_x = np.array([unknown_pos[int(v)] for v in clm.idx_v_a], dtype=int)
        self._jlu = clm.jlu_block_lu() if self._kernel is not None else None
        self._jm_out = np.zeros((m.nv, clm.n_a))  # factor_and_map's copy of J_m (not read)
        #: (q, A^-1) of the last solution: the torque maps at that configuration reuse it
        self._ainv_at: tuple[np.ndarray, tuple[np.ndarray, np.ndarray]] | None = None

    # ------------------------------------------------------------------ Jacobian
    def output_jacobian(self, q: np.ndarray) -> np.ndarray:
        """``A = S J_m`` (n_out, n_a) at the closed configuration ``q``: ``y_dot = A theta_dot_a``.

        Raises:
            ModelError: ``J_lu`` singular at ``q``.
        """
        clm = self.clm
        if self._jlu is None:
            return clm.mapping_jacobian(q)[self.idx_out_in_u]
        _, J = self._kernel.error_and_jacobian(q)
        J_m = self._jlu.factor_and_map(J, clm.idx_v_u, clm.idx_v_a, self._jm_out, 0)
        if J_m is None:
            raise ModelError("J_lu is singular: the mechanism is at a kinematic singularity")
        return J_m[self.idx_out_in_u]

    def _maps_at(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(A, A^{-1})`` at ``q`` (``theta_dot_a = A^{-1} y_dot``), from the block LU of the
        unknowns' columns; the last solution's if ``q`` is it.

        Raises:
            ModelError: the outputs do not determine the actuators at ``q`` (``J_x`` singular, or
                ``A`` ill-conditioned).
        """
        last = self._ainv_at
        if last is not None and np.array_equal(last[0], q):
            return last[1]
        if self._x_lu is None:
            A = self._checked(self.output_jacobian(q))
            maps = (A, np.linalg.inv(A))
        else:
            _, J = self._kernel.error_and_jacobian(q)
            maps = self._maps_from(J)
        self._ainv_at = (q.copy(), maps)
        return maps

    def _maps_from(self, J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(A, A^{-1})`` with ``A^{-1} = -[J_x^{-1} J_y]_a``, from the closure Jacobian ``J`` (all
        columns) at a closed configuration, the condition checked (1-norm)."""
        lu = self._x_lu
        assert lu is not None
        if not factor_blocks(J, lu.rows, self._x_cols_in_J, lu.sizes, lu.LU, lu.piv):
            raise ModelError("serial map: the closure Jacobian of the actuators and the non-output passive "
                             "joints is singular: the serial joints do not determine the actuators here")
        lu.ok = True
        A_inv = -lu.solve(J[:, self._x_out])[self._a_in_x]
        if not np.isfinite(A_inv).all():
            raise ModelError("serial map: non-finite inverse output Jacobian (singular mechanism)")
        try:
            A = np.linalg.inv(A_inv)
            cond = float(np.abs(A).sum(axis=0).max() * np.abs(A_inv).sum(axis=0).max())  # 1-norms
        except np.linalg.LinAlgError:
            cond = np.inf
        if not cond <= MAX_CONDITION:
            raise ModelError(f"serial map: output Jacobian singular (condition number {cond:.3g} > "
                             f"{MAX_CONDITION:.0e}): the serial joints do not determine the actuators here")
        return A, A_inv

    def _checked(self, A: np.ndarray) -> np.ndarray:
        if not np.isfinite(A).all():
            raise ModelError("serial map: non-finite output Jacobian (the mechanism is at a singularity)")
        cond = float(np.linalg.cond(A))
        if not cond <= MAX_CONDITION:
            raise ModelError(f"serial map: output Jacobian singular (condition number {cond:.3g} > "
                             f"{MAX_CONDITION:.0e}): the serial joints do not determine the actuators here")
        return A

    # ------------------------------------------------------------------ state
    def to_serial(self, theta_a: np.ndarray, theta_dot_a: np.ndarray,
                  q_guess: np.ndarray | None = None) -> ChainState:
        """Serial joints of the actuator state: closure FK, ``y = S q``, ``y_dot = A theta_dot_a``.

        Raises:
            ClosureFkError: the actuator positions are outside the reachable set.
        """
        clm = self.clm
        theta_dot_a = clm.check_vector(theta_dot_a, clm.n_a, "actuator velocities")
        q, _ = clm.closure_fk(theta_a, self._guess(q_guess))
        A = self.output_jacobian(q)
        self._q_last = q.copy()
        self._ainv_at = None
        return ChainState(q, q[clm.idx_q_a].copy(), theta_dot_a.copy(), q[self.idx_q_out].copy(), A @ theta_dot_a, A)

    def to_actuators(self, y: np.ndarray, y_dot: np.ndarray, q_guess: np.ndarray | None = None,
                     tol: float = 1e-12, max_iter: int = 50, limit_tolerance: float = 1e-6) -> ChainState:
        """Actuator state of the serial state: ``e_l(q) = 0`` with the outputs held at ``y``,
        ``theta_dot_a = A^{-1} y_dot``.

        Newton (:meth:`ClosedLoopModel.newton`) over the actuators and the non-output passive
        joints, warm-started from ``q_guess`` (default: the last solution, else the model's
        reference), with the outputs moved from the guess's in steps of at most ``max_step_rad``.

        Raises:
            ClosureFkError: no convergence to ``tol`` [m, rad], or a solution with an actuator or a
                passive joint beyond its position limits by more than ``limit_tolerance`` [m or
                rad]: the outputs are outside the reachable set, or the solution is on another
                assembly branch (never returned as if it were the robot's state).
            ModelError: ``A`` singular at the solution.
        """
        clm = self.clm
        n = len(self.output_joint_names)
        y = clm.check_vector(y, n, "serial joint positions")
        y_dot = clm.check_vector(y_dot, n, "serial joint velocities")
        q = clm.check_configuration(self._guess(q_guess)).copy()
        start = q[self.idx_q_out].copy()
        n_steps = max(1, int(np.ceil(np.max(np.abs(y - start), initial=0.0) / self.max_step_rad)))
        J = None
        for k in range(1, n_steps + 1):
            q[self.idx_q_out] = y if k == n_steps else start + (y - start) * (k / n_steps)
            step_tol = tol if k == n_steps else max(tol, 1e-9)
            q, J, converged = self._held_newton(q, step_tol, max_iter)
            if not converged:  # the damped Newton from the guess of this step
                q[self.idx_q_out] = y if k == n_steps else start + (y - start) * (k / n_steps)
                q, info = clm.newton(q, max_iter, step_tol, unknowns=self.idx_v_unknown)
                J = None
                if not info.converged:
                    raise ClosureFkError(
                        f"serial joints {np.array2string(y, precision=4)} not reached: closure residual "
                        f"{info.residual:.3e} after {info.iterations} iterations (continuation step {k}/{n_steps}); "
                        f"outside the reachable set?")
        past = self._past_limits(q, limit_tolerance)
        if past:
            raise ClosureFkError(f"serial joints {np.array2string(y, precision=4)} are outside the reachable "
                                 f"set (or the solution is on another assembly branch): {'; '.join(past)}")
        theta = q[clm.idx_q_a]
        if J is None:
            A, A_inv = self._maps_at(q)
        else:
            A, A_inv = self._maps_from(J)
            self._ainv_at = (q.copy(), (A, A_inv))
        self._q_last = q.copy()
        return ChainState(q, theta.copy(), A_inv @ y_dot, y.copy(), y_dot.copy(), A)

    def _held_newton(self, q: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, np.ndarray | None, bool]:
        """:func:`held_newton` from ``q`` (updated in place): ``(q, J_l at q or None, converged)``
        (None, False: the caller falls back to the damped Newton)."""
        if self._x_buffers is None or self._x_lu is None:
            return q, None, False
        k, lu = self._kernel, self._x_lu
        status, _, _ = held_newton(q, k.tree, k.loops, self._x_buffers, lu.factors, self._x_cols_in_J, k.e_l, k.J_l,
                                   float(tol), int(max_iter))
        return q, (k.J_l if status == HELD_CONVERGED else None), status == HELD_CONVERGED

    def _past_limits(self, q: np.ndarray, tolerance: float) -> list[str]:
        """``"<joint> <value> not in [lo, hi]"`` for each 1-DOF joint (actuated or passive) of ``q``
        past its URDF position limits by more than ``tolerance``."""
        x = q[self._limit_idx_q]
        past = np.flatnonzero((x < self._limit_lo - tolerance) | (x > self._limit_hi + tolerance))
        return [f"{self._limit_names[i]} {x[i]:.4g} not in [{self._limit_lo[i]:.4g}, {self._limit_hi[i]:.4g}]"
                for i in past]

    def _guess(self, q_guess: np.ndarray | None) -> np.ndarray:
        if q_guess is not None:
            return q_guess
        return self._q_last if self._q_last is not None else self.clm.q_ref

    # ------------------------------------------------------------------ forces
    def serial_torques(self, q: np.ndarray, tau_a: np.ndarray) -> np.ndarray:
        """Serial-joint torques [N·m, or N for a prismatic output] doing the virtual work of the
        actuator forces ``tau_a`` [N, or N·m for a revolute actuator]: ``tau_y = A^{-T} tau_a``.

        Raises:
            InputError: ``tau_a`` of the wrong size or not finite.
            ModelError: ``A`` singular at ``q``.
        """
        tau_a = self.clm.check_vector(tau_a, self.clm.n_a, "actuator forces")
        return self._maps_at(q)[1].T @ tau_a

    def actuator_forces(self, q: np.ndarray, tau_y: np.ndarray) -> np.ndarray:
        """Actuator forces doing the virtual work of the serial torques ``tau_y``: ``tau_a = A^T tau_y``."""
        tau_y = self.clm.check_vector(tau_y, len(self.output_joint_names), "serial joint torques")
        return self._maps_at(q)[0].T @ tau_y
