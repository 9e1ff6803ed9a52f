"""``kangaroo-wbc demo --processes separate|composed``: the shipped node graph over real DDS.

Starts the graph with the sim backend — ``separate``: ``sim``, ``state_estimator``,
``contact_wrench_estimator`` and ``whole_body_controller`` as four processes (the entry points
``ros2 run`` uses); ``composed``: the ``composed`` executable (``--backend sim``), the four nodes in
one process — and observes it from this process with rclpy. Parameters go to every process in one
temporary YAML file (``<node>: ros__parameters: {...}`` blocks, ``--params-file``); every pipeline
node runs on the simulator's ``/clock`` (``use_sim_time: true``) in both simulator modes.

The run starts when the controller says it is ready (``wbc/ready``): the robot then hangs on the
crane, calibrated, and the simulator releases it ``release_delay_s`` later. Measured from there:
message rates per wall second (``topic_rates_hz_wall``) and, in lockstep, per simulated second
(``topic_rates_hz``), the command latency the simulator measures from the echoed sample stamps
(``sim/command_latency``: p50, p99), simulated time and real-time factor, the ground-truth base
height (``fell`` below ``fall_height_m``), whether the controller stayed ready, and the exit code of
every process after SIGINT (0 expected). The controller does not publish its CoM reference, so no
CoM tracking error is reported here (the one-process demo has it).

Simulator modes: ``lockstep`` — paced to the wall clock until the controller is ready, then one
1 ms step per command answering the latest sample (or after ``lockstep_timeout_s``), so the loop
closes at 1 kHz of simulated time however slow the machine (``duration_s`` is simulated time);
``realtime`` — the simulator follows the wall clock at 1 kHz whatever the nodes do, as a robot
would (``duration_s`` is wall time). ``drop_ratio`` makes the simulator drop that fraction of the
commands (fault injection).

Children die with this process: each is started with ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` (Linux),
so even a SIGKILL of the runner leaves no node behind (SIGTERM gives them their clean shutdown).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

from kangaroo_wbc.errors import KangarooWbcError

EXECUTABLES = ("sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller")
WATCHED = ("actuators/state", "joint_states", "contact/left_sole/wrench", "contact/right_sole/wrench",
           "actuators/command")
SIM_MODES = ("lockstep", "realtime")
PROCESSES = ("separate", "composed")
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class GraphStartError(KangarooWbcError):
    """The graph did not come up (a process died, or the controller never became ready)."""


def _die_with_parent():
    """``preexec_fn``: the child receives SIGTERM when this process dies (Linux; no-op elsewhere)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # loaded before the fork
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the prctl
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def _start(name: str, argv: list[str], params_file: Path, log_dir: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    log = open(log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([sys.executable, "-c", "import sys; from kangaroo_wbc.nodes.entry import run; "
                             f"sys.exit(run({argv[0]!r}))", *argv[1:], "--ros-args", "--params-file",
                             str(params_file)], stdout=log, stderr=subprocess.STDOUT, env=env,
                            preexec_fn=_die_with_parent())


def _params(behaviour: str, lockstep: bool, drop_ratio: float, seed: int) -> dict:
    # the ground truth only feeds the fall detection here: 100 Hz (its contact wrenches cost most)
    sim = {"lockstep": lockstep, "realtime": True, "drop_ratio": float(drop_ratio), "seed": int(seed),
           "ground_truth_decimation": 10}
    nodes = {"state_estimator": {}, "contact_wrench_estimator": {}, "whole_body_controller": {"behaviour": behaviour}}
    return {"sim": {"ros__parameters": sim},  # the clock's source: on its own clock
            **{n: {"ros__parameters": {"use_sim_time": True, **p}} for n, p in nodes.items()}}


def _stop(procs: dict[str, subprocess.Popen], timeout_s: float = 15.0) -> dict[str, int | None]:
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    codes: dict[str, int | None] = {}
    for name, p in procs.items():
        try:
            codes[name] = p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            codes[name] = None
    return codes


def run_graph(processes: str = "separate", duration_s: float = 5.0, behaviour: str = "stand",
              sim_mode: str = "lockstep", drop_ratio: float = 0.0, seed: int = 0, show_progress: bool = True,
              startup_timeout_s: float = 120.0, fall_height_m: float = 0.6,
              wall_timeout_s: float | None = None) -> dict:
    """Run the graph for ``duration_s`` once the controller is ready; returns the results dict.

    Args:
        processes: ``"separate"`` or ``"composed"``.
        duration_s: simulated time [s] in ``lockstep``, wall time in ``realtime``.
        sim_mode: ``"lockstep"`` or ``"realtime"`` (module docstring).
        drop_ratio: fraction of the commands the simulator drops, in [0, 1).
        startup_timeout_s: wall time [s] for the controller to become ready.
        wall_timeout_s: stop after this wall time [s] even if ``duration_s`` has not passed
            (default: 60 × ``duration_s`` + 30).

    Raises:
        GraphStartError: a process died or the controller was not ready within ``startup_timeout_s``
            (the message names the log folder).
    """
    if processes not in PROCESSES:
        raise ValueError(f"processes must be one of {PROCESSES}, got {processes!r}")
    if sim_mode not in SIM_MODES:
        raise ValueError(f"sim_mode must be one of {SIM_MODES}, got {sim_mode!r}")
    if not 0.0 <= drop_ratio < 1.0:
        raise ValueError(f"drop_ratio must be in [0, 1), got {drop_ratio}")
    if processes == "composed" and importlib.util.find_spec("kangaroo_wbc.nodes.composed_node") is None:
        raise GraphStartError("the composed deployment needs kangaroo_wbc.nodes.composed_node, not installed")
    lockstep = sim_mode == "lockstep"
    wall_timeout_s = 60.0 * duration_s + 30.0 if wall_timeout_s is None else wall_timeout_s
    log_dir = Path(tempfile.mkdtemp(prefix=f"kangaroo_wbc_demo_{processes}_"))
    params_file = log_dir / "params.yaml"
    params_file.write_text(yaml.safe_dump(_params(behaviour, lockstep, drop_ratio, seed), sort_keys=False))
    if processes == "separate":
        procs = {n: _start(n, [n], params_file, log_dir) for n in EXECUTABLES}
    else:
        procs = {"composed": _start("composed", ["composed", "--backend", "sim"], params_file, log_dir)}
    try:
        result = _observe(procs, duration_s, sim_mode, startup_timeout_s, fall_height_m, wall_timeout_s,
                          show_progress, log_dir)
    finally:
        exit_codes = _stop(procs)
    return {"processes": processes, "sim_mode": sim_mode, "behaviour": behaviour, "drop_ratio": drop_ratio,
            **result, "exit_codes": exit_codes, "logs": str(log_dir)}


def run_separate(**kwargs) -> dict:
    """:func:`run_graph` with four processes."""
    return run_graph(processes="separate", **kwargs)


def _observe(procs, duration_s, sim_mode, startup_timeout_s, fall_height_m, wall_timeout_s, show_progress,
             log_dir) -> dict:
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool, Float64MultiArray

    from kangaroo_wbc.ros import qos

    lockstep = sim_mode == "lockstep"
    types = {t: WrenchStamped if "wrench" in t else JointState for t in WATCHED}
    counts = dict.fromkeys(WATCHED, 0)
    stamps: dict[str, list[float]] = {t: [] for t in WATCHED}  # [first, last] header stamp [s]
    st = {"ready": None, "ready_lost": False, "started": False, "min_height": float("inf"), "latency": []}

    def counter(topic: str):
        def cb(msg) -> None:
            counts[topic] += 1
            t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            span = stamps[topic]
            span[:] = [t, t] if not span else [span[0], t]
        return cb

    def on_ready(msg: Bool) -> None:
        if st["started"] and not msg.data:
            st["ready_lost"] = True
        st["ready"] = msg.data

    def on_odom(msg: Odometry) -> None:
        if st["started"]:
            st["min_height"] = min(st["min_height"], msg.pose.pose.position.z)

    def on_latency(msg: Float64MultiArray) -> None:
        if st["started"]:
            st["latency"].extend(msg.data)

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("kangaroo_wbc_demo_observer", context=context)
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    for topic in WATCHED:
        node.create_subscription(types[topic], topic, counter(topic), qos.SENSOR_STATE)
    node.create_subscription(Bool, "wbc/ready", on_ready, qos.LATCHED)
    node.create_subscription(Odometry, "sim/ground_truth/base_odometry", on_odom, qos.SENSOR_STATE)
    node.create_subscription(Float64MultiArray, "sim/command_latency", on_latency, qos.VISUALIZATION)
    try:
        t0 = time.monotonic()
        while not st["ready"]:
            executor.spin_once(timeout_sec=0.05)
            dead = {n: p.returncode for n, p in procs.items() if p.poll() is not None}
            if dead:
                raise GraphStartError(f"node process(es) exited during start-up {dead}; logs in {log_dir}")
            if time.monotonic() - t0 > startup_timeout_s:
                seen = {t: c for t, c in counts.items()}
                raise GraphStartError(f"the controller was not ready (wbc/ready) within {startup_timeout_s:g} s "
                                      f"(messages seen: {seen}); logs in {log_dir}")
        startup_s = time.monotonic() - t0
        for t in WATCHED:
            counts[t], stamps[t] = 0, []
        st["started"] = True
        start = last_print = time.monotonic()

        def sim_elapsed() -> float:
            span = stamps["actuators/state"]
            return span[1] - span[0] if span else 0.0

        while True:
            now = time.monotonic()
            done = sim_elapsed() if lockstep else now - start
            if done >= duration_s or now - start > wall_timeout_s:
                break
            executor.spin_once(timeout_sec=0.01)
            if show_progress and now - last_print > 1.0:
                sys.stderr.write(f"\rdemo ({sim_mode}) {done:4.1f}/{duration_s:.1f} s")
                last_print = now
        elapsed, sim_span = time.monotonic() - start, sim_elapsed()
        rates_sim = {t: round((c - 1) / (s[1] - s[0]), 1) if len(s) == 2 and s[1] > s[0] else 0.0
                     for (t, c), s in zip(counts.items(), stamps.values())}
        rates_wall = {t: round(c / elapsed, 1) for t, c in counts.items()}
        deadline = time.monotonic() + 1.2  # the simulator's last latency window (published every second)
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        if show_progress:
            sys.stderr.write("\n")
    finally:
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()
    latency = np.asarray(st["latency"])
    fell = bool(st["min_height"] < fall_height_m) if np.isfinite(st["min_height"]) else None
    return {"startup_s": round(startup_s, 2), "duration_s": round(elapsed, 3), "sim_time_s": round(sim_span, 3),
            "real_time_factor": round(sim_span / elapsed, 3) if elapsed > 0 else None,
            "topic_rates_hz": rates_sim, "topic_rates_hz_wall": rates_wall,
            "command_latency_ms": {"p50": round(float(np.percentile(latency, 50)), 3) if latency.size else None,
                                   "p99": round(float(np.percentile(latency, 99)), 3) if latency.size else None,
                                   "samples": int(latency.size)},
            "fell": fell, "min_base_height_m": st["min_height"] if np.isfinite(st["min_height"]) else None,
            "controller_stayed_ready": not st["ready_lost"]}
