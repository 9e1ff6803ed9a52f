"""Node parameters declared from a dataclass, without ROS: one definition gives names, defaults,
types, descriptions, ranges, the YAML keys and the validation.

Example::

    @dataclass
    class EstimatorParams:
        rate_hz: float = parameter(1000.0, "Estimator rate [Hz]", bounds=(1.0, 5000.0))
        cutoff_hz: float = parameter(50.0, "Velocity filter cut-off [Hz]", bounds=(0.1, None))
        feet: list[str] = parameter(["left_sole", "right_sole"], "Contact frames", read_only=True)

        def __post_init__(self):  # cross-field checks, also run on every change at run time
            if self.cutoff_hz >= self.rate_hz / 2:
                raise ValueError("cutoff_hz must be below the Nyquist frequency rate_hz / 2")

The ROS side (:mod:`kangaroo_wbc.ros.params`) declares one ROS parameter per field and validates
changes with :func:`check_value`; the one-process loop reads the same ``config/<node>.yaml`` files
with :func:`params_from_yaml`, so both build their components from the same values.

Types: ``float``, ``int``, ``bool``, ``str`` and ``list[...]`` / ``tuple[T, ...]`` of them.
``bounds`` are inclusive (``None``: that side open).

A parameter that is also a field of a core configuration dataclass (a component's settings) takes
its default from that dataclass, and :class:`SharedFields` copies the node's values into it by field
name: each default is written once.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from kangaroo_wbc.errors import ConfigError, InputError, KangarooWbcError


class _DataclassInstance(Protocol):
    """A dataclass instance (what ``dataclasses.replace`` takes)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]


T = TypeVar("T", bound=_DataclassInstance)  # parameter classes are dataclasses

_METADATA_KEY = "kangaroo_wbc.ros"

#: Checks return None when the value is acceptable, else the reason.
Check = Callable[[Any], str | None]

SCALAR_TYPES = (float, int, bool, str)


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """Description of one parameter field."""

    description: str
    bounds: tuple[float | int | None, float | int | None] | None = None
    read_only: bool = False
    check: Check | None = None


