"""Closing the loops: closure forward kinematics, damped Newton and assembly (Kangaroo paper, eq. (2), (5)).

* :class:`ClosureFkSolver` — ``theta_a -> theta_u`` at 1 kHz: chord iterations in compiled code with
  ``J_lu^{-1}`` kept between calls, a warm start from the last solution and continuation for far
  targets; damped Newton where the chord iteration cannot finish.
* :func:`newton` — damped Newton on ``e_l = 0`` over chosen velocity indices, a fresh Jacobian per
  step (the reference is closed with it, the serial twin solves its outputs-held closure with it).
* :func:`assemble_loops` — closing the loops near a pose by moving every joint (a reference pose
  that is not assembled).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin
import scipy.linalg

from kangaroo_wbc.errors import ClosureFkError, InputError
from kangaroo_wbc.model.configuration import check_vector
from kangaroo_wbc.model.constraint_rows import ConstraintRows

_getrf, _getrs = scipy.linalg.lapack.dgetrf, scipy.linalg.lapack.dgetrs

#: A chord step (reused ``J_lu^{-1}``) is kept only if it shrinks the residual at least this much.
CHORD_CONTRACTION = 0.1

#: Newton solves by least squares when an LU pivot of ``J_lu`` is below this (near-singular).
SINGULAR_PIVOT = 1e-14

#: ``q -> (e_l, J_l)``: the closure error and its Jacobian at a configuration.
ErrorAndJacobian = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass
class ClosureFkInfo:
    """Result of :meth:`~kangaroo_wbc.model.closed_loop_model.ClosedLoopModel.closure_fk`."""

    iterations: int
    residual: float
    converged: bool


def newton(model: pin.Model, error_and_jacobian: ErrorAndJacobian, q: np.ndarray, unknowns: np.ndarray,
           max_iter: int, tol: float, least_squares: bool = False) -> tuple[np.ndarray, ClosureFkInfo]:
    """Damped Newton on the closure, on the manifold (``pin.integrate``): ``e_l = 0`` over the
    velocity indices ``unknowns``, the other coordinates held.

    Each step solves ``J_l[:, unknowns] dtheta = -e_l`` with a fresh Jacobian (eq. (5) for the
    passive joints): by LU, or by least squares when ``least_squares`` is set, when the matrix
    is not square or when its LU has a pivot below ``SINGULAR_PIVOT`` (near a singularity).
    The step is halved until ``||e_l||_2`` decreases (taken anyway once shorter than 1e-3 of the
    full step). Converged when ``||e_l||_inf <= tol`` [m, rad].
    """
    dv = np.zeros(model.nv)
    e, J = error_and_jacobian(q)
    err = float(np.max(np.abs(e))) if e.size else 0.0
    it = 0
    while err > tol and it < max_iter:
        it += 1
        J_u = J[:, unknowns]
        step = None
        if not least_squares and J_u.shape[0] == J_u.shape[1]:
            # LAPACK directly: scipy.linalg.lu_factor / lu_solve add ~30 µs of checks per call
            lu, piv, info = _getrf(J_u)
            pivot = np.min(np.abs(np.diag(lu)))
            if info == 0 and np.isfinite(lu).all() and pivot >= SINGULAR_PIVOT:
                step = -_getrs(lu, piv, e)[0]
        if step is None:
            step = -np.linalg.lstsq(J_u, e, rcond=None)[0]
        # Backtracking: accept the first step length that reduces the residual.
        alpha = 1.0
        norm0 = float(np.linalg.norm(e))
        while True:
            dv[unknowns] = alpha * step
            q_new = pin.integrate(model, q, dv)
            e_new, J_new = error_and_jacobian(q_new)
            if np.linalg.norm(e_new) < norm0 or alpha < 1e-3:
                break
            alpha *= 0.5
        q, e, J = q_new, e_new, J_new
        err = float(np.max(np.abs(e)))
    return q, ClosureFkInfo(it, err, err <= tol)


def assemble_loops(rows: ConstraintRows, q0: np.ndarray, moving: np.ndarray, tol: float, max_iter: int,
                   accept: float) -> tuple[np.ndarray, ClosureFkInfo]:
    r"""Assemble the loops near a pose: ``min ||q ⊖ q0||^2`` subject to ``e_l(q) = 0`` on every
    declared row, the joints of the velocity indices ``moving`` free, the others held.

    Levenberg–Marquardt on the constraint with the pull towards ``q0`` in its null space: with
    ``d = q ⊖ q0`` (``pin.difference``) and ``J`` the declared-row Jacobian,

    .. math::

        \delta = -d + J^T (J J^T + \mu I)^{-1} (J d - e), \qquad \mu = 10^{-3} \|e\|^2 + 10^{-14},

    the damped minimum-distance step of the linearised problem; a step that does not reduce
    ``||e||`` is halved, and without the pull (plain damped least squares) if it still fails.
    At the solution ``d`` lies in the row space of ``J`` (first-order optimality). Joint limits
    are not enforced. Converged when the declared residual is at most ``max(tol, accept)``.
    """
    m = rows.model
    q = q0.copy()
    cols = moving
    with rows.all_declared():
        it = 0
        e, J = rows.error_and_jacobian(q)
        norm = float(np.linalg.norm(e))
        while it < max_iter:
            err = float(np.max(np.abs(e))) if e.size else 0.0
            d = pin.difference(m, q0, q)[cols]
            Jc = J[:, cols]
            A = Jc @ Jc.T + (1e-3 * norm**2 + 1e-14) * np.eye(len(e))
            pulled = -d + Jc.T @ np.linalg.solve(A, Jc @ d - e)
            if err <= tol and np.linalg.norm(pulled) < 1e-10:
                break
            it += 1
            accepted = False
            for step in (pulled, Jc.T @ np.linalg.solve(A, -e)):
                alpha = 1.0
                while alpha >= 1e-4:
                    dv = np.zeros(m.nv)
                    dv[cols] = alpha * step
                    q_new = pin.integrate(m, q, dv)
                    e_new, J_new = rows.error_and_jacobian(q_new)
                    n_new = float(np.linalg.norm(e_new))
                    # once closed, keep moving towards q0 while the loops stay closed
                    if n_new < norm or (err <= tol and float(np.max(np.abs(e_new))) <= tol):
                        accepted = True
                        break
                    alpha *= 0.5
                if accepted:
                    break
            if not accepted:
                break
            q, e, J, norm = q_new, e_new, J_new, n_new
    res = rows.declared_residual(q)
    return q, ClosureFkInfo(it, res, res <= max(tol, accept))


class ClosureFkSolver:
    """Closure forward kinematics of a model whose passive block ``J_lu`` is square.

    Args:
        rows: the model's constraint rows (their kernel evaluates ``e_l``, ``J_l``).
        idx_q_a: configuration indices of the actuated joints (``theta_a``).
        idx_v_u: velocity indices of the passive joints (``theta_dot_u``).
        q_ref: the closed reference configuration, the first warm start.
    """

    def __init__(self, rows: ConstraintRows, idx_q_a: np.ndarray, idx_v_u: np.ndarray, q_ref: np.ndarray) -> None:
        m = rows.model
        self.model = m
        self.rows = rows
        self.idx_q_a = idx_q_a
        self.idx_v_u = idx_v_u
        self.q_ref = q_ref
        # the default continuation step: an eighth of each actuator's position range (no limit where
        # the range is unbounded)
        span = m.upperPositionLimit[idx_q_a] - m.lowerPositionLimit[idx_q_a]
        self.default_step = np.where(np.isfinite(span) & (span > 0.0), 0.125 * span, np.inf)
        self._default_step_min2 = float(self.default_step.min()) ** 2 if len(idx_q_a) else np.inf
        self._q_last: np.ndarray | None = None
        self._kernel: Any = None
        self._chord_ready = False
        self._jinv: np.ndarray | None = None  # J_lu^{-1} kept between calls by the chord iteration
        if rows.n_c == len(idx_v_u):
            self._follow_kernel()  # compiles the chord iteration now

    def _follow_kernel(self) -> Any:
        """The rows' kernel; when it is a new one (the selection changed), the chord iteration is
        prepared for it and the kept ``J_lu^{-1}`` dropped."""
        k = self.rows.kernel
        if k is not self._kernel:
            self._kernel = k
            self._jinv = None
            self._chord_ready = bool(k is not None and k.set_passive_joints(self.model, self.idx_v_u))
        return k

    def forget_warm_start(self) -> None:
        """Make the next solve without ``q_guess`` start from ``q_ref``, as after construction."""
        self._q_last = None

    def solve(self, theta_a: np.ndarray, q_guess: np.ndarray | None, tol: float, max_iter: int,
              raise_on_failure: bool, max_step: float | np.ndarray | None) -> tuple[np.ndarray, ClosureFkInfo]:
        """Passive coordinates such that ``e_l = 0`` for ``theta_a`` (see
        :meth:`~kangaroo_wbc.model.closed_loop_model.ClosedLoopModel.closure_fk`)."""
        n_a = len(self.idx_q_a)
        theta_a = check_vector(theta_a, n_a, "actuator positions theta_a")
        if q_guess is None:
            q_guess = self._q_last if self._q_last is not None else self.q_ref
        q = check_vector(q_guess, self.model.nq, "configuration").copy()
        if self.rows.n_c == 0:
            q[self.idx_q_a] = theta_a
            return q, ClosureFkInfo(0, 0.0, True)
        steps = self._continuation_steps(q[self.idx_q_a], theta_a, max_step)
        if steps > 1:
            q, info = self._continuation(q, theta_a, steps, tol, max_iter)
        else:
            q[self.idx_q_a] = theta_a
            q, info = self._solve_from(q, tol, max_iter)
        if info.converged:
            self._q_last = q.copy()
        elif raise_on_failure:
            raise ClosureFkError(
                f"closure FK did not converge in {info.iterations} iterations: residual "
                f"{info.residual:.3e} > {tol:.1e} (actuators {np.array2string(theta_a, precision=4)}; "
                f"unreachable input or singular J_lu)")
        return q, info

    def _solve_from(self, q: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, ClosureFkInfo]:
        """Closure FK from ``q`` (actuators already set): the compiled chord iteration, else damped
        Newton from where it stopped."""
        fast = self.chord(q, tol, max_iter)
        return fast if fast is not None else newton(self.model, self.rows.error_and_jacobian, q, self.idx_v_u,
                                                    max_iter, tol)

    def _continuation_steps(self, theta_from: np.ndarray, theta_to: np.ndarray,
                            max_step: float | np.ndarray | None) -> int:
        """Number of equal continuation steps from ``theta_from`` to ``theta_to`` (1: solve directly)."""
        d = theta_to - theta_from
        if max_step is None:
            if d.dot(d) <= self._default_step_min2:
                return 1  # the small-step case (warm start from a nearby solution)
            limit = self.default_step
        else:
            try:
                limit = np.broadcast_to(np.asarray(max_step, dtype=float), d.shape)
            except ValueError as exc:
                raise InputError(f"max_step must be a number or one per actuator ({d.size}), got {max_step!r}") from exc
            if not np.all(limit > 0.0):
                raise InputError(f"max_step must be positive, got {max_step!r}")
        ratio = float(np.max(np.abs(d) / limit))
        if not ratio > 1.0:
            return 1
        return int(np.ceil(ratio)) if np.isfinite(ratio) else 1

    def _continuation(self, q: np.ndarray, theta_a: np.ndarray, steps: int, tol: float,
                      max_iter: int) -> tuple[np.ndarray, ClosureFkInfo]:
        """Solve ``theta_a`` in ``steps`` equal actuator steps from ``q`` (a copy of the guess);
        intermediate steps to a looser tolerance. Falls back to the direct solve from ``q``."""
        start = q.copy()
        theta0 = q[self.idx_q_a].copy()
        total = 0
        for k in range(1, steps + 1):
            q[self.idx_q_a] = theta_a if k == steps else theta0 + (theta_a - theta0) * (k / steps)
            q, info = self._solve_from(q, tol if k == steps else max(tol, 1e-9), max_iter)
            total += info.iterations
            if not info.converged:
                break
        else:
            return q, ClosureFkInfo(total, info.residual, True)
        start[self.idx_q_a] = theta_a
        q, info = self._solve_from(start, tol, max_iter)
        return q, ClosureFkInfo(total + info.iterations, info.residual, info.converged)

    def chord(self, q: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, ClosureFkInfo] | None:
        """Chord Newton in compiled code with ``J_lu^{-1}`` kept between calls, from ``q`` (updated
        in place); None when it cannot finish (no kernel, non-square or singular ``J_lu``, or no
        contraction even with a fresh Jacobian: far from a solution, or ``max_iter`` steps), then
        :func:`newton` takes over from ``q`` (the last accepted point)."""
        from kangaroo_wbc.model.closure_kernel import CHORD_CONVERGED, CHORD_STALLED

        if self.rows.n_c != len(self.idx_v_u):
            return None
        k = self._follow_kernel()
        if not self._chord_ready:
            return None
        total = 0
        for _ in range(4):
            fresh = self._jinv is None
            if fresh:
                _, J = k.error_and_jacobian(q)
                try:
                    J_inv = np.linalg.inv(J[:, self.idx_v_u])
                except np.linalg.LinAlgError:
                    return None
                if not np.isfinite(J_inv).all():
                    return None
                self._jinv = J_inv
            status, it, norm = k.chord(q, self._jinv, tol, max_iter - total, CHORD_CONTRACTION)
            total += it
            if status == CHORD_CONVERGED:
                return q, ClosureFkInfo(total, norm, True)
            self._jinv = None
            if status != CHORD_STALLED or (fresh and it <= 1):
                return None
        return None


__all__ = ["CHORD_CONTRACTION", "ClosureFkInfo", "ClosureFkSolver", "SINGULAR_PIVOT", "assemble_loops", "newton"]
