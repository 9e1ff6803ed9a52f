"""``sim`` node: the simulated Kangaroo behind the hardware-interface topic contract.

A thin adapter around :class:`~kangaroo_wbc.components.simulated_robot.SimulatedRobot` (boot on
the crane, ``wbc/ready`` release, command guard, watchdog, latency): every tick it publishes what
the robot's driver would (``actuators/state``, ``passive_encoders/state``, ``imu/data``), the
simulation time on ``/clock`` and the ground truth (``sim/ground_truth/*``, built only for subscribed
topics); it applies ``actuators/command``, follows ``wbc/ready`` and publishes the command latencies
on ``sim/command_latency`` once per wall second. See ``docs/sim.md``. The parameter ``faults``
(``["lock:ACTUATOR@T", "limp:ACTUATOR@T", ...]``, ``T`` seconds of simulated time after the crane's
release) welds or disables actuators in the simulation, and the parameter ``payloads``
(``["MASS@LINK@T", ...]``, e.g. ``6kg@torso@4``) attaches point masses; the simulator tells no
other node (the controller learns it from its operator or its fault detector, ``docs/morphology.md``).
With ``rig`` (``one_leg``) the node simulates the test bench instead (the pelvis welded, a force plate
under the ``rig_leg`` foot: :func:`~kangaroo_wbc.components.rig.rig_robot`) and publishes the plate's
reading on ``rig/plate_wrench`` with every sample.

Threads: the simulation runs in its own loop thread, paced to the wall clock (``realtime``), as
fast as possible, or in ``lockstep`` (paced until the controller is ready, then one step per command
answering the latest sample, or after ``lockstep_timeout_s`` without one); the executor thread runs
the command and ready callbacks and the diagnostics timers. In-process hooks for the composed
deployment: :meth:`SimNode.add_sample_listener`, :meth:`SimNode.submit_command`,
:meth:`SimNode.set_controller_ready`.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: threads only cost (docs/sim.md)

import math  # noqa: E402
import random  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, replace  # noqa: E402

import numpy as np  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.clock import Clock, ClockType  # noqa: E402
from rosgraph_msgs.msg import Clock as ClockMsg  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402
from std_msgs.msg import Bool, Float64MultiArray  # noqa: E402

from kangaroo_wbc.components.parameters import rig_leg_parameter, rig_parameter  # noqa: E402
from kangaroo_wbc.components.samples import ActuatorCommand, Level, Status  # noqa: E402
from kangaroo_wbc.components.simulated_robot import (  # noqa: E402
    SimulatedRobot,
    SimulatedRobotConfig,
    parse_fault,
    parse_payload,
    payload_link,
)
from kangaroo_wbc.errors import ConfigError, InputError  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import (  # noqa: E402
    JointIndexMap,
    arrays_to_transform_stamped,
    quaternion_wxyz_to_xyzw,
    seconds_to_time_msg,
    time_msg_to_seconds,
    vector_to_wrench_stamped,
)
from kangaroo_wbc.ros.diagnostics import LOG_LEVELS  # noqa: E402
from kangaroo_wbc.ros.node_base import KangarooNode, main_for  # noqa: E402
from kangaroo_wbc.ros.node_support import add_parameter_check, unknown_names  # noqa: E402
from kangaroo_wbc.ros.params import SharedFields, parameter  # noqa: E402
from kangaroo_wbc.ros.publication import publication_thread  # noqa: E402
from kangaroo_wbc.ros.serialized import imu_writer, joint_state_writer, odometry_writer  # noqa: E402
from kangaroo_wbc.ros.tf import make_tf_broadcaster  # noqa: E402

_D = SimulatedRobotConfig()  # the defaults are the component's
#: A lockstep timeout shows in /diagnostics for this long [s] (wall clock).
EVENT_HOLD_S = 2.0


#: Realtime pacing: a loop late by up to this [s] catches up (simulated time keeps to the wall
#: clock on average); later than that it restarts its schedule (an overrun, in the diagnostics).
MAX_CATCH_UP_S = 0.02
#: Realtime: when the controller's last command arrived more than half the watchdog's timeout ago
#: (simulated time), the loop waits for the next one, up to this long [s, wall clock], rather than
#: simulate on without it: a controller process that the host starves for a moment (a busy
#: machine, a burst of DDS discovery when graph introspection starts a participant) does not trip
#: the watchdog; one that stays silent longer does, as before.
CONTROLLER_WAIT_S = 0.5


def _check_faults(texts: list[str]) -> str | None:
    """None if every entry reads ``MODE:ACTUATOR@T`` (:func:`parse_fault`), else the reason."""
    try:
        for text in texts:
            parse_fault(text)
    except InputError as exc:
        return str(exc)
    return None


def _check_payloads(texts: list[str]) -> str | None:
    """None if every entry reads ``MASS@LINK@T`` (:func:`parse_payload`), else the reason."""
    try:
        for text in texts:
            parse_payload(text)
    except InputError as exc:
        return str(exc)
    return None


@dataclass
class SimParams:
    """Parameters of the ``sim`` node (``config/sim.yaml``)."""

    rate_hz: float = parameter(_D.rate_hz, "Control rate: one step and one publication per tick [Hz]",
                               bounds=(10.0, 5000.0), read_only=True)
    floating_base: bool = parameter(_D.floating_base, "Free base on the floor, booted on the crane "
                                    "(false: base welded in the air)", read_only=True)
    seed: int = parameter(_D.seed, "Seed of encoder offsets, IMU biases, noise and dropped commands",
                          bounds=(0, 2**31 - 1), read_only=True)
    sensor_noise: bool = parameter(_D.sensor_noise, "Sensor noise and IMU biases on (encoder boot offsets "
                                   "always)", read_only=True)
    ideal_actuators: bool = parameter(_D.ideal_actuators, "Ideal actuators: forces act as commanded, motor "
                                      "torque = eq. (47) inverse (false: ball-screw drives, docs/sim.md)",
                                      read_only=True)
    realtime: bool = parameter(True, "Pace the loop to the wall clock (false: as fast as possible)")
    lockstep: bool = parameter(False, "Once the controller is ready, step once per command answering the "
                               "latest sample (paced to the wall clock before)", read_only=True)
    lockstep_timeout_s: float = parameter(0.05, "Lockstep: step with the last command after this long "
                                          "without an answer [s] (wall clock)", bounds=(0.001, 10.0))
    watchdog_timeout_s: float = parameter(_D.watchdog_timeout_s, "No valid command for longer than this (sim "
                                          "time) → hold PD on the crane, else zero force plus damping [s]",
                                          bounds=(0.001, 10.0))
    watchdog_damping_n_s_per_m: float = parameter(_D.watchdog_damping_n_s_per_m, "Watchdog damping d in "
                                                  "τ = −d·θ̇ [N·s/m]", bounds=(0.0, 2000.0))
    hold_kp_n_per_m: float = parameter(_D.hold_kp_n_per_m, "Hold PD on the raw encoders while on the crane "
                                       "[N/m]", bounds=(0.0, 1e7))
    hold_kd_n_s_per_m: float = parameter(_D.hold_kd_n_s_per_m, "Hold PD damping [N·s/m]", bounds=(0.0, 1e4))
    release_delay_s: float = parameter(_D.release_delay_s, "Crane released this long after wbc/ready [s] "
                                       "(sim time)", bounds=(0.0, 60.0))
    command_source: str = parameter("whole_body_controller", "Apply only actuators/command messages whose "
                                    "header.frame_id is this (the controller's node name); empty: any source")
    drop_ratio: float = parameter(0.0, "Fault injection: drop this fraction of the incoming commands at "
                                  "random (seeded)", bounds=(0.0, 0.99))
    controller: str = parameter(_D.controller, "Fallback after the release when no command is fresh: none "
                                "(damping) | pd (stand alone: counts as a ready controller)", read_only=True,
                                check=lambda v: None if v in ("none", "pd") else "must be one of ['none', 'pd']")
    pd_kp_n_per_m: float = parameter(_D.pd_kp_n_per_m, "Stiffness of the in-process PD [N/m]", bounds=(0.0, 1e7))
    pd_kd_n_s_per_m: float = parameter(_D.pd_kd_n_s_per_m, "Damping of the in-process PD [N·s/m]",
                                       bounds=(0.0, 2000.0))
    publish_ground_truth: bool = parameter(True, "Publish sim/ground_truth/* (to subscribed topics only)")
    ground_truth_decimation: int = parameter(10, "Publish the ground truth every N ticks", bounds=(1, 1000))
    tf_rate_hz: float = parameter(100.0, "Rate of TF odom → ground_truth/base_link [Hz] (0: off)",
                                  bounds=(0.0, 1000.0), read_only=True)
    faults: list[str] = parameter(list(_D.faults), "Actuator faults MODE:ACTUATOR@T (MODE lock, limp or "
                                  "active; T [s] of sim time after the crane's release), e.g. "
                                  "lock:left_ankle_inner_actuator@3; the controller is not told",
                                  check=_check_faults)
    payloads: list[str] = parameter(list(_D.payloads), "Payloads MASS@LINK@T: a point mass [kg] attached at "
                                    "the link's centre of mass (torso: base_link; negative: removed), T [s] of "
                                    "sim time after the crane's release, e.g. 6kg@torso@4; the controller is "
                                    "not told", check=_check_payloads)
    rig: str = rig_parameter()
    rig_leg: str = rig_leg_parameter()


#: The parameters that are fields of the component's configuration (same names).
SHARED_FIELDS = (SharedFields(SimulatedRobotConfig),)


def _robot_config(p: SimParams, base: SimulatedRobotConfig | None = None) -> SimulatedRobotConfig:
    return SHARED_FIELDS[0].build(p, base)


class SimNode(KangarooNode):
    """The simulated robot as a ROS 2 hardware interface (see the module docstring)."""

    def __init__(self, chained: bool = False) -> None:
        """``chained``: the composed deployment submits the commands in-process
        (:meth:`submit_command`); ``actuators/command`` is then not subscribed."""
        super().__init__("sim", SimParams)
        p = self.params
        try:
            if p.rig:  # the test bench, from the same generated files
                from kangaroo_wbc.components.rig import rig_robot
                from kangaroo_wbc.robots.kangaroo.rig import make_rig

                self.robot = robot = rig_robot(make_rig(p.rig, p.rig_leg), _robot_config(p))
            else:
                self.robot = robot = SimulatedRobot(_robot_config(p))
        except InputError as exc:  # e.g. a fault naming no actuator
            raise ConfigError(f"node 'sim': {exc}") from exc
        #: the rig's force plate: (force on the plate [N], world axes; stamp [s]) of the latest sample
        self.plate_reading: tuple[np.ndarray, float] | None = None
        sim = robot.sim
        add_parameter_check(self, ["faults"], lambda name, value: _check_faults(value or []) or unknown_names(
            [parse_fault(t)[1] for t in value or ()], robot.actuator_names, "actuator"))
        add_parameter_check(self, ["payloads"], lambda name, value: _check_payloads(value or []) or unknown_names(
            [payload_link(parse_payload(t)[1]) for t in value or ()], robot.body_names, "link"))
        import mujoco

        jid = [mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_JOINT, n) for n in sim.joint_names]
        self._gt_qadr, self._gt_dadr = sim.model.jnt_qposadr[jid], sim.model.jnt_dofadr[jid]
        self._act_map = JointIndexMap(robot.actuator_names, what="actuator")
        self._writers = {"act": joint_state_writer(robot.actuator_names),
                         "enc": joint_state_writer(robot.passive_encoder_names, ("position",)),
                         "imu": imu_writer("imu"),
                         "gt": joint_state_writer(sim.joint_names, ("position", "velocity")),
                         "odom": odometry_writer("odom", "ground_truth/base_link")}
        self._enc_map = JointIndexMap(robot.passive_encoder_names, what="passive encoder")
        self._stamp = Time()  # preallocated messages, all sharing one stamp object
        self._msg = {s: WrenchStamped() for s in sim.sole_names}
        self._clock_msg = ClockMsg(clock=self._stamp)
        pub, stream = self.create_publisher, self.create_stream_publisher
        self._pub = {"act": stream(JointState, "actuators/state", qos.SENSOR_STATE),
                     "enc": stream(JointState, "passive_encoders/state", qos.SENSOR_STATE),
                     "imu": stream(Imu, "imu/data", qos.SENSOR_STATE),
                     "clock": stream(ClockMsg, "/clock", qos.SENSOR_STATE),
                     "gt": stream(JointState, "sim/ground_truth/joint_states", qos.SENSOR_STATE),
                     "odom": stream(Odometry, "sim/ground_truth/base_odometry", qos.SENSOR_STATE),
                     **{s: pub(WrenchStamped, f"sim/ground_truth/{s}/wrench", qos.SENSOR_STATE)
                        for s in sim.sole_names}}
        self._latency_pub = pub(Float64MultiArray, "sim/command_latency", qos.VISUALIZATION)
        self._plate_pub = pub(WrenchStamped, "rig/plate_wrench", qos.SENSOR_STATE) if p.rig else None
        self._plate_msg = WrenchStamped()
        self._tf = make_tf_broadcaster(self) if p.tf_rate_hz > 0 else None
        self._next_tf_time = 0.0
        self._wrench_listened = False
        self._listeners: list[Callable] = []
        self._drop_rng = random.Random(p.seed)
        self._loop_stats = {"overruns": 0, "lockstep_timeouts": 0, "dropped_commands": 0, "max_gap_s": 0.0,
                            "controller_waits": 0}
        self._last_arrival_s: float | None = None  # simulated time of the last command received
        self._arrived = threading.Event()  # a command arrived (realtime: the loop may wait for one)
        self._gave_up_waiting = False  # realtime: waited CONTROLLER_WAIT_S in vain since the last command
        self._last_timeout = -float("inf")  # wall time of the last lockstep timeout
        self._awaited_s = 0.0  # lockstep: stamp of the latest published sample
        self._answered = threading.Event()  # lockstep: a command answering it arrived
        self._failure: str | None = None
        self._events = threading.Event()  # set on a notable event: publish /diagnostics soon
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        if not chained:
            self.create_subscription(JointState, "actuators/command", self._on_command, qos.COMMAND)
        if p.command_source:  # composed: no subscription, but another publisher is still reported
            self.watch_single_writer("actuators/command", p.command_source)
        self.create_subscription(Bool, "wbc/ready", lambda m: self.set_controller_ready(m.data), qos.LATCHED)
        self.create_timer(0.1, self._flush_events, clock=steady)
        self.create_timer(1.0, self._publish_latency, clock=steady)
        self._running = True
        self._thread = threading.Thread(target=self._loop, name="sim_loop", daemon=True)
        # composed: the loop starts with the first sample listener (add_sample_listener), so the
        # hosted estimator sees the boot from t = 0, as in the one-process loop
        if not chained:
            self._thread.start()
        self.get_logger().info(
            f"sim: {sim.n_actuators} actuators, {len(sim.joint_names)} joints, {p.rate_hz:g} Hz ({self._mode()}), "
            f"on the crane until wbc/ready (+{p.release_delay_s:g} s), controller {p.controller}")

    def _mode(self) -> str:
        p = self.params
        return "lockstep" if p.lockstep else "realtime" if p.realtime else "free-running"

    def _log(self, events) -> None:
        for e in events:
            self.throttled.log(LOG_LEVELS[e.level], f"{e.key}:{int(e.level)}", e.message)
            self._events.set()

    # ------------------------------------------------------------------ in-process hooks (composed)
    @property
    def actuator_names(self) -> list[str]:
        return self.robot.actuator_names

    @property
    def passive_encoder_names(self) -> list[str]:
        return self.robot.passive_encoder_names

    def add_sample_listener(self, fn: Callable) -> None:
        """``fn(ActuatorSample, EncoderSample, ImuSample)`` is called from the simulation loop thread
        with each tick's samples, while MuJoCo computes the next step in its worker thread (in
        lockstep once ready: before waiting for the answer); a command it submits drives the step
        after (composed deployment)."""
        self._listeners.append(fn)
        if not self._thread.is_alive() and self._running:
            self._thread.start()

    def submit_command(self, cmd: ActuatorCommand, receive_wall_s: float | None = None) -> None:
        """A command in ``actuator_names`` order: the same path as a message on ``actuators/command``."""
        wall = time.monotonic() if receive_wall_s is None else receive_wall_s
        p = self.params
        if p.drop_ratio > 0.0 and self._drop_rng.random() < p.drop_ratio:
            self._loop_stats["dropped_commands"] += 1
            return
        self._log(self.robot.submit(cmd, wall))
        self._last_arrival_s, self._gave_up_waiting = self.robot.time, False
        self._arrived.set()
        self._answer(cmd.stamp_s)

    def set_controller_ready(self, ready: bool) -> None:
        """The controller's ``wbc/ready`` (the crane releases ``release_delay_s`` after True)."""
        self._log(self.robot.set_controller_ready(bool(ready)))

    def _answer(self, stamp_s: float) -> None:
        """Lockstep: a command stamped with the latest sample (or unstamped) lets the loop step."""
        if stamp_s <= 0.0 or stamp_s >= self._awaited_s - 1e-7:
            self._answered.set()

    def _on_command(self, msg: JointState) -> None:
        wall = time.monotonic()
        source = self.params.command_source
        if source and msg.header.frame_id != source:  # a second command source: never applied
            self._log(self.robot.reject(f"source {msg.header.frame_id!r} is not the controller {source!r}", wall))
            return
        try:
            forces = self._act_map.from_joint_state(msg, required=("effort",)).effort
        except InputError as exc:
            self._log(self.robot.reject(str(exc), wall))
            self._answer(time_msg_to_seconds(msg.header.stamp))
            return
        self.submit_command(ActuatorCommand(forces, time_msg_to_seconds(msg.header.stamp)), wall)

    # ------------------------------------------------------------------ simulation loop (own thread)
    def _loop(self) -> None:
        try:
            self._run_loop()
        except Exception as exc:  # noqa: BLE001 - reported, not swallowed: the node stays up to say so
            self._failure = f"simulation loop stopped: {exc!r}"
            self.get_logger().fatal(self._failure)
            self._events.set()

    def _run_loop(self) -> None:
        """Lockstep once the controller is ready: publish, wait for the answer, step. Otherwise
        (realtime, free-running, lockstep before ready) pipelined: MuJoCo steps in its worker
        thread while the in-process listeners (composed deployment) compute the next command
        from the samples just published, which drives the step after (the one-tick delay of
        separate processes); then paced to the wall clock."""
        robot, stats = self.robot, self._loop_stats
        period = robot.period_s
        sender = publication_thread()  # this thread's messages leave where it waits (flush)
        if sender is not None:
            sender.defer_wakeups()
        flush = sender.flush if sender is not None else (lambda: None)
        next_t = last = time.perf_counter()
        samples = self._publish()
        while self._running:
            p = self.params
            now = time.perf_counter()
            stats["max_gap_s"], last = max(stats["max_gap_s"], now - last), now
            if p.lockstep and robot.controller_ready:
                self._notify(samples)
                flush()
                if not self._answered.wait(p.lockstep_timeout_s):
                    stats["lockstep_timeouts"] += 1
                    self._last_timeout = time.monotonic()
                    self.throttled.warning("lockstep_timeout", f"lockstep: no command answered the sample of "
                                           f"t = {robot.time:.3f} s within {p.lockstep_timeout_s * 1e3:.0f} ms: "
                                           "stepping with the last one")
                self._log(robot.step())
                next_t = time.perf_counter()
            else:
                if p.realtime and not p.lockstep and not self._listeners and self._wait_for_controller():
                    next_t = time.perf_counter()  # the schedule restarts: no burst of steps after
                self._log(robot.start_step())
                try:
                    self._notify(samples)
                finally:
                    flush()
                    self._log(robot.finish_step())
                if p.realtime or p.lockstep:  # paced; a late tick is caught up by the next ones,
                    next_t += period         # later than MAX_CATCH_UP_S the schedule restarts from now
                    now = time.perf_counter()
                    flush()
                    if now < next_t:
                        time.sleep(next_t - now)
                    elif now - next_t > MAX_CATCH_UP_S:
                        stats["overruns"] += 1
                        next_t = now
            self._awaited_s = robot.time
            self._answered.clear()
            samples = self._publish()
            self.tick_count += 1
            if not self._listeners:  # separate processes: the samples leave now (composed: with
                flush()              # the chain's messages, while MuJoCo steps)

    def _wait_for_controller(self) -> bool:
        """Realtime, controller ready, in its own process: while its last command is older than
        half the watchdog's timeout (simulated time), wait for the next one, up to
        :data:`CONTROLLER_WAIT_S` (wall clock) per silence. Returns True if it waited."""
        robot = self.robot
        if not robot.controller_ready or self._last_arrival_s is None or self._gave_up_waiting:
            return False
        limit = 0.5 * robot.config.watchdog_timeout_s
        if robot.time - self._last_arrival_s <= limit:
            return False
        self._loop_stats["controller_waits"] += 1
        deadline = time.monotonic() + CONTROLLER_WAIT_S
        while self._running and robot.time - self._last_arrival_s > limit:
            left = deadline - time.monotonic()
            if left <= 0.0:
                self._gave_up_waiting = True  # the watchdog's turn
                break
            self._arrived.clear()
            if robot.time - self._last_arrival_s > limit:
                self._arrived.wait(min(left, 0.01))
        return True

    def _notify(self, samples: tuple) -> None:
        for fn in self._listeners:
            fn(*samples)

    def _publish(self) -> tuple:
        """Publish the samples of the current state (and the ground truth); returns them."""
        robot, pub = self.robot, self._pub
        act, enc, imu = robot.samples(wall_s=time.monotonic())
        stamp = seconds_to_time_msg(act.stamp_s, self._stamp)
        if pub["clock"].wanted():  # the 1 kHz streams: only what somebody subscribes to
            pub["clock"].publish(self._clock_msg)
        w, t = self._writers, act.stamp_s  # preserialised: the 1 kHz messages cost microseconds
        if pub["act"].wanted():
            pub["act"].publish(w["act"].write(t, position=act.position, velocity=act.velocity, effort=act.effort))
        if pub["enc"].wanted():
            pub["enc"].publish(w["enc"].write(t, position=enc.position))
        if imu is not None and pub["imu"].wanted():
            x, y, z, qw = (float(c) for c in imu.orientation_xyzw)
            norm = math.sqrt(x * x + y * y + z * z + qw * qw)
            pub["imu"].publish(w["imu"].write(t, orientation=(x / norm, y / norm, z / norm, qw / norm),
                                              angular_velocity=imu.angular_velocity,
                                              linear_acceleration=imu.linear_acceleration))
        self._publish_ground_truth(stamp, act.stamp_s)
        if self._plate_pub is not None:  # the rig's force plate: what the bench's load cell reads
            force = robot.sim.plate_force()
            self.plate_reading = (force, act.stamp_s)
            self._plate_pub.publish(vector_to_wrench_stamped(np.concatenate([force, np.zeros(3)]),
                                                             frame_id="force_plate", stamp=stamp, msg=self._plate_msg))
        return act, enc, imu

    def _publish_ground_truth(self, stamp: Time, stamp_s: float) -> None:
        """Only for topics somebody listens to (subscriber counts refreshed every 100 ticks for the
        wrenches; the joint states and odometry are preserialised streams)."""
        p, sim, pub, ticks = self.params, self.robot.sim, self._pub, self.robot.counts["ticks"]
        if ticks % 100 == 0:
            self._wrench_listened = any(pub[s].get_subscription_count() for s in sim.sole_names)
        if not p.publish_ground_truth or ticks % p.ground_truth_decimation:
            return
        d, w, t = sim.data, self._writers, stamp_s
        if pub["gt"].wanted():
            pub["gt"].publish(w["gt"].write(t, position=d.qpos[self._gt_qadr], velocity=d.qvel[self._gt_dadr]))
        tf_due = self._tf is not None and sim.time >= self._next_tf_time
        odom_wanted = sim.floating_base and pub["odom"].wanted()
        if sim.floating_base and (odom_wanted or tf_due):  # free joint: p, quat w x y z, v (world), ω (base)
            quat_xyzw = quaternion_wxyz_to_xyzw(d.qpos[3:7])
            if odom_wanted:
                twist = np.concatenate([d.xmat[1].reshape(3, 3).T @ d.qvel[0:3], d.qvel[3:6]])
                pub["odom"].publish(w["odom"].write(t, pose=np.concatenate([d.qpos[0:3], quat_xyzw]), twist=twist))
            if tf_due:
                self._next_tf_time = sim.time + 1.0 / p.tf_rate_hz - 1e-9
                self._tf.sendTransform(arrays_to_transform_stamped(
                    d.qpos[0:3], quat_xyzw, parent_frame="odom", child_frame="ground_truth/base_link", stamp=stamp))
        if self._wrench_listened:
            for sole, c in sim.contact_wrenches().items():
                pub[sole].publish(vector_to_wrench_stamped(np.concatenate([c.force_in_sole, c.torque_in_sole]),
                                                           frame_id=sole, stamp=stamp, msg=self._msg[sole]))

    # ------------------------------------------------------------------ executor thread
    def _publish_latency(self) -> None:
        out = Float64MultiArray()
        out.data = self.robot.latency_ms(reset=True).tolist()
        self._latency_pub.publish(out)

    def _flush_events(self) -> None:
        if self._events.is_set():
            self._events.clear()
            self.publish_diagnostics()

    def diagnostic_statuses(self) -> list:
        p, s, now = self.params, self._loop_stats, time.monotonic()
        loop = {"mode": self._mode(), "overruns": s["overruns"], "max_tick_gap_ms": 1e3 * s["max_gap_s"],
                "lockstep_timeouts": s["lockstep_timeouts"], "dropped_commands": s["dropped_commands"],
                "controller_waits": s["controller_waits"]}
        s["max_gap_s"] = 0.0
        paced = p.realtime and not p.lockstep
        statuses = self.robot.statuses(now, loop=loop, min_real_time_factor=0.9 if paced else None)
        if self._failure:
            statuses[0] = replace(statuses[0], level=Level.ERROR, message=self._failure)
        if p.lockstep:
            late = now - self._last_timeout < EVENT_HOLD_S
            text = "steps with the last command after timeouts" if late else "one step per command"
            values = {"timeouts": s["lockstep_timeouts"], "timeout_s": p.lockstep_timeout_s,
                      "controller_ready": self.robot.controller_ready}
            statuses.append(Status("lockstep", Level.WARN if late else Level.OK, text, values))
        return self.to_diagnostics(statuses)

    def on_parameters_changed(self, params: SimParams, changed: set[str]) -> None:
        self.robot.config = _robot_config(params, self.robot.config)

    def on_shutdown(self) -> None:
        self._stop_loop()

    def destroy_node(self) -> None:
        self._stop_loop()
        super().destroy_node()

    def _stop_loop(self) -> None:
        self._running = False
        self._answered.set()
        thread = getattr(self, "_thread", None)
        if thread is not None and thread.is_alive() and threading.current_thread() is not thread:
            thread.join(timeout=2.0)


main = main_for(SimNode)