def parameter(
    default: Any = dataclasses.MISSING,
    description: str = "",
    *,
    bounds: tuple[float | int | None, float | int | None] | None = None,
    read_only: bool = False,
    check: Check | None = None,
) -> Any:
    """A dataclass field that is also a node parameter.

    Args:
        default: default value (lists are copied per instance).
        description: one line with the unit, e.g. ``"Estimator rate [Hz]"``.
        bounds: inclusive ``(min, max)``; ``None`` leaves that side open. Numbers only.
        read_only: reject any change after start-up.
        check: extra check ``value -> None | reason`` (e.g. list length).
    """
    spec = ParamSpec(description, bounds, read_only, check)
    metadata = {_METADATA_KEY: spec}
    if isinstance(default, list | dict | set):
        value = default
        return dataclasses.field(default_factory=lambda: type(value)(value), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(frozen=True)
class SharedFields:
    """The parameters of a node that are fields of a core configuration dataclass.

    The core configuration holds the default (the node declares ``parameter(config().x, ...)``,
    never the literal again) and :meth:`build` copies the node's values into it by field name:
    field ``f`` of ``config`` is the node's parameter ``names[f]`` if listed there, else
    ``prefix + f`` if the node has one; other fields keep the configuration's default.

    Example::

        CALIBRATION = SharedFields(CalibrationConfig, prefix="calibration_",
                                   names={"max_velocity": "calibration_max_velocity_m_s"})
        CALIBRATION.build(params)  # CalibrationConfig(max_velocity=..., limit_margin=...)
    """

    config: type
    prefix: str = ""
    names: Mapping[str, str] = dataclasses.field(default_factory=dict)  # field -> parameter

    def pairs(self, params_cls: type) -> dict[str, str]:
        """``{field: parameter}`` of the fields of ``config`` that ``params_cls`` declares."""
        declared = {f.name for f in dataclasses.fields(params_cls)}
        unknown = set(self.names.values()) - declared
        if unknown:
            raise ConfigError(f"{params_cls.__name__} has no parameter {sorted(unknown)} "
                              f"(named for {self.config.__name__})")
        out = {}
        for f in dataclasses.fields(self.config):
            name = self.names.get(f.name, self.prefix + f.name)
            if f.init and name in declared:
                out[f.name] = name
        return out

    def values(self, params: Any) -> dict[str, Any]:
        """``{field: value}`` of the shared fields in ``params`` (lists become tuples)."""
        return {f: tuple(v) if isinstance(v, list) else v
                for f, v in ((f, getattr(params, p)) for f, p in self.pairs(type(params)).items())}

    def build(self, params: Any, base: Any = None, **overrides: Any) -> Any:
        """A ``config`` with the shared fields from ``params`` and ``overrides`` (derived values),
        the rest from ``base`` (default: the configuration's defaults)."""
        kwargs = {**self.values(params), **overrides}
        return dataclasses.replace(base, **kwargs) if base is not None else self.config(**kwargs)


@dataclasses.dataclass(frozen=True)
class ParamField:
    """One parameter field: its element type, whether it is an array, its spec and default."""

    name: str
    element: type
    is_array: bool
    is_tuple: bool
    spec: ParamSpec
    default: Any


def param_fields(cls: type) -> list[ParamField]:
    """The parameter fields of dataclass ``cls``.

    Raises:
        ConfigError: a field whose type has no parameter equivalent or without a default.
    """
    if not dataclasses.is_dataclass(cls):
        raise ConfigError(f"{cls!r} is not a dataclass")
    module = sys.modules.get(cls.__module__)
    hints = typing.get_type_hints(cls, vars(module) if module else None)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        hint = hints[f.name]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if hint in SCALAR_TYPES:
            element, is_array, is_tuple = hint, False, False
        elif origin in (list, tuple, Sequence) and args and args[0] in SCALAR_TYPES:
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                raise ConfigError(f"{cls.__name__}.{f.name}: use tuple[T, ...], not {hint}")
            element, is_array, is_tuple = args[0], True, origin is tuple
        else:
            raise ConfigError(f"{cls.__name__}.{f.name}: type {hint} has no parameter equivalent "
                              "(use float, int, bool, str or list[...] of them)")
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise ConfigError(f"{cls.__name__}.{f.name}: a parameter needs a default value")
        spec = f.metadata.get(_METADATA_KEY, ParamSpec(description=""))
        out.append(ParamField(f.name, element, is_array, is_tuple, spec, default))
    return out


def check_value(field: ParamField, value: Any) -> str | None:
    """None if ``value`` is acceptable for ``field``, else the reason (without the name)."""
    values = list(value) if field.is_array else [value]
    if field.element is float:
        bad = [v for v in values if not math.isfinite(v)]
        if bad:
            return f"non-finite value {bad[0]}"
    if field.spec.bounds is not None and field.element in (float, int):
        lo, hi = field.spec.bounds
        for v in values:
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                lo_s = "-inf" if lo is None else lo
                hi_s = "inf" if hi is None else hi
                unit = f" ({field.spec.description})" if field.spec.description else ""
                return f"{v} outside [{lo_s}, {hi_s}]{unit}"
    if field.spec.check is not None:
        return field.spec.check(value)
    return None


def python_value(field: ParamField, value: Any) -> Any:
    """``value`` as the field holds it (arrays as lists, or tuples for ``tuple`` fields)."""
    if field.is_array:
        items = [field.element(v) for v in value]
        return tuple(items) if field.is_tuple else items
    return value


def _typed(field: ParamField, value: Any, where: str) -> Any:
    """``value`` (from YAML) checked against the field's type as ROS would type it."""
    def ok(v: Any) -> bool:
        if field.element is float:
            return isinstance(v, float)  # ROS: 1000 is an integer, not a double
        if field.element is int:
            return isinstance(v, int) and not isinstance(v, bool)
        return isinstance(v, field.element)
    kind = field.element.__name__ + ("[]" if field.is_array else "")
    hint = " (write floating-point values with a decimal point, e.g. 1000.0)" if field.element is float else ""
    if field.is_array:
        if not isinstance(value, list) or not all(ok(v) for v in value):
            raise ConfigError(f"{where}: parameter {field.name!r} must be {kind}{hint}, got {value!r}")
    elif not ok(value):
        raise ConfigError(f"{where}: parameter {field.name!r} must be {kind}{hint}, got {value!r}")
    return value


def params_from_values(cls: type[T], values: Mapping[str, Any], where: str, base: T | None = None) -> T:
    """An instance of ``cls`` from ``values`` (over ``base`` or the defaults), checked as a node
    checks its parameters at start-up: type, finiteness, bounds, per-field checks, ``__post_init__``.

    Raises:
        ConfigError: naming ``where``, the parameter and the reason; unknown names included.
    """
    fields = {f.name: f for f in param_fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"{where}: unknown parameters {unknown} (not parameters of {cls.__name__})")
    out = {}
    for name, value in values.items():
        f = fields[name]
        value = _typed(f, value, where)
        reason = check_value(f, value)
        if reason:
            raise ConfigError(f"{where}: parameter {name!r}: {reason}")
        out[name] = python_value(f, value)
    try:
        return dataclasses.replace(base, **out) if base is not None else cls(**out)
    except (ValueError, TypeError, KangarooWbcError, InputError) as exc:
        raise ConfigError(f"{where}: parameters of {cls.__name__}: {exc}") from None


def yaml_node_values(path: Path, node: str) -> dict[str, Any]:
    """The ``ros__parameters`` of node ``node`` in the parameter file ``path`` (the sections that
    match it: ``/**/<node>``, ``/**``, ``<node>``, ``/<node>``), later sections over earlier ones.

    Raises:
        ConfigError: an unreadable or malformed file.
    """
    import yaml

    try:
        doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"parameter file {path}: {exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"parameter file {path}: a mapping of node names expected")
    values: dict[str, Any] = {}
    for key, section in doc.items():
        if str(key).lstrip("/") in (node, f"**/{node}", "**"):
            params = (section or {}).get("ros__parameters", {}) if isinstance(section, dict) else None
            if not isinstance(params, dict):
                raise ConfigError(f"parameter file {path}: section {key!r} has no ros__parameters mapping")
            values.update(params)
    return values


def params_from_yaml(cls: type[T], node: str, files: Sequence[Path], overrides: Mapping[str, Any] | None = None) -> T:
    """``cls`` from node ``node``'s values in the parameter ``files`` (in order) and ``overrides``
    on top, checked as at a node's start-up (:func:`params_from_values`)."""
    values: dict[str, Any] = {}
    for path in files:
        values.update(yaml_node_values(path, node))
    where = f"{node} ({', '.join(Path(f).name for f in files) or 'defaults'})"
    params = params_from_values(cls, values, where)
    return params_from_values(cls, dict(overrides), f"{node} (overrides)", params) if overrides else params


# --------------------------------------------------------------------------------------------
# parameters several nodes share


def urdf_dir_parameter() -> Any:
    """The ``urdf_dir`` parameter of the nodes that load the Kangaroo model (read-only)."""
    return parameter("", "Folder with kangaroo.urdf and kangaroo_closures.yaml (empty: the package's)",
                     read_only=True)


def rig_parameter() -> Any:
    """The ``rig`` parameter of the nodes that run on a test bench (read-only): empty (the robot on
    the floor) or ``one_leg`` (:mod:`kangaroo_wbc.robots.kangaroo.rig`)."""
    from kangaroo_wbc.robots.kangaroo.rig import RIGS

    return parameter("", f"Test bench: empty (the robot on the floor) or {', '.join(RIGS)} (docs/morphology.md)",
                     read_only=True, check=lambda v: None if v in ("", *RIGS) else f"empty or one of {list(RIGS)}")


def rig_leg_parameter() -> Any:
    """The ``rig_leg`` parameter: the leg the bench keeps (read-only)."""
    return parameter("left", "Test bench: the leg it keeps (left or right)", read_only=True,
                     check=lambda v: None if v in ("left", "right") else "left or right")


#: ``sim_clock`` values: the simulated time from the stamps of the node's actuator samples, or ``/clock``.
SIM_CLOCKS = ("stamps", "clock")


def sim_clock_parameter() -> Any:
    """The ``sim_clock`` parameter of the chain's nodes (read-only): where their simulated time
    comes from while ``use_sim_time`` is true."""
    return parameter("stamps", "With use_sim_time: stamps (the simulated time of the latest actuator sample, "
                     "no /clock subscription) | clock (follow /clock)", read_only=True,
                     check=lambda v: None if v in SIM_CLOCKS else f"must be one of {list(SIM_CLOCKS)}")


__all__ = ["ParamSpec", "parameter", "SharedFields", "ParamField", "param_fields", "check_value", "python_value",
           "params_from_values", "params_from_yaml", "yaml_node_values", "urdf_dir_parameter", "rig_parameter",
           "rig_leg_parameter", "SIM_CLOCKS", "sim_clock_parameter"]
