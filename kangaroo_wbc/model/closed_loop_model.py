"""Closed-linkage model: a pinocchio spanning tree plus loop closures (Kangaroo paper, Section III).

Notation follows the paper: ``theta = [theta_u, theta_a]`` (passive, actuated), the closure error
``e_l`` (eq. (2)), the constraint Jacobian ``J_l`` (eq. (3)-(4)) split into ``J_lu``/``J_la``
(eq. (5)-(6)), the mapping Jacobian ``J_m = -J_lu^{-1} J_la`` (eq. (7)) and the acceleration bias
``Jdot_l v`` (eq. (8), App. A-B).

Per loop, with ``F_a``/``F_u`` the frames on each side of the cut, positions ``p`` and rotations
``R`` in the world, ``d = p_u - p_a`` and ``R_au = R_a^T R_u``:

.. math::

    e = \\begin{bmatrix} R_a^T d \\\\ \\log_3(R_{au}) \\end{bmatrix}, \\qquad
    J = \\begin{bmatrix} R_a^T (J^v_u - J^v_a + [d]_\\times J^\\omega_a) \\\\
         J_{\\log_3}(R_{au})\\, R_u^T (J^\\omega_u - J^\\omega_a) \\end{bmatrix}

where ``J^v``/``J^\\omega`` are the frame Jacobians in ``LOCAL_WORLD_ALIGNED`` (linear velocity of the
frame origin and angular velocity, both in the world). ``J`` is the exact derivative of ``e`` on
the configuration manifold; at a closed configuration it is the relative Jacobian of ``F_u`` w.r.t.
``F_a`` expressed in ``F_a`` (App. A, eq. (48)-(51)). Only the rows of the declared directions are
kept, minus the redundant rows found by :func:`select_independent_rows`.
kept, minus the redundant rows found by :func:`~kangaroo_wbc.model.rank.select_independent_rows`.

The model is assembled once from its description by :class:`~kangaroo_wbc.model.structure.ClosedLoopStructure`
(joint roles, kept rows, closed reference, sub-mechanisms; :meth:`ClosedLoopModel.from_files` reads
the files); this class holds the result and computes the per-tick quantities: ``e_l``, ``J_l``,
``Jdot_l v``, ``J_m``, the completed velocities and accelerations, closure FK
(:class:`~kangaroo_wbc.model.closure_fk.ClosureFkSolver`), DIK and the torque maps, payload changes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import FrameNotFound, InputError, JointNotFound, ModelError, suggest
from kangaroo_wbc.model.closure_fk import (
    CHORD_CONTRACTION,
    SINGULAR_PIVOT,
    ClosureFkInfo,
    ClosureFkSolver,
    assemble_loops,
    newton,
)
from kangaroo_wbc.model.closures import DIRECTIONS, ClosureFile
from kangaroo_wbc.model.configuration import check_vector, configuration_from_pose, support_mask
from kangaroo_wbc.model.constraint_rows import (
    STRUCTURAL_ZERO,
    Closure,
    ConstraintRows,
    KernelTables,
    universal_cut_indices,
)
from kangaroo_wbc.model.couplings import CouplingSpec
from kangaroo_wbc.model.joint_limits import UNBOUNDED_LIMIT, PassiveLimits, passive_joint_limits
from kangaroo_wbc.model.rank import RANK_RTOL, numerical_rank, select_independent_rows
from kangaroo_wbc.model.structure import (
    ASSEMBLY_TOL,
    CLOSURE_ROUNDING_FACTOR,
    RANK_ROUNDING_FACTOR,
    RANK_RTOL_MAX,
    ClosedLoopStructure,
    SubMechanism,
    assembly_columns,
)

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


class ClosedLoopModel:
    """A spanning-tree pinocchio model with loop closures and an actuated/passive split.

    Args:
        model: pinocchio model of the spanning tree (fixed base or with a free-flyer root).
        closure_file: the parsed closure specification.
        q_ref: reference pose (default: neutral). The loops are closed from it (passive joints
            first, every joint if that is not enough: :meth:`assemble`) and redundant rows are
            detected at the closed configuration, which becomes :attr:`q_ref`.
        source: the model file, reported by :meth:`info`.
        rounding: the rounding level of the file's kinematic numbers [m or rad] (0: exact), which
            sets the rank and closure tolerances (:mod:`kangaroo_wbc.model.structure`).

    Index sets (numpy int arrays) follow the paper's split: ``idx_v_a``/``idx_v_u`` are the
    velocity indices of the actuated/passive joints (``theta_dot_a``, ``theta_dot_u``),
    ``idx_q_a`` the configuration indices of the actuated joints (1-DOF each), ``idx_v_base`` the
    six floating-base velocity indices (empty for a fixed base).
    """

    def __init__(self, model: pin.Model, closure_file: ClosureFile, q_ref: np.ndarray | None = None,
                 source: str = "<memory>", rounding: float = 0.0) -> None:
        s = ClosedLoopStructure(model, closure_file, q_ref=q_ref, rounding=rounding)
        self.model = model
        self.data = model.createData()  # after the frames of added closures
        self.source = source
        self.closure_file = s.closure_file
        self.floating_base = s.floating_base
        self.joint_names = s.joint_names
        self.mass_kg = float(sum(inertia.mass for inertia in model.inertias))
        #: counts the changes of the model's inertias (:meth:`add_payload`): holders of mass-dependent
        #: terms (:class:`~kangaroo_wbc.model.projected_model.ProjectedModel`) refresh them when it moves
        self.inertia_version = 0
        #: what loading chose or skipped that the user should know (``model info`` lists them)
        self.warnings = s.warnings
        #: the MJCF reading (:class:`~kangaroo_wbc.model.mjcf.MjcfModel`) of a model read from MJCF
        self.mjcf: Any = None
        # joint roles (eq. (1)): actuated, passive, held (and why)
        self.locked_joint_names = s.locked_joint_names
        self.held_why = s.held_why
        self.actuated_joint_names = s.joints.actuated_joint_names
        self.passive_joint_names = s.joints.passive_joint_names
        self.idx_q_a, self.idx_v_a = s.joints.idx_q_a, s.joints.idx_v_a
        self.idx_q_u, self.idx_v_u = s.joints.idx_q_u, s.joints.idx_v_u
        self.idx_v_base = s.joints.idx_v_base
        self.n_a, self.n_u, self.n_b = len(self.idx_v_a), len(self.idx_v_u), len(self.idx_v_base)
        self.absolute_encoders = s.absolute_encoders
        self.absolute_actuators = s.absolute_actuators
        #: the loops and couplings and the rows of ``e_l`` kept (owner of the compiled kernel)
        self.constraint_rows: ConstraintRows = s.rows
        self.couplings: list[CouplingSpec] = s.rows.couplings
        self.n_c_declared = s.n_c_declared
        self.constraint_rank = s.constraint_rank
        #: names of the closures added to fix free ball-joint rotations (not in the closure file)
        self.added_closures = s.added_closures
        self.free_rotations = s.free_rotations
        self.submechanisms: dict[str, SubMechanism] = s.submechanisms
        # the closed reference and the tolerances of its rank and closure decisions: the rounding
        # of the file's numbers [m or rad], the relative rank tolerance of J_l, the closure residual
        # [m, rad] accepted at the reference, and the singular values of the rank decision
        self.q_ref = s.q_ref
        self.reference_assembled = s.reference_assembled
        self.reference_closure_residual = s.reference_closure_residual
        self.coordinate_rounding = s.coordinate_rounding
        self.rank_tolerance = s.rank_tolerance
        self.closure_tolerance = s.closure_tolerance
        self.rank_margin = s.rank_margin
        #: closure FK with its warm start and the kept ``J_lu^{-1}`` (:meth:`closure_fk`)
        self.closure_fk_solver = ClosureFkSolver(s.rows, self.idx_q_a, self.idx_v_u, self.q_ref)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_files(cls, urdf_path: str | Path, closures_path: str | Path | None,
                   floating_base: bool = False,
                   reference: str | Path | dict | None = None,
                   actuated: Sequence[str] | None = None, held: Sequence[str] = ()) -> ClosedLoopModel:
        """Load a model file: a URDF spanning tree and its closure file (native or extended-URDF YAML),
        or an MJCF file read as MuJoCo reads it (:func:`~kangaroo_wbc.model.importers.load_description`).

        ``reference``: a pose (joint name -> value, or a YAML/JSON file of it, see
        :func:`~kangaroo_wbc.model.configuration.configuration_from_pose`) the loops are closed from;
        other joints keep the file's reference (MJCF: MuJoCo's ``qpos0``, its joints' ``ref``; URDF: zero).
        ``actuated``: the actuated joints, instead of the file's (``--actuated``); ``held``: joints held
        at their reference value besides the file's ``held_joints`` (``--hold``: springs, locks).
        """
        from kangaroo_wbc.model.importers import load_description

        loaded = load_description(urdf_path, closures_path, floating_base, reference, actuated, held)
        clm = cls(loaded.model, loaded.closure_file, q_ref=loaded.q0, source=str(Path(urdf_path)),
                  rounding=loaded.rounding)
        clm.warnings[:0] = loaded.warnings
        clm.mjcf = loaded.mjcf
        return clm

    @property
    def closures(self) -> list[Closure]:
        """The loop closures resolved against the model (file order, then the added ones), their kept rows."""
        return self.constraint_rows.closures

    @property
    def n_c(self) -> int:
        """Number of kept constraint rows (loops, then couplings): the rows of ``e_l``, ``J_l``."""
        return self.constraint_rows.n_c

    @property
    def n_couplings(self) -> int:
        """Number of coupling rows (the last rows of ``e_l``, ``J_l``)."""
        return self.constraint_rows.n_couplings

    @property
    def row_closure(self) -> np.ndarray:
        """The constraint each row of ``e_l`` belongs to: loop ``k`` (``< K``), then coupling ``K + k``."""
        return self.constraint_rows.row_closure

    def assemble(self, q0: np.ndarray, tol: float = 1e-12, max_iter: int = 300) -> tuple[np.ndarray, ClosureFkInfo]:
        r"""Assemble the loops near a pose: ``min ||q ⊖ q0||^2`` subject to ``e_l(q) = 0``.

        Every joint moves (actuated ones included; floating-base coordinates and held joints are
        kept), on every declared row (:func:`~kangaroo_wbc.model.closure_fk.assemble_loops`:
        Levenberg–Marquardt with the pull towards ``q0`` in the constraint's null space). Joint
        limits are not enforced.

        Returns:
            The configuration and a :class:`ClosureFkInfo` (``residual``: ``||e||_inf`` on the
            declared rows; converged within ``max(tol, closure_tolerance)``).
        """
        return assemble_loops(self.constraint_rows, self.check_configuration(q0),
                              assembly_columns(self.model, self.locked_joint_names, self.idx_v_base),
                              tol, max_iter, self.closure_tolerance)

    def joint_roles(self) -> dict[str, dict[str, str]]:
        """Every joint's role and why: ``actuated`` (the file's key or actuator, ``--actuated``, or
        chosen by the model), ``held`` (named, a spring, or an idle motion), ``passive`` (the loops or
        couplings that determine it) or ``base`` (the floating base)."""
        roles: dict[str, dict[str, str]] = {}
        if self.floating_base:
            roles[str(self.model.names[1])] = {"role": "base", "why": "free-flyer root"}
        sub_of = {n: s.name for s in self.submechanisms.values() for n in s.passive_joints}
        for n in self.joint_names:
            if n in self.actuated_joint_names:
                roles[n] = {"role": "actuated", "why": self.closure_file.actuated_why.get(n, "actuated_joints")}
            elif n in self.locked_joint_names:
                roles[n] = {"role": "held", "why": self.held_why.get(n, "held")}
            else:
                roles[n] = {"role": "passive", "why": f"determined by {sub_of[n]!r}" if n in sub_of
                            else "determined by the closures"}
        return roles

    # ------------------------------------------------------------------ helpers
    def check_configuration(self, q: np.ndarray) -> np.ndarray:
        """Return ``q`` as a float array after checking its size and finiteness."""
        return check_vector(q, self.model.nq, "configuration")

    def check_vector(self, x: np.ndarray, n: int, what: str) -> np.ndarray:
        """Return ``x`` as a float array after checking that it has shape ``(n,)`` and is finite.

        Raises:
            InputError: wrong shape or non-finite values (the message names ``what``).
        """
        return check_vector(x, n, what)

    def add_payload(self, link: str, mass_kg: float) -> None:
        """Attach (``mass_kg`` > 0) or remove (< 0) a point payload at the centre of mass of the body
        that frame ``link`` belongs to, in place: the body's mass changes, its CoM and rotational
        inertia stay, every user of :attr:`model` sees it (the shared chain state); ``mass_kg`` is updated.

        Raises:
            FrameNotFound: unknown frame (the message lists the valid ones).
            InputError: a non-finite mass, or one that leaves the body without mass.
        """
        m = self.model
        if not m.existFrame(link):
            raise FrameNotFound(f"unknown link {link!r}." + suggest(link, [f.name for f in m.frames]))
        j = m.frames[m.getFrameId(link)].parentJoint
        body = m.inertias[j]
        if not (math.isfinite(mass_kg) and body.mass + mass_kg > 0.0):
            raise InputError(f"payload {mass_kg} kg on {link!r}: the body's mass {body.mass:.3f} kg must stay > 0")
        m.inertias[j] = pin.Inertia(body.mass + mass_kg, body.lever, body.inertia)
        self.mass_kg = float(sum(inertia.mass for inertia in m.inertias))
        self.inertia_version += 1

    def forget_warm_start(self) -> None:
        """Make the next closure FK without ``q_guess`` start from ``q_ref``, as after construction
        (it starts from the last converged solution otherwise)."""
        self.closure_fk_solver.forget_warm_start()

    def kernel_tables(self) -> KernelTables:
        """The index tables of the closures that :func:`~kangaroo_wbc.model.closure_kernel.build_kernel`
        takes after the model: ``build_kernel(model, *clm.kernel_tables(), columns=columns)``."""
        return self.constraint_rows.kernel_tables()

    def passive_joint_limits(self, margin: float | np.ndarray = 0.0) -> PassiveLimits:
        """The passive 1-DOF joints with a finite position limit, their limits moved inwards by ``margin``
        [rad or m] (a scalar or one value per passive joint of :attr:`passive_joint_names`)
        (:func:`~kangaroo_wbc.model.joint_limits.passive_joint_limits`).

        Raises:
            InputError: a negative or non-finite margin, or one of the wrong size.
        """
        return passive_joint_limits(self.model, self.passive_joint_names, self.idx_v_u, margin)

    def actuator_positions(self, q: np.ndarray) -> np.ndarray:
        """Actuated joint positions ``theta_a`` [m or rad] read from ``q``."""
        return np.asarray(q)[self.idx_q_a].copy()

    # ------------------------------------------------------------------ kinematics (eq. 2-10)
    @property
    def kernel(self):
        """The compiled closure kinematics of the kept rows (:mod:`kangaroo_wbc.model.closure_kernel`,
        the one implementation of ``e_l``, ``J_l`` and ``Jdot_l v``), None without closures.

        Raises:
            ModelError: a joint type it does not support (planar, helical, composite).
        """
        return self.constraint_rows.kernel

    def jlu_block_lu(self):
        """A :class:`~kangaroo_wbc.model.block_lu.BlockLU` for ``J_lu`` (its independent square blocks,
        from the loops' joint columns), or None (no passive joints, or coupled blocks that are not
        square). A new object per call: each user keeps its own factors."""
        return self.closure_block_lu(self.idx_v_u)

    def closure_block_lu(self, columns: np.ndarray):
        """A :class:`~kangaroo_wbc.model.block_lu.BlockLU` for the closure Jacobian's columns
        ``columns`` (velocity indices, as many as kept rows; e.g. ``J_lu``: the passive joints), or
        None (not square, or coupled blocks that are not). A new object per call."""
        from kangaroo_wbc.model.block_lu import BlockLU, block_structure

        if self.n_c == 0 or self.n_c != len(columns):
            return None
        pattern = self.constraint_rows.row_support()[:, np.asarray(columns, dtype=int)] != 0.0
        blocks = block_structure(pattern)
        return None if blocks is None else BlockLU(blocks, self.n_c)

    def closure_error(self, q: np.ndarray) -> np.ndarray:
        """Closure error ``e_l(theta)`` (eq. (2)) [m, rad], one entry per kept constraint row."""
        q = self.check_configuration(q)
        rows = self.constraint_rows
        return rows.kernel.error(q).copy() if rows.constrained else np.zeros(0)

    def coupling_errors(self, q: np.ndarray) -> np.ndarray:
        """The coupling rows of ``e_l`` (:mod:`kangaroo_wbc.model.couplings`) [rad or m]."""
        return self.constraint_rows.coupling_errors(self.check_configuration(q))

    def constraint_jacobian(self, q: np.ndarray) -> np.ndarray:
        """Constraint Jacobian ``J_l = d e_l / d theta`` (eq. (3)-(4), App. A eq. (51)), (n_c, nv)."""
        return self.constraint_rows.error_and_jacobian(self.check_configuration(q))[1]

    def error_and_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(e_l, J_l)`` in one pass (one forward-kinematics and Jacobian sweep)."""
        return self.constraint_rows.error_and_jacobian(self.check_configuration(q))

    def constraint_bias(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Acceleration bias ``Jdot_l v`` (eq. (8); App. A-B eq. (52)-(57)), (n_c,): the second time
        derivative of ``e_l`` along ``v`` with zero acceleration
        (:func:`~kangaroo_wbc.model.closure_kernel.closure_velocity_bias`; its ``log3`` rows are
        exact on the closure)."""
        q = self.check_configuration(q)
        v = self.check_vector(v, self.model.nv, "velocity")
        rows = self.constraint_rows
        return rows.kernel.velocity_bias(q, v).copy() if rows.constrained else np.zeros(0)

    def split(self, J_l: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(J_lu, J_la)``: passive and actuated columns of ``J_l`` (eq. (5))."""
        return J_l[:, self.idx_v_u], J_l[:, self.idx_v_a]

    def mapping_jacobian(self, q: np.ndarray) -> np.ndarray:
        """Mapping Jacobian ``J_m = -J_lu^{-1} J_la`` (eq. (7)), (n_u, n_a): ``theta_dot_u = J_m theta_dot_a``."""
        J_lu, J_la = self.split(self.constraint_jacobian(q))
        return -self._solve(J_lu, J_la)

    def _solve(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        try:
            return np.linalg.solve(A, B)
        except np.linalg.LinAlgError as exc:
            raise ModelError("J_lu is singular: the mechanism is at a kinematic singularity") from exc

    def passive_velocity(self, q: np.ndarray, v_a: np.ndarray) -> np.ndarray:
        """Differential forward kinematics (eq. (7)): ``theta_dot_u = J_m theta_dot_a`` [rad/s]."""
        v_a = self.check_vector(v_a, self.n_a, "actuated velocity")
        return self.mapping_jacobian(q) @ v_a

    def complete_velocity(self, q: np.ndarray, v_a: np.ndarray, v_base: np.ndarray | None = None) -> np.ndarray:
        """Full generalized velocity ``v`` with passive entries from DFK (and base twist if floating)."""
        v = np.zeros(self.model.nv)
        v[self.idx_v_a] = self.check_vector(v_a, self.n_a, "actuated velocity")
        if self.floating_base and v_base is not None:
            v[self.idx_v_base] = self.check_vector(v_base, 6, "base velocity")
        v[self.idx_v_u] = self.passive_velocity(q, v_a)
        return v

    def passive_acceleration(self, q: np.ndarray, v: np.ndarray, a_a: np.ndarray) -> np.ndarray:
        """Passive accelerations (eq. (10)): ``theta_ddot_u = J_m theta_ddot_a - J_lu^{-1} Jdot_l v``."""
        a_a = self.check_vector(a_a, self.n_a, "actuated acceleration")
        J_lu, J_la = self.split(self.constraint_jacobian(q))
        rhs = -(J_la @ a_a + self.constraint_bias(q, v))
        return self._solve(J_lu, rhs)

    def complete_acceleration(self, q: np.ndarray, v: np.ndarray, a_a: np.ndarray,
                              a_base: np.ndarray | None = None) -> np.ndarray:
        """Full generalized acceleration with passive entries from eq. (10)."""
        a = np.zeros(self.model.nv)
        a[self.idx_v_a] = a_a
        if self.floating_base and a_base is not None:
            a[self.idx_v_base] = self.check_vector(a_base, 6, "base acceleration")
        a[self.idx_v_u] = self.passive_acceleration(q, v, a_a)
        return a

    # ------------------------------------------------------------------ closure FK
    def newton(self, q: np.ndarray, max_iter: int, tol: float, least_squares: bool = False,
               unknowns: np.ndarray | None = None) -> tuple[np.ndarray, ClosureFkInfo]:
        """Damped Newton on the closure, on the manifold (``pin.integrate``): ``e_l = 0`` over the
        velocity indices ``unknowns`` (default: the passive joints), the other coordinates held
        (:func:`~kangaroo_wbc.model.closure_fk.newton`: a fresh Jacobian per step, LU or least
        squares, halved until ``||e_l||`` decreases). Converged when ``||e_l||_inf <= tol`` [m, rad].
        The reference is closed with it, it finishes closure FK where the compiled chord iteration
        cannot, and the Kangaroo's serial twin solves its outputs-held closure with it.
        """
        return newton(self.model, self.constraint_rows.error_and_jacobian, q,
                      self.idx_v_u if unknowns is None else unknowns, max_iter, tol, least_squares)

    def closure_fk(self, theta_a: np.ndarray, q_guess: np.ndarray | None = None, tol: float = 1e-12,
                   max_iter: int = 50, raise_on_failure: bool = True,
                   max_step: float | np.ndarray | None = None) -> tuple[np.ndarray, ClosureFkInfo]:
        """Closure forward kinematics: passive coordinates such that ``e_l = 0`` for ``theta_a``.

        Newton on ``J_lu`` (eq. (2), (5)) warm-started from ``q_guess`` (default: the last solution,
        else the reference closed configuration). Base coordinates of ``q_guess`` are kept.
        Iterations are *chord* steps in compiled code: ``J_lu^{-1}`` is kept between calls and
        reused while each step shrinks the residual by the factor ``CHORD_CONTRACTION``; otherwise
        it is refreshed at the current point. Near the previous solution (the 1 kHz case) this
        needs no Jacobian and two or three error evaluations. Where the chord iteration cannot
        finish (no compiled kernel, singular ``J_lu``, far from a solution), damped Newton
        (:meth:`newton`: a fresh ``J_lu`` per step, halved until the residual decreases)
        continues from its last point.

        Continuation: when some actuator is farther from its position in ``q_guess`` than
        ``max_step`` (per actuator, in its unit; default an eighth of its position range), the
        change is split into equal steps, each solved from the previous solution, so that a far
        target is reached on the assembly branch of ``q_guess`` (a strongly non-linear linkage can
        otherwise converge to another branch). If a step fails, the target is solved directly from
        ``q_guess``; ``iterations`` counts the steps' iterations too.

        Raises:
            ClosureFkError: no convergence to ``tol`` (inf-norm, [m]/[rad]) in ``max_iter`` steps.
        """
        return self.closure_fk_solver.solve(theta_a, q_guess, tol, max_iter, raise_on_failure, max_step)

    # ------------------------------------------------------------------ DIK / torque maps (eq. 14-23)
    def torque_map(self, q: np.ndarray, tau_u: np.ndarray) -> np.ndarray:
        """Map passive torques to equivalent actuated forces (eq. (18)): ``tau_a = J_m^T tau_u``."""
        tau_u = self.check_vector(tau_u, self.n_u, "passive torque")
        return self.mapping_jacobian(q).T @ tau_u

    def _selection(self, joints: list[str]) -> np.ndarray:
        S = np.zeros((len(joints), self.n_u))
        pos = {n: i for i, n in enumerate(self.passive_joint_names)}
        for r, n in enumerate(joints):
            if n not in pos:
                raise JointNotFound(f"{n!r} is not a passive joint." + suggest(n, self.passive_joint_names))
            S[r, pos[n]] = 1.0
        return S

    def differential_ik(self, q: np.ndarray, joints: list[str], v_s: np.ndarray) -> np.ndarray:
        """DIK (eq. (21)-(22)): actuated velocities giving selected passive velocities ``v_s``.

        ``theta_dot_a = (S J_m)^+ theta_dot_s`` (exact when ``S J_m`` is square and invertible).
        """
        A = self._selection(joints) @ self.mapping_jacobian(q)
        v_s = self.check_vector(v_s, len(joints), "selected passive velocity")
        return np.linalg.lstsq(A, v_s, rcond=None)[0]

    def inverse_torque_map(self, q: np.ndarray, joints: list[str], tau_a: np.ndarray) -> np.ndarray:
        """Inverse torque map (eq. (23)): virtual torques on selected passive joints equivalent to ``tau_a``.

        Solves ``tau_a = (S J_m)^T tau_s`` in the least-squares sense.
        """
        A = self._selection(joints) @ self.mapping_jacobian(q)
        tau_a = self.check_vector(tau_a, self.n_a, "actuated force")
        return np.linalg.lstsq(A.T, tau_a, rcond=None)[0]

    # ------------------------------------------------------------------ info
    def info(self, locked_actuators: Sequence[str] = ()) -> dict:
        """Counts and sub-mechanism table (the ``model info`` command).

        ``locked_actuators``: actuated joints held at their position (a seized screw, a brake): they
        leave the actuated counts (``n_actuated``, the sub-mechanisms' ``n_actuated``), the
        mechanism's mobility ``n_dof = n_b + n_actuated`` drops with them, and ``locked_actuators``
        lists them. Raises :class:`InputError` for a name that is not an actuated joint.
        """
        locked = list(dict.fromkeys(locked_actuators))
        for name in locked:
            if name not in self.actuated_joint_names:
                raise InputError(f"--lock: {name!r} is not an actuated joint."
                                 + suggest(name, self.actuated_joint_names))
        subs = {n: {**s.counts, "n_actuated": len([j for j in s.actuated_joints if j not in locked])}
                for n, s in self.submechanisms.items()}
        return {
            "source": self.source,
            "floating_base": self.floating_base,
            "nq": int(self.model.nq),
            "nv": int(self.model.nv),
            "n_joints": len(self.joint_names),
            "n_actuated": self.n_a - len(locked),
            "n_dof": self.n_b + self.n_a - len(locked),
            "locked_actuators": locked,
            "n_passive": self.n_u,
            "n_closures": len(self.closures),
            "n_constraints_declared": self.n_c_declared,
            "n_constraints": self.n_c,
            "constraint_rank": self.constraint_rank,
            "mass_kg": round(self.mass_kg, 6),
            "submechanisms": subs,
            "actuated_joints": self.actuated_joint_names,
            "absolute_encoders": self.absolute_encoders,
            "locked_joints": self.locked_joint_names,
            "free_rotations": self.free_rotations,
            "couplings": [c.as_dict() for c in self.couplings],
            "joint_roles": self.joint_roles(),
            "warnings": list(self.warnings),
            "reference_closure_residual": self.reference_closure_residual,
            "reference_assembled": self.reference_assembled,
            "closure_tolerance": self.closure_tolerance,
            "coordinate_rounding": self.coordinate_rounding,
            "rank_tolerance": self.rank_tolerance,
            "rank_margin": dict(self.rank_margin),
        }


__all__ = [
    "ClosedLoopModel", "Closure", "ClosureFkInfo", "KernelTables", "SubMechanism", "select_independent_rows",
    "DIRECTIONS", "configuration_from_pose",
    # defined beside the model, importable from here as before
    "ASSEMBLY_TOL", "CHORD_CONTRACTION", "CLOSURE_ROUNDING_FACTOR", "LWA", "PassiveLimits", "RANK_ROUNDING_FACTOR",
    "RANK_RTOL", "RANK_RTOL_MAX", "SINGULAR_PIVOT", "STRUCTURAL_ZERO", "UNBOUNDED_LIMIT", "numerical_rank",
    "support_mask", "universal_cut_indices",
]
