"""``kangaroo-wbc demo --processes separate``: the four nodes as separate processes over real DDS.

Starts ``sim``, ``state_estimator``, ``contact_wrench_estimator`` and ``whole_body_controller`` as
their own Python processes (the same entry points ``ros2 run`` uses), then observes the graph from
this process with rclpy: message rates of the main topics over the run, and the simulator's
ground-truth base height to decide whether the robot fell. Every process is stopped with SIGINT and
its exit code reported.

Two simulator modes:

* ``lockstep`` (default): the simulator advances one 1 ms step per controller command, every node
  runs on the simulator's clock (``use_sim_time``). Every tick of the 1 kHz loop gets its estimate
  and its command however long the processes take; the graph runs slower than real time when the
  machine cannot run the four processes at 1 kHz. ``topic_rates_hz`` counts messages per second of
  simulated time (what the robot sees); ``topic_rates_hz_wall`` per second of wall time, and
  ``real_time_factor`` is their ratio.
* ``realtime``: the simulator steps on the wall clock at 1 kHz whatever the other processes do; a
  slow controller then closes the loop at a lower rate (``topic_rates_hz`` is then per wall second).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NODES = {
    "sim": "kangaroo_wbc.nodes.sim_node",
    "state_estimator": "kangaroo_wbc.nodes.state_estimator_node",
    "contact_wrench_estimator": "kangaroo_wbc.nodes.contact_wrench_node",
    "whole_body_controller": "kangaroo_wbc.nodes.whole_body_controller_node",
}
WATCHED = {
    "actuators/state": "sensor_msgs/msg/JointState",
    "joint_states": "sensor_msgs/msg/JointState",
    "contact/left_sole/wrench": "geometry_msgs/msg/WrenchStamped",
    "contact/right_sole/wrench": "geometry_msgs/msg/WrenchStamped",
    "actuators/command": "sensor_msgs/msg/JointState",
}


def _start(name: str, module: str, params: dict, log_dir: Path) -> subprocess.Popen:
    args = [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())",
            "--ros-args", "-r", f"__node:={name}"]
    for k, v in params.items():
        args += ["-p", f"{k}:={str(v).lower() if isinstance(v, bool) else v}"]
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    log = open(log_dir / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)


SIM_MODES = ("lockstep", "realtime")


def run_separate(duration_s: float = 5.0, behaviour: str = "stand", show_progress: bool = True,
                 startup_timeout_s: float = 60.0, fall_height_m: float = 0.6, sim_mode: str = "lockstep",
                 wall_timeout_s: float | None = None) -> dict:
    """Run the graph for ``duration_s`` after the controller starts commanding.

    Args:
        duration_s: run length [s]: simulated time in ``lockstep``, wall time in ``realtime``.
        sim_mode: ``"lockstep"`` or ``"realtime"`` (see the module docstring).
        wall_timeout_s: in lockstep, stop after this wall time even if ``duration_s`` of simulated
            time has not passed (default: 60 × ``duration_s``).
    """
    if sim_mode not in SIM_MODES:
        raise ValueError(f"sim_mode must be one of {SIM_MODES}, got {sim_mode!r}")
    lockstep = sim_mode == "lockstep"
    wall_timeout_s = 60.0 * duration_s if wall_timeout_s is None else wall_timeout_s
    import rclpy
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState

    from kangaroo_wbc.ros import qos

    log_dir = Path(tempfile.mkdtemp(prefix="kangaroo_wbc_demo_"))
    common = {"use_sim_time": True} if lockstep else {}
    procs = {
        "sim": _start("sim", NODES["sim"], {"lockstep": True} if lockstep else {"realtime": True}, log_dir),
        "state_estimator": _start("state_estimator", NODES["state_estimator"], common, log_dir),
        "contact_wrench_estimator": _start("contact_wrench_estimator", NODES["contact_wrench_estimator"], common,
                                           log_dir),
        "whole_body_controller": _start("whole_body_controller", NODES["whole_body_controller"],
                                        {"behaviour": behaviour, **common}, log_dir),
    }
    rclpy.init()
    node = rclpy.create_node("kangaroo_wbc_demo_observer")
    counts = {t: 0 for t in WATCHED}
    stamps: dict[str, list[float]] = {t: [] for t in WATCHED}  # [first, last] header stamp [s]
    state = {"min_height": float("inf"), "last_height": float("nan")}
    types = {"sensor_msgs/msg/JointState": JointState}
    from geometry_msgs.msg import WrenchStamped

    types["geometry_msgs/msg/WrenchStamped"] = WrenchStamped

    def counter(topic: str):
        def cb(msg) -> None:
            counts[topic] += 1
            t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            span = stamps[topic]
            span[:] = [t, t] if not span else [span[0], t]
        return cb

    subs = [node.create_subscription(types[t], topic, counter(topic), qos.SENSOR_STATE)
            for topic, t in WATCHED.items()]

    def on_odom(msg: Odometry) -> None:
        z = msg.pose.pose.position.z
        state["last_height"] = z
        if counts["actuators/command"] > 0:
            state["min_height"] = min(state["min_height"], z)

    subs.append(node.create_subscription(Odometry, "sim/ground_truth/base_odometry", on_odom, qos.SENSOR_STATE))
    exit_codes: dict[str, int | None] = {}
    try:
        t0 = time.monotonic()
        while counts["actuators/command"] == 0:
            rclpy.spin_once(node, timeout_sec=0.05)
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if dead or time.monotonic() - t0 > startup_timeout_s:
                raise RuntimeError(f"graph did not start (dead: {dead}); logs in {log_dir}")
        for t in counts:
            counts[t] = 0
            stamps[t] = []
        start = time.monotonic()
        last_print = start

        def sim_elapsed() -> float:
            span = stamps["actuators/state"]
            return span[1] - span[0] if span else 0.0

        while True:
            now = time.monotonic()
            done = sim_elapsed() if lockstep else now - start
            if done >= duration_s or now - start > wall_timeout_s:
                break
            rclpy.spin_once(node, timeout_sec=0.01)
            if show_progress and now - last_print > 1.0:
                sys.stderr.write(f"\rdemo (separate processes, {sim_mode}) {done:4.1f}/{duration_s:.1f} s")
                last_print = now
        elapsed = time.monotonic() - start
        if show_progress:
            sys.stderr.write("\n")
        rates_wall = {t: round(c / elapsed, 1) for t, c in counts.items()}
        sim_span = sim_elapsed()
        if lockstep:  # messages per second of simulated time
            rates = {t: round((c - 1) / (s[1] - s[0]), 1) if len(s) == 2 and s[1] > s[0] else 0.0
                     for (t, c), s in zip(counts.items(), stamps.values())}
        else:
            rates = rates_wall
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for name, p in procs.items():
            try:
                exit_codes[name] = p.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                p.kill()
                exit_codes[name] = None
        node.destroy_node()
        rclpy.shutdown()
    fell = bool(state["min_height"] < fall_height_m) if state["min_height"] != float("inf") else None
    return {"processes": "separate", "sim_mode": sim_mode, "behaviour": behaviour,
            "duration_s": round(elapsed, 3), "sim_time_s": round(sim_span, 3),
            "real_time_factor": round(sim_span / elapsed, 3) if elapsed > 0 else None,
            "topic_rates_hz": rates, "topic_rates_hz_wall": rates_wall,
            "fell": fell, "min_base_height_m": state["min_height"],
            "exit_codes": exit_codes, "logs": str(log_dir)}
