"""``contact_wrench_estimator`` node: quasi-static sole wrenches, CoPs and ZMP (paper Section VI-B).

A thin adapter around :class:`~kangaroo_wbc.components.contact_wrench.ContactWrenchEstimation`
(input order, staleness and restart handling, the estimator of eq. (43)-(47)). Event-driven on
``actuators/state`` (effort = motor torque [N·m]) with the newest ``joint_states`` and
``estimation/base_odometry``; publishes ``contact/<sole>/wrench`` (ground on sole, sole frame),
``contact/<sole>/cop`` (sole frame, while loaded), ``zmp`` (odom, while in contact) and, decimated,
``contact/markers``, every output with the actuator sample's stamp. Topics: ``docs/interface.md``.
The state is paired by :class:`~kangaroo_wbc.ros.state_pairing.StatePairing` (``wait=False``): a
``joint_states`` sample carries the stamp of its base's odometry when that is older by more than
``max_input_age_s``.
The actuator modes the controller publishes on the latched ``actuators/modes`` (a locked or limp
actuator, ``docs/morphology.md``) are applied before the next sample, in every deployment, and so
are the payloads it publishes on the latched ``model/payloads`` (the model's inertias). With
``ankle_ft_broadcasters`` it compares each listed ankle F/T's ``<broadcaster>/wrench`` with the
estimate (``ankle_ft`` status; :mod:`~kangaroo_wbc.ros.ankle_ft_topics`). With ``rig``
(``one_leg``) it runs on the test bench's model, its one sole, the actuated rows only
(:func:`~kangaroo_wbc.components.assembly.build_wrench`).

With ``payload_identification`` the component weighs the robot while it stands still
(:mod:`~kangaroo_wbc.estimation.payload_identification`; its parameters are the node's
``payload_*``, the identifier's configuration fields prefixed) and each new confident estimate of the
unmodelled payload goes out on the latched ``payload/identified`` (``geometry_msgs/InertiaStamped``,
odom frame: ``m`` the mass [kg], ``com.x``/``com.y`` its CoM [m] — NaN while the mass is too small to
place it — ``com.z`` NaN: the height is unobservable standing; the inertia terms 0, a point mass).
Its ``payload`` status reaches ``/diagnostics``. The robot floating only (not on the bench).
"""

from __future__ import annotations

from typing import cast

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import InertiaStamped, PointStamped, WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from visualization_msgs.msg import Marker, MarkerArray

from kangaroo_wbc.components.assembly import apply_ready, build_wrench
from kangaroo_wbc.components.samples import ActuatorSample
from kangaroo_wbc.components.wrench_params import ContactWrenchParams
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.estimation.contact_wrench import (
    ContactWrenchEstimate,
)
from kangaroo_wbc.estimation.payload_identification import (
    PayloadEstimate,
)
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.ankle_ft_topics import subscribe_ankle_ft
from kangaroo_wbc.ros.conversions import JointIndexMap, array_to_point_msg, seconds_to_time_msg
from kangaroo_wbc.ros.diagnostics import actuator_modes_from_msg
from kangaroo_wbc.ros.node_base import KangarooNode, main_for
from kangaroo_wbc.ros.node_support import load_node_model
from kangaroo_wbc.ros.payloads import PayloadFollower
from kangaroo_wbc.ros.serialized import point_stamped_writer, wrench_stamped_writer
from kangaroo_wbc.ros.state_pairing import StatePairing

#: the latched topic of the identified payload (module docstring)
IDENTIFIED_PAYLOAD_TOPIC = "payload/identified"


