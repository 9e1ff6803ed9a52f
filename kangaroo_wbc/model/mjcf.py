"""MJCF models read as MuJoCo reads them: the spanning tree, its closures and couplings from MuJoCo's
own compiled model.

MuJoCo's compiler (run in a guarded child process, :func:`~kangaroo_wbc.model.sources.compile_mjcf`)
resolves everything a file can say (defaults and classes, ``<compiler angle/eulerseq/autolimits>``,
frames, includes, inertias from geoms); this module turns the compiled ``mjModel`` into a pinocchio
tree whose kinematics are MuJoCo's at every configuration, and its equality constraints into loop
closures and joint couplings. No other parser sees the file.

**Kinematics** (MuJoCo's ``mj_kinematics``). A body's frame is its parent's times ``(body_pos,
body_quat)`` (the placement at ``qpos0``), then each of its joints in order: a hinge turns the body by
``q - ref`` about its axis through the anchor ``jnt_pos``, a slide moves it by ``(q - ref)`` along its
axis, a ball turns it by its quaternion about the anchor, a free joint places it in the world. Here,
with ``T(p)`` a translation and ``R(a, θ)`` a rotation, a hinge becomes a pinocchio revolute joint
about ``a`` placed at ``T(p) R(a, -ref)`` (so that pinocchio's ``q`` *is* MuJoCo's ``qpos``, the body
frame following at ``T(-p)``), a slide a prismatic joint placed at ``T(-a ref)``, a ball a spherical
joint at ``T(p)``, a free joint a free flyer. A body with several joints becomes a chain of joints
(massless in between); a body without joints is welded to its parent's joint; every top-level body
hangs on the universe (or on a free-flyer root added with ``floating_base``). Body frames
(``BODY``) carry the body's name, sites are ``OP_FRAME`` frames of the site's name.

**Configuration**: the same numbers as MuJoCo's ``qpos`` (quaternions reordered ``w, x, y, z`` →
``x, y, z, w``): :meth:`MjcfModel.q_from_qpos`, :meth:`MjcfModel.qpos_from_q`. The reference pose is
MuJoCo's ``qpos0`` (joint ``ref`` values), where a model's loops are meant to close.

**Equalities** (active ones; an inactive one is skipped with a warning):

* ``connect`` (3D): on bodies, ``F_a`` on ``body1`` at the anchor and ``F_u`` on ``body2`` at the point
  that coincides at ``qpos0`` (MuJoCo's ``eq_data[3:6]``); on sites, the two sites' frames;
* ``weld`` (6D): on bodies, ``F_a`` on ``body1`` at the relative pose ``(relpos, relquat)`` and
  ``F_u`` on ``body2`` at the anchor (``cpos = p_1(relpos) - p_2(anchor)``, orientation ``R_1 R_rel
  = R_2``); on sites, the two sites' frames; a zero ``torquescale`` leaves only its three position rows;
* ``joint`` and ``tendon`` (fixed tendons): couplings ``y - y_0 = Σ a_k (x - x_0)^k``
  (:class:`~kangaroo_wbc.model.couplings.CouplingSpec`); MuJoCo's ``y_0``, ``x_0`` are the joint
  values (tendon lengths) at ``qpos0``;
* ``flex`` and spatial-tendon equalities are refused (ModelError naming them).

**Actuators**: one on a joint makes it actuated; one on a fixed tendon actuates one of the tendon's
joints (the first that no coupling makes follow another), the others following through the
couplings; actuators on sites, bodies or slider-cranks are listed as warnings and not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ModelError
from kangaroo_wbc.model.closures import DIRECTIONS, ClosureFile, ClosureSpec
from kangaroo_wbc.model.couplings import CouplingSpec
from kangaroo_wbc.model.sources import compile_mjcf

# MuJoCo's enumerations (mjtJoint, mjtEq, mjtObj, mjtTrn, mjtWrap), fixed by its C API.
_FREE, _BALL, _SLIDE, _HINGE = 0, 1, 2, 3
_EQ_CONNECT, _EQ_WELD, _EQ_JOINT, _EQ_TENDON = 0, 1, 2, 3
_OBJ_SITE = 6
_TRN_JOINT, _TRN_JOINTINPARENT, _TRN_TENDON = 0, 1, 3
_WRAP_JOINT = 1
_EQ_NAMES = {0: "connect", 1: "weld", 2: "joint", 3: "tendon", 4: "flex"}
_TRN_NAMES = {0: "joint", 1: "jointinparent", 2: "slidercrank", 3: "tendon", 4: "site", 5: "body"}


def _quat_matrix(wxyz: np.ndarray) -> np.ndarray:
    w, x, y, z = (float(c) for c in wxyz)
    return pin.Quaternion(w, x, y, z).normalized().matrix()


def _se3(R: np.ndarray | None = None, p: np.ndarray | None = None) -> pin.SE3:
    return pin.SE3(np.eye(3) if R is None else np.asarray(R, dtype=float),
                   np.zeros(3) if p is None else np.asarray(p, dtype=float))


def _names(mj: Any, kind: str, count: int, fallback: str) -> list[str]:
    """Names of MuJoCo objects (``fallback + index`` for unnamed ones), made unique."""
    out: list[str] = []
    seen: set[str] = set()
    for i in range(count):
        name = getattr(mj, kind)(i).name or f"{fallback}{i}"
        while name in seen:
            name = f"{name}_{i}"
        seen.add(name)
        out.append(name)
    return out


@dataclass
class MjcfModel:
    """An MJCF file read into a pinocchio spanning tree (:func:`load_mjcf`).

    Attributes:
        model: the pinocchio tree.
        closure_file: closures (connect, weld), couplings (joint, tendon) and actuated joints.
        q0: MuJoCo's ``qpos0`` as a pinocchio configuration (the reference pose).
        mj: MuJoCo's compiled model (``mujoco.MjModel``).
        body_frames: MuJoCo body id -> pinocchio frame id of the body's frame (world: none).
        joint_stiffness: joint name -> its spring stiffness [N·m/rad or N/m] (joints that have one).
        warnings: what was read but not modelled (inactive equalities, unsupported actuators).
    """

    model: pin.Model
    closure_file: ClosureFile
    q0: np.ndarray
    mj: Any
    body_frames: dict[int, int]
    joint_stiffness: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: MuJoCo body id -> (pinocchio joint it moves with, placement of the body frame in that joint)
    anchor: dict[int, tuple[int, pin.SE3]] = field(default_factory=dict)
    #: per MuJoCo joint: (pinocchio idx_q, MuJoCo qpos address, MuJoCo joint type)
    _qmap: list[tuple[int, int, int]] = field(default_factory=list)

    def q_from_qpos(self, qpos: np.ndarray) -> np.ndarray:
        """The pinocchio configuration of a MuJoCo ``qpos`` (a free-flyer root added by
        ``floating_base`` stays at the identity)."""
        q = pin.neutral(self.model)
        for iq, adr, kind in self._qmap:
            if kind in (_HINGE, _SLIDE):
                q[iq] = qpos[adr]
            elif kind == _BALL:
                q[iq:iq + 4] = qpos[adr + 1], qpos[adr + 2], qpos[adr + 3], qpos[adr]
            else:
                q[iq:iq + 3] = qpos[adr:adr + 3]
                q[iq + 3:iq + 7] = qpos[adr + 4], qpos[adr + 5], qpos[adr + 6], qpos[adr + 3]
        return q

    def qpos_from_q(self, q: np.ndarray) -> np.ndarray:
        """MuJoCo's ``qpos`` of a pinocchio configuration."""
        qpos = np.array(self.mj.qpos0, dtype=float)
        for iq, adr, kind in self._qmap:
            if kind in (_HINGE, _SLIDE):
                qpos[adr] = q[iq]
            elif kind == _BALL:
                qpos[adr:adr + 4] = q[iq + 3], q[iq], q[iq + 1], q[iq + 2]
            else:
                qpos[adr:adr + 3] = q[iq:iq + 3]
                qpos[adr + 3:adr + 7] = q[iq + 6], q[iq + 3], q[iq + 4], q[iq + 5]
        return qpos


