"""``whole_body_controller`` node: balance behaviours → actuator axial forces (Kangaroo paper eq. (27)-(29)).

Event-driven on ``joint_states`` paired with ``estimation/base_odometry`` of its time
(:class:`~kangaroo_wbc.ros.state_pairing.StatePairing`) and, optionally, ``contact/<sole>/wrench``
(measured contacts). Each sample runs the component built by
:func:`~kangaroo_wbc.components.assembly.build_control` (behaviour → WBC QP → forces, or the safe mode,
:class:`~kangaroo_wbc.control.supervisor.WbcSupervisor`) and publishes ``actuators/command``
(JointState, ``effort`` = axial force [N], stamped with the state sample, ``frame_id`` = this node's
name: the source tag the simulator checks; with ``interface: ros2_control`` the effort controllers'
``<controller>/commands`` instead, from the first ready on, and asks the controller manager to
switch to them: :class:`~kangaroo_wbc.ros.ros2_control_topics.EffortCommandOutput`), ``wbc/ready`` (latched: the
start-up handshake), optionally
``actuators/command_array``, at ``timing_rate_hz`` ``wbc/timing`` and ``wbc/com_target``, a walk's
``wbc/footsteps``, and ``/diagnostics``. When ``joint_states`` stop for longer than
``state_timeout_s`` (the steady clock; while the node follows a simulated clock, that clock, so
that a stalled simulation is not a lost state, unless the steady clock went 2 s without a state:
:func:`~kangaroo_wbc.ros.node_support.state_silence_s`) the node reports the safe mode and
publishes nothing (the actuators' own command watchdog acts).

Behaviours: parameter ``behaviour`` or the ``std_srvs/Trigger`` services ``wbc/behaviour/<name>``;
``wbc/reset`` leaves a latched safe mode. External references ``wbc/com_reference`` and
``wbc/<sole>/pose_reference`` override the behaviour while younger than ``reference_timeout_s``,
bounded by the reference governor; ``cmd_vel`` drives the walk. Every parameter change goes through
:func:`~kangaroo_wbc.components.assembly.configure_control`; the actuator modes and payloads are the
operator's word (:class:`~kangaroo_wbc.ros.operator_word.OperatorWord`, ``docs/morphology.md``). On a
test bench (``rig``) the controller runs the bench's behaviour on the force plate's
``rig/plate_wrench`` and publishes ``rig/sole_target``. Topics and parameters: ``docs/interface.md``.
"""

from __future__ import annotations

import os
import time
from typing import cast

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: BLAS threads only add latency

import numpy as np  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.clock import Clock, ClockType  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Bool, Float64MultiArray  # noqa: E402

from kangaroo_wbc.components.assembly import build_control, configure_control, select_behaviour  # noqa: E402
from kangaroo_wbc.components.controller_params import (  # noqa: E402
    BEHAVIOUR_PARAMETERS,
    WholeBodyControllerParams,
)
from kangaroo_wbc.components.ros2_control.settings import build_boundary  # noqa: E402
from kangaroo_wbc.components.samples import ActuatorCommand, ActuatorSample  # noqa: E402
from kangaroo_wbc.control.behaviours import BEHAVIOURS  # noqa: E402
from kangaroo_wbc.errors import InputError  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.controller_inputs import BehaviourServices, ReferenceInputs  # noqa: E402
from kangaroo_wbc.ros.controller_outputs import ControllerOutputs  # noqa: E402
from kangaroo_wbc.ros.conversions import JointIndexMap, seconds_to_time_msg, time_msg_to_seconds  # noqa: E402
from kangaroo_wbc.ros.node_base import KangarooNode, main_for  # noqa: E402
from kangaroo_wbc.ros.node_support import load_node_model, state_silence_s, subscribe_sole_wrenches  # noqa: E402
from kangaroo_wbc.ros.operator_word import OperatorWord  # noqa: E402
from kangaroo_wbc.ros.ros2_control_topics import EffortCommandOutput  # noqa: E402
from kangaroo_wbc.ros.serialized import joint_state_writer  # noqa: E402
from kangaroo_wbc.ros.state_pairing import StatePairing  # noqa: E402

