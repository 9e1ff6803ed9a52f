"""The ``contact_wrench_estimator`` node's behaviour: sole wrenches, CoPs and ZMP (paper §VI-B).

Per ``actuators/state`` sample (motor torques [N·m]), with the newest state estimate
(:meth:`ContactWrenchEstimation.on_state`): the quasi-static estimator of eq. (43)-(47) with its
Butterworth filter. Samples out of order are skipped (``clock_restart_samples`` in a row: a
restarted clock, the filter restarts); a torque sample whose state differs from it by more than
``max_input_age_s`` is not used. Where the controller runs in the same process its model update at
the same state can be handed in (``projected``) instead of a second one.

**Actuator forces.** With an :class:`~kangaroo_wbc.estimation.actuator_force.ActuatorCompensation`
the motor torques become forces through the ball-screw model (driving/back-driving efficiency and
friction at the sample's velocities, reflected rotor inertia with the acceleration of the state
estimate's actuator velocities, a torque bias learnt while the robot stands still on both soles
after the release); without one, through eq. (47) alone.

**Locked and limp actuators** (:meth:`ContactWrenchEstimation.set_actuator_mode`): a locked
actuator's row leaves eq. (46) (its force, the lock's, comes from the solution), a limp one's force
is zero; neither one's residual teaches the torque bias (its motor torque is not used).

**Payload identification** (optional, ``ContactWrenchSettings.payload_identification``): after each
estimate on the soles (after the release), a
:class:`~kangaroo_wbc.estimation.payload_identification.PayloadIdentifier` weighs the robot while
it stands still and reports the mass [kg] and horizontal CoM [m] the model misses
(:attr:`ContactWrenchEstimation.payload_estimate`, the ``payload`` status; only a confident
estimate counts as identified: :attr:`ContactWrenchEstimation.identified_payload`). The learnt
torque bias fits the actuator forces to the model's weight, which would erase a payload: with the
identification on it learns until the identification is first confident (on the robot the model
describes: a tare) and is frozen from then on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.components.ankle_ft import AnkleFtComparison, AnkleFtSettings
from kangaroo_wbc.components.base import Component
from kangaroo_wbc.components.samples import ActuatorSample, Level, Status
from kangaroo_wbc.errors import ConfigError, EstimationError
from kangaroo_wbc.estimation.actuator_force import ActuatorCompensation, ActuatorForceEstimator
from kangaroo_wbc.estimation.contact_wrench import (
    ContactWrenchConfig,
    ContactWrenchEstimate,
    ContactWrenchEstimator,
)
from kangaroo_wbc.estimation.payload_identification import (
    PayloadEstimate,
    PayloadIdentificationConfig,
    PayloadIdentifier,
)
from kangaroo_wbc.estimation.stamp_order import StampOrder, StampVerdict
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.ball_screw import BallScrewActuators
from kangaroo_wbc.model.compiled import finite

STATE, ODOMETRY, TORQUE = "joint_states", "estimation/base_odometry", "actuators/state"


@dataclass
class ContactWrenchSettings:
    """Settings of :class:`ContactWrenchEstimation` beyond the estimator's own config."""

    sole_frames: tuple[str, ...] = ("left_sole", "right_sole")
    max_input_age_s: float = 0.05
    clock_restart_samples: int = 10
    #: identify an unmodelled payload while standing (module docstring); needs the base rows
    payload_identification: bool = False


