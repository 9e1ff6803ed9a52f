"""Preserialised 1 kHz messages: write the changing numbers into a CDR template, publish the bytes.

Building a ``sensor_msgs/JointState`` of 76 joints in Python and letting rclpy convert it costs
tens of microseconds per message at every tick; the names, the frame and the sequence lengths of
the loop's messages never change. :class:`SerializedWriter` serialises one prototype message once
with rclpy (``rclpy.serialization.serialize_message``), finds where the stamp and each float64
slot sit in those bytes (by serialising it again with marker values in each slot: no hand-written
CDR layout), and then writes each tick's stamp and arrays into a copy with numpy. The result goes
to ``Publisher.publish(bytes)`` (rclpy publishes serialised messages as they are).

At construction the writer checks itself: bytes it writes for random values, read back by rclpy,
must equal the message filled with them, else :class:`~kangaroo_wbc.errors.ConfigError`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kangaroo_wbc.errors import ConfigError

#: Stamp marker: ``sec`` and ``nanosec`` whose 8 bytes no zeroed message contains.
_MARK_SEC, _MARK_NANOSEC = 0x11223344, 0x33445566


def _marker(n: int) -> np.ndarray:
    """``n`` doubles whose bytes form an aperiodic pattern (element ``k`` carries ``k``): found at
    one offset only, whatever the uninitialised padding around it holds."""
    raw = b"".join(bytes([0x11, 0x22, 0x33, 0x44, k & 0xFF, (k >> 8) & 0xFF, 0x5A, 0x3F]) for k in range(n))
    return np.frombuffer(raw, dtype="<f8").copy()


class SerializedWriter:
    """Stamp and float64 slots of one message type written into its serialised form.

    Args:
        prototype: a message with every constant field (names, frame ids, sequence lengths) set;
            its stamp and slot values do not matter.
        slots: ``name -> (n, fill)``: ``fill(msg, values)`` puts ``n`` doubles into the message
            (contiguous in the serialised form, which the constructor checks).
        stamp: ``msg -> builtin_interfaces/Time`` of the stamp to write (or a list of them: every
            one gets the same stamp, e.g. each transform of a ``tf2_msgs/TFMessage``), or None.

    Raises:
        ConfigError: a slot is not ``n`` contiguous doubles, or the self-check failed.
    """

    def __init__(self, prototype: Any, slots: dict[str, tuple[int, Callable[[Any, np.ndarray], None]]],
                 stamp: Callable[[Any], Any] | None = None) -> None:
        from rclpy.serialization import serialize_message

        self._serialize = serialize_message
        self._type = type(prototype)
        self._prototype = prototype
        self._fills = {name: fill for name, (_, fill) in slots.items()}
        self._stamp = stamp
        zero = self._filled({name: np.zeros(n) for name, (n, _) in slots.items()}, 0, 0)
        self._template = bytearray(serialize_message(zero))
        self._buffer = bytearray(self._template)
        self._views: dict[str, np.ndarray] = {}
        for name, (n, _) in slots.items():
            values = {k: np.zeros(m) for k, (m, _) in slots.items()}
            values[name] = _marker(n)
            offset = self._find(serialize_message(self._filled(values, 0, 0)), values[name].tobytes(), name)
            self._views[name] = np.frombuffer(self._buffer, dtype="<f8", count=n, offset=offset)
        self._stamp_offsets: list[int] = []
        if stamp is not None:
            marked = serialize_message(self._filled({k: np.zeros(m) for k, (m, _) in slots.items()},
                                                    _MARK_SEC, _MARK_NANOSEC))
            pattern = struct.pack("<iI", _MARK_SEC, _MARK_NANOSEC)
            offset = marked.find(pattern)
            while offset >= 0:
                self._stamp_offsets.append(offset)
                offset = marked.find(pattern, offset + 1)
            if len(marked) != len(self._template) or len(self._stamp_offsets) != len(self._stamps(self._prototype)):
                raise ConfigError(f"SerializedWriter({self._type.__name__}): the stamps are not found once each")
        self._check({name: n for name, (n, _) in slots.items()})

    def _filled(self, values: dict[str, np.ndarray], sec: int, nanosec: int) -> Any:
        msg = self._prototype
        for name, fill in self._fills.items():
            fill(msg, values[name])
        for t in self._stamps(msg):
            t.sec, t.nanosec = int(sec) if sec < 2**31 else int(sec) - 2**32, int(nanosec)
        return msg

    def _stamps(self, msg: Any) -> list:
        if self._stamp is None:
            return []
        stamps = self._stamp(msg)
        return list(stamps) if isinstance(stamps, (list, tuple)) else [stamps]

    def _find(self, marked: bytes, pattern: bytes, what: str) -> int:
        """Offset of ``pattern`` (a slot's marker bytes) in ``marked``; it must occur once."""
        first = marked.find(pattern)
        if len(marked) != len(self._template) or first < 0 or marked.find(pattern, first + 1) >= 0:
            raise ConfigError(f"SerializedWriter({self._type.__name__}): slot {what!r} is not "
                              f"{len(pattern)} contiguous bytes")
        return first

    def _check(self, sizes: dict[str, int]) -> None:
        from rclpy.serialization import deserialize_message

        rng = np.random.default_rng(0)
        values = {name: rng.normal(size=n) for name, n in sizes.items()}
        stamp_s = 1234.5678901
        ours = deserialize_message(self.write(stamp_s, **values), self._type)
        sec, nanosec = _split(stamp_s)
        if ours != self._filled(values, sec, nanosec):
            raise ConfigError(f"SerializedWriter({self._type.__name__}): self-check against rclpy failed")

    def write(self, stamp_s: float | None = None, **values: Any) -> bytes:
        """The serialised message with ``stamp_s`` [s] and the given slots (other slots keep their
        last values); publish it with ``Publisher.publish``."""
        buf = self._buffer
        if stamp_s is not None and self._stamp_offsets:
            sec, nanosec = _split(stamp_s)
            for offset in self._stamp_offsets:
                struct.pack_into("<iI", buf, offset, sec, nanosec)
        for name, v in values.items():
            self._views[name][:] = v
        return bytes(buf)


class JointStateView:
    """A ``sensor_msgs/JointState`` read from its serialised form by :class:`JointStateReader`: the
    fields its subscribers use, ``name`` (a tuple, the same object while the names do not change),
    ``position``/``velocity``/``effort`` (read-only float64 arrays, empty when the message leaves
    the field empty), ``header.frame_id`` and ``header.stamp`` (a ``builtin_interfaces/Time``, built
    when asked for)."""

    __slots__ = ("name", "position", "velocity", "effort", "frame_id", "sec", "nanosec", "_stamp")

    def __init__(self, name: tuple, position: np.ndarray, velocity: np.ndarray, effort: np.ndarray, frame_id: str,
                 sec: int, nanosec: int) -> None:
        self.name, self.position, self.velocity, self.effort = name, position, velocity, effort
        self.frame_id, self.sec, self.nanosec = frame_id, sec, nanosec
        self._stamp: Any = None

    @property
    def header(self) -> JointStateView:
        return self  # ``msg.header.stamp`` / ``msg.header.frame_id`` as on the message

    @property
    def stamp(self) -> Any:
        if self._stamp is None:
            from builtin_interfaces.msg import Time

            self._stamp = Time(sec=self.sec, nanosec=self.nanosec)
        return self._stamp


class JointStateReader:
    """Reads serialised ``sensor_msgs/JointState`` (XCDR1, little-endian: what rclpy hands a raw
    subscription) into :class:`JointStateView` without rclpy's conversion, which builds one Python
    string per joint name at every message (for 76 joints, most of the 130-330 µs a subscriber pays
    per message). The frame id and names are decoded once and kept with their bytes; a message
    whose bytes there are the same reuses them, so a message costs a comparison of those bytes and
    three array views.

    At construction the reader checks itself against rclpy's own serialisation (names, empty and
    filled fields, stamp), else :class:`~kangaroo_wbc.errors.ConfigError` (the caller then
    subscribes to the typed message).

    Raises (:meth:`read`):
        InputError: bytes that are not a well-formed little-endian JointState.
    """

    def __init__(self) -> None:
        self._prefix = b""
        self._names: tuple = ()
        self._frame_id = ""
        self._check()

    def read(self, raw: bytes) -> JointStateView:
        """The view of one serialised message (see the class docstring)."""
        from kangaroo_wbc.errors import InputError

        try:
            if raw[:2] != b"\x00\x01":
                raise ValueError(f"encapsulation {raw[:2].hex()} is not little-endian CDR")
            sec, nanosec = struct.unpack_from("<iI", raw, 4)
            n = len(self._prefix)
            if n and raw[12:12 + n] == self._prefix:
                p = 12 + n
            else:
                p = self._names_from(raw)
            position, p = _doubles(raw, p)
            velocity, p = _doubles(raw, p)
            effort, p = _doubles(raw, p)
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"malformed serialised JointState: {exc}") from None
        return JointStateView(self._names, position, velocity, effort, self._frame_id, sec, nanosec)

    def _names_from(self, raw: bytes) -> int:
        """Decode the frame id and the names from offset 12; keep them with their bytes; return the
        offset after them."""
        frame_id, p = _string(raw, 12)
        (count,), p = struct.unpack_from("<I", raw, _align(p, 4)), _align(p, 4) + 4
        if count > len(raw):
            raise ValueError(f"{count} names in {len(raw)} bytes")
        names = []
        for _ in range(count):
            name, p = _string(raw, p)
            names.append(name)
        self._prefix, self._names, self._frame_id = bytes(raw[12:p]), tuple(names), frame_id
        return p

    def _check(self) -> None:
        from rclpy.serialization import serialize_message
        from sensor_msgs.msg import JointState

        from kangaroo_wbc.errors import ConfigError

        for names, frame, fields in ((["a", "bb", "ccc"], "f", ("position", "effort")),
                                     (["joint_1", "j2"], "", ("position", "velocity", "effort")),
                                     ([], "frame", ())):
            msg = JointState(name=names)
            msg.header.frame_id = frame
            msg.header.stamp.sec, msg.header.stamp.nanosec = 1234, 567890123
            for k, field in enumerate(fields):
                setattr(msg, field, [0.5 * k + i + 0.25 for i in range(len(names))])
            for _ in range(2):  # decoded, then from the kept names
                view = self.read(serialize_message(msg))
                fields_same = all(list(getattr(view, f)) == list(getattr(msg, f))
                                  for f in ("position", "velocity", "effort"))
                same = (list(view.name) == names and view.frame_id == frame and
                        (view.sec, view.nanosec) == (1234, 567890123) and fields_same)
                if not same:
                    raise ConfigError("JointStateReader: self-check against rclpy's serialisation failed")
        self._prefix, self._names, self._frame_id = b"", (), ""