def _body_order(mj: Any) -> list[int]:
    """Bodies (parents first) with the top-level subtrees that hold a free joint first, so that a
    floating base is pinocchio's joint 1."""
    top = np.zeros(mj.nbody, dtype=int)
    for b in range(1, mj.nbody):
        par = int(mj.body_parentid[b])
        top[b] = b if par == 0 else top[par]
    free_top = {int(top[b]) for b in range(1, mj.nbody)
                for j in range(mj.body_jntadr[b], mj.body_jntadr[b] + mj.body_jntnum[b])
                if mj.jnt_type[j] == _FREE}
    return sorted(range(1, mj.nbody), key=lambda b: (0 if top[b] in free_top else 1, b))


def _build_tree(mj: Any, source: str, floating_base: bool) -> MjcfModel:
    """The pinocchio tree of a compiled MuJoCo model (see the module docstring)."""
    body_names = _names(mj, "body", mj.nbody, "body")
    joint_names = _names(mj, "joint", mj.njnt, "joint")
    model = pin.Model()
    model.name = Path(source).stem
    model.gravity = pin.Motion(np.asarray(mj.opt.gravity, dtype=float), np.zeros(3))
    has_free = any(int(t) == _FREE for t in mj.jnt_type)
    root = (0, pin.SE3.Identity())
    if floating_base and not has_free:
        jid = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root_joint")
        lo, hi = model.lowerPositionLimit, model.upperPositionLimit
        lo[:7], hi[:7] = -np.inf, np.inf
        model.lowerPositionLimit, model.upperPositionLimit = lo, hi
        root = (jid, pin.SE3.Identity())
    anchor: dict[int, tuple[int, pin.SE3]] = {0: root}
    qmap: list[tuple[int, int, int]] = []
    body_frames: dict[int, int] = {}
    lower, upper = [], []  # (idx_q, value) pairs, written once the tree is complete
    for b in _body_order(mj):
        jid, off = anchor[int(mj.body_parentid[b])]
        off = off * _se3(_quat_matrix(mj.body_quat[b]), mj.body_pos[b])
        for j in range(mj.body_jntadr[b], mj.body_jntadr[b] + mj.body_jntnum[b]):
            kind, p, a = int(mj.jnt_type[j]), np.array(mj.jnt_pos[j]), np.array(mj.jnt_axis[j])
            adr = int(mj.jnt_qposadr[j])
            if kind == _FREE:
                if int(mj.body_parentid[b]) != 0 or jid != root[0]:
                    raise ModelError(f"{source}: free joint {joint_names[j]!r} of body {body_names[b]!r}: only a "
                                     f"top-level body can have a free joint")
                if floating_base and not has_free:
                    raise ModelError(f"{source}: --floating-base with a free joint in the file")
                jid = model.addJoint(jid, pin.JointModelFreeFlyer(), pin.SE3.Identity(), joint_names[j])
                off = pin.SE3.Identity()
            elif kind == _BALL:
                jid = model.addJoint(jid, pin.JointModelSpherical(), off * _se3(p=p), joint_names[j])
                off = _se3(p=-p)
            elif kind == _HINGE:
                ref = float(mj.qpos0[adr])
                placement = off * _se3(p=p) * _se3(pin.AngleAxis(-ref, a).matrix())
                jid = model.addJoint(jid, pin.JointModelRevoluteUnaligned(a), placement, joint_names[j])
                off = _se3(p=-p)
            else:  # slide
                ref = float(mj.qpos0[adr])
                jid = model.addJoint(jid, pin.JointModelPrismaticUnaligned(a), off * _se3(p=-ref * a),
                                     joint_names[j])
                off = pin.SE3.Identity()
            iq = int(model.joints[jid].idx_q)
            qmap.append((iq, adr, kind))
            nq = int(model.joints[jid].nq)
            limited = kind in (_HINGE, _SLIDE) and bool(mj.jnt_limited[j])
            lower.append((iq, nq, float(mj.jnt_range[j, 0]) if limited else -np.inf))
            upper.append((iq, nq, float(mj.jnt_range[j, 1]) if limited else np.inf))
        anchor[b] = (jid, off)
        inertia = pin.Inertia(float(mj.body_mass[b]), np.array(mj.body_ipos[b]),
                              _quat_matrix(mj.body_iquat[b]) @ np.diag(mj.body_inertia[b])
                              @ _quat_matrix(mj.body_iquat[b]).T)
        model.appendBodyToJoint(jid, inertia, off)
        body_frames[b] = int(model.addFrame(pin.Frame(body_names[b], jid, off, pin.FrameType.BODY), False))
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    for (iq, nq, value_lo), (_, _, value_hi) in zip(lower, upper):
        lo[iq:iq + nq] = value_lo if nq == 1 else -np.inf
        hi[iq:iq + nq] = value_hi if nq == 1 else np.inf
    model.lowerPositionLimit, model.upperPositionLimit = lo, hi
    taken = {f.name for f in model.frames}
    for s, name in enumerate(_names(mj, "site", mj.nsite, "site")):
        jid, off = anchor[int(mj.site_bodyid[s])]
        name = name if name not in taken else f"site:{name}"
        taken.add(name)
        model.addFrame(pin.Frame(name, jid, off * _se3(_quat_matrix(mj.site_quat[s]), mj.site_pos[s]),
                                 pin.FrameType.OP_FRAME), False)
    stiffness = {joint_names[j]: float(mj.jnt_stiffness[j]) for j in range(mj.njnt) if mj.jnt_stiffness[j] > 0.0}
    out = MjcfModel(model, ClosureFile([], [], source=source, lock_idle_joints=True), np.zeros(0), mj, body_frames,
                    stiffness, anchor=anchor, _qmap=qmap)
    out.q0 = out.q_from_qpos(np.asarray(mj.qpos0, dtype=float))
    return out


