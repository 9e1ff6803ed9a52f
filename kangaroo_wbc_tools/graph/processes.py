"""``kangaroo-wbc demo --processes separate|composed``: the shipped node graph over real DDS.

Starts the graph with the sim backend — ``separate``: ``sim``, ``state_estimator``,
``contact_wrench_estimator`` and ``whole_body_controller`` as four processes (the entry points
``ros2 run`` uses); ``composed``: the ``composed`` executable (``--backend sim``), the four nodes in
one process — and observes it from this process with rclpy. Parameters go to every process in one
temporary YAML file (``<node>: ros__parameters: {...}`` blocks, ``--params-file``); every pipeline
node runs on the simulator's time (``use_sim_time: true``; the chain's nodes take it from the stamps of
``actuators/state``, ``sim_clock: stamps``) in both simulator modes.

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

Actuator faults (``faults``: mode, actuator, ``t`` [s] after the behaviour starts, as the one-process
demo's ``--fault``): the simulator's ``faults`` parameter welds or disables the actuator ``t +
behaviour_delay_s`` after the crane's release (the behaviour starts ``behaviour_delay_s`` after the
controller is ready, the crane lets go at ready), and this runner plays the operator who tells the
controller: once the simulator's stamps (``actuators/state``) pass that time it sets the
controller's ``locked_actuators`` / ``limp_actuators`` parameters (``SetParameters``, as ``ros2 param
set``). The result lists each fault with the simulated time from the fault to the controller's
``actuators/modes`` saying so (``modes_after_fault_s``: the operator's or the fault detector's word,
whichever came first) and the final modes.

Payloads (``payloads``: mass [kg], link, ``t`` [s] after the behaviour starts, as ``--payload``) go
the same way: the simulator's ``payloads`` parameter attaches the mass, and once the simulator's
stamps pass that time this runner sets the controller's ``payloads`` parameter (``LINK:MASS_KG``, the
sum told so far per link); the result lists each payload with ``told_after_payload_s`` and
``model_after_payload_s`` (to the controller's ``model/payloads`` saying so). ``fz_sum_over_mg`` is
the estimated sole normal forces (``contact/<sole>/wrench``, sole frames, every 10th stamp) over
the robot's weight with the payloads attached by then, from 0.3 s after the release, leaving out
the second after each payload (as the one-process demo measures it); each payload's
``fz_sum_over_mg_after`` from 1 s after it to the next one or the end. With
``payload_unannounced`` the runner tells nobody (the controller's ``payloads`` stays empty: the
models keep their masses), as the one-process demo's ``LoopConfig.payload_unannounced``.

Payload identification (``payload_identification``; on with payloads, as in the one-process demo):
the ``contact_wrench_estimator``'s ``payload_identification`` parameter; the result has the
one-process demo's keys (:func:`~kangaroo_wbc_tools.pipeline.metrics.payload_summary`) from the
topics: the last ``payload/identified`` message is the last confident estimate and the messages
give the delay; its standard deviation is the last confident ``payload`` status's in
``/diagnostics``, ``payload_confident_ratio`` the share of those statuses from the behaviour's
start on that were confident (the diagnostics' rate); the truth is the unannounced payloads at
their links' CoM in the ground truth nearest the estimate.

``ideal_actuators``: the sim node's ``ideal_actuators``, and eq. (47) alone where the one-process
demo uses it with ideal actuators: the wrench estimator's ``actuator_model``,
``rotor_inertia_compensation`` and ``torque_bias_estimation`` false, the controller's
``fault_drive_model`` false.

The one-leg test bench (``rig="one_leg"``): every node gets the parameters ``rig`` and ``rig_leg``
(the launch file's ``rig:=one_leg``) and builds the bench from the same generated files; the
controller runs the bench's behaviour from ready. The result then holds the one-process bench's
metrics, computed by the same function (:func:`~kangaroo_wbc_tools.pipeline.metrics.rig_metrics`) on the
topics sampled every 10 ms: the sole's true pose from ``sim/ground_truth/joint_states`` against
``rig/sole_target`` over the circle; the plate's ``rig/plate_wrench`` and the wrench estimator's
``contact/<sole>/wrench`` (sole frame) over the press's hold; the phases from the behaviour's
timings after ready; ``fell`` is None.

Children are supervised: each runs in a process group of its own (a terminal's Ctrl-C reaches this
runner only, which stops the graph in order: the simulator first) and is started with
``prctl(PR_SET_PDEATHSIG, SIGTERM)`` (Linux), so even a SIGKILL of the runner leaves no node behind
(SIGTERM gives them their clean shutdown); a process that does not exit in time is killed with its
whole group. A ``stop()`` callable (the CLI's SIGINT / SIGTERM) ends the run early: the result
covers the time run and says ``"interrupted": true``.
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import yaml

from kangaroo_wbc.components.assembly import loop_overrides
from kangaroo_wbc.components.ros2_control.settings import hardware_overrides
from kangaroo_wbc_tools.graph.observer import (  # noqa: F401
    WATCHED,
    WATCHED_ROS2_CONTROL,
    GraphObserver,
    GraphStartError,
    ObserverSettings,
)

EXECUTABLES = ("sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller")
SIM_MODES = ("lockstep", "realtime")
PROCESSES = ("separate", "composed")
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


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
    with open(log_dir / f"{name}.log", "w") as log:  # the child keeps its own descriptor
        return subprocess.Popen([sys.executable, "-c", "import sys; from kangaroo_wbc.nodes.entry import run; "
                                 f"sys.exit(run({argv[0]!r}))", *argv[1:], "--ros-args", "--params-file",
                                 str(params_file)], stdout=log, stderr=subprocess.STDOUT, env=env,
                                preexec_fn=_die_with_parent(), process_group=0)


def _kill_group(p: subprocess.Popen) -> None:
    """SIGKILL the process group of child ``p`` (its own: ``process_group=0``)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _behaviour_delay_s(controller: dict | None) -> float:
    """The controller's ``behaviour_delay_s`` [s] (its parameter, else the component's default)."""
    from kangaroo_wbc.components.control import ControlSettings

    return float((controller or {}).get("behaviour_delay_s", ControlSettings().behaviour_delay_s))


