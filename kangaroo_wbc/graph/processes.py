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
one-process demo's keys (:func:`~kangaroo_wbc.pipeline.metrics.payload_summary`) from the
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
metrics, computed by the same function (:func:`~kangaroo_wbc.pipeline.metrics.rig_metrics`) on the
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
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import yaml

from kangaroo_wbc.components.assembly import loop_overrides
from kangaroo_wbc.errors import KangarooWbcError
from kangaroo_wbc.pipeline.metrics import unwrapped_yaw
from kangaroo_wbc.pipeline.soak import process_rss_mb

EXECUTABLES = ("sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller")
WATCHED = ("actuators/state", "joint_states", "contact/left_sole/wrench", "contact/right_sole/wrench",
           "actuators/command")
#: ``interface: ros2_control``: the broadcaster's joint states (the simulated time) and one effort
#: controller's commands (unstamped: counted at the simulated time of their arrival) instead
WATCHED_ROS2_CONTROL = ("joint_state_broadcaster/joint_states", *WATCHED[1:4], "leg_left_effort_controller/commands")
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
    sim = {"lockstep": lockstep, "realtime": True, "drop_ratio": float(drop_ratio), "seed": int(seed),
           "ground_truth_decimation": 10, "ideal_actuators": bool(ideal_actuators)}
    if interface != "native":  # the simulator as that hardware, the nodes speaking to it
        sim.update(interface=interface, joint_space=joint_space)
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


def _stop(procs: dict[str, subprocess.Popen], timeout_s: float = 15.0) -> dict[str, int | None]:
    # the simulator first, whatever order the processes were started in (a late-started simulator
    # interrupted after the nodes it serves has been seen not to exit)
    for name in sorted(procs, key=lambda n: n != "sim"):
        p = procs[name]
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    codes: dict[str, int | None] = {}
    for name, p in procs.items():
        try:
            codes[name] = p.wait(timeout=timeout_s)
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
              payload_identification: bool | None = None, interface: str = "native",
              joint_space: str = "actuator") -> dict:
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
    bad = [f for f in faults if f[0] not in ("locked", "limp") or not f[2] >= 0.0]
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
    if processes == "separate":
        procs = {n: _start(n, [n], params_file, log_dir) for n in EXECUTABLES if not delays.get(n)}
    else:
        procs = {"composed": _start("composed", ["composed", "--backend", "sim"], params_file, log_dir)}
    late = sorted((d, n) for n, d in delays.items() if d)
    try:
        delay = _behaviour_delay_s(controller_params)
        operator = ([(at + delay, mode, name, at) for mode, name, at in faults]
                    + [(at + delay, mass, link, at) for mass, link, at in payloads])
        result = _observe(procs, duration_s, sim_mode, startup_timeout_s, fall_height_m, wall_timeout_s,
                          progress, log_dir, monitor_period_s, stop,
                          late=[(d, n, lambda n=n: _start(n, [n], params_file, log_dir)) for d, n in late],
                          operator=sorted(operator, key=lambda o: o[0]), rig=(rig, rig_leg) if rig else None,
                          payload_unannounced=payload_unannounced, identify=identify, behaviour_delay_s=delay,
                          jump=behaviour == "jump",
                          watched=WATCHED if interface == "native" else WATCHED_ROS2_CONTROL)
    finally:
        exit_codes = _stop(procs)
    return {"processes": processes, "sim_mode": sim_mode, "behaviour": behaviour, "drop_ratio": drop_ratio,
            **result, "exit_codes": exit_codes, "logs": str(log_dir)}


#: The weight is measured from this long after the release [s], and not for this long after a
#: payload [s] (the one-process demo's windows); gravity [m/s^2].
SETTLE_S = 0.3
PAYLOAD_SETTLE_S = 1.0
GRAVITY_M_S2 = 9.81

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


#: CoM tracking is measured from this long after the first CoM target (the controller's default
#: behaviour_delay_s: the behaviour starts then), as the one-process demo measures it from the start.
COM_FROM_S = 1.0


