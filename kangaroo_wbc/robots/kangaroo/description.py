"""In-memory robot description shared by the URDF, closure and SDF writers.

A :class:`Description` is a spanning tree of :class:`Link` and :class:`Joint` objects plus the loop
closures that close it. The :class:`TreeBuilder` places every link frame in the world at the
zero configuration (all joint positions 0, which for the Kangaroo is a closed configuration) and
derives the URDF joint origins ``T_parent^-1 T_child`` from those world poses, so the generator
can reason in world coordinates.

Units: [m], [kg], [kg·m²], [rad]; rotations are 3×3 matrices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kangaroo_wbc.errors import ModelError

#: Mirror through the sagittal (xz) plane of the pelvis: left leg → right leg.
MIRROR = np.diag([1.0, -1.0, 1.0])


# ---------------------------------------------------------------------- rotations
def rot_x(a: float) -> np.ndarray:
    """Rotation by ``a`` [rad] about x."""
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> np.ndarray:
    """Rotation by ``a`` [rad] about y."""
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> np.ndarray:
    """Rotation by ``a`` [rad] about z."""
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def frame_from_z(z_dir: np.ndarray, y_hint: np.ndarray) -> np.ndarray:
    """Rotation whose z axis is ``z_dir`` and whose y axis is as close as possible to ``y_hint``."""
    z = np.asarray(z_dir, float) / np.linalg.norm(z_dir)
    x = np.cross(y_hint, z)
    n = np.linalg.norm(x)
    if n < 1e-9:
        raise ModelError(f"frame_from_z: y hint {y_hint} is parallel to the z direction {z}")
    x /= n
    return np.column_stack([x, np.cross(z, x), z])


def rpy_from_matrix(R: np.ndarray) -> np.ndarray:
    """URDF roll-pitch-yaw of ``R = Rz(yaw) Ry(pitch) Rx(roll)`` [rad]."""
    cp = np.hypot(R[0, 0], R[1, 0])
    if cp > 1e-9:
        return np.array([np.arctan2(R[2, 1], R[2, 2]), np.arctan2(-R[2, 0], cp), np.arctan2(R[1, 0], R[0, 0])])
    return np.array([0.0, np.arctan2(-R[2, 0], cp), np.arctan2(-R[0, 1], R[1, 1])])


# ---------------------------------------------------------------------- inertia
def box_inertia(mass: float, size: np.ndarray) -> np.ndarray:
    """Rotational inertia [kg·m²] of a solid box of edge lengths ``size`` [m] about its centre."""
    a, b, c = np.asarray(size, float) ** 2
    return mass / 12.0 * np.diag([b + c, a + c, a + b])


def cylinder_inertia(mass: float, radius: float, length: float) -> np.ndarray:
    """Rotational inertia [kg·m²] of a solid cylinder along z about its centre."""
    t = mass * (3.0 * radius**2 + length**2) / 12.0
    return np.diag([t, t, 0.5 * mass * radius**2])


@dataclass
class Shape:
    """A primitive in a link frame: ``box`` (size = 3 edges) or ``cylinder`` (radius, length along z)."""

    kind: str
    size: tuple[float, ...]
    xyz: np.ndarray
    R: np.ndarray


@dataclass
class Inertial:
    """Mass [kg], centre of mass [m] and rotational inertia about it [kg·m²], in the link frame."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


@dataclass
class Link:
    """A rigid body (or a massless frame when ``inertial`` is None)."""

    name: str
    inertial: Inertial | None = None
    visuals: list[Shape] = field(default_factory=list)
    collisions: list[Shape] = field(default_factory=list)
    #: serial segment the body moves with (used to lump masses for the serial twin)
    segment: str = ""


@dataclass
class Joint:
    """A tree joint. ``role`` is ``output`` / ``passive`` / ``actuated`` / ``fixed``."""

    name: str
    kind: str  # revolute | prismatic | fixed
    parent: str
    child: str
    xyz: np.ndarray
    R: np.ndarray
    axis: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    lower: float = 0.0
    upper: float = 0.0
    effort: float = 0.0
    velocity: float = 0.0
    role: str = "fixed"
    submechanism: str = ""