def _placement_on(mm: MjcfModel, objtype: int, objid: int, local: pin.SE3) -> tuple[int, pin.SE3]:
    """(pinocchio joint, placement in it) of ``local`` on a body or a site."""
    mj, anchor = mm.mj, mm.anchor
    if objtype == _OBJ_SITE:
        jid, off = anchor[int(mj.site_bodyid[objid])]
        return jid, off * _se3(_quat_matrix(mj.site_quat[objid]), mj.site_pos[objid]) * local
    jid, off = anchor[int(objid)]
    return jid, off * local


def _tendon_terms(mj: Any, t: int, joint_names: list[str], source: str, what: str) -> tuple[tuple[str, float], ...]:
    """``(joint, coefficient)`` of a fixed tendon (its length ``Σ c_i q_i``)."""
    start, num = int(mj.tendon_adr[t]), int(mj.tendon_num[t])
    if any(int(mj.wrap_type[w]) != _WRAP_JOINT for w in range(start, start + num)):
        name = mj.tendon(t).name or f"tendon{t}"
        raise ModelError(f"{source}: {what}: tendon {name!r} is spatial (it wraps sites or geoms); only fixed "
                         f"tendons (joint coefficients) are supported")
    return tuple((joint_names[int(mj.wrap_objid[w])], float(mj.wrap_prm[w])) for w in range(start, start + num))


