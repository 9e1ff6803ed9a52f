"""``sim`` node: the embedded MuJoCo Kangaroo behind the hardware-interface topic contract.

Publishes, every control tick (``rate_hz``), what the robot's driver would (``actuators/state``,
``passive_encoders/state``, ``imu/data``), the simulation time on ``/clock`` and the ground truth
(``sim/ground_truth/joint_states``, ``.../base_odometry``, ``.../<sole>/wrench``); applies the
name-addressed axial forces of ``actuators/command``. All physics is
:class:`~kangaroo_wbc.sim.ClosedChainSim`; this file only moves arrays in and out of messages,
paces the loop and guards the command (watchdog, clamping, rejection). See ``docs/sim.md``.

Threads: the simulation runs in its own loop thread (paced to the wall clock, as fast as possible,
or one step per received command in ``lockstep``); the executor thread runs the command callback
(validation only) and the diagnostics timers.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: threads only cost (docs/sim.md)

import math  # noqa: E402
import queue  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import rclpy.logging  # noqa: E402
from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.clock import Clock, ClockType  # noqa: E402
from rosgraph_msgs.msg import Clock as ClockMsg  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402

from kangaroo_wbc.errors import InputError, KangarooWbcError  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import (  # noqa: E402
    JointIndexMap,
    arrays_to_imu_msg,
    arrays_to_odometry_msg,
    arrays_to_transform_stamped,
    quaternion_wxyz_to_xyzw,
    seconds_to_time_msg,
    vector_to_wrench_stamped,
)
from kangaroo_wbc.ros.diagnostics import Level, ThrottledLogger  # noqa: E402
from kangaroo_wbc.ros.node_base import KangarooNode, main_for  # noqa: E402
from kangaroo_wbc.ros.params import parameter  # noqa: E402
from kangaroo_wbc.ros.tf import make_tf_broadcaster  # noqa: E402

#: A rejection or clamping is shown in /diagnostics for this long [s] (wall clock).
EVENT_HOLD_S = 2.0
#: Lockstep: state republished at this period [s] until the first command arrives.
LOCKSTEP_REPUBLISH_S = 0.1
#: Realtime loop further behind than this [s] drops the backlog instead of catching up.
MAX_LAG_S = 0.1


def _one_of(*choices: str):
    return lambda v: None if v in choices else f"must be one of {list(choices)}"


@dataclass
class SimParams:
    """Parameters of the ``sim`` node (``config/sim.yaml``)."""

    rate_hz: float = parameter(1000.0, "Control rate: one step and one publication per tick [Hz]",
                               bounds=(10.0, 5000.0), read_only=True)
    floating_base: bool = parameter(True, "Free base standing on the floor (false: base welded in the air)",
                                    read_only=True)
    seed: int = parameter(0, "Seed of encoder offsets, IMU biases and noise", bounds=(0, 2**31 - 1),
                          read_only=True)
    sensor_noise: bool = parameter(True, "Sensor noise and IMU biases on (encoder boot offsets always)",
                                   read_only=True)
    realtime: bool = parameter(True, "Pace the loop to the wall clock (false: as fast as possible)")
    lockstep: bool = parameter(False, "Step once per received command (deterministic tests)", read_only=True)
    watchdog_timeout_s: float = parameter(0.05, "No valid command for longer than this (sim time) → "
                                          "zero force plus damping [s]", bounds=(0.001, 10.0))
    watchdog_damping_n_s_per_m: float = parameter(200.0, "Watchdog damping d in τ = −d·θ̇ [N·s/m]",
                                                  bounds=(0.0, 2000.0))
    controller: str = parameter("none", "In-process fallback when no valid command is fresh: "
                                "none (watchdog damping) | pd (hold the standing pose)",
                                check=_one_of("none", "pd"))
    pd_kp_n_per_m: float = parameter(2e5, "Stiffness of the in-process PD [N/m]", bounds=(0.0, 1e7))
    pd_kd_n_s_per_m: float = parameter(300.0, "Damping of the in-process PD [N·s/m]", bounds=(0.0, 2000.0))
    publish_ground_truth: bool = parameter(True, "Publish sim/ground_truth/* (to subscribed topics only)")
    ground_truth_decimation: int = parameter(1, "Publish the ground truth every N ticks", bounds=(1, 1000))
    tf_rate_hz: float = parameter(100.0, "Rate of TF odom → ground_truth/base_link [Hz] (0: off)",
                                  bounds=(0.0, 1000.0), read_only=True)


class SimNode(KangarooNode):
    """MuJoCo Kangaroo as a ROS 2 hardware interface (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__("sim", SimParams, diagnostics_period_s=1.0)
        from kangaroo_wbc.robots.kangaroo.robot import standing_actuator_positions
        from kangaroo_wbc.sim import BaselinePd, SensorConfig
        from kangaroo_wbc.sim.kangaroo import make_kangaroo_sim

        p = self.params
        substeps = max(1, math.ceil(1000.0 / p.rate_hz - 1e-9))  # physics step ≤ 1 ms (closure solref)
        self.sim = sim = make_kangaroo_sim(
            floating_base=p.floating_base, seed=p.seed, control_period=1.0 / p.rate_hz, substeps=substeps,
            sensor_config=None if p.sensor_noise else SensorConfig.noiseless(),
            initial_actuator_positions=standing_actuator_positions())
        self._theta_ref = sim.actuator_positions()
        self._tau_ff = sim.actuator_bias_forces()  # gravity feed-forward of the standing pose, base held
        self._pd = BaselinePd(p.pd_kp_n_per_m, p.pd_kd_n_s_per_m, sim.n_actuators, force_limits=sim.force_limits)
        m = sim.model
        import mujoco

        jid = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in sim.joint_names]
        self._gt_qadr, self._gt_dadr = m.jnt_qposadr[jid], m.jnt_dofadr[jid]
        self._act_map = JointIndexMap(sim.actuator_names, what="actuator")
        self._enc_map = JointIndexMap(sim.passive_encoder_names, what="passive encoder")
        self._gt_map = JointIndexMap(sim.joint_names)
        # preallocated messages, all sharing one stamp object
        self._stamp = Time()
        self._msg = {k: t() for k, t in (("act", JointState), ("enc", JointState), ("imu", Imu),
                                         ("gt", JointState), ("odom", Odometry))}
        self._wrench_msg = {s: WrenchStamped() for s in sim.sole_names}
        self._clock_msg = ClockMsg(clock=self._stamp)
        pub = self.create_publisher
        self._pub = {"act": pub(JointState, "actuators/state", qos.SENSOR_STATE),
                     "enc": pub(JointState, "passive_encoders/state", qos.SENSOR_STATE),
                     "imu": pub(Imu, "imu/data", qos.SENSOR_STATE),
                     "clock": pub(ClockMsg, "/clock", qos.SENSOR_STATE),
                     "gt": pub(JointState, "sim/ground_truth/joint_states", qos.SENSOR_STATE),
                     "odom": pub(Odometry, "sim/ground_truth/base_odometry", qos.SENSOR_STATE)}
        self._wrench_pub = {s: pub(WrenchStamped, f"sim/ground_truth/{s}/wrench", qos.SENSOR_STATE)
                            for s in sim.sole_names}
        self._tf = make_tf_broadcaster(self) if p.tf_rate_hz > 0 else None
        self._next_tf_time = 0.0
        self._listened = {"gt": False, "odom": False, "wrench": False}
        self._imu_published = False
        # command slot: (forces [N] clamped, sim time of arrival); replaced atomically by the callback
        self._command: tuple[np.ndarray, float] | None = None
        self._lockstep_queue: queue.SimpleQueue[tuple[np.ndarray, float] | None] = queue.SimpleQueue()
        self._stats = {"valid": 0, "rejected": 0, "clamped": 0, "ticks": 0, "overruns": 0, "busy_s": 0.0,
                       "cpu_s": 0.0, "max_gap_s": 0.0}
        self._last_start = time.perf_counter()
        self._last_reject = (-math.inf, "")
        self._last_clamp = (-math.inf, [])
        self._watchdog_engaged: bool | None = None
        self._window = (time.monotonic(), sim.time, 0, 0.0, 0.0)  # at the last report: wall, sim, ticks, busy, cpu
        self._closure_m = 0.0
        self._failure: str | None = None
        self._events = threading.Event()  # set by the loop: publish /diagnostics soon
        # rclpy fixes the severity per logger instance and call site: warnings get their own instance
        self._throttled_warn = ThrottledLogger(rclpy.logging.get_logger(self.get_logger().name), 5.0)
        self.create_subscription(JointState, "actuators/command", self._on_command, qos.COMMAND)
        self.create_timer(0.1, self._flush_events, clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._running = True
        self._thread = threading.Thread(target=self._loop, name="sim_loop", daemon=True)
        self._thread.start()
        self.get_logger().info(
            f"sim: {sim.n_actuators} actuators, {len(sim.joint_names)} joints, {p.rate_hz:g} Hz "
            f"({'lockstep' if p.lockstep else 'realtime' if p.realtime else 'free-running'}), "
            f"controller {p.controller}, floating base {p.floating_base}")

    # ------------------------------------------------------------------ command input (executor thread)
    def _on_command(self, msg: JointState) -> None:
        entry = None
        try:
            forces = self._act_map.from_joint_state(msg, required=("effort",)).effort
        except InputError as exc:
            self._stats["rejected"] += 1
            self._last_reject = (time.monotonic(), str(exc))
            self.throttled.error("rejected", f"actuators/command rejected ({exc}); keeping the last valid "
                                 "command until the watchdog expires")
            self._events.set()
        else:
            limits = self.sim.force_limits
            entry = (np.clip(forces, -limits, limits), self.sim.time)
            if np.any(entry[0] != forces):
                names = [n for n, a, b in zip(self._act_map.names, entry[0], forces) if a != b]
                self._stats["clamped"] += 1
                self._last_clamp = (time.monotonic(), names)
                self._throttled_warn.warning("clamped", f"actuators/command clamped to the force limits: {names}")
                self._events.set()
            self._stats["valid"] += 1
        if self.params.lockstep:
            self._lockstep_queue.put(entry)  # one step per message, in arrival order
        elif entry is not None:
            self._command = entry

    # ------------------------------------------------------------------ simulation loop (own thread)
    def _loop(self) -> None:
        try:
            self._run_loop()
        except Exception as exc:  # noqa: BLE001 - reported, not swallowed: the node stays up to say so
            self._failure = f"simulation loop stopped: {exc!r}"
            self.get_logger().fatal(self._failure)
            self._events.set()

    def _run_loop(self) -> None:
        period = self.sim.timestep
        next_t = time.perf_counter()
        self._publish()
        while self._running:
            p = self.params
            if p.lockstep:
                try:
                    entry = self._lockstep_queue.get(timeout=LOCKSTEP_REPUBLISH_S)
                except queue.Empty:
                    if self._stats["valid"] + self._stats["rejected"] == 0:  # until the controller is in the loop:
                        for key in ("clock", "act", "enc", "imu")[:4 if self._imu_published else 3]:
                            self._pub[key].publish(self._msg.get(key, self._clock_msg))  # same ones: no new noise
                    continue
                if entry is not None:
                    self._command = (entry[0], self.sim.time)
            elif p.realtime:
                now = time.perf_counter()
                if now < next_t:
                    time.sleep(next_t - now)
                elif now - next_t > MAX_LAG_S:
                    self._stats["overruns"] += 1
                    next_t = now
                next_t += period
            t_start, cpu_start = time.perf_counter(), time.thread_time()
            self._stats["max_gap_s"] = max(self._stats["max_gap_s"], t_start - self._last_start)
            self._last_start = t_start
            try:
                self._tick(p)
                self._stats["busy_s"] += time.perf_counter() - t_start
                self._stats["cpu_s"] += time.thread_time() - cpu_start
            except KangarooWbcError as exc:  # diverged: report it and reboot the robot
                self.throttled.error("diverged", f"simulation failed ({exc}); resetting")
                self.sim.reset()
                self._command = None
            if self._stats["ticks"] % 250 == 0:
                self._closure_m = self.sim.closure_violation()[0]

    def _tick(self, p: SimParams) -> None:
        sim = self.sim
        cmd = self._command
        fresh = cmd is not None and sim.time - cmd[1] <= p.watchdog_timeout_s + 1e-9
        if fresh:
            forces = cmd[0]
        elif p.controller == "pd":
            forces = self._pd.compute(sim.actuator_positions(), sim.actuator_velocities(), self._theta_ref,
                                      tau_ff=self._tau_ff)
        else:
            forces = -p.watchdog_damping_n_s_per_m * sim.actuator_velocities()  # clamped by set_command
        sim.set_command(forces)
        sim.step()
        self._stats["ticks"] += 1
        self._watch(not fresh, cmd, p)
        self._publish()

    def _watch(self, engaged: bool, cmd: tuple[np.ndarray, float] | None, p: SimParams) -> None:
        """Log watchdog transitions once each and have them published on /diagnostics at once."""
        if engaged == self._watchdog_engaged:
            return
        self._watchdog_engaged = engaged
        fallback = "in-process PD" if p.controller == "pd" else "zero force plus damping"
        if engaged and cmd is not None:
            self.get_logger().warning(f"watchdog: no valid actuators/command for more than "
                                      f"{p.watchdog_timeout_s * 1e3:.0f} ms (sim time): {fallback}")
        elif engaged:
            self.get_logger().info(f"waiting for actuators/command; meanwhile {fallback}")
        else:
            self.get_logger().info("watchdog: actuators/command fresh, applying it")
        self._events.set()

    def _publish(self) -> None:
        sim, d, msg = self.sim, self.sim.data, self._msg
        stamp = seconds_to_time_msg(sim.time, self._stamp)
        r = sim.read_sensors()
        pub = self._pub
        pub["clock"].publish(self._clock_msg)
        pub["act"].publish(self._act_map.to_joint_state(r.actuator_position, r.actuator_velocity, r.motor_torque,
                                                        stamp=stamp, msg=msg["act"]))
        pub["enc"].publish(self._enc_map.to_joint_state(r.passive_encoder_position, stamp=stamp, msg=msg["enc"]))
        imu = r.imu
        self._imu_published = imu is not None
        if imu is not None:
            pub["imu"].publish(arrays_to_imu_msg(
                imu.angular_velocity_imu_in_imu, imu.linear_acceleration_imu_in_imu, frame_id="imu", stamp=stamp,
                quaternion_xyzw=imu.orientation_xyzw, msg=msg["imu"]))
        # ground truth is built only for topics somebody listens to (contact wrenches cost most);
        # subscriber counts are refreshed every 100 ticks
        p, ticks = self.params, self._stats["ticks"]
        if ticks % 100 == 0:
            self._listened = {k: pub[k].get_subscription_count() > 0 for k in ("gt", "odom")}
            self._listened["wrench"] = any(q.get_subscription_count() for q in self._wrench_pub.values())
        if not p.publish_ground_truth or ticks % p.ground_truth_decimation:
            return
        listened = self._listened
        if listened["gt"]:
            pub["gt"].publish(self._gt_map.to_joint_state(d.qpos[self._gt_qadr], d.qvel[self._gt_dadr],
                                                          stamp=stamp, msg=msg["gt"]))
        tf_due = self._tf is not None and sim.time >= self._next_tf_time
        if sim.floating_base and (listened["odom"] or tf_due):  # free joint: p, quat w x y z, v (world), ω (base)
            quat_xyzw = quaternion_wxyz_to_xyzw(d.qpos[3:7])
            if listened["odom"]:
                R = d.xmat[1].reshape(3, 3)
                pub["odom"].publish(arrays_to_odometry_msg(
                    d.qpos[0:3], quat_xyzw, R.T @ d.qvel[0:3], d.qvel[3:6], frame_id="odom",
                    child_frame_id="ground_truth/base_link", stamp=stamp, msg=msg["odom"]))
            if tf_due:
                self._next_tf_time = sim.time + 1.0 / p.tf_rate_hz - 1e-9
                self._tf.sendTransform(arrays_to_transform_stamped(
                    d.qpos[0:3], quat_xyzw, parent_frame="odom", child_frame="ground_truth/base_link", stamp=stamp))
        if listened["wrench"]:
            for sole, c in sim.contact_wrenches().items():
                self._wrench_pub[sole].publish(vector_to_wrench_stamped(
                    np.concatenate([c.force_in_sole, c.torque_in_sole]), frame_id=sole, stamp=stamp,
                    msg=self._wrench_msg[sole]))

    # ------------------------------------------------------------------ diagnostics (executor thread)
    def _flush_events(self) -> None:
        if self._events.is_set():
            self._events.clear()
            self.publish_diagnostics()

    def diagnostic_statuses(self) -> list:
        p, s, now, status = self.params, self._stats, time.monotonic(), self.diagnostics.status
        wall0, sim0, ticks0, busy0, cpu0 = self._window
        sim_t, ticks = self.sim.time, s["ticks"]
        n = max(ticks - ticks0, 1)
        if now - wall0 >= 0.5:
            self._window = (now, sim_t, ticks, s["busy_s"], s["cpu_s"])
        span = max(now - wall0, 1e-9)
        rtf = (sim_t - sim0) / span
        mode = "lockstep" if p.lockstep else "realtime" if p.realtime else "free-running"
        values = {"sim_time_s": sim_t, "real_time_factor": rtf, "tick_rate_hz": (ticks - ticks0) / span,
                  "tick_time_ms": 1e3 * (s["busy_s"] - busy0) / n, "tick_cpu_ms": 1e3 * (s["cpu_s"] - cpu0) / n,
                  "max_tick_gap_ms": 1e3 * s["max_gap_s"], "ticks": ticks, "overruns": s["overruns"],
                  "closure_violation_m": self._closure_m, "mode": mode}
        s["max_gap_s"] = 0.0
        if self._failure:
            sim_status = status("simulation", Level.ERROR, self._failure, values)
        elif mode == "realtime" and ticks > ticks0 and rtf < 0.9:
            sim_status = status("simulation", Level.WARN, f"slower than real time (rtf {rtf:.2f})", values)
        else:
            sim_status = status("simulation", Level.OK, "running", values)
        (t_rej, reason), (t_clamp, names) = self._last_reject, self._last_clamp
        counts = {"valid": s["valid"], "rejected": s["rejected"], "clamped": s["clamped"]}
        if now - t_rej < EVENT_HOLD_S:
            cmd_status = status("command", Level.ERROR, f"command rejected: {reason}", counts)
        elif now - t_clamp < EVENT_HOLD_S:
            cmd_status = status("command", Level.WARN, f"command clamped to the force limits: {names}", counts)
        else:
            cmd_status = status("command", Level.OK, "ok", counts)
        cmd = self._command
        values = {"command_age_s": math.inf if cmd is None else sim_t - cmd[1], "timeout_s": p.watchdog_timeout_s,
                  "damping_n_s_per_m": p.watchdog_damping_n_s_per_m, "controller": p.controller}
        fallback = "in-process PD holds the standing pose" if p.controller == "pd" else "zero force plus damping"
        if not self._watchdog_engaged:
            dog_status = status("watchdog", Level.OK, "command fresh", values)
        else:  # running alone with the PD is normal; losing commands is not
            level = Level.OK if cmd is None and p.controller == "pd" else Level.WARN
            dog_status = status("watchdog", level, f"no fresh command: {fallback}", values)
        return [sim_status, cmd_status, dog_status]

    def on_parameters_changed(self, params: SimParams, changed: set[str]) -> None:
        if changed & {"pd_kp_n_per_m", "pd_kd_n_s_per_m"}:
            from kangaroo_wbc.sim import BaselinePd

            self._pd = BaselinePd(params.pd_kp_n_per_m, params.pd_kd_n_s_per_m, self.sim.n_actuators,
                                  force_limits=self.sim.force_limits)

    def on_shutdown(self) -> None:
        self._stop_loop()

    def destroy_node(self) -> None:
        self._stop_loop()
        super().destroy_node()

    def _stop_loop(self) -> None:
        self._running = False
        thread = getattr(self, "_thread", None)
        if thread is not None and thread.is_alive() and threading.current_thread() is not thread:
            thread.join(timeout=2.0)


main = main_for(SimNode)
