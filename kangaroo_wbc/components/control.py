"""The ``whole_body_controller`` node's behaviour: supervisor, measured contacts, references, ready.

Per state sample (:meth:`WholeBodyControl.step`): the measured contact state (sole normal forces
with hysteresis, used while every sole's force is fresh), the external references younger than
``reference_timeout_s``, then :class:`~kangaroo_wbc.control.supervisor.WbcSupervisor` (behaviour →
QP → forces, or the safe mode). The result is always a finite command.

**Start-up.** The robot stands until ``behaviour_delay_s`` after the controller became ready (it
leaves the crane meanwhile); the behaviour selected before then (:meth:`WholeBodyControl.select`)
starts at that moment, one selected later at the next tick.

**Velocity command** (:meth:`WholeBodyControl.set_velocity_command`, ``cmd_vel`` in the node): it
goes to a walking behaviour at every tick while younger than ``cmd_vel_timeout_s``; once it is older
the walk is told to stop (zero command: it finishes its step and stands) with a WARN, until a new
command arrives. Before the first command the walk keeps the command it was started with.

**Ready handshake.** :attr:`WholeBodyControl.ready` becomes True after ``ready_ticks`` control-mode
commands in a row (the estimator is calibrated, since states arrive, and the QP solves) and False
when a latched safe mode is entered or the state stops (:meth:`WholeBodyControl.stale`: a restarted
robot or estimator). The simulator (or the robot's driver) keeps the robot on its
crane until then.

**Actuator modes** (``docs/morphology.md``). :meth:`WholeBodyControl.set_actuator_mode` is the
operator's word (the node's ``locked_actuators`` / ``limp_actuators`` parameters): the supervisor
re-allocates around a ``locked`` or ``limp`` actuator (:meth:`WbcSupervisor.set_actuator_mode`) from
the next tick, an event says what was lost. The fault detector
(:class:`~kangaroo_wbc.control.fault_detector.ActuatorFaultDetector`) watches every driven actuator
once the controller is ready: each actuator sample (:meth:`WholeBodyControl.on_actuator_sample`:
motor torques, stroke velocities) against the command in effect at its stamp, holding off during and
after a watchdog trip and when that command is too old (:mod:`~kangaroo_wbc.control.fault_detector`);
an actuator that does not follow for ``window_s`` is an ERROR naming it and, with ``fault_declare``,
is declared ``limp`` (its driver does not produce the commanded force).
:attr:`WholeBodyControl.modes_version` counts the changes (an adapter publishes the modes when it
moves). The ``actuators`` status reports each mode and who set it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kangaroo_wbc.components.base import Component
from kangaroo_wbc.components.samples import ActuatorSample, Level, Status
from kangaroo_wbc.control.behaviours import make_behaviour
from kangaroo_wbc.control.fault_detector import (
    ActuatorFaultDetector,
    CommandHistory,
    FaultDetectorSettings,
)
from kangaroo_wbc.control.supervisor import Command, SafetySettings, WbcSupervisor
from kangaroo_wbc.control.wbc import FrameReference, WbcSettings
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.estimation import paper_screws
from kangaroo_wbc.estimation.floating_base import ContactDetector
from kangaroo_wbc.model.ball_screw import BallScrewActuators


@dataclass
class ControlSettings:
    """Settings of :class:`WholeBodyControl` (the node's parameters of the same names)."""

    sole_frames: tuple[str, ...] = ("left_sole", "right_sole")
    use_measured_contacts: bool = True
    contact_force_on_n: float = 60.0
    contact_force_off_n: float = 30.0
    max_state_age_s: float = 0.05  # also the freshness limit of the sole forces [s]
    reference_timeout_s: float = 0.5
    ready_ticks: int = 20
    behaviour_delay_s: float = 1.0  # from ready to the start-up behaviour [s] (stand meanwhile)
    cmd_vel_timeout_s: float = 0.5  # a velocity command older than this stops the walk [s]
    #: watch the actuator samples for actuators that do not follow their commands (module docstring)
    fault_detection: bool = True
    #: declare such an actuator limp or locked (False: the ERROR only)
    fault_declare: bool = True
    fault_detector: FaultDetectorSettings = field(default_factory=FaultDetectorSettings)


class WholeBodyControl(Component):
    """Whole-body control with its safety logic (see the module docstring).

    Args:
        supervisor: the :class:`~kangaroo_wbc.control.supervisor.WbcSupervisor` (controller inside).
        settings: :class:`ControlSettings`.
        screws: the actuators' ball-screw model for the fault detector (default: the closure file's,
            :func:`~kangaroo_wbc.estimation.contact_wrench.paper_screws`).
    """

    def __init__(self, supervisor: WbcSupervisor, settings: ControlSettings | None = None,
                 screws: BallScrewActuators | None = None) -> None:
        super().__init__()
        self.supervisor, self.settings = supervisor, settings or ControlSettings()
        s = self.settings
        self.clm = supervisor.clm
        self.contacts = ContactDetector(len(s.sole_frames), s.contact_force_on_n, s.contact_force_off_n)
        #: the full controller (a reduced one's inner controller): its model and contacts
        self._full = getattr(supervisor.controller, "full", supervisor.controller)
        by_frame = {c.frame: c.name for c in self._full.contacts}
        missing = [f for f in s.sole_frames if f not in by_frame]
        if missing:
            raise InputError(f"sole frames {missing} are not contact frames of the controller: {sorted(by_frame)}")
        #: the controller's contact name of each sole (measured contacts are named as in the references)
        self._contact_names = [by_frame[f] for f in s.sole_frames]
        self._force = np.full(len(s.sole_frames), np.nan)
        self._force_stamp = np.full(len(s.sole_frames), -np.inf)
        self._com_ref: tuple[float, np.ndarray] | None = None
        self._foot_ref: dict[str, tuple[float, FrameReference]] = {}
        self._cmd_vel: tuple[float, np.ndarray] | None = None  # (stamp [s], (vx, vy, wz))
        self._cmd_vel_stale = False
        self.ready = False
        self._ever_ready = False  # before the first ready, a missing state is waited for (WARN)
        self.ready_since_s: float | None = None  # node time at which the controller became ready
        #: node time at which the start-up behaviour started (None: standing until then)
        self.behaviour_started_s: float | None = None
        self._startup: tuple[str, dict] | None = ("stand", {})
        self._good_ticks = 0
        self._cause = ""
        self._wrenches_fresh: bool | None = None  # None: no fresh sole force yet
        self._bounded: dict[str, str] = {}  # references bounded since the last statuses()
        self._inputs: dict[str, str] = {}  # references clipped or refused since the last statuses()
        names = self.clm.actuated_joint_names
        self.detector = ActuatorFaultDetector(screws or paper_screws(self.clm), s.fault_detector)
        self._sent_force = np.zeros(len(names))  # the command the last sample was compared with [N]
        self._history = CommandHistory(len(names))  # the commands sent (the one in effect at a sample)
        self._sent = False  # a command was sent since the controller became ready
        #: who set each actuator out of action: "operator", or the detector's finding
        self._mode_cause: dict[str, str] = {}
        self._detected: set[str] = set()  # detector ERRORs reported (once each) and not yet cleared
        #: counts the actuator mode changes (an adapter publishes the modes when it moves)
        self.modes_version = 0
        self._detector_s = [0.0, 0.0, 0]  # sum, max [s] and count of detector updates since statuses()
        self._min_normal_force_n: float | None = None  # the last configure()'s (None: the contacts' own)

    @property
    def projected_model(self):
        """The controller's projected model, updated at the state of the last :meth:`prepare`."""
        return self._full.pm

    # ------------------------------------------------------------------ behaviours
    def select(self, name: str, **params) -> None:
        """Run behaviour ``name``: at start-up once ``behaviour_delay_s`` after ready, else at the
        next tick (clears a latched safe mode).

        Raises:
            InputError: unknown behaviour or parameters.
        """
        if self._startup is not None:
            make_behaviour(name, **params)  # validated now
            self._startup = (name, dict(params))
        else:
            self.supervisor.select(name, **params)

    def configure(self, settings: ControlSettings, wbc: WbcSettings | None = None,
                  safety: SafetySettings | None = None, min_normal_force_n: float | None = None) -> None:
        """Change the settings at run time (a node's parameters; the sole frames stay): the
        component's, the controller's run-time ones (:meth:`WholeBodyController.configure`: the new
        baselines a behaviour's override returns to), the supervisor's safety settings and every
        contact's minimum normal force. Checked before anything changes.

        Raises:
            InputError: a change that cannot be made at run time.
        """
        if tuple(settings.sole_frames) != tuple(self.settings.sole_frames):
            raise InputError("sole_frames cannot change at run time")
        controller = self.supervisor.controller
        if wbc is not None:
            controller.configure(wbc)  # raises before anything changed
        if safety is not None:
            self.supervisor.safety = safety
        if min_normal_force_n is not None and min_normal_force_n != self._min_normal_force_n:
            self._min_normal_force_n = min_normal_force_n
            for contact in self._full.contacts:  # shared with the controller's constraints: next tick
                contact.set_normal_force_min(min_normal_force_n)
        self.settings = settings
        self.detector.settings = settings.fault_detector
        if not settings.fault_detection:
            self.detector.reset()
        self.contacts.force_on_n = settings.contact_force_on_n
        self.contacts.force_off_n = settings.contact_force_off_n
        if not settings.use_measured_contacts:
            self._wrenches_fresh = None  # no longer watched

    def on_plate_force(self, normal_force_n: float, stamp_s: float) -> None:
        """A test bench's force plate: its normal force [N] at ``stamp_s`` [s] to the ``rig`` behaviour
        (the press's loop); ignored by the other behaviours."""
        behaviour = self.supervisor.behaviour
        if behaviour is not None and hasattr(behaviour, "measure_normal_force"):
            behaviour.measure_normal_force(normal_force_n, stamp_s)

    @property
    def startup_behaviour(self) -> tuple[str, dict] | None:
        """The behaviour and its parameters waiting to start (None once started)."""
        return None if self._startup is None else (self._startup[0], dict(self._startup[1]))

    @property
    def behaviour_name(self) -> str:
        """The behaviour running, or waiting to start."""
        return self._startup[0] if self._startup is not None else self.supervisor.behaviour_name

    # ------------------------------------------------------------------ actuator modes
    @property
    def actuator_modes(self) -> dict[str, str]:
        """Each actuator's mode (``active``, ``locked``, ``limp``), by actuated-joint name."""
        return self.supervisor.actuator_modes

    @property
    def actuator_mode_causes(self) -> dict[str, str]:
        """Who set each actuator out of action: ``operator`` or the fault detector's finding."""
        return dict(self._mode_cause)

    def set_actuator_mode(self, name: str, mode: str) -> None:
        """The operator's word: actuator ``name`` is ``active``, ``locked`` or ``limp`` from the next
        tick on (:meth:`WbcSupervisor.set_actuator_mode`); an event names what was lost. It replaces
        a mode the fault detector declared for that actuator (and clears its ERROR).

        Raises:
            InputError: unknown actuator or mode.
        """
        self._apply_mode(name, mode, "operator")
        self._detected.discard(name)

    def _apply_mode(self, name: str, mode: str, cause: str) -> None:
        old = self.supervisor.actuator_modes.get(name)
        lost = self.supervisor.set_actuator_mode(name, mode)  # raises InputError on a typo
        if mode == "active":
            self._mode_cause.pop(name, None)
        else:
            self._mode_cause[name] = cause
        if mode != old:
            self.modes_version += 1
            level = Level.OK if mode == "active" else Level.ERROR if cause != "operator" else Level.WARN
            self.event(level, f"actuator {name}", f"actuator {name} {mode} ({cause}): {lost}")

    def on_actuator_sample(self, sample: ActuatorSample, shared: str = "") -> None:
        """An actuator sample (``clm.actuated_joint_names`` order: motor torques [N·m], stroke
        velocities [m/s]) for the fault detector, checked against the command sent before it (module
        docstring). A sample without torques or velocities, or before the controller's commands
        reach the actuators, restarts the detector's evidence. ``shared``: the command topic has
        other writers (the adapter's graph, as text): the robot applies no command (it damps), an
        ERROR says so and the detector holds off."""
        s = self.settings
        if shared:
            self.event(Level.ERROR, "command writers", f"{shared}: the robot applies neither command and damps")
            self.detector.hold_off(sample.stamp_s, "the command topic has more than one writer")
            return
        if not (s.fault_detection and self._sent) or sample.effort is None or sample.velocity is None:
            return
        t0 = time.perf_counter()
        full = self._full
        force = self.detector.check(sample.stamp_s, self._history.at(sample.stamp_s))
        if force is None:  # the drives were not following this command (hold-off)
            return
        self._sent_force[:] = force
        if self.detector.update(sample.stamp_s, force, sample.effort, sample.velocity, full.driven):
            for i in np.flatnonzero(self.detector.found):
                self._found(int(i))
        dt, c = time.perf_counter() - t0, self._detector_s
        c[0], c[1], c[2] = c[0] + dt, max(c[1], dt), c[2] + 1

    def _found(self, i: int) -> None:
        """The detector's finding on actuator ``i``: an ERROR once, and the declaration ``limp``
        (``fault_declare``; :mod:`~kangaroo_wbc.control.fault_detector` says why limp)."""
        name = self.clm.actuated_joint_names[i]
        d, ds = self.detector, self.settings.fault_detector
        why = (f"its driver does not produce the commanded force ({d.residual_n[i]:.0f} N off "
               f"{self._sent_force[i]:.0f} N commanded, tolerance {d.tolerance_n[i]:.0f} N, for {ds.window_s:g} s)")
        if self.settings.fault_declare:
            self._apply_mode(name, "limp", f"fault detector: {why}")
        elif name not in self._detected:
            self.event(Level.ERROR, f"actuator {name}", f"actuator {name} does not follow its command: {why} "
                       "(not declared: fault_declare is off)")
        self._detected.add(name)

    # ------------------------------------------------------------------ inputs
    def on_sole_force(self, index: int, normal_force_n: float, stamp_s: float) -> None:
        """Normal force [N] of sole ``index`` (ground on sole) at ``stamp_s`` [s]."""
        if np.isfinite(normal_force_n):
            self._force[index], self._force_stamp[index] = normal_force_n, stamp_s

    def set_com_reference(self, position: np.ndarray, now_s: float) -> None:
        """External CoM reference [m] (world), valid for ``reference_timeout_s`` from ``now_s``; a
        non-finite or malformed one is refused (WARN in the ``references`` status; the last stays)."""
        position = np.asarray(position, dtype=float)
        if position.shape == (3,) and np.isfinite(position).all():
            self._com_ref = (now_s, position)
        else:
            self.refused("wbc/com_reference", f"{position.tolist()} is not a finite point: the last reference stays")

    def refused(self, reference: str, why: str) -> None:
        """An external reference (``cmd_vel``, ``wbc/...``) refused by its adapter or here: a WARN
        naming it and why in the ``references`` status (and a throttled event)."""
        self._refused(reference, why, "refused")

    def _refused(self, reference: str, why: str, what: str) -> None:
        self.event(Level.WARN, f"{what} {reference}", f"{reference} {what}: {why}")
        self._inputs[f"{reference} {what}"] = why

    def set_foot_reference(self, sole: str, reference: FrameReference, now_s: float) -> None:
        """External pose reference of a swing sole, valid for ``reference_timeout_s``."""
        self._foot_ref[sole] = (now_s, reference)

    def set_velocity_command(self, vx: float, vy: float, wz: float, now_s: float) -> None:
        """Velocity command [m/s, m/s, rad/s] (x forward, y left, yaw rate) of a walking behaviour,
        valid for ``cmd_vel_timeout_s`` from ``now_s`` (module docstring).

        Raises:
            InputError: a non-finite component (the command in use stays).
        """
        v = np.array([vx, vy, wz], dtype=float)
        if not np.all(np.isfinite(v)):
            self.refused("cmd_vel", f"{v.tolist()} is not finite: the command in use stays")
            raise InputError(f"cmd_vel must be finite, got {v.tolist()}")
        self._cmd_vel = (now_s, v)

    def _forward_velocity_command(self, now_s: float) -> None:
        """The velocity command to a walking behaviour (module docstring)."""
        behaviour = self.supervisor.behaviour
        if self._cmd_vel is None or behaviour is None or not hasattr(behaviour, "command"):
            return
        stamp, v = self._cmd_vel
        stale = now_s - stamp > self.settings.cmd_vel_timeout_s
        if stale != self._cmd_vel_stale:
            self._cmd_vel_stale = stale
            if stale:
                self.event(Level.WARN, "cmd_vel", f"cmd_vel older than {self.settings.cmd_vel_timeout_s} s: "
                           "the walk stops and stands")
            else:
                self.event(Level.OK, "cmd_vel", "cmd_vel fresh again: walking")
        limits = getattr(behaviour, "command_limits", None)
        if not stale and limits is not None and np.any(np.abs(v) > limits):
            self._refused("cmd_vel", f"[{', '.join(f'{x:g}' for x in v)}] clipped to the walk's limits "
                          f"±[{', '.join(f'{x:g}' for x in limits)}] (m/s, m/s, rad/s)", "clipped")
        try:
            behaviour.command(*(np.zeros(3) if stale else v))
        except InputError as exc:  # the behaviour's own limits were checked when it was selected
            self.refused("cmd_vel", f"{exc}: the command in use stays")

    # ------------------------------------------------------------------ tick
    def prepare(self, q: np.ndarray, v: np.ndarray) -> bool:
        """Update the controller's model at ``(q, v)`` ahead of :meth:`step` (so that another
        component in the same process can share it); False if the state is unusable."""
        try:
            self._full.update_model(q, v)
            return True
        except Exception:  # noqa: BLE001 - the step reports it through the supervisor's safe mode
            return False

    def step(self, now_s: float, q: np.ndarray, v: np.ndarray, state_age_s: float) -> Command:
        """One control tick at node time ``now_s`` [s] on the state ``(q, v)`` of age
        ``state_age_s`` [s] (inf: no consistent state). Never raises, never returns NaN."""
        s = self.settings
        t0 = time.perf_counter()
        measured = None
        if s.use_measured_contacts:
            ages = np.abs(now_s - self._force_stamp)
            fresh = bool(np.all(ages < s.max_state_age_s))
            if fresh:
                flags = self.contacts.update(self._force)
                measured = [name for name, c in zip(self._contact_names, flags) if c]
            self._wrench_freshness(fresh, ages)
        com = self._com_ref[1] if self._com_ref and now_s - self._com_ref[0] < s.reference_timeout_s else None
        feet = {k: r for k, (t, r) in self._foot_ref.items() if now_s - t < s.reference_timeout_s}
        if (self._startup is not None and self.ready_since_s is not None
                and now_s - self.ready_since_s >= s.behaviour_delay_s):
            name, params = self._startup
            self._startup = None
            self.supervisor.select(name, **params)
            self.behaviour_started_s = now_s
            self.event(Level.OK, "behaviour", f"behaviour {name} starts")
        self._forward_velocity_command(now_s)
        cmd = self.supervisor.tick(now_s, q, v, measured, state_age_s, com, feet or None)
        for reference, bound in self.supervisor.governor.bounded.items():
            self.event(Level.WARN, f"bounded {reference}", f"{reference.split()[0]} bounded: {bound}")
            self._bounded[reference] = bound
        self._after(cmd, now_s)
        self._timed(t0)
        return cmd

    def _wrench_freshness(self, fresh: bool, ages: np.ndarray) -> None:
        """WARN when the measured sole forces stop (the contacts then follow the behaviour's plan),
        OK when they are back; before the first fresh forces nothing is said (start-up)."""
        if fresh == self._wrenches_fresh or (self._wrenches_fresh is None and not fresh):
            return
        if fresh:
            if self._wrenches_fresh is False:
                self.event(Level.OK, "wrenches", "contact wrenches fresh again: measured contacts")
        else:
            i = int(np.argmax(ages))
            age = "never received" if not np.isfinite(ages[i]) else f"{ages[i] * 1e3:.0f} ms old"
            self.event(Level.WARN, "wrenches", f"contact wrenches stale ({self.settings.sole_frames[i]}: {age}): "
                       "contacts from the behaviour's plan")
        self._wrenches_fresh = fresh

    def stale(self, silent_s: float) -> Command:
        """No state for ``silent_s`` [s] (the adapter's steady-clock watchdog): safe mode."""
        cmd = self.supervisor.stale(silent_s)
        if self.ready:  # the robot or the estimator may have restarted: ready again once in control
            self.ready = False
            self.event(Level.ERROR, "not ready", f"not ready: no state for {silent_s:.1f} s")
        self._after(cmd, None)
        return cmd

    def _after(self, cmd: Command, now_s: float | None) -> None:
        # what the actuators are told from now on (the fault detector compares the next samples with it)
        if now_s is not None:
            last = self._history.last_stamp_s
            gap = now_s - last
            if np.isfinite(last) and gap > self.settings.fault_detector.command_max_age_s:  # commands stopped a while
                self.detector.hold_off(now_s, f"no command sent for {gap * 1e3:.0f} ms (the drives' watchdog "
                                       "may have damped)")
            self._history.record(now_s, cmd.tau_a)
        self._sent = self._sent or self.ready  # once ready, the robot applies the commands
        if cmd.mode == "hold":  # a QP failure right after control: the last command again
            self.event(Level.WARN, "hold", f"last command held: {cmd.reason}")
            return
        if cmd.mode == "control":
            self._good_ticks += 1
            if not self.ready and self._good_ticks >= self.settings.ready_ticks:
                self.ready, self.ready_since_s, self._ever_ready = True, now_s, True
                self.event(Level.OK, "ready", "ready: the controller is in control")
            if self._cause:
                self.event(Level.OK, "resumed", "control resumed")
            self._cause = ""
            return
        self._good_ticks = 0
        if now_s is None:  # no state: the adapter publishes nothing (the actuators' watchdog acts)
            self._sent = False
            self.detector.reset()
        if cmd.latched and self.ready:
            self.ready = False
            self.event(Level.ERROR, "not ready", f"not ready: latched safe mode ({cmd.reason})")
        cause = cmd.reason.split(":")[0].split(" (")[0]  # e.g. "stale state", "QP infeasible"
        if self._waiting(cmd):
            self.event(Level.WARN, "waiting state", f"waiting for a state estimate with its base ({cmd.reason}); "
                       f"safe mode ({self.supervisor.safety.fallback}) until then")
        else:
            self.event(Level.ERROR, f"safe {cause}", f"safe mode ({self.supervisor.safety.fallback}): {cmd.reason}")
        self._cause = cause

    def _waiting(self, cmd: Command) -> bool:
        """A start-up without a usable state yet (the estimator calibrating): not a fault."""
        return not self._ever_ready and cmd.reason.startswith("stale state")

    def statuses(self) -> list[Status]:
        """The ``wbc`` status since the last call."""
        sv = self.supervisor
        st, last = sv.stats, sv.last
        level, message = Level.OK, f"behaviour {self.behaviour_name}"
        if last is not None and last.mode != "control":
            level = Level.WARN if self._waiting(last) else Level.ERROR
            message = f"safe mode: {last.reason}"
        elif self._step_s[2] == 0:  # no step since the last call
            level, message = Level.WARN, "no joint_states in the last period"
        values = {"behaviour": self.behaviour_name, "ready": self.ready, "ticks": st.ticks, "safe_ticks": st.safe_ticks,
                  "qp_failures": st.qp_failures, "singular": st.singular, "stale": st.stale, "invalid": st.invalid,
                  "internal_errors": st.internal_errors,
                  "iterations_max": st.iterations_max, **self._step_timing(),
                  "latched": bool(last.latched) if last else False,
                  "contacts": "measured" if self._wrenches_fresh else "planned"}
        active_limits = getattr(sv.controller, "active_limits", None)  # both formulations name them
        if active_limits is not None:  # the stroke and passive-joint limits binding the last solution
            binding = [f"{n} ({kind.removesuffix('_limits').replace('_', ' ')})"
                       for kind, names in active_limits().items() for n in names]
            values["active_limits"] = ", ".join(binding) or "none"
        behaviour: Any = sv.behaviour  # duck-typed below
        if hasattr(behaviour, "velocity_command"):  # a walk: the command in use and the gait phase
            values.update(cmd_vel=behaviour.velocity_command.round(3).tolist(), gait_phase=behaviour.phase,
                          cmd_vel_source="topic" if self._cmd_vel is not None else "parameter",
                          cmd_vel_stale=self._cmd_vel_stale)
        if self._wrenches_fresh is False and level == Level.OK:
            level, message = Level.WARN, f"{message}; contact wrenches stale: planned contacts"
        if self._bounded or self._inputs:
            text = [f"{k.split()[0]} bounded: {v}" for k, v in self._bounded.items()]
            text += [f"{k}: {v}" for k, v in self._inputs.items()]
            references = Status("references", Level.WARN, "; ".join(text), {**self._bounded, **self._inputs})
        else:
            references = Status("references", Level.OK, "external references within bounds")
        self._bounded, self._inputs = {}, {}
        return [Status("wbc", level, message, values), references, self._actuators_status()]

    def _actuators_status(self) -> Status:
        """``actuators``: every actuator's mode; ERROR while the fault detector's finding stands (until
        the operator's word on that actuator), WARN while an actuator is out of action, else OK."""
        modes = self.actuator_modes
        out = {n: m for n, m in modes.items() if m != "active"}
        total, worst, n = self._detector_s
        self._detector_s = [0.0, 0.0, 0]
        values = {**modes, "driven": f"{len(modes) - len(out)} of {len(modes)}",
                  "fault_detection": self.settings.fault_detection, "detector_samples": n,
                  "detector_held_off": self.detector.held_off,
                  "detector_held_off_reason": self.detector.held_off_reason,
                  "detector_mean_us": 1e6 * total / max(n, 1), "detector_max_us": 1e6 * worst}
        if self._detected:
            text = "; ".join(f"{n} does not follow its command" + (f": declared {modes[n]}" if modes[n] != "active"
                                                                   else "") for n in sorted(self._detected))
            return Status("actuators", Level.ERROR, text, values)
        if out:
            text = "; ".join(f"{n} {m} ({self._mode_cause.get(n, 'operator')})" for n, m in out.items())
            return Status("actuators", Level.WARN, text, values)
        return Status("actuators", Level.OK, f"all {len(modes)} actuators driven", values)
