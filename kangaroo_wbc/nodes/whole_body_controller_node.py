"""``whole_body_controller`` node: balance behaviours → actuator axial forces (Kangaroo paper eq. (27)-(29)).

Event-driven on ``joint_states`` (all joints, closed configuration from the state estimator) with
the latest ``estimation/base_odometry`` (pose in ``odom``, twist in ``base_link``) and, optionally,
``contact/<sole>/wrench`` for the measured contact state. Each sample runs
:class:`~kangaroo_wbc.control.supervisor.WbcSupervisor` (behaviour → WBC QP → forces, or the safe
mode) and publishes ``actuators/command`` (JointState, ``effort`` = axial force [N], stamped with the
state sample, ``frame_id`` = this node's name: the source tag the simulator checks),
``wbc/ready`` (latched Bool: the start-up handshake), optionally
``actuators/command_array``, and at ``timing_rate_hz`` ``wbc/timing`` and ``wbc/com_target`` (the
CoM reference of the tick, ``odom``), and ``/diagnostics``.

Behaviours: parameter ``behaviour`` (``ros2 param set``) or the ``std_srvs/Trigger`` services
``wbc/behaviour/<name>``; ``wbc/reset`` leaves a latched safe mode. External references:
``wbc/com_reference`` (PointStamped, ``odom``) and ``wbc/<sole>/pose_reference`` (PoseStamped) override
the behaviour while younger than ``reference_timeout_s``, bounded and rate-limited by the reference
governor (:mod:`~kangaroo_wbc.control.reference_governor`: support polygon, CoM height band, sole
reach and tilt; a WARN names the reference and the bound). Another node publishing
``actuators/command`` is an ERROR ``writers`` status as soon as the ROS graph shows it. Topics:
``docs/interface.md``.

Safe mode (:class:`~kangaroo_wbc.control.supervisor.WbcSupervisor`): stale or malformed state, an
infeasible QP or a solver failure, a configuration near a kinematic singularity (``J_l,u`` pivot
ratio below ``min_jlu_pivot_ratio``) or a breached limit give damping (or zero force), an ERROR
``wbc`` status naming the cause and one log line per change of cause (then one per 5 s). When
``joint_states`` stop for longer than ``state_timeout_s`` (steady clock) the node reports the safe
mode and publishes nothing (the actuators' own command watchdog acts); the behaviour restarts from
the next good state.

Actuator faults (``docs/morphology.md``): the operator declares actuators out of action with the
parameters ``locked_actuators`` and ``limp_actuators`` (``ros2 param set``; an unknown name is
rejected with the valid ones); the fault detector (parameter ``fault_detection``, on
``actuators/state``) reports an actuator that does not follow its command as an ERROR naming it and,
with ``fault_declare``, declares it limp. A parameter change sets every actuator to what the two
lists say (the operator's word replaces the detector's). The modes in effect go out on the latched
``actuators/modes`` (DiagnosticStatus, one KeyValue per actuator) whenever they change: the contact
wrench estimator applies them, so the change is made once and reaches every node.

Payloads (``docs/morphology.md``): the parameter ``payloads`` (``["LINK:MASS_KG", ...]``, e.g.
``["base_link:6.0"]``: the point masses the robot carries beyond its model as loaded, at each link's
centre of mass) sets the model's inertias (:class:`~kangaroo_wbc.nodes.ModelPayloads`) before the
next tick; an unknown link, a non-finite mass or one beyond 100 kg is rejected with the reason. The
payloads in effect go out on the latched ``model/payloads`` (DiagnosticStatus, one KeyValue per
link, mass [kg]): the state and contact-wrench estimators set their models to the same.

Test bench (``rig`` ``one_leg``, ``docs/morphology.md``): the controller of the clamped one-leg model
(:func:`~kangaroo_wbc.components.rig.rig_control`) runs the bench's ``rig`` behaviour (the
``behaviour`` parameter is ignored), closes the press's loop on the force plate's
``rig/plate_wrench`` and publishes the sole's reference in the estimated pelvis frame on
``rig/sole_target`` (PoseStamped, ``base_link``) at ``timing_rate_hz``.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: BLAS threads only add latency

import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402
from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PointStamped, PoseStamped, Twist, WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.clock import Clock, ClockType  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Bool, Float64MultiArray, Header, MultiArrayDimension  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402
from visualization_msgs.msg import Marker, MarkerArray  # noqa: E402

from kangaroo_wbc.components.assembly import build_control, configure_control, select_behaviour  # noqa: E402
from kangaroo_wbc.components.controller_params import (  # noqa: E402
    BEHAVIOUR_PARAMETERS,
    MODE_PARAMETERS,
    WholeBodyControllerParams,
)
from kangaroo_wbc.components.samples import ActuatorCommand, ActuatorSample  # noqa: E402
from kangaroo_wbc.control.behaviours import BEHAVIOURS  # noqa: E402
from kangaroo_wbc.control.locomotion import footstep_markers  # noqa: E402
from kangaroo_wbc.control.wbc import FrameReference  # noqa: E402
from kangaroo_wbc.errors import InputError  # noqa: E402
from kangaroo_wbc.nodes import (  # noqa: E402
    PAYLOADS_TOPIC,
    add_parameter_check,
    joint_indices,
    load_node_model,
    model_payloads,
    parse_payload_parameter,
    payloads_msg,
    subscribe_sole_wrenches,
    unknown_names,
)
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import (  # noqa: E402
    JointIndexMap,
    odometry_msg_to_arrays,
    pose_msg_to_arrays,
    seconds_to_time_msg,
    time_msg_to_seconds,
    vector3_msg_to_array,
    xyzw_to_pin_quaternion,
)
from kangaroo_wbc.ros.diagnostics import actuator_modes_msg  # noqa: E402
from kangaroo_wbc.ros.node_base import KangarooNode, main_for  # noqa: E402
from kangaroo_wbc.ros.serialized import joint_state_writer, point_stamped_writer  # noqa: E402

TIMING_LABELS = ("model", "build", "solve", "output", "total", "iterations")
#: Period [s] of the joint_states watchdog (steady clock).
WATCHDOG_PERIOD_S = 0.1
#: joint_states older than the odometry (by more than ``odometry_max_lag_s``) skipped in a row
#: before the node runs without a base state (safe mode).
MAX_JOINT_STATES_BEHIND = 20


class WholeBodyControllerNode(KangarooNode):
    """Whole-body controller behind the topic contract.

    Args:
        clm: a loaded model to share (composed deployment); None loads ``urdf_dir``.
        chained: True when the composed deployment feeds :meth:`process` directly (``joint_states``,
            odometry and wrenches are then not subscribed; the outputs are still published).
    """

    def __init__(self, clm=None, chained: bool = False) -> None:
        super().__init__("whole_body_controller", WholeBodyControllerParams)
        p = self.params
        self.clm = clm = clm or load_node_model(p.urdf_dir, p.rig, p.rig_leg)
        self.rig = p.rig
        m = clm.model
        self.component = build_control(clm, p)
        self.supervisor = self.component.supervisor
        self.controller = self.supervisor.controller
        self.contacts = list(getattr(self.controller, "full", self.controller).contacts)
        self.get_logger().info(f"behaviour: {'rig' if p.rig else p.behaviour}")
        add_parameter_check(self, list(MODE_PARAMETERS),
                            lambda name, value: unknown_names(value, clm.actuated_joint_names, "actuator"))
        self._pub_modes = self.create_publisher(DiagnosticStatus, "actuators/modes", qos.LATCHED)
        self._modes_version = -1  # the component's modes_version last published
        self._pending_modes: dict[str, str] | None = self._modes(p)  # the operator's word, not applied yet
        self._apply_modes()
        self._payloads = model_payloads(clm)
        add_parameter_check(self, ["payloads"], lambda name, value: self._check_payloads(value))
        self._pub_payloads = self.create_publisher(DiagnosticStatus, PAYLOADS_TOPIC, qos.LATCHED)
        #: the operator's payloads not applied yet ({link: mass [kg]})
        self._pending_payloads: dict[str, float] | None = parse_payload_parameter(p.payloads)
        self._apply_payloads()
        self._idx_q, self._idx_v = joint_indices(m, clm.joint_names)
        self._joints = JointIndexMap(clm.joint_names, allow_extra=True)
        self._act = JointIndexMap(clm.actuated_joint_names, what="actuator")
        self._q, self._v = clm.q_ref.copy(), np.zeros(m.nv)
        self._odom_stamp: float | None = None
        #: (stamp [s], header stamp) of joint_states that came before the odometry of its time
        self._pending_joints: tuple | None = None
        self._waiting_since: float | None = None  # joint_states stamp [s] since the odometry lags
        self._behind_count = 0  # consecutive joint_states skipped for being older than the odometry
        self._steady = Clock(clock_type=ClockType.STEADY_TIME)
        self._msg_cmd = JointState()
        # preserialised; frame_id names the source (a simulator or driver accepts this node's only)
        self._w_cmd = joint_state_writer(clm.actuated_joint_names, ("effort",), frame_id=self.get_name())
        self._last_state: float | None = None  # time.monotonic() [s] of the latest state
        self._ready: bool | None = None
        self._next_timing = -float("inf")  # stamp [s] from which the next wbc/timing goes out
        #: composed deployment: called with every command (:class:`ActuatorCommand`)
        self.command_listener = None
        pub = self.create_publisher
        self._pub_cmd = self.create_stream_publisher(JointState, "actuators/command", qos.COMMAND)
        self.watch_single_writer("actuators/command", self.get_name())  # a second source is an ERROR
        self._pub_arr = (pub(Float64MultiArray, "actuators/command_array", qos.COMMAND)
                         if p.publish_command_array else None)
        self._pub_timing = pub(Float64MultiArray, "wbc/timing", qos.VISUALIZATION)
        self._pub_com = pub(PointStamped, "wbc/com_target", qos.VISUALIZATION)
        self._pub_footsteps = pub(MarkerArray, "wbc/footsteps", qos.VISUALIZATION)
        self._footstep_plan = 0  # the walk's plan count of the last footsteps published
        self._w_com = point_stamped_writer(p.odom_frame)
        self._pub_ready = pub(Bool, "wbc/ready", qos.LATCHED)
        self._publish_ready(False)
        sub = self.create_subscription
        if not chained:  # newest sample wins: an overrun tick skips to the latest state
            if p.fault_detection:  # the motor torques for the fault detector (composed: chained in)
                sub(JointState, "actuators/state", self._on_actuators, qos.SENSOR_LATEST)
            sub(JointState, "joint_states", self._on_joints, qos.SENSOR_LATEST)
            sub(Odometry, "estimation/base_odometry", self._on_odometry, qos.SENSOR_LATEST)
            subscribe_sole_wrenches(self, self.component.settings.sole_frames)
        if p.rig:  # the bench's force plate (composed: in-process, on_plate_force)
            if not chained:
                sub(WrenchStamped, "rig/plate_wrench", self._on_plate, qos.SENSOR_LATEST)
            self._pub_sole_target = pub(PoseStamped, "rig/sole_target", qos.VISUALIZATION)
        for sole in p.sole_frames:
            sub(PoseStamped, f"wbc/{sole}/pose_reference", lambda msg, s=sole: self._on_foot_reference(s, msg),
                qos.SENSOR_STATE)
        sub(PointStamped, "wbc/com_reference", self._on_com_reference, qos.SENSOR_STATE)
        # the walk's velocity command (teleop_twist_keyboard, a joystick's teleop_twist_joy, nav2...)
        sub(Twist, "cmd_vel", self._on_cmd_vel, qos.SENSOR_STATE)
        self.create_timer(1.0, self._check_cmd_vel_sources, clock=self._steady)
        for name in BEHAVIOURS:
            self.create_service(Trigger, f"wbc/behaviour/{name}",
                                lambda req, res, n=name: self._on_behaviour_service(n, res))
        self.create_service(Trigger, "wbc/reset", self._on_reset)
        self.create_timer(WATCHDOG_PERIOD_S, self._watchdog, clock=self._steady)
        self.get_logger().info(
            f"whole_body_controller: {p.formulation} QP, {type(self.controller).__name__}, "
            f"{self.controller.layout.describe() if hasattr(self.controller, 'layout') else ''}, "
            f"behaviour {'rig (bench ' + p.rig + ')' if p.rig else p.behaviour}")

    def on_plate_force(self, normal_force_n: float, stamp_s: float) -> None:
        """The bench's force plate: its normal force [N] at ``stamp_s`` [s] to the rig behaviour (the
        press's loop; ``rig/plate_wrench``, or in-process in the composed deployment)."""
        self.component.on_plate_force(normal_force_n, stamp_s)

    def _on_plate(self, msg: WrenchStamped) -> None:
        self.on_plate_force(-msg.wrench.force.z, time_msg_to_seconds(msg.header.stamp))

    # ------------------------------------------------------------------ behaviours and parameters
    def _select(self, name: str, how: str = "") -> None:
        """Start behaviour ``name`` with its parameters (InputError if they do not fit it); on the
        bench always its ``rig`` behaviour."""
        name = select_behaviour(self.component, self.params, name)
        self.get_logger().info(f"behaviour: {name}{how}")

    def on_parameters_changed(self, params, changed: set[str]) -> None:
        try:
            configure_control(self.component, params)  # the one way parameters reach the controller
        except InputError as exc:
            self.get_logger().error(f"parameters not applied: {exc}")
        if changed & MODE_PARAMETERS.keys():  # applied in the controller's thread, before its next tick
            self._pending_modes = self._modes(params)
        if "payloads" in changed:  # the same
            self._pending_payloads = parse_payload_parameter(params.payloads)
        if changed & BEHAVIOUR_PARAMETERS:
            try:
                self._select(params.behaviour)
            except InputError as exc:
                self.get_logger().error(f"behaviour {params.behaviour!r} not started: {exc}")

    def _modes(self, params: WholeBodyControllerParams) -> dict[str, str]:
        """Every actuator's mode as the parameters say (the others active)."""
        modes = dict.fromkeys(self.clm.actuated_joint_names, "active")
        for key, mode in MODE_PARAMETERS.items():
            modes.update(dict.fromkeys(getattr(params, key), mode))
        return modes

    def _apply_modes(self) -> None:
        """The operator's modes to the component (the controller's thread), then ``actuators/modes``."""
        modes, self._pending_modes = self._pending_modes, None
        for name, mode in (modes or {}).items():
            try:
                self.component.set_actuator_mode(name, mode)
            except InputError as exc:  # the parameter check let it through: say so, keep the rest
                self.get_logger().error(f"actuator mode {name} {mode} not applied: {exc}")
        self._publish_modes()

    def apply_pending(self) -> None:
        """Apply the operator's word not applied yet (actuator modes, payloads): the controller's
        thread, before a tick's model update (the composed chain calls it before the chain)."""
        if self._pending_modes is not None:
            self._apply_modes()
        if self._pending_payloads is not None:
            self._apply_payloads()

    def _check_payloads(self, value) -> str | None:
        """None if the ``payloads`` parameter's value can be applied, else the reason."""
        try:
            return self._payloads.check(parse_payload_parameter(value))
        except InputError as exc:
            return str(exc)

    def _apply_payloads(self) -> None:
        """The operator's payloads to the model (the controller's thread), then ``model/payloads``."""
        payloads, self._pending_payloads = self._pending_payloads, None
        t0 = time.perf_counter()
        try:
            changed = self._payloads.set(payloads or {})
        except InputError as exc:  # the parameter check let it through: say so, keep the model
            self.get_logger().error(f"payloads {payloads} not applied: {exc}")
            return
        ms = 1e3 * (time.perf_counter() - t0)
        text = self._payloads.describe()
        if changed:
            self.get_logger().warning(f"payloads: {text}, robot {self.clm.mass_kg:.2f} kg (model updated in "
                                      f"{ms:.3f} ms)")
        self._pub_payloads.publish(payloads_msg(self._payloads.carried, f"{text} (operator); robot "
                                                f"{self.clm.mass_kg:.3f} kg"))

    def _publish_modes(self) -> None:
        """``actuators/modes`` (latched) when the component's modes changed since the last one."""
        c = self.component
        if c.modes_version == self._modes_version:
            return
        self._modes_version = c.modes_version
        causes = c.actuator_mode_causes
        text = "; ".join(f"{n} {c.actuator_modes[n]} ({why})" for n, why in causes.items()) or "all actuators active"
        self._pub_modes.publish(actuator_modes_msg(c.actuator_modes, text))
        self.log_events(c)

    def _on_actuators(self, msg: JointState) -> None:
        """``actuators/state`` → the fault detector (motor torques, stroke velocities)."""
        try:
            arr = self._act.from_joint_state(msg, required=("velocity", "effort"))
        except InputError as exc:
            self.throttled.warning("actuators/state", f"actuators/state skipped by the fault detector: {exc}")
            return
        self.component.on_actuator_sample(ActuatorSample(arr.position, arr.velocity, arr.effort, arr.stamp_s))

    def _on_behaviour_service(self, name: str, response: Trigger.Response) -> Trigger.Response:
        try:
            self._select(name, " (service)")
        except InputError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, f"behaviour {name} starts at the next state sample"
        return response

    def _on_reset(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.supervisor.reset()
        response.success, response.message = True, "safe-mode latch cleared"
        return response

    # ------------------------------------------------------------------ inputs
    def _on_odometry(self, msg: Odometry) -> None:
        try:
            odom = odometry_msg_to_arrays(msg)
        except InputError as exc:
            self.throttled.warning("odometry", f"estimation/base_odometry skipped: {exc}")
            return
        self._q[:3], self._q[3:7] = odom.position, odom.quaternion_xyzw  # a unit quaternion
        self._v[:3], self._v[3:6] = odom.linear, odom.angular  # twist in base_link = free-flyer convention
        self._odom_stamp = odom.stamp_s
        pending, self._pending_joints = self._pending_joints, None
        if pending is not None and abs(pending[0] - odom.stamp_s) <= self.params.odometry_max_lag_s:
            self._waiting_since = None
            self.process(self._q, self._v, pending[0], pending[1])  # the pair is complete now

    def _on_com_reference(self, msg: PointStamped) -> None:
        self.component.set_com_reference(vector3_msg_to_array(msg.point), self._now_s())

    def _on_cmd_vel(self, msg: Twist) -> None:
        try:
            self.component.set_velocity_command(msg.linear.x, msg.linear.y, msg.angular.z, self._now_s())
        except InputError as exc:
            self.throttled.warning("cmd_vel", f"cmd_vel skipped: {exc}")

    def _check_cmd_vel_sources(self) -> None:
        """Two cmd_vel publishers fight over the walk: say so (a twist_mux picks one)."""
        n = self.count_publishers(self.resolve_topic_name("cmd_vel"))
        if n > 1:
            self.throttled.warning("cmd_vel sources", f"cmd_vel has {n} publishers: their commands interleave; "
                                   "use one source (e.g. twist_mux)")

    def _on_foot_reference(self, sole: str, msg: PoseStamped) -> None:
        try:
            position, quat = pose_msg_to_arrays(msg.pose)
        except InputError as exc:
            self.throttled.warning("pose_reference", f"wbc/{sole}/pose_reference skipped: {exc}")
            return
        R = xyzw_to_pin_quaternion(quat).toRotationMatrix()
        self.component.set_foot_reference(sole, FrameReference(position=position, rotation=R), self._now_s())

    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_joints(self, msg: JointState) -> None:
        try:
            arr = self._joints.from_joint_state(msg, required=("position", "velocity"))
        except InputError as exc:
            self.throttled.warning("joint_states", f"joint_states rejected: {exc}")
            return self.process(self._q, self._v, float("nan"), msg.header.stamp)
        self._q[self._idx_q] = arr.position
        self._v[self._idx_v] = arr.velocity
        self._pending_joints = None
        lag = self.params.odometry_max_lag_s
        if self._odom_stamp is not None and self._odom_stamp < arr.stamp_s - lag:
            # the odometry of this time may be on its way (after a stall the executor can take
            # the newest joint_states first): wait for it, for at most ``lag`` of joint_states
            # time, then go on without a base state (safe mode) as before
            if self._waiting_since is None:
                self._waiting_since = arr.stamp_s
            if arr.stamp_s - self._waiting_since <= lag:
                self._pending_joints = (arr.stamp_s, msg.header.stamp)
                return
        else:
            self._waiting_since = None
        if self._odom_stamp is not None and arr.stamp_s < self._odom_stamp - lag \
                and self._behind_count < MAX_JOINT_STATES_BEHIND:
            # joint_states older than the odometry: a newer one (published before that odometry)
            # is on its way; skip this one instead of running without a base state
            self._behind_count += 1
            return
        self._behind_count = 0
        if self._odom_stamp is None or abs(arr.stamp_s - self._odom_stamp) > lag:
            stamp_s = float("nan")  # no base state of this sample's time (either way: a clock restart)
        else:
            stamp_s = arr.stamp_s
        self.process(self._q, self._v, stamp_s, msg.header.stamp)

    # ------------------------------------------------------------------ one state sample
    def process(self, q: np.ndarray, v: np.ndarray, stamp_s: float, stamp=None, prepared: bool = False,
                now_s: float | None = None):
        """Run the component on the state ``(q, v)`` of time ``stamp_s`` [s] (NaN: no consistent
        state) and publish the command. ``prepared``: the model was already updated at ``(q, v)``
        (:meth:`WholeBodyControl.prepare`, composed deployment). ``now_s``: the current time [s]
        when the caller knows it (composed with the simulator: the sample's stamp), else the
        node's clock. Returns the command."""
        now = self._now_s() if now_s is None else now_s
        self._last_state = time.monotonic()
        self.apply_pending()
        age = now - stamp_s if stamp_s == stamp_s else float("inf")
        if not prepared and age != float("inf"):
            self.component.prepare(q, v)
        cmd = self.component.step(now, q, v, age)
        self.tick_count += 1
        if self.component.modes_version != self._modes_version:  # the fault detector declared one
            self._publish_modes()
        if stamp is None and stamp_s != stamp_s:  # no state of a known time: the node's clock
            stamp = seconds_to_time_msg(now)
        self._publish(cmd, stamp, stamp_s)
        return cmd

    def _watchdog(self) -> None:
        """Safe mode while no state arrives for longer than ``state_timeout_s`` (steady clock); the
        operator's modes and payloads are applied here while no tick runs."""
        if self._last_state is None:
            self.apply_pending()
            return
        silent = time.monotonic() - self._last_state
        if silent > self.params.state_timeout_s:
            self.apply_pending()
        if silent > self.params.state_timeout_s:
            self.component.stale(silent)
            self._after()

    # ------------------------------------------------------------------ outputs
    def _publish_ready(self, ready: bool) -> None:
        if ready != self._ready:
            self._ready = ready
            self._pub_ready.publish(Bool(data=ready))

    def _after(self) -> None:
        self.log_events(self.component)
        self._publish_ready(self.component.ready)

    def _publish(self, cmd, stamp, stamp_s: float) -> None:
        if not self._pub_cmd.wanted():  # nobody subscribes (composed: the simulator is chained)
            pass
        elif stamp_s == stamp_s:
            self._pub_cmd.publish(self._w_cmd.write(stamp_s, effort=cmd.tau_a))
        else:  # no state of a known time: stamped with the node's clock
            self._pub_cmd.publish(
                self._act.to_joint_state(effort=cmd.tau_a, stamp=stamp, msg=self._msg_cmd, frame_id=self.get_name()))
        if self.command_listener is not None:
            self.command_listener(ActuatorCommand(cmd.tau_a, stamp_s))
        if self._pub_arr is not None:
            self._pub_arr.publish(self._act.to_float64_multi_array(cmd.tau_a))
        self._after()
        if not stamp_s >= self._next_timing:  # rate-limited by the stamps (NaN: no timing)
            return
        self._next_timing = stamp_s + 1.0 / self.params.timing_rate_hz - 1e-9
        out = cmd.output
        msg = Float64MultiArray()
        msg.layout.dim = [MultiArrayDimension(label=label, size=1, stride=1) for label in TIMING_LABELS]
        msg.data = ([out.timing.get(k, 0.0) for k in TIMING_LABELS[:-1]] + [float(out.qp.iterations)]
                    if out else [0.0] * len(TIMING_LABELS))
        self._pub_timing.publish(msg)
        ref = self.component.supervisor.last_references
        if cmd.mode == "control" and ref is not None and ref.com_position is not None:
            self._pub_com.publish(self._w_com.write(stamp_s, point=ref.com_position))
        if self.rig and ref is not None:
            self._publish_sole_target(ref, stamp_s)
        self._publish_footsteps(stamp_s)

    def _publish_sole_target(self, ref, stamp_s: float) -> None:
        """``rig/sole_target``: the bench sole's reference in the estimated pelvis frame (``base_link``),
        while the behaviour gives one (the circle and the descent; not the press)."""
        foot = ref.foot_poses.get(self.params.rig_leg)
        if foot is None:
            return
        R_b, p_b = self.controller.pm.placement("base_link")
        msg = PoseStamped(header=Header(stamp=seconds_to_time_msg(stamp_s), frame_id="base_link"))
        x, y, z = (float(c) for c in R_b.T @ (np.asarray(foot.position) - p_b))
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = x, y, z
        quat = pin.Quaternion(R_b.T @ np.asarray(foot.rotation))
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = float(quat.x), float(quat.y), float(quat.z), float(quat.w)
        self._pub_sole_target.publish(msg)

    def _publish_footsteps(self, stamp_s: float) -> None:
        """``wbc/footsteps``: a walk's soles and planned footsteps (boxes in the odometry frame), at
        each new plan (:meth:`~kangaroo_wbc.control.locomotion.Walk.footstep_boxes`)."""
        walk = self.component.supervisor.behaviour
        if not hasattr(walk, "footstep_boxes") or walk.plan_count == self._footstep_plan:
            return
        self._footstep_plan = walk.plan_count
        header = Header(stamp=seconds_to_time_msg(stamp_s), frame_id=self.params.odom_frame)
        markers = [Marker(header=header, ns="footsteps", id=0, action=Marker.DELETEALL)]
        for i, (spec, colour, size) in enumerate(footstep_markers(walk.footstep_boxes(), self.contacts), start=1):
            m = Marker(header=header, ns="footsteps", id=i, type=Marker.CUBE, action=Marker.ADD)
            m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(x) for x in spec[:3])
            o = m.pose.orientation
            o.x, o.y, o.z, o.w = (float(x) for x in spec[3:7])
            m.scale.x, m.scale.y, m.scale.z = (float(x) for x in size)
            m.color.r, m.color.g, m.color.b, m.color.a = colour
            markers.append(m)
        self._pub_footsteps.publish(MarkerArray(markers=markers))

    # ------------------------------------------------------------------ shutdown
    def on_shutdown(self) -> None:
        """Leave the actuators with zero force, and say the controller is no longer ready."""
        self._pub_cmd.publish(
            self._act.to_joint_state(effort=np.zeros(self.clm.n_a), msg=self._msg_cmd, frame_id=self.get_name()))
        self._publish_ready(False)


main = main_for(WholeBodyControllerNode)
