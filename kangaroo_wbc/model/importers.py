"""Importers: models written for other closed-chain conventions.

* Extended URDF (example-parallel-robots convention): the closure YAML may mark revolute joints
  of the URDF as standing for spherical or universal joints (``joint_name`` / ``joint_type``
  with ``SPHERICAL``, ``UJOINT_XY`` …) or as welded (``FIXED``); :func:`replace_joints` rebuilds
  the pinocchio model with those joints substituted, :func:`freeze_joints` welds the ``FIXED`` ones
  at their neutral value (the format's own loader does the same).
* URDF ``<mimic>`` joints become couplings of the closed-chain model
  (:mod:`kangaroo_wbc.model.couplings`), never independent joints.
* MJCF: read as MuJoCo reads it (:mod:`kangaroo_wbc.model.mjcf`).

:func:`load_model` reads any of them, the format told by the file's root element; every file is
checked before a dependency's parser reads it (:mod:`kangaroo_wbc.model.sources`).
:func:`load_description` applies the user's choices (reference pose, actuated and held joints).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ConfigError, ModelError, suggest
from kangaroo_wbc.model.closures import ClosureFile, load_closure_file
from kangaroo_wbc.model.configuration import configuration_from_pose
from kangaroo_wbc.model.couplings import mimic_couplings
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


#: Attributes (URDF, MJCF) and element texts (SDF) that place joints and frames: their numbers' rounding
#: limits how well a model's loops can close (:func:`coordinate_rounding`).
KINEMATIC_ATTRIBUTES = frozenset({"xyz", "rpy", "pos", "quat", "axisangle", "euler", "xyaxes", "zaxis", "axis",
                                  "anchor", "relpose", "ref"})
KINEMATIC_TEXTS = frozenset({"pose", "xyz"})
#: MJCF attributes in the compiler's angle unit (degrees unless ``<compiler angle="radian">``)
_MJCF_ANGLES = frozenset({"euler", "ref"})
#: A number written with fewer significant digits is taken as exact (a designer's dimension, 0.135).
ROUNDED_SIGNIFICANT_DIGITS = 5
_NUMBER = re.compile(r"[-+]?(\d*)(?:\.(\d*))?(?:[eE]([-+]?\d+))?")


def number_rounding(token: str) -> float:
    """Half a unit of the last written digit of a number with at least
    :data:`ROUNDED_SIGNIFICANT_DIGITS` significant digits (``"0.280170"`` → 5e-7), else 0."""
    m = _NUMBER.fullmatch(token)
    if m is None or not (m.group(1) or m.group(2)):
        return 0.0
    whole, frac, exp = m.group(1) or "", m.group(2) or "", int(m.group(3) or 0)
    if len((whole + frac).lstrip("0")) < ROUNDED_SIGNIFICANT_DIGITS:
        return 0.0
    return 0.5 * 10.0 ** (exp - len(frac))


def coordinate_rounding(root: ET.Element) -> float:
    """The rounding level of a model file's kinematic numbers [m or rad]: the coarsest
    :func:`number_rounding` among joint and frame placements, axes and angles (MJCF angles in
    degrees converted); 0 when every such number is short or written to machine precision."""
    degrees = root.tag == "mujoco" and all(c.get("angle", "degree") != "radian" for c in root.iter("compiler"))
    level = 0.0
    for el in root.iter():
        for key, value in el.attrib.items():
            if key in KINEMATIC_ATTRIBUTES:
                scale = np.pi / 180.0 if degrees and key in _MJCF_ANGLES else 1.0
                level = max([level] + [scale * number_rounding(t) for t in value.split()])
        if el.tag in KINEMATIC_TEXTS and el.text and not list(el):
            level = max([level] + [number_rounding(t) for t in el.text.split()])
    return level


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


@dataclass
class LoadedModel:
    """A model file read by :func:`load_model`: the pinocchio tree, its closure file (closures,
    couplings, actuated joints), the pose the file's loops are meant to close at (None: pinocchio's
    neutral one) and what was read but not modelled."""

    model: pin.Model
    closure_file: ClosureFile
    q0: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)
    #: the MJCF reading (MuJoCo's compiled model, q <-> qpos), for MJCF files
    mjcf: Any = None
    #: the rounding level of the file's kinematic numbers [m or rad] (:func:`coordinate_rounding`)
    rounding: float = 0.0


def load_model(path: str | Path, closures_path: str | Path | None, floating_base: bool = False) -> LoadedModel:
    """Read a model file, its format told by its root element (:func:`model_format`).

    * URDF: the spanning tree and its closure file (native or extended-URDF YAML); without a closure
      file, a tree without loops whose joints are all actuated. ``<mimic>`` joints become couplings
      (:func:`~kangaroo_wbc.model.couplings.mimic_couplings`): a follower cannot be listed as actuated.
    * MJCF: read as MuJoCo reads it (:mod:`kangaroo_wbc.model.mjcf`); no closure file.
    * SDF: loop joints become closures (:mod:`kangaroo_wbc.model.sdf`); a closure file, if given, adds
      loops and couplings and names the actuated and held joints.

    Raises:
        ModelError / ConfigError: naming the file and what is wrong.
    """
    kind = model_format(path)
    if kind == "mjcf":
        from kangaroo_wbc.model.mjcf import load_mjcf

        if closures_path is not None:
            raise ModelError(f"{closures_path}: a closure file is not read with an MJCF model: its "
                             f"equality constraints are the closures and couplings ({path})")
        mm = load_mjcf(path, floating_base=floating_base)
        return LoadedModel(mm.model, mm.closure_file, mm.q0, list(mm.warnings), mm,
                           coordinate_rounding(check_xml(path, "MJCF", "mujoco")))
    if kind == "sdf":
        from kangaroo_wbc.model.sdf import load_sdf

        root = check_xml(path, "SDF", "sdf")
        sm = load_sdf(path, root, floating_base)
        cf = sm.closure_file
        if closures_path is not None:  # the closure file adds loops, couplings and names the roles
            extra = load_closure_file(closures_path)
            cf = replace(extra, closures=list(cf.closures) + list(extra.closures), lock_idle_joints=True,
                         infer_actuated=False)
        return LoadedModel(sm.model, cf, None, list(sm.warnings), rounding=coordinate_rounding(root))
    root = check_xml(path, "URDF", "robot")
    try:
        mimic = mimic_couplings(root)
    except ConfigError as exc:
        raise ModelError(f"{path}: {exc}") from None
    if closures_path is None:
        followers = {c.name for c in mimic}
        movable = [str(j.get("name")) for j in root.iter("joint")
                   if j.get("type") not in ("fixed", "floating", "planar") and str(j.get("name")) not in followers]
        closure_file = ClosureFile([], movable, source=str(path), couplings=mimic,
                                   actuated_why={j: "no closure file: every joint that mimics no other is actuated"
                                                 for j in movable})
    else:
        closure_file = load_closure_file(closures_path)
        actuated_followers = [c.name for c in mimic if c.name in closure_file.actuated_joints]
        if actuated_followers:
            raise ModelError(f"{closure_file.source}: actuated_joints: {actuated_followers} mimic other joints in "
                             f"{path} (<mimic>): a follower is moved by its coupling, list its leader instead")
        closure_file = replace(closure_file, couplings=list(closure_file.couplings) + mimic)
    model = spanning_tree(path, joint_replacements(closure_file), closure_file.source, floating_base)
    return LoadedModel(model, closure_file, rounding=coordinate_rounding(root))


def load_description(path: str | Path, closures_path: str | Path | None, floating_base: bool = False,
                     reference: str | Path | dict | None = None, actuated: Sequence[str] | None = None,
                     held: Sequence[str] = ()) -> LoadedModel:
    """:func:`load_model` with the user's choices applied: what
    :meth:`~kangaroo_wbc.model.closed_loop_model.ClosedLoopModel.from_files` assembles.

    ``reference``: a pose (joint name -> value, or a YAML/JSON file of it, see
    :func:`~kangaroo_wbc.model.configuration.configuration_from_pose`) that replaces ``q0`` on the
    joints it names (the others keep the file's reference). ``actuated``: the actuated joints,
    instead of the file's (``--actuated``); ``held``: joints held at their reference value besides
    the file's ``held_joints`` (``--hold``: springs, locks).

    Raises:
        ModelError: the file does not exist; and as :func:`load_model` and
            :func:`~kangaroo_wbc.model.configuration.configuration_from_pose`.
    """
    path = Path(path)
    if not path.exists():
        raise ModelError(f"{path}: URDF file not found")
    loaded = load_model(path, closures_path, floating_base)
    cf = loaded.closure_file
    if actuated is not None:
        cf = replace(cf, actuated_joints=list(actuated), actuated_why={n: "named by --actuated" for n in actuated},
                     infer_actuated=False)
    if held:
        cf = replace(cf, held_joints=list(dict.fromkeys([*cf.held_joints, *held])),
                     held_why={**cf.held_why, **{n: "named by --hold" for n in held}})
    loaded.closure_file = cf
    if reference is not None:
        loaded.q0 = configuration_from_pose(loaded.model, reference, loaded.q0)
    return loaded