def _equalities(mm: MjcfModel, source: str) -> tuple[list[ClosureSpec], list[CouplingSpec]]:
    mj, model = mm.mj, mm.model
    joint_names = _names(mj, "joint", mj.njnt, "joint")
    closures: list[ClosureSpec] = []
    couplings: list[CouplingSpec] = []
    taken = {f.name for f in model.frames}
    for i in range(mj.neq):
        kind = int(mj.eq_type[i])
        name = mj.equality(i).name or f"equality{i}"
        what = f"equality {_EQ_NAMES.get(kind, kind)} {name!r}"
        if not bool(mj.eq_active0[i]):
            mm.warnings.append(f"{what} is inactive in the file (active=\"false\"): not modelled")
            continue
        data, o1, o2, objtype = mj.eq_data[i], int(mj.eq_obj1id[i]), int(mj.eq_obj2id[i]), int(mj.eq_objtype[i])
        if kind in (_EQ_CONNECT, _EQ_WELD):
            if objtype == _OBJ_SITE:
                local_a, local_u = pin.SE3.Identity(), pin.SE3.Identity()
            elif kind == _EQ_CONNECT:
                local_a, local_u = _se3(p=data[0:3]), _se3(p=data[3:6])
            else:
                local_a, local_u = _se3(_quat_matrix(data[6:10]), data[3:6]), _se3(p=data[0:3])
            dirs = DIRECTIONS[:3] if kind == _EQ_CONNECT or float(data[10]) == 0.0 else DIRECTIONS
            fa, fu = f"{name}_a", f"{name}_u"
            if fa in taken or fu in taken:
                raise ModelError(f"{source}: {what}: frame names {fa!r}/{fu!r} are taken by a body or site")
            for fname, obj, local in ((fa, o1, local_a), (fu, o2, local_u)):
                jid, placement = _placement_on(mm, objtype, obj, local)
                model.addFrame(pin.Frame(fname, jid, placement, pin.FrameType.OP_FRAME), False)
            taken.update((fa, fu))
            closures.append(ClosureSpec(name, name, fa, fu, dirs))
        elif kind == _EQ_JOINT:
            y: tuple[tuple[str, float], ...] = ((joint_names[o1], 1.0),)
            x: tuple[tuple[str, float], ...]
            x = ((joint_names[o2], 1.0),) if o2 >= 0 else ()
            y0 = float(mj.qpos0[mj.jnt_qposadr[o1]])
            x0 = float(mj.qpos0[mj.jnt_qposadr[o2]]) if o2 >= 0 else 0.0
            couplings.append(CouplingSpec(name, y, x, tuple(float(c) for c in data[:5]), y0, x0,
                                          "MJCF equality joint"))
        elif kind == _EQ_TENDON:
            y = _tendon_terms(mj, o1, joint_names, source, what)
            x = _tendon_terms(mj, o2, joint_names, source, what) if o2 >= 0 else ()
            y0 = float(mj.tendon_length0[o1])
            x0 = float(mj.tendon_length0[o2]) if o2 >= 0 else 0.0
            couplings.append(CouplingSpec(name, y, x, tuple(float(c) for c in data[:5]), y0, x0,
                                          "MJCF equality tendon"))
        else:
            raise ModelError(f"{source}: {what}: this equality type is not supported (connect, weld, joint and "
                             f"fixed-tendon equalities are)")
    return closures, couplings


