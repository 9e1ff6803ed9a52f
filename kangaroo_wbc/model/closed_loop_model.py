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
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin
import scipy.linalg
import yaml

from kangaroo_wbc.errors import (
    ClosureFkError,
    ConfigError,
    FrameNotFound,
    InputError,
    JointNotFound,
    ModelError,
    suggest,
)
from kangaroo_wbc.model.closures import DIRECTIONS, ClosureFile, ClosureSpec
from kangaroo_wbc.model.couplings import CouplingSpec, CouplingTables, coupling_tables
from kangaroo_wbc.model.roles import alternatives, greedy_span, motion_basis
from kangaroo_wbc.model.sources import read_text

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

#: Relative rank tolerance of the closure Jacobian for a file written to machine precision: a
#: direction is dependent when its singular value is below ``RANK_RTOL`` times the largest.
RANK_RTOL = 1e-7

#: A reference configuration counts as closed when ``||e||_inf`` over every declared row is below
#: this [m, rad] (a file written to machine precision); otherwise the loops are assembled by moving
#: every joint.
ASSEMBLY_TOL = 1e-9

#: A file whose numbers are rounded to ``δ`` (:func:`~kangaroo_wbc.model.importers.coordinate_rounding`)
#: has axes that agree to about ``δ`` [rad] and positions to about ``δ`` [m] per number: its rank
#: tolerance is ``RANK_ROUNDING_FACTOR * δ`` relative to the largest singular value (at most
#: ``RANK_RTOL_MAX``), and its loops count as closed to ``CLOSURE_ROUNDING_FACTOR * δ * (1 + L)``
#: with ``L`` [m] the longest lever of a loop (a loop sums a handful of rounded lengths and angles).
RANK_ROUNDING_FACTOR = 100.0
RANK_RTOL_MAX = 1e-3
CLOSURE_ROUNDING_FACTOR = 10.0

#: Entries of ``|J_l|`` below this are treated as structural zeros (sub-mechanism membership).
STRUCTURAL_ZERO = 1e-9


_getrf, _getrs = scipy.linalg.lapack.dgetrf, scipy.linalg.lapack.dgetrs

#: A chord step (reused ``J_lu^{-1}``) is kept only if it shrinks the residual at least this much.
CHORD_CONTRACTION = 0.1

#: Newton solves by least squares when an LU pivot of ``J_lu`` is below this (near-singular).
SINGULAR_PIVOT = 1e-14


def universal_cut_indices(direction_indices) -> tuple[int, int, int, int] | None:
    """``(i, j, k, sign)`` of a universal-joint cut (exactly one declared rotation direction
    ``3 + k``), None for any other closure: free rotation axes ``i`` (first, fixed in ``F_a``) and
    ``j`` (second, fixed in ``F_u``), constrained axis ``k``, and the sign ``-epsilon_ijk`` that
    makes ``e_k = sign * (R_a^T R_u)[i, j]`` equal the rotation about ``k`` to first order. For
    ``R_a^T R_u = R_i(alpha) R_j(beta)`` the entry ``[i, j]`` vanishes exactly."""
    rot = [int(d) - 3 for d in direction_indices if int(d) >= 3]
    if len(rot) != 1:
        return None
    k = rot[0]
    i, j = [a for a in range(3) if a != k]
    eps = 1 if (i, j, k) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)) else -1
    return i, j, k, -eps


def numerical_rank(sv: np.ndarray, rtol: float) -> int:
    """The number of singular values ``sv`` (descending) above ``rtol`` times the largest."""
    return int(np.sum(sv > rtol * sv[0])) if sv.size and sv[0] > 0.0 else 0


def select_independent_rows(J: np.ndarray, rtol: float = RANK_RTOL) -> np.ndarray:
    """Indices (sorted) of a maximal set of linearly independent rows of ``J``.

    The rank is decided on the singular values of ``J``, relative to the largest
    (:func:`numerical_rank`): scale-free, whatever the units and size of the mechanism. The rows are
    the first ``rank`` pivots of a QR with column pivoting on ``J^T`` (the pivot order ranks the rows).
    """
    if J.shape[0] == 0 or J.shape[1] == 0:
        return np.zeros(0, dtype=int)
    rank = numerical_rank(np.linalg.svd(J, compute_uv=False), rtol)
    if rank == 0:
        return np.zeros(0, dtype=int)
    _, _, piv = scipy.linalg.qr(J.T, mode="economic", pivoting=True)
    return np.sort(piv[:rank])


def configuration_from_pose(model: pin.Model, pose: str | Path | dict, base: np.ndarray | None = None) -> np.ndarray:
    """A configuration of ``model`` from a pose: joint name -> value, other joints at ``base`` (default:
    neutral).

    ``pose`` is a mapping or a YAML/JSON file holding one (optionally under a ``joints`` key). A
    1-DOF joint takes a number [rad or m]; a multi-DOF joint a list of its ``nq`` configuration
    coordinates in pinocchio's order (a ball joint: quaternion ``x, y, z, w``).

    Raises:
        ConfigError: unreadable file, non-numeric or wrongly sized value (file and key named).
        JointNotFound: a joint the model does not have (the valid names listed).
    """
    source = "<reference pose>"
    if not isinstance(pose, dict):
        path = Path(pose)
        source = str(path)
        text = read_text(path, "reference pose file", ConfigError)
        try:
            pose = yaml.safe_load(text)  # JSON is YAML too
        except (yaml.YAMLError, ValueError, RecursionError) as exc:
            raise ConfigError(f"{path}: not valid YAML or JSON: {exc}") from exc
        if isinstance(pose, dict) and isinstance(pose.get("joints"), dict):
            pose = pose["joints"]
        if not isinstance(pose, dict):
            raise ConfigError(f"{path}: expected a mapping joint name -> value, got {type(pose).__name__}")
    q = pin.neutral(model) if base is None else np.array(base, dtype=float)
    names = list(model.names)[1:]
    for name, value in pose.items():
        name = str(name)
        if name not in names:
            raise JointNotFound(f"{source}: unknown joint {name!r}." + suggest(name, names))
        jm = model.joints[model.getJointId(name)]
        try:
            x = np.atleast_1d(np.asarray(value, dtype=float))
        except (TypeError, ValueError):
            raise ConfigError(f"{source}: key {name!r}: expected a number or a list of numbers, "
                              f"got {value!r}") from None
        if x.shape != (jm.nq,) or not np.all(np.isfinite(x)):
            raise ConfigError(f"{source}: key {name!r}: expected {jm.nq} finite value(s) (the joint's "
                              f"configuration coordinates), got {value!r}")
        if jm.shortname() in ("JointModelSpherical", "JointModelFreeFlyer"):
            x[-4:] /= np.linalg.norm(x[-4:])
        q[jm.idx_q:jm.idx_q + jm.nq] = x
    return q


def support_mask(model: pin.Model, frame_ids) -> np.ndarray:
    """(len(frame_ids), nv): 1 on the velocity indices that move each frame (its support), else 0."""
    mask = np.zeros((len(frame_ids), model.nv))
    for k, fid in enumerate(frame_ids):
        for j in model.supports[int(model.frames[int(fid)].parentJoint)][1:]:
            mask[k, model.joints[j].idx_v:model.joints[j].idx_v + model.joints[j].nv] = 1.0
    return mask


