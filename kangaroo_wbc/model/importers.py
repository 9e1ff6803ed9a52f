"""Importers: models written for other closed-chain conventions.

* Extended URDF (example-parallel-robots convention): the closure YAML may mark revolute joints
  of the URDF as standing for spherical or universal joints (``joint_name`` / ``joint_type``
  with ``SPHERICAL``, ``UJOINT_XY`` …) or as welded (``FIXED``); :func:`replace_joints` rebuilds
  the pinocchio model with those joints substituted, :func:`freeze_joints` welds the ``FIXED`` ones
  at their neutral value (the format's own loader does the same).
* URDF ``<mimic>`` joints: :func:`mimic_joints` lists them; the model refuses them with the joint
  named (their coupling is not a loop closure), never loads them as independent joints.
* MJCF: :func:`load_mjcf` reads a MuJoCo model with pinocchio's MJCF parser, which turns
  ``equality/connect`` into 3D loop constraints (and ``weld`` into 6D ones) expressed as
  :class:`~kangaroo_wbc.model.closures.ClosureSpec` on frames that it adds to the model.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ConfigError, ModelError, suggest
from kangaroo_wbc.model.closures import DIRECTIONS, ClosureFile, ClosureSpec
from kangaroo_wbc.model.sources import captured_output, parser_messages, read_text

#: ``joint_type`` of the extended-URDF YAML that welds a joint at its neutral value.
FIXED = "FIXED"

#: The ``joint_type`` values of the extended-URDF YAML: a ball joint (no axes), a universal joint
#: about the listed axes of the joint frame (outermost first), or ``FIXED`` (no joint).
REPLACEMENT_AXES: dict[str, tuple[int, ...] | None] = {
    "SPHERICAL": (), "UJOINT_XY": (0, 1), "UJOINT_YX": (1, 0), "UJOINT_XZ": (0, 2),
    "UJOINT_ZX": (2, 0), "UJOINT_YZ": (1, 2), "UJOINT_ZY": (2, 1), FIXED: None,
}


def replace_joints(model: pin.Model, replacements: dict[str, str], source: str = "<memory>") -> pin.Model:
    """Rebuild ``model`` with the named joints replaced by spherical/universal joints.

    Joint placements, inertias, frames and the limits of untouched joints are kept; joint ids do
    not change, so frame parents stay valid.
    """
    names = list(model.names)
    for n, kind in replacements.items():
        if n not in names:
            raise ConfigError(f"{source}: joint_name: unknown joint {n!r}." + suggest(n, names[1:]))
        if REPLACEMENT_AXES.get(kind.upper()) is None:
            raise ConfigError(f"{source}: joint_type: unsupported {kind!r} for joint {n!r}; valid: "
                              f"{sorted(REPLACEMENT_AXES)}")
    new = pin.Model()
    new.name = model.name
    new.gravity = model.gravity
    # the root link of a fixed-base model hangs on the universe joint: keep its mass
    new.appendBodyToJoint(0, model.inertias[0], pin.SE3.Identity())
    for j in range(1, model.njoints):
        jm = model.joints[j]
        name = names[j]
        if name in replacements:
            axes = REPLACEMENT_AXES[replacements[name].upper()]
            sub = pin.JointModelUniversal(*np.eye(3)[list(axes)]) if axes else pin.JointModelSpherical()
            jid = new.addJoint(int(model.parents[j]), sub, model.jointPlacements[j], name)
        else:
            sl_q = slice(jm.idx_q, jm.idx_q + jm.nq)
            sl_v = slice(jm.idx_v, jm.idx_v + jm.nv)
            jid = new.addJoint(int(model.parents[j]), jm, model.jointPlacements[j], name,
                               model.effortLimit[sl_v], model.velocityLimit[sl_v],
                               model.lowerPositionLimit[sl_q], model.upperPositionLimit[sl_q])
        new.appendBodyToJoint(jid, model.inertias[j], pin.SE3.Identity())
    for f in list(model.frames)[1:]:
        new.addFrame(pin.Frame(f.name, int(f.parentJoint), int(f.parentFrame), f.placement, f.type, f.inertia),
                     False)
    return new


def joint_replacements(closure_file: ClosureFile) -> dict[str, str]:
    """The ``joint_name``/``joint_type`` pairs of an extended-URDF closure file (``FIXED`` included)."""
    names = closure_file.extra.get("joint_name", []) or []
    types = closure_file.extra.get("joint_type", []) or []
    if len(names) != len(types):
        raise ConfigError(f"{closure_file.source}: joint_name/joint_type: {len(names)} names but "
                          f"{len(types)} types")
    return {str(n): str(t) for n, t in zip(names, types)}


def freeze_joints(model: pin.Model, names: list[str], source: str = "<memory>") -> pin.Model:
    """Weld the named joints at their neutral value (``joint_type: FIXED``).

    pinocchio's ``buildReducedModel``: the joint becomes a fixed frame of the same name, its
    body's inertia is merged into the parent (the total mass is unchanged).
    """
    valid = list(model.names)[1:]
    for n in names:
        if n not in valid:
            raise ConfigError(f"{source}: joint_name: unknown joint {n!r}." + suggest(n, valid))
    ids = [int(model.getJointId(n)) for n in names]
    return pin.buildReducedModel(model, ids, pin.neutral(model))


def spanning_tree(urdf_path: str | Path, replacements: dict[str, str], source: str,
                  floating_base: bool = False) -> pin.Model:
    """The pinocchio model of a URDF spanning tree (a free-flyer root if ``floating_base``) with the
    extended-URDF ``replacements`` (joint name -> ``joint_type``) applied: :func:`replace_joints`,
    then :func:`freeze_joints` for the ``FIXED`` ones (errors name ``source``)."""
    check_xml(urdf_path, "URDF", "robot")
    root = (pin.JointModelFreeFlyer(),) if floating_base else ()
    with captured_output() as out:
        try:
            model = pin.buildModelFromUrdf(str(urdf_path), *root)
        except (RuntimeError, ValueError) as exc:
            failure: Exception | None = exc
        else:
            failure = None
    if failure is not None:
        said = "; ".join(parser_messages(out.text))
        raise ModelError(f"{urdf_path}: pinocchio could not parse the URDF"
                         + (f": {said}" if said else f": {failure}")) from None
    substituted = {n: kind for n, kind in replacements.items() if kind.upper() != FIXED}
    if substituted:
        model = replace_joints(model, substituted, source)
    fixed = [n for n, kind in replacements.items() if kind.upper() == FIXED]
    if fixed:
        model = freeze_joints(model, fixed, source)
    return model


def check_xml(path: str | Path, what: str, root_tag: str | None) -> ET.Element:
    """The root element of an XML model file, checked before any dependency's parser reads it: UTF-8
    text (:func:`~kangaroo_wbc.model.sources.read_text`), well-formed, root element ``root_tag``
    (any if None).

    Raises:
        ModelError: naming the file and, for malformed XML, the line and column.
    """
    text = read_text(path, what)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ModelError(f"{path}: the {what} is not well-formed XML: {exc}") from None
    if root_tag is not None and root.tag != root_tag:
        raise ModelError(f"{path}: not a {what}: the root element is <{root.tag}>, expected <{root_tag}>")
    return root


#: Model formats by the root element of the file.
FORMATS = {"robot": "urdf", "mujoco": "mjcf", "sdf": "sdf"}


def model_format(path: str | Path) -> str:
    """``"urdf"``, ``"mjcf"`` or ``"sdf"``: the format of a model file, from its root element
    (``<robot>``, ``<mujoco>``, ``<sdf>``), whatever its name ends with.

    Raises:
        ModelError: not an XML model file of these formats (the file named).
    """
    root = check_xml(path, "model file", None)
    if root.tag not in FORMATS:
        raise ModelError(f"{path}: not a model file: the root element is <{root.tag}>; expected "
                         f"<robot> (URDF), <mujoco> (MJCF) or <sdf> (SDF)")
    return FORMATS[root.tag]


def mimic_joints(urdf_path: str | Path) -> dict[str, str]:
    """``{follower: leader}`` for the joints of a URDF that carry a ``<mimic joint=...>`` element."""
    try:
        root = ET.parse(str(urdf_path)).getroot()
    except (ET.ParseError, OSError):
        return {}  # pinocchio's parser reports the malformed file
    out = {}
    for joint in root.iter("joint"):
        mimic = joint.find("mimic")
        if mimic is not None:
            out[str(joint.get("name"))] = str(mimic.get("joint"))
    return out


def load_mjcf(mjcf_path: str | Path, floating_base: bool = False) -> tuple[pin.Model, ClosureFile]:
    """Read an MJCF file with pinocchio's parser; ``equality/connect`` → 3D closures.

    Pinocchio returns one rigid constraint model per equality; each becomes a closure between two
    frames added at the constraint anchors (``<name>_a`` on the first body, ``<name>_u`` on the
    second). The actuated joints are those driven by the MJCF ``actuator`` section.
    """
    path = Path(mjcf_path)
    if not path.is_file():
        raise ModelError(f"{path}: MJCF file not found")
    root = (pin.JointModelFreeFlyer(), "root_joint") if floating_base else ()
    try:
        model, constraints = pin.buildModelAndLegacyConstraintsFromMJCF(str(path), *root)
    except (RuntimeError, ValueError) as exc:
        raise ModelError(f"{path}: pinocchio could not parse the MJCF: {exc}") from exc
    closures = []
    for k, cm in enumerate(constraints):
        cname = cm.name or f"equality{k}"
        model.addFrame(pin.Frame(f"{cname}_a", int(cm.joint1_id), cm.joint1_placement, pin.FrameType.OP_FRAME))
        model.addFrame(pin.Frame(f"{cname}_u", int(cm.joint2_id), cm.joint2_placement, pin.FrameType.OP_FRAME))
        dirs = DIRECTIONS[:3] if cm.type == pin.ContactType.CONTACT_3D else DIRECTIONS
        closures.append(ClosureSpec(cname, cname, f"{cname}_a", f"{cname}_u", dirs))
    act = ET.parse(path).getroot().find("actuator")
    actuated = [] if act is None else [str(el.get("joint")) for el in act if el.get("joint")]
    return model, ClosureFile(closures=closures, actuated_joints=actuated, source=str(path), lock_idle_joints=True)