class StampedView:
    """A message read by :class:`StampedReader`: ``header.stamp`` (``sec``, ``nanosec``,
    :attr:`stamp_s`), ``header.frame_id``, the message's other strings in order, and its float64
    fields as one read-only array (``values``; :attr:`StampedReader.slices` names its parts)."""

    __slots__ = ("sec", "nanosec", "frame_id", "strings", "values")

    def __init__(self, sec: int, nanosec: int, frame_id: str, strings: tuple, values: np.ndarray) -> None:
        self.sec, self.nanosec, self.frame_id, self.strings, self.values = sec, nanosec, frame_id, strings, values

    @property
    def stamp_s(self) -> float:
        """``header.stamp`` [s]."""
        return self.sec + 1e-9 * self.nanosec


class StampedReader:
    """Reads a serialised message made of a ``std_msgs/Header``, ``strings`` more strings and then
    float64 fields only (``geometry_msgs/WrenchStamped``, ``sensor_msgs/Imu``, ``nav_msgs/Odometry``)
    into a :class:`StampedView`, without rclpy's conversion into nested Python messages (about 50 µs
    of a 1 kHz subscriber's CPU per message; this costs a few µs).

    Args:
        msg_type: the message class (for the self-check).
        fields: the float64 fields in declaration order: ``(path, spec)``, ``spec`` the
            components of a vector (``"xyz"``, ``"xyzw"``) or the length of a fixed array.
        strings: the paths of the strings after ``header.frame_id`` (e.g. ``child_frame_id``).

    At construction the reader checks itself against rclpy's serialisation (frame ids of every
    alignment, each value in its slot), else :class:`~kangaroo_wbc.errors.ConfigError` (the caller
    then subscribes to the typed message).

    Raises (:meth:`read`):
        InputError: bytes that are not a well-formed little-endian message of this layout.
    """

    def __init__(self, msg_type: type, fields: Sequence[tuple[str, str | int]], strings: Sequence[str] = ()) -> None:
        self._type, self._fields, self._strings = msg_type, tuple(fields), tuple(strings)
        #: path -> the slice of :attr:`StampedView.values` that holds it
        self.slices: dict[str, slice] = {}
        k = 0
        for path, spec in self._fields:
            n = len(spec) if isinstance(spec, str) else int(spec)
            self.slices[path] = slice(k, k + n)
            k += n
        self.count = k
        self._check()

    def read(self, raw: bytes) -> StampedView:
        """The view of one serialised message (see the class docstring)."""
        from kangaroo_wbc.errors import InputError

        try:
            if raw[:2] != b"\x00\x01":
                raise ValueError(f"encapsulation {raw[:2].hex()} is not little-endian CDR")
            sec, nanosec = struct.unpack_from("<iI", raw, 4)
            frame_id, p = _string(raw, 12)
            others = []
            for _ in self._strings:
                text, p = _string(raw, p)
                others.append(text)
            p = _align(p, 8)
            if p + 8 * self.count > len(raw):
                raise ValueError(f"{self.count} values do not fit in {len(raw)} bytes")
            values = np.frombuffer(raw, dtype="<f8", count=self.count, offset=p)
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"malformed serialised {self._type.__name__}: {exc}") from None
        return StampedView(sec, nanosec, frame_id, tuple(others), values)

    def _check(self) -> None:
        from rclpy.serialization import serialize_message

        from kangaroo_wbc.errors import ConfigError

        expected = np.arange(self.count, dtype=float) * 0.5 + 0.25
        for length in range(9):  # every alignment of the doubles after the strings
            msg = self._type()
            msg.header.frame_id = "f" * length
            msg.header.stamp.sec, msg.header.stamp.nanosec = 1234, 567890123
            for i, path in enumerate(self._strings):
                _set_path(msg, path, "s" * (length + i))
            for path, spec in self._fields:
                part = expected[self.slices[path]]
                if isinstance(spec, str):
                    target = _get_path(msg, path)
                    for name, value in zip(spec, part):
                        setattr(target, name, float(value))
                else:
                    _set_path(msg, path, [float(v) for v in part])
            view = self.read(serialize_message(msg))
            same = (view.frame_id == "f" * length and (view.sec, view.nanosec) == (1234, 567890123)
                    and view.strings == tuple("s" * (length + i) for i in range(len(self._strings)))
                    and np.array_equal(view.values, expected))
            if not same:
                raise ConfigError(f"StampedReader({self._type.__name__}): self-check against rclpy's "
                                  "serialisation failed")