@dataclass
class Closure:
    """A loop closure resolved against a pinocchio model."""

    spec: ClosureSpec
    frame_a_id: int
    frame_u_id: int
    rows: np.ndarray  # selected direction indices (0..5) after redundancy removal


@dataclass
class SubMechanism:
    """A closed sub-mechanism: its loops, constraint rows and the joints they involve."""

    name: str
    closures: list[str]
    rows: np.ndarray  # indices into e_l / J_l rows
    passive_joints: list[str] = field(default_factory=list)
    actuated_joints: list[str] = field(default_factory=list)

    n_passive_dofs: int = 0

    @property
    def counts(self) -> dict[str, int]:
        return {
            "n_actuated": len(self.actuated_joints),
            "n_passive": self.n_passive_dofs,
            "n_constraints": int(len(self.rows)),
        }


@dataclass
class ClosureFkInfo:
    """Result of :meth:`ClosedLoopModel.closure_fk`."""

    iterations: int
    residual: float
    converged: bool


class KernelTables(NamedTuple):
    """Index tables of the closures, in the order :class:`~kangaroo_wbc.model.closure_kernel.ClosureKernel`
    takes them after the model (see :meth:`ClosedLoopModel.kernel_tables`)."""

    #: frames of the closures (both sides), sorted; a closure's slots index this array
    frame_ids: np.ndarray
    #: per closure: the slot of its frame ``a`` and of its frame ``u`` in ``frame_ids``
    slot_a: np.ndarray
    slot_u: np.ndarray
    #: per closure: +1 / -1 on the velocity columns that move only frame ``u`` / only ``a``, else 0
    signed_mask: np.ndarray
    #: the kept rows in the flattened (closure, 6) error
    flat_rows: np.ndarray
    #: closures whose rotation error is the SO(3) log
    rot_log3: np.ndarray
    #: universal-joint cuts: (closure indices, their (i, j, k, sign) rows)
    universal: tuple[np.ndarray, np.ndarray]
    #: the joint couplings, rows after the loops' (:class:`~kangaroo_wbc.model.couplings.CouplingTables`)
    couplings: CouplingTables


#: A position limit at or beyond this magnitude counts as absent (URDF/MJCF importers' "unbounded").
UNBOUNDED_LIMIT = 1e10


class PassiveLimits(NamedTuple):
    """The 1-DOF passive joints with a finite position limit (:meth:`ClosedLoopModel.passive_joint_limits`).

    ``lower``/``upper`` [rad or m] are the model's limits moved inwards by the margin (``-inf``/``inf``
    for a missing side); ``velocity`` [rad/s or m/s] the speed limit (``inf`` where the model has none).
    """

    names: list[str]
    #: configuration and velocity index of each joint (pinocchio ``idx_q``, ``idx_v``)
    idx_q: np.ndarray
    idx_v: np.ndarray
    #: row of each joint in the passive velocities ``theta_dot_u`` (``idx_v_u``), i.e. in ``J_m``
    row_u: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray


