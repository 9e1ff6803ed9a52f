"""Assembly of a closed-linkage model from its description: joint roles, kept constraint rows,
closed reference configuration and sub-mechanisms (Kangaroo paper, Section III, Assumption 1).

:class:`ClosedLoopStructure` takes a pinocchio spanning tree and a parsed closure file and
settles, once, everything :class:`~kangaroo_wbc.model.closed_loop_model.ClosedLoopModel` then
holds fixed:

1. the joints the file holds (1-DOF, not actuated) and the actuated ones (1-DOF): the split
   ``theta = [theta_u, theta_a]`` (:func:`split_joints`);
2. the loops and couplings resolved against the model (:class:`ConstraintRows`);
3. where the file names no actuator, the actuated joints chosen (:func:`~kangaroo_wbc.model.roles.choose_actuated`);
4. the reference closed: damped Newton on the passive joints from the reference pose, else the
   loops assembled by moving every joint (:func:`~kangaroo_wbc.model.closure_fk.assemble_loops`);
5. redundant rows dropped at the closed reference (:func:`~kangaroo_wbc.model.rank.select_independent_rows`),
   the rank tolerance set by the rounding of the file's numbers;
6. free spins of ball joints fixed by added closures (:mod:`kangaroo_wbc.model.free_rotations`) and
   idle passive motions held (:func:`~kangaroo_wbc.model.roles.choose_idle_holds`);
7. ``J_lu`` checked square (every passive joint determined by the closures) and the joints
   partitioned among the sub-mechanisms.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import JointNotFound, ModelError, suggest
from kangaroo_wbc.model.closure_fk import assemble_loops, newton
from kangaroo_wbc.model.closures import ClosureFile
from kangaroo_wbc.model.configuration import check_vector
from kangaroo_wbc.model.constraint_rows import STRUCTURAL_ZERO, ConstraintRows
from kangaroo_wbc.model.free_rotations import free_rotation_closures
from kangaroo_wbc.model.rank import RANK_RTOL, numerical_rank, select_independent_rows
from kangaroo_wbc.model.roles import choose_actuated, choose_idle_holds

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
class JointSplit:
    """The actuated/passive split of the joints (eq. (1)): names and index sets (numpy int arrays).

    ``idx_v_a``/``idx_v_u`` are the velocity indices of the actuated/passive joints (``theta_dot_a``,
    ``theta_dot_u``), ``idx_q_a``/``idx_q_u`` their configuration indices, ``idx_v_base`` the six
    floating-base velocity indices (empty for a fixed base). Held joints are in neither.
    """

    actuated_joint_names: list[str]
    passive_joint_names: list[str]
    idx_q_a: np.ndarray
    idx_v_a: np.ndarray
    idx_v_u: np.ndarray
    idx_q_u: np.ndarray
    idx_v_base: np.ndarray


def joint_id(model: pin.Model, joint_names: list[str], name: str, key: str, source: str) -> int:
    """The pinocchio id of joint ``name`` (named under ``key`` in ``source``).

    Raises:
        JointNotFound: not a joint of ``joint_names`` (the valid ones listed).
    """
    if name not in joint_names:
        raise JointNotFound(f"{source}: {key}: unknown joint {name!r}." + suggest(name, joint_names))
    return int(model.getJointId(name))


def split_joints(model: pin.Model, joint_names: list[str], actuated: list[str], held: list[str],
                 floating_base: bool, source: str) -> JointSplit:
    """The :class:`JointSplit` with ``actuated`` joints actuated, ``held`` ones held and every
    other joint of ``joint_names`` passive.

    Raises:
        ModelError: duplicated actuated names, or an actuated joint that is not 1-DOF.
        JointNotFound: an actuated joint the model does not have.
    """
    m = model
    if len(set(actuated)) != len(actuated):
        raise ModelError(f"{source}: actuated_joints: duplicated names in {actuated}")
    ids_a = [joint_id(m, joint_names, n, "actuated_joints", source) for n in actuated]
    for n, j in zip(actuated, ids_a):
        if m.joints[j].nq != 1 or m.joints[j].nv != 1:
            raise ModelError(f"{source}: actuated joint {n!r} must be 1-DOF (prismatic or "
                             f"revolute), it has nq={m.joints[j].nq}, nv={m.joints[j].nv}")
    skip = set(actuated) | set(held)
    passive = [n for n in joint_names if n not in skip]
    ids_u = [int(m.getJointId(n)) for n in passive]
    return JointSplit(
        list(actuated), passive,
        idx_q_a=np.array([m.joints[j].idx_q for j in ids_a], dtype=int),
        idx_v_a=np.array([m.joints[j].idx_v for j in ids_a], dtype=int),
        idx_v_u=np.array([m.joints[j].idx_v + k for j in ids_u for k in range(m.joints[j].nv)], dtype=int),
        idx_q_u=np.array([m.joints[j].idx_q + k for j in ids_u for k in range(m.joints[j].nq)], dtype=int),
        idx_v_base=np.arange(6) if floating_base else np.zeros(0, dtype=int))


def assembly_columns(model: pin.Model, held: list[str], idx_v_base: np.ndarray) -> np.ndarray:
    """The velocity indices that assembly moves: every joint but the floating base and the held joints."""
    held_v = np.array([model.joints[model.getJointId(n)].idx_v for n in held], dtype=int)
    return np.setdiff1d(np.arange(model.nv), np.concatenate([idx_v_base, held_v]))


class ClosedLoopStructure:
    """The assembled structure of a closed-linkage model (see the module docstring for the steps).

    Args:
        model: pinocchio model of the spanning tree (fixed base or with a free-flyer root); frames
            are added to it for the closures that fix free ball-joint rotations.
        closure_file: the parsed closure specification.
        q_ref: reference pose (default: neutral), closed into :attr:`q_ref`.
        rounding: the rounding level of the file's kinematic numbers [m or rad] (0: exact).

    Raises:
        ModelError: the loops cannot be closed from the reference, ``J_lu`` is not square after row
            selection, or the file's joint roles are inconsistent (the message says which).
    """

    def __init__(self, model: pin.Model, closure_file: ClosureFile, q_ref: np.ndarray | None = None,
                 rounding: float = 0.0) -> None:
        m = model
        self.model = m
        self.closure_file = closure_file
        self.floating_base = m.njoints > 1 and m.joints[1].shortname() == "JointModelFreeFlyer"
        self.joint_names: list[str] = [n for n in list(m.names)[1:]
                                       if not (self.floating_base and n == m.names[1])]
        #: what loading chose or skipped that the user should know (``model info`` lists them)
        self.warnings: list[str] = []
        self.free_rotations: list[dict] = []
        self.added_closures: list[str] = []
        self.coordinate_rounding = float(rounding)
        self.rank_tolerance = min(max(RANK_RTOL, RANK_ROUNDING_FACTOR * self.coordinate_rounding), RANK_RTOL_MAX)
        self.closure_tolerance = ASSEMBLY_TOL
        self.rank_margin = {"smallest_kept": 1.0, "largest_dropped": 0.0}
        cf = closure_file
        self._hold_named_joints(cf)
        self.joints = self._split()
        self.rows = ConstraintRows(m, cf.closures, cf.couplings, cf.source)
        if cf.infer_actuated and not cf.actuated_joints:
            self._infer_actuated(pin.neutral(m) if q_ref is None else self._check_configuration(q_ref))
        self.absolute_encoders = self._check_joint_names(cf.absolute_encoders, "absolute_encoders")
        self.absolute_actuators = self._check_joint_names(cf.absolute_actuators, "absolute_actuators")
        self._close_reference(q_ref)
        self.submechanisms = self._submechanisms()

    # ------------------------------------------------------------------ joint roles
    def _check_configuration(self, q: np.ndarray) -> np.ndarray:
        return check_vector(q, self.model.nq, "configuration")

    def _joint_id(self, name: str, key: str) -> int:
        return joint_id(self.model, self.joint_names, name, key, self.closure_file.source)

    def _check_joint_names(self, names: list[str], key: str) -> list[str]:
        for n in names:
            self._joint_id(n, key)
        return list(names)

    def _split(self) -> JointSplit:
        return split_joints(self.model, self.joint_names, self.closure_file.actuated_joints, self.locked_joint_names,
                            self.floating_base, self.closure_file.source)

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
        self.locked_joint_names: list[str] = list(dict.fromkeys(cf.held_joints))
        #: why each held joint is held (``joint_roles``)
        self.held_why: dict[str, str] = {n: cf.held_why.get(n, "named held") for n in self.locked_joint_names}

    def _infer_actuated(self, q: np.ndarray) -> None:
        """Choose the actuated joints of a file that names none (:func:`~kangaroo_wbc.model.roles.choose_actuated`,
        springs and held joints fixed). The choice is a warning: name the actuated joints to make it yours."""
        cf = self.closure_file
        self.rows.select_declared()
        J = self.rows.error_and_jacobian(q)[1]
        held = set(self.locked_joint_names) | set(cf.springs)
        followers = {j for c in self.rows.couplings for j in c.followers}
        movable = [n for n in self.joint_names if n not in held]
        chosen = choose_actuated(self.model, J, movable, followers, self.rank_tolerance)
        why = {n: "chosen by the model: the file names no actuator (closest to the root first, springs held)"
               for n in chosen}
        self.warnings.append(f"{cf.source}: the file names no actuator: the model chose {chosen} as actuated "
                             f"(closest to the root first, springs held); name them to choose (--actuated)")
        self.closure_file = replace(cf, actuated_joints=chosen, actuated_why=why)
        self.joints = self._split()

    def _hold_idle_joints(self, q: np.ndarray) -> None:
        """Hold passive joints that the closures leave undetermined (idle DOFs), reported in
        ``locked_joints`` and ``joint_roles``; a warning names the alternatives."""
        J = self.rows.error_and_jacobian(q)[1]
        springs = self.closure_file.springs
        holds = choose_idle_holds(self.model, J[:, self.joints.idx_v_u], self.joints.passive_joint_names,
                                  self.joints.idx_v_u, springs, self.rank_tolerance, self.closure_file.source)
        if holds.n_idle == 0:
            return
        for n in holds.names:
            self.held_why[n] = (f"spring (stiffness {springs[n]:g}) held rigid: an idle motion no closure determines"
                                if n in springs else "an idle motion no closure determines")
        if holds.alternatives:
            self.warnings.append(f"{self.closure_file.source}: the closures leave {holds.n_idle} passive motion(s) "
                                 f"free; the model holds {holds.names}, holding one of {holds.alternatives} instead "
                                 f"would do as well: name the held joints to choose (--hold, held_joints)")
        self.locked_joint_names = sorted(set(self.locked_joint_names) | set(holds.names))
        self.joints = self._split()

    # ------------------------------------------------------------------ rows and reference
    def _close_reference(self, q_ref: np.ndarray | None) -> None:
        """Close the loops at the reference, then drop redundant rows (rank-revealing QR) there.

        The reference pose ``q_ref`` (default: neutral) is closed by Newton on the passive
        coordinates with the actuators held; where that leaves a residual on the declared rows
        (the loops cannot close with the actuators there), it is *assembled* by moving every joint
        (:func:`~kangaroo_wbc.model.closure_fk.assemble_loops`). Rows are selected, free rotations
        of ball joints fixed and idle joints held at the closed configuration.

        Raises:
            ModelError: the loops cannot be closed from the reference (the message gives the
                residual and the worst loop), or the passive block is not square.
        """
        rows = self.rows
        self.n_c_declared = int(sum(len(c.spec.direction_indices) for c in rows.closures)) + rows.n_couplings
        q0 = pin.neutral(self.model) if q_ref is None else self._check_configuration(q_ref).copy()
        self.reference_assembled = False
        rows.select_declared()
        self.closure_tolerance = max(ASSEMBLY_TOL, CLOSURE_ROUNDING_FACTOR * self.coordinate_rounding
                                     * (1.0 + self._loop_lever(q0)))
        if not rows.constrained:
            self.constraint_rank = 0
            self.q_ref = q0
            self.reference_closure_residual = 0.0
            if len(self.joints.idx_v_u):
                raise ModelError(self._square_message())
            return
        q = q0
        for attempt in range(2):
            rows.select_declared()
            rows.keep(self._independent_loop_rows(q))
            if attempt == 0:
                q, info = newton(self.model, rows.error_and_jacobian, q, self.joints.idx_v_u, max_iter=100, tol=1e-12,
                                 least_squares=True)
                if not (info.converged and rows.declared_residual(q) <= self.closure_tolerance):
                    q = self._assemble_or_raise(q0)
        self.constraint_rank = rows.n_c
        self.q_ref = q
        if rows.n_c < len(self.joints.idx_v_u):
            self._fix_free_rotations(q)
        if rows.n_c < len(self.joints.idx_v_u) and self.closure_file.lock_idle_joints:
            self._hold_idle_joints(q)
        self.reference_closure_residual = rows.declared_residual(q)
        if self.reference_closure_residual > ASSEMBLY_TOL:
            self.warnings.append(
                f"the loops close to {self.reference_closure_residual:.3g} at best (m, rad; the rows the model "
                f"keeps are closed): within the tolerance {self.closure_tolerance:.3g} set by the rounding of the "
                f"file's coordinates ({self.coordinate_rounding:.3g}), accepted")
        if rows.n_c != len(self.joints.idx_v_u):
            raise ModelError(self._square_message())

    def _loop_lever(self, q: np.ndarray) -> float:
        """The longest distance [m] from a loop's frame to a joint that moves it, at ``q``."""
        rows, m = self.rows, self.model
        if not rows.closures:
            return 0.0
        data = m.createData()
        pin.framesForwardKinematics(m, data, q)
        lever = 0.0
        for k, c in enumerate(rows.closures):
            for fid in (c.frame_a_id, c.frame_u_id):
                p = data.oMf[fid].translation
                for j in range(1, m.njoints):
                    jm = m.joints[j]
                    if np.any(rows.signed_mask[k, jm.idx_v:jm.idx_v + jm.nv]):
                        lever = max(lever, float(np.linalg.norm(p - data.oMi[j].translation)))
        return lever

    def _independent_loop_rows(self, q: np.ndarray) -> np.ndarray:
        """Indices of a maximal set of independent loop rows at ``q`` (into the selected loop rows),
        every coupling row kept: the loop rows' Jacobian is restricted to the null space of the
        couplings' before the rank-revealing QR (:func:`~kangaroo_wbc.model.rank.select_independent_rows`).

        Raises:
            ModelError: the couplings are dependent (two couplings say the same).
        """
        rows, joints, source = self.rows, self.joints, self.closure_file.source
        J = rows.error_and_jacobian(q)[1][:, np.concatenate([joints.idx_v_u, joints.idx_v_a])]
        n_cp = rows.n_couplings
        n_loop = rows.n_c - n_cp
        J_loop, J_cp = J[:n_loop], J[n_loop:]
        if n_cp:
            idle = [c.name for c, row in zip(rows.couplings, J_cp) if not np.any(row[:len(joints.idx_v_u)])]
            if idle:
                raise ModelError(f"{source}: couplings {idle} tie only actuated or held joints: "
                                 f"one of their joints must be passive (it follows the others)")
            _, sv, Vt = np.linalg.svd(J_cp)
            rank = numerical_rank(sv, self.rank_tolerance)
            if rank < n_cp:
                raise ModelError(f"{source}: the couplings {[c.name for c in rows.couplings]} "
                                 f"are dependent ({rank} independent of {n_cp}): one of them repeats "
                                 f"the others, or couples only held or actuated joints")
            J_loop = J_loop @ Vt[rank:].T
        sv = np.linalg.svd(J_loop, compute_uv=False) if J_loop.size else np.zeros(0)
        rank = numerical_rank(sv, self.rank_tolerance)
        rel = sv / sv[0] if sv.size and sv[0] > 0.0 else sv
        #: singular values of the loop rows' Jacobian, relative to the largest: the smallest kept
        #: and the largest dropped (0 if none), the figures of the rank decision
        self.rank_margin = {"smallest_kept": float(rel[rank - 1]) if rank else 0.0,
                            "largest_dropped": float(rel[rank]) if rank < rel.size else 0.0}
        return select_independent_rows(J_loop, self.rank_tolerance)

    def _assemble_or_raise(self, q0: np.ndarray) -> np.ndarray:
        rows = self.rows
        q, info = assemble_loops(rows, q0, assembly_columns(self.model, self.locked_joint_names,
                                                            self.joints.idx_v_base),
                                 tol=1e-12, max_iter=300, accept=self.closure_tolerance)
        if not info.converged:
            E = np.concatenate([np.max(np.abs(rows.declared_errors(q)), axis=1), np.abs(rows.coupling_errors(q))])
            worst = int(np.argmax(E))
            names = rows.constraint_names()
            raise ModelError(
                f"{self.closure_file.source}: the loops do not close at the reference pose: assembly "
                f"(moving every joint, {info.iterations} iterations) left a closure residual of "
                f"{info.residual:.3g} (worst loop {names[worst]!r}, "
                f"{float(E[worst]):.3g}); give an assembled pose (--reference FILE: joint -> value)")
        self.reference_assembled = True
        return q

    def _fix_free_rotations(self, q: np.ndarray) -> None:
        """Fix the free rotations of passive ball joints by added closures (:mod:`kangaroo_wbc.model.free_rotations`)
        and select the rows again with them."""
        rows = self.rows
        added, reports = free_rotation_closures(rows, rows.error_and_jacobian(q)[1], q,
                                                self.joints.passive_joint_names, self.rank_tolerance)
        self.free_rotations.extend(reports)
        if not added:
            return
        self.added_closures = [spec.name for spec in added]
        self.closure_file = replace(self.closure_file, closures=list(self.closure_file.closures) + added)
        rows.add_loops(added)  # new loops: all their rows; the others: as selected
        rows.keep(self._independent_loop_rows(q))
        self.constraint_rank = rows.n_c

    def _square_message(self) -> str:
        per: dict[str, list[int]] = {}
        for c in self.rows.closures:
            s = per.setdefault(c.spec.submechanism, [0, 0])
            s[0] += len(c.rows)
            s[1] += len(c.spec.directions)
        detail = ", ".join(f"{n}: {kept} independent rows of {decl} declared" for n, (kept, decl) in per.items())
        return (f"{self.closure_file.source}: passive block J_l,u is not square after row selection: "
                f"{self.rows.n_c} independent constraint rows vs {len(self.joints.idx_v_u)} passive joints "
                f"({len(self.joints.passive_joint_names)} passive joint names). Per sub-mechanism: {detail}. "
                f"Every non-actuated joint must be determined by the closures (Assumption 1).")

    # ------------------------------------------------------------------ sub-mechanisms
    def _submechanisms(self) -> dict[str, SubMechanism]:
        """Group loops by sub-mechanism and partition the joints among them.

        A joint belongs to the first sub-mechanism (in file order) whose constraint rows depend on
        it: a joint that also moves a later sub-mechanism's loops (e.g. the knee output joint carrying
        the ankle's rods) is counted once, where it is first constrained.
        """
        rows, m = self.rows, self.model
        J = np.abs(rows.error_and_jacobian(self.q_ref)[1])
        # (sub-mechanism, constraint name) per constraint index: the loops, then each coupling on its own
        owner = ([(c.spec.submechanism, c.spec.name) for c in rows.closures]
                 + [(f"coupling {c.name}", c.name) for c in rows.couplings])
        names = dict.fromkeys(sub for sub, _ in owner)
        out: dict[str, SubMechanism] = {}
        claimed: set[str] = set()
        for name in names:
            ks = [k for k, (sub, _) in enumerate(owner) if sub == name]
            idx = np.flatnonzero(np.isin(rows.row_closure, ks))
            used = np.max(J[idx], axis=0) > STRUCTURAL_ZERO if len(idx) else np.zeros(m.nv, bool)

            def uses(n: str, used: np.ndarray = used) -> bool:
                jm = m.joints[m.getJointId(n)]
                return bool(np.any(used[jm.idx_v:jm.idx_v + jm.nv]))

            passive = [n for n in self.joints.passive_joint_names if n not in claimed and uses(n)]
            actuated = [n for n in self.joints.actuated_joint_names if n not in claimed and uses(n)]
            claimed.update(passive)
            claimed.update(actuated)
            dofs = int(sum(m.joints[m.getJointId(n)].nv for n in passive))
            out[name] = SubMechanism(name, [owner[k][1] for k in ks], idx, passive, actuated, dofs)
        return out


__all__ = ["ASSEMBLY_TOL", "CLOSURE_ROUNDING_FACTOR", "ClosedLoopStructure", "JointSplit", "RANK_RTOL_MAX",
           "RANK_ROUNDING_FACTOR", "SubMechanism", "assembly_columns", "joint_id", "split_joints"]
