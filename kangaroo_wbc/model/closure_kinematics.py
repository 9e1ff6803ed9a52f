"""The closure terms of one tick, shared by the 1 kHz estimators (Kangaroo paper eq. (2)-(5)).

:class:`ClosureKinematics` evaluates ``e_l``, ``J_lu``, ``J_la`` once per configuration with the
model's compiled kernel (:mod:`kangaroo_wbc.model.closure_kernel`), and factorises ``J_lu`` once
(block LU over the sub-mechanisms, else LAPACK) for every solve of that tick: the passive-state
estimator's and the contact-wrench estimator's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin
from scipy.linalg import lapack

from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel

if TYPE_CHECKING:
    from kangaroo_wbc.model.block_lu import BlockLU

_gesv = lapack.dgesv
_getrf, _getrs = lapack.dgetrf, lapack.dgetrs


def lu_solve(A: np.ndarray, B: np.ndarray) -> np.ndarray | None:
    """``A^{-1} B`` by LAPACK ``gesv`` (LU with partial pivoting, as the paper's ``partialPivLu``);
    None if ``A`` is singular. Lower call overhead than ``numpy.linalg.solve``."""
    _, _, x, info = _gesv(A, B)
    return x if info == 0 else None


class ClosureKinematics:
    """Closure error ``e_l``, Jacobian blocks ``J_lu``, ``J_la`` and the LU of ``J_lu`` of one configuration.

    Args:
        clm: the closed-loop model.
        data: pinocchio data to use and update (the "full-model update"); default: a new one, so
            that other users of ``clm.data`` cannot disturb the estimator between ticks.

    Usage::

        ck = ClosureKinematics(clm)
        ck.update(q)                 # FK + joint Jacobians + all frame placements
        e_l, J_lu, J_la = ck.evaluate()

    The returned arrays are internal buffers, overwritten by the next :meth:`evaluate`.
    """

    def __init__(self, clm: ClosedLoopModel, data: pin.Data | None = None) -> None:
        self.clm = clm
        self.model = clm.model
        self.data = clm.model.createData() if data is None else data
        #: joint columns formed: passive first, then actuated (the paper's theta = [theta_u, theta_a])
        self.cols = np.concatenate([clm.idx_v_u, clm.idx_v_a]).astype(int)
        self.n_c = clm.n_c
        self.n_u, self.n_a = clm.n_u, clm.n_a
        self.e_l = np.zeros(self.n_c)
        self.J_l = np.zeros((self.n_c, len(self.cols)))
        self._q = np.zeros(self.model.nq)
        self._evaluated = False
        self._lu: Any = None
        #: the compiled closure kernel (columns ``cols``), or None without closures
        self.kernel = None
        if clm.kernel is not None:
            from kangaroo_wbc.model.closure_kernel import build_kernel

            self.kernel = build_kernel(self.model, *clm.kernel_tables(), columns=self.cols)
        #: block LU of J_lu (sub-mechanisms), or None: LAPACK on the dense matrix
        self.block_lu = clm.jlu_block_lu()

    # ------------------------------------------------------------------ pinocchio passes
    def update(self, q: np.ndarray, model_data: bool = True) -> None:
        """Full-model update at ``q``: FK, joint Jacobians ``data.J`` and every frame placement.

        ``model_data=False`` leaves :attr:`data` as it is when the compiled kernel computes the
        closure terms (they do not read it): for callers that take the full model from elsewhere."""
        if model_data or self.kernel is None:
            pin.computeJointJacobians(self.model, self.data, q)
            pin.updateFramePlacements(self.model, self.data)
        self._q[:] = q
        self._evaluated = False  # evaluate() and the LU of J_lu are computed once per update
        self._lu = None

    def evaluate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(e_l, J_lu, J_la)`` from the data of the last :meth:`update` (eq. (2), (5)).

        ``e_l`` [m, rad] is ordered as :meth:`ClosedLoopModel.closure_error`; ``J_lu`` (n_c, n_u)
        and ``J_la`` (n_c, n_a) are views into one buffer.
        """
        if self.n_c == 0:
            return self.e_l, self.J_l[:, :self.n_u], self.J_l[:, self.n_u:]
        if self.kernel is not None:
            if not self._evaluated:
                self.kernel.error_and_jacobian(self._q)
                self._evaluated = True
            e_l, J_l = self.kernel.e_l, self.kernel.J_l
            return e_l, J_l[:, :self.n_u], J_l[:, self.n_u:]
        if not self._evaluated:
            e_l, J_l = self.clm.error_and_jacobian(self._q)
            self.e_l[:] = e_l
            self.J_l[:] = J_l[:, self.cols]
            self._evaluated = True
        return self.e_l, self.J_l[:, :self.n_u], self.J_l[:, self.n_u:]

    @property
    def evaluated(self) -> bool:
        """True once ``e_l``, ``J_l`` are computed at the last :meth:`update` (by :meth:`evaluate` or
        a pass reported with :meth:`mark_evaluated`)."""
        return self._evaluated

    @property
    def factorised(self) -> bool:
        """True once the LU of ``J_lu`` at the last :meth:`update` is computed (and regular)."""
        return self._lu is not None

    def mark_evaluated(self, factorised: bool) -> None:
        """Report that another compiled pass (the passive-state estimator's tick) has computed the
        kernel's ``e_l``, ``J_l`` at the last :meth:`update` and, if ``factorised``, the factors of
        ``J_lu`` in :attr:`block_lu`; False marks ``J_lu`` singular. :meth:`evaluate`,
        :meth:`solve` and :meth:`factorised_block_lu` then reuse them."""
        self._evaluated = True
        self._lu = self.block_lu if factorised else None
        self.block_lu.ok = factorised

    def solve(self, B: np.ndarray, transpose: bool = False) -> np.ndarray | None:
        """``J_lu^{-1} B`` (``J_lu^{-T} B`` with ``transpose``) at the last :meth:`update`; the LU
        factorisation (partial pivoting) is computed once per update and shared by its users (the
        passive-state estimator and the contact-wrench model terms). None if ``J_lu`` is singular.
        """
        if not self._factorise():
            return None
        if self.block_lu is not None:
            return self.block_lu.solve(B, transpose)
        x, info = _getrs(self._lu[0], self._lu[1], B, trans=1 if transpose else 0)
        return x if info == 0 else None

    def factorised_block_lu(self) -> BlockLU | None:
        """The block LU of ``J_lu`` at the last :meth:`update`, factorised now if it is not yet (the
        one :meth:`solve` uses); None without a block structure or when ``J_lu`` is singular."""
        if self.block_lu is None or not self._factorise():
            return None
        return self.block_lu

    def _factorise(self) -> bool:
        """LU of ``J_lu`` once per update (blocks, else LAPACK); False if singular."""
        if self._lu is None:
            _, J_lu, _ = self.evaluate()
            if self.block_lu is not None:
                if not self.block_lu.factor(J_lu):
                    return False
                self._lu = self.block_lu
            else:
                lu, piv, info = _getrf(J_lu)
                if info != 0 or not np.isfinite(lu).all():
                    return False
                self._lu = (lu, piv)
        return True


__all__ = ["ClosureKinematics", "lu_solve"]
