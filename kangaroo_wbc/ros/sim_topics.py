"""The ``sim`` node's hardware faces and its ground truth, as topics.

Two faces of the simulated robot, one per ``interface`` parameter, each with ``publish(act, enc,
imu)`` (called by the simulation loop every tick; returns what the composed deployment's sample
listeners get) and the command subscriptions that hand the commands to the node
(``node.submit_command``, ``node.reject_command``):

* :class:`NativeFace`: the package's contract (``actuators/state``, ``passive_encoders/state``,
  ``imu/data`` out; ``actuators/command`` in, applied only from the ``command_source`` node);
* :class:`Ros2ControlFace`: what ``joint_state_broadcaster`` and ``imu_sensor_broadcaster``
  publish (topics, names, interfaces, frame ids, 1 kHz, reliable keep-last 10 as their
  ``SystemDefaultsQoS``) and the effort controllers' ``<controller>/commands``
  (:class:`~kangaroo_wbc.components.ros2_control.system.SimulatedRos2ControlSystem`: their
  behaviour). A second publisher on a command topic (the graph shows a node other than
  ``command_source``) is an ERROR naming the topic and the publishers, and that topic's commands
  are refused while it lasts (the controller keeps its last one; the simulator's watchdog acts).
  With ankle F/T sensors in both files, each one's ``<broadcaster>/wrench`` as
  ``force_torque_sensor_broadcaster`` publishes it (:mod:`kangaroo_wbc.sim.ankle_ft`: the wrench
  the foot exerts on the leg, in the sensor frame; only while somebody subscribes).
  It also stands for the controller manager: ``controller_manager/switch_controller`` and
  ``list_controllers`` (:func:`~kangaroo_wbc.ros.controller_switch.offer_controller_manager`); the
  effort controllers are inactive at boot (their commands not applied) and the robot is held until
  a switch makes them all active.

:class:`GroundTruthPublisher` publishes the simulator's truth (``sim/ground_truth/*``, TF
``odom → ground_truth/base_link``, the bench's plate), only to subscribed topics.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray

from kangaroo_wbc.components.samples import (
    ActuatorCommand,
    ActuatorSample,
    EncoderSample,
    ImuSample,
)
from kangaroo_wbc.components.single_writer import SingleWriterGuard
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import (
    JointIndexMap,
    arrays_to_transform_stamped,
    quaternion_wxyz_to_xyzw,
    time_msg_to_seconds,
)
from kangaroo_wbc.ros.serialized import (
    imu_writer,
    joint_state_writer,
    odometry_writer,
    wrench_stamped_writer,
)


def _unit(q: Any) -> tuple[float, float, float, float]:
    x, y, z, w = (float(c) for c in q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    return x / n, y / n, z / n, w / n


class NativeFace:
    """The package's own hardware-interface topics (module docstring)."""

    def __init__(self, node: Any, chained: bool) -> None:
        robot, stream = node.robot, node.create_stream_publisher
        self.node = node
        self._writers = {"act": joint_state_writer(robot.actuator_names),
                         "enc": joint_state_writer(robot.passive_encoder_names, ("position",)),
                         "imu": imu_writer("imu")}
        self._pub = {"act": stream(JointState, "actuators/state", qos.SENSOR_STATE),
                     "enc": stream(JointState, "passive_encoders/state", qos.SENSOR_STATE),
                     "imu": stream(Imu, "imu/data", qos.SENSOR_STATE)}
        self._act_map = JointIndexMap(robot.actuator_names, what="actuator")
        self.guard = SingleWriterGuard("actuators/command")
        if not chained:
            node.create_joint_state_subscription("actuators/command", self._on_command, qos.COMMAND)
        if node.params.command_source:  # composed: no subscription, but another publisher is still reported
            node.watch_single_writer("actuators/command", node.params.command_source)

    def publish(self, act: ActuatorSample, enc: EncoderSample, imu: ImuSample | None) -> tuple:
        w, pub, t = self._writers, self._pub, act.stamp_s  # preserialised: microseconds per message
        if pub["act"].wanted():
            pub["act"].publish(w["act"].write(t, position=act.position, velocity=act.velocity, effort=act.effort))
        if pub["enc"].wanted():
            pub["enc"].publish(w["enc"].write(t, position=enc.position))
        if imu is not None and pub["imu"].wanted():
            pub["imu"].publish(w["imu"].write(t, orientation=_unit(imu.orientation_xyzw),
                                              angular_velocity=imu.angular_velocity,
                                              linear_acceleration=imu.linear_acceleration))
        return act, enc, imu

    def _on_command(self, msg: JointState) -> None:
        wall, node = time.monotonic(), self.node
        stamp = time_msg_to_seconds(msg.header.stamp)
        source = node.params.command_source
        if source and msg.header.frame_id != source:  # a second command source: never applied
            return node.reject_command(f"source {msg.header.frame_id!r} is not the controller {source!r}", wall)
        topic = "actuators/command"  # the graph: more than one publisher, whatever their tags
        why = self.guard.admit(node.writer_count(topic), node.other_writers(topic))
        if why:  # two writers (even with the controller's tag): neither is applied, the watchdog damps
            return node.reject_command(why, wall)
        try:
            forces = self._act_map.from_joint_state(msg, required=("effort",)).effort
        except InputError as exc:
            return node.reject_command(str(exc), wall, stamp)
        assert forces is not None  # required: from_joint_state raised otherwise
        node.submit_command(ActuatorCommand(forces, stamp), wall)

    def statuses(self) -> list:
        return [self.guard.status()]


