"""ROS parameters declared from a dataclass: one definition gives names, defaults, types,
descriptions, ranges, the YAML keys and the run-time validation.

Example::

    @dataclass
    class EstimatorParams:
        rate_hz: float = parameter(1000.0, "Estimator rate [Hz]", bounds=(1.0, 5000.0))
        cutoff_hz: float = parameter(50.0, "Velocity filter cut-off [Hz]", bounds=(0.1, None))
        feet: list[str] = parameter(["left_sole", "right_sole"], "Contact frames", read_only=True)

        def __post_init__(self):  # cross-field checks, also run on every change at run time
            if self.cutoff_hz >= self.rate_hz / 2:
                raise ValueError("cutoff_hz must be below the Nyquist frequency rate_hz / 2")

    params = declare_parameters(node, EstimatorParams)              # declare + read (YAML overrides)
    binding = ParameterBinding(node, params, on_change=rebuild)     # validate & apply later changes

Types map to ROS parameter types (``float`` → double, ``int`` → integer, ``bool``, ``str``,
``list[float]``/``list[int]``/``list[str]``/``list[bool]`` → arrays). ``bounds`` (inclusive,
``None`` = unbounded side) become a ``FloatingPointRange``/``IntegerRange`` in the descriptor, so
``ros2 param describe`` shows them and rclpy enforces them; the set-parameters callback installed by
:class:`ParameterBinding` checks them again together with finiteness, per-field ``check`` functions and
the dataclass' ``__post_init__``, and rejects a change with the reason.

A parameter that is also a field of a core configuration dataclass (a component's settings) takes
its default from that dataclass, and :class:`SharedFields` copies the node's values into it by field
name: each default is written once.

Errors at start-up (wrong type in YAML such as ``1000`` for a double, value out of range, failed
check) raise :class:`~kangaroo_wbc.errors.ConfigError` naming the node, the parameter and the fix.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    ParameterType,
    SetParametersResult,
)
from rclpy.exceptions import (
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterUninitializedException,
)
from rclpy.parameter import Parameter

from kangaroo_wbc.errors import ConfigError, InputError, KangarooWbcError

T = TypeVar("T")

_METADATA_KEY = "kangaroo_wbc.ros"

#: Checks return None when the value is acceptable, else the reason.
Check = Callable[[Any], str | None]


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """ROS-side description of one dataclass field."""

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
    """A dataclass field that is also a ROS parameter.

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


# --------------------------------------------------------------------------------------------
# type mapping

_SCALARS = {
    float: (ParameterType.PARAMETER_DOUBLE, Parameter.Type.DOUBLE),
    int: (ParameterType.PARAMETER_INTEGER, Parameter.Type.INTEGER),
    bool: (ParameterType.PARAMETER_BOOL, Parameter.Type.BOOL),
    str: (ParameterType.PARAMETER_STRING, Parameter.Type.STRING),
}
_ARRAYS = {
    float: (ParameterType.PARAMETER_DOUBLE_ARRAY, Parameter.Type.DOUBLE_ARRAY),
    int: (ParameterType.PARAMETER_INTEGER_ARRAY, Parameter.Type.INTEGER_ARRAY),
    bool: (ParameterType.PARAMETER_BOOL_ARRAY, Parameter.Type.BOOL_ARRAY),
    str: (ParameterType.PARAMETER_STRING_ARRAY, Parameter.Type.STRING_ARRAY),
}


@dataclasses.dataclass(frozen=True)
class _Field:
    name: str
    element: type
    is_array: bool
    is_tuple: bool
    msg_type: int
    param_type: Parameter.Type
    spec: ParamSpec
    default: Any


def _fields(cls: type) -> list[_Field]:
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
        if hint in _SCALARS:
            element, is_array, is_tuple = hint, False, False
        elif origin in (list, tuple, Sequence) and args and args[0] in _ARRAYS:
            if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
                raise ConfigError(f"{cls.__name__}.{f.name}: use tuple[T, ...], not {hint}")
            element, is_array, is_tuple = args[0], True, origin is tuple
        else:
            raise ConfigError(
                f"{cls.__name__}.{f.name}: type {hint} has no ROS parameter equivalent "
                "(use float, int, bool, str or list[...] of them)"
            )
        msg_type, param_type = (_ARRAYS if is_array else _SCALARS)[element]
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise ConfigError(f"{cls.__name__}.{f.name}: a ROS parameter needs a default value")
        spec = f.metadata.get(_METADATA_KEY, ParamSpec(description=""))
        out.append(
            _Field(f.name, element, is_array, is_tuple, msg_type, param_type,
                   spec, default)
        )
    return out


