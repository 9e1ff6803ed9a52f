"""The node-graph runner's observer: one ROS node that watches the running graph over DDS.

It counts the loop's topics (serialised: no deserialisation per sample), follows ``wbc/ready``, the
simulator's ground truth, the controller's CoM targets, the command latency and ``/diagnostics``,
tells the controller the run's faults and payloads (its parameters, as an operator would) at their
simulated times, and turns what it saw into the run's summary (:mod:`~kangaroo_wbc_tools.graph.graph_metrics`).
:class:`GraphObserver` holds that state; :meth:`GraphObserver.run` waits for the controller to be
ready, observes for the run's length and returns the summary.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kangaroo_wbc.errors import KangarooWbcError
from kangaroo_wbc_tools.graph import graph_metrics as gm
from kangaroo_wbc_tools.pipeline.soak import process_rss_mb

#: The loop's topics whose rates the runner reports (counted serialised).
WATCHED = ("actuators/state", "joint_states", "contact/left_sole/wrench", "contact/right_sole/wrench",
           "actuators/command")
#: ``interface: ros2_control``: the broadcaster's joint states (the simulated time) and one effort
#: controller's commands (unstamped: counted at the simulated time of their arrival) instead
WATCHED_ROS2_CONTROL = ("joint_state_broadcaster/joint_states", *WATCHED[1:4], "leg_left_effort_controller/commands")


class GraphStartError(KangarooWbcError):
    """The graph did not come up (a process died, the controller never became ready, or ``stop()``
    ended the start-up). ``exit_codes``: every started process's exit code by name (None: killed)."""

    exit_codes: dict[str, int | None] = {}


@dataclass(frozen=True)
class ObserverSettings:
    """What the observer watches for and how long (the runner's arguments)."""

    duration_s: float
    sim_mode: str
    startup_timeout_s: float
    fall_height_m: float
    wall_timeout_s: float
    log_dir: Path
    monitor_period_s: float | None = None
    rig: tuple[str, str] | None = None
    payload_unannounced: bool = False
    identify: bool = False
    behaviour_delay_s: float = 0.0
    jump: bool = False
    #: the loop's topics counted (the first one's stamps are the simulated time)
    watched: tuple[str, ...] = WATCHED


def _stamp_s(stamp: Any) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


def _key(stamp: Any) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