def _params(behaviour: str, lockstep: bool, drop_ratio: float, seed: int, controller: dict | None = None,
            faults: Sequence[tuple[str, str, float]] = (), payloads: Sequence[tuple[float, str, float]] = (),
            rig: str = "", rig_leg: str = "left", ideal_actuators: bool = False,
            payload_identification: bool = False, interface: str = "native", joint_space: str = "actuator") -> dict:
    # the ground truth only feeds the fall detection here: 100 Hz (its contact wrenches cost most)
    sim: dict[str, Any] = {"lockstep": lockstep, "realtime": True, "drop_ratio": float(drop_ratio), "seed": int(seed),
           "ground_truth_decimation": 10, "ideal_actuators": bool(ideal_actuators)}
    sim.update(hardware_overrides(interface, joint_space)["sim"])  # the simulator as that hardware
    if faults:  # the simulator counts from the crane's release (at ready), the faults from the behaviour's start
        delay = _behaviour_delay_s(controller)
        sim["faults"] = [f"{mode}:{name}@{at + delay:g}" for mode, name, at in faults]
    if payloads:
        delay = _behaviour_delay_s(controller)
        sim["payloads"] = [f"{mass:g}kg@{link}@{at + delay:g}" for mass, link, at in payloads]
    # a numeric list is a double array to rcl only if every item is a float (``[0.3, 0, 0]`` is refused)
    def numeric(v) -> bool:
        return isinstance(v, list | tuple) and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v)

    controller = {k: [float(x) for x in v] if numeric(v) else v for k, v in (controller or {}).items()}
    # the one-process loop's overrides (components.assembly.loop_overrides): the same run, node by node
    nodes = loop_overrides(behaviour, ideal_actuators, payload_identification, rig, rig_leg, controller,
                           interface=interface, joint_space=joint_space)
    if rig:  # every node builds the bench; the sole's target at the ground truth's rate
        sim.update(rig=rig, rig_leg=rig_leg)
        nodes["whole_body_controller"].setdefault("timing_rate_hz", 100.0)
    return {"sim": {"ros__parameters": sim},  # the clock's source: on its own clock
            **{n: {"ros__parameters": {"use_sim_time": True, **p}} for n, p in nodes.items()}}


#: Longest wait [s] for the processes of a graph stopped during its start-up (then SIGKILL).
STARTUP_STOP_TIMEOUT_S = 3.0


