"""Write a :class:`~kangaroo_wbc.robots.kangaroo.description.Description` as URDF text.

Numbers are printed with a fixed number of decimals so that regeneration is byte-for-byte stable
(the drift test in ``test/robots`` relies on it).
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

import numpy as np

from kangaroo_wbc.robots.kangaroo.description import Description, Shape, rpy_from_matrix

#: Decimals of lengths/angles ([m], [rad]) and of masses/inertias in the generated files.
DECIMALS = 9


def fmt(x: float, decimals: int = DECIMALS) -> str:
    """Shortest fixed-point text of ``x`` rounded to ``decimals`` (no ``-0``)."""
    s = f"{round(float(x), decimals):.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def vec(v: np.ndarray, decimals: int = DECIMALS) -> str:
    return " ".join(fmt(x, decimals) for x in v)


def origin(xyz: np.ndarray, R: np.ndarray) -> str:
    return f'<origin xyz="{vec(xyz)}" rpy="{vec(rpy_from_matrix(R))}"/>'


def xml_start(header: str) -> list[str]:
    """The XML declaration and ``header`` as a comment, the first lines of a generated file."""
    out = ['<?xml version="1.0"?>']
    if header:
        out += ["<!--", *(f"  {line}".rstrip() for line in header.strip().splitlines()), "-->"]
    return out


def _geometry(shape: Shape) -> str:
    if shape.kind == "box":
        return f'<geometry><box size="{vec(np.array(shape.size))}"/></geometry>'
    return f'<geometry><cylinder radius="{fmt(shape.size[0])}" length="{fmt(shape.size[1])}"/></geometry>'


def write_urdf(desc: Description, header: str = "") -> str:
    """URDF text of the spanning tree of ``desc``."""
    out = xml_start(header)
    out.append(f"<robot name={quoteattr(desc.name)}>")
    for link in desc.links:
        if link.inertial is None and not link.visuals:
            out.append(f"  <link name={quoteattr(link.name)}/>")
            continue
        out.append(f"  <link name={quoteattr(link.name)}>")
        if link.inertial is not None:
            I = link.inertial.inertia
            out.append("    <inertial>")
            out.append(f"      {origin(link.inertial.com, np.eye(3))}")
            out.append(f'      <mass value="{fmt(link.inertial.mass)}"/>')
            out.append(f'      <inertia ixx="{fmt(I[0, 0], 10)}" ixy="{fmt(I[0, 1], 10)}" ixz="{fmt(I[0, 2], 10)}" '
                       f'iyy="{fmt(I[1, 1], 10)}" iyz="{fmt(I[1, 2], 10)}" izz="{fmt(I[2, 2], 10)}"/>')
            out.append("    </inertial>")
        for shape in link.visuals:
            out.append(f"    <visual>{origin(shape.xyz, shape.R)}{_geometry(shape)}</visual>")
        for shape in link.collisions:
            out.append(f"    <collision>{origin(shape.xyz, shape.R)}{_geometry(shape)}</collision>")
        out.append("  </link>")
    for j in desc.joints:
        out.append(f"  <joint name={quoteattr(j.name)} type={quoteattr(j.kind)}>")
        out.append(f"    <parent link={quoteattr(j.parent)}/>")
        out.append(f"    <child link={quoteattr(j.child)}/>")
        out.append(f"    {origin(j.xyz, j.R)}")
        if j.kind != "fixed":
            out.append(f'    <axis xyz="{vec(j.axis)}"/>')
            out.append(f'    <limit lower="{fmt(j.lower)}" upper="{fmt(j.upper)}" effort="{fmt(j.effort)}" '
                       f'velocity="{fmt(j.velocity)}"/>')
        out.append("  </joint>")
    out.append("</robot>")
    return "\n".join(out) + "\n"
