"""``contact_wrench_estimator`` node: quasi-static sole wrenches, CoPs and ZMP (paper Section VI-B).

A thin adapter around :class:`~kangaroo_wbc.components.contact_wrench.ContactWrenchEstimation`
(input order, staleness and restart handling, the estimator of eq. (43)-(47)). Event-driven on
``actuators/state`` (effort = motor torque [N·m]) with the newest ``joint_states`` and
``estimation/base_odometry``; publishes ``contact/<sole>/wrench`` (ground on sole, sole frame),
``contact/<sole>/cop`` (sole frame, while loaded), ``zmp`` (odom, while in contact) and, decimated,
``contact/markers``, every output with the actuator sample's stamp. Topics: ``docs/interface.md``.
A ``joint_states`` sample is used once odometry of the same time (within ``max_input_age_s``) came.
The actuator modes the controller publishes on the latched ``actuators/modes`` (a locked or limp
actuator, ``docs/morphology.md``) are applied before the next sample, in every deployment, and so
are the payloads it publishes on the latched ``model/payloads`` (the model's inertias). With ``rig``
(``one_leg``) it runs on the test bench's model, its one sole, the actuated rows only
(:func:`~kangaroo_wbc.pipeline.rig.rig_wrench_estimation`).

With ``payload_identification`` the component weighs the robot while it stands still
(:mod:`~kangaroo_wbc.estimation.payload_identification`; its parameters are the node's
``payload_*``, the identifier's configuration fields prefixed) and each new confident estimate of the
unmodelled payload goes out on the latched ``payload/identified`` (``geometry_msgs/InertiaStamped``,
odom frame: ``m`` the mass [kg], ``com.x``/``com.y`` its CoM [m] — NaN while the mass is too small to
place it — ``com.z`` NaN: the height is unobservable standing; the inertia terms 0, a point mass).
Its ``payload`` status reaches ``/diagnostics``. The robot floating only (not on the bench).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import InertiaStamped, PointStamped, WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from visualization_msgs.msg import Marker, MarkerArray

from kangaroo_wbc.components.contact_wrench import ContactWrenchEstimation, ContactWrenchSettings
from kangaroo_wbc.components.samples import ActuatorSample
from kangaroo_wbc.errors import ConfigError, InputError
from kangaroo_wbc.estimation.actuator_force import ActuatorCompensation
from kangaroo_wbc.estimation.contact_wrench import (
    PAPER_LEAD_HIP_ANKLE_M,
    PAPER_SCREW_EFFICIENCY,
    ContactWrenchConfig,
    ContactWrenchEstimate,
    paper_screws,
)
from kangaroo_wbc.estimation.payload_identification import (
    PayloadEstimate,
    PayloadIdentificationConfig,
)
from kangaroo_wbc.nodes import (
    PayloadFollower,
    joint_indices,
    load_node_model,
    rig_leg_parameter,
    rig_parameter,
    rig_sole,
    urdf_dir_parameter,
)
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import (
    JointIndexMap,
    array_to_point_msg,
    odometry_msg_to_arrays,
    seconds_to_time_msg,
)
from kangaroo_wbc.ros.diagnostics import actuator_modes_from_msg
from kangaroo_wbc.ros.node_base import KangarooNode, main_for
from kangaroo_wbc.ros.params import SharedFields, parameter
from kangaroo_wbc.ros.serialized import point_stamped_writer, wrench_stamped_writer

# the defaults are the component's, the estimator's and the payload identification's
_E, _S, _C = ContactWrenchConfig(), ContactWrenchSettings(), ActuatorCompensation()
_P = PayloadIdentificationConfig()
#: the latched topic of the identified payload (module docstring)
IDENTIFIED_PAYLOAD_TOPIC = "payload/identified"


@dataclass
class ContactWrenchParams:
    """Parameters of the ``contact_wrench_estimator`` node (``config/contact_wrench_estimator.yaml``)."""

    rate_hz: float = parameter(_E.sample_rate_hz, "Rate of actuators/state, the filter's sampling rate "
                               "[Hz]", bounds=(1.0, 10000.0), read_only=True)
    urdf_dir: str = urdf_dir_parameter()
    sole_frames: list[str] = parameter(list(_S.sole_frames), "Contact frames (URDF)", read_only=True)
    odom_frame: str = parameter("odom", "World frame of the ZMP")
    cutoff_hz: float = parameter(_E.cutoff_hz, "Butterworth cutoff of the wrench filter [Hz]",
                                 bounds=(0.01, None), read_only=True)
    filter_order: int = parameter(_E.filter_order, "Butterworth order", bounds=(1, 8), read_only=True)
    min_normal_force_n: float = parameter(_E.min_normal_force_n, "CoP/ZMP published above this normal "
                                          "force [N]", bounds=(1e-3, None))
    include_velocity_terms: bool = parameter(_E.include_velocity_terms,
                                             "Add Coriolis/centrifugal terms (slow)")
    max_input_age_s: float = parameter(_S.max_input_age_s, "joint_states / odometry whose stamp differs "
                                       "from the actuator sample's by more than this are stale [s]",
                                       bounds=(0.0, None))
    clock_restart_samples: int = parameter(_S.clock_restart_samples, "Out-of-order samples in a row on one "
                                           "topic taken as a restarted clock (e.g. simulator reset) instead "
                                           "of skipped", bounds=(2, 100000), read_only=True)
    marker_rate_hz: float = parameter(10.0, "Rate of contact/markers [Hz] (0: off)", bounds=(0.0, 1000.0))
    marker_force_scale_m_per_n: float = parameter(0.001, "Arrow length per newton [m/N]", bounds=(0.0, None))
    default_screw_lead_m: float = parameter(PAPER_LEAD_HIP_ANKLE_M, "Screw lead of actuators the closure file "
                                            "does not describe [m]", bounds=(1e-6, None), read_only=True)
    default_screw_efficiency: float = parameter(PAPER_SCREW_EFFICIENCY, "Screw efficiency of the same [-]",
                                                bounds=(1e-3, 1.0), read_only=True)
    actuator_model: bool = parameter(_C.actuator_model, "Motor torque -> force through the ball-screw "
                                     "model: driving/back-driving efficiency and friction (false: eq. (47))",
                                     read_only=True)
    rotor_inertia_compensation: bool = parameter(_C.rotor_inertia, "Subtract the reflected rotor inertia "
                                                 "times the actuator acceleration", read_only=True)
    torque_bias_estimation: bool = parameter(_C.torque_bias, "Learn a per-actuator motor-torque offset "
                                             "while standing still on both soles", read_only=True)
    payload_identification: bool = parameter(_S.payload_identification, "Identify an unmodelled payload's "
                                             "mass and horizontal CoM while standing still; publish it on "
                                             "payload/identified (floating base only)", read_only=True)
    payload_block_samples: int = parameter(_P.block_samples, "Payload: samples averaged into one block (one "
                                           "eq. (46) solve)", bounds=(1, 100000), read_only=True)
    payload_window_s: float = parameter(_P.window_s, "Payload: the estimate averages the still blocks of the "
                                        "last this long [s]", bounds=(0.0, None), read_only=True)
    payload_min_still_s: float = parameter(_P.min_still_s, "Payload: still time the window needs before the "
                                           "estimate is confident [s] (<= payload_window_s)", bounds=(0.0, None),
                                           read_only=True)
    payload_settle_s: float = parameter(_P.settle_s, "Payload: still this long before samples count [s]",
                                        bounds=(0.0, None), read_only=True)
    payload_max_base_speed_m_s: float = parameter(_P.max_base_speed_m_s, "Payload still: base speed below "
                                                  "this [m/s]", bounds=(0.0, None), read_only=True)
    payload_max_base_rate_rad_s: float = parameter(_P.max_base_rate_rad_s, "Payload still: base angular speed "
                                                   "below this [rad/s]", bounds=(0.0, None), read_only=True)
    payload_max_actuator_speed_m_s: float = parameter(_P.max_actuator_speed_m_s, "Payload still: every actuator "
                                                      "slower than this [m/s]", bounds=(0.0, None), read_only=True)
    payload_max_com_acceleration_m_s2: float = parameter(_P.max_com_acceleration_m_s2, "Payload still: low-passed "
                                                         "linear momentum rate over the mass below this [m/s^2]",
                                                         bounds=(0.0, None), read_only=True)
    payload_max_angular_momentum_rate_nm: float = parameter(_P.max_angular_momentum_rate_nm, "Payload still: "
                                                            "low-passed angular momentum rate below this [N·m]",
                                                            bounds=(0.0, None), read_only=True)
    payload_momentum_filter_s: float = parameter(_P.momentum_filter_s, "Payload: time constant of that "
                                                 "low-pass [s]", bounds=(0.0, None), read_only=True)
    payload_min_sole_force_n: float = parameter(_P.min_sole_force_n, "Payload still: every sole's normal force "
                                                "above this [N]", bounds=(0.0, None), read_only=True)
    payload_max_mass_std_kg: float = parameter(_P.max_mass_std_kg, "Payload confident: spread of the window's "
                                               "block masses below this [kg]", bounds=(0.0, None), read_only=True)
    payload_max_mass_stderr_kg: float = parameter(_P.max_mass_stderr_kg, "Payload confident: their standard "
                                                  "error below this [kg]", bounds=(0.0, None), read_only=True)
    payload_max_mass_drift_kg: float = parameter(_P.max_mass_drift_kg, "Payload confident: mass drift across "
                                                 "the window below this [kg]", bounds=(0.0, None), read_only=True)
    payload_recent_s: float = parameter(_P.recent_s, "Payload: the newest part of the window compared with the "
                                        "rest [s]", bounds=(0.0, None), read_only=True)
    payload_max_horizontal_residual_n: float = parameter(_P.max_horizontal_residual_n, "Payload confident: mean "
                                                         "horizontal force balance below this [N]",
                                                         bounds=(0.0, None), read_only=True)
    payload_min_mass_for_com_kg: float = parameter(_P.min_mass_for_com_kg, "Payload: its CoM is given above "
                                                   "this mass [kg]", bounds=(0.0, None), read_only=True)
    rig: str = rig_parameter()
    rig_leg: str = rig_leg_parameter()

    def __post_init__(self) -> None:
        if self.cutoff_hz >= self.rate_hz / 2:
            raise ValueError("cutoff_hz must be below the Nyquist frequency rate_hz / 2")
        try:  # the identifier's own checks (strictly positive times and limits, min_still_s <= window_s)
            _PAYLOAD.build(self)
        except InputError as exc:
            raise ValueError(f"payload_* parameters: {exc}") from None


# The parameters that are fields of the estimator's, the component's and the actuator model's
# configurations (same names, or renamed).
_ESTIMATOR = SharedFields(ContactWrenchConfig, names={"sample_rate_hz": "rate_hz"})
_SETTINGS = SharedFields(ContactWrenchSettings)
_COMPENSATION = SharedFields(ActuatorCompensation, names={"rotor_inertia": "rotor_inertia_compensation",
                                                          "torque_bias": "torque_bias_estimation",
                                                          "sample_rate_hz": "rate_hz"})
_PAYLOAD = SharedFields(PayloadIdentificationConfig, prefix="payload_")
SHARED_FIELDS = (_ESTIMATOR, _SETTINGS, _COMPENSATION, _PAYLOAD)


def _compensation(p: ContactWrenchParams) -> ActuatorCompensation | None:
    """The actuator compensations the parameters switch on (None: eq. (47) alone)."""
    if not (p.actuator_model or p.rotor_inertia_compensation or p.torque_bias_estimation):
        return None
    return _COMPENSATION.build(p)


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
        m = clm.model
        try:  # per-actuator leads and efficiencies: the closure file's actuators table
            transmission = paper_screws(clm, p.default_screw_lead_m, p.default_screw_efficiency)
            if p.rig:  # the bench: one sole, the actuated rows only
                from kangaroo_wbc.pipeline.rig import rig_wrench_estimation

                self.component = rig_wrench_estimation(clm, rig_sole(p.rig_leg), transmission, _ESTIMATOR.build(p),
                                                       _SETTINGS.build(p), _compensation(p))
            else:
                self.component = ContactWrenchEstimation(
                    clm, transmission,
                    _ESTIMATOR.build(p), _SETTINGS.build(p), _compensation(p), _PAYLOAD.build(p))
        except InputError as exc:
            raise ConfigError(str(exc)) from exc
        #: the soles estimated (the parameter's, or the bench's one)
        self.sole_frames = soles = list(self.component.settings.sole_frames)
        self._idx_q, self._idx_v = joint_indices(m, clm.joint_names)
        self._act = JointIndexMap(clm.actuated_joint_names, what="actuator")
        self._joints = JointIndexMap(clm.joint_names, allow_extra=True)
        self._q, self._v = clm.q_ref.copy(), np.zeros(m.nv)
        self._odom_stamp: float | None = None
        self._joint_stamp: float | None = None
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
            sub(JointState, "actuators/state", self._on_actuators, qos.SENSOR_LATEST)
            sub(JointState, "joint_states", self._on_joints, qos.SENSOR_LATEST)
            sub(Odometry, "estimation/base_odometry", self._on_odometry, qos.SENSOR_LATEST)
            sub(Bool, "wbc/ready", lambda msg: self.component.set_released(msg.data), qos.LATCHED)
        #: the modes of actuators/modes not applied yet (applied in the thread that runs the component)
        self._pending_modes: dict[str, str] | None = None
        self._modes = dict.fromkeys(clm.actuated_joint_names, "active")  # the modes applied (component's start)
        self.create_subscription(DiagnosticStatus, "actuators/modes", self._on_modes, qos.LATCHED)
        self._payloads = PayloadFollower(self, clm)  # the controller's model/payloads
        self.get_logger().info(f"contact_wrench_estimator: soles {soles}, leads [m] "
                               f"{np.array2string(transmission.screw_lead_m, precision=3)}")

    # ------------------------------------------------------------------ messages → samples
    def _on_joints(self, msg: JointState) -> None:
        try:
            arr = self._joints.from_joint_state(msg, required=("position",))
        except InputError as exc:
            return self.component.reject("joint_states", exc)
        if not self.component.in_order("joint_states", arr.stamp_s):
            return
        self._q[self._idx_q] = arr.position
        self._v[self._idx_v] = 0.0 if arr.velocity is None else arr.velocity
        self._joint_stamp = arr.stamp_s
        stamp, source = arr.stamp_s, "joint_states"
        odom = -float("inf") if self._odom_stamp is None else self._odom_stamp
        if self.clm.floating_base and odom < stamp - self.params.max_input_age_s:
            stamp, source = odom, "estimation/base_odometry"  # the state is as old as its base
        self.component.on_state(self._q, self._v, stamp, source)

    def _on_odometry(self, msg: Odometry) -> None:
        try:
            odom = odometry_msg_to_arrays(msg)
        except InputError as exc:
            return self.component.reject("estimation/base_odometry", exc)
        if not self.component.in_order("estimation/base_odometry", odom.stamp_s):
            return
        if self.clm.floating_base:
            self._q[:3], self._q[3:7] = odom.position, odom.quaternion_xyzw  # a unit quaternion
            self._v[:3], self._v[3:6] = odom.linear, odom.angular
        self._odom_stamp = odom.stamp_s
        if odom.stamp_s == self._joint_stamp:  # the base of the joint sample already passed on
            self.component.on_state(self._q, self._v, odom.stamp_s)

    def _on_actuators(self, msg: JointState) -> None:
        try:
            arr = self._act.from_joint_state(msg, required=("effort",))
        except InputError as exc:
            self.component.reject("actuators/state", exc)
            return self.log_events(self.component)
        self.process(ActuatorSample(arr.position, arr.velocity, arr.effort, arr.stamp_s), msg.header.stamp)

    def _on_modes(self, msg: DiagnosticStatus) -> None:
        try:
            self._pending_modes = actuator_modes_from_msg(msg)
        except InputError as exc:
            self.throttled.warning("actuators/modes", f"actuators/modes skipped: {exc}")

    def _apply_modes(self) -> None:
        modes, self._pending_modes = self._pending_modes, None
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
        self._payloads.apply()
        out = self.component.step(sample, projected)
        self.tick_count += 1
        if out is not None:
            self._publish(out, stamp if stamp is not None else seconds_to_time_msg(sample.stamp_s), sample.stamp_s)
        found = self.component.identified_payload
        if found is not None and found is not self.payload_published:  # a new confident estimate
            self.payload_published = found
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
        if "odom_frame" in changed:
            self._w_zmp = point_stamped_writer(params.odom_frame)


def _marker(kind: int, ns: str, ident: int, frame: str, stamp, rgb: tuple[float, float, float]) -> Marker:
    m = Marker(type=kind, ns=ns, id=ident, action=Marker.ADD)
    m.header.frame_id, m.header.stamp = frame, stamp
    m.pose.orientation.w = 1.0
    m.color.r, m.color.g, m.color.b, m.color.a = *rgb, 1.0
    return m


main = main_for(ContactWrenchNode)