def _actuated(mm: MjcfModel, couplings: list[CouplingSpec], source: str) -> tuple[list[str], dict[str, str]]:
    """Actuated joints and why each is (the actuator that drives it)."""
    mj = mm.mj
    joint_names = _names(mj, "joint", mj.njnt, "joint")
    followers = {j for c in couplings for j, _ in c.y}
    actuated: dict[str, str] = {}
    for i in range(mj.nu):
        name = mj.actuator(i).name or f"actuator{i}"
        trn, obj = int(mj.actuator_trntype[i]), int(mj.actuator_trnid[i, 0])
        if trn in (_TRN_JOINT, _TRN_JOINTINPARENT):
            if int(mj.jnt_type[obj]) not in (_HINGE, _SLIDE):
                mm.warnings.append(f"actuator {name!r} drives the multi-DOF joint {joint_names[obj]!r}: not modelled")
                continue
            actuated.setdefault(joint_names[obj], f"MJCF actuator {name!r}")
        elif trn == _TRN_TENDON:
            terms = _tendon_terms(mj, obj, joint_names, source, f"actuator {name!r}")
            tendon = mj.tendon(obj).name or f"tendon{obj}"
            free = [j for j, c in terms if c != 0.0 and j not in followers and j not in actuated]
            if not free:
                mm.warnings.append(f"actuator {name!r} drives tendon {tendon!r}, whose joints are all actuated "
                                   f"or coupled already: not modelled")
                continue
            actuated[free[0]] = f"MJCF actuator {name!r} on fixed tendon {tendon!r}"
        else:
            mm.warnings.append(f"actuator {name!r} acts on a {_TRN_NAMES.get(trn, trn)}: not modelled")
    return list(actuated), actuated


def load_mjcf(path: str | Path, floating_base: bool = False) -> MjcfModel:
    """Read an MJCF file as MuJoCo reads it (see the module docstring).

    Raises:
        ModelError: MuJoCo refuses or crashes on the file, or it uses what is not supported (the
            element named).
    """
    source = str(path)
    mj = compile_mjcf(path)
    mm = _build_tree(mj, source, floating_base)
    closures, couplings = _equalities(mm, source)
    actuated, why = _actuated(mm, couplings, source)
    mm.closure_file = ClosureFile(closures, actuated, source=source, lock_idle_joints=True, couplings=couplings,
                                  actuated_why=why, springs=dict(mm.joint_stiffness),
                                  infer_actuated=mj.nu == 0)
    return mm


__all__ = ["MjcfModel", "load_mjcf"]