class ClosedLoopModel:
    """A spanning-tree pinocchio model with loop closures and an actuated/passive split.

    Args:
        model: pinocchio model of the spanning tree (fixed base or with a free-flyer root).
        closure_file: the parsed closure specification.
        q_ref: reference pose (default: neutral). The loops are closed from it (passive joints
            first, every joint if that is not enough: :meth:`assemble`) and redundant rows are
            detected at the closed configuration, which becomes :attr:`q_ref`.

    Index sets (numpy int arrays) follow the paper's split: ``idx_v_a``/``idx_v_u`` are the
    velocity indices of the actuated/passive joints (``theta_dot_a``, ``theta_dot_u``),
    ``idx_q_a`` the configuration indices of the actuated joints (1-DOF each), ``idx_v_base`` the
    six floating-base velocity indices (empty for a fixed base).
    """

    def __init__(self, model: pin.Model, closure_file: ClosureFile, q_ref: np.ndarray | None = None,
                 source: str = "<memory>", rounding: float = 0.0) -> None:
        self.model = model
        self.data = model.createData()
        self.source = source
        self.closure_file = closure_file
        self.floating_base = model.njoints > 1 and model.joints[1].shortname() == "JointModelFreeFlyer"
        self.joint_names: list[str] = [n for n in list(model.names)[1:]
                                       if not (self.floating_base and n == model.names[1])]
        self.mass_kg = float(sum(inertia.mass for inertia in model.inertias))
        #: counts the changes of the model's inertias (:meth:`add_payload`): holders of mass-dependent
        #: terms (:class:`~kangaroo_wbc.model.projected_model.ProjectedModel`) refresh them when it moves
        self.inertia_version = 0
        #: what loading chose or skipped that the user should know (``model info`` lists them)
        self.warnings: list[str] = []
        #: the MJCF reading (:class:`~kangaroo_wbc.model.mjcf.MjcfModel`) of a model read from MJCF
        self.mjcf: Any = None
        self.locked_joint_names: list[str] = []
        self.free_rotations: list[dict] = []
        #: Names of the closures added to fix free ball-joint rotations (not in the closure file).
        self.added_closures: list[str] = []
        #: the rounding level of the file's kinematic numbers [m or rad] and the tolerances it sets
        #: (:data:`RANK_ROUNDING_FACTOR`): relative rank tolerance of ``J_l``, closure residual [m, rad]
        #: accepted at the reference
        self.coordinate_rounding = float(rounding)
        self.rank_tolerance = min(max(RANK_RTOL, RANK_ROUNDING_FACTOR * self.coordinate_rounding), RANK_RTOL_MAX)
        self.closure_tolerance = ASSEMBLY_TOL
        #: singular values of the loop rows' Jacobian at the reference, relative to the largest: the
        #: smallest kept and the largest dropped (0 if none), the figures of the rank decision
        self.rank_margin = {"smallest_kept": 1.0, "largest_dropped": 0.0}
        #: why each held joint is held (:meth:`joint_roles`)
        self.held_why: dict[str, str] = {}
        self._hold_named_joints(closure_file)
        self._resolve_joints(closure_file)
        self._resolve_frames(closure_file)
        self._resolve_couplings(closure_file)
        if closure_file.infer_actuated and not closure_file.actuated_joints:
            self._infer_actuated(pin.neutral(model) if q_ref is None else self.check_configuration(q_ref))
        self.absolute_encoders = self._check_joint_names(closure_file.absolute_encoders, "absolute_encoders")
        self.absolute_actuators = self._check_joint_names(closure_file.absolute_actuators, "absolute_actuators")
        self._q_last: np.ndarray | None = None
        self._select_rows(q_ref)
        self._build_submechanisms()

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_files(cls, urdf_path: str | Path, closures_path: str | Path | None,
                   floating_base: bool = False,
                   reference: str | Path | dict | None = None,
                   actuated: Sequence[str] | None = None, held: Sequence[str] = ()) -> ClosedLoopModel:
        """Load a model file: a URDF spanning tree and its closure file (native or extended-URDF YAML),
        or an MJCF file read as MuJoCo reads it (:func:`~kangaroo_wbc.model.importers.load_model`).

        ``reference``: a pose (joint name -> value, or a YAML/JSON file of it, see
        :func:`configuration_from_pose`) the loops are closed from; other joints keep the file's
        reference (MJCF: MuJoCo's ``qpos0``, its joints' ``ref``; URDF: zero).
        ``actuated``: the actuated joints, instead of the file's (``--actuated``); ``held``: joints held
        at their reference value besides the file's ``held_joints`` (``--hold``: springs, locks).
        """
        urdf_path = Path(urdf_path)
        if not urdf_path.exists():
            raise ModelError(f"{urdf_path}: URDF file not found")
        from kangaroo_wbc.model.importers import load_model

        loaded = load_model(urdf_path, closures_path, floating_base)
        cf = loaded.closure_file
        if actuated is not None:
            cf = replace(cf, actuated_joints=list(actuated), actuated_why={n: "named by --actuated" for n in actuated},
                         infer_actuated=False)
        if held:
            cf = replace(cf, held_joints=list(dict.fromkeys([*cf.held_joints, *held])),
                         held_why={**cf.held_why, **{n: "named by --hold" for n in held}})
        loaded.closure_file = cf
        q_ref = loaded.q0 if reference is None else configuration_from_pose(loaded.model, reference, loaded.q0)
        clm = cls(loaded.model, loaded.closure_file, q_ref=q_ref, source=str(urdf_path), rounding=loaded.rounding)
        clm.warnings[:0] = loaded.warnings
        clm.mjcf = loaded.mjcf
        return clm

    def _joint_id(self, name: str, key: str) -> int:
        if name not in self.joint_names:
            raise JointNotFound(f"{self.closure_file.source}: {key}: unknown joint {name!r}."
                                + suggest(name, self.joint_names))
        return int(self.model.getJointId(name))

    def _check_joint_names(self, names: list[str], key: str) -> list[str]:
        for n in names:
            self._joint_id(n, key)
        return list(names)

    def _resolve_joints(self, cf: ClosureFile) -> None:
        m = self.model
        if len(set(cf.actuated_joints)) != len(cf.actuated_joints):
            raise ModelError(f"{cf.source}: actuated_joints: duplicated names in {cf.actuated_joints}")
        ids_a = [self._joint_id(n, "actuated_joints") for n in cf.actuated_joints]
        for n, j in zip(cf.actuated_joints, ids_a):
            if m.joints[j].nq != 1 or m.joints[j].nv != 1:
                raise ModelError(f"{cf.source}: actuated joint {n!r} must be 1-DOF (prismatic or "
                                 f"revolute), it has nq={m.joints[j].nq}, nv={m.joints[j].nv}")
        self.actuated_joint_names = list(cf.actuated_joints)
        skip = set(cf.actuated_joints) | set(self.locked_joint_names)
        self.passive_joint_names = [n for n in self.joint_names if n not in skip]
        ids_u = [int(m.getJointId(n)) for n in self.passive_joint_names]
        self.idx_q_a = np.array([m.joints[j].idx_q for j in ids_a], dtype=int)
        self.idx_v_a = np.array([m.joints[j].idx_v for j in ids_a], dtype=int)
        self.idx_v_u = np.array([m.joints[j].idx_v + k for j in ids_u for k in range(m.joints[j].nv)],
                                dtype=int)
        self.idx_q_u = np.array([m.joints[j].idx_q + k for j in ids_u for k in range(m.joints[j].nq)],
                                dtype=int)
        self.idx_v_base = np.arange(6) if self.floating_base else np.zeros(0, dtype=int)
        self.n_a = len(self.idx_v_a)
        self.n_u = len(self.idx_v_u)
        self.n_b = len(self.idx_v_base)
        # closure FK's default continuation step: an eighth of each actuator's position range (no
        # limit where the range is unbounded)
        span = m.upperPositionLimit[self.idx_q_a] - m.lowerPositionLimit[self.idx_q_a]
        self._fk_default_step = np.where(np.isfinite(span) & (span > 0.0), 0.125 * span, np.inf)
        self._fk_default_step_min2 = float(self._fk_default_step.min()) ** 2 if self.n_a else np.inf

    def _resolve_frames(self, cf: ClosureFile) -> None:
        frame_names = [f.name for f in self.model.frames]
        self.closures: list[Closure] = []
        for c in cf.closures:
            ids = []
            for key, name in (("frame_a", c.frame_a), ("frame_u", c.frame_u)):
                if not self.model.existFrame(name):
                    raise FrameNotFound(f"{cf.source}: closure {c.name!r}: {key}: unknown frame {name!r}."
                                        + suggest(name, frame_names))
                ids.append(int(self.model.getFrameId(name)))
            self.closures.append(Closure(c, ids[0], ids[1], np.array(c.direction_indices, dtype=int)))
        self._frame_ids = np.array(sorted({i for c in self.closures for i in (c.frame_a_id, c.frame_u_id)}),
                                   dtype=int)
        slot = {fid: k for k, fid in enumerate(self._frame_ids)}
        self._slot_a = np.array([slot[c.frame_a_id] for c in self.closures], dtype=int)
        self._slot_u = np.array([slot[c.frame_u_id] for c in self.closures], dtype=int)
        mask = support_mask(self.model, self._frame_ids)
        self._signed_mask = mask[self._slot_u] - mask[self._slot_a]

    def _resolve_couplings(self, cf: ClosureFile) -> None:
        """The joint couplings (:mod:`kangaroo_wbc.model.couplings`): their kernel tables and the
        support mask of their rows (1 on the coupled joints' velocity indices)."""
        self.couplings: list[CouplingSpec] = list(cf.couplings)
        names = [c.name for c in self.couplings]
        if len(set(names)) != len(names):
            raise ModelError(f"{cf.source}: duplicated coupling names in {names}")
        self._coupling_tables = coupling_tables(self.model, self.couplings, cf.source)
        t = self._coupling_tables
        self._coupling_mask = np.zeros((len(self.couplings), self.model.nv))
        for k in range(len(self.couplings)):
            used = t.term_side[k] >= 0
            self._coupling_mask[k, t.term_v[k, used]] = 1.0

    @property
    def n_couplings(self) -> int:
        """Number of coupling rows (the last rows of ``e_l``, ``J_l``)."""
        return len(self.couplings)

    @property
    def _constrained(self) -> bool:
        return bool(self.closures) or bool(self.couplings)

    def _row_support(self) -> np.ndarray:
        """(n_c, nv): the signed joint support of each kept row (loops: ``mask_u - mask_a``;
        couplings: 1 on the coupled joints)."""
        return np.vstack([self._signed_mask[self.row_closure[:self.n_c - self.n_couplings]], self._coupling_mask])

    def _set_rows(self) -> None:
        """Flat index of each kept row into the (K*6) stacked full closure error."""
        self._flat_rows = np.concatenate(
            [6 * k + c.rows for k, c in enumerate(self.closures)] + [np.zeros(0, dtype=int)]).astype(int)
        self.n_c = int(len(self._flat_rows)) + self.n_couplings
        # universal-joint cuts: exactly one declared rotation direction k, the two others free
        cuts = {k: universal_cut_indices(c.spec.direction_indices) for k, c in enumerate(self.closures)
                if np.any(c.rows >= 3)}
        uj = [k for k, ijk in cuts.items() if ijk is not None]
        self._uj_idx = np.array(uj, dtype=int)
        self._rot_idx = np.array([k for k, ijk in cuts.items() if ijk is None], dtype=int)
        self._uj_ijk = np.array([cuts[k] for k in uj], dtype=int).reshape(-1, 4)
        #: the constraint each row belongs to: loop ``k`` (``< K``), then coupling ``K + k``
        K = len(self.closures)
        self.row_closure = np.concatenate([np.repeat(np.arange(K), [len(c.rows) for c in self.closures]),
                                           K + np.arange(self.n_couplings)]).astype(int)
        self._kernel_built = False  # the compiled kernel follows the kept rows
        self._fk_jinv: np.ndarray | None = None  # J_lu^{-1} kept between calls by the compiled chord iteration
        self._fk_chord_ready: bool | None = None

    def _select_rows(self, q_ref: np.ndarray | None) -> None:
        """Close the loops at the reference, then drop redundant rows (rank-revealing QR) there.

        The reference pose ``q_ref`` (default: neutral) is closed by Newton on the passive
        coordinates with the actuators held; where that leaves a residual on the declared rows
        (the loops cannot close with the actuators there), it is *assembled* by moving every joint
        (:meth:`assemble`). Rows are selected, free rotations of ball joints fixed and idle joints
        locked at the closed configuration.

        Raises:
            ModelError: the loops cannot be closed from the reference (the message gives the
                residual and the worst loop), or the passive block is not square.
        """
        declared = [np.array(c.spec.direction_indices, dtype=int) for c in self.closures]
        self.n_c_declared = int(sum(len(r) for r in declared)) + self.n_couplings
        q0 = pin.neutral(self.model) if q_ref is None else self.check_configuration(q_ref).copy()
        self.reference_assembled = False
        self._set_declared_rows()
        self.closure_tolerance = max(ASSEMBLY_TOL, CLOSURE_ROUNDING_FACTOR * self.coordinate_rounding
                                     * (1.0 + self._loop_lever(q0)))
        if not self._constrained:
            self.constraint_rank = 0
            self.q_ref = q0
            self.reference_closure_residual = 0.0
            if self.n_u:
                raise ModelError(self._square_message())
            return
        q = q0
        for attempt in range(2):
            self._set_declared_rows()
            self._keep_rows(self._independent_loop_rows(q))
            if attempt == 0:
                q, info = self.newton(q, max_iter=100, tol=1e-12, least_squares=True)
                if not (info.converged and self._declared_residual(q) <= self.closure_tolerance):
                    q = self._assemble_or_raise(q0)
        self.constraint_rank = self.n_c
        self.q_ref = q
        if self.n_c < self.n_u:
            self._fix_free_rotations(q)
        if self.n_c < self.n_u and self.closure_file.lock_idle_joints:
            self._lock_idle_joints(q)
        self.reference_closure_residual = self._declared_residual(q)
        if self.reference_closure_residual > ASSEMBLY_TOL:
            self.warnings.append(
                f"the loops close to {self.reference_closure_residual:.3g} at best (m, rad; the rows the model "
                f"keeps are closed): within the tolerance {self.closure_tolerance:.3g} set by the rounding of the "
                f"file's coordinates ({self.coordinate_rounding:.3g}), accepted")
        if self.n_c != self.n_u:
            raise ModelError(self._square_message())

    def _loop_lever(self, q: np.ndarray) -> float:
        """The longest distance [m] from a loop's frame to a joint that moves it, at ``q``."""
        if not self.closures:
            return 0.0
        data = self.model.createData()
        pin.framesForwardKinematics(self.model, data, q)
        lever = 0.0
        for k, c in enumerate(self.closures):
            for fid in (c.frame_a_id, c.frame_u_id):
                p = data.oMf[fid].translation
                for j in range(1, self.model.njoints):
                    jm = self.model.joints[j]
                    if np.any(self._signed_mask[k, jm.idx_v:jm.idx_v + jm.nv]):
                        lever = max(lever, float(np.linalg.norm(p - data.oMi[j].translation)))
        return lever

    def _independent_loop_rows(self, q: np.ndarray) -> np.ndarray:
        """Indices of a maximal set of independent loop rows at ``q`` (into the selected loop rows),
        every coupling row kept: the loop rows' Jacobian is restricted to the null space of the
        couplings' before the rank-revealing QR (:func:`select_independent_rows`).

        Raises:
            ModelError: the couplings are dependent (two couplings say the same).
        """
        J = self.constraint_jacobian(q)[:, np.concatenate([self.idx_v_u, self.idx_v_a])]
        n_loop = self.n_c - self.n_couplings
        J_loop, J_cp = J[:n_loop], J[n_loop:]
        if self.n_couplings:
            idle = [c.name for c, row in zip(self.couplings, J_cp) if not np.any(row[:self.n_u])]
            if idle:
                raise ModelError(f"{self.closure_file.source}: couplings {idle} tie only actuated or held joints: "
                                 f"one of their joints must be passive (it follows the others)")
            _, sv, Vt = np.linalg.svd(J_cp)
            rank = numerical_rank(sv, self.rank_tolerance)
            if rank < self.n_couplings:
                raise ModelError(f"{self.closure_file.source}: the couplings {[c.name for c in self.couplings]} "
                                 f"are dependent ({rank} independent of {self.n_couplings}): one of them repeats "
                                 f"the others, or couples only held or actuated joints")
            J_loop = J_loop @ Vt[rank:].T
        sv = np.linalg.svd(J_loop, compute_uv=False) if J_loop.size else np.zeros(0)
        rank = numerical_rank(sv, self.rank_tolerance)
        rel = sv / sv[0] if sv.size and sv[0] > 0.0 else sv
        self.rank_margin = {"smallest_kept": float(rel[rank - 1]) if rank else 0.0,
                            "largest_dropped": float(rel[rank]) if rank < rel.size else 0.0}
        return select_independent_rows(J_loop, self.rank_tolerance)

    def _set_declared_rows(self) -> None:
        for c in self.closures:
            c.rows = np.array(c.spec.direction_indices, dtype=int)
        self._set_rows()

    def _keep_rows(self, keep: np.ndarray) -> None:
        """Keep the rows ``keep`` (indices into the currently selected rows)."""
        keep_set = set(np.asarray(keep).tolist())
        start = 0
        for c in self.closures:
            n = len(c.rows)
            c.rows = np.array([d for i, d in enumerate(c.rows) if start + i in keep_set], dtype=int)
            start += n
        self._set_rows()

    @contextmanager
    def _all_declared_rows(self):
        """Every declared row selected inside the block, the kept ones again after it."""
        rows = [c.rows for c in self.closures]
        self._set_declared_rows()
        try:
            yield
        finally:
            for c, r in zip(self.closures, rows):
                c.rows = r
            self._set_rows()

    def _declared_errors(self, q: np.ndarray) -> np.ndarray:
        """Closure error on every declared direction, (K, 6) with zeros on undeclared ones."""
        e = np.zeros(6 * len(self.closures))
        if not self._constrained:
            return e.reshape(-1, 6)
        with self._all_declared_rows():
            e[self._flat_rows] = self.kernel.error(q)[:len(self._flat_rows)]
        return e.reshape(-1, 6)

    def coupling_errors(self, q: np.ndarray) -> np.ndarray:
        """The coupling rows of ``e_l`` (:mod:`kangaroo_wbc.model.couplings`) [rad or m]."""
        if not self.couplings:
            return np.zeros(0)
        return self.kernel.error(self.check_configuration(q))[self.n_c - self.n_couplings:].copy()

    def _declared_residual(self, q: np.ndarray) -> float:
        """``||e||_inf`` over every declared direction of every loop and every coupling [m, rad]."""
        if not self._constrained:
            return 0.0
        return float(max(np.max(np.abs(self._declared_errors(q)), initial=0.0),
                         np.max(np.abs(self.coupling_errors(q)), initial=0.0)))

    def assemble(self, q0: np.ndarray, tol: float = 1e-12, max_iter: int = 300) -> tuple[np.ndarray, ClosureFkInfo]:
        r"""Assemble the loops near a pose: ``min ||q ⊖ q0||^2`` subject to ``e_l(q) = 0``.

        Every joint moves (actuated ones included; floating-base coordinates are kept), on every
        declared row. Levenberg–Marquardt on the constraint with the pull towards ``q0`` in its
        null space: with ``d = q ⊖ q0`` (``pin.difference``) and ``J`` the declared-row Jacobian,

        .. math::

            \delta = -d + J^T (J J^T + \mu I)^{-1} (J d - e), \qquad \mu = 10^{-3} \|e\|^2 + 10^{-14},

        the damped minimum-distance step of the linearised problem; a step that does not reduce
        ``||e||`` is halved, and without the pull (plain damped least squares) if it still fails.
        At the solution ``d`` lies in the row space of ``J`` (first-order optimality). Joint limits
        are not enforced.

        Returns:
            The configuration and a :class:`ClosureFkInfo` (``residual``: ``||e||_inf`` on the
            declared rows).
        """
        m = self.model
        q0 = self.check_configuration(q0)
        q = q0.copy()
        held = [m.joints[m.getJointId(n)].idx_v for n in self.locked_joint_names]
        cols = np.setdiff1d(np.arange(m.nv), np.concatenate([self.idx_v_base, np.array(held, dtype=int)]))
        with self._all_declared_rows():
            it = 0
            e, J = self._error_and_jacobian(q)
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
                        e_new, J_new = self._error_and_jacobian(q_new)
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
        res = self._declared_residual(q)
        return q, ClosureFkInfo(it, res, res <= max(tol, self.closure_tolerance))

    def _assemble_or_raise(self, q0: np.ndarray) -> np.ndarray:
        q, info = self.assemble(q0)
        if not info.converged:
            E = np.concatenate([np.max(np.abs(self._declared_errors(q)), axis=1), np.abs(self.coupling_errors(q))])
            worst = int(np.argmax(E))
            names = [c.spec.name for c in self.closures] + [f"coupling {c.name}" for c in self.couplings]
            raise ModelError(
                f"{self.closure_file.source}: the loops do not close at the reference pose: assembly "
                f"(moving every joint, {info.iterations} iterations) left a closure residual of "
                f"{info.residual:.3g} (worst loop {names[worst]!r}, "
                f"{float(E[worst]):.3g}); give an assembled pose (--reference FILE: joint -> value)")
        self.reference_assembled = True
        return q

    def _hold_named_joints(self, cf: ClosureFile) -> None:
        """The joints the file or the user holds (``held_joints``, ``--hold``): 1-DOF, not actuated."""
        for n in cf.held_joints:
            jid = self._joint_id(n, "held_joints")
            if self.model.joints[jid].nv != 1:
                raise ModelError(f"{cf.source}: held joint {n!r} has {self.model.joints[jid].nv} degrees of "
                                 f"freedom; only revolute and prismatic joints can be held")
        both = sorted(set(cf.held_joints) & set(cf.actuated_joints))
        if both:
            raise ModelError(f"{cf.source}: joints {both} are both held and actuated")
        self.locked_joint_names = list(dict.fromkeys(cf.held_joints))
        self.held_why = {n: cf.held_why.get(n, "named held") for n in self.locked_joint_names}

    def _infer_actuated(self, q: np.ndarray) -> None:
        """Choose the actuated joints of a file that names none (an MJCF file without actuators).

        With the springs held (:attr:`ClosureFile.springs`) and the held joints fixed, the
        mechanism's motions are the null space ``N`` of the declared rows' Jacobian at ``q``; 1-DOF
        joints that follow no coupling are taken closest to the root first (then in file order)
        while each adds a direction of ``N`` (``rank N[S]`` grows), until ``N`` is spanned or no
        joint adds one. The choice is a warning: name the actuated joints to make it yours.
        """
        m, cf = self.model, self.closure_file
        self._set_declared_rows()
        J = self.constraint_jacobian(q)
        held = set(self.locked_joint_names) | set(cf.springs)
        followers = {j for c in self.couplings for j in c.followers}
        movable = [n for n in self.joint_names if n not in held]
        cols = np.array([m.joints[m.getJointId(n)].idx_v + i for n in movable
                         for i in range(m.joints[m.getJointId(n)].nv)], dtype=int)
        N = motion_basis(J[:, cols], self.rank_tolerance)
        col = {int(v): i for i, v in enumerate(cols)}
        candidates = sorted((n for n in movable if m.joints[m.getJointId(n)].nv == 1 and n not in followers),
                            key=lambda n: (len(m.supports[m.getJointId(n)]), m.getJointId(n)))
        row_of = {col[int(m.joints[m.getJointId(n)].idx_v)]: n for n in candidates}
        chosen = [row_of[r] for r in greedy_span(N, list(row_of))]
        why = {n: "chosen by the model: the file names no actuator (closest to the root first, springs held)"
               for n in chosen}
        self.warnings.append(f"{cf.source}: the file names no actuator: the model chose {chosen} as actuated "
                             f"(closest to the root first, springs held); name them to choose (--actuated)")
        self.closure_file = replace(cf, actuated_joints=chosen, actuated_why=why)
        self._resolve_joints(self.closure_file)

    def _lock_idle_joints(self, q: np.ndarray) -> None:
        """Hold passive joints that the closures leave undetermined (idle DOFs).

        Some descriptions (e.g. a cut joint split into two half-joints with a 6D closure, a spring
        in a leg that no actuator drives) leave passive motions: the null space ``N`` (n_u, k) of
        ``J_lu`` at the closed reference configuration. ``k`` passive 1-DOF joints are held (kept at
        their reference value) so that the remaining ``J_lu`` is square and invertible: taken
        greedily while each adds a direction of ``N`` (``rank N[S]`` grows), springs first
        (:attr:`ClosureFile.springs`: taking a spring as rigid is the physical choice), then in the
        order of a pivoted QR of ``N^T`` (the joints that carry most of the idle motion). Where
        another set would do as well, a warning names the alternatives. Reported in
        ``locked_joints`` and :meth:`joint_roles`.
        """
        N = motion_basis(self.constraint_jacobian(q)[:, self.idx_v_u], self.rank_tolerance)  # (n_u, k)
        k = N.shape[1]
        if k == 0:
            return
        m = self.model
        owner = {}
        for n in self.passive_joint_names:
            jm = m.joints[m.getJointId(n)]
            for i in range(jm.nv):
                owner[int(np.flatnonzero(self.idx_v_u == jm.idx_v + i)[0])] = n
        springs = self.closure_file.springs
        _, _, piv = scipy.linalg.qr(N.T, pivoting=True)
        order = sorted(range(self.n_u), key=lambda i: (m.joints[m.getJointId(owner[i])].nv != 1,
                                                      owner[i] not in springs, int(np.flatnonzero(piv == i)[0])))
        chosen = greedy_span(N, order)
        names = list(dict.fromkeys(owner[i] for i in chosen))
        multi = [n for n in names if m.joints[m.getJointId(n)].nv != 1]
        if multi or len(chosen) < k:
            raise ModelError(f"{self.closure_file.source}: undetermined passive motion on multi-DOF joints "
                             f"{multi or sorted(set(owner.values()))} that is not a free rotation of a ball joint "
                             f"(only 1-DOF joints can be held)")
        others = sorted({owner[j] for j in alternatives(N, chosen, [j for j in range(self.n_u)
                                                                  if m.joints[m.getJointId(owner[j])].nv == 1])})
        for n in names:
            self.held_why[n] = (f"spring (stiffness {springs[n]:g}) held rigid: an idle motion no closure determines"
                                if n in springs else "an idle motion no closure determines")
        if others:
            self.warnings.append(f"{self.closure_file.source}: the closures leave {k} passive motion(s) free; the "
                                 f"model holds {names}, holding one of {others} instead would do as well: "
                                 f"name the held joints to choose (--hold, held_joints)")
        self.locked_joint_names = sorted(set(self.locked_joint_names) | set(names))
        self._resolve_joints(self.closure_file)

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

    def _free_ball_directions(self, J: np.ndarray) -> dict[str, np.ndarray]:
        """Free directions of the passive ball joints: ``{joint: N}``, ``N`` (3, k) orthonormal in
        the joint's child frame.

        The motions of the ball joints alone that leave every loop closed are the null space of
        ``J_l`` restricted to their columns. A rod's spin shows up on one joint, or, where the rod
        hangs between two ball joints of the tree, as a combined motion (one turns by ``+phi``
        about the rod axis, the other by ``-phi``). Each null vector is charged to the joint that
        carries most of it, its component there becomes that joint's free direction, and the
        null space is recomputed with that direction blocked, until none is left.
        """
        m = self.model
        balls = [n for n in self.passive_joint_names
                 if m.joints[m.getJointId(n)].shortname() == "JointModelSpherical"]
        if not balls or J.shape[0] == 0:
            return {}
        starts = [m.joints[m.getJointId(n)].idx_v for n in balls]
        cols = np.concatenate([np.arange(i, i + 3) for i in starts])
        A = J[:, cols]
        tol = self.rank_tolerance * max(float(np.max(np.abs(J))), 1e-300)
        out: dict[str, list[np.ndarray]] = {}
        for _ in range(len(cols)):
            _, sv, Vt = np.linalg.svd(A)
            rank = int(np.sum(sv > tol))
            N = Vt[rank:]
            if N.shape[0] == 0:
                break
            blocks = np.linalg.norm(N.reshape(N.shape[0], len(balls), 3), axis=2)  # (k, joints)
            r, b = np.unravel_index(int(np.argmax(blocks)), blocks.shape)
            d = N[r, 3 * b:3 * b + 3] / blocks[r, b]
            out.setdefault(balls[b], []).append(d)
            row = np.zeros(len(cols))
            row[3 * b:3 * b + 3] = d * max(float(np.max(np.abs(J))), 1.0)
            A = np.vstack([A, row])
        return {n: np.linalg.qr(np.column_stack(ds))[0] for n, ds in out.items()}

    def _fix_free_rotations(self, q: np.ndarray) -> None:
        """Fix the rotations of passive ball joints that the closures leave undetermined.

        A rod between two ball joints spins freely about its own axis: moving the rod's ball joint
        alone along ``n`` leaves every loop closed, i.e. ``n`` spans the null space of ``J_l``
        restricted to the ball joints' columns (:meth:`_free_ball_directions`). Each such joint
        gets an added closure between a frame
        on its parent (``<joint>_free_a``) and one on its body (``<joint>_free_u``), both at the
        joint centre and equal at the reference ``q``, with axes ``Q`` chosen so that the free
        directions are the constrained ones:

        * one free direction ``n`` (a rod's spin): ``Q = [c_1, c_2, n]`` and the universal-joint row
          ``rz`` (exact: it vanishes for every swing ``R_x(alpha) R_y(beta)``, see
          ``closures_format.md``), the spin stays at its reference value;
        * two or three: the rotation-vector rows of those directions (the joint keeps one or no
          degree of freedom).

        The spin's inertia is reported (``free_rotations``): for a slender rod it is negligible,
        which is what makes fixing it the physical choice.
        """
        m = self.model
        J = self.constraint_jacobian(q)
        added: list[ClosureSpec] = []
        for name, N in self._free_ball_directions(J).items():
            jid = int(m.getJointId(name))
            jm = m.joints[jid]
            Jj = J[:, jm.idx_v:jm.idx_v + 3]
            k = N.shape[1]
            C = np.linalg.svd(N.T)[2][k:].T  # the determined directions: the complement of N
            if k == 1:
                Q = np.column_stack([C, N])
                dirs: tuple[str, ...] = ("rz",)
            else:
                Q = np.column_stack([N, C])
                dirs = DIRECTIONS[3:3 + k]
            if np.linalg.det(Q) < 0:
                Q[:, 0] *= -1.0
            R_joint = pin.Quaternion(q[jm.idx_q:jm.idx_q + 4]).normalized().matrix()
            base = f"{name}_free"
            fa, fu = f"{base}_a", f"{base}_u"
            parent = int(m.parents[jid])
            m.addFrame(pin.Frame(fa, parent, m.jointPlacements[jid] * pin.SE3(R_joint @ Q, np.zeros(3)),
                                 pin.FrameType.OP_FRAME))
            m.addFrame(pin.Frame(fu, jid, pin.SE3(Q, np.zeros(3)), pin.FrameType.OP_FRAME))
            using = self.row_closure[np.max(np.abs(Jj), axis=1) > STRUCTURAL_ZERO] if Jj.size else []
            using = [k for k in using if k < len(self.closures)]
            sub = self.closures[int(using[0])].spec.submechanism if len(using) else base
            added.append(ClosureSpec(base, sub, fa, fu, dirs))
            inertia = m.inertias[jid]
            c = inertia.lever
            I_o = inertia.inertia + inertia.mass * (c.dot(c) * np.eye(3) - np.outer(c, c))
            self.free_rotations.append({
                "joint": name,
                "free_directions": int(k),
                "axes_in_joint_frame": (N.T.round(9) + 0.0).tolist(),
                "inertia_about_axes_kg_m2": [float(n @ I_o @ n) for n in N.T],
                "resolution": (f"fixed at the reference by the added closure {base!r} "
                               f"({'universal-joint row: spin held' if k == 1 else 'rotation rows'})"),
            })
        if not added:
            return
        self.data = m.createData()
        self.added_closures = [spec.name for spec in added]
        kept = {c.spec.name: c.rows.copy() for c in self.closures}
        self.closure_file = replace(self.closure_file, closures=list(self.closure_file.closures) + added)
        self._resolve_frames(self.closure_file)  # new loops: all their rows; the others: as selected
        for c in self.closures:
            c.rows = kept.get(c.spec.name, c.rows)
        self._set_rows()
        self._keep_rows(self._independent_loop_rows(q))
        self.constraint_rank = self.n_c

    def _square_message(self) -> str:
        per: dict[str, list[int]] = {}
        for c in self.closures:
            s = per.setdefault(c.spec.submechanism, [0, 0])
            s[0] += len(c.rows)
            s[1] += len(c.spec.directions)
        detail = ", ".join(f"{n}: {kept} independent rows of {decl} declared" for n, (kept, decl) in per.items())
        return (f"{self.closure_file.source}: passive block J_l,u is not square after row selection: "
                f"{self.n_c} independent constraint rows vs {self.n_u} passive joints "
                f"({len(self.passive_joint_names)} passive joint names). Per sub-mechanism: {detail}. "
                f"Every non-actuated joint must be determined by the closures (Assumption 1).")

    def _build_submechanisms(self) -> None:
        """Group loops by sub-mechanism and partition the joints among them.

        A joint belongs to the first sub-mechanism (in file order) whose constraint rows depend on
        it: a joint that also moves a later sub-mechanism's loops (e.g. the knee output joint carrying
        the ankle's rods) is counted once, where it is first constrained.
        """
        J = np.abs(self.constraint_jacobian(self.q_ref))
        # (sub-mechanism, constraint name) per constraint index: the loops, then each coupling on its own
        owner = ([(c.spec.submechanism, c.spec.name) for c in self.closures]
                 + [(f"coupling {c.name}", c.name) for c in self.couplings])
        names = dict.fromkeys(sub for sub, _ in owner)
        self.submechanisms: dict[str, SubMechanism] = {}
        m = self.model
        claimed: set[str] = set()
        for name in names:
            ks = [k for k, (sub, _) in enumerate(owner) if sub == name]
            rows = np.flatnonzero(np.isin(self.row_closure, ks))
            used = np.max(J[rows], axis=0) > STRUCTURAL_ZERO if len(rows) else np.zeros(m.nv, bool)

            def uses(n: str, used: np.ndarray = used) -> bool:
                jm = m.joints[m.getJointId(n)]
                return bool(np.any(used[jm.idx_v:jm.idx_v + jm.nv]))

            passive = [n for n in self.passive_joint_names if n not in claimed and uses(n)]
            actuated = [n for n in self.actuated_joint_names if n not in claimed and uses(n)]
            claimed.update(passive)
            claimed.update(actuated)
            dofs = int(sum(m.joints[m.getJointId(n)].nv for n in passive))
            self.submechanisms[name] = SubMechanism(name, [owner[k][1] for k in ks], rows, passive, actuated, dofs)

    # ------------------------------------------------------------------ helpers
    def check_configuration(self, q: np.ndarray) -> np.ndarray:
        """Return ``q`` as a float array after checking its size and finiteness."""
        return self.check_vector(q, self.model.nq, "configuration")

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

    def check_vector(self, x: np.ndarray, n: int, what: str) -> np.ndarray:
        """Return ``x`` as a float array after checking that it has shape ``(n,)`` and is finite.

        Raises:
            InputError: wrong shape or non-finite values (the message names ``what``).
        """
        x = np.asarray(x, dtype=float)
        if x.shape != (n,):
            raise InputError(f"{what} has shape {x.shape}, expected ({n},)")
        if not np.all(np.isfinite(x)):
            raise InputError(f"{what} contains non-finite values")
        return x

    def forget_warm_start(self) -> None:
        """Make the next closure FK without ``q_guess`` start from ``q_ref``, as after construction
        (it starts from the last converged solution otherwise)."""
        self._q_last = None

    def kernel_tables(self) -> KernelTables:
        """The index tables of the closures that :func:`~kangaroo_wbc.model.closure_kernel.build_kernel`
        takes after the model: ``build_kernel(model, *clm.kernel_tables(), columns=columns)``."""
        return KernelTables(self._frame_ids, self._slot_a, self._slot_u, self._signed_mask, self._flat_rows,
                            self._rot_idx, (self._uj_idx, self._uj_ijk), self._coupling_tables)

    def passive_joint_limits(self, margin: float | np.ndarray = 0.0) -> PassiveLimits:
        """The passive 1-DOF joints with a finite position limit, their limits moved inwards by ``margin``
        [rad or m] (a scalar or one value per passive joint of :attr:`passive_joint_names`), read from
        the model's ``lowerPositionLimit``/``upperPositionLimit`` and ``velocityLimit`` (the URDF's
        ``<limit>``). A side at or beyond :data:`UNBOUNDED_LIMIT` is absent; a joint without a
        finite side, multi-DOF joints and limits that leave no room (``lower + margin >= upper -
        margin``) are not listed.

        Raises:
            InputError: a negative or non-finite margin, or one of the wrong size.
        """
        m = self.model
        names_u = self.passive_joint_names
        margins = np.broadcast_to(np.asarray(margin, dtype=float), (len(names_u),)) if np.ndim(margin) == 0 \
            else np.asarray(margin, dtype=float)
        if margins.shape != (len(names_u),) or not np.all(np.isfinite(margins) & (margins >= 0.0)):
            raise InputError(f"passive-joint limit margin must be >= 0 and finite, a scalar or "
                             f"({len(names_u)},) values, got {margin!r}")
        row = {int(i): k for k, i in enumerate(self.idx_v_u)}
        out: tuple[list, ...] = ([], [], [], [], [], [], [])
        for name, mg in zip(names_u, margins):
            jm = m.joints[m.getJointId(name)]
            if jm.nq != 1 or jm.nv != 1:
                continue
            lo, hi = float(m.lowerPositionLimit[jm.idx_q]), float(m.upperPositionLimit[jm.idx_q])
            lo = lo + mg if math.isfinite(lo) and abs(lo) < UNBOUNDED_LIMIT else -math.inf
            hi = hi - mg if math.isfinite(hi) and abs(hi) < UNBOUNDED_LIMIT else math.inf
            if not (lo < hi) or (math.isinf(lo) and math.isinf(hi)):
                continue
            vel = float(m.velocityLimit[jm.idx_v])
            for lst, val in zip(out, (name, jm.idx_q, jm.idx_v, row[jm.idx_v], lo, hi,
                                      vel if vel > 0.0 and math.isfinite(vel) else math.inf)):
                lst.append(val)
        names, *index, lo_a, hi_a, vel_a = out
        iq, iv, ru = (np.array(x, dtype=np.int64) for x in index)
        return PassiveLimits(names, iq, iv, ru, np.array(lo_a, dtype=float), np.array(hi_a, dtype=float),
                                  np.array(vel_a, dtype=float))

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
        if not self._kernel_built:
            from kangaroo_wbc.model.closure_kernel import build_kernel

            self._kernel = build_kernel(self.model, *self.kernel_tables()) if self._constrained else None
            self._kernel_built = True
            self._fk_chord_ready = None
            if self._kernel is not None and self.n_c == self.n_u:  # compiles the chord iteration now
                self._fk_chord_ready = self._kernel.set_passive_joints(self.model, self.idx_v_u)
        return self._kernel

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
        pattern = self._row_support()[:, np.asarray(columns, dtype=int)] != 0.0
        blocks = block_structure(pattern)
        return None if blocks is None else BlockLU(blocks, self.n_c)

    def closure_error(self, q: np.ndarray) -> np.ndarray:
        """Closure error ``e_l(theta)`` (eq. (2)) [m, rad], one entry per kept constraint row."""
        q = self.check_configuration(q)
        return self.kernel.error(q).copy() if self._constrained else np.zeros(0)

    def _error_and_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self._constrained:
            return np.zeros(0), np.zeros((0, self.model.nv))
        e, J = self.kernel.error_and_jacobian(q)
        return e.copy(), J.copy()

    def constraint_jacobian(self, q: np.ndarray) -> np.ndarray:
        """Constraint Jacobian ``J_l = d e_l / d theta`` (eq. (3)-(4), App. A eq. (51)), (n_c, nv)."""
        return self._error_and_jacobian(self.check_configuration(q))[1]

    def error_and_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(e_l, J_l)`` in one pass (one forward-kinematics and Jacobian sweep)."""
        return self._error_and_jacobian(self.check_configuration(q))

    def constraint_bias(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Acceleration bias ``Jdot_l v`` (eq. (8); App. A-B eq. (52)-(57)), (n_c,): the second time
        derivative of ``e_l`` along ``v`` with zero acceleration
        (:func:`~kangaroo_wbc.model.closure_kernel.closure_velocity_bias`; its ``log3`` rows are
        exact on the closure)."""
        q = self.check_configuration(q)
        v = self.check_vector(v, self.model.nv, "velocity")
        return self.kernel.velocity_bias(q, v).copy() if self._constrained else np.zeros(0)

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
        velocity indices ``unknowns`` (default: the passive joints), the other coordinates held.

        Each step solves ``J_l[:, unknowns] dtheta = -e_l`` with a fresh Jacobian (eq. (5) for the
        passive joints): by LU, or by least squares when ``least_squares`` is set, when the matrix
        is not square or when its LU has a pivot below ``SINGULAR_PIVOT`` (near a singularity).
        The step is halved until ``||e_l||_2`` decreases (taken anyway once shorter than 1e-3 of the
        full step). Converged when ``||e_l||_inf <= tol`` [m, rad]. The reference is closed with it
        (:meth:`_select_rows`), it finishes closure FK where the compiled chord iteration cannot
        (:meth:`_fk_solve`), and the Kangaroo's serial twin solves its outputs-held closure with it.
        """
        m = self.model
        unknowns = self.idx_v_u if unknowns is None else unknowns
        dv = np.zeros(m.nv)
        e, J = self._error_and_jacobian(q)
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
                q_new = pin.integrate(m, q, dv)
                e_new, J_new = self._error_and_jacobian(q_new)
                if np.linalg.norm(e_new) < norm0 or alpha < 1e-3:
                    break
                alpha *= 0.5
            q, e, J = q_new, e_new, J_new
            err = float(np.max(np.abs(e)))
        return q, ClosureFkInfo(it, err, err <= tol)

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
        theta_a = self.check_vector(theta_a, self.n_a, "actuator positions theta_a")
        if q_guess is None:
            q_guess = self._q_last if self._q_last is not None else self.q_ref
        q = self.check_configuration(q_guess).copy()
        if self.n_c == 0:
            q[self.idx_q_a] = theta_a
            return q, ClosureFkInfo(0, 0.0, True)
        steps = self._fk_continuation_steps(q[self.idx_q_a], theta_a, max_step)
        if steps > 1:
            q, info = self._fk_continuation(q, theta_a, steps, tol, max_iter)
        else:
            q[self.idx_q_a] = theta_a
            q, info = self._fk_solve(q, tol, max_iter)
        if info.converged:
            self._q_last = q.copy()
        elif raise_on_failure:
            raise ClosureFkError(
                f"closure FK did not converge in {info.iterations} iterations: residual "
                f"{info.residual:.3e} > {tol:.1e} (actuators {np.array2string(theta_a, precision=4)}; "
                f"unreachable input or singular J_lu)")
        return q, info

    def _fk_solve(self, q: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, ClosureFkInfo]:
        """Closure FK from ``q`` (actuators already set): the compiled chord iteration, else damped
        Newton from where it stopped."""
        fast = self._compiled_chord(q, tol, max_iter)
        return fast if fast is not None else self.newton(q, max_iter, tol)

    def _fk_continuation_steps(self, theta_from: np.ndarray, theta_to: np.ndarray,
                               max_step: float | np.ndarray | None) -> int:
        """Number of equal continuation steps from ``theta_from`` to ``theta_to`` (1: solve directly)."""
        d = theta_to - theta_from
        if max_step is None:
            if d.dot(d) <= self._fk_default_step_min2:
                return 1  # the small-step case (warm start from a nearby solution)
            limit = self._fk_default_step
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

    def _fk_continuation(self, q: np.ndarray, theta_a: np.ndarray, steps: int, tol: float,
                         max_iter: int) -> tuple[np.ndarray, ClosureFkInfo]:
        """Solve ``theta_a`` in ``steps`` equal actuator steps from ``q`` (a copy of the guess);
        intermediate steps to a looser tolerance. Falls back to the direct solve from ``q``."""
        start = q.copy()
        theta0 = q[self.idx_q_a].copy()
        total = 0
        for k in range(1, steps + 1):
            q[self.idx_q_a] = theta_a if k == steps else theta0 + (theta_a - theta0) * (k / steps)
            q, info = self._fk_solve(q, tol if k == steps else max(tol, 1e-9), max_iter)
            total += info.iterations
            if not info.converged:
                break
        else:
            return q, ClosureFkInfo(total, info.residual, True)
        start[self.idx_q_a] = theta_a
        q, info = self._fk_solve(start, tol, max_iter)
        return q, ClosureFkInfo(total + info.iterations, info.residual, info.converged)

    def _compiled_chord(self, q: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, ClosureFkInfo] | None:
        """Chord Newton in compiled code with ``J_lu^{-1}`` kept between calls; None when it cannot
        finish (no kernel, non-square or singular ``J_lu``, or no contraction even with a fresh
        Jacobian: far from a solution, or ``max_iter`` steps), then :meth:`newton` takes over from
        ``q`` (the last accepted point)."""
        from kangaroo_wbc.model.closure_kernel import CHORD_CONVERGED, CHORD_STALLED

        k = self.kernel
        if self.n_c != self.n_u:
            return None
        if self._fk_chord_ready is None:
            self._fk_chord_ready = k.set_passive_joints(self.model, self.idx_v_u)
        if not self._fk_chord_ready:
            return None
        total = 0
        for _ in range(4):
            fresh = self._fk_jinv is None
            if fresh:
                _, J = k.error_and_jacobian(q)
                try:
                    J_inv = np.linalg.inv(J[:, self.idx_v_u])
                except np.linalg.LinAlgError:
                    return None
                if not np.isfinite(J_inv).all():
                    return None
                self._fk_jinv = J_inv
            status, it, norm = k.chord(q, self._fk_jinv, tol, max_iter - total, CHORD_CONTRACTION)
            total += it
            if status == CHORD_CONVERGED:
                return q, ClosureFkInfo(total, norm, True)
            self._fk_jinv = None
            if status != CHORD_STALLED or (fresh and it <= 1):
                return None
        return None

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


__all__ = ["ClosedLoopModel", "Closure", "ClosureFkInfo", "KernelTables", "SubMechanism", "select_independent_rows",
           "DIRECTIONS", "configuration_from_pose"]