def _stop(procs: dict[str, subprocess.Popen], timeout_s: float = 15.0) -> dict[str, int | None]:
    """SIGINT to every process (the simulator first), then their exit codes, waiting ``timeout_s``
    [s] for all of them together; a process still running then is killed (code None)."""
    # the simulator first, whatever order the processes were started in (a late-started simulator
    # interrupted after the nodes it serves has been seen not to exit)
    for name in sorted(procs, key=lambda n: n != "sim"):
        p = procs[name]
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    codes: dict[str, int | None] = {}
    deadline = time.monotonic() + timeout_s
    for name, p in procs.items():
        try:
            codes[name] = p.wait(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill_group(p)
            p.wait()
            codes[name] = None
        _kill_group(p)  # anything the node left behind in its group
    return codes


def run_graph(processes: str = "separate", duration_s: float = 5.0, behaviour: str = "stand",
              sim_mode: str = "lockstep", drop_ratio: float = 0.0, seed: int = 0, progress=None,
              startup_timeout_s: float = 120.0, fall_height_m: float = 0.6,
              wall_timeout_s: float | None = None, monitor_period_s: float | None = None,
              start_delays_s: dict[str, float] | None = None, stop: Callable[[], bool] | None = None,
              log_dir: Path | None = None, controller_params: dict | None = None,
              faults: Sequence[tuple[str, str, float]] = (),
              payloads: Sequence[tuple[float, str, float]] = (), rig: str = "", rig_leg: str = "left",
              ideal_actuators: bool = False, payload_unannounced: bool = False,
              payload_identification: bool | None = None, when_ready: Callable[[], None] | None = None,
              interface: str = "native", joint_space: str = "actuator") -> dict:
    """Run the graph for ``duration_s`` once the controller is ready; returns the results dict.

    Args:
        processes: ``"separate"`` or ``"composed"``.
        duration_s: simulated time [s] in ``lockstep``, wall time in ``realtime``.
        sim_mode: ``"lockstep"`` or ``"realtime"`` (module docstring).
        drop_ratio: fraction of the commands the simulator drops, in [0, 1).
        progress: a progress display with ``bar(total, desc=, unit=)`` returning an object with
            ``update(delta)``, ``n`` and ``close()`` (:class:`kangaroo_wbc.progress.Progress`);
            None: no display.
        startup_timeout_s: wall time [s] for the controller to become ready.
        wall_timeout_s: stop after this wall time [s] even if ``duration_s`` has not passed
            (default: 60 × ``duration_s`` + 30).
        monitor_period_s: every this many wall seconds record each process' resident memory
            and the command latency of the period (``periods`` in the result; the soak).
        start_delays_s: separate processes: start these executables this many seconds after the
            others (start-order tests: nothing may move the robot before the graph is ready).
        stop: polled while the graph runs; once it returns True the run ends (``interrupted``).
        log_dir: folder for the processes' logs and parameter file (created; default: a new
            temporary folder).
        controller_params: more ``whole_body_controller`` parameters (e.g. the walk's ``cmd_vel``).
        faults: actuator faults ``(mode, actuator, t)``: ``locked`` or ``limp``, ``t`` [s] after the
            behaviour starts (module docstring: the simulator's, then the operator's word).
        payloads: ``(mass [kg], link, t)``: a point mass at the link's centre of mass (``torso``: the
            base link; negative: removed), ``t`` [s] after the behaviour starts (the same way).
        rig, rig_leg: a test bench (``one_leg``) and its leg (module docstring); empty: the robot.
        ideal_actuators: the simulator's ideal ball screws (the commanded force acts as is); the wrench
            estimator and the controller's fault detector then use eq. (47) alone, as in the
            one-process demo.
        payload_unannounced: the payloads go on the simulated robot only: the controller's
            ``payloads`` parameter is not set, the models are not told (module docstring).
        payload_identification: the wrench estimator's ``payload_identification`` (module
            docstring); None: on when ``payloads`` is not empty.
        interface, joint_space: the hardware interface of the simulator and the nodes (``native``
            or ``ros2_control``, ``docs/ros2_control.md``) and, with ros2_control, the joints the
            simulated hardware exposes (``actuator`` or ``serial``).
        when_ready: called once the controller is ready (the run starts).

    ``controller_stayed_ready`` is False when the controller reported not ready after ready, or
    when any process exited with a code other than 0 (``exit_codes``); no process is started once
    ``stop()`` returned True.

    Raises:
        GraphStartError: a process died, the controller was not ready within ``startup_timeout_s``
            or ``stop()`` ended the start-up (the message names the log folder).
    """
    if processes not in PROCESSES:
        raise ValueError(f"processes must be one of {PROCESSES}, got {processes!r}")
    if sim_mode not in SIM_MODES:
        raise ValueError(f"sim_mode must be one of {SIM_MODES}, got {sim_mode!r}")
    if not 0.0 <= drop_ratio < 1.0:
        raise ValueError(f"drop_ratio must be in [0, 1), got {drop_ratio}")
    if not (np.isfinite(duration_s) and duration_s > 0.0):
        raise ValueError(f"duration_s must be > 0, got {duration_s}")
    if not startup_timeout_s > 0.0:
        raise ValueError(f"startup_timeout_s must be > 0, got {startup_timeout_s}")
    if processes == "composed" and importlib.util.find_spec("kangaroo_wbc.nodes.composed_node") is None:
        raise GraphStartError("the composed deployment needs kangaroo_wbc.nodes.composed_node, not installed")
    lockstep = sim_mode == "lockstep"
    wall_timeout_s = 60.0 * duration_s + 30.0 if wall_timeout_s is None else wall_timeout_s
    log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix=f"kangaroo_wbc_demo_{processes}_"))
    log_dir.mkdir(parents=True, exist_ok=True)
    params_file = log_dir / "params.yaml"
    faults = [(mode, name, float(at)) for mode, name, at in faults]
    bad: list[tuple[str | float, str, float]] = [f for f in faults if f[0] not in ("locked", "limp") or not f[2] >= 0.0]
    if bad:
        raise ValueError(f"faults: (mode locked or limp, actuator, t >= 0 s after the behaviour starts), got {bad}")
    from kangaroo_wbc.components.simulated_robot import MAX_PAYLOAD_KG, payload_link

    payloads = [(float(mass), payload_link(link), float(at)) for mass, link, at in payloads]
    bad = [p for p in payloads if not (0.0 < abs(p[0]) <= MAX_PAYLOAD_KG and p[2] >= 0.0)]
    if bad:
        raise ValueError(f"payloads: (mass 0 < |m| <= {MAX_PAYLOAD_KG:g} kg, link, t >= 0 s after the behaviour "
                         f"starts), got {bad}")
    from kangaroo_wbc.robots.kangaroo.rig import RIGS

    if rig and (rig not in RIGS or rig_leg not in ("left", "right")):
        raise ValueError(f"rig must be one of {RIGS} (leg left or right), got {rig!r} ({rig_leg!r})")
    identify = bool(payloads) if payload_identification is None else bool(payload_identification)
    if rig and identify:
        raise ValueError("payload identification needs the free robot (its base rows weigh it), not a rig")
    if interface not in ("native", "ros2_control") or joint_space not in ("actuator", "serial") or (
            rig and interface != "native"):
        raise ValueError(f"interface native or ros2_control (not on a rig), joint_space actuator or serial; got "
                         f"{interface!r}, {joint_space!r}")
    params = _params(behaviour, lockstep, drop_ratio, seed, controller_params, faults, payloads, rig, rig_leg,
                     ideal_actuators, identify, interface, joint_space)
    params_file.write_text(yaml.safe_dump(params, sort_keys=False))
    delays = dict(start_delays_s or {})
    unknown = sorted(set(delays) - set(EXECUTABLES))
    if unknown or (delays and processes != "separate"):
        raise ValueError(f"start_delays_s: separate processes only, names among {EXECUTABLES}; got {unknown or delays}")
    procs: dict[str, subprocess.Popen] = {}
    late = sorted((d, n) for n, d in delays.items() if d)
    delay = _behaviour_delay_s(controller_params)  # imports the control stack: before any process starts
    _import_observer()  # the same: once the nodes start, stop() is checked every 50 ms
    try:
        if processes == "separate":
            for n in EXECUTABLES:
                if stop is not None and stop():  # no process started after a signal
                    raise GraphStartError(f"interrupted before the controller was ready; logs in {log_dir}")
                if not delays.get(n):
                    procs[n] = _start(n, [n], params_file, log_dir)
        else:
            procs["composed"] = _start("composed", ["composed", "--backend", "sim"], params_file, log_dir)
        operator = ([(at + delay, mode, name, at) for mode, name, at in faults]
                    + [(at + delay, mass, link, at) for mass, link, at in payloads])
        result = _observe(procs, duration_s, sim_mode, startup_timeout_s, fall_height_m, wall_timeout_s,
                          progress, log_dir, monitor_period_s, stop,
                          late=[(d, n, lambda n=n: _start(n, [n], params_file, log_dir)) for d, n in late],
                          operator=sorted(operator, key=lambda o: o[0]), rig=(rig, rig_leg) if rig else None,
                          payload_unannounced=payload_unannounced, identify=identify, behaviour_delay_s=delay,
                          jump=behaviour == "jump", when_ready=when_ready,
                          watched=WATCHED if interface == "native" else WATCHED_ROS2_CONTROL)
    except GraphStartError as exc:  # nothing to wait for: the nodes had not started their work
        exc.exit_codes = _stop(procs, STARTUP_STOP_TIMEOUT_S)
        raise
    except BaseException as exc:  # an abort (a signal's exception) waits no longer than a start-up
        cast(Any, exc).exit_codes = _stop(procs, 15.0 if isinstance(exc, Exception) else STARTUP_STOP_TIMEOUT_S)
        raise
    exit_codes = _stop(procs)
    if any(code != 0 for code in exit_codes.values()):  # a node that failed: the controller's word is void
        result["controller_stayed_ready"] = False
    return {"processes": processes, "sim_mode": sim_mode, "behaviour": behaviour, "drop_ratio": drop_ratio,
            **result, "exit_codes": exit_codes, "logs": str(log_dir)}