def _get_path(msg: Any, path: str) -> Any:
    for name in path.split("."):
        msg = getattr(msg, name)
    return msg


def _set_path(msg: Any, path: str, value: Any) -> None:
    head, _, last = path.rpartition(".")
    setattr(_get_path(msg, head) if head else msg, last, value)


#: The layouts of :func:`stamped_reader`: message type name -> (module, fields, strings).
_STAMPED_LAYOUTS: dict[str, tuple[str, tuple, tuple]] = {
    "WrenchStamped": ("geometry_msgs.msg", (("wrench.force", "xyz"), ("wrench.torque", "xyz")), ()),
    "Imu": ("sensor_msgs.msg", (("orientation", "xyzw"), ("orientation_covariance", 9),
                                ("angular_velocity", "xyz"), ("angular_velocity_covariance", 9),
                                ("linear_acceleration", "xyz"), ("linear_acceleration_covariance", 9)), ()),
    "Odometry": ("nav_msgs.msg", (("pose.pose.position", "xyz"), ("pose.pose.orientation", "xyzw"),
                                  ("pose.covariance", 36), ("twist.twist.linear", "xyz"),
                                  ("twist.twist.angular", "xyz"), ("twist.covariance", 36)), ("child_frame_id",)),
}
_STAMPED_READERS: dict[str, StampedReader | None] = {}


