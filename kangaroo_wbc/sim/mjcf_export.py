"""Export a URDF spanning tree plus a closure specification to MuJoCo MJCF.

The exporter is robot-agnostic: it reads any URDF (the cut spanning tree) and a closure file in
either format understood by :func:`kangaroo_wbc.model.closures.load_closure_file`, and writes one
MJCF string in which

* every URDF link is a body (fixed joints become welded child bodies, so frames stay exact), with
  its inertial (URDF origin and rotated inertia tensor written as ``fullinertia``);
* every link, plus every closure frame, sole frame and the IMU frame, carries a site of the same name;
* every loop becomes MuJoCo equality constraint(s) between sites (see :func:`classify_closure`);
* actuated joints get ``motor`` actuators (axial force [N] for prismatic joints, torque [N·m] for
  revolute ones) with ``ctrlrange``/``forcerange`` from the URDF effort limit (or ``max_force_n``);
* soles get collision boxes, the floor is a plane with friction, and only floor ↔ robot contacts
  are enabled (``contype``/``conaffinity``), so the loop bodies never collide with each other;
* the IMU site carries ``framequat``/``gyro``/``accelerometer`` sensors and every actuator
  ``jointpos``/``jointvel``/``actuatorfrc``;
* a ``<custom>`` section records the metadata the simulator needs (actuated joints, encoder kinds,
  screw parameters, closures, soles), so that an exported file is self-contained.

Choice of equality per loop
---------------------------
The closure error of a loop is (``docs/closures_format.md``)

.. math::  e = [\\, R_a^T (p_u - p_a) \\;;\\; \\log_3(R_a^T R_u) \\,]

restricted to the declared directions ``C``. Directions along which ``e_i`` is the same constant for
every configuration of the tree (e.g. the out-of-plane rows of a planar loop) are *structurally
fixed* (set ``S``, detected on random configurations with pinocchio); constraining them is harmless
once their constant value is used as an offset. MuJoCo equalities constrain whole blocks, so the
cheapest block covering ``C \\ S`` inside ``C ∪ S`` is chosen:

* ``connect`` (3 translations) between a site at ``F_a`` (shifted by the structural offset) and ``F_u``,
* two ``connect`` (3 translations + 2 rotations) when exactly one rotation axis ``k`` is free: the
  second pair of sites sits ``hinge_offset_m`` along ``k`` (a revolute cut in a spatial loop),
* ``weld`` when every direction is declared or structurally fixed,
* otherwise a massless-like *cut body* child of ``F_a``'s body with slide/hinge/ball joints on the
  free directions, welded to ``F_u`` (exact for e.g. a prismatic or universal cut). Its joints are
  named ``cut__<loop>__<dir>`` and are not URDF joints.

Output is deterministic: same inputs → same bytes (fixed sampling seed, ordered iteration,
shortest round-trip float formatting).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ConfigError, FrameNotFound, JointNotFound, ModelError, suggest
from kangaroo_wbc.model.ball_screw import ENTRY_DEFAULTS, reflected_inertia
from kangaroo_wbc.model.closures import DIRECTIONS, ClosureFile, ClosureSpec, load_closure_file
from kangaroo_wbc.model.importers import REPLACEMENT_AXES, joint_replacements, spanning_tree

#: Prefix of every metadata entry written in ``<custom>``.
META_PREFIX = "kwbc:"
#: Ball-screw entries of the closure file kept in the MJCF's metadata (the simulator's actuators).
BALL_SCREW_KEYS = tuple(k for k in ENTRY_DEFAULTS if k not in ("screw_lead_m", "screw_efficiency"))
#: Prefix of the joints of the cut bodies (not URDF joints).
CUT_JOINT_PREFIX = "cut__"
#: Name of the free joint of a floating-base export.
FLOATING_JOINT_NAME = "floating_base"

# Collision bits: floor ↔ robot only.
_FLOOR_CONTYPE, _FLOOR_CONAFFINITY = 1, 0
_ROBOT_CONTYPE, _ROBOT_CONAFFINITY = 0, 1


# --------------------------------------------------------------------------------------------
# small math helpers
# --------------------------------------------------------------------------------------------
def rpy_to_matrix(rpy: Sequence[float] | np.ndarray) -> np.ndarray:
    """URDF roll-pitch-yaw [rad] to a rotation matrix, ``R = Rz(yaw) Ry(pitch) Rx(roll)``."""
    return pin.rpy.rpyToMatrix(*(float(v) for v in rpy))


def matrix_to_quat_wxyz(R: np.ndarray) -> np.ndarray:
    """Rotation matrix to a unit quaternion ``[w, x, y, z]`` with ``w >= 0`` (MuJoCo order)."""
    x, y, z, w = pin.Quaternion(np.asarray(R, dtype=float)).normalized().coeffs()
    q = np.array([w, x, y, z])
    return -q if q[0] < 0 else q


#: Welded (fixed-joint) links lighter than this are exported without inertial [kg].
MIN_WELDED_MASS_KG = 1e-6
#: Smallest principal inertia written to MJCF [kg·m²] (MuJoCo needs positive eigenvalues).
MIN_PRINCIPAL_INERTIA = 1e-10


def _regularised_inertia(I: np.ndarray) -> np.ndarray:
    """Inertia tensor with principal moments floored at :data:`MIN_PRINCIPAL_INERTIA` (unchanged if valid)."""
    w, V = np.linalg.eigh(0.5 * (I + I.T))
    if np.all(w >= MIN_PRINCIPAL_INERTIA):
        return I
    return (V * np.maximum(w, MIN_PRINCIPAL_INERTIA)) @ V.T


def _fmt(x: float) -> str:
    """Shortest round-trip decimal of ``x`` (``-0`` and tiny round-off folded to ``0``)."""
    x = float(x)
    if not math.isfinite(x):
        raise ModelError(f"non-finite number {x} in the exported model")
    if abs(x) < 1e-15:
        return "0"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def _vec(v: Sequence[float] | np.ndarray) -> str:
    return " ".join(_fmt(x) for x in v)


def _opt_float(el: ET.Element, key: str, where: str) -> float | None:
    text = el.get(key)
    if text is None:
        return None
    try:
        return float(text)
    except ValueError as exc:
        raise ConfigError(f"{where}: <{el.tag} {key}=...> is not a number: {text!r}") from exc


def _parse_floats(text: str | None, n: int, where: str, default: Sequence[float]) -> np.ndarray:
    if text is None:
        return np.array(default, dtype=float)
    try:
        vals = [float(t) for t in text.split()]
    except ValueError as exc:
        raise ConfigError(f"{where}: cannot parse numbers from {text!r}") from exc
    if len(vals) != n:
        raise ConfigError(f"{where}: expected {n} numbers, got {text!r}")
    return np.array(vals)


def _origin(el: ET.Element, where: str) -> tuple[np.ndarray, np.ndarray]:
    """``xyz`` [m] and rotation matrix of the ``<origin>`` child of ``el`` (identity when absent)."""
    origin = el.find("origin")
    xyz = _parse_floats(origin.get("xyz") if origin is not None else None, 3, where, (0, 0, 0))
    rpy = _parse_floats(origin.get("rpy") if origin is not None else None, 3, where, (0, 0, 0))
    return xyz, rpy_to_matrix(rpy)


# --------------------------------------------------------------------------------------------
# URDF reading
# --------------------------------------------------------------------------------------------
@dataclass
class UrdfJoint:
    """One URDF joint: kinematics, limits and dynamics in URDF units ([m], [rad], [N], [N·m])."""

    name: str
    type: str
    parent: str
    child: str
    xyz: np.ndarray
    R: np.ndarray
    axis: np.ndarray
    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None
    damping: float | None = None
    friction: float | None = None


@dataclass
class UrdfLink:
    """One URDF link: inertial (in the link frame) and primitive geometries."""

    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))
    has_inertial: bool = False
    geoms: list[tuple[str, str, np.ndarray, np.ndarray, list[float]]] = field(default_factory=list)


@dataclass
class UrdfTree:
    """A parsed URDF: links, joints (file order) and the tree structure."""

    name: str
    links: dict[str, UrdfLink]
    joints: list[UrdfJoint]
    root: str
    children: dict[str, list[UrdfJoint]]
    source: str

    @property
    def joint_by_name(self) -> dict[str, UrdfJoint]:
        return {j.name: j for j in self.joints}

    @property
    def joint_by_child(self) -> dict[str, UrdfJoint]:
        return {j.child: j for j in self.joints}


def parse_urdf(urdf_path: str | Path) -> UrdfTree:
    """Parse a URDF file into a :class:`UrdfTree` (errors name the file and the element)."""
    p = Path(urdf_path)
    if not p.is_file():
        raise ConfigError(f"{p}: URDF file not found")
    try:
        root = ET.parse(p).getroot()
    except ET.ParseError as exc:
        raise ConfigError(f"{p}: not valid XML: {exc}") from exc
    if root.tag != "robot":
        raise ConfigError(f"{p}: root element is <{root.tag}>, expected <robot>")
    src = str(p)
    links: dict[str, UrdfLink] = {}
    for el in root.findall("link"):
        name = el.get("name")
        if not name:
            raise ConfigError(f"{src}: <link> without a name")
        if name in links:
            raise ConfigError(f"{src}: duplicated link {name!r}")
        link = UrdfLink(name)
        inert = el.find("inertial")
        if inert is not None:
            link.com, Ri = _origin(inert, f"{src}: link {name!r} <inertial>")
            mass_el = inert.find("mass")
            link.mass = float(mass_el.get("value", "0")) if mass_el is not None else 0.0
            I_el = inert.find("inertia")
            vals = {k: float(I_el.get(k, "0")) if I_el is not None else 0.0
                    for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
            I = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                          [vals["ixy"], vals["iyy"], vals["iyz"]],
                          [vals["ixz"], vals["iyz"], vals["izz"]]])
            link.inertia = Ri @ I @ Ri.T
            link.has_inertial = True
        for kind in ("collision", "visual"):
            for g in el.findall(kind):
                geom = g.find("geometry")
                if geom is None or len(geom) == 0:
                    continue
                shape = geom[0]
                where = f"{src}: link {name!r} <{kind}>"
                xyz, R = _origin(g, where)
                if shape.tag == "box":
                    size = list(0.5 * _parse_floats(shape.get("size"), 3, where, (0, 0, 0)))
                elif shape.tag == "cylinder":
                    size = [float(shape.get("radius", "0")), 0.5 * float(shape.get("length", "0"))]
                elif shape.tag == "sphere":
                    size = [float(shape.get("radius", "0"))]
                else:  # meshes are not exported (kinematics and dynamics do not need them)
                    continue
                link.geoms.append((kind, shape.tag, xyz, R, size))
        links[name] = link
    joints: list[UrdfJoint] = []
    for el in root.findall("joint"):
        name = el.get("name")
        jtype = el.get("type")
        where = f"{src}: joint {name!r}"
        if not name or not jtype:
            raise ConfigError(f"{src}: <joint> needs a name and a type")
        par, chi = el.find("parent"), el.find("child")
        if par is None or chi is None:
            raise ConfigError(f"{where}: missing <parent> or <child>")
        parent, child = par.get("link", ""), chi.get("link", "")
        for ln in (parent, child):
            if ln not in links:
                raise ConfigError(f"{where}: unknown link {ln!r}." + suggest(ln, list(links)))
        xyz, R = _origin(el, where)
        ax = el.find("axis")
        axis = _parse_floats(ax.get("xyz") if ax is not None else None, 3, where, (1, 0, 0))
        if jtype in ("revolute", "continuous", "prismatic"):
            n = float(np.linalg.norm(axis))
            if n < 1e-12:
                raise ConfigError(f"{where}: zero <axis>")
            axis = axis / n
        elif jtype not in ("fixed", "floating"):
            raise ModelError(f"{where}: joint type {jtype!r} is not supported by the MJCF exporter")
        j = UrdfJoint(name, jtype, parent, child, xyz, R, axis)
        for tag, keys in (("limit", ("lower", "upper", "effort", "velocity")), ("dynamics", ("damping", "friction"))):
            sub = el.find(tag)
            if sub is not None:
                for key in keys:
                    setattr(j, key, _opt_float(sub, key, where))
        joints.append(j)
    names = [j.name for j in joints]
    if len(set(names)) != len(names):
        raise ConfigError(f"{src}: duplicated joint names")
    children: dict[str, list[UrdfJoint]] = {ln: [] for ln in links}
    child_links = set()
    for j in joints:
        if j.child in child_links:
            raise ModelError(f"{src}: link {j.child!r} has two parent joints (the URDF must be a tree)")
        child_links.add(j.child)
        children[j.parent].append(j)
    roots = [ln for ln in links if ln not in child_links]
    if len(roots) != 1:
        raise ModelError(f"{src}: expected exactly one root link, found {roots}")
    return UrdfTree(root.get("name", p.stem), links, joints, roots[0], children, src)


# --------------------------------------------------------------------------------------------
# closure classification
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClosurePlan:
    """How one loop is written in MJCF.

    Attributes:
        spec: the loop from the closure file.
        kind: ``"connect"``, ``"hinge"`` (two connects), ``"weld"`` or ``"cut_body"``.
        fixed: directions declared or structurally fixed (``C ∪ S``).
        structural: structurally fixed directions ``S`` and their constant value of ``e``.
        offset_translation: ``F_a``-frame offset [m] of the ``F_a``-side site.
        offset_rotation: rotation vector [rad] of the ``F_a``-side site relative to ``F_a``.
        free_axis: index (0..2) of the free rotation axis for ``"hinge"``.
    """

    spec: ClosureSpec
    kind: str
    fixed: tuple[str, ...]
    structural: dict[str, float]
    offset_translation: tuple[float, float, float]
    offset_rotation: tuple[float, float, float]
    free_axis: int = -1


def _structural_constants(urdf_path: str, specs: list[ClosureSpec], replacements: Mapping[str, str],
                          n_samples: int = 8, tol: float = 1e-9) -> list[dict[str, float]]:
    """For each loop, the components of ``e`` that are equal on random tree configurations."""
    model = spanning_tree(urdf_path, dict(replacements), urdf_path)
    data = model.createData()
    frame_names = [f.name for f in model.frames]
    ids = []
    for s in specs:
        pair = []
        for key, name in (("frame_a", s.frame_a), ("frame_u", s.frame_u)):
            if not model.existFrame(name):
                raise FrameNotFound(f"closure {s.name!r}: {key}: unknown frame {name!r}." + suggest(name, frame_names))
            pair.append(model.getFrameId(name))
        ids.append(pair)
    rng = np.random.default_rng(20240601)
    samples = []
    for k in range(n_samples):
        q = pin.neutral(model)
        if k > 0:
            for j in range(1, model.njoints):
                jm = model.joints[j]
                if jm.nq == 1:
                    lo = model.lowerPositionLimit[jm.idx_q]
                    hi = model.upperPositionLimit[jm.idx_q]
                    lo = lo if np.isfinite(lo) and lo > -1e10 else -math.pi
                    hi = hi if np.isfinite(hi) and hi < 1e10 else math.pi
                    if hi <= lo:
                        lo, hi = -math.pi, math.pi
                    q[jm.idx_q] = rng.uniform(lo, hi)
                elif jm.nq == 2 and jm.nv == 1:  # unbounded revolute (cos, sin)
                    a = rng.uniform(-math.pi, math.pi)
                    q[jm.idx_q:jm.idx_q + 2] = (math.cos(a), math.sin(a))
                elif jm.nq == 4 and jm.nv == 3:  # spherical: random unit quaternion
                    u = rng.normal(size=4)
                    q[jm.idx_q:jm.idx_q + 4] = u / np.linalg.norm(u)
                elif jm.nq == jm.nv:  # e.g. universal: angles
                    q[jm.idx_q:jm.idx_q + jm.nq] = rng.uniform(-math.pi, math.pi, size=jm.nq)
        pin.framesForwardKinematics(model, data, q)
        errs = []
        for ia, iu in ids:
            Ma, Mu = data.oMf[ia], data.oMf[iu]
            Ra = Ma.rotation
            errs.append(np.concatenate([Ra.T @ (Mu.translation - Ma.translation), pin.log3(Ra.T @ Mu.rotation)]))
        samples.append(errs)
    E = np.array(samples)  # (sample, loop, direction)
    spread = E.max(axis=0) - E.min(axis=0)
    return [{d: float(E[0, i, n]) for n, d in enumerate(DIRECTIONS) if spread[i, n] < tol} for i in range(len(specs))]


def classify_closure(spec: ClosureSpec, structural: Mapping[str, float]) -> ClosurePlan:
    """Pick the MuJoCo equality block(s) for one loop (see the module docstring)."""
    declared = set(spec.directions)
    fixed_set = declared | set(structural)
    fixed = tuple(d for d in DIRECTIONS if d in fixed_set)
    needed = declared - set(structural)
    trans, rots = ("x", "y", "z"), ("rx", "ry", "rz")
    def const(d: str) -> float:
        return float(structural.get(d, 0.0)) if d not in declared else 0.0

    t_off = (const("x"), const("y"), const("z"))
    r_const = (const("rx"), const("ry"), const("rz"))
    all_trans = all(d in fixed_set for d in trans)
    free_rots = [i for i, d in enumerate(rots) if d not in fixed_set]
    zero_rot = all(abs(v) < 1e-9 for v in r_const)

    def plan(kind: str, rot: tuple[float, float, float] = (0.0, 0.0, 0.0), axis: int = -1) -> ClosurePlan:
        return ClosurePlan(spec, kind, fixed, dict(structural), t_off, rot, axis)

    if all_trans and needed <= set(trans):
        return plan("connect")
    if all_trans and len(free_rots) == 1 and zero_rot:
        return plan("hinge", axis=free_rots[0])
    if all_trans and not free_rots:
        return plan("weld", rot=r_const)
    return plan("cut_body", rot=r_const if zero_rot or not free_rots else (0.0, 0.0, 0.0))


# --------------------------------------------------------------------------------------------
# exporter
# --------------------------------------------------------------------------------------------
def _sub(parent: ET.Element, tag: str, attrs: Mapping[str, Any] | None = None) -> ET.Element:
    el = ET.SubElement(parent, tag)
    for k, v in (attrs or {}).items():
        el.set(k, v if isinstance(v, str) else _fmt(v))
    return el


def _set_pose(el: ET.Element, xyz: np.ndarray, R: np.ndarray) -> None:
    if np.any(np.abs(xyz) > 0):
        el.set("pos", _vec(xyz))
    if not np.allclose(R, np.eye(3), atol=0.0, rtol=0.0):
        el.set("quat", _vec(matrix_to_quat_wxyz(R)))


def _actuator_armature(params: Mapping[str, Any], linear: bool, default: float) -> float:
    """Armature of an actuated joint: given, or the reflected rotor inertia of a ball screw
    (:func:`~kangaroo_wbc.model.ball_screw.reflected_inertia`, ``J_r (2 pi / L)^2`` [kg])."""
    if "armature" in params:
        return float(params["armature"])
    if linear and "rotor_inertia_kgm2" in params and "screw_lead_m" in params:
        return float(reflected_inertia(float(params["rotor_inertia_kgm2"]), float(params["screw_lead_m"])))
    return float(default)


def _actuator_settings(closure_file: ClosureFile, actuator_params: Mapping[str, Mapping[str, Any]] | None,
                       names: list[str]) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {n: {} for n in names}
    for source, params in (("closure file 'actuators'", closure_file.actuators), ("actuator_params", actuator_params)):
        for n, p in (params or {}).items():
            if n not in merged:
                raise JointNotFound(f"{source}: {n!r} is not an actuated joint." + suggest(n, names))
            if not isinstance(p, Mapping):
                raise ConfigError(f"{source}: {n!r}: expected a mapping of parameters, got {p!r}")
            merged[n].update(p)
    return merged


def export_mjcf(
    urdf_path: str | Path,
    closures_path: str | Path,
    *,
    floating_base: bool,
    actuator_params: Mapping[str, Mapping[str, Any]] | None = None,
    model_name: str | None = None,
    timestep: float = 0.001,
    integrator: str = "implicitfast",
    soles: Mapping[str, Sequence[float]] | None = None,
    sole_thickness_m: float = 0.01,
    imu_frame: str | None = "imu",
    extra_frames: Sequence[str] = (),
    base_position: Sequence[float] = (0.0, 0.0, 1.0),
    floor_friction: Sequence[float] = (1.0, 0.005, 0.0001),
    eq_solref: Sequence[float] = (0.002, 1.0),
    eq_solimp: Sequence[float] = (0.9999, 0.9999, 0.001, 0.5, 2.0),
    contact_solref: Sequence[float] = (0.004, 1.0),
    joint_damping: float = 0.01,
    joint_armature: float = 1e-4,
    actuator_armature: float = 0.01,
    link_collisions: bool = False,
    visual_collisions: bool = False,
    hinge_offset_m: float = 0.05,
    cut_body_mass_kg: float = 1e-3,
) -> str:
    """Return the MJCF text of a URDF spanning tree closed by a closure specification.

    Args:
        urdf_path: URDF of the spanning tree.
        closures_path: closure file (native ``kangaroo_wbc/closures/1`` or extended-URDF YAML).
        floating_base: add a free joint ``floating_base`` at the root link (else the root is
            welded to the world at ``base_position``, "hanging on a crane").
        actuator_params: per actuated joint, overrides of the closure file ``actuators`` entry:
            ``screw_lead_m`` [m], ``screw_efficiency`` [-], ``max_force_n`` [N] (replaces the URDF
            effort limit), ``armature`` (reflected inertia [kg] or [kg·m²]) or ``rotor_inertia_kgm2``
            (reflected through the screw: ``J (2π/L)²``), ``damping``.
        model_name: MJCF model name (default: the URDF robot name).
        timestep: physics time step [s].
        integrator: MuJoCo integrator (``implicitfast`` is stable with joint damping).
        soles: sole frame name → ``(length_x, width_y)`` or ``(length_x, width_y, center_x, center_y)``
            [m] of its collision box (centre in the sole frame); the box bottom face lies in the sole
            frame's xy plane (the sole frame z axis points out of the ground).
        sole_thickness_m: thickness of the sole boxes [m].
        imu_frame: frame carrying the IMU sensors; ``"imu"`` is optional (skipped when absent), any
            other name must exist.
        extra_frames: more frame names that must get a site (checked).
        base_position: initial position of the root link in the world [m].
        floor_friction: sliding, torsional, rolling friction of the floor.
        eq_solref, eq_solimp: MuJoCo softness of the loop-closure equalities (tight by default;
            ``eq_solref[0]`` must be >= 2·timestep).
        contact_solref: softness of the floor contacts.
        joint_damping: default joint damping [N·m·s/rad] or [N·s/m] (URDF ``<dynamics>`` wins).
        joint_armature: default joint armature [kg·m²] or [kg].
        actuator_armature: armature of actuated joints (reflected rotor inertia) [kg] or [kg·m²].
        link_collisions: also let the URDF collision primitives touch the floor.
        visual_collisions: also let the URDF visual primitives touch the floor (a fallen robot lands
            on its links instead of sinking through the floor).
        hinge_offset_m: distance of the second site pair of a ``hinge`` closure [m].
        cut_body_mass_kg: mass of the auxiliary cut bodies [kg].

    Raises:
        ConfigError: unreadable or malformed files.
        ModelError / FrameNotFound / JointNotFound: inconsistent model and closure file.
    """
    options = MjcfOptions(floating_base, actuator_params, model_name, timestep, integrator, soles, sole_thickness_m,
                          imu_frame, tuple(extra_frames), tuple(base_position), tuple(floor_friction), tuple(eq_solref),
                          tuple(eq_solimp), tuple(contact_solref), joint_damping, joint_armature, actuator_armature,
                          link_collisions, visual_collisions, hinge_offset_m, cut_body_mass_kg)
    return _MjcfExport(Path(urdf_path), Path(closures_path), options).text()


@dataclass(frozen=True)
class MjcfOptions:
    """The options of :func:`export_mjcf` (documented there)."""

    floating_base: bool
    actuator_params: Mapping[str, Mapping[str, Any]] | None
    model_name: str | None
    timestep: float
    integrator: str
    soles: Mapping[str, Sequence[float]] | None
    sole_thickness_m: float
    imu_frame: str | None
    extra_frames: tuple[str, ...]
    base_position: tuple[float, ...]
    floor_friction: tuple[float, ...]
    eq_solref: tuple[float, ...]
    eq_solimp: tuple[float, ...]
    contact_solref: tuple[float, ...]
    joint_damping: float
    joint_armature: float
    actuator_armature: float
    link_collisions: bool
    visual_collisions: bool
    hinge_offset_m: float
    cut_body_mass_kg: float


class _MjcfExport:
    """:func:`export_mjcf` in steps: check the closure file against the tree and resolve the frames,
    plan the closures, size the actuators, then write the document (header, metadata, the body
    tree, equalities, actuators, sensors)."""

    def __init__(self, urdf_path: Path, closures_path: Path, options: MjcfOptions) -> None:
        self.urdf_path, self.closures_path, self.o = urdf_path, closures_path, options
        self.tree = parse_urdf(urdf_path)
        self.cf = load_closure_file(closures_path)
        self.jbn = self.tree.joint_by_name
        self.movable = [j.name for j in self.tree.joints if j.type != "fixed"]
        self._check_joints()
        #: frames that are not link names -> their link; the soles' boxes; the IMU's link
        self.site_frames: dict[str, str] = {}
        self.sole_map: dict[str, tuple[float, float, float, float]] = {}
        self.imu_link: str | None = None
        self._resolve_frames()
        self.replaced = joint_replacements(self.cf)
        self.plans: list[ClosurePlan] = []
        self.extra_sites: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {ln: [] for ln in self.tree.links}
        self.cut_bodies: dict[str, list[ClosurePlan]] = {ln: [] for ln in self.tree.links}
        self.eq_elems: list[tuple[str, dict[str, str]]] = []
        self._plan_closures()
        self.act = _actuator_settings(self.cf, options.actuator_params, list(self.cf.actuated_joints))
        self.force_limit = self._force_limits()

    # ---- checks and frame resolution ---------------------------------------------------------------
    def _resolve(self, name: str, key: str) -> str:
        """The link of frame ``name`` (a link, or a joint's child link)."""
        if name in self.tree.links:
            return name
        if name in self.jbn:
            return self.jbn[name].child
        raise FrameNotFound(f"{key}: unknown frame {name!r}."
                            + suggest(name, sorted(list(self.tree.links) + list(self.jbn))))

    def _check_joints(self) -> None:
        cf, jbn, movable = self.cf, self.jbn, self.movable
        for n in cf.actuated_joints:
            if n not in jbn or jbn[n].type == "fixed":
                raise JointNotFound(f"{cf.source}: actuated_joints: {n!r} is not a movable URDF joint."
                                    + suggest(n, movable))
        for key, names in (("absolute_encoders", cf.absolute_encoders), ("absolute_actuators", cf.absolute_actuators)):
            for n in names:
                if n not in jbn:
                    raise JointNotFound(f"{cf.source}: {key}: unknown joint {n!r}." + suggest(n, movable))
        for n in cf.absolute_actuators:
            if n not in cf.actuated_joints:
                raise ModelError(f"{cf.source}: absolute_actuators: {n!r} is not listed in actuated_joints")

    def _resolve_frames(self) -> None:
        cf, o, site_frames = self.cf, self.o, self.site_frames
        for c in cf.closures:
            for key, fr in (("frame_a", c.frame_a), ("frame_u", c.frame_u)):
                site_frames.setdefault(fr, self._resolve(fr, f"{cf.source}: closure {c.name!r}: {key}"))
        for s, dims in (o.soles or {}).items():
            site_frames.setdefault(s, self._resolve(s, "soles"))
            dim = [float(v) for v in dims]
            if len(dim) not in (2, 4) or not (dim[0] > 0 and dim[1] > 0):
                raise ConfigError(f"soles: {s!r}: expected (length_x, width_y[, center_x, center_y]) [m] "
                                  f"with positive sizes, got {dims!r}")
            dim += [0.0, 0.0]
            self.sole_map[s] = (dim[0], dim[1], dim[2], dim[3])
        if o.imu_frame is not None:
            if o.imu_frame in self.tree.links or o.imu_frame in self.jbn:
                self.imu_link = self._resolve(o.imu_frame, "imu_frame")
                site_frames.setdefault(o.imu_frame, self.imu_link)
            elif o.imu_frame != "imu":
                self._resolve(o.imu_frame, "imu_frame")
        for fr in o.extra_frames:
            site_frames.setdefault(fr, self._resolve(fr, "extra_frames"))

    # ---- closures and actuators ------------------------------------------------------------------
    def _plan_closures(self) -> None:
        cf, jbn = self.cf, self.jbn
        for n, kind in self.replaced.items():
            if n not in jbn or jbn[n].type not in ("revolute", "continuous"):
                raise JointNotFound(f"{cf.source}: joint_name: {n!r} is not a revolute URDF joint."
                                    + suggest(n, self.movable))
            if kind.upper() not in REPLACEMENT_AXES:
                raise ConfigError(f"{cf.source}: joint_type: unsupported {kind!r}; valid: {sorted(REPLACEMENT_AXES)}")
        structural = _structural_constants(str(self.urdf_path), cf.closures, self.replaced) if cf.closures else []
        self.plans = [classify_closure(c, s) for c, s in zip(cf.closures, structural)]
        for pl in self.plans:
            c = pl.spec
            la, lu = self.site_frames[c.frame_a], self.site_frames[c.frame_u]
            t_off = np.array(pl.offset_translation)
            R_off = pin.exp3(np.array(pl.offset_rotation, dtype=float))
            if pl.kind == "cut_body":
                self.cut_bodies[la].append(pl)
                self.eq_elems.append(("weld", {"name": c.name, "site1": f"{CUT_JOINT_PREFIX}{c.name}",
                                               "site2": c.frame_u}))
                continue
            shifted = np.any(np.abs(t_off) > 0) or np.any(np.abs(pl.offset_rotation) > 0)
            site_a = c.frame_a
            if shifted:
                site_a = f"{c.name}__a"
                self.extra_sites[la].append((site_a, t_off, R_off))
            tag = "weld" if pl.kind == "weld" else "connect"
            self.eq_elems.append((tag, {"name": c.name, "site1": site_a, "site2": c.frame_u}))
            if pl.kind == "hinge":
                e_k = np.eye(3)[pl.free_axis] * self.o.hinge_offset_m
                self.extra_sites[la].append((f"{c.name}__a_axis", t_off + e_k, np.eye(3)))
                self.extra_sites[lu].append((f"{c.name}__u_axis", e_k, np.eye(3)))
                self.eq_elems.append(("connect", {"name": f"{c.name}__axis", "site1": f"{c.name}__a_axis",
                                                  "site2": f"{c.name}__u_axis"}))

    def _force_limits(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for n in self.cf.actuated_joints:
            lim = self.act[n].get("max_force_n", self.jbn[n].effort)
            if lim is None or not float(lim) > 0:
                raise ModelError(f"{self.tree.source}: actuated joint {n!r} has no positive effort limit "
                                 f"(give <limit effort=...> or actuator_params[{n!r}]['max_force_n'])")
            out[n] = float(lim)
        return out

    # ---- the document ----------------------------------------------------------------------------
    def text(self) -> str:
        """The MJCF document."""
        root = ET.Element("mujoco", {"model": self.o.model_name or self.tree.name})
        self._defaults(root)
        self._metadata(_sub(root, "custom"))
        world = _sub(root, "worldbody")
        _sub(world, "light", {"name": "sun", "pos": "0 0 4", "dir": "0 0 -1", "directional": "true"})
        _sub(world, "geom", {"name": "floor", "type": "plane", "size": "0 0 0.05",
                             "friction": _vec(self.o.floor_friction), "contype": str(_FLOOR_CONTYPE),
                             "conaffinity": str(_FLOOR_CONAFFINITY), "rgba": "0.8 0.8 0.8 1"})
        self._emit_link(world, self.tree.root, None)
        eq = _sub(root, "equality")
        for tag, attrs in self.eq_elems:
            _sub(eq, tag, attrs)
        self._actuators_and_sensors(root)
        ET.indent(root, space="  ")
        header = (f"<!-- Generated by kangaroo_wbc.sim.mjcf_export from {self.urdf_path.name} and "
                  f"{self.closures_path.name}; do not edit by hand. -->\n")
        return header + ET.tostring(root, encoding="unicode") + "\n"

    def _defaults(self, root: ET.Element) -> None:
        o = self.o
        _sub(root, "compiler", {"angle": "radian", "autolimits": "true", "inertiafromgeom": "false",
                                "balanceinertia": "true"})
        _sub(root, "option", {"timestep": float(o.timestep), "integrator": o.integrator, "gravity": "0 0 -9.81",
                              "cone": "elliptic"})
        default = _sub(root, "default")
        _sub(default, "joint", {"damping": o.joint_damping, "armature": o.joint_armature})
        _sub(default, "geom", {"contype": str(_ROBOT_CONTYPE), "conaffinity": str(_ROBOT_CONAFFINITY),
                               "solref": _vec(o.contact_solref), "condim": "3", "friction": _vec(o.floor_friction)})
        _sub(default, "equality", {"solref": _vec(o.eq_solref), "solimp": _vec(o.eq_solimp)})
        _sub(default, "site", {"size": "0.005", "group": "3"})
        visual_cls = _sub(default, "default", {"class": "visual"})
        _sub(visual_cls, "geom", {"contype": "0", "conaffinity": "0", "group": "1", "rgba": "0.7 0.7 0.75 1"})

    def _metadata(self, custom: ET.Element) -> None:
        cf, o = self.cf, self.o

        def meta(name: str, data: str | None) -> None:
            _sub(custom, "text", {"name": META_PREFIX + name, "data": data if data else "-"})

        meta("format", "1")
        meta("source_urdf", self.urdf_path.name)
        meta("floating_base", "1" if o.floating_base else "0")
        meta("actuated_joints", " ".join(cf.actuated_joints))
        meta("absolute_actuators", " ".join(cf.absolute_actuators))
        meta("absolute_encoders", " ".join(cf.absolute_encoders))
        meta("urdf_joints", " ".join(n for n in self.movable if n not in self.replaced))
        meta("replaced_joints", " ".join(f"{n}:{k.upper()}" for n, k in self.replaced.items()))
        meta("soles", " ".join(self.sole_map))
        meta("imu", o.imu_frame if self.imu_link is not None else "")
        meta("closures", ";".join(f"{pl.spec.name},{pl.spec.frame_a},{pl.spec.frame_u},{pl.kind},"
                                      f"{'/'.join(pl.spec.directions)}" for pl in self.plans))
        for n in cf.actuated_joints:
            for key in ("screw_lead_m", "screw_efficiency", "stroke_m", "max_velocity_m_s", *BALL_SCREW_KEYS):
                if key in self.act[n]:
                    arr = np.atleast_1d(np.asarray(self.act[n][key], dtype=float))
                    _sub(custom, "numeric", {"name": f"{META_PREFIX}{key}:{n}", "size": str(arr.size),
                                             "data": _vec(arr)})

    def _emit_link(self, parent_el: ET.Element, link_name: str, joint: UrdfJoint | None) -> None:
        """The body of ``link_name`` (its joint, inertia, sites, geoms, cut bodies), then its children."""
        body = _sub(parent_el, "body", {"name": link_name})
        self._emit_joint(body, joint)
        self._emit_inertial(body, link_name, joint)
        self._emit_sites(body, link_name)
        self._emit_geoms(body, link_name)
        self._emit_cut_bodies(body, link_name)
        for j in self.tree.children[link_name]:
            self._emit_link(body, j.child, j)

    def _emit_joint(self, body: ET.Element, joint: UrdfJoint | None) -> None:
        o, replaced = self.o, self.replaced
        if joint is None:
            body.set("pos", _vec(o.base_position))
            if o.floating_base:
                _sub(body, "freejoint", {"name": FLOATING_JOINT_NAME})
            return
        _set_pose(body, joint.xyz, joint.R)
        if joint.name in replaced:
            axes = REPLACEMENT_AXES[replaced[joint.name].upper()]
            if axes == ():
                _sub(body, "joint", {"name": joint.name, "type": "ball"})
            for a in axes or ():
                _sub(body, "joint", {"name": f"{joint.name}__{'xyz'[a]}", "type": "hinge",
                                     "axis": _vec(np.eye(3)[a])})
        elif joint.type in ("revolute", "continuous", "prismatic"):
            attrs: dict[str, Any] = {"name": joint.name, "type": "slide" if joint.type == "prismatic" else "hinge",
                                     "axis": _vec(joint.axis)}
            if joint.type != "continuous" and joint.lower is not None and joint.upper is not None \
                    and joint.upper > joint.lower:
                attrs["range"] = _vec((joint.lower, joint.upper))
                attrs["limited"] = "true"
            if joint.name in self.act:
                attrs["armature"] = _actuator_armature(self.act[joint.name], joint.type == "prismatic",
                                                       o.actuator_armature)
                if "damping" in self.act[joint.name]:
                    attrs["damping"] = float(self.act[joint.name]["damping"])
            if joint.damping is not None and "damping" not in attrs:
                attrs["damping"] = joint.damping
            if joint.friction:
                attrs["frictionloss"] = joint.friction
            _sub(body, "joint", attrs)
        elif joint.type == "floating":
            _sub(body, "freejoint", {"name": joint.name})

    def _emit_inertial(self, body: ET.Element, link_name: str, joint: UrdfJoint | None) -> None:
        link, replaced = self.tree.links[link_name], self.replaced
        welded = joint is None and not self.o.floating_base or joint is not None and (
            joint.type == "fixed" or REPLACEMENT_AXES.get(replaced.get(joint.name, "").upper(), ()) is None)
        if link.has_inertial and link.mass > (MIN_WELDED_MASS_KG if welded else 0.0):
            I = _regularised_inertia(link.inertia)
            _sub(body, "inertial", {"pos": _vec(link.com), "mass": link.mass,
                                    "fullinertia": _vec((I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]))})
        elif not welded:
            jname = joint.name if joint is not None else FLOATING_JOINT_NAME
            raise ModelError(f"{self.tree.source}: link {link_name!r} moves (joint {jname!r}) but has no mass")

    def _emit_sites(self, body: ET.Element, link_name: str) -> None:
        _sub(body, "site", {"name": link_name})
        for fr, ln in self.site_frames.items():
            if ln == link_name and fr != link_name:
                _sub(body, "site", {"name": fr})
        for sname, xyz, R in self.extra_sites[link_name]:
            s = _sub(body, "site", {"name": sname})
            _set_pose(s, xyz, R)

    def _emit_geoms(self, body: ET.Element, link_name: str) -> None:
        o = self.o
        for k, (kind, shape, xyz, R, size) in enumerate(self.tree.links[link_name].geoms):
            if kind == "collision" and o.link_collisions:
                g = _sub(body, "geom", {"name": f"{link_name}__collision{k}", "type": shape,
                                        "size": _vec(size), "group": "3"})
            elif kind == "visual":
                g = _sub(body, "geom", {"name": f"{link_name}__visual{k}", "class": "visual",
                                        "type": shape, "size": _vec(size)})
                if o.visual_collisions:
                    g.set("contype", str(_ROBOT_CONTYPE))
                    g.set("conaffinity", str(_ROBOT_CONAFFINITY))
            else:
                continue
            _set_pose(g, xyz, R)
        for fr, ln in self.site_frames.items():
            if ln == link_name and fr in self.sole_map:
                lx, wy, cx, cy = self.sole_map[fr]
                g = _sub(body, "geom", {"name": f"{fr}__box", "type": "box",
                                        "size": _vec((lx / 2, wy / 2, o.sole_thickness_m / 2)),
                                        "rgba": "0.2 0.2 0.2 1"})
                # sole frame pose within the link is identity (frames are links or joint frames)
                g.set("pos", _vec((cx, cy, o.sole_thickness_m / 2)))

    def _emit_cut_bodies(self, body: ET.Element, link_name: str) -> None:
        for pl in self.cut_bodies[link_name]:
            c = pl.spec
            cb = _sub(body, "body", {"name": f"{CUT_JOINT_PREFIX}{c.name}"})
            _set_pose(cb, np.array(pl.offset_translation), pin.exp3(np.array(pl.offset_rotation, dtype=float)))
            for i, d in enumerate(("x", "y", "z")):
                if d not in pl.fixed:
                    _sub(cb, "joint", {"name": f"{CUT_JOINT_PREFIX}{c.name}__{d}", "type": "slide",
                                       "axis": _vec(np.eye(3)[i]), "damping": "0"})
            free_r = [i for i, d in enumerate(("rx", "ry", "rz")) if d not in pl.fixed]
            if len(free_r) == 3:
                _sub(cb, "joint", {"name": f"{CUT_JOINT_PREFIX}{c.name}__ball", "type": "ball", "damping": "0"})
            else:
                for i in free_r:
                    _sub(cb, "joint", {"name": f"{CUT_JOINT_PREFIX}{c.name}__r{'xyz'[i]}", "type": "hinge",
                                       "axis": _vec(np.eye(3)[i]), "damping": "0"})
            m = float(self.o.cut_body_mass_kg)
            _sub(cb, "inertial", {"pos": "0 0 0", "mass": m, "diaginertia": _vec([m * 1e-4] * 3)})
            _sub(cb, "site", {"name": f"{CUT_JOINT_PREFIX}{c.name}"})

    def _actuators_and_sensors(self, root: ET.Element) -> None:
        cf = self.cf
        acts = _sub(root, "actuator")
        for n in cf.actuated_joints:
            lim = self.force_limit[n]
            _sub(acts, "motor", {"name": n, "joint": n, "gear": "1", "ctrlrange": _vec((-lim, lim)),
                                 "forcerange": _vec((-lim, lim))})
        sens = _sub(root, "sensor")
        if self.imu_link is not None:
            imu = self.o.imu_frame
            _sub(sens, "framequat", {"name": "imu_orientation", "objtype": "site", "objname": imu})
            _sub(sens, "gyro", {"name": "imu_gyro", "site": imu})
            _sub(sens, "accelerometer", {"name": "imu_accelerometer", "site": imu})
        for n in cf.actuated_joints:
            _sub(sens, "jointpos", {"name": f"{n}__pos", "joint": n})
            _sub(sens, "jointvel", {"name": f"{n}__vel", "joint": n})
            _sub(sens, "actuatorfrc", {"name": f"{n}__force", "actuator": n})