def _com_rmse(truth: dict, targets: list, clm, payloads: Sequence[tuple[float, str, float]] = ()) -> float | None:
    """RMS distance [m] between the true CoM (pinocchio on the simulator's ground truth) and the
    controller's CoM target (``wbc/com_target``, interpolated to the ground truth's stamps), from
    ``COM_FROM_S`` after the first target; None without pairs. ``clm``: the robot's model as loaded;
    ``payloads``: ``(simulated time [s], link, mass [kg])`` of the point masses the simulator attached
    (at the link's centre of mass), in the true CoM from that time on."""
    import pinocchio as pin

    if not targets or not truth:
        return None
    t_target = np.array([t for t, _ in targets])
    xyz = np.array([p for _, p in targets])
    m = clm.model
    data = m.createData()
    errors = []
    for stamp_ns, (pose, joints) in sorted(truth.items()):
        t = stamp_ns * 1e-9
        if pose is None or joints is None or not t_target[0] + COM_FROM_S <= t <= t_target[-1]:
            continue
        q = _true_configuration(m, pose, joints)
        target = [np.interp(t, t_target, xyz[:, k]) for k in range(3)]  # targets come at 50 Hz
        com, mass = pin.centerOfMass(m, data, q) * clm.mass_kg, clm.mass_kg  # kinematics in data
        for at, link, extra in payloads:
            if t >= at:
                j = m.frames[m.getFrameId(link)].parentJoint
                com, mass = com + extra * data.oMi[j].act(m.inertias[j].lever), mass + extra
        errors.append(com / mass - target)
    return round(float(np.sqrt(np.mean(np.sum(np.square(errors), axis=1)))), 6) if errors else None


def _true_configuration(model, pose, joints: tuple[list, list]) -> np.ndarray:
    """The pinocchio configuration of the free-floating ``model`` from the simulator's ground truth:
    the base ``pose`` (``sim/ground_truth/base_odometry``) and ``joints`` (names, positions)."""
    import pinocchio as pin

    q = pin.neutral(model)
    q[:3] = pose.position.x, pose.position.y, pose.position.z
    o = pose.orientation
    q[3:7] = o.x, o.y, o.z, o.w
    for name, value in zip(*joints):
        if model.existJointName(name):
            q[model.joints[model.getJointId(name)].idx_q] = value
    return q


def _payload_metrics(identified: list, statuses: list, truth: dict, model, unmodelled: list,
                     last_change_s: float | None, started_s: float | None) -> dict:
    """The one-process demo's payload identification keys
    (:func:`~kangaroo_wbc.pipeline.metrics.payload_summary`) from the topics: the last
    ``payload/identified`` message (``identified``: stamp [s], mass [kg], CoM x, y [m]) is the last
    confident estimate, its standard deviation the last confident ``payload`` status's
    (``statuses``: stamp [s], confident, std [kg]); ``payload_confident_ratio`` is the share of the
    ``payload`` statuses from ``started_s`` (the behaviour's start) on that were confident (sampled
    at the diagnostics' rate); the truth: the ``unmodelled`` payloads (simulated time [s], link, mass
    [kg]) at the CoM of their links in the ground truth nearest the estimate; the delay from
    ``last_change_s``, the last payload's simulated time (announced or not; None: no payload)."""
    from kangaroo_wbc.estimation.payload_identification import PayloadEstimate
    from kangaroo_wbc.pipeline.metrics import payload_summary, unmodelled_payload

    found = None
    if identified:
        stamp, mass, x, y = identified[-1]
        stds = [std for _, ok, std in statuses if ok]
        found = PayloadEstimate(stamp_s=stamp, confident=True, mass_kg=mass, mass_std_kg=stds[-1] if stds else math.nan,
                                com_xy_in_world_m=np.array([x, y]))
    poses = sorted((k, v) for k, v in truth.items() if v[0] is not None and v[1] is not None)
    at = found.stamp_s if found is not None else (poses[-1][0] * 1e-9 if poses else 0.0)
    q = None
    if poses:
        _, (pose, joints) = min(poses, key=lambda kv: abs(kv[0] * 1e-9 - at))
        q = _true_configuration(model, pose, joints)
    true_mass, true_com = unmodelled_payload(model, q, unmodelled, at)
    after = [ok for t, ok, _ in statuses if started_s is not None and t >= started_s]
    ratio = float(np.mean(after)) if after else 0.0
    t = np.array([s for s, *_ in identified])
    mass = np.array([m for _, m, *_ in identified])
    return payload_summary(found, true_mass, true_com, t, mass, last_change_s, ratio)


