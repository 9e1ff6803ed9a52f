"""The simulated robot: everything the ``sim`` node does, without ROS.

:class:`SimulatedRobot` wraps the MuJoCo Kangaroo (:func:`~kangaroo_wbc.robots.kangaroo.sim.make_kangaroo_sim`)
and behaves like the robot and its driver at boot:

1. **Crane.** The robot boots hanging on the crane (``hold_base(True)``), its actuators held by a PD
   on the *raw* encoder readings towards the first reading (boot offsets cancel):

   .. math::  \\bar\\tau = k_p (\\theta_{enc,0} - \\theta_{enc}) - k_d\\, \\dot\\theta

   (``hold_kp_n_per_m``, ``hold_kd_n_s_per_m``; the damping is the driver's velocity loop, integrated
   implicitly by MuJoCo, :meth:`~kangaroo_wbc.sim.ClosedChainSim.set_stroke_damping`: an explicit
   one chatters on an ideal actuator's small reflected mass), until the controller is ready (below) and its
   commands are fresh: commands sent before ready (safe-mode ones, computed before the estimator
   was calibrated) are checked and counted but not applied.
2. **Commands** (:meth:`submit`): finite, one force [N] per actuator (``actuator_names`` order),
   clamped to the force limits (a WARN event names the clamped actuators), rejected whole otherwise
   (ERROR event; the last valid command stays until the watchdog expires). A non-finite value never
   reaches MuJoCo.
3. **Release.** The controller says it is ready (:meth:`set_controller_ready`, the ``wbc/ready``
   handshake); ``release_delay_s`` of simulated time later (default 0: at once), while its
   commands are fresh, the crane lets go. Ready turning False afterwards does not hang the robot
   up again (a real crane does not catch a falling robot either).
4. **Watchdog.** No valid command for ``watchdog_timeout_s`` of simulated time: before the release
   the hold PD again, after it zero force plus damping ``τ̄ = −d θ̇`` (or, with
   ``controller="pd"``, a PD holding the standing pose, for running the simulator alone; that
   in-process PD counts as a ready controller, so the crane lets go after ``release_delay_s``).
5. **Latency.** :meth:`samples` remembers the wall time at which each sample (by stamp) was handed
   out; a command carrying that stamp (the contract: a command is stamped with the sample it was
   computed from) gives ``latency = receive_wall_s − that time`` (:meth:`latency_ms`).
6. **Faults and payloads** (``docs/morphology.md``). :meth:`set_actuator_mode` welds (``locked``) or
   disables (``limp``) an actuator, :meth:`add_payload` attaches a mass, from the next step on
   (:class:`~kangaroo_wbc.sim.ClosedChainSim`). ``faults`` in the configuration schedules actuator
   faults ``MODE:ACTUATOR@T`` (:func:`parse_fault`) and ``payloads`` attaches masses
   ``MASS@LINK@T`` (:func:`parse_payload`) at ``T`` seconds of simulated time after the crane's
   release: the simulator changes the robot, and tells nobody (the controller learns it from its
   operator or its fault detector, as on the robot).

Threads: :meth:`submit`, :meth:`reject` and :meth:`set_controller_ready` may be called from another
thread than :meth:`step` / :meth:`samples` (the ROS executor vs the simulation loop); the rest
belongs to the loop's thread.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.components.samples import (
    ActuatorCommand,
    ActuatorSample,
    EncoderSample,
    Event,
    ImuSample,
    Level,
    Status,
)
from kangaroo_wbc.errors import InputError, KangarooWbcError, suggest

#: A rejection or clamping shows in the ``command`` status for this long [s] (wall clock).
EVENT_HOLD_S = 2.0
#: Samples whose hand-out time is remembered for the latency (a command older than that is not timed).
PENDING_STAMPS = 4096
#: Latencies shown in the ``latency`` status: the most recent ones.
STATUS_LATENCY_WINDOW = 10_000
#: The loop-closure violation is sampled every this many steps (it costs a residual evaluation).
CLOSURE_SAMPLE_TICKS = 250
#: Fault modes of :func:`parse_fault`: the text's word → the simulator's actuator mode.
FAULT_MODES = {"lock": "locked", "locked": "locked", "limp": "limp", "active": "active"}
#: Link names a payload may use for the Kangaroo's: its lower body carries the torso (and the torso
#: cage) on ``base_link``.
LINK_ALIASES = {"torso": "base_link"}
#: The largest payload mass [kg] of :func:`parse_payload` (either sign).
MAX_PAYLOAD_KG = 100.0


def parse_fault(text: str) -> tuple[str, str, float]:
    """``MODE:ACTUATOR@T`` → ``(mode, actuator, T [s])``: ``MODE`` is ``lock`` (or ``locked``),
    ``limp`` or ``active`` (the actuator repaired), ``T >= 0`` (e.g. ``lock:left_ankle_inner_actuator@3``).

    Raises:
        InputError: not of that form (the actuator's name is checked by the robot).
    """
    match = re.fullmatch(r"\s*([a-z]+)\s*:\s*([A-Za-z0-9_]+)\s*@\s*(\d+(?:\.\d*)?)\s*s?\s*", str(text))
    if match is None or match.group(1) not in FAULT_MODES:
        raise InputError(f"fault {text!r}: expected MODE:ACTUATOR@T with MODE one of {sorted(FAULT_MODES)} and "
                         "T seconds after the crane's release, e.g. lock:left_ankle_inner_actuator@3")
    return FAULT_MODES[match.group(1)], match.group(2), float(match.group(3))


def parse_payload(text: str) -> tuple[float, str, float]:
    """``MASS[kg]@LINK@T[s]`` → ``(mass [kg], link, T [s])`` (e.g. ``6kg@torso@4``): a point mass
    attached at the centre of mass of ``LINK`` (a negative mass removes one), ``0 < |MASS| <=``
    :data:`MAX_PAYLOAD_KG`, ``T >= 0``; ``LINK`` as written (:func:`payload_link` resolves
    ``torso``); whether the link exists is checked by its user (robot or model).

    Raises:
        InputError: not of that form, or a mass out of range.
    """
    match = re.fullmatch(r"\s*([-+]?\d+(?:\.\d*)?)\s*(?:kg)?\s*@\s*([A-Za-z0-9_]+)\s*@\s*(\d+(?:\.\d*)?)\s*s?\s*",
                         str(text))
    if match is None:
        raise InputError(f"payload {text!r}: expected MASS@LINK@TIME such as 6kg@torso@4")
    mass = float(match.group(1))
    if not 0.0 < abs(mass) <= MAX_PAYLOAD_KG:
        raise InputError(f"payload {text!r}: mass {mass} kg; a non-zero mass of at most {MAX_PAYLOAD_KG:g} kg")
    return mass, match.group(2), float(match.group(3))


def payload_link(name: str) -> str:
    """The link a payload's ``name`` means (:data:`LINK_ALIASES`: ``torso`` is ``base_link``)."""
    return LINK_ALIASES.get(name, name)


@dataclass
class SimulatedRobotConfig:
    """Parameters of :class:`SimulatedRobot` (the ``sim`` node declares the same names)."""

    rate_hz: float = 1000.0  # [Hz] control rate; physics step ≤ 1 ms (substeps)
    floating_base: bool = True  # free base; False: welded in the air (no crane)
    seed: int = 0  # encoder offsets, IMU biases, noise
    sensor_noise: bool = True  # False: SensorConfig.noiseless() (boot offsets stay)
    ideal_actuators: bool = False  # True: forces act as commanded, torque sensor = eq. (47) inverse
    watchdog_timeout_s: float = 0.05  # [s] of simulated time without a valid command
    watchdog_damping_n_s_per_m: float = 200.0  # [N·s/m] fallback after the release
    hold_kp_n_per_m: float = 2.0e5  # [N/m] hold PD on the raw encoders (on the crane)
    hold_kd_n_s_per_m: float = 2.0e3  # [N·s/m]
    release_delay_s: float = 0.0  # [s] of simulated time from ready to the crane's release
    controller: str = "none"  # fallback after the release: none (damping) | pd (standing pose)
    pd_kp_n_per_m: float = 2.0e5  # [N/m] the in-process standing PD
    pd_kd_n_s_per_m: float = 300.0  # [N·s/m]
    latency_buffer: int = 120_000  # latencies kept (ring buffer)
    #: actuator faults ``MODE:ACTUATOR@T`` (:func:`parse_fault`), ``T`` [s] of simulated time after the release
    faults: tuple[str, ...] = ()
    #: payloads ``MASS@LINK@T`` (:func:`parse_payload`), ``T`` [s] of simulated time after the release
    payloads: tuple[str, ...] = ()


@dataclass
class _Command:
    forces: np.ndarray  # [N], clamped
    arrival_s: float  # simulated time of arrival [s]
    stamp_s: float


class SimulatedRobot:
    """The simulated Kangaroo and its driver's boot behaviour (see the module docstring).

    Args:
        config: parameters (default :class:`SimulatedRobotConfig`).
        sim: an existing :class:`~kangaroo_wbc.sim.ClosedChainSim` (tests); default: the Kangaroo
            preset in its standing pose, built from ``config``.
    """

    def __init__(self, config: SimulatedRobotConfig | None = None, sim=None) -> None:
        from kangaroo_wbc.sim import clamp_forces

        self._clamp_forces = clamp_forces  # the command's check and clamp, compiled
        cfg = config or SimulatedRobotConfig()
        if cfg.controller not in ("none", "pd"):
            raise InputError(f"controller must be 'none' or 'pd', got {cfg.controller!r}")
        if sim is None:
            from kangaroo_wbc.robots.kangaroo.robot import standing_actuator_positions
            from kangaroo_wbc.robots.kangaroo.sim import make_kangaroo_sim
            from kangaroo_wbc.sim import SensorConfig

            substeps = max(1, math.ceil(1000.0 / cfg.rate_hz - 1e-9))  # physics step ≤ 1 ms (closure solref)
            sim = make_kangaroo_sim(
                floating_base=cfg.floating_base, seed=cfg.seed, control_period=1.0 / cfg.rate_hz,
                substeps=substeps, sensor_config=None if cfg.sensor_noise else SensorConfig.noiseless(),
                initial_actuator_positions=standing_actuator_positions(), ideal_actuators=cfg.ideal_actuators)
        self.sim = sim
        self._config = cfg
        self._lock = threading.Lock()
        self._latency = np.zeros(max(int(cfg.latency_buffer), 1))
        self._n_latency = 0  # latencies recorded in all
        self._latency_mark = 0  # ... when latency_ms(reset=True) was last called
        self._pending: OrderedDict[int, float] = OrderedDict()  # sample stamp [ns] -> hand-out wall time [s]
        self.counts = {"valid": 0, "rejected": 0, "clamped": 0, "ticks": 0, "resets": 0, "watchdog_trips": 0}
        self._last_reject = (-math.inf, "")  # (wall time, reason)
        self._last_clamp: tuple[float, list[str]] = (-math.inf, [])
        self._busy = [0.0, 0.0]  # wall and thread CPU time spent in step() [s]
        self._window: tuple[float, ...] | None = None  # at the last statuses(): wall, sim time, ticks, busy, cpu
        self._closure_m = 0.0
        self._stepping = False  # a step begun by start_step() is under way
        self._faults_applied: set[str] = set()  # the fault texts applied (each once)
        self._fault_plan = self._plan_faults(cfg)
        self._make_pd()
        self._boot()

    # ------------------------------------------------------------------ configuration and boot
    @property
    def config(self) -> SimulatedRobotConfig:
        return self._config

    @config.setter
    def config(self, cfg: SimulatedRobotConfig) -> None:
        """Run-time changes (watchdog, gains, delays, faults); the construction fields are ignored.

        Raises:
            InputError: a fault or payload that :func:`parse_fault` or :func:`parse_payload` refuses, or
                that names no actuator or body (nothing changes).
        """
        plan = self._plan_faults(cfg)
        old, self._config = self._config, cfg
        self._fault_plan = plan  # one assignment: the loop thread sees the old plan or the new one
        if (old.pd_kp_n_per_m, old.pd_kd_n_s_per_m) != (cfg.pd_kp_n_per_m, cfg.pd_kd_n_s_per_m):
            self._make_pd()

    def _plan_faults(self, cfg: SimulatedRobotConfig) -> list[tuple[float, str | float, str, str]]:
        """The faults and payloads of ``cfg`` not applied yet, ``(T [s], mode or mass [kg], actuator or
        body, text)`` in time order."""
        plan: list[tuple[float, str | float, str, str]] = []
        for text in cfg.faults:
            mode, name, at = parse_fault(text)
            if name not in self.sim.actuator_names:
                raise InputError(f"fault {text!r}: unknown actuator {name!r}." + suggest(name, self.sim.actuator_names))
            if text not in self._faults_applied:
                plan.append((at, mode, name, text))
        bodies = self.body_names
        for text in cfg.payloads:
            mass, link, at = parse_payload(text)
            link = payload_link(link)
            if link not in bodies:
                raise InputError(f"payload {text!r}: unknown link {link!r}." + suggest(link, bodies))
            if text not in self._faults_applied:
                plan.append((at, mass, link, text))
        return sorted(plan, key=lambda f: f[0])

    @property
    def body_names(self) -> list[str]:
        """The simulated robot's bodies (the links a payload may go on)."""
        import mujoco

        m = self.sim.model
        return [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(1, m.nbody)]

    def _make_pd(self) -> None:
        from kangaroo_wbc.sim import BaselinePd

        c, sim = self._config, self.sim
        self._pd = BaselinePd(c.pd_kp_n_per_m, c.pd_kd_n_s_per_m, sim.n_actuators, force_limits=sim.force_limits)

    def _boot(self) -> None:
        """On the crane, hold PD on the first encoder reading, no command, not ready."""
        sim = self.sim
        sim.hold_base(True)
        self._reading = None
        self._reading_tick = -1
        self._standing_theta = sim.actuator_positions()  # the in-process PD's pose (true positions)
        self._standing_ff = sim.actuator_bias_forces()  # its gravity feed-forward, base held
        self._hold_target = self._read().actuator_position.copy()
        self._command: _Command | None = None
        self._released = not sim.base_held  # fixed base: nothing to release
        self._released_at: float | None = None
        self._ready = self._config.controller == "pd"
        self._ready_since = sim.time if self._ready else math.inf
        self._mode = "hold"  # hold | command | damping | pd
        self._had_command = False
        self._hold_damping: float | None = None  # the stroke damping set in the simulator (start_step)

    def reset(self) -> list[Event]:
        """Reboot the robot (new encoder offsets and IMU biases), back on the crane; the controller
        must say it is ready again."""
        self.sim.reset()
        self.counts["resets"] += 1
        with self._lock:
            self._pending.clear()
        self._boot()
        return [Event(Level.WARN, "reset", "robot rebooted: on the crane, waiting for the controller's ready")]

    # ------------------------------------------------------------------ properties
    @property
    def actuator_names(self) -> list[str]:
        return list(self.sim.actuator_names)

    @property
    def passive_encoder_names(self) -> list[str]:
        return list(self.sim.passive_encoder_names)

    @property
    def encoder_offsets(self) -> np.ndarray:
        """The actuator encoders' boot offsets [m or rad] (``actuator_names`` order; 0 for absolute
        encoders): what a driver that exposes homed joints knows (the serial joint space of the
        ros2_control face); the package's nodes never see them."""
        return self.sim.sensors.encoder_offset

    @property
    def time(self) -> float:
        """Simulation time [s]."""
        return self.sim.time

    @property
    def period_s(self) -> float:
        """Control period of one :meth:`step` [s]."""
        return self.sim.timestep

    @property
    def base_held(self) -> bool:
        """True while the robot hangs on the crane."""
        return self.sim.base_held

    @property
    def controller_ready(self) -> bool:
        return self._ready

    @property
    def mode(self) -> str:
        """What drove the last step: ``hold`` (crane PD), ``command``, ``damping`` or ``pd``."""
        return self._mode

    @property
    def actuator_modes(self) -> dict[str, str]:
        """Each actuator's mode in the simulator (``active``, ``locked``, ``limp``), by name."""
        return self.sim.actuator_modes

    def set_actuator_mode(self, name: str, mode: str) -> list[Event]:
        """Weld (``locked``), disable (``limp``) or re-enable (``active``) actuator ``name`` from the next
        step on (:meth:`~kangaroo_wbc.sim.ClosedChainSim.set_actuator_mode`); the loop's thread, between
        steps. Returns the events to log.

        Raises:
            InputError: unknown actuator or mode.
        """
        old = self.sim.actuator_modes.get(name)
        self.sim.set_actuator_mode(name, mode)
        if mode == old:
            return []
        level = Level.OK if mode == "active" else Level.WARN
        return [Event(level, f"fault {name}", f"actuator {name} {mode} at t = {self.sim.time:.3f} s")]

    def add_payload(self, body: str, mass_kg: float) -> list[Event]:
        """Attach (``mass_kg`` > 0) or remove (< 0) a point mass at the centre of mass of ``body``
        from the next step on (:meth:`~kangaroo_wbc.sim.ClosedChainSim.add_payload`); the loop's
        thread, between steps. Returns the events to log.

        Raises:
            InputError: unknown body, or a mass that leaves the body without mass.
        """
        self.sim.add_payload(body, mass_kg)
        return [Event(Level.WARN, f"payload {body}", f"payload {mass_kg:+g} kg on {body} at t = {self.sim.time:.3f} s "
                                                     f"(robot {self.sim.total_mass_kg:.2f} kg)")]

    def _due_faults(self) -> list[Event]:
        """Apply the scheduled faults and payloads whose time after the release has come."""
        plan, events = self._fault_plan, []
        start = self._released_at if self._released_at is not None else 0.0  # fixed base: from boot
        while plan and self.sim.time - start >= plan[0][0] - 1e-9:
            _, what, name, text = plan.pop(0)
            self._faults_applied.add(text)
            events += self.set_actuator_mode(name, what) if isinstance(what, str) else self.add_payload(name, what)
        return events

    def ground_truth(self):
        """The simulator's :class:`~kangaroo_wbc.sim.GroundTruth` (metrics only; the robot never has it)."""
        return self.sim.ground_truth()

    def base_position(self) -> np.ndarray:
        """True base position in the world [m] (cheaper than :meth:`ground_truth`)."""
        return self.sim.base_position()

    # ------------------------------------------------------------------ inputs (any thread)
    def submit(self, command: ActuatorCommand, receive_wall_s: float) -> list[Event]:
        """A command arrived at wall time ``receive_wall_s`` [s]; it drives the steps from now on
        (validated, clamped; see the module docstring). Returns the events to log."""
        forces = np.asarray(command.force, dtype=float).reshape(-1)
        n = self.sim.n_actuators
        if forces.shape != (n,):
            return self.reject(f"{forces.size} forces, expected {n} ({self.actuator_names})", receive_wall_s)
        clamped = np.empty(n)
        n_clamped = self._clamp_forces(forces, self.sim.force_limits, clamped)  # compiled: finiteness and clamp
        if n_clamped < 0:
            bad = [name for name, f in zip(self.sim.actuator_names, forces) if not math.isfinite(f)]
            return self.reject(f"non-finite force for {bad}", receive_wall_s)
        events = []
        entry = _Command(clamped, self.sim.time, float(command.stamp_s))
        with self._lock:
            self._command = entry
            self.counts["valid"] += 1
            sent = self._pending.pop(_stamp_key(command.stamp_s), None)
            if sent is not None:
                self._latency[self._n_latency % self._latency.size] = 1e3 * (receive_wall_s - sent)
                self._n_latency += 1
            if n_clamped:
                names = [name for name, a, b in zip(self.sim.actuator_names, clamped, forces) if a != b]
                self.counts["clamped"] += 1
                self._last_clamp = (receive_wall_s, names)
                events.append(Event(Level.WARN, "clamped", f"actuators/command clamped to the force limits: {names}"))
        return events

    def reject(self, reason: str, receive_wall_s: float) -> list[Event]:
        """Count a command rejected before it could be read (e.g. a message naming an unknown actuator)."""
        with self._lock:
            self.counts["rejected"] += 1
            self._last_reject = (receive_wall_s, reason)
        return [Event(Level.ERROR, "rejected", f"actuators/command rejected ({reason}); keeping the last valid "
                                               "command until the watchdog expires")]

    def set_controller_ready(self, ready: bool) -> list[Event]:
        """The controller's ``wbc/ready``: the crane releases ``release_delay_s`` after it turns True."""
        with self._lock:
            if bool(ready) == self._ready or self._config.controller == "pd":
                return []
            self._ready = bool(ready)
            self._ready_since = self.sim.time if ready else math.inf
        if ready and not self._released:
            return [Event(Level.OK, "ready", f"controller ready: crane release in {self._config.release_delay_s:g} s")]
        if not ready and self._released:
            return [Event(Level.WARN, "ready", "controller no longer ready (the robot stays released)")]
        return [Event(Level.OK, "ready", f"controller ready: {bool(ready)}")]

    # ------------------------------------------------------------------ stepping (loop thread)
    def _read(self):
        """The sensors at the current tick, read once (one noise draw per tick)."""
        if self._reading_tick != self.counts["ticks"] or self._reading is None:
            self._reading = self.sim.read_sensors()
            self._reading_tick = self.counts["ticks"]
        return self._reading

    def _forces(self) -> tuple[np.ndarray, str]:
        cfg, sim = self._config, self.sim
        cmd = self._command
        fresh = cmd is not None and sim.time - cmd.arrival_s <= cfg.watchdog_timeout_s + 1e-9
        if fresh and (self._released or self._ready):  # the driver holds until the controller is ready
            assert cmd is not None  # fresh implies a command
            return cmd.forces, "command"
        if not self._released:
            r = self._read()
            # the damping term is the driver's velocity loop in MuJoCo (start_step: set_stroke_damping)
            return cfg.hold_kp_n_per_m * (self._hold_target - r.actuator_position), "hold"
        if cfg.controller == "pd":
            return self._pd.compute(sim.actuator_positions(), sim.actuator_velocities(), self._standing_theta,
                                    tau_ff=self._standing_ff), "pd"
        return -cfg.watchdog_damping_n_s_per_m * sim.actuator_velocities(), "damping"

    def step(self) -> list[Event]:
        """Advance one control period with the command chosen by the boot, command and watchdog
        rules; returns the events to log (watchdog transitions, release, reboot after divergence)."""
        return self.start_step(wait=True)

    def start_step(self, wait: bool = False) -> list[Event]:
        """:meth:`step`, with MuJoCo stepping in its worker thread unless ``wait``: the caller
        computes meanwhile and calls :meth:`finish_step` before anything else of the simulator
        (samples, ground truth). Returns the events of the command choice."""
        t0, c0 = time.perf_counter(), time.thread_time()
        sim, cfg = self.sim, self._config
        events: list[Event] = []
        with self._lock:
            ready, ready_since = self._ready, self._ready_since
        forces, mode = self._forces()
        driven = mode == "command" or cfg.controller == "pd"  # a controller is in the loop
        if not self._released and ready and driven and sim.time - ready_since >= cfg.release_delay_s - 1e-9:
            sim.hold_base(False)
            self._released, self._released_at = True, sim.time
            events.append(Event(Level.OK, "crane", f"crane released at t = {sim.time:.3f} s"))
            forces, mode = self._forces()
        if self._fault_plan and self._released:
            events += self._due_faults()
        events += self._watch(mode)
        hold_damping = cfg.hold_kd_n_s_per_m if mode == "hold" else 0.0
        if hold_damping != self._hold_damping:
            sim.set_stroke_damping(hold_damping)
            self._hold_damping = hold_damping
        try:
            sim.set_command(forces)  # clamps; raises on a non-finite value (then zero force)
        except InputError as exc:
            sim.set_command(np.zeros(sim.n_actuators))
            events.append(Event(Level.ERROR, "non_finite", f"non-finite fallback force ({exc}); zero force"))
        self._stepping = True
        if wait:
            events += self._complete_step(sim.step)
        else:
            sim.start_step()
        self._busy[0] += time.perf_counter() - t0
        self._busy[1] += time.thread_time() - c0
        return events

    def finish_step(self) -> list[Event]:
        """Wait for the step :meth:`start_step` began (no-op if none); returns its events."""
        if not self._stepping:
            return []
        t0, c0 = time.perf_counter(), time.thread_time()
        events = self._complete_step(self.sim.wait_step)
        self._busy[0] += time.perf_counter() - t0
        self._busy[1] += time.thread_time() - c0
        return events

    def _complete_step(self, step) -> list[Event]:
        """Run ``step`` (MuJoCo's step, or the wait for the one under way); a diverged simulation
        is reported and the robot rebooted."""
        self._stepping = False
        events: list[Event] = []
        try:
            step()
        except KangarooWbcError as exc:
            events = [Event(Level.ERROR, "diverged", f"simulation failed ({exc}); resetting"), *self.reset()]
        self.counts["ticks"] += 1
        if self.counts["ticks"] % CLOSURE_SAMPLE_TICKS == 0:
            self._closure_m = self.sim.closure_violation()[0]
        return events

    def _watch(self, mode: str) -> list[Event]:
        """Watchdog transitions, reported once each."""
        previous, self._mode = self._mode, mode
        if mode == previous:
            return []
        if mode == "command":
            self._had_command = True
            return [Event(Level.OK, "watchdog", "actuators/command fresh: applying it")]
        if previous == "command":
            self.counts["watchdog_trips"] += 1
            what = {"hold": "hold PD (on the crane)", "pd": "in-process PD", "damping": "zero force plus damping"}
            return [Event(Level.WARN, "watchdog", f"watchdog: no valid actuators/command for more than "
                                                  f"{self._config.watchdog_timeout_s * 1e3:.0f} ms (sim time): "
                                                  f"{what[mode]}")]
        return [Event(Level.OK, "watchdog", f"no command: {mode}")]

    def samples(self, wall_s: float | None = None) -> tuple[ActuatorSample, EncoderSample, ImuSample | None]:
        """The sensor samples at the current simulation time (arrays in ``actuator_names`` /
        ``passive_encoder_names`` order; IMU None if the model has none). ``wall_s``: the wall time
        [s] at which they are handed out, remembered for :meth:`latency_ms`."""
        r = self._read()
        t = r.time
        if wall_s is not None:
            with self._lock:
                self._pending[_stamp_key(t)] = wall_s
                while len(self._pending) > PENDING_STAMPS:
                    self._pending.popitem(last=False)
        imu = None
        if r.imu is not None:
            imu = ImuSample(r.imu.orientation_xyzw, r.imu.angular_velocity_imu_in_imu,
                            r.imu.linear_acceleration_imu_in_imu, t)
        return (ActuatorSample(r.actuator_position, r.actuator_velocity, r.motor_torque, t),
                EncoderSample(r.passive_encoder_position, t), imu)

    # ------------------------------------------------------------------ measurements
    def latency_ms(self, reset: bool = False) -> np.ndarray:
        """Command latencies [ms] recorded since the last ``reset=True`` call (at most the ring
        buffer's size); ``reset`` starts a new window."""
        with self._lock:
            out = self._latencies_from(self._latency_mark)
            if reset:
                self._latency_mark = self._n_latency
        return out

    def _latencies_from(self, first: int) -> np.ndarray:
        """The latencies recorded from the ``first``-th on (those still in the ring buffer); under the lock."""
        n, size = self._n_latency, self._latency.size
        return self._latency[np.arange(max(first, n - size, 0), n) % size].copy()

    def statuses(self, wall_s: float, *, loop: dict | None = None,
                 min_real_time_factor: float | None = None) -> list[Status]:
        """Diagnostics: ``simulation``, ``command``, ``watchdog``, ``crane``, ``actuators``, ``latency``.

        Args:
            wall_s: now, wall clock [s] (rates are measured since the previous call).
            loop: extra values of the caller's loop (mode, overruns ...) for ``simulation``.
            min_real_time_factor: ``simulation`` turns WARN below it (a paced loop: 0.9).
        """
        cfg, s, sim_t = self._config, self.counts, self.sim.time
        wall0, sim0, ticks0, busy0, cpu0 = self._window or (wall_s, sim_t, s["ticks"], *self._busy)
        if self._window is None or wall_s - wall0 >= 0.5:
            self._window = (wall_s, sim_t, s["ticks"], *self._busy)
        span, n = max(wall_s - wall0, 1e-9), max(s["ticks"] - ticks0, 1)
        rtf = (sim_t - sim0) / span
        values = {"sim_time_s": sim_t, "real_time_factor": rtf, "tick_rate_hz": (s["ticks"] - ticks0) / span,
                  "tick_time_ms": 1e3 * (self._busy[0] - busy0) / n, "tick_cpu_ms": 1e3 * (self._busy[1] - cpu0) / n,
                  "ticks": s["ticks"], "resets": s["resets"], "closure_violation_m": self._closure_m, **(loop or {})}
        if min_real_time_factor is not None and s["ticks"] > ticks0 and rtf < min_real_time_factor:
            out = [Status("simulation", Level.WARN, f"slower than real time (rtf {rtf:.2f})", values)]
        else:
            out = [Status("simulation", Level.OK, "running", values)]
        with self._lock:
            (t_rej, reason), (t_clamp, names) = self._last_reject, self._last_clamp
            counts = {k: s[k] for k in ("valid", "rejected", "clamped")}
            cmd, ready, ready_since = self._command, self._ready, self._ready_since
        if wall_s - t_rej < EVENT_HOLD_S:
            out.append(Status("command", Level.ERROR, f"command rejected: {reason}", counts))
        elif wall_s - t_clamp < EVENT_HOLD_S:
            out.append(Status("command", Level.WARN, f"command clamped to the force limits: {names}", counts))
        else:
            out.append(Status("command", Level.OK, "ok", counts))
        values = {"command_age_s": math.inf if cmd is None else sim_t - cmd.arrival_s,
                  "timeout_s": cfg.watchdog_timeout_s, "fallback": self._mode, "controller": cfg.controller,
                  "trips": s["watchdog_trips"]}
        if self._mode == "command":
            out.append(Status("watchdog", Level.OK, "command fresh", values))
        elif not self._had_command:
            out.append(Status("watchdog", Level.OK, f"waiting for the first command ({self._mode})", values))
        else:
            out.append(Status("watchdog", Level.WARN, f"no fresh command: {self._mode}", values))
        values = {"base_held": self.base_held, "controller_ready": ready, "release_delay_s": cfg.release_delay_s,
                  "released_at_s": self._released_at if self._released_at is not None else math.nan}
        if self._released:
            out.append(Status("crane", Level.OK, "released" if self.sim.floating_base else "fixed base", values))
        elif ready:
            out.append(Status("crane", Level.OK, f"hanging: controller ready since t = {ready_since:.3f} s", values))
        else:
            out.append(Status("crane", Level.OK, "hanging: waiting for wbc/ready", values))
        modes = self.sim.actuator_modes
        out_of_action = {n: m for n, m in modes.items() if m != "active"}
        values = {**modes, "scheduled": ", ".join(f[3] for f in self._fault_plan)}
        if out_of_action:
            out.append(Status("actuators", Level.WARN, "; ".join(f"{n} {m}" for n, m in out_of_action.items()),
                              values))
        else:
            out.append(Status("actuators", Level.OK, f"all {len(modes)} actuators driven", values))
        with self._lock:
            lat = self._latencies_from(self._n_latency - STATUS_LATENCY_WINDOW)
        values = {"samples": int(lat.size), "p50_ms": float(np.percentile(lat, 50)) if lat.size else math.nan,
                  "p99_ms": float(np.percentile(lat, 99)) if lat.size else math.nan}
        text = (f"p50 {values['p50_ms']:.2f} ms, p99 {values['p99_ms']:.2f} ms" if lat.size
                else "no command echoing a sample stamp yet")
        out.append(Status("latency", Level.OK, text, values))
        return out


def _stamp_key(stamp_s: float) -> int:
    """A stamp [s] as integer nanoseconds (what survives a ``builtin_interfaces/Time`` round trip)."""
    return int(round(float(stamp_s) * 1e9))