@dataclass
class Closure:
    """One cut loop (see ``docs/closures_format.md``) plus the cut joint for SDF/Gazebo.

    ``cut_kind`` is ``revolute`` or ``universal``; ``cut_axes`` are its axes in ``F_a``.
    """

    name: str
    submechanism: str
    frame_a: str
    frame_u: str
    directions: tuple[str, ...]
    cut_kind: str
    cut_axes: tuple[tuple[float, float, float], ...]


@dataclass
class Description:
    """A complete robot: tree, closures and the actuation/encoder metadata."""

    name: str
    links: list[Link]
    joints: list[Joint]
    closures: list[Closure] = field(default_factory=list)
    actuators: dict[str, dict[str, Any]] = field(default_factory=dict)
    absolute_actuators: list[str] = field(default_factory=list)
    absolute_encoders: list[str] = field(default_factory=list)
    submechanism_joints: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    world_poses: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def link(self, name: str) -> Link:
        for link in self.links:
            if link.name == name:
                return link
        raise ModelError(f"unknown link {name!r}")

    def joints_with_role(self, role: str) -> list[str]:
        return [j.name for j in self.joints if j.role == role]

    @property
    def total_mass(self) -> float:
        return float(sum(link.inertial.mass for link in self.links if link.inertial is not None))


