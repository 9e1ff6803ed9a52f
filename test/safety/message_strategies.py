"""Hypothesis strategies of ROS messages of any type, built from the type's own field list
(test infrastructure): every number drawn among ordinary values, NaN, ±inf and the extremes of
its type; every sequence empty, short or oversized; every name a known one (shuffled, missing,
duplicated) or an unknown one. ``raw`` subscriptions get the serialised message (the middleware
delivers nothing else: a publisher of another type does not match the topic).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

#: Longest "oversized" sequence drawn (a JointState of the Kangaroo has 76 names).
OVERSIZED = 300

_INT_BOUNDS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT_BOUNDS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "byte": 8, "octet": 8, "char": 8}


def _floats(width: int) -> st.SearchStrategy[float]:
    big = 3.4e38 if width == 32 else 1.7e308
    return st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, big, -big, 1e-300]),
                     st.floats(allow_nan=True, allow_infinity=True, width=width))


def _names(names: Sequence[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(list(names) or ["x"]), st.sampled_from(["", "no_such_joint", "odom"]),
                     st.text(max_size=12))


def _element(type_name: str, names: Sequence[str]) -> st.SearchStrategy[Any]:
    if type_name in ("double", "float64"):
        return _floats(64)
    if type_name in ("float", "float32"):
        return _floats(32)
    if type_name == "boolean":
        return st.booleans()
    if type_name in _INT_BOUNDS:
        bits = _INT_BOUNDS[type_name]
        return st.one_of(st.sampled_from([0, -1, 2 ** (bits - 1) - 1, -(2 ** (bits - 1))]),
                         st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
    if type_name in _UINT_BOUNDS:
        top = 2 ** _UINT_BOUNDS[type_name] - 1
        value = st.one_of(st.sampled_from([0, top]), st.integers(0, top))
        return value.map(lambda v: bytes([v & 0xFF])) if type_name in ("byte", "octet") else value
    if type_name.startswith(("string", "wstring")):
        return _names(names)
    return messages(_message_type(type_name), names)


def _field(type_text: str, names: Sequence[str]) -> st.SearchStrategy[Any]:
    sequence = re.fullmatch(r"sequence<([^,>]+)(?:, ?(\d+))?>", type_text)
    if sequence:
        element = _element(sequence.group(1), names)
        bound = int(sequence.group(2)) if sequence.group(2) else None
        if bound is not None:
            return st.lists(element, max_size=bound)
        if sequence.group(1).startswith("string") and names:
            full = st.permutations(list(names))  # every name once, shuffled
        else:  # as long as the names: one value throughout, a few others at random places
            full = st.builds(_spiked, element, st.lists(st.tuples(st.integers(0, max(len(names), 1) - 1), element),
                                                        max_size=3), st.just(max(len(names), 1)))
        oversized = st.builds(lambda v, n: [v] * n, element, st.integers(OVERSIZED - 10, OVERSIZED))
        return st.one_of(st.lists(element, max_size=8), full, oversized)
    array = re.fullmatch(r"([^\[]+)\[(\d+)\]", type_text)
    if array:
        n = int(array.group(2))
        return st.lists(_element(array.group(1), names), min_size=n, max_size=n)
    return _element(type_text, names)


def _spiked(fill: Any, spikes: list[tuple[int, Any]], n: int) -> list[Any]:
    out = [fill] * n
    for i, value in spikes:
        out[i] = value
    return out


def _message_type(type_name: str) -> type:
    """``pkg/Name`` (a nested field's type) -> the message class ``pkg.msg.Name``."""
    import importlib

    package, name = type_name.split("/")
    return getattr(importlib.import_module(f"{package}.msg"), name)


def messages(msg_type: type, names: Sequence[str] = ()) -> st.SearchStrategy[Any]:
    """Messages of ``msg_type`` with every field drawn as the module says; ``names``: the names a
    ``name``-like string field is mostly drawn from (joint, actuator or frame names)."""
    fields = msg_type.get_fields_and_field_types()

    def build(values: dict[str, Any]) -> Any:
        msg = msg_type()
        for key, value in values.items():
            setattr(msg, key, value)
        return msg

    return st.fixed_dictionaries({k: _field(t, names) for k, t in fields.items()}).map(build)


def payloads(msg_type: type, names: Sequence[str] = ()) -> st.SearchStrategy[bytes]:
    """What a ``raw`` subscription receives: a serialised message of its type."""
    from rclpy.serialization import serialize_message

    return messages(msg_type, names).map(serialize_message)
