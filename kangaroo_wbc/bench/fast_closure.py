"""A prototype of a faster closure FK, kept in the benchmark to measure the gain before it moves
into :mod:`kangaroo_wbc.model` (see ``docs/performance.md``).

:meth:`ClosedLoopModel.closure_fk` runs a full Newton step per iteration: one Jacobian sweep
(``e_l`` and ``J_l``, ~90 % Python/numpy overhead around a few microseconds of pinocchio), one
dense solve with ``J_lu``, and one more Jacobian sweep at the solution. On a smooth actuator
trajectory (1 kHz) the passive block ``J_lu`` barely changes between calls, so this variant

1. **predicts** the passive coordinates to first order with the stored mapping Jacobian
   (eq. (7)): ``theta_u ⊕ J_m (theta_a - theta_a_prev)``;
2. **corrects** with chord-Newton steps ``dtheta_u = -J_lu^{-1} e_l`` that reuse the inverse of
   ``J_lu`` from an earlier call (kept current by rank-1 Broyden updates) and evaluate only the
   closure error (one ``framesForwardKinematics``, no Jacobian);
3. **refreshes** ``J_lu^{-1}`` and ``J_m`` (one Jacobian sweep) only when an iteration contracts
   the error by less than ``1 / max_contraction``; ``J_m`` gets a secant update after each call.

The solution satisfies the same convergence test as the core (``|e_l|_inf <= tol``); the result
is the same closed configuration (the benchmark reports the largest difference).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ClosureFkError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.so3 import log3_batch


@dataclass
class ChordFkStats:
    """Counters of :class:`ChordClosureFk` (for the benchmark report)."""

    calls: int = 0
    error_evaluations: int = 0
    jacobian_refreshes: int = 0


class ChordClosureFk:
    """Closure FK by prediction + chord Newton with Jacobian reuse, on a :class:`ClosedLoopModel`.

    Args:
        clm: the closed-loop model (its pinocchio model, closures and index sets are used; its
            ``data`` is not touched, this object has its own).
        max_contraction: refresh ``J_lu`` when ``|e_{k+1}| > max_contraction |e_k|``.
    """

    def __init__(self, clm: ClosedLoopModel, max_contraction: float = 0.05, broyden: bool = True) -> None:
        self.clm = clm
        self.model = clm.model
        self.data = clm.model.createData()
        self.max_contraction = max_contraction
        self.broyden = broyden
        frame_ids = sorted({i for c in clm.closures for i in (c.frame_a_id, c.frame_u_id)})
        slot = {f: k for k, f in enumerate(frame_ids)}
        self._frame_ids = [int(f) for f in frame_ids]
        self._sa = np.array([slot[c.frame_a_id] for c in clm.closures], dtype=int)
        self._su = np.array([slot[c.frame_u_id] for c in clm.closures], dtype=int)
        self._rows = np.concatenate([6 * k + c.rows for k, c in enumerate(clm.closures)]
                                    + [np.zeros(0, dtype=int)]).astype(int)
        self._rot = np.array([k for k, c in enumerate(clm.closures) if np.any(c.rows >= 3)], dtype=int)
        self._dv = np.zeros(self.model.nv)
        self._J_lu_inv = np.zeros((clm.n_u, clm.n_u))  # set by refresh() before first use
        self._J_m = np.zeros((clm.n_u, clm.n_a))
        self._q_last: np.ndarray | None = None
        self.stats = ChordFkStats()

    # ------------------------------------------------------------------ pieces
    def error(self, q: np.ndarray) -> np.ndarray:
        """Closure error ``e_l`` (eq. (2)), same rows and order as :meth:`ClosedLoopModel.closure_error`."""
        d = self.data
        pin.framesForwardKinematics(self.model, d, q)
        oMf = d.oMf
        H = np.array([oMf[i].homogeneous for i in self._frame_ids])
        R, p = H[:, :3, :3], H[:, :3, 3]
        Ra = R[self._sa]
        e = np.zeros((len(self._sa), 6))
        e[:, :3] = np.einsum("kji,kj->ki", Ra, p[self._su] - p[self._sa])
        if self._rot.size:
            r = self._rot
            e[r, 3:] = log3_batch(np.swapaxes(Ra[r], 1, 2) @ R[self._su[r]])
        self.stats.error_evaluations += 1
        return e.reshape(-1)[self._rows]

    def refresh(self, q: np.ndarray) -> np.ndarray:
        """Jacobian sweep at ``q``: new ``J_lu^{-1}`` and ``J_m = -J_lu^{-1} J_la``; returns ``e_l``."""
        clm = self.clm
        e, J = clm.error_and_jacobian(q)
        self._J_lu_inv = np.linalg.inv(J[:, clm.idx_v_u])
        self._J_m = -self._J_lu_inv @ J[:, clm.idx_v_a]
        self.stats.jacobian_refreshes += 1
        return e

    def _accept(self, q: np.ndarray) -> np.ndarray:
        """Store the solution; secant (Broyden) update of ``J_m`` along the actuator increment."""
        clm = self.clm
        if self.broyden and self._q_last is not None:
            dq = pin.difference(self.model, self._q_last, q)
            da, du = dq[clm.idx_v_a], dq[clm.idx_v_u]
            n2 = float(da @ da)
            if n2 > 0.0:
                self._J_m += np.outer((du - self._J_m @ da) / n2, da)
        self._q_last = q
        return q

    # ------------------------------------------------------------------ solve
    def solve(self, theta_a: np.ndarray, tol: float = 1e-12, max_iter: int = 50) -> np.ndarray:
        """Closed configuration for the actuator positions ``theta_a`` (warm start: last solution)."""
        clm, m = self.clm, self.model
        self.stats.calls += 1
        theta_a = np.asarray(theta_a, dtype=float)
        dv = self._dv
        if self._q_last is None:
            q = clm.q_ref.copy()
            q[clm.idx_q_a] = theta_a
            e = self.refresh(q)
        else:
            q_prev = self._q_last
            dv[:] = 0.0
            dv[clm.idx_v_a] = theta_a - q_prev[clm.idx_q_a]
            dv[clm.idx_v_u] = self._J_m @ dv[clm.idx_v_a]
            q = pin.integrate(m, q_prev, dv)
            q[clm.idx_q_a] = theta_a  # exact actuator values (1-DOF joints)
            e = self.error(q)
        err = float(np.max(np.abs(e))) if e.size else 0.0
        dv[:] = 0.0
        for _ in range(max_iter):
            if err <= tol:
                return self._accept(q)
            s = -self._J_lu_inv @ e
            dv[clm.idx_v_u] = s
            q = pin.integrate(m, q, dv)
            e_new = self.error(q)
            err_new = float(np.max(np.abs(e_new)))
            if self.broyden:
                # "good" Broyden update of the inverse (Sherman-Morrison): B^-1 y = s after it.
                Hy = self._J_lu_inv @ (e_new - e)
                den = s @ Hy
                if abs(den) > 1e-300:
                    self._J_lu_inv += np.outer((s - Hy) / den, s @ self._J_lu_inv)
            e = e_new
            if err_new > self.max_contraction * err and err_new > tol:
                e = self.refresh(q)
                err_new = float(np.max(np.abs(e)))
            err = err_new
        if err <= tol:
            return self._accept(q)
        raise ClosureFkError(f"chord closure FK did not converge in {max_iter} iterations: residual {err:.3e}")