class ContactWrenchNode(KangarooNode):
    """Contact wrench, CoP and ZMP estimation behind the topic contract.

    Args:
        clm: a loaded model to share (composed deployment); None loads ``urdf_dir``.
        chained: True when the composed deployment feeds :meth:`process` directly (the state and
            torque topics are then not subscribed; the outputs are still published).
    """

    def __init__(self, clm=None, chained: bool = False) -> None:
        super().__init__("contact_wrench_estimator", ContactWrenchParams)
        p = self.params
        self.clm = clm = clm or load_node_model(p.urdf_dir, p.rig, p.rig_leg)
        self.component = component = build_wrench(clm, p)  # on a bench: the actuated rows, its one sole
        #: the soles estimated (the parameter's, or the bench's one)
        self.sole_frames = soles = list(component.settings.sole_frames)
        self._act = JointIndexMap(clm.actuated_joint_names, what="actuator")
        #: joint_states + odometry → the newest state, stamped with the oldest of its inputs
        self.pairing = StatePairing(clm, lambda q, v, stamp_s, _, source: component.on_state(q, v, stamp_s, source),
                                    self.throttled.warning, p.max_input_age_s, ("position",), wait=False,
                                    reject=component.reject, in_order=component.in_order)
        self._next_marker = 0.0
        pub, stream = self.create_publisher, self.create_stream_publisher
        self._pub_w = [stream(WrenchStamped, f"contact/{s}/wrench", qos.SENSOR_STATE) for s in soles]
        self._pub_cop = [stream(PointStamped, f"contact/{s}/cop", qos.SENSOR_STATE) for s in soles]
        self._pub_zmp = stream(PointStamped, "zmp", qos.SENSOR_STATE)
        self._pub_markers = pub(MarkerArray, "contact/markers", qos.VISUALIZATION)
        #: the identified payload last published (None: none yet)
        self.payload_published: PayloadEstimate | None = None
        self._pub_payload = (pub(InertiaStamped, IDENTIFIED_PAYLOAD_TOPIC, qos.LATCHED)
                             if self.component.payload is not None else None)
        self._w_wrench = [wrench_stamped_writer(s) for s in soles]  # preserialised
        self._w_cop = [point_stamped_writer(s) for s in soles]
        self._w_zmp = point_stamped_writer(p.odom_frame)
        if not chained:
            sub = self.create_subscription
            self.create_joint_state_subscription("actuators/state", self._on_actuators, qos.SENSOR_LATEST)
            if p.sim_clock == "stamps":
                self.take_clock_from_stamps("actuators/state")
            self.create_joint_state_subscription("joint_states", self.pairing.on_joints, qos.SENSOR_LATEST)
            self.create_stamped_subscription(Odometry, "estimation/base_odometry", self.pairing.on_odometry,
                                             qos.SENSOR_LATEST)
            sub(Bool, "wbc/ready", lambda msg: apply_ready(msg.data, bool(p.rig), wrench=self.component), qos.LATCHED)
        #: the modes of actuators/modes not applied yet (applied in the thread that runs the component)
        self._pending_modes: dict[str, str] | None = None
        self._modes = dict.fromkeys(clm.actuated_joint_names, "active")  # the modes applied (component's start)
        self.create_subscription(DiagnosticStatus, "actuators/modes", self._on_modes, qos.LATCHED)
        self._payloads = PayloadFollower(self, clm)  # the controller's model/payloads
        ft_topics = subscribe_ankle_ft(self, self.component)  # optional: ankle_ft_broadcasters
        self.get_logger().info(f"contact_wrench_estimator: soles {soles}, leads [m] "
                               f"{np.array2string(self.component.estimator.transmission.screw_lead_m, precision=3)}"
                               f", ankle F/T {ft_topics or 'off'}")

    # ------------------------------------------------------------------ messages → samples
    def _on_actuators(self, msg: JointState) -> None:
        try:
            arr = self._act.from_joint_state(msg, required=("effort",))
        except InputError as exc:
            self.component.reject("actuators/state", exc)
            return self.log_events(self.component)
        # only the effort is required: the position and velocity may be None (the component's estimate
        # stands in for missing velocities); ActuatorSample types them as arrays
        position, velocity = cast(np.ndarray, arr.position), cast(np.ndarray, arr.velocity)
        self.process(ActuatorSample(position, velocity, arr.effort, arr.stamp_s), msg.header.stamp)

    def _on_modes(self, msg: DiagnosticStatus) -> None:
        try:
            self._pending_modes = actuator_modes_from_msg(msg)
        except InputError as exc:
            self.throttled.warning("actuators/modes", f"actuators/modes skipped: {exc}")

    def _apply_modes(self) -> None:
        modes, self._pending_modes = self._pending_modes, None
        assert modes is not None  # called with modes pending only
        changed = {n: m for n, m in modes.items() if self._modes.get(n) != m}
        for name, mode in changed.items():  # only what changed: one call per actuator and change
            try:
                self.component.set_actuator_mode(name, mode)
                self._modes[name] = mode
            except InputError as exc:
                self.throttled.warning(f"actuators/modes {name}", f"actuators/modes: {name} {mode} not applied: {exc}")
        if changed:
            out = {n: m for n, m in self._modes.items() if m != "active"}
            self.get_logger().info(f"actuator modes applied: {out or 'all active'}")

    # ------------------------------------------------------------------ one sample
    def process(self, sample: ActuatorSample, stamp=None, projected=None) -> ContactWrenchEstimate | None:
        """Run the component on one torque sample and publish the outputs (``projected``: the
        controller's model already updated at this state, composed deployment)."""
        if self._pending_modes is not None:
            self._apply_modes()
        self.stamp_clock(sample.stamp_s)  # with the clock taken from the stamps
        self._payloads.apply()
        out = self.component.step(sample, projected)
        self.tick_count += 1
        if out is not None:
            self._publish(out, stamp if stamp is not None else seconds_to_time_msg(sample.stamp_s), sample.stamp_s)
        found = self.component.identified_payload
        if found is not None and found is not self.payload_published:  # a new confident estimate
            self.payload_published = found
            assert self._pub_payload is not None  # an identified payload implies the identification is on
            self._pub_payload.publish(self._payload_msg(found))
        self.log_events(self.component)
        return out

    def _payload_msg(self, est: PayloadEstimate) -> InertiaStamped:
        """``payload/identified``: the payload as a point mass (module docstring)."""
        msg = InertiaStamped()
        msg.header.stamp, msg.header.frame_id = seconds_to_time_msg(est.stamp_s), self.params.odom_frame
        msg.inertia.m = float(est.mass_kg)
        msg.inertia.com.x, msg.inertia.com.y = (float(v) for v in est.com_xy_in_world_m)
        msg.inertia.com.z = float("nan")  # unobservable standing
        return msg

    def _publish(self, out: ContactWrenchEstimate, stamp, t: float) -> None:
        p = self.params
        for i in range(len(self.sole_frames)):  # 1 kHz streams: only what somebody subscribes to
            if self._pub_w[i].wanted():
                self._pub_w[i].publish(self._w_wrench[i].write(t, wrench=out.wrench_sole_in_sole[i]))
            if out.cop_valid[i] and self._pub_cop[i].wanted():
                self._pub_cop[i].publish(self._w_cop[i].write(t, point=out.cop_sole_in_sole[i]))
        if out.zmp_valid and self._pub_zmp.wanted():
            self._pub_zmp.publish(self._w_zmp.write(t, point=out.zmp_in_world))
        if p.marker_rate_hz > 0 and t >= self._next_marker:
            self._next_marker = t + 1.0 / p.marker_rate_hz
            self._pub_markers.publish(self._markers(out, stamp))

    def _markers(self, out: ContactWrenchEstimate, stamp) -> MarkerArray:
        p, arr = self.params, MarkerArray()
        for i, sole in enumerate(self.sole_frames):
            loaded = bool(out.cop_valid[i])
            origin = out.cop_sole_in_sole[i] if loaded else np.zeros(3)
            tip = origin + p.marker_force_scale_m_per_n * out.wrench_sole_in_sole[i, :3]
            arrow = _marker(Marker.ARROW, "force", i, sole, stamp, (0.2, 0.8, 0.2) if loaded else (0.6, 0.6, 0.6))
            arrow.points = [array_to_point_msg(origin), array_to_point_msg(tip)]
            arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.01, 0.02, 0.03
            cop = _marker(Marker.SPHERE, "cop", i, sole, stamp, (0.9, 0.2, 0.2))
            cop.action = Marker.ADD if loaded else Marker.DELETE
            array_to_point_msg(origin, cop.pose.position)
            cop.scale.x = cop.scale.y = cop.scale.z = 0.03
            arr.markers.extend([arrow, cop])
        zmp = _marker(Marker.SPHERE, "zmp", 0, p.odom_frame, stamp, (0.2, 0.2, 0.9))
        zmp.action = Marker.ADD if out.zmp_valid else Marker.DELETE
        if out.zmp_valid:
            array_to_point_msg(out.zmp_in_world, zmp.pose.position)
        zmp.scale.x = zmp.scale.y = zmp.scale.z = 0.04
        arr.markers.append(zmp)
        return arr

    def on_parameters_changed(self, params: ContactWrenchParams, changed: set[str]) -> None:
        self.pairing.max_lag_s = params.max_input_age_s
        if "odom_frame" in changed:
            self._w_zmp = point_stamped_writer(params.odom_frame)


def _marker(kind: int, ns: str, ident: int, frame: str, stamp, rgb: tuple[float, float, float]) -> Marker:
    m = Marker(type=kind, ns=ns, id=ident, action=Marker.ADD)
    m.header.frame_id, m.header.stamp = frame, stamp
    m.pose.orientation.w = 1.0
    m.color.r, m.color.g, m.color.b, m.color.a = *rgb, 1.0
    return m


main = main_for(ContactWrenchNode)