#: Period [s] of the joint_states watchdog (steady clock).
WATCHDOG_PERIOD_S = 0.1


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
        self.component = build_control(clm, p)
        self.supervisor = self.component.supervisor
        self.controller = self.supervisor.controller
        self.contacts = list(getattr(self.controller, "full", self.controller).contacts)
        self.get_logger().info(f"behaviour: {'rig' if p.rig else p.behaviour}")
        self.operator = OperatorWord(self, self.component, clm, p)  # actuator modes, payloads
        self._act = JointIndexMap(clm.actuated_joint_names, what="actuator")
        #: joint_states + odometry → the state of one time
        self.pairing = StatePairing(clm, lambda q, v, stamp_s, stamp, source: self.process(q, v, stamp_s, stamp),
                                    self.throttled.warning, p.odometry_max_lag_s)
        self._msg_cmd = JointState()
        # preserialised; frame_id names the source (a simulator or driver accepts this node's only)
        self._w_cmd = joint_state_writer(clm.actuated_joint_names, ("effort",), frame_id=self.get_name())
        #: the latest state's time [s]: steady clock, and simulated clock (None: not followed)
        self._last_state: tuple[float, float | None] | None = None
        self._ready: bool | None = None
        #: composed deployment: called with every command (:class:`ActuatorCommand`)
        self.command_listener = None
        #: ros2_control: the effort controllers' topics instead of actuators/command
        self.effort = EffortCommandOutput(self, build_boundary(clm, p)) if p.interface == "ros2_control" else None
        self._q_state: np.ndarray | None = None  # the configuration of the latest state (serial torques)
        pub = self.create_publisher
        self._pub_cmd = self.create_stream_publisher(JointState, "actuators/command", qos.COMMAND)
        self.watch_single_writer("actuators/command", self.get_name())  # a second source is an ERROR
        self._pub_arr = (pub(Float64MultiArray, "actuators/command_array", qos.COMMAND)
                         if p.publish_command_array else None)
        #: wbc/timing, wbc/com_target, wbc/footsteps, rig/sole_target
        self.outputs = ControllerOutputs(self, self.component, self.contacts)
        self._pub_ready = pub(Bool, "wbc/ready", qos.LATCHED)
        self._publish_ready(False)
        sub = self.create_subscription
        if not chained:  # newest sample wins: an overrun tick skips to the latest state
            if p.fault_detection:  # the motor torques for the fault detector (composed: chained in)
                self.create_joint_state_subscription("actuators/state", self._on_actuators, qos.SENSOR_LATEST)
                if p.sim_clock == "stamps" and p.interface == "native":  # straight from the robot or simulator
                    self.take_clock_from_stamps("actuators/state")
            self.create_joint_state_subscription("joint_states", self.pairing.on_joints, qos.SENSOR_LATEST)
            self.create_stamped_subscription(Odometry, "estimation/base_odometry", self.pairing.on_odometry,
                                             qos.SENSOR_LATEST)
            subscribe_sole_wrenches(self, self.component.settings.sole_frames)
        if p.rig and not chained:  # the bench's force plate (composed: in-process, on_plate_force)
            sub(WrenchStamped, "rig/plate_wrench", self._on_plate, qos.SENSOR_LATEST)
        self.references = ReferenceInputs(self, self.component, p.sole_frames)  # references, cmd_vel
        self.behaviour_services = BehaviourServices(self, list(BEHAVIOURS), self._select, self.supervisor.reset)
        self.create_timer(WATCHDOG_PERIOD_S, self._watchdog, clock=Clock(clock_type=ClockType.STEADY_TIME))
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
        self.pairing.max_lag_s = params.odometry_max_lag_s
        try:
            configure_control(self.component, params)  # the one way parameters reach the controller
        except InputError as exc:
            self.get_logger().error(f"parameters not applied: {exc}")
        self.operator.on_parameters(params, changed)  # applied in the controller's thread, before its next tick
        if changed & BEHAVIOUR_PARAMETERS:
            try:
                self._select(params.behaviour)
            except InputError as exc:
                self.get_logger().error(f"behaviour {params.behaviour!r} not started: {exc}")

    def apply_pending(self) -> None:
        """Apply the operator's word not applied yet (actuator modes, payloads): the controller's
        thread, before a tick's model update (the composed chain calls it before the chain)."""
        self.operator.apply_pending()

    def _on_actuators(self, msg: JointState) -> None:
        """``actuators/state`` → the fault detector (motor torques, stroke velocities)."""
        try:
            arr = self._act.from_joint_state(msg, required=("velocity", "effort"))
        except InputError as exc:
            self.throttled.warning("actuators/state", f"actuators/state skipped by the fault detector: {exc}")
            return
        assert arr.velocity is not None  # required: from_joint_state raised otherwise
        self.stamp_clock(arr.stamp_s)  # with the clock taken from the stamps
        # the position is not required and may be None (the fault detector reads the velocity and
        # effort); ActuatorSample types it as an array
        position = cast(np.ndarray, arr.position)
        self.component.on_actuator_sample(ActuatorSample(position, arr.velocity, arr.effort, arr.stamp_s),
                                          self.shared_commands())

    # ------------------------------------------------------------------ one state sample
    def process(self, q: np.ndarray, v: np.ndarray, stamp_s: float, stamp=None, prepared: bool = False,
                now_s: float | None = None):
        """Run the component on the state ``(q, v)`` of time ``stamp_s`` [s] (NaN: no consistent
        state) and publish the command. ``prepared``: the model was already updated at ``(q, v)``
        (:meth:`WholeBodyControl.prepare`, composed deployment). ``now_s``: the current time [s]
        when the caller knows it (composed with the simulator: the sample's stamp), else the
        node's clock. Returns the command."""
        now = self.references.now_s() if now_s is None else now_s
        self._last_state = self._watchdog_clock(now_s)
        self.apply_pending()
        self._q_state = q
        age = now - stamp_s if stamp_s == stamp_s else float("inf")
        if not prepared and age != float("inf"):
            self.component.prepare(q, v)
        cmd = self.component.step(now, q, v, age)
        self.tick_count += 1
        self.operator.publish_modes()  # the fault detector may have declared one
        if stamp is None and stamp_s != stamp_s:  # no state of a known time: the node's clock
            stamp = seconds_to_time_msg(now)
        self._publish(cmd, stamp, stamp_s)
        return cmd

    def _watchdog_clock(self, now_s: float | None = None) -> tuple[float, float | None]:
        """The watchdog's times [s]: the steady clock, and the simulated clock while the node follows
        one (``/clock``, or set in-process by the composed executable), else None. ``now_s``: the
        simulated time of the tick, taken instead of reading the clock when the hosting process
        sets the clock from those same times (composed with the simulator)."""
        clock = self.get_clock()
        if not clock.ros_time_is_active:  # type: ignore[attr-defined]  # rclpy: a node's clock is a ROSClock
            return time.monotonic(), None
        if now_s is not None and self.time_set_in_process:
            return time.monotonic(), now_s
        return time.monotonic(), clock.now().nanoseconds * 1e-9

    def _watchdog(self) -> None:
        """Safe mode while no state arrives for longer than ``state_timeout_s`` (:meth:`_watchdog_clock`);
        the operator's modes and payloads are applied here while no tick runs."""
        if self._last_state is None:
            self.apply_pending()
            return
        silent = state_silence_s(self._watchdog_clock(), self._last_state, self.params.state_timeout_s)
        if silent > self.params.state_timeout_s:
            self.apply_pending()
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
        if self.effort is not None:  # ros2_control: the effort controllers' topics, from ready on
            self.effort.publish(cmd.tau_a, self._q_state, self.component.ready, stamp_s)
        elif not self._pub_cmd.wanted():  # nobody subscribes (composed: the simulator is chained)
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
        self.outputs.publish(cmd, stamp_s)

    def diagnostic_statuses(self) -> list:
        """The component's statuses; on ros2_control also the hand-over's (gate, switch)."""
        extra = self.to_diagnostics(self.effort.statuses()) if self.effort is not None else []
        return super().diagnostic_statuses() + extra

    # ------------------------------------------------------------------ shutdown
    def on_shutdown(self) -> None:
        """Leave the actuators with zero force, and say the controller is no longer ready."""
        if self.effort is not None:
            self.effort.zero()
        else:
            self._pub_cmd.publish(
                self._act.to_joint_state(effort=np.zeros(self.clm.n_a), msg=self._msg_cmd, frame_id=self.get_name()))
        self._publish_ready(False)


main = main_for(WholeBodyControllerNode)