class Ros2ControlFace:
    """The broadcasters' and effort controllers' topics of the simulated ros2_control system."""

    def __init__(self, node: Any, system: Any, config: Any, chained: bool, ft_sensors: tuple = ()) -> None:
        from kangaroo_wbc.components.ros2_control.system import JOINT_STATE_FRAME_ID

        self.node, self.system = node, system
        stream = node.create_stream_publisher
        # relative names: the broadcasters publish in the controller manager's namespace (the node's)
        self._pub_js = stream(JointState, config.joint_states_topic().lstrip("/"), qos.SENSOR_STATE)
        self._pub_imu = stream(Imu, config.imu_topic().lstrip("/"), qos.SENSOR_STATE)
        self._w_js = joint_state_writer(system.names, ("position", "velocity", "effort"), frame_id=JOINT_STATE_FRAME_ID)
        self._w_imu = imu_writer(system.imu_frame_id)
        self.topics = {c: t.lstrip("/") for c, t in config.command_topics().items()}
        self._ft = None
        if ft_sensors:  # the ankle sensors: ~/wrench of each force_torque_sensor_broadcaster
            from kangaroo_wbc.sim.ankle_ft import SimulatedAnkleFt

            self._ft = SimulatedAnkleFt(node.robot.sim, {s.frame_id: s.sole for s in ft_sensors})
            topics = config.wrench_topics()
            self._ft_out = [(s.frame_id, stream(WrenchStamped, topics[s.broadcaster].lstrip("/"), qos.SENSOR_STATE),
                             wrench_stamped_writer(s.frame_id)) for s in ft_sensors]
        source = node.params.command_source
        self.guards = {c: SingleWriterGuard(t, name=f"command writers {c}") for c, t in self.topics.items()}
        for controller, topic in self.topics.items():
            if not chained:
                node.create_subscription(Float64MultiArray, topic, lambda msg, c=controller: self.on_data(c, msg.data),
                                         qos.SENSOR_STATE)
            if source:
                node.watch_single_writer(topic, source)
        from kangaroo_wbc.ros.controller_switch import offer_controller_manager

        self._lock = threading.Lock()  # the switch (executor) and the commands (composed: the loop thread)
        self.services = offer_controller_manager(node, system, self._switched, self._lock)

    def _switched(self) -> None:
        """After a switch: the robot is held (crane, hold PD) until every effort controller is active."""
        self.node.set_controller_ready(self.system.effort_active)

    def publish(self, act: ActuatorSample, enc: EncoderSample, imu: ImuSample | None) -> tuple:
        state = self.system.broadcast(act, enc, imu, self.node.robot.encoder_offsets)
        t = state.stamp_s
        if self._pub_js.wanted():
            self._pub_js.publish(self._w_js.write(t, position=state.position, velocity=state.velocity,
                                                  effort=state.effort))
        if imu is not None and self._pub_imu.wanted():
            self._pub_imu.publish(self._w_imu.write(t, orientation=_unit(imu.orientation_xyzw),
                                                    angular_velocity=imu.angular_velocity,
                                                    linear_acceleration=imu.linear_acceleration))
        if self._ft is not None and any(pub.wanted() for _, pub, _ in self._ft_out):
            reading = self._ft.read()
            for frame, pub, writer in self._ft_out:
                pub.publish(writer.write(t, wrench=reading[frame]))
        return (state,)

    def on_data(self, controller: str, data: Any, receive_wall_s: float | None = None) -> None:
        """One ``<controller>/commands`` message (executor thread, or in-process: composed)."""
        node = self.node
        wall = time.monotonic() if receive_wall_s is None else receive_wall_s
        topic = self.topics[controller]
        others = node.other_writers(topic)  # a foreign writer alone is refused too (as before)
        why = self.guards[controller].admit(max(node.writer_count(topic), 1 + len(others)), others)
        if why:
            return node.report_events(self.system.refuse(controller, why))
        with self._lock:
            cmd, events = self.system.on_command(controller, data, node.awaited_stamp_s)
        node.report_events(events)
        if cmd is not None:
            node.submit_command(cmd, wall)

    def statuses(self) -> list:
        return [self.system.status(), *(g.status() for g in self.guards.values())]


