"""Real-time evaluation of the projected floating-base quantities the WBC needs (App. B).

:func:`kangaroo_wbc.model.projected_dynamics` is the reference implementation; this class computes
the same quantities for one tick with a fixed, small number of pinocchio calls and compiled code
(no per-frame pinocchio Jacobian/acceleration calls):

1. ``computeJointJacobians``: all joint Jacobians ``data.J`` (spatial, world axes, reference point
   at the world origin), from which the registered frames' ``LOCAL_WORLD_ALIGNED`` Jacobians
   ``J_f = S_f ∘ [J^v - [p_f]_× J^ω ; J^ω]`` follow (``S_f``: the frame's support mask).
2. One compiled call (:func:`_closure_chain`): frame placements, closure Jacobian ``J_l`` (eq. (3)-(4)),
   the block LU of ``J_lu`` with the mapping Jacobian ``J_m = -J_lu^{-1} J_la`` (eq. (7)) written
   into ``T``, ``v = T nu`` (the velocity made consistent with the closures), the bias ``Jdot_l v``
   (eq. (8), App. A eq. (52)-(57)), ``k_u = -J_lu^{-1} Jdot_l v`` (eq. (10)) and the registered
   frames' twists and zero-acceleration accelerations.
3. ``crba``, ``nonLinearEffects``: ``M_p = T^T M T``, ``h_p = T^T (h + M k)`` (eq. (62)-(73)).
4. Centroidal map ``A_G`` and its drift ``A_G k + Adot_G v`` (free flyer: from the base rows of
   ``M`` and ``h``; else pinocchio's ``ccrba``).

Every task quantity is then a projection: Jacobian ``J T`` and drift ``Jdot v + J k`` (eq. (65)).

``log3`` rotation rows of the closures are ``J_log3(R_au) R_u^T (ω_u - ω_a)``, as the core's; their
bias drops the time derivative of ``J_log3``, which vanishes at a closed configuration (``R_au = I``,
where it acts on ``ω_rel`` as ``½ ω_rel × ω_rel = 0``): that is where the WBC evaluates them (the
estimator's closure FK keeps ``‖e_l‖∞`` at the 1e-10 level).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import FrameNotFound, InputError, ModelError, suggest
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.block_lu import factor_blocks_and_map, solve_blocks
from kangaroo_wbc.model.closure_kernel import (
    build_kernel,
    closure_error_jacobian,
    closure_velocity_bias,
    frame_terms,
)
from kangaroo_wbc.model.compiled import all_finite, buffers, compiled
from kangaroo_wbc.model.configuration import support_mask
from kangaroo_wbc.model.dynamics import velocity_generator


class ProjectedModel:
    """Projected quantities of a :class:`ClosedLoopModel` at ``(q, nu)``, updated each tick.

    Args:
        clm: the closed-loop model (floating base or fixed base).
        frames: frames whose kinematics are needed (contacts, tasks); checked at construction.

    After :meth:`update`, attributes hold (``n_nu = n_b + n_a``):

    * ``q``, ``v`` (closure-consistent, ``v = T nu``), ``nu``;
    * ``T`` (nv, n_nu), ``k`` (nv), ``J_m`` (n_u, n_a), ``J_l`` (n_c, nv), ``bias_l`` (n_c);
    * ``M`` (nv, nv), ``h`` (nv) of the spanning tree; ``M_p`` (n_nu, n_nu), ``h_p`` (n_nu);
    * per frame: :meth:`placement`, :meth:`jacobian` (6, n_nu), :meth:`drift` (6), :meth:`twist` (6),
      all linear-first in world axes at the frame origin (``LOCAL_WORLD_ALIGNED``); stacked over the
      registered frames (rows :meth:`frame_index`, read only): ``frame_jacobians_T`` (U, 6, n_nu),
      ``frame_drifts`` (U, 6), ``frame_twists`` (U, 6);
    * ``frame_rotations`` (2 K + U, 3, 3), ``frame_positions`` (2 K + U, 3) [m]: closure sides ``a``
      (K), ``u`` (K), then the registered frames (U); read only (the kernel's buffers);
    * ``com`` (3), ``com_velocity`` (3), ``J_com`` (3, n_nu), ``com_drift`` (3) [m, m/s, m/s²];
    * ``A_G`` (6, n_nu), ``h_G`` (6), ``A_G_drift`` (6): centroidal momentum matrix (eq. (33)),
      momentum [kg·m/s, kg·m²/s] and ``Adot_G v + A_G k``.

    One path computes the closure terms: the compiled closure chain (:func:`_closure_chain`), with
    ``J_lu`` factorised by blocks (its independent square blocks, the sub-mechanisms). The readable
    references are :func:`kangaroo_wbc.model.projected_dynamics` (per-frame pinocchio calls) and
    App. B written out in the tests.

    Raises:
        ModelError: no closure, a joint type the compiled closure kinematics does not support
            (planar, helical, composite: :mod:`kangaroo_wbc.model.closure_kernel`), or ``J_lu``
            structurally singular (a sub-mechanism with more passive DOFs than closure rows, or
            fewer).
    """

    def __init__(self, clm: ClosedLoopModel, frames: Sequence[str] = ()) -> None:
        self.clm = clm
        self.model = clm.model
        self.data = clm.model.createData()
        m = self.model
        self.nv = m.nv
        self.n_b, self.n_a, self.n_u = clm.n_b, clm.n_a, clm.n_u
        self.n_nu = self.n_b + self.n_a
        # free-flyer root: the centroidal terms come from the base rows of M and h
        self._free_flyer = clm.n_b == 6 and m.joints[1].shortname() == "JointModelFreeFlyer"
        self._gravity_wrench = np.zeros(6)
        self._refresh_mass()
        if self._free_flyer:  # compile (or load) now, with pinocchio's own arrays (layouts are in the signature)
            n_nu = clm.n_b + clm.n_a
            M0 = np.zeros((m.nv, m.nv))
            M0[3, 3] = 1.0
            _centroidal_kernel(M0, self.mass, np.eye(3), np.zeros(3), np.zeros((m.nv, n_nu)), np.zeros(m.nv),
                               np.zeros(n_nu), self._gravity_wrench, np.empty((9, n_nu)), np.empty(21))
        names = [f.name for f in m.frames]
        self.frame_names = list(dict.fromkeys(frames))
        for name in self.frame_names:
            if not m.existFrame(name):
                raise FrameNotFound(f"unknown frame {name!r}." + suggest(name, names))
        K, U = len(clm.closures), len(self.frame_names)
        self.n_closures, self.n_frames = K, U
        # Frames whose placement is read each tick: closure sides a, u, then the user frames.
        fids = ([c.frame_a_id for c in clm.closures] + [c.frame_u_id for c in clm.closures]
                + [int(m.getFrameId(n)) for n in self.frame_names])
        self._fids = [int(i) for i in fids]
        self._index = {n: i for i, n in enumerate(self.frame_names)}
        # the model's kept rows, log3 rotation rows and universal-joint cuts
        tables = clm.kernel_tables()
        self.n_c = int(tables.flat_rows.size) + int(tables.couplings.term_q.shape[0])
        if self.n_c != self.n_u:
            raise ModelError(f"{self.n_c} closure rows for {self.n_u} passive DOFs: J_lu is not square")
        # Compiled closure kinematics on the same frames (closure sides a, u, user frames):
        # placements, J_l and the bias Jdot_l v.
        self._kernel = build_kernel(m, self._fids, np.arange(K), K + np.arange(K), tables.signed_mask,
                                    tables.flat_rows, tables.rot_log3, tables.universal, tables.couplings)
        # Block LU of J_lu: its independent square blocks, from the loops' joint columns.
        self._block_lu = clm.jlu_block_lu()
        if self._block_lu is None:
            raise ModelError("J_lu has no square block structure: no closure, or a sub-mechanism whose passive "
                             "DOFs and closure rows differ in number (structurally singular)")
        #: Smallest accepted LU pivot ratio ``min |u_kk| / max |u_kk|`` of ``J_lu`` per independent
        #: block (:meth:`update` raises ModelError below it: near a kinematic singularity); 0 only
        #: rejects an exactly singular ``J_lu``.
        self.min_pivot_ratio = 0.0
        self.T = velocity_generator(clm, 0.0)  # its passive rows J_m are written at each update
        self._idx_u, self._idx_a, self._idx_b = clm.idx_v_u, clm.idx_v_a, clm.idx_v_base
        # compile (or load) the factor-and-map kernel now
        blu, warm = self._block_lu, np.zeros((clm.n_c, m.nv))
        for b in range(len(blu.sizes)):
            k = blu.sizes[b]
            warm[blu.rows[b, :k], self._idx_u[blu.cols[b, :k]]] = 1.0  # nonsingular blocks
        blu.factor_and_map(warm, self._idx_u, self._idx_a, self.T.copy(), self.n_b)
        blu.ok = False
        U, n_nu, nv = len(self.frame_names), self.n_nu, m.nv
        self.k = np.zeros(m.nv)
        self.q = np.zeros(m.nq)
        self.v = np.zeros(m.nv)
        self._Jf_buf = np.empty((U, 6, nv))  # the user frames' Jacobians of the compiled chain
        index = {name: np.ascontiguousarray(i, dtype=np.int64)
                 for name, i in (("idx_b", self._idx_b), ("idx_a", self._idx_a), ("idx_u", self._idx_u))}
        self._buffers = ProjectionBuffers.make(
            **index, n_b=self.n_b, T=self.T, cols_in=np.ascontiguousarray(index["idx_u"][blu.cols]), v=self.v,
            k=self.k, B=np.empty((blu.n, 1)), X=np.empty((blu.n, 1)),
            frame_mask=support_mask(m, self._fids[2 * K:]), Jf=self._Jf_buf, u0=2 * K)
        # compile (or load) the projection kernel now, with pinocchio's own mass-matrix array
        M0 = pin.crba(m, m.createData(), pin.neutral(m), pin.Convention.WORLD)
        _project_on_T(M0, np.zeros(nv), np.zeros((U, 6, nv)), np.zeros((self.n_u, self.n_a)), self._buffers,
                      np.empty((nv, n_nu)), np.empty((n_nu, n_nu)), np.empty(nv), np.empty(n_nu),
                      np.empty((U, 6, n_nu)), np.empty((U, 6)))
        self.nu = np.zeros(self.n_nu)
        self._updated = False

    # ------------------------------------------------------------------ update
    def _refresh_mass(self) -> None:
        """The total mass [kg] and gravity wrench from the model's inertias (at construction, and after
        :meth:`ClosedLoopModel.add_payload`)."""
        self.mass = float(pin.computeTotalMass(self.model))
        self._gravity_wrench[:3] = self.mass * self.model.gravity.linear
        self._inertia_version = self.clm.inertia_version

    def update(self, q: np.ndarray, nu: np.ndarray) -> None:
        """Evaluate everything at configuration ``q`` and independent velocity ``nu``.

        Args:
            q: closed configuration (nq,) [m, rad; base quaternion x, y, z, w as pinocchio].
            nu: ``[v_base (n_b, base frame as pinocchio's free-flyer), theta_dot_a (n_a)]``.

        Raises:
            InputError: wrong sizes or non-finite values.
            ModelError: ``J_lu`` singular (kinematic singularity).
        """
        m, data = self.model, self.data
        q = np.asarray(q, dtype=float)
        nu = np.asarray(nu, dtype=float)
        if q.shape != (m.nq,) or nu.shape != (self.n_nu,):
            raise InputError(f"q has shape {q.shape} (expected ({m.nq},)), nu has shape {nu.shape} "
                             f"(expected ({self.n_nu},))")
        if not all_finite(q, nu):
            raise InputError("non-finite configuration or velocity")
        self._updated = False  # until every term below is evaluated
        if self._inertia_version != self.clm.inertia_version:  # a payload changed the model's inertias
            self._refresh_mass()
        self.q[:] = q
        self.nu[:] = nu
        twist, drift = self._closure_chain(q, nu)  # k included
        v = self.v
        # 3. Dynamics (App. B): M_p = T^T M T, h_p = T^T (h + M k).
        # full symmetric matrix (pinocchio >= 3 fills both triangles); the WORLD convention also
        # leaves the composite inertias in data.oYcrb, world axes (read by the reduced controller)
        M = pin.crba(m, data, q, pin.Convention.WORLD)
        self.M = M
        self.h = pin.nonLinearEffects(m, data, q, v).copy()
        T = self.T
        nv, n_nu, U = m.nv, self.n_nu, self.n_frames
        MT, M_p, h_Mk, h_p = np.empty((nv, n_nu)), np.empty((n_nu, n_nu)), np.empty(nv), np.empty(n_nu)
        Jf_T, Jf_k = np.empty((U, 6, n_nu)), np.empty((U, 6))
        # M T, T^T M T, h + M k, T^T (h + M k), J_f T, J_f k with T's structure (identity columns,
        # J_m sparse by sub-mechanism; compiled): a tenth of the dense products' work
        _project_on_T(M, self.h, self._Jf, np.ascontiguousarray(self.J_m), self._buffers, MT, M_p, h_Mk, h_p,
                      Jf_T, Jf_k)
        self.M_p, self.h_p = M_p, h_p
        # 4. Centroidal quantities (eq. (33)).
        if self._free_flyer:
            # the root joint's placement, from the closure pass at this q
            self._centroidal_from_base_rows(MT, h_Mk, self._kernel.oR[1], self._kernel.op[1])
        else:
            Ag = pin.ccrba(m, data, q, v)
            self.h_G = np.concatenate([data.hg.linear, data.hg.angular])
            self.com = data.com[0].copy()
            self.A_G = Ag @ T
            pin.computeCentroidalMomentumTimeVariation(m, data, q, v, self.k)
            self.A_G_drift = np.concatenate([data.dhg.linear, data.dhg.angular])
            self.J_com = self.A_G[:3] / self.mass
            self.com_velocity = self.h_G[:3] / self.mass
            self.com_drift = self.A_G_drift[:3] / self.mass
        # User frames: projected Jacobians, drifts (Jdot v + J k), twists.
        self.frame_jacobians_T = Jf_T
        self.frame_drifts = drift + Jf_k
        self.frame_twists = twist
        self._updated = True

    def _centroidal_from_base_rows(self, MT: np.ndarray, h_Mk: np.ndarray, R: np.ndarray, p: np.ndarray) -> None:
        """``com``, ``A_G``, ``h_G``, ``A_G_drift`` (and ``J_com``, ``com_velocity``, ``com_drift``:
        their linear rows over the mass) from the free-flyer rows of the dynamics; ``R``, ``p``: the
        base placement (C-ordered).

        The base rows of ``M`` are the composite rigid-body inertia of the whole robot in the base
        frame, ``M_bb = [[m I, -m [c]x], [m [c]x, I_b]]`` (CoM ``c`` in the base frame), and map ``v``
        to the robot's spatial momentum at the base origin, base axes. Moving it to the CoM in world
        axes, ``X = [[R, 0], [-R [c]x, R]]`` (``R``: base rotation):

        .. math::
            A_G = X M_{b,:} T, \\qquad h_G = A_G \\nu, \\qquad
            \\dot A_G v + A_G k = X (M_{b,:} k + h_b) + \\begin{bmatrix} m g \\\\ 0 \\end{bmatrix}

        (the base rows of ``M v_dot + h = J_c^T F`` are the non-gravity external wrench; the
        momentum rate adds gravity). Equal to pinocchio's ``ccrba`` / ``dccrba`` (tested), without
        two more passes over the tree.
        """
        rows, vec = np.empty((9, MT.shape[1])), np.empty(21)
        _centroidal_kernel(self.M, self.mass, R, p, MT, h_Mk, self.nu, self._gravity_wrench, rows, vec)
        self.A_G, self.J_com = rows[:6], rows[6:]
        self.com, self.h_G, self.A_G_drift = vec[0:3], vec[3:9], vec[9:15]
        self.com_velocity, self.com_drift = vec[15:18], vec[18:21]

    def is_current(self, q: np.ndarray, nu: np.ndarray | None = None) -> bool:
        """True if the last :meth:`update` completed at exactly this ``q`` (and ``nu`` if given):
        the same float64 values bit for bit (a byte comparison: several times cheaper than
        ``np.array_equal`` on these sizes)."""
        if not self._updated:
            return False
        q = np.asarray(q, dtype=float)
        if q.shape != self.q.shape or q.tobytes() != self.q.tobytes():
            return False
        if nu is None:
            return True
        nu = np.asarray(nu, dtype=float)
        return nu.shape == self.nu.shape and nu.tobytes() == self.nu.tobytes()

    def _check_pivots(self) -> None:
        """ModelError naming the worst block of ``J_lu`` (of the block LU just factorised) if its
        pivot ratio is below ``min_pivot_ratio``."""
        blu, m = self._block_lu, self.model
        ratio, b = blu.worst_pivot()
        if ratio >= self.min_pivot_ratio:
            return
        columns = blu.cols[b, :blu.sizes[b]]
        joint_of_v = {m.joints[j].idx_v + k: j for j in range(1, m.njoints) for k in range(m.joints[j].nv)}
        joints = list(dict.fromkeys(m.names[joint_of_v[int(v)]] for v in self._idx_u[columns]))
        shown = ", ".join(joints[:3]) + (", ..." if len(joints) > 3 else "")
        raise ModelError(f"J_lu ill-conditioned: LU pivot ratio {ratio:.1e} < {self.min_pivot_ratio:.1e} in the "
                         f"sub-mechanism of {len(joints)} passive joints ({shown}): near a kinematic singularity "
                         "(dead point)")

    def _closure_chain(self, q: np.ndarray, nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Placements, ``J_l``, ``J_m``, ``T``, ``v``, ``Jdot_l v``, ``k`` and the user-frame terms
        in one compiled call (:func:`_closure_chain`); returns the user frames' twists and
        zero-acceleration classical accelerations (U, 6), world axes at their origins."""
        m, data, kernel, blu = self.model, self.data, self._kernel, self._block_lu
        pin.computeJointJacobians(m, data, q)  # data.J of the user frames (only q needed)
        U = self.n_frames
        J_m = np.empty((self.n_u, self.n_a))
        twist, drift = np.empty((U, 6)), np.empty((U, 6))
        ok = _closure_chain(q, nu, kernel.tree, kernel.loops, blu.factors, self._buffers, data.J, J_m, twist, drift)
        blu.ok = bool(ok)
        if not ok:
            raise ModelError("J_lu is singular: the mechanism is at a kinematic singularity")
        if self.min_pivot_ratio > 0.0:
            self._check_pivots()
        self.frame_rotations, self.frame_positions = kernel.R, kernel.p
        self.J_l, self.J_m, self.bias_l, self._Jf = kernel.J_l, J_m, kernel.bias_l.copy(), self._Jf_buf
        return twist, drift

    # ------------------------------------------------------------------ accessors
    def frame_index(self, name: str) -> int:
        """Index of a registered frame in :attr:`frame_jacobians_T`, :attr:`frame_drifts` and
        :attr:`frame_twists` (its row in :attr:`frame_rotations` / :attr:`frame_positions` is
        ``2 * n_closures + frame_index(name)``); for per-tick users that look names up once.

        Raises:
            FrameNotFound: ``name`` was not registered.
        """
        try:
            return self._index[name]
        except KeyError:
            raise FrameNotFound(f"frame {name!r} was not registered with this ProjectedModel."
                                + suggest(name, self.frame_names)) from None

    def base_placement(self) -> tuple[np.ndarray, np.ndarray]:
        """``(R, p)`` of the base joint (joint 1) in the world [-, m] at the last update (from the
        compiled closure pass). Read only."""
        return self._kernel.oR[1], self._kernel.op[1]

    def placement(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(R, p)`` of a registered frame in the world [-, m]."""
        s = 2 * self.n_closures + self.frame_index(name)
        return self.frame_rotations[s], self.frame_positions[s]

    def jacobian(self, name: str) -> np.ndarray:
        """Projected frame Jacobian ``J_f T`` (6, n_nu), linear rows first, world axes."""
        return self.frame_jacobians_T[self.frame_index(name)]

    def drift(self, name: str) -> np.ndarray:
        """Frame acceleration at ``nu_dot = 0``: ``Jdot_f v + J_f k`` (6,), classical, world axes."""
        return self.frame_drifts[self.frame_index(name)]

    def twist(self, name: str) -> np.ndarray:
        """Frame velocity ``(v, ω)`` (6,) [m/s, rad/s], world axes at the frame origin."""
        return self.frame_twists[self.frame_index(name)]

    def full_jacobian(self, name: str) -> np.ndarray:
        """Frame Jacobian in full coordinates (6, nv), ``LOCAL_WORLD_ALIGNED``."""
        return self._Jf[self.frame_index(name)]

    def lagrange_multipliers(self, nu_dot: np.ndarray, generalized_contact_force: np.ndarray) -> np.ndarray:
        """Closure forces ``lambda`` (eq. (28)) from the passive rows of the tree dynamics.

        ``J_lu^T lambda = M_u v_dot + h_u - (J_c^T F)_u`` with ``v_dot = T nu_dot + k`` and
        ``generalized_contact_force = J_c^T F`` in full coordinates (nv,).
        """
        v_dot = self.T @ nu_dot + self.k
        rhs = self.M[self._idx_u] @ v_dot + self.h[self._idx_u] - generalized_contact_force[self._idx_u]
        return self._block_lu.solve(rhs, transpose=True)


#: A projected model's fixed structure and buffers for its kernels: the velocity indices of the base,
#: actuated and passive joints, ``n_b``, ``T``, the passive indices of the block LU's columns
#: (``cols_in``), ``v``, ``k``, the closure-bias solve's work (``B``, ``X``), the user frames' support
#: mask, Jacobians (``Jf``) and first frame slot (``u0``).
ProjectionBuffers = buffers("ProjectionBuffers", ("idx_b", "idx_a", "idx_u", "n_b", "T", "cols_in", "v", "k", "B", "X",
                                                  "frame_mask", "Jf", "u0"))


@compiled
def _closure_chain(q, nu, tree, loops, factors, pm, dataJ, J_m, twist, drift):
    """:meth:`ProjectedModel._closure_chain` (compiled): closure error and Jacobian
    (``closure_error_jacobian``), block LU of ``J_lu`` with ``J_m`` into ``T``
    (``factor_blocks_and_map``), ``v = T nu``, the closure
    bias ``Jdot_l v`` (``closure_velocity_bias``), ``k_u = -J_lu^{-1} Jdot_l v`` and the user frames'
    terms from ``dataJ`` (``frame_terms``, frames from ``pm.u0``). ``pm``: the model's
    :data:`ProjectionBuffers`. False (and nothing after the factorisation written) if ``J_lu`` is
    singular."""
    J_l, bias = loops.J_l, loops.bias_l
    rows, cols, sizes, LU, piv = factors.rows, factors.cols, factors.sizes, factors.LU, factors.piv
    idx_u, T, v, k, B, X = pm.idx_u, pm.T, pm.v, pm.k, pm.B, pm.X
    closure_error_jacobian(q, tree, loops, True, loops.e_l, J_l)
    if not factor_blocks_and_map(J_l, rows, cols, pm.cols_in, sizes, LU, piv, idx_u, pm.idx_a, pm.n_b, T, J_m):
        return False
    nv, n_nu = T.shape
    for i in range(nv):
        x = 0.0
        for j in range(n_nu):
            x += T[i, j] * nu[j]
        v[i] = x
    closure_velocity_bias(v, tree, loops)
    for i in range(bias.shape[0]):
        B[i, 0] = bias[i]
    solve_blocks(LU, piv, rows, cols, sizes, B, X, False)
    for i in range(idx_u.shape[0]):
        k[idx_u[i]] = -X[i, 0]
    u0 = pm.u0
    frame_terms(dataJ, tree.p[u0:], pm.frame_mask, loops.frame_velocity[u0:], loops.frame_bias_acceleration[u0:],
                pm.Jf, twist, drift)
    return True


@compiled
def _centroidal_kernel(M, mass, R, p, MT, h_Mk, nu, gravity_wrench, rows, vec):
    """:meth:`ProjectedModel._centroidal_from_base_rows` (compiled): ``m c = (M[5,1], M[3,2], M[4,0])``,
    ``X = [[R, 0], [-R [c]x, R]]``, ``com = p + R c``, ``A_G = X (M T)_b``, ``h_G = A_G nu``,
    ``drift = X (h + M k)_b + [m g; 0]``; ``J_com``, ``com_velocity``, ``com_drift``: the first
    three rows of ``A_G``, ``h_G``, ``drift`` over ``mass``. Outputs: ``rows`` (9, n) =
    ``[A_G; J_com]``, ``vec`` (21,) = ``[com, h_G, drift, com_velocity, com_drift]``."""
    A_G, J_com = rows[:6], rows[6:]
    com, h_G, drift, com_velocity, com_drift = vec[0:3], vec[3:9], vec[9:15], vec[15:18], vec[18:21]
    cx, cy, cz = M[5, 1] / mass, M[3, 2] / mass, M[4, 0] / mass
    X = np.zeros((6, 6))
    for i in range(3):
        for j in range(3):
            X[i, j] = X[3 + i, 3 + j] = R[i, j]
        # -R [c]x, row i: -(R[i,1] cz - R[i,2] cy, R[i,2] cx - R[i,0] cz, R[i,0] cy - R[i,1] cx)
        X[3 + i, 0] = -(R[i, 1] * cz - R[i, 2] * cy)
        X[3 + i, 1] = -(R[i, 2] * cx - R[i, 0] * cz)
        X[3 + i, 2] = -(R[i, 0] * cy - R[i, 1] * cx)
        com[i] = p[i] + R[i, 0] * cx + R[i, 1] * cy + R[i, 2] * cz
    n = MT.shape[1]
    for i in range(6):
        hg = 0.0
        for j in range(n):
            a = 0.0
            for k in range(6):
                a += X[i, k] * MT[k, j]
            A_G[i, j] = a
            hg += a * nu[j]
        h_G[i] = hg
        d = gravity_wrench[i]
        for k in range(6):
            d += X[i, k] * h_Mk[k]
        drift[i] = d
    for i in range(3):
        for j in range(n):
            J_com[i, j] = A_G[i, j] / mass
        com_velocity[i] = h_G[i] / mass
        com_drift[i] = drift[i] / mass


@compiled
def _project_on_T(M, h, Jf, J_m, pm, MT, M_p, h_Mk, h_p, Jf_T, Jf_k):
    """``MT = M T``, ``M_p = T^T M T``, ``h_Mk = h + M k``, ``h_p = T^T h_Mk``, ``Jf_T = J_f T`` and
    ``Jf_k = J_f k`` for ``T`` with unit columns on the base (``pm.idx_b``) and actuated
    (``pm.idx_a``) velocities and ``J_m`` on the passive rows (``pm.idx_u``), and ``k = pm.k`` zero
    outside ``idx_u`` (``pm``: the model's :data:`ProjectionBuffers`).
    ``M`` is symmetric (pinocchio's ``crba`` fills both triangles): its columns are read as rows,
    contiguous. Only the nonzeros of ``J_m`` are visited (an actuator moves one sub-mechanism)."""
    k, idx_b, idx_a, idx_u = pm.k, pm.idx_b, pm.idx_a, pm.idx_u
    nv, n_b, n_a, n_u = M.shape[0], idx_b.shape[0], idx_a.shape[0], idx_u.shape[0]
    n_nu = n_b + n_a
    # J_m by columns, nonzeros only: velocity index and weight
    ptr = np.zeros(n_a + 1, dtype=np.int64)
    nz_v = np.empty(n_u * n_a, dtype=np.int64)
    nz_w = np.empty(n_u * n_a)
    n = 0
    for c in range(n_a):
        for u in range(n_u):
            w = J_m[u, c]
            if w != 0.0:
                nz_v[n], nz_w[n] = idx_u[u], w
                n += 1
        ptr[c + 1] = n
    TM = np.empty((n_nu, nv))  # T^T M = (M T)^T, row by row
    for i in range(n_b):
        TM[i, :] = M[idx_b[i], :]
    for c in range(n_a):
        row = TM[n_b + c]
        row[:] = M[idx_a[c], :]
        for q in range(ptr[c], ptr[c + 1]):
            src, w = M[nz_v[q]], nz_w[q]
            for r in range(nv):
                row[r] += w * src[r]
    for r in range(nv):
        h_Mk[r] = h[r]
    for u in range(n_u):
        col = idx_u[u]
        kv = k[col]
        if kv != 0.0:
            src = M[col]
            for r in range(nv):
                h_Mk[r] += src[r] * kv
    for i in range(n_nu):
        for r in range(nv):
            MT[r, i] = TM[i, r]
        for j in range(n_b):
            M_p[i, j] = TM[i, idx_b[j]]
        for c in range(n_a):
            s = TM[i, idx_a[c]]
            for q in range(ptr[c], ptr[c + 1]):
                s += TM[i, nz_v[q]] * nz_w[q]
            M_p[i, n_b + c] = s
    for i in range(n_b):
        h_p[i] = h_Mk[idx_b[i]]
    for c in range(n_a):
        s = h_Mk[idx_a[c]]
        for q in range(ptr[c], ptr[c + 1]):
            s += nz_w[q] * h_Mk[nz_v[q]]
        h_p[n_b + c] = s
    for f in range(Jf.shape[0]):
        for r in range(6):
            J = Jf[f, r]
            for i in range(n_b):
                Jf_T[f, r, i] = J[idx_b[i]]
            s = 0.0
            for u in range(n_u):
                s += J[idx_u[u]] * k[idx_u[u]]
            Jf_k[f, r] = s
            for c in range(n_a):
                s = J[idx_a[c]]
                for q in range(ptr[c], ptr[c + 1]):
                    s += J[nz_v[q]] * nz_w[q]
                Jf_T[f, r, n_b + c] = s

__all__ = ["ProjectedModel"]