def _base_motion(truth: dict) -> dict:
    """``distance_m``: horizontal distance of the true base from the first ground truth after the
    behaviour started to the last; ``yaw_change_rad``: its unwrapped heading change ({} without poses)."""
    poses = [pose for _, (pose, _) in sorted(truth.items()) if pose is not None]
    if len(poses) < 2:
        return {}
    xy = np.array([(p.position.x, p.position.y) for p in poses])
    yaw = unwrapped_yaw([(p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w) for p in poses])
    return {"distance_m": round(float(np.linalg.norm(xy[-1] - xy[0])), 4),
            "yaw_change_rad": round(float(yaw[-1] - yaw[0]), 4)}


#: A sole carries weight when its true normal force exceeds this [N] (the simulator's contact force
#: is exactly zero in the air).
AIRBORNE_FZ_N = 0.5


def _jump_metrics(truth: dict, truth_fz: dict[int, list[float]], started_s: float | None) -> dict:
    """The jump's ``flight_time_s`` and ``apex_height_gain_m`` from the ground truth (every
    ``RIG_GRID_MS``: base pose, both soles' normal forces) from the behaviour's start on, by the
    one-process loop's definition (:func:`~kangaroo_wbc.pipeline.metrics.flight_metrics`)."""
    from kangaroo_wbc.pipeline.metrics import flight_metrics

    if started_s is None:
        return {}
    first = int(round(started_s * 1e9))
    rows = [(truth[k][0].position.z, fz) for k, fz in sorted(truth_fz.items())
            if k >= first and k in truth and truth[k][0] is not None and np.all(np.isfinite(fz))]
    if len(rows) < 2:
        return {}
    z = np.array([r[0] for r in rows])
    airborne = np.array([all(f <= AIRBORNE_FZ_N for f in r[1]) for r in rows])
    return flight_metrics(airborne, z, RIG_GRID_MS * 1e-3, float(z[0]))


