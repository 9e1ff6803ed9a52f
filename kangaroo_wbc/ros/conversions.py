"""Every ROS ↔ array convention conversion of kangaroo_wbc, in one place.

Conventions (see ``docs/interface.md``):

- **Joints by name, never by index.** :class:`JointIndexMap` reorders a ``sensor_msgs/JointState``
  (any order) into the fixed order of the core (e.g. ``actuated_joints`` of the closure file) and
  back. Unknown, missing or duplicated names, length mismatches and non-finite values raise
  :class:`~kangaroo_wbc.errors.InputError`.
- **Quaternions.** ROS messages, pinocchio's ``Quaternion.coeffs()`` and pinocchio's free-flyer
  configuration ``q[3:7]`` all use ``(x, y, z, w)``; MuJoCo (``qpos[3:7]``, ``xquat``) uses
  ``(w, x, y, z)``. Beware ``pin.Quaternion(w, x, y, z)`` (four scalars, Eigen's constructor order)
  versus ``pin.Quaternion(np.array([x, y, z, w]))`` (a 4-vector of coefficients): use
  :func:`xyzw_to_pin_quaternion`, never either constructor directly.
- **Spatial vectors linear first.** A wrench is ``[f_x, f_y, f_z, tau_x, tau_y, tau_z]`` ([N], [N·m]),
  a twist ``[v_x, v_y, v_z, omega_x, omega_y, omega_z]`` ([m/s], [rad/s]), as in pinocchio.
- **Frames.** ``nav_msgs/Odometry`` pose is the child frame in ``header.frame_id``; its twist is
  expressed in ``child_frame_id`` (REP 105), i.e. ``linear`` = v_base_in_base.
- **Time.** Float seconds (``float64`` resolves ~0.24 µs at Unix-epoch magnitudes).

The messages the nodes publish at their sample rate are written by :mod:`kangaroo_wbc.ros.serialized`
(one encoder per message type); here are the decoders and the encoders of the occasional messages.
The functions here allocate small numpy arrays; a full actuator-state conversion takes a few µs,
well below the 1 ms budget of a 1 kHz loop.
"""

from __future__ import annotations

import array
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import (
    Point,
    Pose,
    Quaternion,
    TransformStamped,
    Twist,
    Vector3,
    Wrench,
    WrenchStamped,
)
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from kangaroo_wbc.errors import InputError, suggest

NANOSECONDS_PER_SECOND = 1_000_000_000

__all__ = [
    "ImuArrays",
    "JointIndexMap",
    "JointStateArrays",
    "OdometryArrays",
    "arrays_to_pose_msg",
    "arrays_to_transform_stamped",
    "array_to_point_msg",
    "array_to_vector3_msg",
    "check_stamp_fresh",
    "imu_msg_to_arrays",
    "normalize_quaternion",
    "odometry_msg_to_arrays",
    "pose_msg_to_arrays",
    "quaternion_msg_to_xyzw",
    "quaternion_wxyz_to_xyzw",
    "read_stamped",
    "seconds_to_time_msg",
    "time_msg_to_seconds",
    "to_seconds",
    "twist_msg_to_arrays",
    "vector3_msg_to_array",
    "wrench_stamped_to_arrays",
    "wrench_msg_to_vector",
    "xyzw_to_pin_quaternion",
    "xyzw_to_quaternion_msg",
]


# --------------------------------------------------------------------------------------------
# helpers


def _all_finite(v: np.ndarray) -> bool:
    """True if every entry of the 1-D float vector is finite (faster than numpy for short vectors)."""
    return all(map(math.isfinite, v.tolist()))


def _vector(values: Any, size: int, what: str) -> np.ndarray:
    """``values`` as a finite float64 vector of length ``size`` (a copy), else InputError."""
    try:
        v = np.array(values, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what}: cannot convert {values!r} to a float vector ({exc})") from None
    if v.shape[0] != size:
        raise InputError(f"{what}: expected {size} values, got {v.shape[0]}")
    if not _all_finite(v):
        raise InputError(f"{what}: non-finite value in {v.tolist()}")
    return v


