"""SDF models: a link may be the child of several joints, so a closed linkage is written with its loops
closed; the spanning tree is rebuilt here and every loop joint becomes a closure.

Read as SDF 1.4–1.9 says (no dependency parser sees the file):

* **Poses** ``x y z roll pitch yaw`` (``R = R_z(yaw) R_y(pitch) R_x(roll)``) at the zero configuration,
  relative to the ``relative_to`` frame, by default: a link's to the model frame, a joint's to its
  child link, a ``<frame>``'s to the frame it is ``attached_to`` (default the model frame).
* **Axes** in the joint frame, or in the frame ``<xyz expressed_in=…>`` names, or in the model frame
  with ``<use_parent_model_frame>true`` (SDF ≤ 1.6).
* **Spanning tree**: from the root link (the child of a joint to ``world``, else the first link), a
  joint whose parent is in the tree and whose child is not yet becomes a tree joint (pinocchio
  revolute, prismatic, universal, spherical; ``fixed`` welds the child; ``continuous`` is a revolute
  without limits), in file order, until none is left.
* **Loop joints** (both links already in the tree) become closures between a frame ``<joint>_a`` on
  the parent link and ``<joint>_u`` on the child link, both at the joint frame (they coincide at the
  zero configuration), oriented so that the joint's motion is free and the rest constrained:
  ``revolute``/``continuous`` (``z`` along the axis) rows ``x, y, z, rx, ry``; ``prismatic`` rows
  ``x, y, rx, ry, rz``; ``universal`` (``x``, ``y`` along its two axes) rows ``x, y, z`` and the exact
  universal-joint row ``rz``; ``ball`` rows ``x, y, z``; ``fixed`` all six.
* **Actuated joints**: SDF has no actuators. Where the file gives joint effort limits and some are
  zero (the package's own SDF does), the joints with a positive effort are the actuated ones;
  otherwise the model chooses (:attr:`~kangaroo_wbc.model.closures.ClosureFile.infer_actuated`,
  with a warning) unless a closure file or ``--actuated`` names them.
* **Inertia** ``<inertial>`` (pose relative to the link), ``<frame>`` elements become frames; nested
  models, ``<include>`` and ``screw``/``revolute2``/``gearbox`` joints are refused with the element named.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ModelError
from kangaroo_wbc.model.closures import DIRECTIONS, ClosureFile, ClosureSpec

MODEL_FRAME = "__model__"
_TREE_TYPES = {"revolute", "continuous", "prismatic", "universal", "ball", "fixed"}


def _numbers(text: str | None, n: int, where: str) -> np.ndarray:
    values = (text or "").split()
    if not values:
        return np.zeros(n)
    try:
        out = np.array([float(v) for v in values])
    except ValueError:
        raise ModelError(f"{where}: expected {n} numbers, got {text!r}") from None
    if out.shape != (n,) or not np.all(np.isfinite(out)):
        raise ModelError(f"{where}: expected {n} finite numbers, got {text!r}")
    return out


def _rpy(r: float, p: float, y: float) -> np.ndarray:
    return pin.rpy.rpyToMatrix(r, p, y)


@dataclass
class _Pose:
    """A ``<pose>`` element: the placement and the frame it is relative to (None: the default)."""

    placement: pin.SE3
    relative_to: str | None


def _pose(el: ET.Element | None, where: str) -> _Pose:
    node = el.find("pose") if el is not None else None
    if node is None:
        return _Pose(pin.SE3.Identity(), None)
    if node.get("rotation_format", "euler_rpy") != "euler_rpy":
        x = _numbers(node.text, 7, f"{where}: <pose>")
        quat = pin.Quaternion(x[6], x[3], x[4], x[5]).normalized()  # quat_xyzw
        return _Pose(pin.SE3(quat.matrix(), x[:3]), node.get("relative_to"))
    x = _numbers(node.text, 6, f"{where}: <pose>")
    if node.get("degrees", "false").lower() == "true":
        x[3:] = np.radians(x[3:])
    return _Pose(pin.SE3(_rpy(*x[3:]), x[:3]), node.get("relative_to"))


class _Frames:
    """World placements (at the zero configuration) of an SDF model's named frames."""

    def __init__(self, model_el: ET.Element, source: str) -> None:
        self.source = source
        self.poses: dict[str, tuple[_Pose, str]] = {}  # name -> (pose, default relative_to)
        for link in model_el.findall("link"):
            self.poses[str(link.get("name"))] = (_pose(link, f"link {link.get('name')!r}"), MODEL_FRAME)
        for joint in model_el.findall("joint"):
            child = (joint.findtext("child") or "").strip()
            self.poses[str(joint.get("name"))] = (_pose(joint, f"joint {joint.get('name')!r}"), child)
        for frame in model_el.findall("frame"):
            attached = frame.get("attached_to") or MODEL_FRAME
            self.poses[str(frame.get("name"))] = (_pose(frame, f"frame {frame.get('name')!r}"), attached)
        self.attached = {str(f.get("name")): f.get("attached_to") or MODEL_FRAME for f in model_el.findall("frame")}
        self._world: dict[str, pin.SE3] = {MODEL_FRAME: pin.SE3.Identity()}

    def world(self, name: str, _seen: tuple[str, ...] = ()) -> pin.SE3:
        if name in self._world:
            return self._world[name]
        if name not in self.poses:
            raise ModelError(f"{self.source}: unknown frame {name!r} (relative_to / attached_to)")
        if name in _seen:
            raise ModelError(f"{self.source}: frames {list(_seen)} are placed relative to each other in a cycle")
        pose, default = self.poses[name]
        base = self.world(pose.relative_to or default, (*_seen, name))
        self._world[name] = base * pose.placement
        return self._world[name]

    def link_of(self, name: str) -> str:
        """The link a ``<frame>`` is (eventually) attached to."""
        seen: list[str] = []
        while name in self.attached:
            if name in seen:
                raise ModelError(f"{self.source}: frames {seen} are attached to each other in a cycle")
            seen.append(name)
            name = self.attached[name]
        return name


