"""Plain samples exchanged by the node components (what the topic contract carries, as arrays).

Arrays are in the order of the names the producing component declares (e.g. the simulator's
``actuator_names``); a consumer maps them by name once (:class:`NameMap`), never by position in a
message. Stamps are seconds on the clock of the source (the simulator's ``/clock`` or the
hardware driver's system clock).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from kangaroo_wbc.errors import InputError, suggest


@dataclass
class ActuatorSample:
    """``actuators/state``: encoder position [m] (raw, boot offset included), velocity [m/s] and
    measured motor torque [N·m] per actuator, at ``stamp_s`` [s]."""

    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray | None
    stamp_s: float


@dataclass
class EncoderSample:
    """``passive_encoders/state``: absolute passive-joint encoder readings [rad] at ``stamp_s``."""

    position: np.ndarray
    stamp_s: float


@dataclass
class ImuSample:
    """``imu/data``: orientation (x, y, z, w) of the IMU frame in the world, angular velocity
    [rad/s] and specific force [m/s²] in the IMU frame, at ``stamp_s`` [s]."""

    orientation_xyzw: np.ndarray
    angular_velocity: np.ndarray
    linear_acceleration: np.ndarray
    stamp_s: float


@dataclass
class ActuatorCommand:
    """``actuators/command``: axial force [N] per actuator, stamped with the ``actuators/state``
    sample it was computed from (so the driver can measure the loop's latency)."""

    force: np.ndarray
    stamp_s: float


def format_value(value: object) -> str:
    """A diagnostic value as text (floats to 6 significant digits), as the nodes and the bag write it."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=6, separator=", ", max_line_width=10_000)
    if isinstance(value, list | tuple) and all(isinstance(v, float | int) for v in value):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


class Level(IntEnum):
    """Severity of an event or a status (values of ``diagnostic_msgs/DiagnosticStatus``)."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3


@dataclass
class Event:
    """Something a component wants logged. ``key`` names the cause: the adapter throttles per key,
    so alternating causes cannot flood the log and a new cause is logged at once."""

    level: Level
    key: str
    message: str


@dataclass
class Status:
    """One diagnostic status of a component (the adapter turns it into ``DiagnosticStatus``)."""

    name: str
    level: Level
    message: str
    values: dict = field(default_factory=dict)


class NameMap:
    """Permutation from a producer's name order to a consumer's, built once.

    ``NameMap(source_names, target_names)(x)`` returns ``x`` (in source order) in target order.

    Raises:
        InputError: a target name missing from the source (the message lists close matches).
    """

    def __init__(self, source_names: Sequence[str], target_names: Sequence[str]) -> None:
        source = list(source_names)
        missing = [n for n in target_names if n not in source]
        if missing:
            raise InputError(f"names missing: {missing}." + suggest(missing[0], source))
        self.index = np.array([source.index(n) for n in target_names], dtype=int)

    def __call__(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float)[self.index]