def _descriptor(field: _Field) -> ParameterDescriptor:
    spec = field.spec
    d = ParameterDescriptor(
        name=field.name,
        type=field.msg_type,
        description=spec.description,
        read_only=spec.read_only,
    )
    if spec.bounds is not None and not field.is_array:
        lo, hi = spec.bounds
        if field.element is float:
            d.floating_point_range = [FloatingPointRange(
                from_value=-sys.float_info.max if lo is None else float(lo),
                to_value=sys.float_info.max if hi is None else float(hi),
            )]
        elif field.element is int:
            d.integer_range = [IntegerRange(
                from_value=-(2**63) if lo is None else int(lo),
                to_value=2**63 - 1 if hi is None else int(hi),
            )]
    return d


# --------------------------------------------------------------------------------------------
# validation


def _check_value(field: _Field, value: Any) -> str | None:
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


def _python_value(field: _Field, value: Any) -> Any:
    if field.is_array:
        items = [field.element(v) for v in value]
        return tuple(items) if field.is_tuple else items
    return value


def declare_parameters(node: Any, params: type[T] | T) -> T:
    """Declare one ROS parameter per field of ``params`` (class or instance giving defaults)
    and return the values in effect (defaults overridden by YAML / command line).

    Raises:
        ConfigError: wrong type or out-of-range override, failed check or ``__post_init__``; the
            message names the node, the parameter and, for int-vs-double mix-ups, the fix.
    """
    cls = params if isinstance(params, type) else type(params)
    fields = _fields(cls)
    for f in fields:
        default = f.default if isinstance(params, type) else getattr(params, f.name)
        if f.is_array:
            default = list(default)
        # An empty list would be typed BYTE_ARRAY by rclpy: declare typed-but-unset instead.
        initial = f.param_type if f.is_array and not default else default
        try:
            node.declare_parameter(f.name, initial, _descriptor(f))
        except InvalidParameterTypeException as exc:
            hint = ""
            if f.element is float:
                hint = " (write floating-point values with a decimal point, e.g. 1000.0)"
            raise ConfigError(
                f"node {node.get_name()!r}: parameter {f.name!r} must be "
                f"{f.param_type.name.lower()}{hint}: {exc}"
            ) from None
        except InvalidParameterValueException as exc:
            raise ConfigError(f"node {node.get_name()!r}: parameter {f.name!r}: {exc}") from None
        if initial is f.param_type:
            try:
                node.get_parameter(f.name)
            except ParameterUninitializedException:
                node.set_parameters([Parameter(f.name, f.param_type, [])])
    values = {}
    for f in fields:
        value = node.get_parameter(f.name).value
        if f.is_array and value is None:
            value = []
        reason = _check_value(f, value)
        if reason:
            raise ConfigError(f"node {node.get_name()!r}: parameter {f.name!r}: {reason}")
        values[f.name] = _python_value(f, value)
    try:
        return cls(**values)
    except (ValueError, TypeError, KangarooWbcError) as exc:
        raise ConfigError(f"node {node.get_name()!r}: parameters of {cls.__name__}: {exc}") from None


class ParameterBinding:
    """Keeps a dataclass instance in sync with the node's parameters and guards changes.

    ``params`` is an instance returned by :func:`declare_parameters`; :attr:`params` is replaced
    by a new instance after every accepted change (so a reader never sees a half-applied update);
    ``on_change`` receives the new instance and the names of the fields that changed.
    """

    def __init__(
        self,
        node: Any,
        params: Any,
        *,
        on_change: Callable[[Any, set[str]], None] | None = None,
    ) -> None:
        self._cls = type(params)
        self._fields = {f.name: f for f in _fields(self._cls)}
        self.params = params
        self._on_change = on_change
        node.add_on_set_parameters_callback(self.validate)
        node.add_post_set_parameters_callback(self._apply)

    def validate(self, parameters: list[Parameter]) -> SetParametersResult:
        """Set-parameters callback: reject a change that is out of range, non-finite, fails its
        check or makes the dataclass invalid; the result's ``reason`` says why."""
        changes = {}
        for p in parameters:
            f = self._fields.get(p.name)
            if f is None:
                continue  # not ours (e.g. use_sim_time)
            if p.type_ != f.param_type:
                return SetParametersResult(
                    successful=False,
                    reason=f"{p.name}: expected {f.param_type.name.lower()}, got {p.type_.name.lower()}",
                )
            reason = _check_value(f, p.value)
            if reason:
                return SetParametersResult(successful=False, reason=f"{p.name}: {reason}")
            changes[f.name] = _python_value(f, p.value)
        if changes:
            try:
                dataclasses.replace(self.params, **changes)
            except (ValueError, TypeError, KangarooWbcError, InputError) as exc:
                return SetParametersResult(successful=False, reason=f"{self._cls.__name__}: {exc}")
        return SetParametersResult(successful=True)

    def _apply(self, parameters: list[Parameter]) -> None:
        changes = {}
        for p in parameters:
            f = self._fields.get(p.name)
            if f is not None:
                changes[f.name] = _python_value(f, p.value)
        if not changes:
            return
        self.params = dataclasses.replace(self.params, **changes)
        if self._on_change is not None:
            self._on_change(self.params, set(changes))
