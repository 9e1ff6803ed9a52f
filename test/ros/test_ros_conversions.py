"""Unit tests of kangaroo_wbc.ros.conversions: round trips, name-addressed reordering, error paths."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("sensor_msgs.msg", reason="ROS 2 message packages are not importable")

from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import Pose, Quaternion, Twist, Wrench  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402

from kangaroo_wbc.errors import InputError  # noqa: E402
from kangaroo_wbc.ros import conversions as cv  # noqa: E402

SEED = 20240611
NAMES = [f"{side}_{j}_actuator" for side in ("left", "right")
         for j in ("hip_yaw", "hip_pitch", "hip_roll", "knee", "ankle_a", "ankle_b")]
ATOL = 1e-12


def random_quaternion_xyzw(rng: np.random.Generator) -> np.ndarray:
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def shuffled_state(rng: np.random.Generator, names=NAMES):
    """A JointState listing ``names`` in random order, and the values in the given order."""
    n = len(names)
    pos, vel, eff = rng.normal(size=(3, n))
    order = rng.permutation(n)
    msg = JointState(
        name=[names[i] for i in order],
        position=pos[order].tolist(),
        velocity=vel[order].tolist(),
        effort=eff[order].tolist(),
    )
    msg.header.stamp = Time(sec=12, nanosec=500_000_000)
    return msg, pos, vel, eff


# --------------------------------------------------------------------------------------------
# JointIndexMap


class TestJointIndexMap:
    def test_reorders_by_name(self) -> None:
        rng = np.random.default_rng(SEED)
        jmap = cv.JointIndexMap(NAMES, what="actuator")
        for _ in range(5):
            msg, pos, vel, eff = shuffled_state(rng)
            arrays = jmap.from_joint_state(msg, required=("position", "velocity", "effort"))
            np.testing.assert_array_equal(arrays.position, pos)
            np.testing.assert_array_equal(arrays.velocity, vel)
            np.testing.assert_array_equal(arrays.effort, eff)
            assert arrays.stamp_s == pytest.approx(12.5)

    def test_round_trip_through_message(self) -> None:
        rng = np.random.default_rng(SEED)
        jmap = cv.JointIndexMap(NAMES)
        pos, vel, eff = rng.normal(size=(3, len(NAMES)))
        msg = jmap.to_joint_state(pos, vel, eff, stamp=Time(sec=3, nanosec=7))
        assert list(msg.name) == NAMES
        back = jmap.from_joint_state(msg, required=("position", "velocity", "effort"))
        np.testing.assert_array_equal(back.position, pos)
        np.testing.assert_array_equal(back.velocity, vel)
        np.testing.assert_array_equal(back.effort, eff)
        assert back.stamp_s == pytest.approx(3 + 7e-9)

    def test_reuses_message_and_leaves_absent_fields_empty(self) -> None:
        jmap = cv.JointIndexMap(NAMES)
        msg = JointState()
        out = jmap.to_joint_state(effort=np.ones(12), msg=msg, frame_id="base_link")
        assert out is msg
        assert len(msg.position) == 0 and len(msg.velocity) == 0 and list(msg.effort) == [1.0] * 12
        assert msg.header.frame_id == "base_link"
        arrays = jmap.from_joint_state(msg, required=("effort",))
        assert arrays.position is None and arrays.velocity is None

    def test_permutation_is_cached_per_name_tuple(self) -> None:
        jmap = cv.JointIndexMap(NAMES)
        names = list(reversed(NAMES))
        first = jmap.permutation(names)
        assert jmap.permutation(list(names)) is first
        assert jmap.permutation(tuple(names)) is first
        assert not first.flags.writeable
        np.testing.assert_array_equal(first, np.arange(len(NAMES))[::-1])

    def test_cache_is_bounded(self) -> None:
        rng = np.random.default_rng(SEED)
        jmap = cv.JointIndexMap(NAMES)
        for _ in range(100):
            jmap.permutation([NAMES[i] for i in rng.permutation(len(NAMES))])
        assert len(jmap._cache) <= jmap._CACHE_SIZE

    def test_out_buffer(self) -> None:
        jmap = cv.JointIndexMap(["a", "b"])
        out = np.empty(2)
        result = jmap.reorder(["b", "a"], [2.0, 1.0], out=out)
        assert result is out
        np.testing.assert_array_equal(out, [1.0, 2.0])

    def test_allow_extra_ignores_unknown_names(self) -> None:
        jmap = cv.JointIndexMap(["b", "d"], allow_extra=True)
        values = jmap.reorder(["a", "b", "c", "d"], [1.0, 2.0, math.nan, 4.0])
        np.testing.assert_array_equal(values, [2.0, 4.0])  # the NaN of an ignored joint is fine

    def test_float64_multi_array_mirror(self) -> None:
        jmap = cv.JointIndexMap(NAMES, what="actuator")
        msg = jmap.to_float64_multi_array(np.arange(12.0))
        assert list(msg.data) == list(np.arange(12.0))
        assert msg.layout.dim[0].size == 12 and msg.layout.dim[0].label == "actuator"
        with pytest.raises(InputError, match="expected 12 values"):
            jmap.to_float64_multi_array(np.arange(11.0))

    @pytest.mark.parametrize(
        ("names", "match"),
        [
            ([], "no joint names"),
            (["a", "b", "a"], r"duplicated joint names \['a'\]"),
            (["a", ""], "non-empty strings"),
            (["a", 3], "non-empty strings"),
        ],
    )
    def test_invalid_expected_names(self, names, match) -> None:
        with pytest.raises(InputError, match=match):
            cv.JointIndexMap(names)

    def test_unknown_name_suggests(self) -> None:
        jmap = cv.JointIndexMap(NAMES, what="actuator")
        msg_names = [*NAMES[:-1], "right_ankle_b_actuatr"]
        with pytest.raises(InputError, match=r"unknown actuator names \['right_ankle_b_actuatr'\].*Did you mean"):
            jmap.reorder(msg_names, np.zeros(12))

    def test_missing_names(self) -> None:
        jmap = cv.JointIndexMap(NAMES)
        with pytest.raises(InputError, match=r"lacks 1 of 12 expected joint names: \['right_ankle_b_actuator'\]"):
            jmap.reorder(NAMES[:-1], np.zeros(11))
        extra = cv.JointIndexMap(NAMES, allow_extra=True)
        with pytest.raises(InputError, match="lacks 1 of 12"):
            extra.reorder([*NAMES[:-1], "other"], np.zeros(12))

    def test_duplicated_message_names(self) -> None:
        jmap = cv.JointIndexMap(NAMES)
        with pytest.raises(InputError, match=r"duplicated joint names \['left_hip_yaw_actuator'\]"):
            jmap.reorder([*NAMES, NAMES[0]], np.zeros(13))

    def test_length_mismatch(self) -> None:
        jmap = cv.JointIndexMap(NAMES)
        with pytest.raises(InputError, match="velocity: 11 values for 12 joint names"):
            jmap.reorder(NAMES, np.zeros(11), field="velocity")
        msg = JointState(name=NAMES, position=[0.0] * 12, velocity=[0.0] * 5)
        with pytest.raises(InputError, match="velocity: 5 values for 12"):
            jmap.from_joint_state(msg)

    @pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
    def test_non_finite_values_name_the_joint(self, bad) -> None:
        jmap = cv.JointIndexMap(NAMES)
        values = np.zeros(12)
        values[4] = bad
        with pytest.raises(InputError, match=rf"effort: non-finite value for joints \['{NAMES[4]}'\]"):
            jmap.reorder(NAMES, values, field="effort")
        with pytest.raises(InputError, match="non-finite"):
            jmap.to_joint_state(position=values)

    def test_non_numeric_values(self) -> None:
        jmap = cv.JointIndexMap(["a"])
        with pytest.raises(InputError, match="not numbers"):
            jmap.reorder(["a"], ["x"])

    def test_required_field_missing(self) -> None:
        jmap = cv.JointIndexMap(NAMES)
        msg = JointState(name=NAMES, position=[0.0] * 12)
        with pytest.raises(InputError, match="no velocity values"):
            jmap.from_joint_state(msg, required=("position", "velocity"))
        with pytest.raises(InputError, match="expected 12 values, got 3"):
            jmap.to_joint_state(position=np.zeros(3))


# --------------------------------------------------------------------------------------------
# quaternions


class TestQuaternions:
    def test_order_swap(self) -> None:
        np.testing.assert_array_equal(cv.quaternion_wxyz_to_xyzw([4, 1, 2, 3]), [1, 2, 3, 4])

    def test_message_round_trip_and_normalisation(self) -> None:
        rng = np.random.default_rng(SEED)
        q = random_quaternion_xyzw(rng)
        msg = cv.xyzw_to_quaternion_msg(3.0 * q)
        np.testing.assert_allclose(cv.quaternion_msg_to_xyzw(msg), q, atol=ATOL)

    def test_pinocchio_convention(self) -> None:
        """90° about z maps x to y, whichever way pinocchio is fed; the scalar constructor is (w,x,y,z)."""
        pin = pytest.importorskip("pinocchio")
        s = math.sqrt(0.5)
        q_xyzw = np.array([0.0, 0.0, s, s])
        quat = cv.xyzw_to_pin_quaternion(q_xyzw)
        np.testing.assert_allclose(quat.toRotationMatrix() @ [1, 0, 0], [0, 1, 0], atol=ATOL)
        np.testing.assert_allclose(quat.coeffs(), q_xyzw, atol=ATOL)
        np.testing.assert_allclose(pin.Quaternion(s, 0.0, 0.0, s).coeffs(), q_xyzw, atol=ATOL)
        rng = np.random.default_rng(SEED)
        q = random_quaternion_xyzw(rng)
        np.testing.assert_allclose(cv.xyzw_to_pin_quaternion(q).coeffs(), q, atol=ATOL)

    def test_mujoco_convention(self) -> None:
        """The same rotation matrix from pinocchio (xyzw) and MuJoCo (wxyz)."""
        mujoco = pytest.importorskip("mujoco")
        pytest.importorskip("pinocchio")
        rng = np.random.default_rng(SEED)
        q = random_quaternion_xyzw(rng)
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, q[[3, 0, 1, 2]])
        np.testing.assert_allclose(
            mat.reshape(3, 3), cv.xyzw_to_pin_quaternion(q).toRotationMatrix(), atol=1e-12
        )

    @pytest.mark.parametrize(
        ("q", "match"),
        [([0, 0, 0, 0], "zero quaternion"), ([0, 0, math.nan, 1], "non-finite"),
         ([0, 0, 1], "expected 4 values"), (["a", 0, 0, 1], "cannot convert")],
    )
    def test_invalid(self, q, match) -> None:
        with pytest.raises(InputError, match=match):
            cv.normalize_quaternion(q)
        with pytest.raises(InputError, match=match):
            cv.xyzw_to_quaternion_msg(q)

    def test_default_message_quaternion_is_rejected(self) -> None:
        with pytest.raises(InputError, match="zero quaternion"):
            cv.quaternion_msg_to_xyzw(Quaternion(x=0.0, y=0.0, z=0.0, w=0.0))


# --------------------------------------------------------------------------------------------
# poses, twists, odometry, wrenches, IMU


def test_pose_twist_transform_round_trips() -> None:
    rng = np.random.default_rng(SEED)
    p, v, w = rng.normal(size=(3, 3))
    q = random_quaternion_xyzw(rng)
    p2, q2 = cv.pose_msg_to_arrays(cv.arrays_to_pose_msg(p, q))
    np.testing.assert_allclose(p2, p, atol=ATOL)
    np.testing.assert_allclose(q2, q, atol=ATOL)
    v2, w2 = cv.twist_msg_to_arrays(Twist(linear=cv.array_to_vector3_msg(v), angular=cv.array_to_vector3_msg(w)))
    np.testing.assert_array_equal(v2, v)
    np.testing.assert_array_equal(w2, w)
    tf = cv.arrays_to_transform_stamped(p, q, parent_frame="odom", child_frame="base_link",
                                        stamp=Time(sec=1))
    assert (tf.header.frame_id, tf.child_frame_id, tf.header.stamp.sec) == ("odom", "base_link", 1)
    np.testing.assert_allclose(cv.vector3_msg_to_array(tf.transform.translation), p, atol=ATOL)
    np.testing.assert_allclose(cv.quaternion_msg_to_xyzw(tf.transform.rotation), q, atol=ATOL)
    point = cv.array_to_point_msg(p)
    np.testing.assert_array_equal(cv.vector3_msg_to_array(point), p)


def test_pose_errors() -> None:
    with pytest.raises(InputError, match="zero quaternion"):
        cv.pose_msg_to_arrays(Pose(orientation=Quaternion(x=0.0, y=0.0, z=0.0, w=0.0)))
    with pytest.raises(InputError, match="expected 3 values"):
        cv.arrays_to_pose_msg([0, 0], [0, 0, 0, 1])
    t = Twist()
    t.linear.x = math.nan
    with pytest.raises(InputError, match="non-finite"):
        cv.twist_msg_to_arrays(t)


def test_odometry_round_trip() -> None:
    """The one Odometry encoder (:func:`~kangaroo_wbc.ros.serialized.odometry_writer`) → the decoder."""
    pytest.importorskip("rclpy")
    from test.ros.messages import arrays_to_odometry_msg

    rng = np.random.default_rng(SEED)
    p, v, w = rng.normal(size=(3, 3))
    q = random_quaternion_xyzw(rng)
    cov = np.diag(np.arange(1.0, 7.0))
    msg = arrays_to_odometry_msg(p, q, v, w, frame_id="odom", child_frame_id="base_link",
                                 stamp=cv.seconds_to_time_msg(4.25), pose_covariance=cov,
                                 twist_covariance=cov.reshape(-1))
    assert isinstance(msg, Odometry)
    odo = cv.odometry_msg_to_arrays(msg)
    np.testing.assert_allclose(odo.position, p, atol=ATOL)
    np.testing.assert_allclose(odo.quaternion_xyzw, q, atol=ATOL)
    np.testing.assert_array_equal(odo.linear, v)
    np.testing.assert_array_equal(odo.angular, w)
    assert (odo.frame_id, odo.child_frame_id, odo.stamp_s) == ("odom", "base_link", 4.25)
    np.testing.assert_array_equal(np.reshape(msg.pose.covariance, (6, 6)), cov)


def test_wrench_linear_first() -> None:
    """The one WrenchStamped encoder (:func:`~kangaroo_wbc.ros.serialized.wrench_stamped_writer`) → the decoder."""
    pytest.importorskip("rclpy")
    from geometry_msgs.msg import WrenchStamped
    from rclpy.serialization import deserialize_message

    from kangaroo_wbc.ros.serialized import wrench_stamped_writer

    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    stamped = deserialize_message(wrench_stamped_writer("left_sole").write(2.0, wrench=w), WrenchStamped)
    msg = stamped.wrench
    assert (msg.force.x, msg.force.z, msg.torque.x, msg.torque.z) == (1.0, 3.0, 4.0, 6.0)
    assert (stamped.header.frame_id, stamped.header.stamp.sec) == ("left_sole", 2)
    np.testing.assert_array_equal(cv.wrench_msg_to_vector(msg), w)
    bad = Wrench()
    bad.torque.y = math.inf
    with pytest.raises(InputError, match="wrench: non-finite"):
        cv.wrench_msg_to_vector(bad)


def test_imu_round_trip_with_and_without_orientation() -> None:
    """The one Imu encoder (:func:`~kangaroo_wbc.ros.serialized.imu_writer`) → the decoder."""
    pytest.importorskip("rclpy")
    from test.ros.messages import arrays_to_imu_msg

    rng = np.random.default_rng(SEED)
    gyro, acc = rng.normal(size=(2, 3))
    q = random_quaternion_xyzw(rng)
    msg = arrays_to_imu_msg(gyro, acc, frame_id="imu_link", stamp=Time(sec=5), quaternion_xyzw=q)
    imu = cv.imu_msg_to_arrays(msg)
    np.testing.assert_allclose(imu.quaternion_xyzw, q, atol=ATOL)
    np.testing.assert_array_equal(imu.angular_velocity, gyro)
    np.testing.assert_array_equal(imu.linear_acceleration, acc)
    assert (imu.frame_id, imu.stamp_s) == ("imu_link", 5.0)
    no_q = cv.imu_msg_to_arrays(arrays_to_imu_msg(gyro, acc, frame_id="imu_link", stamp=Time()))
    assert no_q.quaternion_xyzw is None
    raw = Imu()
    raw.orientation_covariance[0] = -1.0  # REP 145: no orientation; the zero quaternion is ignored
    assert cv.imu_msg_to_arrays(raw).quaternion_xyzw is None
    raw.angular_velocity.x = math.nan
    with pytest.raises(InputError, match="non-finite"):
        cv.imu_msg_to_arrays(raw)


# --------------------------------------------------------------------------------------------
# time


def test_time_round_trips() -> None:
    for t in (0.0, 1e-9, 0.5, 1.75, 1_700_000_000.123456):
        msg = cv.seconds_to_time_msg(t)
        assert 0 <= msg.nanosec < 1_000_000_000
        assert cv.time_msg_to_seconds(msg) == pytest.approx(t, abs=1e-6)
    carry = cv.seconds_to_time_msg(1.9999999999)
    assert (carry.sec, carry.nanosec) == (2, 0)
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(InputError, match="finite and non-negative"):
            cv.seconds_to_time_msg(bad)


def test_to_seconds_accepts_clock_types() -> None:
    pytest.importorskip("rclpy", reason="rclpy is not importable")
    from rclpy.duration import Duration
    from rclpy.time import Time as RclpyTime

    assert cv.to_seconds(2) == 2.0
    assert cv.to_seconds(Time(sec=2, nanosec=500_000_000)) == 2.5
    assert cv.to_seconds(RclpyTime(seconds=3, nanoseconds=250_000_000)) == 3.25
    assert cv.to_seconds(Duration(seconds=0.125)) == 0.125
    with pytest.raises(InputError, match="cannot read a time"):
        cv.to_seconds("now")


def test_stamp_staleness() -> None:
    stamp = Time(sec=10, nanosec=0)
    assert cv.check_stamp_fresh(stamp, 10.004, 0.005, what="imu/data") == pytest.approx(0.004)
    with pytest.raises(InputError, match=r"imu/data: stale by 6\.0 ms \(limit 5\.0 ms\)"):
        cv.check_stamp_fresh(stamp, 10.006, 0.005, what="imu/data")
    with pytest.raises(InputError, match="in the future"):
        cv.check_stamp_fresh(stamp, 9.9, 0.005)
    cv.check_stamp_fresh(stamp, 9.999, 0.005, max_future_s=0.002)
    with pytest.raises(InputError, match="zero"):
        cv.check_stamp_fresh(Time(), 0.001, 0.005)
    assert cv.check_stamp_fresh(Time(), 0.001, 0.005, allow_zero=True) == pytest.approx(0.001)
