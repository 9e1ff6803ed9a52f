"""Actuator fault detector: an actuator that does not follow its command (no ROS, robot-agnostic).

Per actuator sample (motor torque ``tau_m`` [N·m], stroke velocity ``theta_dot`` [m/s]) the
detector compares the force the drive produces with the force the controller commanded before the
sample, and reports an actuator whose disagreement lasts ``window_s`` without a break.

**Evidence — the driver does not produce the commanded force → limp.** The motor torque the
drive needs for the commanded axial force ``F_cmd`` at the measured velocity is the ball-screw
model's inverse (:meth:`~kangaroo_wbc.model.ball_screw.BallScrewActuators.torque_from_force`: the
driving/back-driving efficiency and the friction feed-forward the drive's firmware applies); the
residual, as a force through eq. (47)'s gain ``2 pi eta / L``,

.. math::

    r_k = \\Big| \\frac{2 \\pi \\eta_k}{L_k} \\big(\\tau_{m,k} - \\tau_{m,k}(F_{cmd,k}, \\dot\\theta_k)\\big) \\Big|

is compared with ``force_tolerance_n + force_tolerance_ratio |F_cmd,k|`` (the current sensor's bias
and noise, the torque-constant error, the friction model's error). A failed driver reads no current
whatever it is told. Such an actuator is declared **limp**: its force is then bounded to zero in the
controller's QP, which relies on nothing from it — the safe assumption whether the screw is free or
seized (declaring a free screw ``locked`` would let the QP load a force nobody carries).

**Why not "locked" from the state.** A seized screw whose driver still works reads the commanded
torque and holds its stroke: the evidence would be a stroke that does not move while the controller's
plan accelerates it. Measured in the one-process loop (sway), that sign also shows on healthy
actuators whenever the plan is not realised — on the crane after the controller is ready, at the
landing: six healthy actuators were "held" within 0.1 s of ready — and the simulator's weld is soft
(a locked ankle actuator fought by an unaware controller moves 3 mm in 0.2 s, a limp one 8 mm), so
neither stillness nor travel tells the two apart within a window. A lock is therefore the operator's
word (the node's ``locked_actuators``); the detector's finding on a seized screw with a failed
driver is ``limp``, which the QP survives (it then counts on no force from it).

**Hold-off: no evidence from a sample the command did not drive.** The command compared with a
sample is the one in effect at the sample's stamp (:class:`CommandHistory`: the last command sent at
or before it), not merely the last one sent: under CPU load the controller may already have sent a
newer command than the one the drives held when the sample was taken (a far CoM reference moves
the command fast). No evidence is gathered, and every running window restarts, when

- no command sent at or before the sample is known (the sample predates them), or
- the command in effect is older than the sample by more than ``command_max_age_s`` (the drives'
  watchdog may have dropped it and damped: they follow no command), or
- the sample falls within ``holdoff_s`` after such a gap (:meth:`ActuatorFaultDetector.hold_off`):
  the drives come back from their watchdog's damping (measured: six or more healthy actuators
  "limp" after every simulator watchdog trip without it).

A residual back within its tolerance restarts that actuator's window: noise
cannot add up, only a persistent disagreement. Only the actuators the caller marks as watched (driven,
with commands that reach them) gather evidence. Cost: one compiled pass over the actuators and one
call of the ball-screw model per sample (a few microseconds for twelve actuators).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.ball_screw import BallScrewActuators
from kangaroo_wbc.model.compiled import compiled


@dataclass
class FaultDetectorSettings:
    """Thresholds of :class:`ActuatorFaultDetector` (module docstring)."""

    window_s: float = 0.1  # disagreement without a break this long [s] is a fault
    force_tolerance_n: float = 20.0  # force residual allowed at zero command [N]
    force_tolerance_ratio: float = 0.2  # ... plus this fraction of the commanded force [-]
    #: the torque sensor reads what the drive's firmware applies (efficiency switch and friction
    #: feed-forward: a real drive, the simulated drives); False: eq. (47) alone (ideal actuators,
    #: whose sensor reads eq. (47)'s inverse: the feed-forward would be a residual of 20-35 N)
    drive_model: bool = True
    #: a command older than the sample by more than this [s] drove nothing the sample shows (the
    #: drives' watchdog; the simulator's is 0.05 s): no evidence (module docstring)
    command_max_age_s: float = 0.05
    #: no evidence this long [s] after such a gap (the drives leave their watchdog's damping)
    holdoff_s: float = 0.3

    def __post_init__(self) -> None:
        w, f, r = self.window_s, self.force_tolerance_n, self.force_tolerance_ratio
        if not (math.isfinite(w) and w > 0.0 and math.isfinite(f) and f > 0.0 and math.isfinite(r) and r >= 0.0):
            raise InputError(f"fault detector: window_s and force_tolerance_n must be > 0 and force_tolerance_ratio "
                             f">= 0, all finite; got {w}, {f}, {r}")
        a, h = self.command_max_age_s, self.holdoff_s
        if not (math.isfinite(a) and a > 0.0 and math.isfinite(h) and h >= 0.0):
            raise InputError(f"fault detector: command_max_age_s must be > 0 and holdoff_s >= 0, both finite; "
                             f"got {a}, {h}")


class CommandHistory:
    """The last ``depth`` commands sent (stamp [s], axial forces [N]), to find the one in effect at a
    sample's stamp (module docstring).

    Args:
        n_actuators: forces per command.
        depth: commands kept (at 1 kHz, 64 cover 64 ms of a sample's lag).
    """

    def __init__(self, n_actuators: int, depth: int = 64) -> None:
        self._stamp = np.full(depth, -np.inf)
        self._force = np.zeros((depth, n_actuators))
        self._next = 0

    def clear(self) -> None:
        """Forget every command (they stopped reaching the actuators)."""
        self._stamp[:] = -np.inf

    def record(self, stamp_s: float, force_n: np.ndarray) -> None:
        """The command ``force_n`` [N] sent at ``stamp_s`` [s]."""
        i = self._next
        self._stamp[i], self._force[i] = stamp_s, force_n
        self._next = (i + 1) % self._stamp.shape[0]

    @property
    def last_stamp_s(self) -> float:
        """Stamp of the last command recorded [s] (-inf: none)."""
        return float(self._stamp[self._next - 1])

    def at(self, stamp_s: float) -> tuple[float, np.ndarray] | None:
        """The command in effect at ``stamp_s`` [s]: the last one sent at or before it (a stamp tie
        counts as before); None when every recorded command is newer (or none is recorded)."""
        before = np.isfinite(self._stamp) & (self._stamp <= stamp_s + 1e-9)
        if not before.any():
            return None
        i = int(np.argmax(np.where(before, self._stamp, -np.inf)))
        return float(self._stamp[i]), self._force[i]


@compiled
def _evidence(t, window_s, residual, tolerance, watched, since, found):
    """One sample of every actuator's evidence timer (module docstring), compiled: ``since[k]`` is
    when the residual of actuator ``k`` went beyond its tolerance (NaN: within it, or not watched);
    ``found[k]`` is True once that has lasted ``window_s`` [s]. Returns whether any was found."""
    any_found = False
    for k in range(residual.shape[0]):
        if watched[k] and residual[k] > tolerance[k]:
            if np.isnan(since[k]):
                since[k] = t
        else:
            since[k] = np.nan
        found[k] = not np.isnan(since[k]) and t - since[k] >= window_s - 1e-9
        any_found = any_found or found[k]
    return any_found


class ActuatorFaultDetector:
    """Actuators that do not follow their commands (module docstring).

    Args:
        screws: the actuators' ball-screw model (nominal parameters), in the controller's actuator order.
        settings: :class:`FaultDetectorSettings`.
    """

    def __init__(self, screws: BallScrewActuators, settings: FaultDetectorSettings | None = None) -> None:
        self.screws = screws
        self.settings = settings or FaultDetectorSettings()
        n = len(screws.names)
        self._gain = np.abs(np.asarray(screws.paper_gain, dtype=float))
        self._since = np.full(n, np.nan)
        #: per actuator, True once its disagreement has lasted the window (the last :meth:`update`)
        self.found = np.zeros(n, dtype=bool)
        #: per actuator, the last sample's force residual [N] and tolerance [N] (diagnostics)
        self.residual_n = np.zeros(n)
        self.tolerance_n = np.zeros(n)
        #: samples on which no evidence was gathered (the hold-off), and the last reason
        self.held_off = 0
        self.held_off_reason = ""
        self._holdoff_until = -np.inf
        self.reset()
        self.update(0.0, np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool))  # compiled now

    def reset(self) -> None:
        """Forget every running evidence (e.g. the commands stopped reaching the actuators)."""
        self._since[:] = np.nan
        self.found[:] = False

    def hold_off(self, from_s: float, reason: str) -> None:
        """No evidence from ``from_s`` [s] for ``holdoff_s`` (the drives were not following the
        command: e.g. their watchdog tripped); every running window restarts."""
        self._holdoff_until = max(self._holdoff_until, from_s + self.settings.holdoff_s)
        self._skip(reason)

    def _skip(self, reason: str) -> None:
        self.reset()
        self.held_off += 1
        self.held_off_reason = reason

    def check(self, sample_stamp_s: float, command: tuple[float, np.ndarray] | None) -> np.ndarray | None:
        """The forces [N] to compare the sample of ``sample_stamp_s`` [s] with, given the command in
        effect then (:meth:`CommandHistory.at`), or None: no evidence from this sample (module
        docstring; the reason in :attr:`held_off_reason`)."""
        if command is None:
            self._skip("the sample predates every command sent")
            return None
        age = sample_stamp_s - command[0]
        if age > self.settings.command_max_age_s:
            self.hold_off(sample_stamp_s, f"the command in effect is {age * 1e3:.0f} ms older than the sample "
                          f"(> {self.settings.command_max_age_s * 1e3:.0f} ms: the drives' watchdog may have damped)")
            return None
        if sample_stamp_s < self._holdoff_until:
            self._skip(self.held_off_reason or "hold-off")
            return None
        return command[1]

    def update(self, stamp_s: float, force_cmd_n: np.ndarray, motor_torque_nm: np.ndarray,
               velocity_m_s: np.ndarray, watched: np.ndarray) -> bool:
        """One actuator sample at ``stamp_s`` [s]; True if an actuator's disagreement has lasted the
        window (:attr:`found` says which; :attr:`residual_n` and :attr:`tolerance_n` by how much).

        Args:
            force_cmd_n: the axial forces [N] commanded before the sample (what the drives were told).
            motor_torque_nm: measured motor torques [N·m].
            velocity_m_s: measured stroke velocities [m/s].
            watched: actuators that gather evidence (driven, their commands reaching them).
        """
        s = self.settings
        expected = self.screws.torque_from_force(force_cmd_n, velocity_m_s, switch=s.drive_model,
                                                 friction=s.drive_model)
        np.multiply(self._gain, np.abs(np.asarray(motor_torque_nm, dtype=float) - expected), out=self.residual_n)
        np.multiply(np.abs(force_cmd_n), s.force_tolerance_ratio, out=self.tolerance_n)
        self.tolerance_n += s.force_tolerance_n
        return _evidence(float(stamp_s), s.window_s, self.residual_n, self.tolerance_n,
                         np.asarray(watched, dtype=np.bool_), self._since, self.found)


__all__ = ["ActuatorFaultDetector", "CommandHistory", "FaultDetectorSettings"]
