"""Small closed mechanisms used as test data for the closed-linkage core.

* ``rrpr``: the paper's 1-DOF RRPR hip-yaw loop (Fig. 2): a planar loop with one prismatic
  actuator, cut at the revolute joining the slider tip and the rocker; rows ``[x, y]``.
* ``four_bar``: planar four-bar, revolute crank actuated; rows ``[x, y]``.
* ``u2ups``: a 2-DOF spatial parallel mechanism in the spirit of the hip U-2RRPU: an output
  platform on a universal joint, driven by two legs (base universal joint + prismatic actuator),
  each cut at a spherical joint on the platform; rows ``[x, y, z]`` per leg (6 passive, 6 rows).

Every generator writes ``<name>.urdf`` and ``<name>_closures.yaml`` into a folder and returns the
two paths. Each mechanism is closed at its neutral configuration.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml


def _inertial(mass: float, size: tuple[float, float, float], xyz=(0.0, 0.0, 0.0)) -> str:
    a, b, c = size
    ixx = mass * (b * b + c * c) / 12
    iyy = mass * (a * a + c * c) / 12
    izz = mass * (a * a + b * b) / 12
    return (f'<inertial><origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}"/><mass value="{mass}"/>'
            f'<inertia ixx="{ixx}" ixy="0" ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial>')


def _link(name: str, mass: float = 0.0, size=(0.1, 0.02, 0.02), xyz=(0.0, 0.0, 0.0)) -> str:
    body = _inertial(mass, size, xyz) if mass > 0 else ""
    return f'<link name="{name}">{body}</link>'


def _joint(name, kind, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=(0, 0, 1), limits=None) -> str:
    lim = ""
    if kind in ("revolute", "prismatic"):
        lo, hi = limits if limits else (-math.pi, math.pi)
        lim = f'<limit lower="{lo}" upper="{hi}" effort="1000" velocity="10"/>'
    ax = f'<axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>' if kind != "fixed" else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>{ax}{lim}</joint>')


def _write(folder: Path, name: str, parts: list[str], closures: dict) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    urdf = folder / f"{name}.urdf"
    urdf.write_text(f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "\n".join(parts) + "\n</robot>\n")
    yml = folder / f"{name}_closures.yaml"
    yml.write_text(yaml.safe_dump(closures, sort_keys=False))
    return urdf, yml


def rrpr(folder: Path) -> tuple[Path, Path]:
    """1-DOF RRPR: pivots A=(0,0), B=(0.3,0); slider A→tip of length 0.25+s; rocker B→tip 0.2."""
    L0, d0, l2 = 0.3, 0.25, 0.2
    x = (d0**2 - l2**2 + L0**2) / (2 * L0)
    y = math.sqrt(d0**2 - x**2)
    a1 = math.atan2(y, x)
    a2 = math.atan2(y, x - L0)
    parts = [
        _link("base", 2.0, (0.4, 0.1, 0.05)),
        _link("slider_housing", 0.5, (0.2, 0.03, 0.03), (0.1, 0, 0)),
        _link("slider_rod", 0.3, (0.2, 0.02, 0.02), (0.15, 0, 0)),
        _link("rocker", 0.4, (0.2, 0.02, 0.02), (0.1, 0, 0)),
        _link("cut_a"), _link("cut_u"),
        _joint("pivot_a", "revolute", "base", "slider_housing", rpy=(0, 0, a1)),
        _joint("slider", "prismatic", "slider_housing", "slider_rod", axis=(1, 0, 0), limits=(-0.04, 0.04)),
        _joint("cut_a_frame", "fixed", "slider_rod", "cut_a", xyz=(d0, 0, 0)),
        _joint("pivot_b", "revolute", "base", "rocker", xyz=(L0, 0, 0), rpy=(0, 0, a2)),
        _joint("cut_u_frame", "fixed", "rocker", "cut_u", xyz=(l2, 0, 0)),
    ]
    closures = {
        "format": "kangaroo_wbc/closures/1",
        "actuated_joints": ["slider"],
        "closures": [{"name": "rrpr_loop", "submechanism": "rrpr", "frame_a": "cut_a", "frame_u": "cut_u",
                      "directions": ["x", "y"]}],
    }
    return _write(folder, "rrpr", parts, closures)


def four_bar(folder: Path) -> tuple[Path, Path]:
    """Planar four-bar: ground 0.4, crank 0.15 (actuated), coupler 0.4, rocker 0.3."""
    g, c, k, r = 0.4, 0.15, 0.4, 0.3
    th = math.radians(70.0)
    P = (c * math.cos(th), c * math.sin(th))
    # rocker tip Q: |Q - P| = k, |Q - (g, 0)| = r
    dx, dy = g - P[0], -P[1]
    dist = math.hypot(dx, dy)
    a = (k**2 - r**2 + dist**2) / (2 * dist)
    h = math.sqrt(k**2 - a**2)
    Q = (P[0] + a * dx / dist - h * dy / dist, P[1] + a * dy / dist + h * dx / dist)
    coupler_angle = math.atan2(Q[1] - P[1], Q[0] - P[0]) - th
    rocker_angle = math.atan2(Q[1], Q[0] - g)
    parts = [
        _link("ground", 3.0, (0.5, 0.1, 0.05)),
        _link("crank", 0.3, (c, 0.02, 0.02), (c / 2, 0, 0)),
        _link("coupler", 0.6, (k, 0.02, 0.02), (k / 2, 0, 0)),
        _link("rocker", 0.5, (r, 0.02, 0.02), (r / 2, 0, 0)),
        _link("cut_a"), _link("cut_u"),
        _joint("crank_joint", "revolute", "ground", "crank", rpy=(0, 0, th)),
        _joint("coupler_joint", "revolute", "crank", "coupler", xyz=(c, 0, 0), rpy=(0, 0, coupler_angle)),
        _joint("cut_a_frame", "fixed", "coupler", "cut_a", xyz=(k, 0, 0)),
        _joint("rocker_joint", "revolute", "ground", "rocker", xyz=(g, 0, 0), rpy=(0, 0, rocker_angle)),
        _joint("cut_u_frame", "fixed", "rocker", "cut_u", xyz=(r, 0, 0)),
    ]
    closures = {
        "format": "kangaroo_wbc/closures/1",
        "actuated_joints": ["crank_joint"],
        "closures": [{"name": "four_bar_loop", "submechanism": "four_bar", "frame_a": "cut_a",
                      "frame_u": "cut_u", "directions": ["x", "y"]}],
    }
    return _write(folder, "four_bar", parts, closures)


def u2ups(folder: Path) -> tuple[Path, Path]:
    """2-DOF platform: universal joint at (0,0,-0.3); legs from (0.05, ±0.1, 0) straight down."""
    parts = [
        _link("base", 5.0, (0.3, 0.3, 0.1)),
        _link("platform_cross", 0.1, (0.02, 0.02, 0.02)),
        _link("platform", 1.5, (0.15, 0.25, 0.05), (0.0, 0.0, 0.02)),
        _joint("platform_pitch", "revolute", "base", "platform_cross", xyz=(0, 0, -0.3), axis=(0, 1, 0),
               limits=(-0.8, 0.8)),
        _joint("platform_roll", "revolute", "platform_cross", "platform", axis=(1, 0, 0), limits=(-0.8, 0.8)),
        _link("sole"),
        _joint("sole_frame", "fixed", "platform", "sole", xyz=(0, 0, -0.05)),
    ]
    actuated, closures = [], []
    for side, y in (("left", 0.1), ("right", -0.1)):
        parts += [
            _link(f"{side}_cross", 0.05, (0.02, 0.02, 0.02)),
            _link(f"{side}_cylinder", 0.4, (0.03, 0.03, 0.2), (0, 0, -0.1)),
            _link(f"{side}_rod", 0.2, (0.02, 0.02, 0.2), (0, 0, -0.15)),
            _link(f"{side}_tip"), _link(f"{side}_anchor"),
            _joint(f"{side}_base_x", "revolute", "base", f"{side}_cross", xyz=(0.05, y, 0), axis=(1, 0, 0)),
            _joint(f"{side}_base_y", "revolute", f"{side}_cross", f"{side}_cylinder", axis=(0, 1, 0)),
            _joint(f"{side}_actuator", "prismatic", f"{side}_cylinder", f"{side}_rod", axis=(0, 0, -1),
                   limits=(-0.05, 0.05)),
            _joint(f"{side}_tip_frame", "fixed", f"{side}_rod", f"{side}_tip", xyz=(0, 0, -0.25)),
            _joint(f"{side}_anchor_frame", "fixed", "platform", f"{side}_anchor", xyz=(0.05, y, 0.05)),
        ]
        actuated.append(f"{side}_actuator")
        closures.append({"name": f"{side}_leg_loop", "submechanism": "u2ups", "frame_a": f"{side}_tip",
                         "frame_u": f"{side}_anchor", "directions": ["x", "y", "z"]})
    doc = {"format": "kangaroo_wbc/closures/1", "actuated_joints": actuated, "closures": closures}
    return _write(folder, "u2ups", parts, doc)


ALL = {"rrpr": rrpr, "four_bar": four_bar, "u2ups": u2ups}