class ContactWrenchEstimation(Component):
    """Contact wrench estimation with input ordering, staleness and restart handling.

    Args:
        clm: the closed-loop model.
        transmission: the actuators' ball screws (eq. (47):
            :func:`~kangaroo_wbc.estimation.contact_wrench.paper_screws`).
        estimator_config: :class:`~kangaroo_wbc.estimation.contact_wrench.ContactWrenchConfig`.
        settings: :class:`ContactWrenchSettings`.
        compensation: the actuator model's compensations (None: eq. (47) alone) on
            ``transmission``'s ball-screw model.
        payload_config: the payload identification's parameters (used when
            ``settings.payload_identification``; default :class:`PayloadIdentificationConfig`).

    Raises:
        ConfigError: payload identification without the estimator's base rows (a fixed base or
            ``base_row_weight`` 0).
    """

    def __init__(self, clm: ClosedLoopModel, transmission: BallScrewActuators,
                 estimator_config: ContactWrenchConfig | None = None,
                 settings: ContactWrenchSettings | None = None,
                 compensation: ActuatorCompensation | None = None,
                 payload_config: PayloadIdentificationConfig | None = None) -> None:
        super().__init__()
        self.clm, self.settings = clm, settings or ContactWrenchSettings()
        s = self.settings
        self.estimator = ContactWrenchEstimator(clm, list(s.sole_frames), transmission, estimator_config)
        self.forces = (None if compensation is None
                       else ActuatorForceEstimator(self.estimator.transmission, compensation))
        self._idx_v_a = np.asarray(clm.idx_v_a)
        self.payload: PayloadIdentifier | None = None
        if s.payload_identification:
            if not self.estimator.base_rows:
                raise ConfigError("payload identification needs the wrench estimator's base rows (a floating base "
                                  "and base_row_weight > 0): they carry the model's weight and CoM")
            self.payload = PayloadIdentifier(clm, payload_config)
        self._bias_frozen = False  # the torque bias stops learning at the first confident payload estimate
        self._order = {t: StampOrder(s.clock_restart_samples) for t in (STATE, ODOMETRY, TORQUE)}
        self._q, self._v = clm.q_ref.copy(), np.zeros(clm.model.nv)
        self._state_stamp: float | None = None
        self._state_source = STATE
        self._released = False
        self.stats = dict.fromkeys(("ticks", "rejected", "stale", "out_of_order", "waiting"), 0)
        self._reported = dict(self.stats)
        self.last_error = ""
        self._errors: dict[str, str] = {}
        #: the optional ankle F/T comparison (:meth:`attach_ankle_ft`; None: off)
        self.ankle_ft: AnkleFtComparison | None = None

    def attach_ankle_ft(self, sensors, settings: AnkleFtSettings | None = None) -> AnkleFtComparison:
        """Compare the estimates with ankle F/T sensors (:mod:`~kangaroo_wbc.components.ankle_ft`;
        their samples go to ``ankle_ft.on_wrench``); its ``ankle_ft`` status joins :meth:`statuses`.

        Raises:
            FrameNotFound: a sensor's frame or sole the model does not have.
        """
        cfg = self.estimator.config  # the measured wrenches through the estimate's own filter
        self.ankle_ft = AnkleFtComparison(self.clm.model, list(sensors), settings, event=self.event,
                                          low_pass=(cfg.cutoff_hz, cfg.sample_rate_hz, cfg.filter_order))
        return self.ankle_ft

    @property
    def configuration(self) -> np.ndarray:
        """The configuration of the newest state estimate (pinocchio order; a view)."""
        return self._q

    def reject(self, topic: str, exc: Exception | str, kind: str = "rejected") -> None:
        self.stats[kind] += 1
        self.last_error = self._errors[f"{topic} {kind}"] = f"{topic}: {exc}"
        self.event(Level.WARN, f"{topic} {kind}", f"{topic} sample skipped: {exc}")

    def in_order(self, topic: str, stamp_s: float) -> bool:
        """False (sample skipped and reported) if ``stamp_s`` is older than the newest one of
        ``topic`` (``joint_states``, ``estimation/base_odometry`` or ``actuators/state``)."""
        order = self._order[topic]
        verdict = order.update(stamp_s)
        if verdict is StampVerdict.OUT_OF_ORDER:
            self.reject(topic, f"out-of-order stamp, {order.last_lag_s * 1e3:.1f} ms older than the newest sample",
                        "out_of_order")
            return False
        if verdict is StampVerdict.RESTARTED:
            self.event(Level.WARN, f"{topic} restart", f"{topic}: clock went back by {order.last_lag_s:.3f} s for "
                       f"{order.restart_after} samples: taken as a restart")
            if topic == TORQUE:
                self.estimator.reset_filter()
                if self.forces is not None:
                    self.forces.reset()
                if self.payload is not None:
                    self.payload.reset()
        return True

    def set_actuator_mode(self, name: str, mode: str) -> None:
        """Estimate with actuator ``name`` ``active``, ``locked`` or ``limp`` from the next sample on
        (:meth:`~kangaroo_wbc.estimation.contact_wrench.ContactWrenchEstimator.set_actuator_mode`):
        an event names the change (OK back to ``active``, WARN otherwise) and the ``wrench`` status
        lists the actuators not driven (``actuator_modes``).

        Raises:
            InputError: unknown actuator or mode (nothing changes).
        """
        before = self.estimator.actuator_modes.get(name)
        self.estimator.set_actuator_mode(name, mode)
        if before == mode:
            return
        level = Level.OK if mode == "active" else Level.WARN
        what = {"active": "its measured force used again", "locked": "its row left out of eq. (46), its force "
                "the lock's", "limp": "its force taken as zero, its motor torque ignored"}[mode]
        self.event(level, f"actuator {name}", f"{name}: {before} -> {mode} ({what}; "
                   f"{self.estimator.mode_change_ms:.3f} ms)")

    def on_state(self, q: np.ndarray, v: np.ndarray, stamp_s: float, source: str = STATE) -> None:
        """The newest state estimate (closed configuration and velocity, pinocchio order) of time
        ``stamp_s`` (its order is the caller's: :meth:`in_order`); ``source``: the input that
        stamp comes from (the oldest of those the state was made of), named when it is stale."""
        self._q[:], self._v[:] = q, v
        self._state_stamp, self._state_source = stamp_s, source

    def set_released(self, released: bool) -> None:
        """The start-up handshake (``wbc/ready``): when the crane lets go the filter restarts, since
        the wrenches estimated while hanging were not ground reactions (the crane carried part of
        the weight)."""
        if released and not self._released:
            self.estimator.reset_filter()
        if self.payload is not None and bool(released) != self._released:
            self.payload.reset()
        self._released = bool(released)

    def step(self, sample: ActuatorSample, projected=None) -> ContactWrenchEstimate | None:
        """One torque sample (``clm.actuated_joint_names`` order, ``effort`` = motor torque [N·m]):
        the estimate (buffers overwritten at the next call), or None (skipped: see the events).

        ``projected``: a :class:`~kangaroo_wbc.model.projected_model.ProjectedModel` already
        updated at the current state (the controller's, in the same process), or None.
        """
        if sample.effort is None or not finite(sample.effort):
            self.reject(TORQUE, "missing or non-finite motor torques")
            return None
        t = sample.stamp_s
        if not self.in_order(TORQUE, t):
            return None
        if self._state_stamp is None:
            self.stats["waiting"] += 1
            self.event(Level.OK, "waiting", f"waiting for {STATE}: {TORQUE} skipped")
            return None
        lag = abs(t - self._state_stamp)
        if lag > self.settings.max_input_age_s:
            src = self._state_source
            self.reject(src, f"stale input: {src} {lag * 1e3:.1f} ms "
                        f"{'older' if self._state_stamp < t else 'newer'} than {TORQUE} "
                        f"(limit {self.settings.max_input_age_s * 1e3:.1f} ms), nothing published", "stale")
            return None
        t0 = time.perf_counter()
        try:
            if self.forces is None:
                out = self.estimator.update(self._q, motor_torque=sample.effort, v=self._v, projected=projected)
            else:
                v_est = self._v[self._idx_v_a]
                velocity = sample.velocity  # measured; a sample without velocities: the estimate's
                if velocity is None or np.shape(velocity) != v_est.shape or not finite(velocity):
                    velocity = v_est
                force = self.forces.estimate(sample.effort, velocity, v_est)
                out = self.estimator.update(self._q, actuator_force=force, v=self._v, projected=projected)
                if self._released and self.estimator.base_rows and not self._bias_frozen:  # the residual: the offset
                    est = self.estimator
                    residual = est.J_cm_T @ out.wrench_sole_in_sole_raw.reshape(-1) - (est.g_pa - force)
                    residual *= est.driven  # a locked or limp actuator's torque is not used: no bias to learn
                    self.forces.update_bias(residual, velocity, out.wrench_sole_in_sole[:, 2])
        except EstimationError as exc:
            self.reject("estimation", exc)
            return None
        if not finite(out.wrench_sole_in_sole):
            self.reject("estimation", "non-finite wrench, not published")
            return None
        if self.payload is not None and self._released:
            self._identify_payload(t)
        if self.ankle_ft is not None and self.ankle_ft.readings:
            self.ankle_ft.compare(self._q, dict(zip(out.sole_frames, out.wrench_sole_in_sole)), t)
        self.stats["ticks"] += 1
        self._timed(t0)
        return out

    @property
    def payload_estimate(self) -> PayloadEstimate | None:
        """The payload identification's current estimate, confident or not (None: identification off)."""
        return None if self.payload is None else self.payload.estimate

    @property
    def identified_payload(self) -> PayloadEstimate | None:
        """The last confident payload estimate (None: none yet, or identification off)."""
        return None if self.payload is None else self.payload.identified

    def _identify_payload(self, stamp_s: float) -> None:
        """One tick of the payload identification; at its first confident estimate the torque bias
        stops learning (module docstring) and an event says so; a newly identified payload is an event."""
        pid = self.payload
        assert pid is not None  # called with the identification on only
        before = pid.identified
        est = pid.update(self.estimator, self._q, self._v, stamp_s)
        if not est.confident or before is not None and abs(est.mass_kg - before.mass_kg) < pid.config.max_mass_drift_kg:
            return
        if not self._bias_frozen and self.forces is not None and self.forces.compensation.torque_bias:
            self._bias_frozen = True
            self.event(Level.OK, "torque bias", f"torque bias frozen (payload identification's tare, "
                       f"{est.mass_kg:+.2f} kg left)")
        self.event(Level.OK, "payload", f"payload identified: {self._payload_text(est)}")

    def _payload_text(self, est: PayloadEstimate) -> str:
        """``"6.02 kg (std 0.14 kg), CoM at x 0.016 m, y -0.000 m"``."""
        text = f"{est.mass_kg:+.2f} kg (std {est.mass_std_kg:.2f} kg)"
        if np.all(np.isfinite(est.com_xy_in_world_m)):
            x, y = est.com_xy_in_world_m
            text += f", CoM at x {x:.3f} m, y {y:.3f} m"
        return text

    def _modes_text(self) -> str:
        """``"all active"`` or the actuators not driven, ``"name: mode, ..."``."""
        out = [f"{n}: {m}" for n, m in self.estimator.actuator_modes.items() if m != "active"]
        return ", ".join(out) or "all active"

    def statuses(self) -> list[Status]:
        """The ``wrench`` status since the last call."""
        s, est = self.stats, self.estimator.estimate
        recent = {k: v - self._reported[k] for k, v in s.items()}
        self._reported = dict(s)
        skipped = recent["rejected"] + recent["stale"] + recent["out_of_order"]
        faults = "; ".join(self._errors.values())
        self._errors = {}
        values = {**self._step_timing(), "total_force_z_n": float(est.total_force_in_world[2]),
                  "cop_valid": est.cop_valid.tolist(), "residual_n": est.residual, **s, "last_error": self.last_error,
                  "actuator_modes": self._modes_text()}
        if skipped and not recent["ticks"]:
            level, message = Level.ERROR, f"no output, input skipped: {faults}"
        elif skipped:
            level, message = Level.WARN, f"{skipped} input sample(s) skipped: {faults}"
        elif not recent["ticks"]:
            level, message = Level.WARN, "waiting for input"
        else:
            level, message = Level.OK, "running"
        out = [Status("wrench", level, message, values)]
        if self.payload is not None:
            out.append(self._payload_status())
        if self.ankle_ft is not None:
            out.append(self.ankle_ft.status())
        return out

    def _payload_status(self) -> Status:
        """The ``payload`` status: OK while nothing unmodelled is identified, WARN for an identified
        payload above ``min_mass_for_com_kg`` (the model should be told: ``add_payload``)."""
        pid = self.payload
        assert pid is not None  # called with the identification on only
        est, found = pid.estimate, pid.identified
        values = {k: v for k, v in est.as_dict().items() if k != "stamp_s"}
        values["bias_frozen"] = self._bias_frozen
        if est.confident and abs(est.mass_kg) >= pid.config.min_mass_for_com_kg:
            return Status("payload", Level.WARN, f"unmodelled payload: {self._payload_text(est)}", values)
        if est.confident:
            return Status("payload", Level.OK, f"no unmodelled payload ({self._payload_text(est)})", values)
        last = "" if found is None else f"; last identified {self._payload_text(found)}"
        return Status("payload", Level.OK, f"not identified: {est.reason}{last}", values)
