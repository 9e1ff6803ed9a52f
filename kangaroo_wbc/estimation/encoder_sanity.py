"""Physical sanity checks of the actuator encoder stream: jumps (glitches, slips) and freezes.

The passive-state estimator (eq. (35)-(40)) trusts the actuator readings ``theta_bar_a``
completely (``beta dt = 1`` is dead-beat), so a corrupted reading goes straight into the published
state. :class:`EncoderSanityChecker` runs before it, per sample and per actuator ``i``:

**Jump.** Between the last accepted sample ``(theta_ref, theta_dot_ref, t_ref)`` and a new one
``(theta, theta_dot, t)`` the displacement is what the reported velocities integrate to (trapezoid
rule), up to a part that the actuator could at most add at its speed limit ``v_max,i`` (the URDF
velocity limit, i.e. the closure file's ``max_velocity_m_s``):

.. math::

    \\Big|\\theta_i - \\theta_{ref,i}
        - \\tfrac{1}{2}(\\dot\\theta_i + \\dot\\theta_{ref,i})(t - t_{ref})\\Big|
    \\le k_v\\, v_{max,i}\\, (t - t_{ref}) + \\delta

with the margin ``k_v >= 1`` (``jump_speed_factor``) and the noise allowance ``delta``
(``position_tolerance``). A still or slow actuator can thus not move by more than ``k_v v_max dt``
in a sample; a fast one (a fall, in a simulator that does not limit the drives' speed) passes as
long as its reported velocity explains the motion, while a reading or a velocity that jumps alone
does not. A sample that violates it for any actuator is rejected and the reference kept, so a
one-sample glitch costs one sample. After ``max_rejected_samples`` rejections
in a row the reading has really moved (encoder slip, drive re-boot with a new offset): the fault is
*persistent*, the calibration offsets no longer hold, and the checker re-anchors on the new
reading. When ``t <= t_ref`` (repeated or out-of-order stamp) the nominal period replaces
``t - t_ref``. Because the bound grows with ``t - t_ref``, a step smaller than about
``max_rejected_samples k_v v_max dt`` is absorbed after a few rejected samples instead of being
reported as persistent (2.3 mm for a 0.5 m/s actuator at 1 kHz with the defaults). The reference
time never goes back: an out-of-order sample that passes does not stretch the next bound.

**Freeze.** A reading that stays bit-identical over ``freeze_samples`` consecutive newer samples
while the actuator's own reported velocity integrates over the same samples to more than
``freeze_min_travel``:

.. math::

    \\Big|\\sum_{k} \\dot{\\bar\\theta}_{i,k}\\, (t_k - t_{k-1})\\Big| > d_{min}

is frozen (persistent fault, every frozen sample rejected; the first sample after it that moves
again becomes the new reference). A held actuator reports a velocity
that averages to zero, so the signed sum over a short window ignores velocity noise and bias. A
reading frozen together with a velocity field frozen at zero looks like a held actuator and is not
detected here.

Positions are in [m] (prismatic actuators) or [rad] (revolute), velocities in [m/s] or [rad/s].

Example::

    checker = EncoderSanityChecker(clm.actuated_joint_names, clm.model.velocityLimit[clm.idx_v_a])
    verdict = checker.update(theta_bar_a, theta_dot_bar_a, stamp_s)
    if not verdict.accepted:
        ...  # skip the sample; verdict.persistent: the calibration no longer holds
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.compiled import all_finite, compiled


@dataclass
class EncoderSanityConfig:
    """Parameters of :class:`EncoderSanityChecker`.

    Attributes:
        jump_speed_factor: margin ``k_v`` on the actuator speed limits [-] (>= 1).
        position_tolerance: noise allowance ``delta`` added to the jump bound [m or rad].
        max_rejected_samples: rejected samples in a row that make a jump persistent.
        freeze_samples: bit-identical samples in a row before a freeze can be declared.
        freeze_min_travel: travel ``d_min`` that the reported velocity must integrate to over
            those samples [m or rad].
        nominal_dt_s: period used when the stamps do not increase [s].
    """

    jump_speed_factor: float = 1.5
    position_tolerance: float = 1e-4
    max_rejected_samples: int = 3
    freeze_samples: int = 20
    freeze_min_travel: float = 5e-4
    nominal_dt_s: float = 1e-3

    def __post_init__(self) -> None:
        if not self.jump_speed_factor >= 1.0:
            raise InputError(f"EncoderSanityConfig.jump_speed_factor must be >= 1, got {self.jump_speed_factor}")
        if not (self.position_tolerance >= 0.0 and self.freeze_min_travel >= 0.0):
            raise InputError("EncoderSanityConfig: position_tolerance and freeze_min_travel must be >= 0")
        if self.max_rejected_samples < 1 or self.freeze_samples < 2:
            raise InputError("EncoderSanityConfig: max_rejected_samples must be >= 1 and freeze_samples >= 2, got "
                             f"{self.max_rejected_samples}, {self.freeze_samples}")
        if not self.nominal_dt_s > 0.0:
            raise InputError(f"EncoderSanityConfig.nominal_dt_s must be > 0 [s], got {self.nominal_dt_s}")


@dataclass(frozen=True)
class EncoderVerdict:
    """Outcome of :meth:`EncoderSanityChecker.update` for one sample.

    Attributes:
        accepted: the sample may be used.
        persistent: a persistent fault (jump held for ``max_rejected_samples``, or a freeze): the
            calibration offsets can no longer be trusted.
        message: what was found (empty when the sample is clean).
        jumped: actuators whose reading (or reported velocity) jumped.
        frozen: actuators whose reading is frozen.
    """

    accepted: bool
    persistent: bool = False
    message: str = ""
    jumped: tuple[str, ...] = ()
    frozen: tuple[str, ...] = ()


_CLEAN = EncoderVerdict(True)


@compiled
def _freeze_step(pos, vel, dt, prev, run, travel, slot, freeze_samples, min_travel, frozen):
    """Freeze bookkeeping of one newer sample (``dt > 0`` since the previous one): the run of
    bit-identical readings, ``v dt`` into ring slot ``slot``, the reading kept as ``prev``; True
    (``frozen`` written) if an actuator's reading stayed identical for ``freeze_samples`` samples
    while its velocity integrates to more than ``min_travel`` over the ring."""
    n = pos.shape[0]
    longest = 0
    for i in range(n):
        r = run[i] + 1 if pos[i] == prev[i] else 0
        run[i] = r
        longest = max(longest, r)
        travel[slot, i] = vel[i] * dt
        prev[i] = pos[i]
    if longest < freeze_samples:
        return False
    found = False
    for i in range(n):
        total = 0.0
        for k in range(travel.shape[0]):
            total += travel[k, i]
        frozen[i] = run[i] >= freeze_samples and abs(total) > min_travel
        found = found or frozen[i]
    return found


@compiled
def _jump_ratio(pos, vel, ref, v_ref, dt, speed_bound, bound_min, tolerance, ratio, unexplained):
    """The displacement since the reference that the velocities do not explain,
    ``|theta - theta_ref - (theta_dot + theta_dot_ref) dt / 2|`` (into ``unexplained``), over its
    bound ``k_v v_max dt + delta`` (into ``ratio``); the index of the largest ratio if one exceeds
    1, else -1 (``ratio`` then holds the unexplained part only when none exceeds the common bound)."""
    n = pos.shape[0]
    largest = 0.0
    for i in range(n):
        r = abs((vel[i] + v_ref[i]) * (-0.5 * dt) + pos[i] - ref[i])
        unexplained[i] = r
        largest = max(largest, r)
    if not largest > bound_min * dt + tolerance:
        return -1
    worst, worst_ratio = -1, -np.inf
    for i in range(n):
        ratio[i] = unexplained[i] / (speed_bound[i] * dt + tolerance)
        if ratio[i] > worst_ratio:
            worst, worst_ratio = i, ratio[i]
    return worst if worst_ratio > 1.0 else -1


class EncoderSanityChecker:
    """Jump and freeze detection on a stream of actuator encoder samples (module docstring).

    Args:
        names: actuator names, the order of the samples.
        max_velocity: speed limit per actuator [m/s or rad/s]; a non-finite or non-positive
            entry disables the jump check of that actuator.
        config: thresholds.
        linear: per actuator, True for a prismatic one (messages in mm) or False for a revolute
            one (messages in mrad); default all prismatic.

    Raises:
        InputError: sizes that do not match ``names``.
    """

    def __init__(self, names: Sequence[str], max_velocity: Sequence[float] | np.ndarray,
                 config: EncoderSanityConfig | None = None, linear: Sequence[bool] | None = None) -> None:
        self.names = tuple(names)
        self.config = cfg = config or EncoderSanityConfig()
        n = len(self.names)
        v_max = np.asarray(max_velocity, dtype=float).reshape(-1)
        if v_max.shape != (n,):
            raise InputError(f"EncoderSanityChecker: {v_max.size} speed limits for {n} actuators")
        usable = np.isfinite(v_max) & (v_max > 0.0)
        #: jump speed bound ``k_v v_max`` per actuator [m/s or rad/s] (inf: not checked)
        self.speed_bound = cfg.jump_speed_factor * np.where(usable, v_max, np.inf)
        self._bound_min = float(self.speed_bound.min())  # quick pre-check of the common case
        self._ratio = np.zeros(n)
        self._unexplained = np.zeros(n)
        self._frozen_mask = np.zeros(n, dtype=bool)
        lin = np.ones(n, dtype=bool) if linear is None else np.asarray(linear, dtype=bool)
        if lin.shape != (n,):
            raise InputError(f"EncoderSanityChecker: {lin.size} 'linear' flags for {n} actuators")
        self._unit = ["mm" if x else "mrad" for x in lin]
        # ring buffer of v dt over the last freeze_samples samples [m or rad]
        self._travel = np.zeros((cfg.freeze_samples, n))
        self._run = np.zeros(n, dtype=int)  # bit-identical samples in a row
        self._slot = 0
        self._ref: np.ndarray | None = None
        self._v_ref = np.zeros(n)
        self._t_ref = 0.0
        self._prev: np.ndarray | None = None
        self._t_prev = 0.0
        #: rejected samples in a row (reset by an accepted one)
        self.rejected_in_a_row = 0
        self._was_frozen = False

    def reset(self) -> None:
        """Forget the history: the next sample is accepted and becomes the reference."""
        self._ref = self._prev = None
        self._was_frozen = False
        self._run[:] = 0
        self._travel[:] = 0.0
        self.rejected_in_a_row = 0

    # ------------------------------------------------------------------ checks
    # (a few µs per sample: the per-actuator work in two compiled passes)
    def _frozen(self, pos: np.ndarray, vel: np.ndarray, t: float) -> np.ndarray | None:
        """Update the freeze bookkeeping with a sample; the mask of frozen actuators, or None."""
        cfg = self.config
        if self._prev is None or not t > self._t_prev:  # first, repeated or out-of-order sample
            if self._prev is None:
                self._prev, self._t_prev = pos.copy(), t
            return None
        found = _freeze_step(pos, vel, t - self._t_prev, self._prev, self._run, self._travel, self._slot,
                             cfg.freeze_samples, cfg.freeze_min_travel, self._frozen_mask)
        self._slot = (self._slot + 1) % cfg.freeze_samples
        self._t_prev = t
        return self._frozen_mask.copy() if found else None

    def update(self, position: np.ndarray, velocity: np.ndarray, stamp_s: float) -> EncoderVerdict:
        """Check one sample (readings ``theta_bar_a`` [m or rad], velocities [m/s or rad/s], stamp [s]).

        Raises:
            InputError: wrongly sized or non-finite input (the node rejects those before).
        """
        cfg = self.config
        n = len(self.names)
        pos = np.asarray(position, dtype=float)
        vel = np.asarray(velocity, dtype=float)
        if pos.shape != (n,) or vel.shape != (n,):
            raise InputError(f"EncoderSanityChecker: shapes {pos.shape}, {vel.shape}; expected ({n},)")
        if not all_finite(pos, vel):
            raise InputError("EncoderSanityChecker: non-finite sample")
        frozen = self._frozen(pos, vel, stamp_s)
        if self._ref is None:
            self._ref, self._t_ref = pos.copy(), stamp_s
            self._v_ref[:] = vel
            return _CLEAN
        if frozen is not None:
            return self._freeze_verdict(frozen)
        if self._was_frozen:  # moving again after a freeze: new reference
            self._accept(pos, vel, stamp_s)
            self._was_frozen = False
            return _CLEAN
        dt = stamp_s - self._t_ref
        if not dt > 0.0:
            dt = cfg.nominal_dt_s
        # part of the displacement the reported velocities do not explain, relative to the bound
        ratio = self._ratio
        worst = _jump_ratio(pos, vel, self._ref, self._v_ref, dt, self.speed_bound, self._bound_min,
                            cfg.position_tolerance, ratio, self._unexplained)
        if worst < 0:
            self._accept(pos, vel, stamp_s)
            return _CLEAN
        return self._jump_verdict(ratio > 1.0, worst, pos, vel, stamp_s, dt, self._unexplained.copy())

    def _freeze_verdict(self, frozen: np.ndarray) -> EncoderVerdict:
        self._was_frozen = True
        names = tuple(self.names[i] for i in np.flatnonzero(frozen))
        i = int(np.flatnonzero(frozen)[0])
        travel = abs(float(self._travel[:, i].sum()))
        return EncoderVerdict(
            False, True,
            f"encoder frozen: {list(names)} bit-identical for {self._run[i]} samples while the reported "
            f"velocity implies {self._scaled(i, travel)} of travel over the last {self.config.freeze_samples}",
            frozen=names)

    def _jump_verdict(self, jumped: np.ndarray, i: int, pos: np.ndarray, vel: np.ndarray, stamp_s: float, dt: float,
                      unexplained: np.ndarray) -> EncoderVerdict:
        self.rejected_in_a_row += 1
        names = tuple(self.names[k] for k in np.flatnonzero(jumped))
        ref = self._ref
        assert ref is not None  # update() sets the reference before any jump check
        moved = float(pos[i] - ref[i])
        detail = (f"{self.names[i]} moved {self._scaled(i, moved)} in {dt * 1e3:.1f} ms, "
                  f"{self._scaled(i, unexplained[i])} more than its reported velocity explains (implied "
                  f"speed {unexplained[i] / dt:.3g}/s > bound {self.speed_bound[i]:.3g}/s)")
        if self.rejected_in_a_row >= self.config.max_rejected_samples:
            count = self.rejected_in_a_row
            self._accept(pos, vel, stamp_s)  # re-anchor on the new reading
            return EncoderVerdict(False, True, f"persistent encoder jump on {list(names)} ({count} samples in a row): "
                                  f"{detail}", jumped=names)
        return EncoderVerdict(False, False, f"encoder jump on {list(names)}: {detail}; sample rejected", jumped=names)

    def _accept(self, pos: np.ndarray, vel: np.ndarray, stamp_s: float) -> None:
        """Make the sample the reference (its time never goes back)."""
        ref = self._ref
        assert ref is not None  # update() sets the reference on the first sample, before any call here
        ref[:] = pos
        self._v_ref[:] = vel
        self._t_ref = max(self._t_ref, stamp_s)
        self.rejected_in_a_row = 0

    def _scaled(self, i: int, value: float) -> str:
        return f"{value * 1e3:.2f} {self._unit[i]}"


__all__ = ["EncoderSanityChecker", "EncoderSanityConfig", "EncoderVerdict"]