def _axis(joint: ET.Element, tag: str, frames: _Frames, X_J: pin.SE3, where: str) -> np.ndarray:
    """The unit axis of ``<axis>``/``<axis2>`` in the joint frame."""
    el = joint.find(tag)
    if el is None:
        raise ModelError(f"{where}: no <{tag}>")
    xyz = el.find("xyz")
    a = _numbers(xyz.text if xyz is not None else None, 3, f"{where}: <{tag}><xyz>")
    expressed = xyz.get("expressed_in") if xyz is not None else None
    if (el.findtext("use_parent_model_frame") or "").strip().lower() in ("true", "1"):
        expressed = MODEL_FRAME
    if expressed:
        a = X_J.rotation.T @ frames.world(expressed).rotation @ a
    norm = float(np.linalg.norm(a))
    if norm < 1e-12:
        raise ModelError(f"{where}: <{tag}> is a zero vector")
    return a / norm


def _limits(joint: ET.Element) -> tuple[float, float, float | None]:
    """(lower, upper, effort) of ``<axis><limit>`` (infinite / None where absent)."""
    lim = joint.find("axis/limit")
    if lim is None:
        return -np.inf, np.inf, None

    def num(tag: str) -> float | None:
        text = lim.findtext(tag)
        try:
            return float(text) if text is not None and text.strip() else None
        except ValueError:
            return None

    lo, hi, effort = num("lower"), num("upper"), num("effort")
    return (-np.inf if lo is None else lo), (np.inf if hi is None else hi), effort