def stamped_reader(msg_type: type) -> StampedReader | None:
    """The process's :class:`StampedReader` of ``msg_type`` (``WrenchStamped``, ``Imu``,
    ``Odometry``; built and self-checked once), or None: no layout for that type, or its self-check
    failed on this middleware (the typed message is used instead)."""
    name = msg_type.__name__
    if name not in _STAMPED_READERS:
        layout = _STAMPED_LAYOUTS.get(name)
        reader = None
        if layout is not None and msg_type.__module__.startswith(layout[0]):
            try:
                reader = StampedReader(msg_type, layout[1], layout[2])
            except ConfigError:
                reader = None
        _STAMPED_READERS[name] = reader
    return _STAMPED_READERS[name]


def _align(p: int, n: int) -> int:
    """Offset ``p`` aligned to ``n`` bytes from the start of the CDR payload (after the 4-byte
    encapsulation header)."""
    return 4 + ((p - 4 + n - 1) // n) * n


def _string(raw: bytes, p: int) -> tuple[str, int]:
    p = _align(p, 4)
    (size,) = struct.unpack_from("<I", raw, p)  # with the terminating NUL
    end = p + 4 + size
    if size == 0 or end > len(raw) or raw[end - 1] != 0:
        raise ValueError(f"bad string at byte {p}")
    return raw[p + 4:end - 1].decode("utf-8"), end


def _doubles(raw: bytes, p: int) -> tuple[np.ndarray, int]:
    p = _align(p, 4)
    (count,) = struct.unpack_from("<I", raw, p)
    p += 4
    if count == 0:
        return _NO_DOUBLES, p
    p = _align(p, 8)
    end = p + 8 * count
    if end > len(raw):
        raise ValueError(f"{count} values do not fit in {len(raw)} bytes")
    return np.frombuffer(raw, dtype="<f8", count=count, offset=p), end


_NO_DOUBLES = np.zeros(0)
_NO_DOUBLES.setflags(write=False)


def stamp_of_serialized(raw: bytes) -> float:
    """``header.stamp`` [s] of a serialised message that starts with a ``std_msgs/Header`` (CDR:
    4-byte encapsulation, then ``int32 sec``, ``uint32 nanosec``, in the encapsulation's byte
    order): a subscriber can skip a sample without deserialising it."""
    order = "<" if raw[1] == 1 else ">"
    sec, nanosec = struct.unpack_from(order + "iI", raw, 4)
    return sec + 1e-9 * nanosec


def _split(stamp_s: float) -> tuple[int, int]:
    """``(sec, nanosec)`` of a stamp [s], rounded to the nanosecond (as ``seconds_to_time_msg``)."""
    sec, nanosec = divmod(round(stamp_s * 1e9), 1_000_000_000)
    return int(sec), int(nanosec)


def joint_state_writer(names: Sequence[str], fields: Sequence[str] = ("position", "velocity", "effort"),
                       frame_id: str = "") -> SerializedWriter:
    """A :class:`SerializedWriter` of ``sensor_msgs/JointState`` with the given joint names and
    float64 fields (the others empty); slots named like the fields."""
    from sensor_msgs.msg import JointState

    msg = JointState()
    msg.name = list(names)
    msg.header.frame_id = frame_id
    n = len(names)

    def setter(field: str):
        return lambda m, v: setattr(m, field, [float(x) for x in v])

    return SerializedWriter(msg, {f: (n, setter(f)) for f in fields}, stamp=lambda m: m.header.stamp)


def wrench_stamped_writer(frame_id: str) -> SerializedWriter:
    """A :class:`SerializedWriter` of ``geometry_msgs/WrenchStamped``; slot ``wrench`` = force
    then torque [N, N·m]."""
    from geometry_msgs.msg import WrenchStamped

    msg = WrenchStamped()
    msg.header.frame_id = frame_id

    def fill(m, v) -> None:
        f, t = m.wrench.force, m.wrench.torque
        f.x, f.y, f.z, t.x, t.y, t.z = (float(x) for x in v)

    return SerializedWriter(msg, {"wrench": (6, fill)}, stamp=lambda m: m.header.stamp)


def odometry_writer(frame_id: str, child_frame_id: str) -> SerializedWriter:
    """``nav_msgs/Odometry``: slots ``pose`` (position then quaternion x, y, z, w), ``twist``
    (linear then angular, in the child frame), ``pose_covariance``, ``twist_covariance`` (36 each)."""
    from nav_msgs.msg import Odometry

    msg = Odometry()
    msg.header.frame_id, msg.child_frame_id = frame_id, child_frame_id

    def pose(m, v) -> None:
        p, o = m.pose.pose.position, m.pose.pose.orientation
        p.x, p.y, p.z, o.x, o.y, o.z, o.w = (float(x) for x in v)

    def twist(m, v) -> None:
        a, b = m.twist.twist.linear, m.twist.twist.angular
        a.x, a.y, a.z, b.x, b.y, b.z = (float(x) for x in v)

    def covariance(path: str):
        return lambda m, v: setattr(getattr(m, path), "covariance", [float(x) for x in v])

    return SerializedWriter(msg, {"pose": (7, pose), "twist": (6, twist), "pose_covariance": (36, covariance("pose")),
                                  "twist_covariance": (36, covariance("twist"))}, stamp=lambda m: m.header.stamp)


def imu_writer(frame_id: str) -> SerializedWriter:
    """``sensor_msgs/Imu`` with an orientation (zero covariances): slots ``orientation``
    (x, y, z, w), ``angular_velocity`` [rad/s], ``linear_acceleration`` [m/s²]."""
    from sensor_msgs.msg import Imu

    msg = Imu()
    msg.header.frame_id = frame_id

    def vector(path: str, names: str):
        def fill(m, v) -> None:
            target = getattr(m, path)
            for name, x in zip(names, v):
                setattr(target, name, float(x))
        return fill

    return SerializedWriter(msg, {"orientation": (4, vector("orientation", "xyzw")),
                                  "angular_velocity": (3, vector("angular_velocity", "xyz")),
                                  "linear_acceleration": (3, vector("linear_acceleration", "xyz"))},
                            stamp=lambda m: m.header.stamp)


def point_stamped_writer(frame_id: str) -> SerializedWriter:
    """``geometry_msgs/PointStamped``: slot ``point`` (x, y, z) [m]."""
    from geometry_msgs.msg import PointStamped

    msg = PointStamped()
    msg.header.frame_id = frame_id

    def fill(m, v) -> None:
        m.point.x, m.point.y, m.point.z = (float(x) for x in v)

    return SerializedWriter(msg, {"point": (3, fill)}, stamp=lambda m: m.header.stamp)


def tf_message_writer(pairs: Sequence[tuple[str, str]]) -> SerializedWriter:
    """``tf2_msgs/TFMessage`` of one transform per ``(parent frame, child frame)``, every
    transform stamped alike; slot ``t<i>``: translation then quaternion (x, y, z, w) of the i-th."""
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    msg = TFMessage()
    for parent, child in pairs:
        t = TransformStamped()
        t.header.frame_id, t.child_frame_id = parent, child
        msg.transforms.append(t)

    def fill(i: int):
        def put(m, v) -> None:
            tr, rot = m.transforms[i].transform.translation, m.transforms[i].transform.rotation
            tr.x, tr.y, tr.z, rot.x, rot.y, rot.z, rot.w = (float(x) for x in v)
        return put

    return SerializedWriter(msg, {f"t{i}": (7, fill(i)) for i in range(len(pairs))},
                            stamp=lambda m: [t.header.stamp for t in m.transforms])