#: Soak acceptance: largest resident-memory growth of any process [MB] and largest relative change
#: of the command latency's 99th percentile between the first and the last period.
SOAK_MAX_RSS_GROWTH_MB = 10.0
SOAK_MAX_LATENCY_DRIFT = 0.2


def soak_graph(minutes: float, *, processes: str = "separate", sim_mode: str = "realtime",
               behaviour: str = "stand", seed: int = 0, progress=None, period_s: float = 60.0,
               startup_timeout_s: float = 120.0, stop: Callable[[], bool] | None = None) -> dict:
    """The node graph for ``minutes`` of wall time (realtime) with each process' resident memory
    and the command latency sampled every ``period_s``; ``ok`` says whether the robot stood, no
    safe mode was entered, no process grew by ``SOAK_MAX_RSS_GROWTH_MB`` or more (first period
    to last) and the latency's p99 of the last period is within ``SOAK_MAX_LATENCY_DRIFT`` of the
    first one's. ``progress``, ``startup_timeout_s``, ``stop``: as :func:`run_graph`."""
    period_s = min(period_s, max(minutes * 60.0 / 3.0, 1.0))  # at least three periods
    r = run_graph(processes=processes, duration_s=minutes * 60.0, behaviour=behaviour, sim_mode=sim_mode,
                  seed=seed, progress=progress, monitor_period_s=period_s, startup_timeout_s=startup_timeout_s,
                  stop=stop)
    periods = r.get("periods", [])
    growth, drift = {}, None
    if len(periods) >= 2:
        first, last = periods[0]["rss_mb"], periods[-1]["rss_mb"]
        growth = {n: round(last[n] - first[n], 2) for n in first if first[n] is not None and last.get(n) is not None}
        # the first period after ready includes the release and landing: latency from the second on
        p_first, p_last = periods[1]["latency_p99_ms"], periods[-1]["latency_p99_ms"]
        if p_first and p_last:
            drift = round(p_last / p_first - 1.0, 3)
    ok = (r["fell"] is False and r["safe_mode_entries"] == 0 and bool(growth)
          and max(growth.values()) < SOAK_MAX_RSS_GROWTH_MB and drift is not None
          and abs(drift) <= SOAK_MAX_LATENCY_DRIFT and all(c == 0 for c in r["exit_codes"].values()))
    return {**r, "minutes": minutes, "period_s": period_s, "rss_growth_mb": growth,
            "latency_p99_drift": drift, "ok": ok}



