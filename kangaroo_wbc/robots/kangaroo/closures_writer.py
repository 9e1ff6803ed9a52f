"""Write the loop-closure file (``kangaroo_wbc/closures/1``, see ``docs/closures_format.md``)."""

from __future__ import annotations

from kangaroo_wbc.model.closures import NATIVE_FORMAT
from kangaroo_wbc.robots.kangaroo.description import Description
from kangaroo_wbc.robots.kangaroo.params import ACTUATOR_DYNAMICS
from kangaroo_wbc.robots.kangaroo.urdf_writer import fmt


def _list(names: list[str], indent: str) -> list[str]:
    return [f"{indent}- {n}" for n in names]


def write_closures(desc: Description, header: str = "") -> str:
    """YAML text of the closures, actuated joints, encoders and actuator data of ``desc``.

    Besides the format's keys it writes ``absolute_actuators``, ``actuators`` (screw lead [m],
    efficiency, max axial force [N], stroke [m] per actuator, and the ball-screw dynamics of
    :mod:`kangaroo_wbc.model.ball_screw`) and ``submechanism_joints`` (the tree
    joints each sub-mechanism owns, i.e. the Table II counts; an ankle loop also passes through the
    knee joint, which the knee sub-mechanism owns).
    """
    out = [f"# {line}".rstrip() for line in header.strip().splitlines()] if header else []
    out.append(f"format: {NATIVE_FORMAT}")
    for key, names in (("actuated_joints", desc.joints_with_role("actuated")),
                       ("absolute_actuators", desc.absolute_actuators), ("absolute_encoders", desc.absolute_encoders)):
        out.append(f"{key}:")
        out += _list(names, "  ")
    out.append("actuators:")
    for name, a in desc.actuators.items():
        out.append(f"  {name}:")
        out += [f"    {key}: {fmt(a[key])}" for key in ("screw_lead_m", "screw_efficiency", "max_force_n",
                                                        "max_velocity_m_s")]
        out.append(f"    stroke_m: [{fmt(a['stroke_m'][0])}, {fmt(a['stroke_m'][1])}]")
        out += [f"    {key}: {fmt(a[key])}" for key in ACTUATOR_DYNAMICS if key in a]
    out.append("closures:")
    for c in desc.closures:
        out.append(f"  - name: {c.name}")
        out.append(f"    submechanism: {c.submechanism}")
        out.append(f"    frame_a: {c.frame_a}")
        out.append(f"    frame_u: {c.frame_u}")
        out.append(f"    directions: [{', '.join(c.directions)}]")
    out.append("submechanism_joints:")
    for sub, entry in desc.submechanism_joints.items():
        out.append(f"  {sub}:")
        out.append(f"    actuated: [{', '.join(entry['actuated'])}]")
        out.append("    passive:")
        out += _list(entry["passive"], "      ")
    return "\n".join(out) + "\n"
