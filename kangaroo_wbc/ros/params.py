"""ROS parameters declared from a dataclass (:mod:`kangaroo_wbc.components.parameters`: one definition
gives names, defaults, types, descriptions, ranges, the YAML keys and the validation).

    params = declare_parameters(node, EstimatorParams)              # declare + read (YAML overrides)
    binding = ParameterBinding(node, params, on_change=rebuild)     # validate & apply later changes

Types map to ROS parameter types (``float`` → double, ``int`` → integer, ``bool``, ``str``,
``list[float]``/``list[int]``/``list[str]``/``list[bool]`` → arrays). ``bounds`` (inclusive,
``None`` = unbounded side) become a ``FloatingPointRange``/``IntegerRange`` in the descriptor, so
``ros2 param describe`` shows them and rclpy enforces them; the set-parameters callback installed by
:class:`ParameterBinding` checks them again together with finiteness, per-field ``check`` functions and
the dataclass' ``__post_init__``, and rejects a change with the reason.

Errors at start-up (wrong type in YAML such as ``1000`` for a double, value out of range, failed
check) raise :class:`~kangaroo_wbc.errors.ConfigError` naming the node, the parameter and the fix.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
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

from kangaroo_wbc.components.parameters import (  # noqa: F401 - the dataclass side, re-exported
    ParamField,
    ParamSpec,
    SharedFields,
    check_value,
    param_fields,
    parameter,
    python_value,
)
from kangaroo_wbc.errors import ConfigError, InputError, KangarooWbcError

T = TypeVar("T")

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


def _types(field: ParamField) -> tuple[int, Parameter.Type]:
    """The field's ``ParameterType`` (descriptor) and ``Parameter.Type`` (value)."""
    return (_ARRAYS if field.is_array else _SCALARS)[field.element]


def _descriptor(field: ParamField) -> ParameterDescriptor:
    spec = field.spec
    d = ParameterDescriptor(
        name=field.name,
        type=_types(field)[0],
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


def declare_parameters(node: Any, params: type[T] | T) -> T:
    """Declare one ROS parameter per field of ``params`` (class or instance giving defaults)
    and return the values in effect (defaults overridden by YAML / command line).

    Raises:
        ConfigError: wrong type or out-of-range override, failed check or ``__post_init__``; the
            message names the node, the parameter and, for int-vs-double mix-ups, the fix.
    """
    cls = params if isinstance(params, type) else type(params)
    fields = param_fields(cls)
    for f in fields:
        default = f.default if isinstance(params, type) else getattr(params, f.name)
        if f.is_array:
            default = list(default)
        # An empty list would be typed BYTE_ARRAY by rclpy: declare typed-but-unset instead.
        initial = _types(f)[1] if f.is_array and not default else default
        try:
            node.declare_parameter(f.name, initial, _descriptor(f))
        except InvalidParameterTypeException as exc:
            hint = ""
            if f.element is float:
                hint = " (write floating-point values with a decimal point, e.g. 1000.0)"
            raise ConfigError(
                f"node {node.get_name()!r}: parameter {f.name!r} must be "
                f"{_types(f)[1].name.lower()}{hint}: {exc}"
            ) from None
        except InvalidParameterValueException as exc:
            raise ConfigError(f"node {node.get_name()!r}: parameter {f.name!r}: {exc}") from None
        if initial is _types(f)[1]:
            try:
                node.get_parameter(f.name)
            except ParameterUninitializedException:
                node.set_parameters([Parameter(f.name, _types(f)[1], [])])
    values = {}
    for f in fields:
        try:
            value = node.get_parameter(f.name).value
        except ParameterUninitializedException:  # an empty read-only array: set_parameters refused the []
            value = None
        if f.is_array and value is None:
            value = []
        reason = check_value(f, value)
        if reason:
            raise ConfigError(f"node {node.get_name()!r}: parameter {f.name!r}: {reason}")
        values[f.name] = python_value(f, value)
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
        self._fields = {f.name: f for f in param_fields(self._cls)}
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
            if p.type_ != _types(f)[1]:
                return SetParametersResult(
                    successful=False,
                    reason=f"{p.name}: expected {_types(f)[1].name.lower()}, got {p.type_.name.lower()}",
                )
            reason = check_value(f, p.value)
            if reason:
                return SetParametersResult(successful=False, reason=f"{p.name}: {reason}")
            changes[f.name] = python_value(f, p.value)
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
                changes[f.name] = python_value(f, p.value)
        if not changes:
            return
        self.params = dataclasses.replace(self.params, **changes)
        if self._on_change is not None:
            self._on_change(self.params, set(changes))