def _double_array(values: np.ndarray) -> array.array:
    """A float64 numpy vector as the ``array.array('d')`` that rclpy stores (10x faster than a list)."""
    return array.array("d", np.ascontiguousarray(values, dtype=float).tobytes())


# --------------------------------------------------------------------------------------------
# joints


class JointStateArrays(NamedTuple):
    """Content of a JointState in the expected order; a field is None when the message left it empty.

    Units follow the joint type: [rad], [rad/s], [N·m] for revolute joints; [m], [m/s], [N] for
    prismatic ones. (``actuators/state`` effort is the measured motor torque [N·m], see
    ``docs/interface.md``.)
    """

    position: np.ndarray | None
    velocity: np.ndarray | None
    effort: np.ndarray | None
    stamp_s: float


class JointIndexMap:
    """Fixed joint order of the core ↔ name-addressed JointState messages.

    Args:
        expected_names: the core's joint order (e.g. ``actuated_joints`` of the closure file).
        allow_extra: accept messages carrying additional names (ignored), e.g. a 76-joint
            ``joint_states`` read by a consumer that needs only a subset. Missing names are
            always an error.
        what: word used in error messages ("actuator", "joint", ...).

    The permutation from a message's name order to the expected order is validated once per
    distinct name tuple and cached, so steady-state conversion costs one ``np.take``.

    Raises:
        InputError: empty or duplicated expected names.
    """

    _CACHE_SIZE = 16

    def __init__(
        self, expected_names: Sequence[str], *, allow_extra: bool = False, what: str = "joint"
    ) -> None:
        names = tuple(expected_names)
        if not names:
            raise InputError(f"JointIndexMap: no {what} names given")
        bad = [n for n in names if not isinstance(n, str) or not n]
        if bad:
            raise InputError(f"JointIndexMap: {what} names must be non-empty strings, got {bad}")
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise InputError(f"JointIndexMap: duplicated {what} names {duplicated}")
        self._names = names
        self._known = frozenset(names)
        self._allow_extra = allow_extra
        self._what = what
        self._cache: dict[tuple[str, ...], np.ndarray] = {}

    def permutation(self, message_names: Sequence[str]) -> np.ndarray:
        """Indices ``perm`` such that ``values_in_message[perm]`` is in the expected order.

        Raises:
            InputError: duplicated, unknown (unless ``allow_extra``) or missing names.
        """
        key = message_names if isinstance(message_names, tuple) else tuple(message_names)
        perm = self._cache.get(key)
        if perm is not None:
            return perm
        positions: dict[str, int] = {}
        duplicated: set[str] = set()
        for i, n in enumerate(key):
            if n in positions:
                duplicated.add(n)
            positions[n] = i
        if duplicated:
            raise InputError(f"message has duplicated {self._what} names {sorted(duplicated)}")
        if not self._allow_extra:
            unknown = [n for n in key if n not in self._known]
            if unknown:
                raise InputError(
                    f"message has unknown {self._what} names {unknown}."
                    + suggest(unknown[0], list(self._names))
                )
        missing = [n for n in self._names if n not in positions]
        if missing:
            raise InputError(
                f"message lacks {len(missing)} of {len(self._names)} expected {self._what} names: "
                f"{missing}"
            )
        perm = np.fromiter((positions[n] for n in self._names), dtype=np.intp, count=len(self._names))
        perm.setflags(write=False)
        if len(self._cache) >= self._CACHE_SIZE:
            self._cache.clear()
        self._cache[key] = perm
        return perm

    def reorder(
        self,
        message_names: Sequence[str],
        values: Any,
        *,
        field: str = "position",
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """Values given in ``message_names`` order, returned in the expected order.

        Args:
            message_names: names as listed in the message.
            values: one value per message name (``array.array``, list or ndarray).
            field: field name for error messages.
            out: optional preallocated float64 array, one entry per expected name.

        Raises:
            InputError: name problems (see :meth:`permutation`), length mismatch, non-finite value.
        """
        perm = self.permutation(message_names)
        try:
            v = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{field}: values are not numbers ({exc})") from None
        if v.ndim != 1 or v.shape[0] != len(message_names):
            raise InputError(
                f"{field}: {v.size} values for {len(message_names)} {self._what} names"
            )
        result = v[perm]
        if out is not None:
            out[:] = result
            result = out
        if not _all_finite(result):
            bad = [self._names[i] for i in np.flatnonzero(~np.isfinite(result))]
            raise InputError(f"{field}: non-finite value for {self._what}s {bad}")
        return result

    def from_joint_state(
        self,
        msg: JointState,
        *,
        required: Sequence[str] = ("position",),
    ) -> JointStateArrays:
        """Read a JointState (any name order) into arrays in the expected order.

        Args:
            msg: the message.
            required: fields that must be present ("position", "velocity", "effort"); other
                fields come back as None when the message leaves them empty.

        Raises:
            InputError: a required field is empty, or any error of :meth:`reorder`.
        """
        names = msg.name
        out: dict[str, np.ndarray | None] = {}
        for field in ("position", "velocity", "effort"):
            values = getattr(msg, field)
            if len(values) == 0:
                if field in required:
                    raise InputError(f"JointState has no {field} values (required)")
                out[field] = None
            else:
                out[field] = self.reorder(names, values, field=field)
        return JointStateArrays(
            out["position"], out["velocity"], out["effort"], time_msg_to_seconds(msg.header.stamp)
        )

    def to_joint_state(
        self,
        position: Any = None,
        velocity: Any = None,
        effort: Any = None,
        *,
        stamp: Time | None = None,
        frame_id: str = "",
        msg: JointState | None = None,
    ) -> JointState:
        """Build a JointState in the expected order (fields left None stay empty).

        Reusing ``msg`` (the same object every cycle) avoids re-validating the name list.

        Raises:
            InputError: wrong length or non-finite value.
        """
        if msg is None:
            msg = JointState()
        if tuple(msg.name) != self._names:
            msg.name = list(self._names)
        if stamp is not None:
            msg.header.stamp = stamp
        msg.header.frame_id = frame_id
        for field, values in (("position", position), ("velocity", velocity), ("effort", effort)):
            if values is None:
                setattr(msg, field, array.array("d"))
            else:
                setattr(msg, field, _double_array(_vector(values, len(self._names), field)))
        return msg

    def to_float64_multi_array(self, values: Any) -> Float64MultiArray:
        """Values in the expected order as a Float64MultiArray (ros2_control forward command controller).

        The controller's ``joints`` parameter must list :attr:`names` in this order.
        """
        n = len(self._names)
        msg = Float64MultiArray()
        msg.layout.dim = [MultiArrayDimension(label=self._what, size=n, stride=n)]
        msg.data = _double_array(_vector(values, n, "data"))
        return msg


# --------------------------------------------------------------------------------------------
# quaternions


def normalize_quaternion(q: Any, what: str = "quaternion") -> np.ndarray:
    """Unit copy of a 4-vector (order preserved). InputError if non-finite or of norm < 1e-6."""
    v = _vector(q, 4, what)
    x, y, z, w = v.tolist()
    norm = math.sqrt(x * x + y * y + z * z + w * w)  # np.linalg.norm costs ~5 µs on 4 numbers
    if norm < 1e-6:
        raise InputError(f"{what}: zero quaternion {v.tolist()} (unset orientation?)")
    return v / norm


def quaternion_wxyz_to_xyzw(q_wxyz: Any) -> np.ndarray:
    """MuJoCo order (w, x, y, z) → ROS / pinocchio order (x, y, z, w)."""
    v = _vector(q_wxyz, 4, "quaternion_wxyz")
    return v[[1, 2, 3, 0]]


def quaternion_msg_to_xyzw(msg: Quaternion) -> np.ndarray:
    """geometry_msgs/Quaternion → unit (x, y, z, w) array. InputError on a zero/non-finite one."""
    return normalize_quaternion((msg.x, msg.y, msg.z, msg.w))


def xyzw_to_quaternion_msg(q_xyzw: Any, msg: Quaternion | None = None) -> Quaternion:
    """(x, y, z, w) → geometry_msgs/Quaternion (normalised)."""
    x, y, z, w = normalize_quaternion(q_xyzw, "quaternion_xyzw")
    msg = Quaternion() if msg is None else msg
    msg.x, msg.y, msg.z, msg.w = float(x), float(y), float(z), float(w)
    return msg


def xyzw_to_pin_quaternion(q_xyzw: Any) -> Any:
    """(x, y, z, w) → ``pinocchio.Quaternion`` (normalised), built from its coefficient vector."""
    import pinocchio as pin

    return pin.Quaternion(normalize_quaternion(q_xyzw, "quaternion_xyzw"))


# --------------------------------------------------------------------------------------------
# vectors, poses, twists, transforms


def vector3_msg_to_array(msg: Vector3 | Point) -> np.ndarray:
    """geometry_msgs/Vector3 or Point → (3,) array. InputError if non-finite."""
    return _vector((msg.x, msg.y, msg.z), 3, type(msg).__name__)


def _set_xyz(msg: Any, v: Any, what: str) -> Any:
    msg.x, msg.y, msg.z = _vector(v, 3, what).tolist()
    return msg


def array_to_vector3_msg(v: Any, msg: Vector3 | None = None) -> Vector3:
    """(3,) array → geometry_msgs/Vector3."""
    return _set_xyz(Vector3() if msg is None else msg, v, "vector3")


def array_to_point_msg(v: Any, msg: Point | None = None) -> Point:
    """(3,) array → geometry_msgs/Point."""
    return _set_xyz(Point() if msg is None else msg, v, "point")


def pose_msg_to_arrays(msg: Pose) -> tuple[np.ndarray, np.ndarray]:
    """geometry_msgs/Pose → (position [m], unit quaternion_xyzw)."""
    return vector3_msg_to_array(msg.position), quaternion_msg_to_xyzw(msg.orientation)


def arrays_to_pose_msg(position: Any, quaternion_xyzw: Any, msg: Pose | None = None) -> Pose:
    """(position [m], quaternion_xyzw) → geometry_msgs/Pose."""
    msg = Pose() if msg is None else msg
    array_to_point_msg(position, msg.position)
    xyzw_to_quaternion_msg(quaternion_xyzw, msg.orientation)
    return msg


def twist_msg_to_arrays(msg: Twist) -> tuple[np.ndarray, np.ndarray]:
    """geometry_msgs/Twist → (linear [m/s], angular [rad/s])."""
    return vector3_msg_to_array(msg.linear), vector3_msg_to_array(msg.angular)


def arrays_to_transform_stamped(
    translation: Any,
    quaternion_xyzw: Any,
    *,
    parent_frame: str,
    child_frame: str,
    stamp: Time,
    msg: TransformStamped | None = None,
) -> TransformStamped:
    """Pose of ``child_frame`` in ``parent_frame`` → geometry_msgs/TransformStamped (for TF)."""
    msg = TransformStamped() if msg is None else msg
    msg.header.stamp = stamp
    msg.header.frame_id = parent_frame
    msg.child_frame_id = child_frame
    array_to_vector3_msg(translation, msg.transform.translation)
    xyzw_to_quaternion_msg(quaternion_xyzw, msg.transform.rotation)
    return msg


# --------------------------------------------------------------------------------------------
# odometry


class OdometryArrays(NamedTuple):
    """nav_msgs/Odometry as arrays.

    ``position`` [m] and ``quaternion_xyzw`` give ``child_frame_id`` in ``frame_id``; ``linear``
    [m/s] and ``angular`` [rad/s] are expressed in ``child_frame_id`` (REP 105).
    """

    position: np.ndarray
    quaternion_xyzw: np.ndarray
    linear: np.ndarray
    angular: np.ndarray
    frame_id: str
    child_frame_id: str
    stamp_s: float


def odometry_msg_to_arrays(msg: Odometry | bytes) -> OdometryArrays:
    """nav_msgs/Odometry, or its serialised form (a raw subscription's, read by
    :func:`~kangaroo_wbc.ros.serialized.stamped_reader`), → :class:`OdometryArrays`. InputError on
    non-finite or zero quaternion (or malformed bytes)."""
    if isinstance(msg, bytes):
        view, at = read_stamped(Odometry, msg)
        if at is None:
            return odometry_msg_to_arrays(view)
        v = view.values
        return OdometryArrays(
            _vector(v[at["pose.pose.position"]], 3, "Point"),
            normalize_quaternion(v[at["pose.pose.orientation"]]),
            _vector(v[at["twist.twist.linear"]], 3, "Vector3"),
            _vector(v[at["twist.twist.angular"]], 3, "Vector3"),
            view.frame_id,
            view.strings[0],
            view.stamp_s,
        )
    position, quaternion = pose_msg_to_arrays(msg.pose.pose)
    linear, angular = twist_msg_to_arrays(msg.twist.twist)
    return OdometryArrays(
        position,
        quaternion,
        linear,
        angular,
        msg.header.frame_id,
        msg.child_frame_id,
        time_msg_to_seconds(msg.header.stamp),
    )


# --------------------------------------------------------------------------------------------
# wrenches


def read_stamped(msg_type: type, raw: bytes) -> tuple[Any, Any]:
    """Serialised ``msg_type`` read: ``(view, slices)`` (a
    :class:`~kangaroo_wbc.ros.serialized.StampedView` and the reader's field slices), or
    ``(message, None)``: the message deserialised by rclpy where no reader passed its self-check.

    Raises:
        InputError: bytes that are not a well-formed message of ``msg_type``.
    """
    from kangaroo_wbc.ros.serialized import stamped_reader

    reader = stamped_reader(msg_type)
    if reader is not None:
        return reader.read(raw), reader.slices
    from rclpy.serialization import deserialize_message

    try:
        return deserialize_message(raw, msg_type), None
    except Exception as exc:  # noqa: BLE001 - rclpy raises several kinds on bad bytes
        raise InputError(f"malformed serialised {msg_type.__name__}: {exc}") from None


def wrench_stamped_to_arrays(msg: WrenchStamped | bytes) -> tuple[np.ndarray, str, float]:
    """geometry_msgs/WrenchStamped, or its serialised form, → ``(wrench, frame_id, stamp [s])``,
    the wrench ``[f_x, f_y, f_z, tau_x, tau_y, tau_z]`` ([N], [N·m]) as received (not checked:
    the receiver checks what it uses)."""
    if isinstance(msg, bytes):
        view, at = read_stamped(WrenchStamped, msg)
        if at is None:
            return wrench_stamped_to_arrays(view)
        return view.values, view.frame_id, view.stamp_s
    f, t = msg.wrench.force, msg.wrench.torque
    return (np.array((f.x, f.y, f.z, t.x, t.y, t.z)), msg.header.frame_id,
            time_msg_to_seconds(msg.header.stamp))


def wrench_msg_to_vector(msg: Wrench) -> np.ndarray:
    """geometry_msgs/Wrench → ``[f_x, f_y, f_z, tau_x, tau_y, tau_z]`` ([N], [N·m]), linear first."""
    f, t = msg.force, msg.torque
    return _vector((f.x, f.y, f.z, t.x, t.y, t.z), 6, "wrench")


# --------------------------------------------------------------------------------------------
# IMU


class ImuArrays(NamedTuple):
    """sensor_msgs/Imu as arrays, all expressed in ``frame_id`` (the IMU link).

    ``quaternion_xyzw`` is the IMU orientation in its world frame, or None when the message says
    it carries none (``orientation_covariance[0] == -1``, REP 145).
    """

    quaternion_xyzw: np.ndarray | None
    angular_velocity: np.ndarray
    linear_acceleration: np.ndarray
    frame_id: str
    stamp_s: float


def imu_msg_to_arrays(msg: Imu | bytes) -> ImuArrays:
    """sensor_msgs/Imu, or its serialised form, → :class:`ImuArrays` (angular velocity [rad/s],
    specific force [m/s²])."""
    if isinstance(msg, bytes):
        view, at = read_stamped(Imu, msg)
        if at is None:
            return imu_msg_to_arrays(view)
        v = view.values
        has = v[at["orientation_covariance"]][0] != -1.0
        return ImuArrays(
            normalize_quaternion(v[at["orientation"]]) if has else None,
            _vector(v[at["angular_velocity"]], 3, "Vector3"),
            _vector(v[at["linear_acceleration"]], 3, "Vector3"),
            view.frame_id,
            view.stamp_s,
        )
    has_orientation = len(msg.orientation_covariance) == 0 or msg.orientation_covariance[0] != -1.0
    quaternion = quaternion_msg_to_xyzw(msg.orientation) if has_orientation else None
    return ImuArrays(
        quaternion,
        vector3_msg_to_array(msg.angular_velocity),
        vector3_msg_to_array(msg.linear_acceleration),
        msg.header.frame_id,
        time_msg_to_seconds(msg.header.stamp),
    )


# --------------------------------------------------------------------------------------------
# time


def time_msg_to_seconds(stamp: Time) -> float:
    """builtin_interfaces/Time → float seconds [s]."""
    return stamp.sec + stamp.nanosec * 1e-9


def seconds_to_time_msg(t: float, msg: Time | None = None) -> Time:
    """Float seconds [s] (finite, ≥ 0) → builtin_interfaces/Time, rounded to the nanosecond."""
    if not math.isfinite(t) or t < 0.0:
        raise InputError(f"time must be finite and non-negative, got {t} s")
    ns = round(t * NANOSECONDS_PER_SECOND)
    msg = Time() if msg is None else msg
    msg.sec, msg.nanosec = divmod(int(ns), NANOSECONDS_PER_SECOND)
    return msg


def to_seconds(t: Any) -> float:
    """Seconds [s] from a float, a builtin_interfaces/Time, or anything with ``nanoseconds``
    (``rclpy.time.Time``, ``rclpy.duration.Duration``)."""
    if isinstance(t, (int, float)):
        return float(t)
    if hasattr(t, "nanoseconds"):
        return t.nanoseconds * 1e-9
    if hasattr(t, "sec") and hasattr(t, "nanosec"):
        return time_msg_to_seconds(t)
    raise InputError(f"cannot read a time from {type(t).__name__}")


def check_stamp_fresh(
    stamp: Any,
    now: Any,
    max_age_s: float,
    *,
    what: str = "message",
    max_future_s: float = 0.005,
    allow_zero: bool = False,
) -> float:
    """Return the age [s] of ``stamp``; raise if it is stale, from the future or unset.

    Args:
        stamp: the message stamp.
        now: current time of the node's clock (sim time under ``use_sim_time``).
        max_age_s: largest acceptable age [s].
        what: name used in the error message (e.g. the topic).
        max_future_s: tolerated negative age [s] (clock granularity between processes).
        allow_zero: accept a zero stamp (otherwise read as "never set").

    Raises:
        InputError: the stamp is zero, older than ``max_age_s`` or ahead by more than ``max_future_s``.
    """
    t_stamp = to_seconds(stamp)
    if t_stamp == 0.0 and not allow_zero:
        raise InputError(f"{what}: header stamp is zero (never set)")
    age = to_seconds(now) - t_stamp
    if age > max_age_s:
        raise InputError(f"{what}: stale by {age * 1e3:.1f} ms (limit {max_age_s * 1e3:.1f} ms)")
    if age < -max_future_s:
        raise InputError(f"{what}: stamp {-age * 1e3:.1f} ms in the future (clock mismatch?)")
    return age
