"""Small linkages for the cases third-party models bring (test data, written for the tests).

* ``rssr``: a spatial four-bar whose coupler is a rod between two ball joints (crank about z,
  rocker about x): the rod spins freely about its own axis. Extended-URDF YAML (the ball joint on
  the crank is a revolute joint marked ``SPHERICAL``, the cut a ``3d`` closure).
* ``rod_between_tree_balls``: the same with both of the rod's ball joints in the tree and a weld
  cut: the spin is a combined motion of the two ball joints.
* ``welded_four_bar``: a planar four-bar whose coupler is cut in two halves welded together
  (``type: FIXED``), with a spare revolute joint on the coupler marked ``joint_type: FIXED``.
* ``unassembled_four_bar``: a planar four-bar that does not close with its crank at 0 (the crank
  points away from the rocker), only with the crank moved. Native closure file.
* ``mimic_pair``: two revolute joints coupled by a URDF ``<mimic>``.

Each generator writes ``<name>.urdf`` and ``<name>_closures.yaml`` into a folder and returns them.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from test.model.mechanisms import _joint, _link, _write

#: Axial inertia of the rssr rod [kg·m²]: holding its spin instead of letting it spin changes the
#: dynamics by terms proportional to it.
ROD_AXIAL_INERTIA = 1e-8


def _rod_link(name: str, mass: float, length: float, axial_inertia: float = ROD_AXIAL_INERTIA) -> str:
    """A slender rod along x from its joint, centre of mass on its axis."""
    it = mass * length**2 / 12
    return (f'<link name="{name}"><inertial><origin xyz="{length / 2} 0 0"/><mass value="{mass}"/>'
            f'<inertia ixx="{axial_inertia}" ixy="0" ixz="0" iyy="{it}" iyz="0" izz="{it}"/>'
            f'</inertial></link>')


def rssr(folder: Path) -> tuple[Path, Path]:
    """Crank (actuated, about z at the origin, 0.1 m), rod 0.35 m, rocker (about x at G, 0.15 m)."""
    c, r = 0.1, 0.15
    G = np.array([0.25, 0.0, 0.2])
    phi0 = math.radians(-60.0)
    Q = G + r * np.array([0.0, math.cos(phi0), math.sin(phi0)])
    P = np.array([c, 0.0, 0.0])
    u = (Q - P) / np.linalg.norm(Q - P)
    L = float(np.linalg.norm(Q - P))
    yaw, pitch = math.atan2(u[1], u[0]), -math.asin(u[2])
    parts = [
        _link("ground", 2.0, (0.4, 0.2, 0.05)),
        _link("crank", 0.3, (c, 0.02, 0.02), (c / 2, 0, 0)),
        _rod_link("rod", 0.2, L),
        _link("rocker", 0.4, (0.02, r, 0.02), tuple((Q - G) / 2)),
        _link("rod_tip"), _link("rocker_tip"),
        _joint("crank_joint", "revolute", "ground", "crank", axis=(0, 0, 1)),
        _joint("rod_ball", "revolute", "crank", "rod", xyz=tuple(P), rpy=(0, pitch, yaw)),
        _joint("rod_tip_frame", "fixed", "rod", "rod_tip", xyz=(L, 0, 0)),
        _joint("rocker_joint", "revolute", "ground", "rocker", xyz=tuple(G), axis=(1, 0, 0)),
        _joint("rocker_tip_frame", "fixed", "rocker", "rocker_tip", xyz=tuple(Q - G)),
    ]
    doc = {"closed_loop": [["rod_tip", "rocker_tip"]], "type": ["3d"], "name_mot": ["crank_joint"],
           "joint_name": ["rod_ball"], "joint_type": ["SPHERICAL"]}
    return _write(folder, "rssr", parts, doc)


def rod_between_tree_balls(folder: Path, axial_inertia: float = ROD_AXIAL_INERTIA,
                           name: str = "rod_between_tree_balls") -> tuple[Path, Path]:
    """The rssr linkage with both of the rod's ball joints in the tree: the rod's far end carries a
    second ball joint and an end piece welded to the rocker tip (``6d`` cut). The rod's spin is then
    a combined motion of the two ball joints (one turns by +phi about the rod axis, the other by
    -phi)."""
    c, r = 0.1, 0.15
    G = np.array([0.25, 0.0, 0.2])
    phi0 = math.radians(-60.0)
    Q = G + r * np.array([0.0, math.cos(phi0), math.sin(phi0)])
    P = np.array([c, 0.0, 0.0])
    u = (Q - P) / np.linalg.norm(Q - P)
    L = float(np.linalg.norm(Q - P))
    yaw, pitch = math.atan2(u[1], u[0]), -math.asin(u[2])
    parts = [
        _link("ground", 2.0, (0.4, 0.2, 0.05)),
        _link("crank", 0.3, (c, 0.02, 0.02), (c / 2, 0, 0)),
        _rod_link("rod", 0.2, L, axial_inertia),
        _link("end_piece", 0.05, (0.02, 0.02, 0.02)),
        _link("rocker", 0.4, (0.02, r, 0.02), tuple((Q - G) / 2)),
        _link("rocker_tip"),
        _joint("crank_joint", "revolute", "ground", "crank", axis=(0, 0, 1)),
        _joint("rod_ball", "revolute", "crank", "rod", xyz=tuple(P), rpy=(0, pitch, yaw)),
        _joint("end_ball", "revolute", "rod", "end_piece", xyz=(L, 0, 0)),
        _joint("rocker_joint", "revolute", "ground", "rocker", xyz=tuple(G), axis=(1, 0, 0)),
        _joint("rocker_tip_frame", "fixed", "rocker", "rocker_tip", xyz=tuple(Q - G), rpy=(0, pitch, yaw)),
    ]
    doc = {"closed_loop": [["end_piece", "rocker_tip"]], "type": ["6d"], "name_mot": ["crank_joint"],
           "joint_name": ["rod_ball", "end_ball"], "joint_type": ["SPHERICAL", "SPHERICAL"]}
    return _write(folder, name, parts, doc)


def _planar_four_bar_points(g: float, c: float, k: float, r: float, th: float):
    P = (c * math.cos(th), c * math.sin(th))
    dx, dy = g - P[0], -P[1]
    dist = math.hypot(dx, dy)
    a = (k**2 - r**2 + dist**2) / (2 * dist)
    h = math.sqrt(k**2 - a**2)
    Q = (P[0] + a * dx / dist - h * dy / dist, P[1] + a * dy / dist + h * dx / dist)
    return P, Q


def welded_four_bar(folder: Path) -> tuple[Path, Path]:
    """Four-bar (ground 0.4, crank 0.15, coupler 0.4 in two 0.2 halves, rocker 0.3), weld cut."""
    g, c, k, r = 0.4, 0.15, 0.4, 0.3
    th = math.radians(70.0)
    P, Q = _planar_four_bar_points(g, c, k, r, th)
    coupler = math.atan2(Q[1] - P[1], Q[0] - P[0])
    rocker = math.atan2(Q[1], Q[0] - g)
    parts = [
        _link("ground", 3.0, (0.5, 0.1, 0.05)),
        _link("crank", 0.3, (c, 0.02, 0.02), (c / 2, 0, 0)),
        _link("half_a", 0.3, (k / 2, 0.02, 0.02), (k / 4, 0, 0)),
        _link("spare", 0.1, (0.02, 0.02, 0.02)),
        _link("rocker", 0.5, (r, 0.02, 0.02), (r / 2, 0, 0)),
        _link("half_u", 0.3, (k / 2, 0.02, 0.02), (k / 4, 0, 0)),
        _link("weld_a"), _link("weld_u"),
        _joint("crank_joint", "revolute", "ground", "crank", rpy=(0, 0, th)),
        _joint("coupler_joint", "revolute", "crank", "half_a", xyz=(c, 0, 0), rpy=(0, 0, coupler - th)),
        _joint("spare_joint", "revolute", "half_a", "spare", xyz=(0.05, 0, 0), axis=(1, 0, 0)),
        _joint("weld_a_frame", "fixed", "half_a", "weld_a", xyz=(k / 2, 0, 0)),
        _joint("rocker_joint", "revolute", "ground", "rocker", xyz=(g, 0, 0), rpy=(0, 0, rocker)),
        # the second half hangs on the rocker tip, pointing back along the coupler
        _joint("half_u_joint", "revolute", "rocker", "half_u", xyz=(r, 0, 0),
               rpy=(0, 0, coupler + math.pi - rocker)),
        _joint("weld_u_frame", "fixed", "half_u", "weld_u", xyz=(k / 2, 0, 0), rpy=(0, 0, math.pi)),
    ]
    doc = {"closed_loop": [["weld_a", "weld_u"]], "type": ["FIXED"], "name_mot": ["crank_joint"],
           "joint_name": ["spare_joint"], "joint_type": ["FIXED"]}
    return _write(folder, "welded_four_bar", parts, doc)


def unassembled_four_bar(folder: Path, ground: float = 0.4) -> tuple[Path, Path]:
    """Four-bar (ground ``ground``, crank 0.15, coupler 0.25, rocker 0.2) whose crank points away
    from the rocker at 0: the pivots are then ``ground`` + 0.15 apart, more than coupler + rocker,
    so the loop closes only with the crank turned (assembly). With ``ground`` > 0.6 it closes
    nowhere (``unassemblable_four_bar``)."""
    g, c, k, r = ground, 0.15, 0.25, 0.2
    parts = [
        _link("ground", 3.0, (0.5, 0.1, 0.05)),
        _link("crank", 0.3, (c, 0.02, 0.02), (c / 2, 0, 0)),
        _link("coupler", 0.4, (k, 0.02, 0.02), (k / 2, 0, 0)),
        _link("rocker", 0.3, (r, 0.02, 0.02), (r / 2, 0, 0)),
        _link("cut_a"), _link("cut_u"),
        _joint("crank_joint", "revolute", "ground", "crank", rpy=(0, 0, math.pi), limits=(-4.0, 4.0)),
        _joint("coupler_joint", "revolute", "crank", "coupler", xyz=(c, 0, 0), rpy=(0, 0, math.pi)),
        _joint("cut_a_frame", "fixed", "coupler", "cut_a", xyz=(k, 0, 0)),
        _joint("rocker_joint", "revolute", "ground", "rocker", xyz=(g, 0, 0), rpy=(0, 0, math.pi / 2)),
        _joint("cut_u_frame", "fixed", "rocker", "cut_u", xyz=(r, 0, 0)),
    ]
    name = "unassembled_four_bar" if ground <= 0.6 else "unassemblable_four_bar"
    doc = {"format": "kangaroo_wbc/closures/1", "actuated_joints": ["crank_joint"],
           "closures": [{"name": "loop", "submechanism": "four_bar", "frame_a": "cut_a", "frame_u": "cut_u",
                         "directions": ["x", "y"]}]}
    return _write(folder, name, parts, doc)


def mimic_pair(folder: Path) -> tuple[Path, Path]:
    """Two revolute joints, the second mimicking the first (gear ratio 2)."""
    parts = [
        _link("base", 1.0), _link("a", 0.2), _link("b", 0.2),
        _joint("leader", "revolute", "base", "a"),
        _joint("follower", "revolute", "a", "b", xyz=(0.1, 0, 0)).replace(
            "</joint>", '<mimic joint="leader" multiplier="2.0" offset="0.0"/></joint>'),
    ]
    doc = {"format": "kangaroo_wbc/closures/1", "actuated_joints": ["leader"], "closures": []}
    return _write(folder, "mimic_pair", parts, doc)