def _frame_with_z(axis: np.ndarray) -> np.ndarray:
    """A rotation whose ``z`` column is ``axis``."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, axis)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(axis, x), axis])


def _inertia(link: ET.Element, where: str) -> pin.Inertia | None:
    """The ``<inertial>`` of a link in the link frame (None without one)."""
    inertial = link.find("inertial")
    if inertial is None:
        return None
    values = {}
    for tag in ("mass", "inertia/ixx", "inertia/ixy", "inertia/ixz", "inertia/iyy", "inertia/iyz", "inertia/izz"):
        text = inertial.findtext(tag)
        values[tag.split("/")[-1]] = float(_numbers(text, 1, f"{where}: <inertial> <{tag}>")[0]) if text else 0.0
    I = np.array([[values["ixx"], values["ixy"], values["ixz"]], [values["ixy"], values["iyy"], values["iyz"]],
                  [values["ixz"], values["iyz"], values["izz"]]])
    c = _pose(inertial, f"{where} <inertial>")
    if c.relative_to is not None and c.relative_to != link.get("name"):
        raise ModelError(f"{where}: <inertial><pose relative_to> another frame is not supported")
    R = c.placement.rotation
    return pin.Inertia(values["mass"], c.placement.translation, R @ I @ R.T)


@dataclass
class SdfModel:
    """An SDF model read into a spanning tree (:func:`load_sdf`)."""

    model: pin.Model
    closure_file: ClosureFile
    warnings: list[str]


def load_sdf(path: str | Path, root_el: ET.Element, floating_base: bool = False) -> SdfModel:
    """Read the (single) model of an SDF document (``root_el``: its parsed ``<sdf>`` element).

    Raises:
        ModelError: naming the element that is malformed or not supported.
    """
    source = str(path)
    models = root_el.findall("model")
    if len(models) != 1:
        raise ModelError(f"{source}: expected one <model> in the <sdf> element, found {len(models)}"
                         + (" (a <world> file: give the model's own SDF)" if root_el.find("world") is not None else ""))
    model_el = models[0]
    for tag in ("model", "include"):
        if model_el.find(tag) is not None:
            raise ModelError(f"{source}: nested <{tag}> elements are not supported: give a single flat model")
    links = [str(link.get("name")) for link in model_el.findall("link")]
    if not links:
        raise ModelError(f"{source}: the model has no link")
    if len(set(links)) != len(links):
        raise ModelError(f"{source}: duplicated link names")
    frames = _Frames(model_el, source)
    model_pose = _pose(model_el, "model").placement
    joints = model_el.findall("joint")
    for j in joints:
        kind = j.get("type", "")
        if kind not in _TREE_TYPES:
            raise ModelError(f"{source}: joint {j.get('name')!r}: type {kind!r} is not supported "
                             f"(supported: {sorted(_TREE_TYPES)})")
        for tag in ("parent", "child"):
            name = (j.findtext(tag) or "").strip()
            if name != "world" and name not in links:
                raise ModelError(f"{source}: joint {j.get('name')!r}: <{tag}> {name!r} is not a link of the model")

    model = pin.Model()
    model.name = str(model_el.get("name") or Path(source).stem)
    to_world = [j for j in joints if (j.findtext("parent") or "").strip() == "world"]
    root_joint = to_world[0] if to_world else None
    root_link = (root_joint.findtext("child") or "").strip() if root_joint is not None else links[0]
    # per link: (pinocchio joint, placement of the link in that joint's frame); world placement of each joint
    attach: dict[str, tuple[int, pin.SE3]] = {}
    joint_world = {0: pin.SE3.Identity()}
    lower: list[tuple[int, float, float]] = []
    efforts: dict[str, float | None] = {}
    parent_jid = 0
    if floating_base:
        parent_jid = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root_joint")
        joint_world[parent_jid] = pin.SE3.Identity()
    used: set[int] = set()

    def add(j_el: ET.Element | None, parent: tuple[int, pin.SE3], child: str) -> None:
        X_C = model_pose * frames.world(child)
        jid_p = parent[0]
        if j_el is None or j_el.get("type") == "fixed":
            attach[child] = (jid_p, joint_world[jid_p].inverse() * X_C)
            return
        name = str(j_el.get("name"))
        where = f"{source}: joint {name!r}"
        X_J = model_pose * frames.world(name)
        placement = joint_world[jid_p].inverse() * X_J
        kind = j_el.get("type")
        if kind in ("revolute", "continuous"):
            jm = pin.JointModelRevoluteUnaligned(_axis(j_el, "axis", frames, X_J, where))
        elif kind == "prismatic":
            jm = pin.JointModelPrismaticUnaligned(_axis(j_el, "axis", frames, X_J, where))
        elif kind == "universal":
            a1, a2 = _axis(j_el, "axis", frames, X_J, where), _axis(j_el, "axis2", frames, X_J, where)
            if abs(float(a1 @ a2)) > 1e-9:
                raise ModelError(f"{where}: the universal joint's axes are not perpendicular")
            jm = pin.JointModelUniversal(a1, a2)
        else:
            jm = pin.JointModelSpherical()
        jid = model.addJoint(jid_p, jm, placement, name)
        joint_world[jid] = X_J
        attach[child] = (jid, X_J.inverse() * X_C)
        lo, hi, effort = _limits(j_el)
        efforts[name] = effort
        if kind in ("revolute", "prismatic"):
            lower.append((int(model.joints[jid].idx_q), lo, hi))

    if root_joint is not None:
        used.add(joints.index(root_joint))
        if floating_base and root_joint.get("type") != "fixed":
            raise ModelError(f"{source}: --floating-base with the root link on a {root_joint.get('type')} joint "
                             f"to the world")
        add(root_joint, (parent_jid, pin.SE3.Identity()), root_link)
    else:
        add(None, (parent_jid, pin.SE3.Identity()), root_link)
    progress = True
    while progress:
        progress = False
        for k, j in enumerate(joints):
            if k in used:
                continue
            parent, child = (j.findtext("parent") or "").strip(), (j.findtext("child") or "").strip()
            if parent in attach and child not in attach:
                add(j, attach[parent], child)
                used.add(k)
                progress = True
    missing = [link for link in links if link not in attach]
    if missing:
        raise ModelError(f"{source}: links {missing} are not reached from the root link {root_link!r} along the "
                         f"joints' parent -> child direction")
    lo_all, hi_all = model.lowerPositionLimit, model.upperPositionLimit
    for iq, lo, hi in lower:
        lo_all[iq], hi_all[iq] = lo, hi
    for jid in range(1, model.njoints):
        jm = model.joints[jid]
        if jm.nq != 1:
            lo_all[jm.idx_q:jm.idx_q + jm.nq], hi_all[jm.idx_q:jm.idx_q + jm.nq] = -np.inf, np.inf
        elif not any(iq == jm.idx_q for iq, _, _ in lower):
            lo_all[jm.idx_q], hi_all[jm.idx_q] = -np.inf, np.inf
    model.lowerPositionLimit, model.upperPositionLimit = lo_all, hi_all

    for link in model_el.findall("link"):
        name = str(link.get("name"))
        jid, off = attach[name]
        inertia = _inertia(link, f"{source}: link {name!r}")
        if inertia is not None:
            model.appendBodyToJoint(jid, inertia, off)
        model.addFrame(pin.Frame(name, jid, off, pin.FrameType.BODY), False)
    for frame in model_el.findall("frame"):
        name = str(frame.get("name"))
        jid, off = attach[frames.link_of(name)]
        X = model_pose * frames.world(name)
        model.addFrame(pin.Frame(name, jid, joint_world[jid].inverse() * X, pin.FrameType.OP_FRAME), False)

    closures = []
    taken = {f.name for f in model.frames}
    for k, j in enumerate(joints):
        if k in used:
            continue
        name = str(j.get("name"))
        where = f"{source}: loop joint {name!r}"
        parent, child = (j.findtext("parent") or "").strip(), (j.findtext("child") or "").strip()
        if parent == "world":
            raise ModelError(f"{where}: a second joint to the world is not supported")
        X_J = model_pose * frames.world(name)
        kind = str(j.get("type"))
        dirs: tuple[str, ...]
        if kind in ("revolute", "continuous"):
            R, dirs = _frame_with_z(_axis(j, "axis", frames, X_J, where)), DIRECTIONS[:5]
        elif kind == "prismatic":
            R, dirs = _frame_with_z(_axis(j, "axis", frames, X_J, where)), ("x", "y", "rx", "ry", "rz")
        elif kind == "universal":
            a1, a2 = _axis(j, "axis", frames, X_J, where), _axis(j, "axis2", frames, X_J, where)
            if abs(float(a1 @ a2)) > 1e-9:
                raise ModelError(f"{where}: the universal joint's axes are not perpendicular")
            R, dirs = np.column_stack([a1, a2, np.cross(a1, a2)]), ("x", "y", "z", "rz")
        elif kind == "ball":
            R, dirs = np.eye(3), DIRECTIONS[:3]
        else:
            R, dirs = np.eye(3), DIRECTIONS
        X = X_J * pin.SE3(R, np.zeros(3))
        fa, fu = f"{name}_a", f"{name}_u"
        if fa in taken or fu in taken:
            raise ModelError(f"{where}: frame names {fa!r}/{fu!r} are taken")
        for fname, side in ((fa, parent), (fu, child)):
            jid, _ = attach[side]
            model.addFrame(pin.Frame(fname, jid, joint_world[jid].inverse() * X, pin.FrameType.OP_FRAME), False)
        taken.update((fa, fu))
        closures.append(ClosureSpec(name, name, fa, fu, tuple(dirs)))

    tree_joints = [str(model.names[j]) for j in range(1, model.njoints) if str(model.names[j]) != "root_joint"
                   or not floating_base]
    given = {n: e for n, e in efforts.items() if n in tree_joints and e is not None}
    actuated = [n for n in tree_joints if (given.get(n) or 0.0) > 0.0 and model.joints[model.getJointId(n)].nv == 1]
    warnings: list[str] = []
    if actuated and any(e == 0.0 for e in given.values()):
        why = {n: "SDF effort limit > 0 (the other joints' are 0)" for n in actuated}
        cf = ClosureFile(closures, actuated, source=source, lock_idle_joints=True, actuated_why=why)
    else:
        cf = ClosureFile(closures, [], source=source, lock_idle_joints=True, infer_actuated=True)
    return SdfModel(model, cf, warnings)


__all__ = ["SdfModel", "load_sdf"]
