"""Unit tests of :mod:`kangaroo_wbc.ros.serialized`: what the preserialised writers publish is
what rclpy reads back, for every message the 1 kHz loop publishes that way."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from geometry_msgs.msg import PointStamped, WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402

from kangaroo_wbc.errors import ConfigError  # noqa: E402
from kangaroo_wbc.ros.conversions import seconds_to_time_msg  # noqa: E402
from kangaroo_wbc.ros.serialized import (  # noqa: E402
    SerializedWriter,
    imu_writer,
    joint_state_writer,
    odometry_writer,
    point_stamped_writer,
    wrench_stamped_writer,
)

RNG = np.random.default_rng(7)
STAMPS = [0.0, 0.001, 12.999999999, 1795673514.537831909]


@pytest.mark.parametrize("stamp_s", STAMPS)
def test_joint_state_round_trip(stamp_s):
    names = [f"joint_{i}" for i in range(76)]
    w = joint_state_writer(names, ("position", "velocity"), frame_id="base")
    pos, vel = RNG.normal(size=76), RNG.normal(size=76)
    msg = deserialize_message(w.write(stamp_s, position=pos, velocity=vel), JointState)
    assert list(msg.name) == names and msg.header.frame_id == "base" and len(msg.effort) == 0
    np.testing.assert_array_equal(msg.position, pos)
    np.testing.assert_array_equal(msg.velocity, vel)
    assert msg.header.stamp == seconds_to_time_msg(stamp_s)  # the same rounding as the message path


def test_every_writer_round_trips_and_keeps_unwritten_slots():
    w = wrench_stamped_writer("left_sole")
    m = deserialize_message(w.write(1.5, wrench=[1, 2, 3, 4, 5, 6]), WrenchStamped)
    assert (m.wrench.force.z, m.wrench.torque.x, m.header.frame_id) == (3.0, 4.0, "left_sole")
    p = point_stamped_writer("odom")
    m = deserialize_message(p.write(2.0, point=[0.1, 0.2, 0.3]), PointStamped)
    assert (m.point.x, m.point.z, m.header.stamp.sec) == (0.1, 0.3, 2)
    o = odometry_writer("odom", "base_link")
    cov = np.arange(36.0)
    o.write(pose_covariance=cov)  # written once, kept by the next writes
    m = deserialize_message(o.write(3.0, pose=[1, 2, 3, 0, 0, 0, 1], twist=np.arange(6.0)), Odometry)
    assert m.child_frame_id == "base_link" and m.pose.pose.orientation.w == 1.0 and m.twist.twist.angular.z == 5.0
    np.testing.assert_array_equal(m.pose.covariance, cov)
    i = imu_writer("imu")
    m = deserialize_message(i.write(4.0, orientation=[0, 0, 0, 1], angular_velocity=[1, 2, 3],
                                    linear_acceleration=[0, 0, 9.81]), Imu)
    assert m.linear_acceleration.z == 9.81 and m.angular_velocity.y == 2.0 and m.orientation_covariance[0] == 0.0


def test_a_slot_that_is_not_contiguous_doubles_is_refused():
    msg = JointState()
    msg.name = ["a", "b"]

    def fill(m, v) -> None:  # two doubles in two sequences: not one contiguous slot
        m.position, m.velocity = [float(v[0])], [float(v[1])]

    with pytest.raises(ConfigError, match="contiguous"):
        SerializedWriter(msg, {"both": (2, fill)}, stamp=lambda m: m.header.stamp)


def test_construction_does_not_depend_on_the_serialiser_s_uninitialised_padding():
    """rclpy leaves padding bytes uninitialised: whatever they hold, every slot is found once and
    the self-check passes (construction repeated, 76-joint and 12-joint messages)."""
    names = [f"joint_{i}" for i in range(76)]
    for _ in range(100):
        joint_state_writer(names, ("position", "velocity"))
        joint_state_writer(names[:12])
        odometry_writer("odom", "base_link")


def test_tf_message_writer_stamps_every_transform() -> None:
    from tf2_msgs.msg import TFMessage

    from kangaroo_wbc.ros.serialized import tf_message_writer

    pairs = [("base", "a"), ("a", "b"), ("b", "c")]
    writer = tf_message_writer(pairs)
    poses = np.random.default_rng(1).normal(size=(3, 7))
    msg = deserialize_message(writer.write(12.25, **{f"t{i}": poses[i] for i in range(3)}), TFMessage)
    assert [(t.header.frame_id, t.child_frame_id) for t in msg.transforms] == pairs
    for t, pose in zip(msg.transforms, poses, strict=True):
        assert (t.header.stamp.sec, t.header.stamp.nanosec) == (12, 250_000_000)
        tr, rot = t.transform.translation, t.transform.rotation
        assert [tr.x, tr.y, tr.z, rot.x, rot.y, rot.z, rot.w] == list(pose)


# ---------------------------------------------------------------------- JointStateReader
def _joint_state(names, fields, frame="odom", sec=17, nanosec=250_000_000):
    msg = JointState(name=list(names))
    msg.header.frame_id, msg.header.stamp.sec, msg.header.stamp.nanosec = frame, sec, nanosec
    for field in fields:
        setattr(msg, field, list(RNG.normal(size=len(names))))
    return msg


@pytest.mark.parametrize("fields", [("position",), ("position", "velocity"), ("velocity", "effort"),
                                    ("position", "velocity", "effort"), ()])
@pytest.mark.parametrize("names", [["j"], ["a", "bb", "ccc", "dddd"], [f"leg_joint_{i}" for i in range(76)]])
def test_reader_reads_what_rclpy_serialises(names, fields) -> None:
    """Every name length (string padding), every combination of empty and filled fields (the
    alignment of the doubles after an empty sequence), twice (decoded, then from the kept names)."""
    from rclpy.serialization import serialize_message

    from kangaroo_wbc.ros.serialized import JointStateReader

    reader = JointStateReader()
    for _ in range(2):
        msg = _joint_state(names, fields)
        view = reader.read(serialize_message(msg))
        assert view.name == tuple(names) and view.header.frame_id == "odom"
        assert view.header.stamp == msg.header.stamp
        for field in ("position", "velocity", "effort"):
            np.testing.assert_array_equal(getattr(view, field), np.asarray(getattr(msg, field), dtype=float))


def test_reader_follows_a_change_of_names_or_frame() -> None:
    from rclpy.serialization import serialize_message

    from kangaroo_wbc.ros.serialized import JointStateReader

    reader = JointStateReader()
    first = reader.read(serialize_message(_joint_state(["a", "b"], ("position",))))
    second = reader.read(serialize_message(_joint_state(["b", "a"], ("position",))))
    third = reader.read(serialize_message(_joint_state(["b", "a"], ("position",), frame="base_link")))
    assert (first.name, second.name, third.name) == (("a", "b"), ("b", "a"), ("b", "a"))
    assert third.header.frame_id == "base_link"


@pytest.mark.parametrize("cut", [0, 1, 5, 13, 40, -9, -13])
def test_reader_refuses_truncated_or_corrupt_bytes_with_an_input_error(cut) -> None:
    from rclpy.serialization import serialize_message

    from kangaroo_wbc.errors import InputError
    from kangaroo_wbc.ros.serialized import JointStateReader

    raw = serialize_message(_joint_state(["a", "bb", "ccc"], ("position", "velocity")))
    reader = JointStateReader()
    with pytest.raises(InputError, match="malformed serialised JointState"):
        reader.read(raw[:cut])
    corrupt = bytearray(raw)
    corrupt[24:28] = (10**9).to_bytes(4, "little")  # the name count (after "odom"): none could fit
    with pytest.raises(InputError):
        JointStateReader().read(bytes(corrupt))
    big_endian = b"\x00\x00" + raw[2:]
    with pytest.raises(InputError, match="not little-endian"):
        reader.read(big_endian)


def test_the_joint_index_map_reads_a_view_as_it_reads_the_message() -> None:
    """What the nodes do with it: the same arrays, in the expected order, as from the message."""
    from rclpy.serialization import serialize_message

    from kangaroo_wbc.ros.conversions import JointIndexMap
    from kangaroo_wbc.ros.serialized import JointStateReader

    names = [f"j{i}" for i in range(12)]
    msg = _joint_state(names, ("position", "velocity", "effort"))
    joints = JointIndexMap(names[::-1])
    ours = joints.from_joint_state(JointStateReader().read(serialize_message(msg)), required=("effort",))
    theirs = joints.from_joint_state(msg, required=("effort",))
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


def _random_stamped(msg_type, frame: str, child: str = ""):
    """A message of ``msg_type`` with every float64 field random and the given frames."""
    msg = msg_type()
    msg.header.frame_id, msg.header.stamp.sec, msg.header.stamp.nanosec = frame, 42, 123_456_789

    def fill(m) -> None:
        for name, kind in m.get_fields_and_field_types().items():
            if kind == "double":
                setattr(m, name, float(RNG.normal()))
            elif kind.startswith("double["):
                setattr(m, name, [float(x) for x in RNG.normal(size=len(getattr(m, name)))])
            elif hasattr(getattr(m, name), "get_fields_and_field_types") and name != "header":
                fill(getattr(m, name))

    fill(msg)
    if child:
        msg.child_frame_id = child
    return msg


@pytest.mark.parametrize("frame", ["", "a", "imu", "left_sole", "base_link_7"])
def test_stamped_readers_convert_as_the_typed_messages(frame) -> None:
    """Every frame-id length (the alignment of the doubles after it): the conversions give the
    same arrays from the bytes as from the message rclpy builds."""
    from rclpy.serialization import serialize_message

    from kangaroo_wbc.ros.conversions import (
        imu_msg_to_arrays,
        odometry_msg_to_arrays,
        wrench_stamped_to_arrays,
    )
    from kangaroo_wbc.ros.serialized import stamped_reader

    for msg_type, convert in ((WrenchStamped, wrench_stamped_to_arrays), (Imu, imu_msg_to_arrays),
                              (Odometry, odometry_msg_to_arrays)):
        assert stamped_reader(msg_type) is not None, f"{msg_type.__name__}: the reader's self-check failed"
        msg = _random_stamped(msg_type, frame, child="base" + frame if msg_type is Odometry else "")
        ours, theirs = convert(serialize_message(msg)), convert(msg)
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            if isinstance(b, np.ndarray):
                np.testing.assert_array_equal(a, b)
            else:
                assert a == b
    imu = _random_stamped(Imu, frame)
    imu.orientation_covariance[0] = -1.0  # REP 145: no orientation
    assert imu_msg_to_arrays(serialize_message(imu)).quaternion_xyzw is None


def test_stamped_reader_refuses_truncated_or_corrupt_bytes_and_bad_values() -> None:
    from rclpy.serialization import serialize_message

    from kangaroo_wbc.errors import InputError
    from kangaroo_wbc.ros.conversions import (
        imu_msg_to_arrays,
        odometry_msg_to_arrays,
        wrench_stamped_to_arrays,
    )

    raw = serialize_message(_random_stamped(Odometry, "odom", child="base_link"))
    for cut in (0, 3, 11, 20, len(raw) - 8):
        with pytest.raises(InputError, match="malformed serialised Odometry"):
            odometry_msg_to_arrays(raw[:cut])
    with pytest.raises(InputError, match="not little-endian"):
        wrench_stamped_to_arrays(b"\x00\x00" + serialize_message(WrenchStamped())[2:])
    zero = Imu()  # an all-zero orientation: refused as from the typed message
    zero.orientation.w = 0.0
    with pytest.raises(InputError, match="zero quaternion"):
        imu_msg_to_arrays(serialize_message(zero))
    odom = _random_stamped(Odometry, "odom", child="base_link")
    odom.twist.twist.angular.y = float("nan")
    with pytest.raises(InputError, match="non-finite"):
        odometry_msg_to_arrays(serialize_message(odom))
