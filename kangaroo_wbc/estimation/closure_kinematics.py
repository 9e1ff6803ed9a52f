"""Batched closure error and constraint Jacobian for the 1 kHz estimators (Kangaroo paper eq. (2)-(5)).

Same quantities as :meth:`ClosedLoopModel.error_and_jacobian`, computed from **one** call to
``pinocchio.computeJointJacobians`` and a handful of batched numpy operations instead of one
pinocchio call per frame, so that the estimators fit a 1 kHz budget in Python.

Derivation. After ``computeJointJacobians``, ``data.J`` holds, column by column, the spatial
motion of every joint axis in the world frame (``WORLD`` convention: linear part about the world
origin). The world Jacobian of a frame is ``data.J`` restricted to the columns of its supporting
joints, and its ``LOCAL_WORLD_ALIGNED`` linear part is ``J^lin - [p]_x J^ang``. For one loop with
frames ``F_a``, ``F_u`` and the signed support mask ``S = mask_u - mask_a`` (columns shared by the
two paths cancel), ``D = data.J * S`` and the core's Jacobian (see
:mod:`kangaroo_wbc.model.closed_loop_model`) simplifies to

.. math::

    J_{pos} = R_a^T \\left(D^{lin} - [p_u]_\\times D^{ang}\\right), \\qquad
    J_{rot} = J_{\\log_3}(R_a^T R_u)\\, R_u^T D^{ang}

because ``J^v_u - J^v_a + [p_u - p_a]_x J^ω_a = D^lin - [p_u]_x D^ang``. Only the joint columns
``[theta_u, theta_a]`` are formed (the closure error is a relative quantity and does not depend on
the floating base), and per loop only the columns where ``S != 0`` (the joints of the loop); the
fixed sparsity pattern is scattered into ``J_l`` with precomputed flat indices.

Rotation rows follow the core's two definitions. A loop with several declared rotation
directions uses ``log3(R_a^T R_u)`` and ``J_rot`` above. A **universal-joint cut** (exactly one
declared rotation direction ``k``, the two others free) uses the exact row

.. math::

    e_k = s\\,(R_a^T R_u)_{ij}, \\qquad
    J_k = -s\\,(R_a^T R_u)_{i,:}\\,[e_j]_\\times\\, R_u^T D^{ang}

with ``i``, ``j`` the free axes and ``s = -epsilon_ijk`` (``e_k`` equals the rotation about ``k``
to first order, and vanishes exactly for ``R_a^T R_u = R_i(a) R_j(b)``). ``log3`` would differ by a
second-order term (about ``a b / 2``): with it the estimator converges to a configuration that the
core, the controller and the simulator do not consider closed (the idle spin of the rods).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin
from scipy.linalg import lapack

from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel, universal_cut_indices

if TYPE_CHECKING:
    from kangaroo_wbc.model.block_lu import BlockLU

_gesv = lapack.dgesv
_getrf, _getrs = lapack.dgetrf, lapack.dgetrs

log3 = pin.log3
Jlog3 = pin.Jlog3


#: Linear map from ``w`` to the row-major flattened ``[w]_x``: ``[w]_x.ravel() = w @ SKEW_MAP``.
SKEW_MAP = np.zeros((3, 9))
SKEW_MAP[2, 1], SKEW_MAP[1, 2], SKEW_MAP[2, 3] = -1.0, 1.0, 1.0
SKEW_MAP[0, 5], SKEW_MAP[1, 6], SKEW_MAP[0, 7] = -1.0, -1.0, 1.0

#: ``[e_j]_x`` for the three unit vectors.
_SKEW_E = np.array([[[0.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]],
                    [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]],
                    [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])


#: ``(i, j, k, sign)`` of a universal-joint cut, None for other closures (the core's definition).
universal_joint_indices = universal_cut_indices


def lu_solve(A: np.ndarray, B: np.ndarray) -> np.ndarray | None:
    """``A^{-1} B`` by LAPACK ``gesv`` (LU with partial pivoting, as the paper's ``partialPivLu``);
    None if ``A`` is singular. Lower call overhead than ``numpy.linalg.solve``."""
    _, _, x, info = _gesv(A, B)
    return x if info == 0 else None


class ClosureKinematics:
    """Closure error ``e_l`` and Jacobian blocks ``J_lu``, ``J_la`` from pinocchio's data.

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
        m = self.model
        closures = clm.closures
        frame_ids = sorted({i for c in closures for i in (c.frame_a_id, c.frame_u_id)})
        self.frame_ids = [int(i) for i in frame_ids]
        slot = {fid: k for k, fid in enumerate(self.frame_ids)}
        self.slot_a = np.array([slot[c.frame_a_id] for c in closures], dtype=int)
        self.slot_u = np.array([slot[c.frame_u_id] for c in closures], dtype=int)
        #: joint columns formed: passive first, then actuated (the paper's theta = [theta_u, theta_a])
        self.cols = np.concatenate([clm.idx_v_u, clm.idx_v_a]).astype(int)
        n = len(self.cols)
        self.n_c = int(sum(len(c.rows) for c in closures))
        self.n_u, self.n_a = clm.n_u, clm.n_a
        K, F = len(closures), len(self.frame_ids)
        mask = np.zeros((F, m.nv))
        for k, fid in enumerate(self.frame_ids):
            for j in m.supports[m.frames[fid].parentJoint]:
                if j == 0:
                    continue
                jm = m.joints[j]
                mask[k, jm.idx_v:jm.idx_v + jm.nv] = 1.0
        signed = (mask[self.slot_u] - mask[self.slot_a])[:, self.cols]  # S = mask_u - mask_a, (K, n)
        # Sparse structure: loop k only involves the columns where S != 0 (padded to W with sign 0).
        involved = [np.flatnonzero(signed[k]) for k in range(K)]
        W = max((len(c) for c in involved), default=0)
        self._colpos = np.zeros((K, W), dtype=int)  # position in self.cols
        self._sign = np.zeros((K, 1, W))
        for k, cols_k in enumerate(involved):
            self._colpos[k, :len(cols_k)] = cols_k
            self._sign[k, 0, :len(cols_k)] = signed[k, cols_k]
        self._gather = self.cols[self._colpos]  # model velocity index of every (k, j)
        # Scatter of the kept rows of J6 (K, 6, W) into J_l (n_c, n); untouched entries stay 0.
        src, dst, flat_rows, row = [], [], [], 0
        for k, c in enumerate(closures):
            for d in c.rows:
                flat_rows.append(6 * k + int(d))
                for j in range(len(involved[k])):
                    src.append((k * 6 + int(d)) * W + j)
                    dst.append(row * n + int(involved[k][j]))
                row += 1
        self.flat_rows = np.array(flat_rows, dtype=int)
        self._src, self._dst = np.array(src, dtype=int), np.array(dst, dtype=int)
        uj, ijk = [], []
        for k, c in enumerate(closures):
            idx = universal_joint_indices(c.spec.direction_indices)
            if idx is not None and np.any(c.rows >= 3):
                uj.append(k)
                ijk.append(idx)
        self.uj = np.array(uj, dtype=int)  # universal-joint cuts (exact row)
        self._uj_ijk = np.array(ijk, dtype=int).reshape(-1, 4)
        self._uj_n = np.arange(len(uj))
        self.rot = np.array([k for k, c in enumerate(closures) if np.any(c.rows >= 3) and k not in uj],
                            dtype=int)
        self._H = np.zeros((F, 4, 4))
        self._w = np.zeros((len(self.rot), 3))
        self._Jlog = np.zeros((len(self.rot), 3, 3))
        self._skew = np.zeros((K, 3, 3))
        self._e6 = np.zeros((K, 6))
        self._J6 = np.zeros((K, 6, W))
        self.e_l = np.zeros(self.n_c)
        self.J_l = np.zeros((self.n_c, n))
        self._q = np.zeros(m.nq)
        self._evaluated = False
        self._lu = None
        #: compiled path (same numbers), or None: then the numpy path below
        self.kernel = None
        if clm.kernel is not None:
            from kangaroo_wbc.model.fast_kinematics import build_kernel

            self.kernel = build_kernel(m, *clm.kernel_tables(), self.cols)
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
        oMf = self.data.oMf
        H = self._H
        for k, fid in enumerate(self.frame_ids):
            H[k] = oMf[fid].homogeneous
        R, p = H[:, :3, :3], H[:, :3, 3]
        Ra, Ru = R[self.slot_a], R[self.slot_u]
        pu = p[self.slot_u]
        RaT = Ra.transpose(0, 2, 1)
        e6, J6 = self._e6, self._J6
        np.einsum("kij,kj->ki", RaT, pu - p[self.slot_a], out=e6[:, :3])
        # D_k = data.J[:, involved columns] * sign: (K, 6, W)
        D = self.data.J[:, self._gather].transpose(1, 0, 2) * self._sign
        S = self._skew
        np.matmul(pu, SKEW_MAP, out=S.reshape(-1, 9))
        np.matmul(RaT, D[:, :3] - np.matmul(S, D[:, 3:]), out=J6[:, :3])
        if len(self.rot):
            # pinocchio's log3/Jlog3 per loop (~1 µs each) beat a batched numpy version here.
            r = self.rot
            Rau = np.matmul(RaT[r], Ru[r])
            w, Jlog = self._w, self._Jlog
            for i in range(len(r)):
                w[i] = log3(Rau[i])
                Jlog[i] = Jlog3(Rau[i])
            e6[r, 3:] = w
            J6[r, 3:] = np.matmul(np.matmul(Jlog, Ru[r].transpose(0, 2, 1)), D[r, 3:])
        if len(self.uj):
            u, n_u = self.uj, self._uj_n
            ui, uj_, uk, usign = self._uj_ijk.T
            Rau = np.matmul(RaT[u], Ru[u])
            e6[u, 3 + uk] = usign * Rau[n_u, ui, uj_]
            # d/dt (R_au)_ij = -(R_au)_{i,:} [e_j]x omega_rel, omega_rel = R_u^T D_ang v
            g = -usign[:, None] * np.einsum("nm,nml->nl", Rau[n_u, ui, :], _SKEW_E[uj_])
            J6[u, 3 + uk] = np.einsum("nl,nlw->nw", g, np.matmul(Ru[u].transpose(0, 2, 1), D[u, 3:]))
        self.e_l[:] = e6.reshape(-1)[self.flat_rows]
        self.J_l.reshape(-1)[self._dst] = J6.reshape(-1)[self._src]
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


__all__ = ["ClosureKinematics", "SKEW_MAP", "lu_solve", "universal_joint_indices"]
