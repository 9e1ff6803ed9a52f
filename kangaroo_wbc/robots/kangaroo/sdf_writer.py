"""Write a description as SDF 1.7 with the loops closed (for Gazebo Classic).

SDF allows a link to be the child of several joints, so every cut loop becomes a real joint: a
``revolute`` joint for the planar loops and the hip yaw, a ``universal`` joint (the two free
rotations of ``F_a``) for the rod ends of the hip actuators and of the lower ankle rods. Link poses
are given in the model frame at the zero configuration (which is closed); joint poses in their child
link; axes in the joint frame. Massless frame links (cut frames, soles, corners, IMU) become
``<frame>`` elements attached to their rigid body.
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

import numpy as np

from kangaroo_wbc.robots.kangaroo.description import Description, Joint, Shape, rpy_from_matrix
from kangaroo_wbc.robots.kangaroo.urdf_writer import fmt, vec, xml_start


def _pose(xyz: np.ndarray, R: np.ndarray, relative_to: str | None = None) -> str:
    attr = f" relative_to={quoteattr(relative_to)}" if relative_to else ""
    return f"<pose{attr}>{vec(xyz)} {vec(rpy_from_matrix(R))}</pose>"


def _geometry(shape: Shape) -> str:
    if shape.kind == "box":
        return f"<geometry><box><size>{vec(np.array(shape.size))}</size></box></geometry>"
    return (f"<geometry><cylinder><radius>{fmt(shape.size[0])}</radius><length>{fmt(shape.size[1])}</length>"
            f"</cylinder></geometry>")


def _limit(j: Joint) -> str:
    return (f"<limit><lower>{fmt(j.lower)}</lower><upper>{fmt(j.upper)}</upper>"
            f"<effort>{fmt(j.effort)}</effort><velocity>{fmt(j.velocity)}</velocity></limit>")


def write_sdf(desc: Description, header: str = "") -> str:
    """SDF 1.7 text of ``desc`` with its closures as joints."""
    parent_joint = {j.child: j for j in desc.joints}
    frame_links = {link.name for link in desc.links if link.inertial is None and link.name != desc.links[0].name}

    def body_of(name: str) -> str:
        """The massive link a (chain of) frame link(s) is rigidly attached to."""
        while name in frame_links:
            name = parent_joint[name].parent
        return name

    out = xml_start(header)
    out.append('<sdf version="1.7">')
    out.append(f"  <model name={quoteattr(desc.name)}>")
    for link in desc.links:
        if link.name in frame_links:
            continue
        p, R = desc.world_poses[link.name]
        out.append(f"    <link name={quoteattr(link.name)}>")
        out.append(f"      {_pose(p, R)}")
        if link.inertial is not None:
            I = link.inertial.inertia
            out.append(f"      <inertial>{_pose(link.inertial.com, np.eye(3))}<mass>{fmt(link.inertial.mass)}</mass>"
                       f"<inertia><ixx>{fmt(I[0, 0], 10)}</ixx><ixy>{fmt(I[0, 1], 10)}</ixy>"
                       f"<ixz>{fmt(I[0, 2], 10)}</ixz><iyy>{fmt(I[1, 1], 10)}</iyy><iyz>{fmt(I[1, 2], 10)}</iyz>"
                       f"<izz>{fmt(I[2, 2], 10)}</izz></inertia></inertial>")
        for k, shape in enumerate(link.visuals):
            out.append(f'      <visual name="visual_{k}">{_pose(shape.xyz, shape.R)}{_geometry(shape)}</visual>')
        for k, shape in enumerate(link.collisions):
            out.append(f'      <collision name="collision_{k}">{_pose(shape.xyz, shape.R)}{_geometry(shape)}'
                       f"</collision>")
        out.append("    </link>")
    for j in desc.joints:
        if j.child in frame_links:
            continue
        out.append(f"    <joint name={quoteattr(j.name)} type={quoteattr(j.kind)}>")
        out.append(f"      <parent>{j.parent}</parent><child>{j.child}</child>")
        out.append(f"      {_pose(np.zeros(3), np.eye(3))}")
        if j.kind != "fixed":
            out.append(f"      <axis><xyz>{vec(j.axis)}</xyz>{_limit(j)}</axis>")
        out.append("    </joint>")
    out.append("    <!-- loop closures: the cut joints of the spanning tree -->")
    for c in desc.closures:
        parent, child = body_of(c.frame_a), body_of(c.frame_u)
        pa, Ra = desc.world_poses[c.frame_a]
        pc, Rc = desc.world_poses[child]
        out.append(f"    <joint name={quoteattr(c.name)} type={quoteattr(c.cut_kind)}>")
        out.append(f"      <parent>{parent}</parent><child>{child}</child>")
        out.append(f"      {_pose(Rc.T @ (pa - pc), Rc.T @ Ra)}")
        for tag, axis in zip(("axis", "axis2"), c.cut_axes):
            out.append(f"      <{tag}><xyz>{vec(np.array(axis, float))}</xyz></{tag}>")
        out.append("    </joint>")
    for name in (link.name for link in desc.links if link.name in frame_links):
        body = body_of(name)
        p, R = desc.world_poses[name]
        pb, Rb = desc.world_poses[body]
        out.append(f"    <frame name={quoteattr(name)} attached_to={quoteattr(body)}>"
                   f"{_pose(Rb.T @ (p - pb), Rb.T @ R, relative_to=body)}</frame>")
    out.append("  </model>")
    out.append("</sdf>")
    return "\n".join(out) + "\n"