def _median(values: list[float]) -> float | None:
    """Median of the finite values (a period without samples reports NaN), or None."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return round(float(np.median(v)), 4) if v.size else None


#: The grid of the bench's metrics in the graph [ms]: the stamps every 10th millisecond, where the
#: runner records the plate and the wrench estimates and the simulator its ground truth (decimation 10).
RIG_GRID_MS = 10


def _rig_metrics(rig: tuple[str, str], ready_s: float | None, truth: dict, targets: list, plate: list,
                 fz: dict[int, list[float]], soles: list[str]) -> dict:
    """The bench's metrics from the topics (module docstring): the samples on the 10 ms grid
    (``truth``'s, ``plate``'s and ``fz``'s stamps) into
    :func:`~kangaroo_wbc.pipeline.metrics.rig_metrics`, the one-process bench's definitions; the
    behaviour's phases from its timings after ready (the controller's behaviour options are the
    defaults)."""
    import pinocchio as pin

    from kangaroo_wbc.control.behaviours import RigCircleAndPress
    from kangaroo_wbc.pipeline.metrics import rig_metrics
    from kangaroo_wbc.pipeline.rig import RigConfig
    from kangaroo_wbc.robots.kangaroo.rig import load_one_leg
    from kangaroo_wbc.robots.kangaroo.robot import SOLES

    name, leg = rig
    clm = load_one_leg(leg)
    m = clm.model
    behaviour = RigCircleAndPress()
    out = {"rig": name, "leg": leg, "behaviour": "rig", "n_actuated": int(clm.n_a), "n_joints": len(clm.joint_names),
           "press_force_target_n": behaviour.press_force_n}
    if ready_s is None:
        return out
    grid_ms = sorted({round(k * 1e-6) for k in truth} | {round(t * 1e3) for t, _ in plate} | set(fz))
    grid_ms = [k for k in grid_ms if k % RIG_GRID_MS == 0]
    t = np.array(grid_ms, dtype=float) * 1e-3
    at = {k: i for i, k in enumerate(grid_ms)}
    n = t.size
    phase = np.full(n, "wait", dtype=object)
    phase[t >= ready_s] = "approach"
    phase[(t >= ready_s) & (t <= ready_s + behaviour.circle_s)] = "circle"
    phase[t >= ready_s + behaviour.press_starts_s] = "press"
    sole_true, sole_ref = np.full((n, 3), np.nan), np.full((n, 3), np.nan)
    rot = np.full((n, 3, 3), np.nan)
    plate_fz, est_fz = np.full(n, np.nan), np.full(n, np.nan)
    data, base_id, sole_id = m.createData(), m.getFrameId("base_link"), m.getFrameId(SOLES[leg])
    for stamp_ns, (_, joints) in truth.items():
        i = at.get(round(stamp_ns * 1e-6))
        if joints is None or i is None:
            continue
        q = pin.neutral(m)
        for joint, value in zip(*joints):
            if m.existJointName(joint):
                q[m.joints[m.getJointId(joint)].idx_q] = value
        pin.framesForwardKinematics(m, data, q)
        sole = data.oMf[base_id].actInv(data.oMf[sole_id])
        sole_true[i], rot[i] = sole.translation, sole.rotation
    t_target = np.array([s for s, _ in targets])
    if t_target.size >= 2:  # rig/sole_target comes at the ground truth's rate, between its stamps
        xyz = np.array([p for _, p in targets]).reshape(-1, 3)
        within = (t >= t_target[0]) & (t <= t_target[-1])
        sole_ref[within] = np.column_stack([np.interp(t[within], t_target, xyz[:, k]) for k in range(3)])
    for s, f in plate:
        i = at.get(round(s * 1e3))
        if i is not None:
            plate_fz[i] = f
    column = soles.index(f"contact/{SOLES[leg]}/wrench")
    for k, forces in fz.items():
        if k in at:
            est_fz[at[k]] = forces[column]
    return {**out, **rig_metrics(t, phase, sole_true, sole_ref, rot, plate_fz, est_fz, dt=RIG_GRID_MS * 1e-3,
                                 press_target_n=behaviour.press_force_n, force_ramp_s=behaviour.force_ramp_s,
                                 press_settle_s=RigConfig().press_settle_s)}


def _weighed(fz: dict[int, list[float]], release_s: float | None, payload_log: list[dict],
             model_mass_kg: float) -> dict:
    """``fz_sum_over_mg`` (and each payload's ``fz_sum_over_mg_after``) from the sole normal forces
    ``fz`` (stamp [ms] → per sole [N]) against the weight with the payloads attached by then (module
    docstring); {} without forces."""
    if release_s is None or not fz:
        return {}
    stamps = np.array(sorted(fz)) * 1e-3
    total = np.array([sum(fz[k]) for k in sorted(fz)])
    mass = np.full(stamps.shape, model_mass_kg)
    weighed = (stamps > release_s + SETTLE_S) & np.isfinite(total)
    changes = sorted((release_s + e["after_ready_s"], e) for e in payload_log)
    for tc, e in changes:
        mass[stamps >= tc] += e["mass_kg"]
        weighed &= ~((stamps >= tc) & (stamps < tc + PAYLOAD_SETTLE_S))
    ratio = total / (mass * GRAVITY_M_S2)
    for i, (tc, e) in enumerate(changes):
        end = changes[i + 1][0] if i + 1 < len(changes) else np.inf
        after = weighed & (stamps >= tc + PAYLOAD_SETTLE_S) & (stamps < end)
        e["fz_sum_over_mg_after"] = round(float(np.mean(ratio[after])), 5) if after.any() else None
    return {"fz_sum_over_mg": round(float(np.mean(ratio[weighed])), 5) if weighed.any() else None,
            "robot_mass_kg": round(float(mass[-1]), 4)}


def _observe(procs, duration_s, sim_mode, startup_timeout_s, fall_height_m, wall_timeout_s, progress,
             log_dir, monitor_period_s=None, stop=None, late=(), operator=(), rig=None,
             payload_unannounced=False, identify=False, behaviour_delay_s=0.0, jump=False, watched=WATCHED) -> dict:
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
    from geometry_msgs.msg import InertiaStamped, PointStamped, PoseStamped, WrenchStamped
    from nav_msgs.msg import Odometry
    from rcl_interfaces.srv import SetParameters
    from rclpy.experimental import EventsExecutor
    from rclpy.parameter import Parameter
    from rclpy.serialization import deserialize_message
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool, Float64MultiArray

    from kangaroo_wbc.robots.kangaroo.robot import SOLES
    from kangaroo_wbc.ros import qos
    from kangaroo_wbc.ros.serialized import stamp_of_serialized

    lockstep = sim_mode == "lockstep"
    types = {t: Float64MultiArray if t.endswith("/commands") else WrenchStamped if "wrench" in t else JointState
             for t in watched}
    counts = dict.fromkeys(watched, 0)
    stamps: dict[str, list[float]] = {t: [] for t in watched}  # [first, last] header stamp [s]
    st = {"ready": None, "ready_lost": False, "started": False, "min_height": float("inf"), "latency": [],
          "safe_entries": 0, "safe": False, "safe_reasons": {}}
    node_stats: dict[str, dict[str, list[float]]] = {}  # "<node>" -> {"cpu_ms_per_tick": [...], ...}

    def counter(topic: str):
        def cb(raw: bytes) -> None:  # serialised: counting costs no deserialisation
            counts[topic] += 1
            t = st.get("sim_t", 0.0) if types[topic] is Float64MultiArray else stamp_of_serialized(raw)
            span = stamps[topic]
            span[:] = [t, t] if not span else [span[0], t]
            if topic == watched[0]:  # the simulator's state: its stamps are the simulated time
                st["sim_t"] = t
            elif topic in soles:
                on_wrench_sample(topic, raw, t)
        return cb

    # the operator's word on the faults and payloads: (sim time after ready [s], mode or mass [kg],
    # actuator or link, t [s]) still to tell
    told: dict[str, list[str]] = {"locked_actuators": [], "limp_actuators": []}
    told_payloads: dict[str, float] = {}  # link -> mass [kg] told so far
    fault_log = [{"actuator": name, "mode": what, "t_s": at, "after_ready_s": after}
                 for after, what, name, at in operator if isinstance(what, str)]
    payload_log = [{"link": name, "mass_kg": what, "t_s": at, "after_ready_s": after}
                   for after, what, name, at in operator if not isinstance(what, str)]
    pending_faults = list(operator)
    calls: list = []  # (fault or payload entry, future) of the SetParameters calls

    def on_modes(msg: DiagnosticStatus) -> None:
        modes = {kv.key: kv.value for kv in msg.values}
        st["modes"], st["modes_message"] = modes, msg.message
        for entry in fault_log:
            if "modes_at_sim_s" not in entry and modes.get(entry["actuator"]) not in (None, "active"):
                entry["modes_at_sim_s"] = st.get("sim_t")
                entry["declared"] = modes[entry["actuator"]]

    def on_payloads(msg: DiagnosticStatus) -> None:
        carried = {kv.key: float(kv.value) for kv in msg.values}
        st["payloads"], st["payloads_message"] = carried, msg.message
        for entry in payload_log:  # the first message carrying what was told with it
            if "told" in entry and "model_at_sim_s" not in entry and all(
                    abs(carried.get(k, 0.0) - m) < 1e-9 for k, m in entry["told"].items()):
                entry["model_at_sim_s"] = st.get("sim_t")

    def tell_operator() -> None:
        """Set the controller's parameters once the simulator's time passed a fault's or payload's."""
        while pending_faults and st.get("ready_sim_t") is not None and st.get("sim_t") is not None \
                and st["sim_t"] - st["ready_sim_t"] >= pending_faults[0][0]:
            _, what, name, _ = pending_faults.pop(0)
            if payload_unannounced and not isinstance(what, str):
                continue  # on the simulated robot only: nobody tells the controller
            request = SetParameters.Request()
            if isinstance(what, str):
                told["locked_actuators" if what == "locked" else "limp_actuators"].append(name)
                request.parameters = [Parameter(k, Parameter.Type.STRING_ARRAY, v).to_parameter_msg()
                                      for k, v in told.items()]
                entry = next(e for e in fault_log if e["actuator"] == name and "told_at_sim_s" not in e)
            else:
                told_payloads[name] = told_payloads.get(name, 0.0) + what
                value = [f"{k}:{m:g}" for k, m in told_payloads.items() if abs(m) > 1e-9]
                request.parameters = [Parameter("payloads", Parameter.Type.STRING_ARRAY, value).to_parameter_msg()]
                entry = next(e for e in payload_log if e["link"] == name and "told_at_sim_s" not in e)
                entry["told"] = {k: m for k, m in told_payloads.items() if abs(m) > 1e-9}
            entry["told_at_sim_s"] = st["sim_t"]
            calls.append((entry, set_params.call_async(request)))

    # the sole normal forces of the wrench estimator, every 10th stamp: stamp [ms] -> [fz per sole]
    soles = [t for t in watched if "wrench" in t]
    fz: dict[int, list[float]] = {}

    def on_wrench_sample(topic: str, raw: bytes, t: float) -> None:
        ms = round(t * 1e3)
        if st["started"] and ms % 10 == 0:
            msg = deserialize_message(raw, WrenchStamped)
            fz.setdefault(ms, [math.nan] * len(soles))[soles.index(topic)] = msg.wrench.force.z

    # payload/identified: (stamp [s], mass [kg], CoM x, y [m]); the payload statuses of /diagnostics:
    # (stamp [s], confident, mass std [kg])
    identified: list[tuple[float, float, float, float]] = []
    payload_statuses: list[tuple[float, bool, float]] = []

    def on_identified(msg: InertiaStamped) -> None:
        c = msg.inertia.com
        identified.append((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, msg.inertia.m, c.x, c.y))

    def on_ready(msg: Bool) -> None:
        if st["started"] and not msg.data:
            st["ready_lost"] = True
        st["ready"] = msg.data

    truth: dict[int, list] = {}  # ground-truth stamp [ns] -> [base odometry, joint state]
    targets: list[tuple[float, tuple[float, float, float]]] = []  # wbc/com_target (stamp [s], xyz)

    def key(stamp) -> int:
        return stamp.sec * 1_000_000_000 + stamp.nanosec

    def on_odom(msg: Odometry) -> None:
        st["min_height_any"] = min(st.get("min_height_any", float("inf")), msg.pose.pose.position.z)
        if st["started"]:
            st["min_height"] = min(st["min_height"], msg.pose.pose.position.z)
            truth.setdefault(key(msg.header.stamp), [None, None])[0] = msg.pose.pose

    def on_truth_joints(msg: JointState) -> None:
        if st["started"]:
            truth.setdefault(key(msg.header.stamp), [None, None])[1] = (list(msg.name), list(msg.position))

    def on_com_target(msg) -> None:
        if st["started"]:
            p = msg.point
            targets.append((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, (p.x, p.y, p.z)))

    def on_latency(msg: Float64MultiArray) -> None:
        if st["started"]:
            st["latency"].extend(msg.data)

    def on_diagnostics(msg: DiagnosticArray) -> None:
        if not st["started"]:
            return
        for status in msg.status:
            node_name, _, check = status.name.partition(": ")
            if check == "payload":
                values = {kv.key: kv.value for kv in status.values}
                payload_statuses.append((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec,
                                         values.get("confident") == "true", float(values.get("mass_std_kg", "nan"))))
            if check == "process":
                values = node_stats.setdefault(node_name, {})
                for kv in status.values:
                    if kv.key in ("cpu_ms_per_tick", "tick_rate_hz", "cpu_load"):
                        values.setdefault(kv.key, []).append(float(kv.value))
            elif check == "watchdog":  # the simulator's: fallbacks since its start (a stalled command stream)
                trips = [int(float(kv.value)) for kv in status.values if kv.key == "trips"]
                st["watchdog_trips"] = max([st.get("watchdog_trips", 0), *trips])
            elif check == "wbc":
                safe = status.message.startswith("safe mode")
                if safe and not st["safe"]:
                    st["safe_entries"] += 1
                    reason = status.message.split(":")[1].strip() if ":" in status.message else status.message
                    st["safe_reasons"][reason] = st["safe_reasons"].get(reason, 0) + 1
                st["safe"] = safe

    context = rclpy.Context()
    # no rclpy signal handlers: SIGINT / SIGTERM belong to the caller (``stop``, or KeyboardInterrupt)
    rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("kangaroo_wbc_demo_observer", context=context)
    executor = EventsExecutor(context=context)
    executor.add_node(node)
    for topic in watched:  # a queue of 10: a late observer (a loaded machine) counts what arrived, not what it kept
        node.create_subscription(types[topic], topic, counter(topic), qos.SENSOR_BEST_EFFORT, raw=True)
    node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, qos.DIAGNOSTICS)
    node.create_subscription(Bool, "wbc/ready", on_ready, qos.LATCHED)
    node.create_subscription(Odometry, "sim/ground_truth/base_odometry", on_odom, qos.SENSOR_STATE)
    node.create_subscription(JointState, "sim/ground_truth/joint_states", on_truth_joints, qos.SENSOR_STATE)
    truth_fz: dict[int, list[float]] = {}  # a jump: the soles' true normal forces [N] by stamp
    if jump:  # the simulator publishes its true sole wrenches only to subscribers
        for i, sole in enumerate(SOLES.values()):
            def on_truth_wrench(msg, i=i) -> None:
                if st["started"]:
                    truth_fz.setdefault(key(msg.header.stamp), [math.nan] * len(SOLES))[i] = msg.wrench.force.z
            node.create_subscription(WrenchStamped, f"sim/ground_truth/{sole}/wrench", on_truth_wrench,
                                     qos.SENSOR_STATE)
    node.create_subscription(PointStamped, "wbc/com_target", on_com_target, qos.VISUALIZATION)
    node.create_subscription(Float64MultiArray, "sim/command_latency", on_latency, qos.VISUALIZATION)
    node.create_subscription(DiagnosticStatus, "actuators/modes", on_modes, qos.LATCHED)
    node.create_subscription(DiagnosticStatus, "model/payloads", on_payloads, qos.LATCHED)
    if identify:
        from kangaroo_wbc.nodes.contact_wrench_node import IDENTIFIED_PAYLOAD_TOPIC

        node.create_subscription(InertiaStamped, IDENTIFIED_PAYLOAD_TOPIC, on_identified, qos.LATCHED)
    plate: list[tuple[float, float]] = []  # the bench's plate: (stamp [s], normal force [N]) every 10th stamp
    sole_targets: list[tuple[float, tuple[float, float, float]]] = []  # rig/sole_target (stamp, xyz in base)
    if rig is not None:
        def on_plate(msg: WrenchStamped) -> None:
            t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
            if st["started"] and round(t * 1e3) % 10 == 0:
                plate.append((t, -msg.wrench.force.z))

        def on_sole_target(msg: PoseStamped) -> None:
            if st["started"]:
                p = msg.pose.position
                sole_targets.append((msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec, (p.x, p.y, p.z)))

        node.create_subscription(WrenchStamped, "rig/plate_wrench", on_plate, qos.SENSOR_STATE)
        node.create_subscription(PoseStamped, "rig/sole_target", on_sole_target, qos.VISUALIZATION)
    set_params = node.create_client(SetParameters, "whole_body_controller/set_parameters")
    try:
        t0 = time.monotonic()
        pending = list(late)  # (delay [s], name, start) of the processes started late
        while not st["ready"]:
            executor.spin_once(timeout_sec=0.05)
            while pending and time.monotonic() - t0 >= pending[0][0]:
                _, name, start = pending.pop(0)
                procs[name] = start()
            dead = {n: p.returncode for n, p in procs.items() if p.poll() is not None}
            if dead:
                raise GraphStartError(f"node process(es) exited during start-up {dead}; logs in {log_dir}")
            if stop is not None and stop():
                raise GraphStartError(f"interrupted before the controller was ready; logs in {log_dir}")
            if time.monotonic() - t0 > startup_timeout_s:
                raise GraphStartError(f"the controller was not ready (wbc/ready) within {startup_timeout_s:g} s "
                                      f"(messages seen: {counts}); logs in {log_dir}")
        startup_s = time.monotonic() - t0
        st["ready_sim_t"] = st.get("sim_t")  # the crane lets go at ready (release_delay_s 0)
        for _, name, start in pending:  # ready without them (the wrench estimator is optional)
            procs[name] = start()
        for t in watched:
            counts[t], stamps[t] = 0, []
        st["started"] = True
        start = last_print = last_monitor = time.monotonic()
        periods: list[dict] = []

        def monitor(now: float) -> None:
            lat = np.asarray(st["latency"][st.get("latency_mark", 0):])
            st["latency_mark"] = len(st["latency"])
            periods.append({"t_s": round(now - start, 1),
                            "rss_mb": {n: process_rss_mb(p.pid) for n, p in procs.items()},
                            "latency_p99_ms": round(float(np.percentile(lat, 99)), 3) if lat.size else None,
                            "safe_mode_entries": st["safe_entries"]})

        if monitor_period_s:
            monitor(start)

        def sim_elapsed() -> float:
            span = stamps[watched[0]]
            return span[1] - span[0] if span else 0.0

        bar = progress.bar(duration_s, desc=f"graph ({sim_mode})", unit="s") if progress else None
        interrupted = False
        while True:
            now = time.monotonic()
            done = sim_elapsed() if lockstep else now - start
            if done >= duration_s or now - start > wall_timeout_s:
                break
            if stop is not None and stop():
                interrupted = True
                break
            executor.spin_once(timeout_sec=0.01)
            tell_operator()
            if monitor_period_s and now - last_monitor >= monitor_period_s:
                last_monitor = now
                monitor(now)
            if bar is not None and now - last_print > 0.2:
                bar.update(min(done, duration_s) - bar.n)
                last_print = now
        if bar is not None:
            bar.close()
        elapsed, sim_span = time.monotonic() - start, sim_elapsed()
        if monitor_period_s and time.monotonic() - last_monitor > 0.5 * monitor_period_s:
            monitor(time.monotonic())  # the last (at least half) period
        rates_sim = {t: round((c - 1) / (s[1] - s[0]), 1) if len(s) == 2 and s[1] > s[0] else 0.0
                     for (t, c), s in zip(counts.items(), stamps.values())}
        rates_wall = {t: round(c / elapsed, 1) for t, c in counts.items()}
        deadline = time.monotonic() + 1.2  # the simulator's last latency window (published every second)
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()
    for entry, future in calls:
        entry["told_ok"] = bool(future.done() and future.result().results[0].successful)
    ready_t = st.get("ready_sim_t")
    for entry in fault_log:  # simulated times from the fault (its time after ready)
        at = None if ready_t is None else ready_t + entry.pop("after_ready_s")
        for key, out in (("told_at_sim_s", "told_after_fault_s"), ("modes_at_sim_s", "modes_after_fault_s")):
            t = entry.pop(key, None)
            entry[out] = None if t is None or at is None else round(t - at, 4)
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm = load_kangaroo(floating_base=True)
    weighed = _weighed(fz, ready_t, payload_log, clm.mass_kg) if rig is None else {}
    bench = {} if rig is None else _rig_metrics(rig, ready_t, truth, sole_targets, plate, fz, soles)
    for entry in payload_log:
        at = entry["at_sim_s"] = None if ready_t is None else ready_t + entry.pop("after_ready_s")
        entry.pop("told", None)
        entry["announced"] = not payload_unannounced
        for key, out in (("told_at_sim_s", "told_after_payload_s"), ("model_at_sim_s", "model_after_payload_s")):
            t = entry.pop(key, None)
            entry[out] = None if t is None or at is None else round(t - at, 4)
    started_s = None if ready_t is None else ready_t + behaviour_delay_s
    changes = sorted((e["at_sim_s"], e["link"], e["mass_kg"]) for e in payload_log if e["at_sim_s"] is not None)
    found = (_payload_metrics(identified, payload_statuses, truth, clm.model, changes if payload_unannounced else [],
                              changes[-1][0] if changes else None, started_s) if identify else {})
    modes = st.get("modes", {})
    com_rmse = _com_rmse(truth, targets, clm, [(e["at_sim_s"], e["link"], e["mass_kg"]) for e in payload_log
                                               if e["at_sim_s"] is not None])
    motion = _base_motion(truth)
    if jump:
        motion.update(_jump_metrics(truth, truth_fz, started_s))
    latency = np.asarray(st["latency"])
    fell = bool(st["min_height"] < fall_height_m) if np.isfinite(st["min_height"]) else None
    return {"startup_s": round(startup_s, 2), "duration_s": round(elapsed, 3), "sim_time_s": round(sim_span, 3),
            "real_time_factor": round(sim_span / elapsed, 3) if elapsed > 0 else None,
            "topic_rates_hz": rates_sim, "topic_rates_hz_wall": rates_wall,
            "command_latency_ms": {"p50": round(float(np.percentile(latency, 50)), 3) if latency.size else None,
                                   "p99": round(float(np.percentile(latency, 99)), 3) if latency.size else None,
                                   "samples": int(latency.size)},
            "interrupted": interrupted,
            "fell": None if rig is not None else fell,
            "min_base_height_m": st["min_height"] if np.isfinite(st["min_height"]) else None,
            "controller_stayed_ready": not st["ready_lost"], "com_rmse_m": com_rmse, **motion,
            "min_base_height_whole_run_m": st.get("min_height_any"),
            "safe_mode_entries": st["safe_entries"], "safe_mode_reasons": st["safe_reasons"],
            "sim_watchdog_trips": st.get("watchdog_trips", 0),
            **({"faults": fault_log, "actuator_modes": {n: m for n, m in modes.items() if m != "active"},
                "actuator_modes_message": st.get("modes_message")} if fault_log else {}),
            **weighed, **bench, **found,
            **({"payloads": [{k: v for k, v in e.items() if k != "at_sim_s"} for e in payload_log],
                "model_payloads": st.get("payloads"), "model_payloads_message": st.get("payloads_message")}
               if payload_log else {}),
            "nodes": {n: {k: _median(v) for k, v in d.items()} for n, d in node_stats.items()},
            **({"periods": periods} if monitor_period_s else {})}
