"""Loop-closure specification: data classes and YAML loaders.

Two formats are read (see ``docs/closures_format.md``):

* the native ``kangaroo_wbc/closures/1`` format: per loop the frames ``F_a``/``F_u`` on each side of
  the cut and the constrained directions (eq. (2) of the Kangaroo paper) expressed in ``F_a``;
* the "extended URDF" YAML (``closed_loop``, ``type: 3d|6d``, ``name_mot``) used by the
  example-parallel-robots collection.

Validation against a pinocchio model (frame and joint names) happens in
:class:`kangaroo_wbc.model.ClosedLoopModel`; this module checks the file itself and names the file
and the key in every error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kangaroo_wbc.errors import ConfigError
from kangaroo_wbc.model.couplings import CouplingSpec, parse_couplings
from kangaroo_wbc.model.sources import read_text

#: Order of the six directions of a closure error / spatial vector (linear first, as pinocchio).
DIRECTIONS: tuple[str, ...] = ("x", "y", "z", "rx", "ry", "rz")
NATIVE_FORMAT = "kangaroo_wbc/closures/1"

#: Closure types of the extended-URDF YAML (``type``, case-insensitive) and the directions each
#: constrains: ``3d`` a point contact (ball joint), ``6d`` and its synonym ``fixed`` a weld. The
#: format's loader builds a 3D constraint for ``3d`` and a 6D one for every other value.
EXTENDED_URDF_TYPES: dict[str, tuple[str, ...]] = {
    "3d": DIRECTIONS[:3], "6d": DIRECTIONS, "fixed": DIRECTIONS, "weld": DIRECTIONS}


@dataclass(frozen=True)
class ClosureSpec:
    """One cut loop.

    Attributes:
        name: unique loop name.
        submechanism: name of the closed sub-mechanism the loop belongs to.
        frame_a: frame ``F_a`` on one side of the cut (errors are expressed in it).
        frame_u: frame ``F_u`` on the other side of the cut.
        directions: constrained directions, a subset of :data:`DIRECTIONS`, in canonical order.
    """

    name: str
    submechanism: str
    frame_a: str
    frame_u: str
    directions: tuple[str, ...]

    @property
    def direction_indices(self) -> tuple[int, ...]:
        """Indices of :attr:`directions` in the 6-vector ``[x, y, z, rx, ry, rz]``."""
        return tuple(DIRECTIONS.index(d) for d in self.directions)


@dataclass
class ClosureFile:
    """Contents of a closure specification file."""

    closures: list[ClosureSpec]
    actuated_joints: list[str]
    absolute_encoders: list[str] = field(default_factory=list)
    absolute_actuators: list[str] = field(default_factory=list)
    actuators: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str = "<memory>"
    extra: dict[str, Any] = field(default_factory=dict)
    #: Lock passive motions that no closure determines (idle half-joints of a cut). Only the
    #: extended-URDF convention needs it; the native format is strict and reports a non-square
    #: passive block instead.
    lock_idle_joints: bool = False
    #: Joint couplings (URDF mimic, MJCF joint/tendon equalities, the ``couplings`` key): constraint
    #: rows after the loops' (:mod:`kangaroo_wbc.model.couplings`).
    couplings: list[CouplingSpec] = field(default_factory=list)
    #: Why each actuated joint is actuated (the file's key, the actuator that drives it).
    actuated_why: dict[str, str] = field(default_factory=dict)
    #: Joints held at their reference value (springs taken as rigid, locks): neither actuated nor
    #: passive (the ``held_joints`` key, ``--hold``), and why.
    held_joints: list[str] = field(default_factory=list)
    held_why: dict[str, str] = field(default_factory=dict)
    #: Joints with a spring [N·m/rad or N/m] (MJCF ``stiffness``): held first when a motion must be.
    springs: dict[str, float] = field(default_factory=dict)
    #: The file names no actuator: the model chooses the actuated joints (MJCF without actuators).
    infer_actuated: bool = False


def _err(path: str, key: str, msg: str) -> ConfigError:
    return ConfigError(f"{path}: key '{key}': {msg}")


def _as_str_list(value: Any, path: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _err(path, key, f"expected a list of names, got {value!r}")
    return list(value)


def _parse_directions(value: Any, path: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise _err(path, key, f"expected a non-empty list drawn from {list(DIRECTIONS)}, got {value!r}")
    dirs = [str(v).lower() for v in value]
    unknown = [d for d in dirs if d not in DIRECTIONS]
    if unknown:
        raise _err(path, key, f"unknown direction(s) {unknown}; valid: {list(DIRECTIONS)}")
    if len(set(dirs)) != len(dirs):
        raise _err(path, key, f"duplicated direction in {dirs}")
    return tuple(d for d in DIRECTIONS if d in dirs)


def parse_native(doc: dict[str, Any], path: str) -> ClosureFile:
    """Parse a native ``kangaroo_wbc/closures/1`` document."""
    fmt = doc.get("format", NATIVE_FORMAT)
    if fmt != NATIVE_FORMAT:
        raise _err(path, "format", f"unsupported format {fmt!r}; expected {NATIVE_FORMAT!r}")
    if "actuated_joints" not in doc:
        raise _err(path, "actuated_joints", "missing (list the actuated joint names)")
    actuated = _as_str_list(doc["actuated_joints"], path, "actuated_joints")
    raw = doc.get("closures")
    if raw is None:
        raise _err(path, "closures", "missing (list of loops; use [] for a serial robot)")
    if not isinstance(raw, list):
        raise _err(path, "closures", f"expected a list, got {type(raw).__name__}")
    closures: list[ClosureSpec] = []
    names: set[str] = set()
    for i, item in enumerate(raw):
        key = f"closures[{i}]"
        if not isinstance(item, dict):
            raise _err(path, key, f"expected a mapping, got {item!r}")
        for req in ("name", "frame_a", "frame_u", "directions"):
            if req not in item:
                raise _err(path, f"{key}.{req}", "missing")
        name = str(item["name"])
        if name in names:
            raise _err(path, f"{key}.name", f"duplicated loop name {name!r}")
        names.add(name)
        directions = _parse_directions(item["directions"], path, f"{key}.directions")
        closures.append(ClosureSpec(name, str(item.get("submechanism", name)), str(item["frame_a"]),
                                    str(item["frame_u"]), directions))
    actuators = doc.get("actuators", {}) or {}
    if not isinstance(actuators, dict):
        raise _err(path, "actuators", "expected a mapping actuator name -> parameters")
    encoders = _as_str_list(doc.get("absolute_encoders") or [], path, "absolute_encoders")
    absolute_actuators = _as_str_list(doc.get("absolute_actuators") or [], path, "absolute_actuators")
    couplings = parse_couplings(doc.get("couplings"), path)
    held = _as_str_list(doc.get("held_joints") or [], path, "held_joints")
    known = {"format", "actuated_joints", "closures", "actuators", "absolute_encoders", "absolute_actuators",
             "couplings", "held_joints"}
    return ClosureFile(closures, actuated, absolute_encoders=encoders, absolute_actuators=absolute_actuators,
                       actuators=actuators, source=path, extra={k: v for k, v in doc.items() if k not in known},
                       couplings=couplings, actuated_why={j: f"{path}: actuated_joints" for j in actuated},
                       held_joints=held, held_why={j: f"{path}: held_joints" for j in held})


def parse_extended_urdf(doc: dict[str, Any], path: str) -> ClosureFile:
    """Parse the "extended URDF" YAML (``closed_loop``, ``type``, ``name_mot``).

    ``3d`` pairs constrain the three positions, ``6d`` and ``fixed`` (a weld) the full placement
    (:data:`EXTENDED_URDF_TYPES`; any case, as the format's own loader reads them). Redundant rows
    (e.g. a 6d closure on a planar loop) are removed later by the rank analysis of the model.
    Each loop is its own sub-mechanism (``loop<i>``).
    """
    pairs = doc.get("closed_loop")
    if not isinstance(pairs, list):
        raise _err(path, "closed_loop", f"expected a list of [frame_A, frame_B] pairs, got {pairs!r}")
    types = doc.get("type", ["6d"] * len(pairs))
    if not isinstance(types, list) or len(types) != len(pairs):
        raise _err(path, "type", f"expected {len(pairs)} entries (one per closed_loop pair), got {types!r}")
    if "name_mot" not in doc:
        raise _err(path, "name_mot", "missing (list of actuated joints)")
    closures = []
    for i, (pair, kind) in enumerate(zip(pairs, types)):
        if not (isinstance(pair, list) and len(pair) == 2):
            raise _err(path, f"closed_loop[{i}]", f"expected a pair of frame names, got {pair!r}")
        kind_l = str(kind).lower()
        if kind_l not in EXTENDED_URDF_TYPES:
            raise _err(path, f"type[{i}]", f"expected one of {sorted(EXTENDED_URDF_TYPES)} (any case), got {kind!r}")
        dirs = EXTENDED_URDF_TYPES[kind_l]
        closures.append(ClosureSpec(f"loop{i + 1}", f"loop{i + 1}", str(pair[0]), str(pair[1]), dirs))
    extra = {k: v for k, v in doc.items() if k not in ("closed_loop", "type", "name_mot", "held_joints")}
    actuated = _as_str_list(doc["name_mot"], path, "name_mot")
    held = _as_str_list(doc.get("held_joints") or [], path, "held_joints")
    return ClosureFile(closures, actuated, source=path, extra=extra, lock_idle_joints=True,
                       actuated_why={j: f"{path}: name_mot" for j in actuated},
                       held_joints=held, held_why={j: f"{path}: held_joints" for j in held})


def load_closure_file(path: str | Path) -> ClosureFile:
    """Read a closure file in either supported format (detected from its keys)."""
    p = Path(path)
    text = read_text(p, "closure file", ConfigError)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    except (ValueError, RecursionError) as exc:  # e.g. a number YAML accepts but Python does not convert
        raise ConfigError(f"{p}: not valid YAML: {type(exc).__name__}: {exc}") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level, got {type(doc).__name__}")
    if "closed_loop" in doc:
        return parse_extended_urdf(doc, str(p))
    return parse_native(doc, str(p))
