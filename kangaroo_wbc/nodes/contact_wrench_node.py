"""``contact_wrench_estimator`` node: quasi-static sole wrenches, CoPs and ZMP (paper Section VI-B).

Event-driven on ``actuators/state`` (effort = motor torque [N·m]): with the latest ``joint_states``
and ``estimation/base_odometry`` (base orientation for gravity) it runs
:class:`~kangaroo_wbc.estimation.contact_wrench.ContactWrenchEstimator` (eq. (43)-(47), 5 Hz
Butterworth) and publishes ``contact/<sole>/wrench`` (ground on sole, in the sole frame),
``contact/<sole>/cop`` (sole frame, while loaded), ``zmp`` (odom, while in contact) and, decimated,
``contact/markers``. Every output carries the actuator sample's stamp. Missing, stale or malformed
input is skipped and reported (throttled log + ``/diagnostics``). Topics: ``docs/interface.md``.

Input faults: a sample with non-finite values, wrong lengths or bad joint names is skipped; a
sample older than the newest one of its topic is skipped as out-of-order
(:class:`~kangaroo_wbc.estimation.stamp_order.StampOrder`; ``clock_restart_samples`` of them in a
row are taken as a restarted clock, e.g. a simulator reset, and reset the filter); an actuator
sample whose ``joint_states`` or odometry differ from it by more than ``max_input_age_s`` (either
way) is not used: nothing is published for it. Status ``wrench``: WARN when samples were skipped
since the last report, ERROR when nothing could be published; the message gives the latest reason
per input and kind of fault since the last report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from geometry_msgs.msg import PointStamped, WrenchStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker, MarkerArray

from kangaroo_wbc.errors import ConfigError, EstimationError, InputError
from kangaroo_wbc.estimation.contact_wrench import (
    PAPER_LEAD_HIP_ANKLE_M,
    PAPER_SCREW_EFFICIENCY,
    ContactWrenchConfig,
    ContactWrenchEstimator,
    ScrewTransmission,
)
from kangaroo_wbc.estimation.stamp_order import StampOrder, StampVerdict
from kangaroo_wbc.nodes import urdf_dir_parameter
from kangaroo_wbc.nodes.state_estimator_node import load_model
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.conversions import (
    JointIndexMap,
    array_to_point_msg,
    odometry_msg_to_arrays,
    vector_to_wrench_stamped,
)
from kangaroo_wbc.ros.diagnostics import Level
from kangaroo_wbc.ros.node_base import KangarooNode, main_for
from kangaroo_wbc.ros.params import parameter


@dataclass
class ContactWrenchParams:
    """Parameters of the ``contact_wrench_estimator`` node (``config/contact_wrench_estimator.yaml``)."""

    rate_hz: float = parameter(1000.0, "Rate of actuators/state, the filter's sampling rate [Hz]",
                               bounds=(1.0, 10000.0), read_only=True)
    urdf_dir: str = urdf_dir_parameter()
    sole_frames: list[str] = parameter(["left_sole", "right_sole"], "Contact frames (URDF)", read_only=True)
    odom_frame: str = parameter("odom", "World frame of the ZMP")
    cutoff_hz: float = parameter(5.0, "Butterworth cutoff of the wrench filter [Hz]", bounds=(0.01, None),
                                 read_only=True)
    filter_order: int = parameter(2, "Butterworth order", bounds=(1, 8), read_only=True)
    min_normal_force_n: float = parameter(10.0, "CoP/ZMP published above this normal force [N]",
                                          bounds=(1e-3, None))
    include_velocity_terms: bool = parameter(False, "Add Coriolis/centrifugal terms (slow)")
    max_input_age_s: float = parameter(0.05, "joint_states / odometry whose stamp differs from the actuator "
                                       "sample's by more than this are stale [s]", bounds=(0.0, None))
    clock_restart_samples: int = parameter(10, "Out-of-order samples in a row on one topic taken as a restarted "
                                           "clock (e.g. simulator reset) instead of skipped", bounds=(2, 100000),
                                           read_only=True)
    marker_rate_hz: float = parameter(50.0, "Rate of contact/markers [Hz] (0: off)", bounds=(0.0, 1000.0))
    marker_force_scale_m_per_n: float = parameter(0.001, "Arrow length per newton [m/N]", bounds=(0.0, None))
    default_screw_lead_m: float = parameter(PAPER_LEAD_HIP_ANKLE_M, "Screw lead of actuators the closure file "
                                            "does not describe [m]", bounds=(1e-6, None), read_only=True)
    default_screw_efficiency: float = parameter(PAPER_SCREW_EFFICIENCY, "Screw efficiency of the same [-]",
                                                bounds=(1e-3, 1.0), read_only=True)

    def __post_init__(self) -> None:
        if self.cutoff_hz >= self.rate_hz / 2:
            raise ValueError("cutoff_hz must be below the Nyquist frequency rate_hz / 2")


class ContactWrenchNode(KangarooNode):
    """Contact wrench, CoP and ZMP estimation behind the topic contract."""

    def __init__(self) -> None:
        super().__init__("contact_wrench_estimator", ContactWrenchParams)
        p = self.params
        self.clm = clm = load_model(p.urdf_dir)
        m = clm.model
        try:  # per-actuator leads and efficiencies: the closure file's actuators table
            transmission = ScrewTransmission.from_model(clm, p.default_screw_lead_m, p.default_screw_efficiency)
        except InputError as exc:
            raise ConfigError(str(exc)) from exc
        self.estimator = ContactWrenchEstimator(clm, p.sole_frames, transmission, ContactWrenchConfig(
            cutoff_hz=p.cutoff_hz, sample_rate_hz=p.rate_hz, filter_order=p.filter_order,
            min_normal_force_n=p.min_normal_force_n, include_velocity_terms=p.include_velocity_terms))
        self._idx_q = np.array([m.joints[m.getJointId(n)].idx_q for n in clm.joint_names])
        self._idx_v = np.array([m.joints[m.getJointId(n)].idx_v for n in clm.joint_names])
        self._act = JointIndexMap(clm.actuated_joint_names, what="actuator")
        self._joints = JointIndexMap(clm.joint_names, allow_extra=True)
        self._q = clm.q_ref.copy()
        self._v = np.zeros(m.nv)
        self._joint_stamp: float | None = None
        self._odom_stamp: float | None = None
        self._stats = {"ticks": 0, "rejected": 0, "stale": 0, "out_of_order": 0, "waiting": 0}
        self._order = {t: StampOrder(p.clock_restart_samples)
                       for t in ("actuators/state", "joint_states", "estimation/base_odometry")}
        self._reported = dict(self._stats)
        self._last_error = ""
        self._errors: dict[str, str] = {}  # latest reason per input and kind since the last report
        self._step_s = [0.0, 0.0, 0]
        self._next_marker = 0.0
        pub = self.create_publisher
        self._pub_w = [pub(WrenchStamped, f"contact/{s}/wrench", qos.SENSOR_STATE) for s in p.sole_frames]
        self._pub_cop = [pub(PointStamped, f"contact/{s}/cop", qos.SENSOR_STATE) for s in p.sole_frames]
        self._pub_zmp = pub(PointStamped, "zmp", qos.SENSOR_STATE)
        self._pub_markers = pub(MarkerArray, "contact/markers", qos.VISUALIZATION)
        self._msg_w = [WrenchStamped() for _ in p.sole_frames]
        self._msg_cop = [PointStamped() for _ in p.sole_frames]
        self._msg_zmp = PointStamped()
        self.create_subscription(JointState, "actuators/state", self._on_actuators, qos.SENSOR_STATE)
        self.create_subscription(JointState, "joint_states", self._on_joints, qos.SENSOR_STATE)
        self.create_subscription(Odometry, "estimation/base_odometry", self._on_odometry, qos.SENSOR_STATE)
        self.get_logger().info(f"contact_wrench_estimator: soles {p.sole_frames}, leads [m] "
                               f"{np.array2string(transmission.screw_lead_m, precision=3)}")

    # ------------------------------------------------------------------ inputs
    def _reject(self, topic: str, exc: Exception | str, kind: str = "rejected") -> None:
        self._stats[kind] += 1
        self._last_error = self._errors[f"{topic} {kind}"] = f"{topic}: {exc}"
        self.throttled.warning(f"{topic} {kind}", f"{topic} sample skipped: {exc}")

    def _in_order(self, topic: str, stamp_s: float) -> bool:
        """False (sample skipped and reported) if ``stamp_s`` is older than the topic's newest one."""
        order = self._order[topic]
        verdict = order.update(stamp_s)
        if verdict is StampVerdict.OUT_OF_ORDER:
            self._reject(topic, f"out-of-order stamp, {order.last_lag_s * 1e3:.1f} ms older than the newest sample",
                         "out_of_order")
            return False
        if verdict is StampVerdict.RESTARTED:
            self.get_logger().warning(f"{topic}: clock went back by {order.last_lag_s:.3f} s for "
                                      f"{order.restart_after} samples: taken as a restart")
            if topic == "actuators/state":
                self.estimator.reset_filter()
        return True

    def _on_joints(self, msg: JointState) -> None:
        try:
            arr = self._joints.from_joint_state(msg, required=("position",))
        except InputError as exc:
            return self._reject("joint_states", exc)
        if not self._in_order("joint_states", arr.stamp_s):
            return
        self._q[self._idx_q] = arr.position
        self._v[self._idx_v] = 0.0 if arr.velocity is None else arr.velocity
        self._joint_stamp = arr.stamp_s

    def _on_odometry(self, msg: Odometry) -> None:
        try:
            odom = odometry_msg_to_arrays(msg)
        except InputError as exc:
            return self._reject("estimation/base_odometry", exc)
        if not self._in_order("estimation/base_odometry", odom.stamp_s):
            return
        if self.clm.floating_base:
            self._q[:3], self._q[3:7] = odom.position, odom.quaternion_xyzw / np.linalg.norm(odom.quaternion_xyzw)
            self._v[:3], self._v[3:6] = odom.linear, odom.angular
        self._odom_stamp = odom.stamp_s

    def _on_actuators(self, msg: JointState) -> None:
        p = self.params
        try:
            arr = self._act.from_joint_state(msg, required=("effort",))
        except InputError as exc:
            return self._reject("actuators/state", exc)
        t = arr.stamp_s
        if not self._in_order("actuators/state", t):
            return
        inputs = [("joint_states", self._joint_stamp)]
        if self.clm.floating_base:  # a fixed base needs no odometry
            inputs.append(("estimation/base_odometry", self._odom_stamp))
        for topic, stamp in inputs:
            if stamp is None:
                self._stats["waiting"] += 1
                self.throttled.info("waiting", f"waiting for {topic}: actuators/state skipped")
                return
            if abs(t - stamp) > p.max_input_age_s:
                lag = f"{abs(t - stamp) * 1e3:.1f} ms {'older' if stamp < t else 'newer'} than actuators/state"
                return self._reject(topic, f"stale input: {topic} {lag} (limit {p.max_input_age_s * 1e3:.1f} ms), "
                                    "nothing published", "stale")
        t0 = time.perf_counter()
        try:
            out = self.estimator.update(self._q, motor_torque=arr.effort, v=self._v)
        except EstimationError as exc:
            return self._reject("estimation", exc)
        if not np.isfinite(out.wrench_sole_in_sole).all():
            return self._reject("estimation", EstimationError("non-finite wrench, not published"))
        self._publish(out, msg.header.stamp, t)
        self._stats["ticks"] += 1
        dt = time.perf_counter() - t0
        s = self._step_s
        s[0], s[1], s[2] = s[0] + dt, max(s[1], dt), s[2] + 1

    # ------------------------------------------------------------------ outputs
    def _publish(self, out, stamp, t: float) -> None:
        p = self.params
        for i, sole in enumerate(p.sole_frames):
            self._pub_w[i].publish(vector_to_wrench_stamped(out.wrench_sole_in_sole[i], frame_id=sole, stamp=stamp,
                                                            msg=self._msg_w[i]))
            if out.cop_valid[i]:
                m = self._msg_cop[i]
                m.header.stamp, m.header.frame_id = stamp, sole
                self._pub_cop[i].publish(_point(m, out.cop_sole_in_sole[i]))
        if out.zmp_valid:
            m = self._msg_zmp
            m.header.stamp, m.header.frame_id = stamp, p.odom_frame
            self._pub_zmp.publish(_point(m, out.zmp_in_world))
        if p.marker_rate_hz > 0 and t >= self._next_marker:
            self._next_marker = t + 1.0 / p.marker_rate_hz
            self._pub_markers.publish(self._markers(out, stamp))

    def _markers(self, out, stamp) -> MarkerArray:
        p, arr = self.params, MarkerArray()
        for i, sole in enumerate(p.sole_frames):
            loaded = bool(out.cop_valid[i])
            origin = out.cop_sole_in_sole[i] if loaded else np.zeros(3)
            tip = origin + p.marker_force_scale_m_per_n * out.wrench_sole_in_sole[i, :3]
            arrow = _marker(Marker.ARROW, "force", i, sole, stamp, (0.2, 0.8, 0.2) if loaded else (0.6, 0.6, 0.6))
            arrow.points = [array_to_point_msg(origin), array_to_point_msg(tip)]
            arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.01, 0.02, 0.03
            arrays = [arrow]
            cop = _marker(Marker.SPHERE, "cop", i, sole, stamp, (0.9, 0.2, 0.2))
            cop.action = Marker.ADD if loaded else Marker.DELETE
            array_to_point_msg(origin, cop.pose.position)
            cop.scale.x = cop.scale.y = cop.scale.z = 0.03
            arrays.append(cop)
            arr.markers.extend(arrays)
        zmp = _marker(Marker.SPHERE, "zmp", 0, p.odom_frame, stamp, (0.2, 0.2, 0.9))
        zmp.action = Marker.ADD if out.zmp_valid else Marker.DELETE
        if out.zmp_valid:
            array_to_point_msg(out.zmp_in_world, zmp.pose.position)
        zmp.scale.x = zmp.scale.y = zmp.scale.z = 0.04
        arr.markers.append(zmp)
        return arr

    # ------------------------------------------------------------------ diagnostics
    def diagnostic_statuses(self) -> list:
        s, est = self._stats, self.estimator.estimate
        recent = {k: v - self._reported[k] for k, v in s.items()}
        self._reported = dict(s)
        total, worst, n = self._step_s
        self._step_s = [0.0, 0.0, 0]
        skipped = recent["rejected"] + recent["stale"] + recent["out_of_order"]
        faults = "; ".join(self._errors.values())  # every input and kind that was skipped, latest reason
        self._errors = {}
        values = {"step_mean_ms": 1e3 * total / max(n, 1), "step_max_ms": 1e3 * worst,
                  "total_force_z_n": float(est.total_force_in_world[2]), "cop_valid": est.cop_valid.tolist(),
                  "residual_n": est.residual, **s, "last_error": self._last_error}
        if skipped and not recent["ticks"]:
            level, message = Level.ERROR, f"no output, input skipped: {faults}"
        elif skipped:
            level, message = Level.WARN, f"{skipped} input sample(s) skipped: {faults}"
        elif not recent["ticks"]:
            level, message = Level.WARN, "waiting for input"
        else:
            level, message = Level.OK, "running"
        return [self.diagnostics.status("wrench", level, message, values)]


def _point(msg: PointStamped, xyz: np.ndarray) -> PointStamped:
    array_to_point_msg(xyz, msg.point)
    return msg


def _marker(kind: int, ns: str, ident: int, frame: str, stamp, rgb: tuple[float, float, float]) -> Marker:
    m = Marker(type=kind, ns=ns, id=ident, action=Marker.ADD)
    m.header.frame_id, m.header.stamp = frame, stamp
    m.pose.orientation.w = 1.0
    m.color.r, m.color.g, m.color.b, m.color.a = *rgb, 1.0
    return m


main = main_for(ContactWrenchNode)