def make_face(node: Any, chained: bool) -> NativeFace | Ros2ControlFace:
    """The face of the node's ``interface`` parameter.

    Raises:
        ConfigError: ros2_control on a rig, or files that do not fit (``hardware_map``, ``ros2_controllers``).
    """
    p = node.params
    if p.interface != "ros2_control":
        return NativeFace(node, chained)
    from kangaroo_wbc.components.ros2_control.settings import (
        ankle_ft_sensors,
        build_system,
        load_hardware,
    )
    from kangaroo_wbc.errors import ConfigError
    from kangaroo_wbc.ros.node_support import load_model

    if p.rig:
        raise ConfigError(f"node {node.get_name()!r}: interface ros2_control simulates the robot, not a rig")
    system = build_system(load_model(""), p, node.robot.actuator_names, node.robot.passive_encoder_names)
    hw, config = load_hardware(p)
    return Ros2ControlFace(node, system, config, chained, tuple(ankle_ft_sensors(hw, config)))


class GroundTruthPublisher:
    """``sim/ground_truth/*``, TF ``odom → ground_truth/base_link`` and the bench's ``rig/plate_wrench``."""

    def __init__(self, node: Any) -> None:
        import mujoco

        from kangaroo_wbc.ros.tf import make_tf_broadcaster

        p, sim = node.params, node.robot.sim
        self.node, self.sim = node, sim
        jid = [mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in sim.joint_names]
        self._qadr, self._dadr = sim.model.jnt_qposadr[jid], sim.model.jnt_dofadr[jid]
        self._w_js = joint_state_writer(sim.joint_names, ("position", "velocity"))
        self._w_odom = odometry_writer("odom", "ground_truth/base_link")
        stream, pub = node.create_stream_publisher, node.create_publisher
        self._pub_js = stream(JointState, "sim/ground_truth/joint_states", qos.SENSOR_STATE)
        self._pub_odom = stream(Odometry, "sim/ground_truth/base_odometry", qos.SENSOR_STATE)
        self._pub_w = {s: pub(WrenchStamped, f"sim/ground_truth/{s}/wrench", qos.SENSOR_STATE) for s in sim.sole_names}
        self._w_wrench = {s: wrench_stamped_writer(s) for s in sim.sole_names}
        self._plate_pub = pub(WrenchStamped, "rig/plate_wrench", qos.SENSOR_STATE) if p.rig else None
        self._w_plate = wrench_stamped_writer("force_plate")
        self._tf = make_tf_broadcaster(node) if p.tf_rate_hz > 0 else None
        self._next_tf = 0.0
        self._wrench_listened = False
        #: the rig's force plate: (force on the plate [N], world axes; stamp [s]) of the latest sample
        self.plate_reading: tuple[np.ndarray, float] | None = None

    def publish(self, stamp: Time, stamp_s: float) -> None:
        """Only to topics somebody listens to (the wrenches' subscriber counts refreshed every 100
        ticks; the joint states and odometry are preserialised streams)."""
        p, sim, ticks = self.node.params, self.sim, self.node.robot.counts["ticks"]
        if self._plate_pub is not None:  # the rig's force plate: what the bench's load cell reads
            force = sim.plate_force()
            self.plate_reading = (force, stamp_s)
            self._plate_pub.publish(self._w_plate.write(stamp_s, wrench=np.concatenate([force, np.zeros(3)])))
        if ticks % 100 == 0:
            self._wrench_listened = any(w.get_subscription_count() for w in self._pub_w.values())
        if not p.publish_ground_truth or ticks % p.ground_truth_decimation:
            return
        d, t = sim.data, stamp_s
        if self._pub_js.wanted():
            self._pub_js.publish(self._w_js.write(t, position=d.qpos[self._qadr], velocity=d.qvel[self._dadr]))
        tf_due = self._tf is not None and sim.time >= self._next_tf
        odom_wanted = sim.floating_base and self._pub_odom.wanted()
        if sim.floating_base and (odom_wanted or tf_due):  # free joint: p, quat w x y z, v (world), ω (base)
            quat_xyzw = quaternion_wxyz_to_xyzw(d.qpos[3:7])
            if odom_wanted:
                twist = np.concatenate([d.xmat[1].reshape(3, 3).T @ d.qvel[0:3], d.qvel[3:6]])
                self._pub_odom.publish(self._w_odom.write(t, pose=np.concatenate([d.qpos[0:3], quat_xyzw]),
                                                          twist=twist))
            if tf_due:
                self._next_tf = sim.time + 1.0 / p.tf_rate_hz - 1e-9
                assert self._tf is not None  # tf_due implies a broadcaster
                self._tf.sendTransform(arrays_to_transform_stamped(
                    d.qpos[0:3], quat_xyzw, parent_frame="odom", child_frame="ground_truth/base_link", stamp=stamp))
        if self._wrench_listened:
            for sole, c in sim.contact_wrenches().items():
                self._pub_w[sole].publish(self._w_wrench[sole].write(
                    t, wrench=np.concatenate([c.force_in_sole, c.torque_in_sole])))


__all__ = ["NativeFace", "Ros2ControlFace", "GroundTruthPublisher", "make_face"]