def _import_observer() -> None:
    """Import what the observer uses (rclpy and the message types: seconds on a loaded machine),
    so that once the nodes start, the runner checks ``stop()`` every 50 ms."""
    import rclpy  # noqa: F401
    from diagnostic_msgs.msg import DiagnosticArray  # noqa: F401
    from geometry_msgs.msg import InertiaStamped  # noqa: F401
    from nav_msgs.msg import Odometry  # noqa: F401
    from rcl_interfaces.srv import SetParameters  # noqa: F401
    from rclpy.experimental import EventsExecutor  # noqa: F401
    from sensor_msgs.msg import JointState  # noqa: F401
    from std_msgs.msg import Bool  # noqa: F401

    from kangaroo_wbc.robots.kangaroo.robot import SOLES  # noqa: F401
    from kangaroo_wbc.ros.serialized import stamp_of_serialized  # noqa: F401


def _observe(procs, duration_s, sim_mode, startup_timeout_s, fall_height_m, wall_timeout_s, progress,
             log_dir, monitor_period_s=None, stop=None, late=(), operator=(), rig=None,
             payload_unannounced=False, identify=False, behaviour_delay_s=0.0, jump=False, when_ready=None,
             watched=None) -> dict:
    """The running graph watched by :class:`~kangaroo_wbc_tools.graph.observer.GraphObserver`: the summary."""
    settings = ObserverSettings(duration_s, sim_mode, startup_timeout_s, fall_height_m, wall_timeout_s, Path(log_dir),
                                monitor_period_s, rig, payload_unannounced, identify, behaviour_delay_s, jump,
                                tuple(watched or WATCHED))
    return GraphObserver(settings, operator).run(procs, list(late), progress, stop, when_ready)