# ---------------------------------------------------------------------- builder
class TreeBuilder:
    """Build a :class:`Description` from world poses at the zero configuration.

    ``mirror=True`` applies :data:`MIRROR` to every world point and rotation handed to it
    (``p -> M p``, ``R -> M R M``): the right leg is built by the same code as the left one. Local
    joint axes are kept, so for a mirror-symmetric posture the joints about a local ``y`` axis and
    the prismatic joints have equal positions on both legs, and joints about local ``x``/``z``
    opposite ones.
    """

    def __init__(self, name: str) -> None:
        self.desc = Description(name=name, links=[], joints=[])
        self.mirror = False

    # -- mirroring of world quantities
    def P(self, p: np.ndarray) -> np.ndarray:
        p = np.asarray(p, float)
        return MIRROR @ p if self.mirror else p.copy()

    def R(self, R: np.ndarray) -> np.ndarray:
        return MIRROR @ R @ MIRROR if self.mirror else np.asarray(R, float).copy()

    def pose(self, link: str) -> tuple[np.ndarray, np.ndarray]:
        return self.desc.world_poses[link]

    def add_root(self, name: str) -> Link:
        link = Link(name=name, segment="base")
        self.desc.links.append(link)
        self.desc.world_poses[name] = (np.zeros(3), np.eye(3))
        return link

    def add(self, name: str, parent: str, joint: str, kind: str, p_world: np.ndarray,
            R_world: np.ndarray | None = None, axis: tuple[float, float, float] = (0.0, 0.0, 1.0),
            role: str = "passive", limits: tuple[float, float] = (0.0, 0.0), effort: float = 0.0,
            velocity: float = 0.0, segment: str = "", submechanism: str = "",
            mirrored: bool = True) -> Link:
        """Add link ``name`` below ``parent`` through ``joint``; its frame sits at ``p_world``.

        ``p_world``/``R_world`` are given for the left leg (``mirrored=True``) and mirrored here
        when the builder is in mirror mode.
        """
        if any(link.name == name for link in self.desc.links):
            raise ModelError(f"duplicated link {name!r}")
        p = self.P(p_world) if mirrored else np.asarray(p_world, float)
        R = (self.R(R_world) if mirrored else np.asarray(R_world, float)) if R_world is not None else np.eye(3)
        pp, Rp = self.pose(parent)
        xyz = Rp.T @ (p - pp)
        R_rel = Rp.T @ R
        link = Link(name=name, segment=segment or self.desc.link(parent).segment)
        self.desc.links.append(link)
        self.desc.world_poses[name] = (p, R)
        self.desc.joints.append(Joint(
            name=joint, kind=kind, parent=parent, child=name, xyz=xyz, R=R_rel,
            axis=np.asarray(axis, float), lower=limits[0], upper=limits[1], effort=effort,
            velocity=velocity, role=role if kind != "fixed" else "fixed", submechanism=submechanism))
        return link

    def add_frame(self, name: str, parent: str, p_world: np.ndarray, R_world: np.ndarray | None = None,
                  mirrored: bool = True) -> Link:
        """A massless frame link fixed to ``parent`` (joint ``<name>_joint``)."""
        return self.add(name, parent, f"{name}_joint", "fixed", p_world, R_world, mirrored=mirrored)

    # -- mass properties, given in world coordinates at the zero configuration
    def _to_local(self, link: str, center_w: np.ndarray, R_shape_w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p, R = self.pose(link)
        return R.T @ (center_w - p), R.T @ R_shape_w

    def set_box(self, link: str, mass: float, center: np.ndarray, size: tuple[float, float, float],
                R_shape: np.ndarray | None = None, collision: bool = False, mirrored: bool = True) -> None:
        """Solid box of ``mass`` [kg] centred at ``center`` (left-leg world coordinates)."""
        R_shape = np.eye(3) if R_shape is None else R_shape
        c, Rs = (self.P(center), self.R(R_shape)) if mirrored else (np.asarray(center, float), R_shape)
        xyz, R_loc = self._to_local(link, c, Rs)
        self._add_inertia(link, mass, xyz, R_loc @ box_inertia(mass, np.array(size)) @ R_loc.T)
        shape = Shape("box", tuple(float(s) for s in size), xyz, R_loc)
        self.desc.link(link).visuals.append(shape)
        if collision:
            self.desc.link(link).collisions.append(shape)

    def add_collision_box(self, link: str, center: np.ndarray, size: tuple[float, float, float]) -> None:
        """A massless collision box centred at ``center`` (left-leg world coordinates), axes of the world."""
        xyz, R_loc = self._to_local(link, self.P(center), np.eye(3))
        self.desc.link(link).collisions.append(Shape("box", tuple(float(s) for s in size), xyz, R_loc))

    def set_rod(self, link: str, mass: float, a: np.ndarray, b: np.ndarray, radius: float) -> None:
        """Solid cylinder of ``mass`` [kg] and ``radius`` [m] from point ``a`` to point ``b``."""
        a, b = self.P(a), self.P(b)
        d = b - a
        L = float(np.linalg.norm(d))
        hint = np.array([0.0, 1.0, 0.0]) if abs(d[1]) < 0.9 * L else np.array([1.0, 0.0, 0.0])
        Rs = frame_from_z(d, hint)
        xyz, R_loc = self._to_local(link, 0.5 * (a + b), Rs)
        self._add_inertia(link, mass, xyz, R_loc @ cylinder_inertia(mass, radius, L) @ R_loc.T)
        self.desc.link(link).visuals.append(Shape("cylinder", (radius, L), xyz, R_loc))

    def _add_inertia(self, link_name: str, mass: float, com: np.ndarray, I_c: np.ndarray) -> None:
        """Accumulate a rigid part into the link's inertial (parallel-axis theorem)."""
        link = self.desc.link(link_name)
        if mass <= 0.0:
            raise ModelError(f"{link_name}: non-positive mass {mass}")
        if link.inertial is None:
            link.inertial = Inertial(mass, com.copy(), I_c.copy())
            return
        m0, c0, I0 = link.inertial.mass, link.inertial.com, link.inertial.inertia
        m = m0 + mass
        c = (m0 * c0 + mass * com) / m

        def shift(mk: float, ck: np.ndarray) -> np.ndarray:
            d = ck - c
            return mk * (d @ d * np.eye(3) - np.outer(d, d))

        link.inertial = Inertial(m, c, I0 + shift(m0, c0) + I_c + shift(mass, com))