class GraphObserver:
    """The observer's state and callbacks (module docstring).

    Args:
        settings: :class:`ObserverSettings`.
        operator: the run's faults and payloads ``(sim time after ready [s], mode or mass [kg],
            actuator or link, t [s])`` in time order, told to the controller when due.
    """

    def __init__(self, settings: ObserverSettings, operator: Sequence[tuple] = ()) -> None:
        self.s = settings
        self.watched = settings.watched
        self.counts = dict.fromkeys(self.watched, 0)
        self.stamps: dict[str, list[float]] = {t: [] for t in self.watched}  # [first, last] header stamp [s]
        self.st: dict[str, Any] = {"ready": None, "ready_lost": False, "started": False, "min_height": float("inf"),
                                   "latency": [], "safe_entries": 0, "safe": False, "safe_reasons": {}}
        self.node_stats: dict[str, dict[str, list[float]]] = {}  # "<node>" -> {"cpu_ms_per_tick": [...], ...}
        self.told: dict[str, list[str]] = {"locked_actuators": [], "limp_actuators": []}
        self.told_payloads: dict[str, float] = {}  # link -> mass [kg] told so far
        self.fault_log = [{"actuator": name, "mode": what, "t_s": at, "after_ready_s": after}
                          for after, what, name, at in operator if isinstance(what, str)]
        self.payload_log = [{"link": name, "mass_kg": what, "t_s": at, "after_ready_s": after}
                            for after, what, name, at in operator if not isinstance(what, str)]
        self.pending_faults = list(operator)
        self.calls: list = []  # (fault or payload entry, future) of the SetParameters calls
        self.soles = [t for t in self.watched if "wrench" in t]
        self.fz: dict[int, list[float]] = {}  # the wrench estimator's sole forces every 10th stamp [ms]
        self.identified: list[tuple[float, float, float, float]] = []  # (stamp, mass, CoM x, y)
        self.payload_statuses: list[tuple[float, bool, float]] = []  # (stamp, confident, mass std)
        self.truth: dict[int, list] = {}  # ground-truth stamp [ns] -> [base pose, (names, positions)]
        self.truth_fz: dict[int, list[float]] = {}  # a jump: the soles' true normal forces [N] by stamp
        self.targets: list[tuple[float, tuple[float, float, float]]] = []  # wbc/com_target
        self.plate: list[tuple[float, float]] = []  # the bench's plate: (stamp, normal force) every 10 ms
        self.sole_targets: list[tuple[float, tuple[float, float, float]]] = []  # rig/sole_target
        self.periods: list[dict] = []
        self._set_params: Any = None

    # ------------------------------------------------------------------ callbacks
    def counter(self, topic: str) -> Callable[[bytes], None]:
        from kangaroo_wbc.ros.serialized import stamp_of_serialized

        unstamped = topic.endswith("/commands")  # an effort controller's Float64MultiArray

        def cb(raw: bytes) -> None:  # serialised: counting costs no deserialisation
            self.counts[topic] += 1
            t = self.st.get("sim_t", 0.0) if unstamped else stamp_of_serialized(raw)
            span = self.stamps[topic]
            span[:] = [t, t] if not span else [span[0], t]
            if topic == self.watched[0]:  # the simulator's state: its stamps are the simulated time
                self.st["sim_t"] = t
            elif topic in self.soles:
                self._on_wrench_sample(topic, raw, t)
        return cb

    def _on_wrench_sample(self, topic: str, raw: bytes, t: float) -> None:
        ms = round(t * 1e3)
        if self.st["started"] and ms % 10 == 0:
            from geometry_msgs.msg import WrenchStamped
            from rclpy.serialization import deserialize_message

            msg = deserialize_message(raw, WrenchStamped)
            self.fz.setdefault(ms, [math.nan] * len(self.soles))[self.soles.index(topic)] = msg.wrench.force.z

    def on_modes(self, msg: Any) -> None:
        modes = {kv.key: kv.value for kv in msg.values}
        self.st["modes"], self.st["modes_message"] = modes, msg.message
        for entry in self.fault_log:
            if "modes_at_sim_s" not in entry and modes.get(entry["actuator"]) not in (None, "active"):
                entry["modes_at_sim_s"] = self.st.get("sim_t")
                entry["declared"] = modes[entry["actuator"]]

    def on_payloads(self, msg: Any) -> None:
        carried = {kv.key: float(kv.value) for kv in msg.values}
        self.st["payloads"], self.st["payloads_message"] = carried, msg.message
        for entry in self.payload_log:  # the first message carrying what was told with it
            if "told" in entry and "model_at_sim_s" not in entry and all(
                    abs(carried.get(k, 0.0) - m) < 1e-9 for k, m in entry["told"].items()):
                entry["model_at_sim_s"] = self.st.get("sim_t")

    def tell_operator(self) -> None:
        """Set the controller's parameters once the simulator's time passed a fault's or payload's."""
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        st, pending = self.st, self.pending_faults
        while pending and st.get("ready_sim_t") is not None and st.get("sim_t") is not None \
                and st["sim_t"] - st["ready_sim_t"] >= pending[0][0]:
            _, what, name, _ = pending.pop(0)
            if self.s.payload_unannounced and not isinstance(what, str):
                continue  # on the simulated robot only: nobody tells the controller
            request = SetParameters.Request()
            if isinstance(what, str):
                self.told["locked_actuators" if what == "locked" else "limp_actuators"].append(name)
                request.parameters = [Parameter(k, Parameter.Type.STRING_ARRAY, v).to_parameter_msg()
                                      for k, v in self.told.items()]
                entry = next(e for e in self.fault_log if e["actuator"] == name and "told_at_sim_s" not in e)
            else:
                self.told_payloads[name] = self.told_payloads.get(name, 0.0) + what
                value = [f"{k}:{m:g}" for k, m in self.told_payloads.items() if abs(m) > 1e-9]
                request.parameters = [Parameter("payloads", Parameter.Type.STRING_ARRAY, value).to_parameter_msg()]
                entry = next(e for e in self.payload_log if e["link"] == name and "told_at_sim_s" not in e)
                entry["told"] = {k: m for k, m in self.told_payloads.items() if abs(m) > 1e-9}
            entry["told_at_sim_s"] = st["sim_t"]
            self.calls.append((entry, self._set_params.call_async(request)))

    def on_identified(self, msg: Any) -> None:
        c = msg.inertia.com
        self.identified.append((_stamp_s(msg.header.stamp), msg.inertia.m, c.x, c.y))

    def on_ready(self, msg: Any) -> None:
        if self.st["started"] and not msg.data:
            self.st["ready_lost"] = True
        self.st["ready"] = msg.data

    def on_odom(self, msg: Any) -> None:
        st = self.st
        st["min_height_any"] = min(st.get("min_height_any", float("inf")), msg.pose.pose.position.z)
        if st["started"]:
            st["min_height"] = min(st["min_height"], msg.pose.pose.position.z)
            self.truth.setdefault(_key(msg.header.stamp), [None, None])[0] = msg.pose.pose

    def on_truth_joints(self, msg: Any) -> None:
        if self.st["started"]:
            self.truth.setdefault(_key(msg.header.stamp), [None, None])[1] = (list(msg.name), list(msg.position))

    def on_truth_wrench(self, i: int, msg: Any) -> None:
        if self.st["started"]:
            self.truth_fz.setdefault(_key(msg.header.stamp), [math.nan, math.nan])[i] = msg.wrench.force.z

    def on_com_target(self, msg: Any) -> None:
        if self.st["started"]:
            p = msg.point
            self.targets.append((_stamp_s(msg.header.stamp), (p.x, p.y, p.z)))

    def on_latency(self, msg: Any) -> None:
        if self.st["started"]:
            self.st["latency"].extend(msg.data)

    def on_plate(self, msg: Any) -> None:
        t = _stamp_s(msg.header.stamp)
        if self.st["started"] and round(t * 1e3) % 10 == 0:
            self.plate.append((t, -msg.wrench.force.z))

    def on_sole_target(self, msg: Any) -> None:
        if self.st["started"]:
            p = msg.pose.position
            self.sole_targets.append((_stamp_s(msg.header.stamp), (p.x, p.y, p.z)))

    def on_diagnostics(self, msg: Any) -> None:
        st = self.st
        if not st["started"]:
            return
        for status in msg.status:
            node_name, _, check = status.name.partition(": ")
            if check == "payload":
                values = {kv.key: kv.value for kv in status.values}
                self.payload_statuses.append((_stamp_s(msg.header.stamp), values.get("confident") == "true",
                                              float(values.get("mass_std_kg", "nan"))))
            if check == "process":
                stats = self.node_stats.setdefault(node_name, {})
                for kv in status.values:
                    if kv.key in ("cpu_ms_per_tick", "tick_rate_hz", "cpu_load"):
                        stats.setdefault(kv.key, []).append(float(kv.value))
            elif check == "watchdog":  # the simulator's: fallbacks since its start (a stalled command stream)
                trips = [int(float(kv.value)) for kv in status.values if kv.key == "trips"]
                st["watchdog_trips"] = max([st.get("watchdog_trips", 0), *trips])
            elif check.startswith("command writers"):  # the simulator's: a second command source
                values = {kv.key: kv.value for kv in status.values}
                st["command_writers_max"] = max(st.get("command_writers_max", 0),
                                                int(float(values.get("writers_max", 0))))
                st.setdefault("command_writers_refused", {})[check] = int(float(values.get("refused", 0)))
                if status.level[0] >= 2:
                    st.setdefault("command_writers_other", set()).update(
                        n.strip() for n in values.get("others", "").split(",") if n.strip() not in ("", "none"))
            elif check == "wbc":
                safe = status.message.startswith("safe mode")
                if safe and not st["safe"]:
                    st["safe_entries"] += 1
                    reason = status.message.split(":")[1].strip() if ":" in status.message else status.message
                    st["safe_reasons"][reason] = st["safe_reasons"].get(reason, 0) + 1
                st["safe"] = safe

    # ------------------------------------------------------------------ the node
    def attach(self, node: Any) -> None:
        """The observer's subscriptions and the controller's set-parameters client on ``node``."""
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
        from geometry_msgs.msg import InertiaStamped, PointStamped, PoseStamped, WrenchStamped
        from nav_msgs.msg import Odometry
        from rcl_interfaces.srv import SetParameters
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Bool, Float64MultiArray

        from kangaroo_wbc.robots.kangaroo.robot import SOLES
        from kangaroo_wbc.ros import qos

        sub = node.create_subscription
        for topic in self.watched:  # a queue of 10: a late observer (a loaded machine) counts what arrived
            kind = (Float64MultiArray if topic.endswith("/commands") else WrenchStamped if "wrench" in topic
                    else JointState)
            sub(kind, topic, self.counter(topic), qos.SENSOR_BEST_EFFORT, raw=True)
        sub(DiagnosticArray, "/diagnostics", self.on_diagnostics, qos.DIAGNOSTICS)
        sub(Bool, "wbc/ready", self.on_ready, qos.LATCHED)
        sub(Odometry, "sim/ground_truth/base_odometry", self.on_odom, qos.SENSOR_STATE)
        sub(JointState, "sim/ground_truth/joint_states", self.on_truth_joints, qos.SENSOR_STATE)
        if self.s.jump:  # the simulator publishes its true sole wrenches only to subscribers
            for i, sole in enumerate(SOLES.values()):
                sub(WrenchStamped, f"sim/ground_truth/{sole}/wrench", lambda msg, i=i: self.on_truth_wrench(i, msg),
                    qos.SENSOR_STATE)
        sub(PointStamped, "wbc/com_target", self.on_com_target, qos.VISUALIZATION)
        sub(Float64MultiArray, "sim/command_latency", self.on_latency, qos.VISUALIZATION)
        sub(DiagnosticStatus, "actuators/modes", self.on_modes, qos.LATCHED)
        sub(DiagnosticStatus, "model/payloads", self.on_payloads, qos.LATCHED)
        if self.s.identify:
            from kangaroo_wbc.nodes.contact_wrench_node import IDENTIFIED_PAYLOAD_TOPIC

            sub(InertiaStamped, IDENTIFIED_PAYLOAD_TOPIC, self.on_identified, qos.LATCHED)
        if self.s.rig is not None:
            sub(WrenchStamped, "rig/plate_wrench", self.on_plate, qos.SENSOR_STATE)
            sub(PoseStamped, "rig/sole_target", self.on_sole_target, qos.VISUALIZATION)
        self._set_params = node.create_client(SetParameters, "whole_body_controller/set_parameters")

    # ------------------------------------------------------------------ the run
    def wait_ready(self, executor: Any, procs: dict, late: list, stop: Callable[[], bool] | None,
                   when_ready: Callable[[], None] | None = None) -> float:
        """Spin until ``wbc/ready``, starting the late processes when due; the start-up time [s].

        Raises:
            GraphStartError: a signal (``stop``), a process that exited, or no ready in time.
        """
        t0 = time.monotonic()
        pending = list(late)  # (delay [s], name, start) of the processes started late
        log_dir = self.s.log_dir
        while not self.st["ready"]:
            executor.spin_once(timeout_sec=0.05)
            if stop is not None and stop():  # before anything else: no process started after a signal
                raise GraphStartError(f"interrupted before the controller was ready; logs in {log_dir}")
            while pending and time.monotonic() - t0 >= pending[0][0]:
                _, name, start = pending.pop(0)
                procs[name] = start()
            dead = {n: p.returncode for n, p in procs.items() if p.poll() is not None}
            if dead:
                raise GraphStartError(f"node process(es) exited during start-up {dead}; logs in {log_dir}")
            if time.monotonic() - t0 > self.s.startup_timeout_s:
                raise GraphStartError(f"the controller was not ready (wbc/ready) within {self.s.startup_timeout_s:g} "
                                      f"s (messages seen: {self.counts}); logs in {log_dir}")
        self.st["ready_sim_t"] = self.st.get("sim_t")  # the crane lets go at ready (release_delay_s 0)
        if when_ready is not None:
            when_ready()
        for _, name, start in pending:  # ready without them (the wrench estimator is optional)
            if stop is None or not stop():
                procs[name] = start()
        return time.monotonic() - t0

    def _monitor(self, procs: dict, start: float, now: float) -> None:
        st = self.st
        lat = np.asarray(st["latency"][st.get("latency_mark", 0):])
        st["latency_mark"] = len(st["latency"])
        self.periods.append({"t_s": round(now - start, 1),
                             "rss_mb": {n: process_rss_mb(p.pid) for n, p in procs.items()},
                             "latency_p99_ms": round(float(np.percentile(lat, 99)), 3) if lat.size else None,
                             "safe_mode_entries": st["safe_entries"]})

    def _sim_elapsed(self) -> float:
        span = self.stamps[self.watched[0]]
        return span[1] - span[0] if span else 0.0

    def observe(self, executor: Any, procs: dict, progress: Any, stop: Callable[[], bool] | None) -> dict:
        """The run proper, from ready for ``duration_s`` (simulated in lockstep, wall in realtime);
        the timing part of the summary."""
        s = self.s
        for t in self.watched:
            self.counts[t], self.stamps[t] = 0, []
        self.st["started"] = True
        start = last_print = last_monitor = time.monotonic()
        if s.monitor_period_s:
            self._monitor(procs, start, start)
        bar = progress.bar(s.duration_s, desc=f"graph ({s.sim_mode})", unit="s") if progress else None
        interrupted = False
        while True:
            now = time.monotonic()
            done = self._sim_elapsed() if s.sim_mode == "lockstep" else now - start
            if done >= s.duration_s or now - start > s.wall_timeout_s:
                break
            if stop is not None and stop():
                interrupted = True
                break
            executor.spin_once(timeout_sec=0.01)
            self.tell_operator()
            if s.monitor_period_s and now - last_monitor >= s.monitor_period_s:
                last_monitor = now
                self._monitor(procs, start, now)
            if bar is not None and now - last_print > 0.2:
                bar.update(min(done, s.duration_s) - bar.n)
                last_print = now
        if bar is not None:
            bar.close()
        elapsed, sim_span = time.monotonic() - start, self._sim_elapsed()
        if s.monitor_period_s and time.monotonic() - last_monitor > 0.5 * s.monitor_period_s:
            self._monitor(procs, start, time.monotonic())  # the last (at least half) period
        rates_sim = {t: round((c - 1) / (sp[1] - sp[0]), 1) if len(sp) == 2 and sp[1] > sp[0] else 0.0
                     for (t, c), sp in zip(self.counts.items(), self.stamps.values())}
        rates_wall = {t: round(c / elapsed, 1) for t, c in self.counts.items()}
        deadline = time.monotonic() + 1.2  # the simulator's last latency window (published every second)
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        return {"duration_s": round(elapsed, 3), "sim_time_s": round(sim_span, 3),
                "real_time_factor": round(sim_span / elapsed, 3) if elapsed > 0 else None,
                "topic_rates_hz": rates_sim, "topic_rates_hz_wall": rates_wall, "interrupted": interrupted}

    def summary(self, timing: dict, startup_s: float) -> dict:
        """The run's summary from what was observed (module docstring)."""
        from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

        s, st = self.s, self.st
        for entry, future in self.calls:
            entry["told_ok"] = bool(future.done() and future.result().results[0].successful)
        ready_t = st.get("ready_sim_t")
        for entry in self.fault_log:  # simulated times from the fault (its time after ready)
            at = None if ready_t is None else ready_t + entry.pop("after_ready_s")
            for key, out in (("told_at_sim_s", "told_after_fault_s"), ("modes_at_sim_s", "modes_after_fault_s")):
                t = entry.pop(key, None)
                entry[out] = None if t is None or at is None else round(t - at, 4)
        clm = load_kangaroo(floating_base=True)
        weighed = gm.weighed(self.fz, ready_t, self.payload_log, clm.mass_kg) if s.rig is None else {}
        bench = {} if s.rig is None else gm.rig_metrics(s.rig, ready_t, self.truth, self.sole_targets, self.plate,
                                                        self.fz, self.soles)
        for entry in self.payload_log:
            at = entry["at_sim_s"] = None if ready_t is None else ready_t + entry.pop("after_ready_s")
            entry.pop("told", None)
            entry["announced"] = not s.payload_unannounced
            for key, out in (("told_at_sim_s", "told_after_payload_s"),
                             ("model_at_sim_s", "model_after_payload_s")):
                t = entry.pop(key, None)
                entry[out] = None if t is None or at is None else round(t - at, 4)
        started_s = None if ready_t is None else ready_t + s.behaviour_delay_s
        changes = sorted((e["at_sim_s"], e["link"], e["mass_kg"]) for e in self.payload_log
                         if e["at_sim_s"] is not None)
        found = (gm.payload_metrics(self.identified, self.payload_statuses, self.truth, clm.model,
                                    changes if s.payload_unannounced else [], changes[-1][0] if changes else None,
                                    started_s) if s.identify else {})
        modes = st.get("modes", {})
        com_rmse = gm.com_rmse(self.truth, self.targets, clm, [(e["at_sim_s"], e["link"], e["mass_kg"])
                                                               for e in self.payload_log if e["at_sim_s"] is not None])
        motion = gm.base_motion(self.truth)
        if s.jump:
            motion.update(gm.jump_metrics(self.truth, self.truth_fz, started_s))
        latency = np.asarray(st["latency"])
        fell = bool(st["min_height"] < s.fall_height_m) if np.isfinite(st["min_height"]) else None
        p50, p99 = (round(float(np.percentile(latency, q)), 3) if latency.size else None for q in (50, 99))
        return {"startup_s": round(startup_s, 2), **timing,
                "command_latency_ms": {"p50": p50, "p99": p99, "samples": int(latency.size)},
                "fell": None if s.rig is not None else fell,
                "min_base_height_m": st["min_height"] if np.isfinite(st["min_height"]) else None,
                "controller_stayed_ready": not st["ready_lost"], "com_rmse_m": com_rmse, **motion,
                "min_base_height_whole_run_m": st.get("min_height_any"),
                "safe_mode_entries": st["safe_entries"], "safe_mode_reasons": st["safe_reasons"],
                "sim_watchdog_trips": st.get("watchdog_trips", 0),
                "command_writers_max": st.get("command_writers_max"),
                "command_writers_refused": sum(st.get("command_writers_refused", {}).values()),
                "command_writers_other": sorted(st.get("command_writers_other", ())),
                **({"faults": self.fault_log, "actuator_modes": {n: m for n, m in modes.items() if m != "active"},
                    "actuator_modes_message": st.get("modes_message")} if self.fault_log else {}),
                **weighed, **bench, **found,
                **({"payloads": [{k: v for k, v in e.items() if k != "at_sim_s"} for e in self.payload_log],
                    "model_payloads": st.get("payloads"), "model_payloads_message": st.get("payloads_message")}
                   if self.payload_log else {}),
                "nodes": {n: {k: gm.median(v) for k, v in d.items()} for n, d in self.node_stats.items()},
                **({"periods": self.periods} if s.monitor_period_s else {})}

    def run(self, procs: dict, late: list, progress: Any, stop: Callable[[], bool] | None,
            when_ready: Callable[[], None] | None = None) -> dict:
        """Wait for ready, observe, summarise (the observer's own ROS context, no signal handlers:
        SIGINT / SIGTERM belong to the caller's ``stop``)."""
        import rclpy
        from rclpy.experimental import EventsExecutor
        from rclpy.signals import SignalHandlerOptions

        context = rclpy.Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        node = rclpy.create_node("kangaroo_wbc_demo_observer", context=context)
        executor = EventsExecutor(context=context)
        executor.add_node(node)
        self.attach(node)
        try:
            startup_s = self.wait_ready(executor, procs, late, stop, when_ready)
            timing = self.observe(executor, procs, progress, stop)
        finally:
            executor.shutdown()
            node.destroy_node()
            context.try_shutdown()
        return self.summary(timing, startup_s)


__all__ = ["GraphObserver", "ObserverSettings", "GraphStartError", "WATCHED", "WATCHED_ROS2_CONTROL"]
