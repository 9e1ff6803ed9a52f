"""``sim`` node: the simulated Kangaroo behind a hardware interface's topics.

A thin adapter around :class:`~kangaroo_wbc.components.simulated_robot.SimulatedRobot` (boot on
the crane, ``wbc/ready`` release, command guard, watchdog, latency). Every tick it publishes what
the robot's driver would, per the ``interface`` parameter (:mod:`kangaroo_wbc.ros.sim_topics`):
``native`` (``actuators/state``, ``passive_encoders/state``, ``imu/data``; applies
``actuators/command``) or ``ros2_control`` (what ``joint_state_broadcaster`` and
``imu_sensor_broadcaster`` publish in the hardware map's ``joint_space``; applies the effort
controllers' ``<controller>/commands`` as they do); also ``/clock``, the ground truth
(``sim/ground_truth/*``, only to subscribers) and, once per wall second, ``sim/command_latency``.
It follows ``wbc/ready`` (native); on ros2_control it offers the controller manager's
``switch_controller`` and ``list_controllers`` instead, and the crane and the hold stand for the
position controllers holding the robot until the effort controllers are switched in
(``docs/ros2_control.md``). ``faults`` and ``payloads`` change
the robot and tell no other node; ``rig`` simulates the test bench (``rig/plate_wrench``). See
``docs/sim.md``; parameters: :class:`~kangaroo_wbc.components.sim_params.SimParams`.

Threads: the simulation runs in its own loop thread, paced to the wall clock (``realtime``), as
fast as possible, or in ``lockstep`` (paced until the controller is ready, then one step per command
answering the latest sample, or after ``lockstep_timeout_s`` without one); the executor thread runs
the command and ready callbacks and the diagnostics timers. In-process hooks for the composed
deployment: :meth:`SimNode.add_sample_listener`, :meth:`SimNode.submit_command` (native),
``face.on_data`` (ros2_control), :meth:`SimNode.set_controller_ready`.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # small matrices: threads only cost (docs/sim.md)

import random  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import replace  # noqa: E402

from builtin_interfaces.msg import Time  # noqa: E402
from rclpy.clock import Clock, ClockType  # noqa: E402
from rosgraph_msgs.msg import Clock as ClockMsg  # noqa: E402
from std_msgs.msg import Bool, Float64MultiArray  # noqa: E402

from kangaroo_wbc.components import sim_params  # noqa: E402
from kangaroo_wbc.components.samples import ActuatorCommand, Level, Status  # noqa: E402
from kangaroo_wbc.components.sim_params import SimParams, robot_config  # noqa: E402
from kangaroo_wbc.components.simulated_robot import SimulatedRobot  # noqa: E402
from kangaroo_wbc.errors import ConfigError, InputError  # noqa: E402
from kangaroo_wbc.ros import qos  # noqa: E402
from kangaroo_wbc.ros.conversions import seconds_to_time_msg  # noqa: E402
from kangaroo_wbc.ros.diagnostics import LOG_LEVELS  # noqa: E402
from kangaroo_wbc.ros.node_base import KangarooNode, main_for  # noqa: E402
from kangaroo_wbc.ros.node_support import add_parameter_check  # noqa: E402
from kangaroo_wbc.ros.sim_loop import CONTROLLER_WAIT_S, SimLoop  # noqa: E402,F401 - the wait, re-exported
from kangaroo_wbc.ros.sim_topics import GroundTruthPublisher, make_face  # noqa: E402

#: A lockstep timeout shows in /diagnostics for this long [s] (wall clock).
EVENT_HOLD_S = 2.0


class SimNode(KangarooNode):
    """The simulated robot as a ROS 2 hardware interface (see the module docstring)."""

    def __init__(self, chained: bool = False) -> None:
        """``chained``: the composed deployment submits the commands in-process; the command
        topics are then not subscribed."""
        super().__init__("sim", SimParams)
        p = self.params
        try:
            if p.rig:  # the test bench, from the same generated files
                from kangaroo_wbc.components.rig import rig_robot
                from kangaroo_wbc.robots.kangaroo.rig import make_rig

                self.robot = robot = rig_robot(make_rig(p.rig, p.rig_leg), robot_config(p))
            else:
                self.robot = robot = SimulatedRobot(robot_config(p))
        except InputError as exc:  # e.g. a fault naming no actuator
            raise ConfigError(f"node 'sim': {exc}") from exc
        sim = robot.sim
        add_parameter_check(self, ["faults", "payloads"], lambda name, v: sim_params.check_names(name, v, robot))
        #: the hardware face (module docstring)
        self.face = make_face(self, chained)
        self.truth = GroundTruthPublisher(self)
        self._stamp = Time()  # the clock message's stamp object, written each tick
        self._clock_msg = ClockMsg(clock=self._stamp)
        self._pub_clock = self.create_stream_publisher(ClockMsg, "/clock", qos.SENSOR_STATE)
        self._latency_pub = self.create_publisher(Float64MultiArray, "sim/command_latency", qos.VISUALIZATION)
        self._drop_rng = random.Random(p.seed)
        #: the simulation's pacing (:mod:`kangaroo_wbc.ros.sim_loop`), run in its own thread
        self.loop = SimLoop(self, robot)
        self._failure: str | None = None
        self._events = threading.Event()  # set on a notable event: publish /diagnostics soon
        steady = Clock(clock_type=ClockType.STEADY_TIME)
        if p.interface != "ros2_control":  # ros2_control: the controller manager's switch (the face)
            self.create_subscription(Bool, "wbc/ready", lambda m: self.set_controller_ready(m.data), qos.LATCHED)
        self.create_timer(0.1, self._flush_events, clock=steady)
        self.create_timer(1.0, self._publish_latency, clock=steady)
        self._thread = threading.Thread(target=self._loop, name="sim_loop", daemon=True)
        # composed: the loop starts with the first sample listener (add_sample_listener), so the
        # hosted estimator sees the boot from t = 0, as in the one-process loop
        if not chained:
            self._thread.start()
        self.get_logger().info(
            f"sim: {sim.n_actuators} actuators, {len(sim.joint_names)} joints, {p.rate_hz:g} Hz ({self._mode()}), "
            f"interface {p.interface}" + (f" ({p.joint_space} joints)" if p.interface == "ros2_control" else "")
            + f", on the crane until {'the switch' if p.interface == 'ros2_control' else 'wbc/ready'}"
            f" (+{p.release_delay_s:g} s), controller {p.controller}")

    def _mode(self) -> str:
        p = self.params
        return "lockstep" if p.lockstep else "realtime" if p.realtime else "free-running"

    def report_events(self, events) -> None:
        """Log a component's events (throttled per cause) and publish /diagnostics soon."""
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

    @property
    def plate_reading(self):
        """The rig's force plate: (force on the plate [N], world axes; stamp [s]) of the latest sample."""
        return self.truth.plate_reading

    def add_sample_listener(self, fn: Callable) -> None:
        """``fn(*samples)`` is called from the simulation loop thread with each tick's samples as the
        face gives them (native: ``ActuatorSample, EncoderSample, ImuSample``; ros2_control: the
        :class:`~kangaroo_wbc.components.ros2_control.system.BroadcastState`), while MuJoCo computes
        the next step in its worker thread (in lockstep once ready: before waiting for the answer);
        a command it submits drives the step after (composed deployment)."""
        self.loop.listeners.append(fn)
        if not self._thread.is_alive() and self.loop.running:
            self._thread.start()

    def submit_command(self, cmd: ActuatorCommand, receive_wall_s: float | None = None) -> None:
        """A command in ``actuator_names`` order: the same path as a message on ``actuators/command``."""
        wall = time.monotonic() if receive_wall_s is None else receive_wall_s
        p = self.params
        if p.drop_ratio > 0.0 and self._drop_rng.random() < p.drop_ratio:
            self.loop.stats["dropped_commands"] += 1
            return
        self.report_events(self.robot.submit(cmd, wall))
        self.loop.command_arrived(cmd.stamp_s)

    def reject_command(self, reason: str, receive_wall_s: float, stamp_s: float | None = None) -> None:
        """A command refused before it could be read (``stamp_s``: the sample it answers, if known)."""
        self.report_events(self.robot.reject(reason, receive_wall_s))
        if stamp_s is not None:
            self.loop.answer(stamp_s)

    def set_controller_ready(self, ready: bool) -> None:
        """The controller's ``wbc/ready`` (the crane releases ``release_delay_s`` after True)."""
        self.report_events(self.robot.set_controller_ready(bool(ready)))

    @property
    def awaited_stamp_s(self) -> float:
        """Lockstep: stamp of the latest published sample (a command answering it lets the loop step)."""
        return self.loop.awaited_stamp_s

    # ------------------------------------------------------------------ simulation loop (own thread)
    def _loop(self) -> None:
        try:
            self.loop.run()
        except Exception as exc:  # noqa: BLE001 - reported, not swallowed: the node stays up to say so
            self._failure = f"simulation loop stopped: {exc!r}"
            self.get_logger().fatal(self._failure)
            self._events.set()

    def publish_samples(self) -> tuple:
        """Publish the current state through the face (and the clock, the ground truth); returns
        what the sample listeners get."""
        act, enc, imu = self.robot.samples(wall_s=time.monotonic())
        stamp = seconds_to_time_msg(act.stamp_s, self._stamp)
        if self._pub_clock.wanted():  # the 1 kHz streams: only what somebody subscribes to
            self._pub_clock.publish(self._clock_msg)
        samples = self.face.publish(act, enc, imu)
        self.truth.publish(stamp, act.stamp_s)
        return samples

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
        p, s, now = self.params, self.loop.stats, time.monotonic()
        loop = {"mode": self._mode(), "overruns": s["overruns"], "max_tick_gap_ms": 1e3 * s["max_gap_s"],
                "lockstep_timeouts": s["lockstep_timeouts"], "dropped_commands": s["dropped_commands"],
                "controller_waits": s["controller_waits"]}
        s["max_gap_s"] = 0.0
        paced = p.realtime and not p.lockstep
        statuses = self.robot.statuses(now, loop=loop, min_real_time_factor=0.9 if paced else None)
        statuses += self.face.statuses()
        if self._failure:
            statuses[0] = replace(statuses[0], level=Level.ERROR, message=self._failure)
        if p.lockstep:
            late = now - self.loop.last_timeout < EVENT_HOLD_S
            text = "steps with the last command after timeouts" if late else "one step per command"
            values = {"timeouts": s["lockstep_timeouts"], "timeout_s": p.lockstep_timeout_s,
                      "controller_ready": self.robot.controller_ready}
            statuses.append(Status("lockstep", Level.WARN if late else Level.OK, text, values))
        return self.to_diagnostics(statuses)

    def on_parameters_changed(self, params: SimParams, changed: set[str]) -> None:
        self.robot.config = robot_config(params, self.robot.config)

    def on_shutdown(self) -> None:
        self._stop_loop()

    def destroy_node(self) -> None:
        self._stop_loop()
        super().destroy_node()

    def _stop_loop(self) -> None:
        loop = getattr(self, "loop", None)  # None: the node failed before its loop was made
        if loop is not None:
            loop.stop()
        thread = getattr(self, "_thread", None)
        if thread is not None and thread.is_alive() and threading.current_thread() is not thread:
            thread.join(timeout=2.0)


main = main_for(SimNode)
