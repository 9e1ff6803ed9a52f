"""A recorded closed-loop run as the messages of the node graph's topics (what the bag holds).

:func:`run_messages` turns the per-tick log of a
:class:`~kangaroo_wbc_tools.pipeline.closed_loop.ClosedLoopRun` into ``rosbags`` message objects, in time
order, on the absolute names the node graph uses without a namespace (``docs/interface.md``):

============================================  ==========================  ========================
topic                                         type                        rate
============================================  ==========================  ========================
``/robot_description``,                       ``std_msgs/String``         once (transient local)
``/ground_truth/robot_description``
``/tf_static``                                ``tf2_msgs/TFMessage``      once (transient local)
``/tf``                                       ``tf2_msgs/TFMessage``      ``tf_rate_hz`` (100 Hz)
``/joint_states``                             ``sensor_msgs/JointState``  every recorded tick
``/estimation/base_odometry``                 ``nav_msgs/Odometry``       every recorded tick
``/actuators/state``, ``/actuators/command``  ``sensor_msgs/JointState``  every recorded tick
``/imu/data``                                 ``sensor_msgs/Imu``         every recorded tick
``/contact/<sole>/wrench``                    ``WrenchStamped``           every recorded tick
``/zmp``                                      ``PointStamped``            every recorded tick in contact
``/wbc/com_target``                           ``PointStamped``            every recorded tick
``/sim/ground_truth/joint_states``            ``sensor_msgs/JointState``  every recorded tick
``/sim/ground_truth/base_odometry``           ``nav_msgs/Odometry``       every recorded tick
``/sim/ground_truth/<sole>/wrench``           ``WrenchStamped``           every recorded tick
``/sim/ground_truth/zmp``, ``.../com``        ``PointStamped``            every recorded tick
``/diagnostics``                              ``DiagnosticArray``         1 Hz (simulated time)
============================================  ==========================  ========================

"Every recorded tick" is the control rate (1 kHz) divided by the writer's ``decimation``; the log
starts when the estimators first give a state (after the encoder calibration, on the crane).
``/tf`` carries ``odom → base_link`` (estimated base) and every movable joint's child link in its
parent (:class:`~kangaroo_wbc.model.link_poses.LinkPoses`, robot_state_publisher's contract), and
the same for the simulator's truth under the ``ground_truth/`` frame prefix (the ghost robot);
``/tf_static`` the fixed joints of both. Stamps are on the system clock: the run's wall-clock start
plus simulated time, so viewers show the date the run was made.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from kangaroo_wbc.components.samples import format_value
from kangaroo_wbc.control.behaviours import footstep_markers
from kangaroo_wbc.model.link_poses import LinkPoses

#: default rate of ``/tf`` [Hz] (simulated time)
TF_RATE_HZ = 100.0
#: frame prefix of the simulator's true robot (the ghost), as the launched graph names it
GHOST_PREFIX = "ground_truth/"
#: topics whose only message is latched (transient-local QoS in the bag's metadata)
LATCHED_TOPICS = ("/robot_description", "/ground_truth/robot_description", "/tf_static")


@dataclass(frozen=True)
class BagMessage:
    """One message: absolute topic, ROS 2 type name, stamp [ns since the epoch], rosbags object."""

    topic: str
    msgtype: str
    stamp_ns: int
    message: object


def run_urdf_text(run) -> str:
    """The URDF of the run's model (its source file, else the package's Kangaroo URDF)."""
    source = Path(getattr(run.clm, "source", ""))
    if source.suffix.lower() == ".urdf" and source.is_file():
        return source.read_text()
    from kangaroo_wbc.robots.kangaroo.files import kangaroo_files

    return kangaroo_files()[0].read_text()


class RunTopics:
    """Builds the bag's messages of one run (see the module docstring for topics and rates).

    Args:
        run: a :class:`~kangaroo_wbc_tools.pipeline.closed_loop.ClosedLoopRun`, finished or interrupted
            at any tick (columns of unequal length are cut to the shortest).
        typestore: the ``rosbags`` type store the messages are built from.
        decimation: every N-th logged tick (N ≥ 1).
        tf_rate_hz: largest rate of ``/tf`` [Hz] on simulated time.
    """

    def __init__(self, run, typestore, decimation: int = 1, tf_rate_hz: float = TF_RATE_HZ) -> None:
        self.run, self.T = run, typestore.types
        self.decimation, self.tf_period_s = int(decimation), 1.0 / tf_rate_hz
        self.urdf_text = run_urdf_text(run)
        fixed_base = pin.buildModelFromXML(self.urdf_text)
        self.joint_names = [name for name, joint in zip(fixed_base.names[1:], fixed_base.joints[1:], strict=True)
                            if joint.nq == 1]
        self.poses = LinkPoses(self.urdf_text, fixed_base, self.joint_names)
        m = run.clm.model
        self._idx_q = np.array([m.joints[m.getJointId(n)].idx_q for n in self.joint_names], dtype=int)
        self._idx_v = np.array([m.joints[m.getJointId(n)].idx_v for n in self.joint_names], dtype=int)
        epoch = getattr(run, "wall_start_epoch_s", None)
        self.epoch_ns = round((time.time() if epoch is None else epoch) * 1e9)
        self.columns = self._columns(run.log)

    @staticmethod
    def _columns(log) -> dict[str, np.ndarray]:
        """The log's columns cut to the ticks every column has (a run interrupted mid-record)."""
        rows = {k: v for k, v in log.rows.items() if v}
        n = min((len(v) for v in rows.values()), default=0)
        return {k: np.asarray(v[:n], dtype=float) for k, v in rows.items()}

    def stamp_ns(self, t: float) -> int:
        """Stamp [ns since the epoch] of simulated time ``t`` [s]."""
        return self.epoch_ns + round(t * 1e9)

    # ------------------------------------------------------------------ messages
    def messages(self) -> Iterator[BagMessage]:
        """Every message of the run, in stamp order."""
        yield from self.latched(self.stamp_ns(0.0))
        cols, statuses = self.columns, list(getattr(self.run, "status_log", []))
        t = cols.get("t", np.zeros(0))
        last_tf: float | None = None
        footsteps = list(getattr(self.run, "footstep_log", []))
        for k in range(0, len(t), self.decimation):
            tk = float(t[k])
            while statuses and statuses[0][0] <= tk:
                yield self.diagnostics(*statuses.pop(0))
            while footsteps and footsteps[0][0] <= tk:
                yield self.footsteps(*footsteps.pop(0))
            if last_tf is None or not last_tf <= tk < last_tf + self.tf_period_s - 1e-9:
                last_tf = tk
                yield from self.tf(k, tk)
            yield from self.tick(k, tk)
        for entry in statuses:
            yield self.diagnostics(*entry)

    def latched(self, stamp_ns: int) -> Iterator[BagMessage]:
        """``/robot_description`` (and the ghost's), ``/tf_static`` (both robots' fixed joints)."""
        T = self.T
        for topic in ("/robot_description", "/ground_truth/robot_description"):
            yield BagMessage(topic, "std_msgs/msg/String", stamp_ns, T["std_msgs/msg/String"](data=self.urdf_text))
        header = self._header(stamp_ns, "")
        transforms = [self._transform(header, prefix + x.parent, prefix + x.child, x.translation, x.quaternion_xyzw)
                      for prefix in ("", GHOST_PREFIX) for x in self.poses.fixed()]
        yield BagMessage("/tf_static", "tf2_msgs/msg/TFMessage", stamp_ns,
                         T["tf2_msgs/msg/TFMessage"](transforms=transforms))

    def tf(self, k: int, t: float) -> Iterator[BagMessage]:
        """``/tf`` at tick ``k``: the estimated robot, then the true one (ghost frames)."""
        stamp_ns, cols, transforms = self.stamp_ns(t), self.columns, []
        header = self._header(stamp_ns, "")
        for key, prefix in (("q_est", ""), ("q_true", GHOST_PREFIX)):
            if key not in cols or not np.all(np.isfinite(cols[key][k])):
                continue
            q = cols[key][k]
            transforms.append(self._transform(header, "odom", prefix + "base_link", q[:3], q[3:7]))
            transforms += [self._transform(header, prefix + x.parent, prefix + x.child, x.translation,
                                           x.quaternion_xyzw) for x in self.poses.moving(q[self._idx_q])]
        if transforms:
            yield BagMessage("/tf", "tf2_msgs/msg/TFMessage", stamp_ns,
                             self.T["tf2_msgs/msg/TFMessage"](transforms=transforms))

    def tick(self, k: int, t: float) -> Iterator[BagMessage]:
        """The 1 kHz topics at tick ``k`` (those whose columns the log holds)."""
        cols, stamp_ns, soles = self.columns, self.stamp_ns(t), list(self.run.soles)
        names = list(self.run.clm.actuated_joint_names)
        if "act_position" in cols:
            yield self._joint_state("/actuators/state", stamp_ns, names, cols["act_position"][k],
                                    cols["act_velocity"][k], cols["act_effort"][k])
        if "imu_orientation_xyzw" in cols and np.all(np.isfinite(cols["imu_orientation_xyzw"][k])):
            yield self._imu(stamp_ns, cols["imu_orientation_xyzw"][k], cols["imu_angular_velocity"][k],
                            cols["imu_linear_acceleration"][k])
        for key, prefix, topic in (("est", "", ""), ("true", GHOST_PREFIX, "/sim/ground_truth")):
            if f"q_{key}" in cols:
                q, v = cols[f"q_{key}"][k], cols[f"v_{key}"][k]
                yield self._joint_state(f"{topic}/joint_states", stamp_ns, self.joint_names, q[self._idx_q],
                                        v[self._idx_v], None)
                yield self._odometry(f"{topic or '/estimation'}/base_odometry", stamp_ns, prefix + "base_link", q, v)
            if f"wrench_{key}_in_sole" in cols:
                for i, sole in enumerate(soles):
                    yield self._wrench(f"{topic or '/contact'}/{sole}/wrench", stamp_ns, sole,
                                       cols[f"wrench_{key}_in_sole"][k, i])
        if "tau" in cols:
            yield self._joint_state("/actuators/command", stamp_ns, names, None, None, cols["tau"][k])
        valid = cols["zmp_valid"][k] > 0.5 if "zmp_valid" in cols else True
        for key, topic, shown in (("zmp_est", "/zmp", valid), ("zmp_true", "/sim/ground_truth/zmp", True),
                                  ("com_ref", "/wbc/com_target", True), ("com_true", "/sim/ground_truth/com", True)):
            if key in cols and shown and np.all(np.isfinite(cols[key][k])):
                yield self._point(topic, stamp_ns, cols[key][k])

    def footsteps(self, t: float, boxes: list) -> BagMessage:
        """``/wbc/footsteps``: a walk's soles on the floor and its planned footsteps as boxes in
        ``odom`` (:meth:`~kangaroo_wbc.control.behaviours.Walk.footstep_boxes`), as the node
        publishes them at each new plan."""
        T, stamp_ns = self.T, self.stamp_ns(t)
        header = self._header(stamp_ns, "odom")

        def marker(i, action, spec=np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], colour=(0.0,) * 4, scale=(0.0,) * 3):
            pose = T["geometry_msgs/msg/Pose"](position=self._vector(spec[:3], "Point"),
                                               orientation=self._quaternion(spec[3:7]))
            return T["visualization_msgs/msg/Marker"](
                header=header, ns="footsteps", id=i, type=1, action=action, pose=pose, scale=self._vector(scale),
                color=T["std_msgs/msg/ColorRGBA"](*colour), lifetime=T["builtin_interfaces/msg/Duration"](0, 0),
                frame_locked=False, points=[], colors=[], texture_resource="",
                texture=T["sensor_msgs/msg/CompressedImage"](self._header(stamp_ns, ""), "", np.zeros(0, np.uint8)),
                uv_coordinates=[], text="", mesh_resource="",
                mesh_file=T["visualization_msgs/msg/MeshFile"]("", np.zeros(0, np.uint8)),
                mesh_use_embedded_materials=False)

        markers = [marker(0, 3)]  # DELETEALL, then the boxes (ADD)
        for i, (spec, colour, scale) in enumerate(footstep_markers(boxes, self.run.wbc.contacts), start=1):
            markers.append(marker(i, 0, spec, colour, scale))
        return BagMessage("/wbc/footsteps", "visualization_msgs/msg/MarkerArray", stamp_ns,
                          T["visualization_msgs/msg/MarkerArray"](markers=markers))

    def diagnostics(self, t: float, by_node: dict) -> BagMessage:
        """``/diagnostics``: the components' statuses named ``"<node>: <check>"`` as the nodes name them."""
        T, stamp_ns = self.T, self.stamp_ns(t)
        status = [T["diagnostic_msgs/msg/DiagnosticStatus"](
            level=int(s.level), name=f"{node}: {s.name}", message=s.message, hardware_id="kangaroo",
            values=[T["diagnostic_msgs/msg/KeyValue"](key=str(key), value=format_value(value))
                    for key, value in s.values.items()])
            for node, statuses in by_node.items() for s in statuses]
        return BagMessage("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", stamp_ns,
                          T["diagnostic_msgs/msg/DiagnosticArray"](header=self._header(stamp_ns, ""), status=status))

    # ------------------------------------------------------------------ builders
    def _header(self, stamp_ns: int, frame: str):
        T = self.T
        sec, nanosec = divmod(stamp_ns, 1_000_000_000)
        stamp = T["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec)
        return T["std_msgs/msg/Header"](stamp=stamp, frame_id=frame)

    def _vector(self, xyz, kind: str = "Vector3"):
        return self.T[f"geometry_msgs/msg/{kind}"](x=float(xyz[0]), y=float(xyz[1]), z=float(xyz[2]))

    def _quaternion(self, xyzw):
        return self.T["geometry_msgs/msg/Quaternion"](x=float(xyzw[0]), y=float(xyzw[1]), z=float(xyzw[2]),
                                                      w=float(xyzw[3]))

    def _transform(self, header, parent: str, child: str, translation, xyzw):
        T = self.T
        header = T["std_msgs/msg/Header"](stamp=header.stamp, frame_id=parent)
        return T["geometry_msgs/msg/TransformStamped"](
            header=header, child_frame_id=child,
            transform=T["geometry_msgs/msg/Transform"](translation=self._vector(translation),
                                                       rotation=self._quaternion(xyzw)))

    def _joint_state(self, topic, stamp_ns, names, position, velocity, effort) -> BagMessage:
        empty = np.zeros(0)
        msg = self.T["sensor_msgs/msg/JointState"](
            header=self._header(stamp_ns, ""), name=list(names),
            position=empty if position is None else np.asarray(position, float),
            velocity=empty if velocity is None else np.asarray(velocity, float),
            effort=empty if effort is None or not np.all(np.isfinite(effort)) else np.asarray(effort, float))
        return BagMessage(topic, "sensor_msgs/msg/JointState", stamp_ns, msg)

    def _odometry(self, topic, stamp_ns, child: str, q, v) -> BagMessage:
        """Pose of the base in ``odom``; twist in the base (pinocchio's free-flyer velocity, REP 105)."""
        T, zeros = self.T, np.zeros(36)
        msg = T["nav_msgs/msg/Odometry"](
            header=self._header(stamp_ns, "odom"), child_frame_id=child,
            pose=T["geometry_msgs/msg/PoseWithCovariance"](
                pose=T["geometry_msgs/msg/Pose"](position=self._vector(q[:3], "Point"),
                                                 orientation=self._quaternion(q[3:7])), covariance=zeros),
            twist=T["geometry_msgs/msg/TwistWithCovariance"](
                twist=T["geometry_msgs/msg/Twist"](linear=self._vector(v[:3]), angular=self._vector(v[3:6])),
                covariance=zeros))
        return BagMessage(topic, "nav_msgs/msg/Odometry", stamp_ns, msg)

    def _imu(self, stamp_ns, xyzw, gyro, acc) -> BagMessage:
        T, unknown = self.T, np.zeros(9)
        msg = T["sensor_msgs/msg/Imu"](
            header=self._header(stamp_ns, "imu"), orientation=self._quaternion(xyzw), orientation_covariance=unknown,
            angular_velocity=self._vector(gyro), angular_velocity_covariance=unknown,
            linear_acceleration=self._vector(acc), linear_acceleration_covariance=unknown)
        return BagMessage("/imu/data", "sensor_msgs/msg/Imu", stamp_ns, msg)

    def _wrench(self, topic, stamp_ns, frame: str, wrench) -> BagMessage:
        """Wrench ``[f; τ]`` by the ground on the sole, in the sole frame, torque about its origin."""
        T = self.T
        msg = T["geometry_msgs/msg/WrenchStamped"](
            header=self._header(stamp_ns, frame),
            wrench=T["geometry_msgs/msg/Wrench"](force=self._vector(wrench[:3]), torque=self._vector(wrench[3:6])))
        return BagMessage(topic, "geometry_msgs/msg/WrenchStamped", stamp_ns, msg)

    def _point(self, topic, stamp_ns, xyz) -> BagMessage:
        msg = self.T["geometry_msgs/msg/PointStamped"](header=self._header(stamp_ns, "odom"),
                                                       point=self._vector(xyz, "Point"))
        return BagMessage(topic, "geometry_msgs/msg/PointStamped", stamp_ns, msg)
