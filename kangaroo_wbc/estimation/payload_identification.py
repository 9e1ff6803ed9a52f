"""Online identification of an unmodelled payload from the estimated sole wrenches (issue #25).

A payload the model was not told about (a cage, a battery, a box strapped to the torso) makes the
robot heavier than its model: standing still, the ground carries the true weight while the model
predicts its own. This module weighs the robot on its two soles and returns the difference, the
unmodelled mass ``dm`` [kg] and the horizontal position of its centre of mass [m].

**Which wrench.** The contact-wrench estimator's published wrenches
(:mod:`kangaroo_wbc.estimation.contact_wrench`) cannot be used: with a floating base they solve
the actuated rows together with the base rows ``J_c,b^T f = g_b + dh_b`` (weight ``w_b``), and the
base rows *are* the model's weight and CoM, so the published total force is the model's ``m g``
whatever the robot carries (that is their purpose). The payload is seen only by the actuators. So
the identification solves the paper's eq. (46) alone — the actuated rows, square (12 equations
for the 12 unknowns of two soles) —

.. math::

    f_{46} = (J_{c,m}^T)^{-1} (g_{p,a} - \\bar\\tau),

from the estimator's own terms of the tick (``J_cm_T``, ``g_pa``, the actuator forces
``estimate.actuator_force``: eq. (47) or the ball-screw model, after its torque bias), and puts
``f_46`` into the base rows, the whole robot's force and moment balance, whose residual

.. math::

    r_b = J_{c,b}^T f_{46} - g_b - \\dot h_b

is what the model's weight misses: ``g_b`` (pinocchio's generalised gravity, base rows) is the
model's weight ``m g`` acting at the model's CoM ``c``, moved to the base frame (moments about the
base origin ``p_b``), ``dh_b`` the momentum rate (both the estimator's). A payload on the base
link leaves the actuated rows' gravity ``g_p,a`` unchanged (no actuated joint carries the base), so
``f_46`` is the true ground wrench and, rotated to world axes by the base orientation ``R``,
``[F; T] = blkdiag(R, R) r_b`` is the gravity wrench of the payload about the base origin:

.. math::

    F = \\Delta m\\, g\\, e_z, \\qquad
    T = (p - p_b) \\times \\Delta m\\, g\\, e_z
      = \\Delta m\\, g\\, [\\,p_y - p_{b,y},\\; -(p_x - p_{b,x}),\\; 0\\,]^T

(``g`` the model's gravity, ``p`` the payload's CoM), three equations linear in
``theta = [dm, dm (p_x - p_b,x), dm (p_y - p_b,y)]``:

.. math::

    \\Delta m = F_z / g, \\qquad \\Delta m\\,(p_x - p_{b,x}) = -T_y / g, \\qquad
    \\Delta m\\,(p_y - p_{b,y}) = T_x / g .

Equivalently: the total ground force of ``f_46`` is ``(m + dm) g`` and its CoP is the true CoM's
vertical projection, ``(m c + dm p) / (m + dm)``. The other three rows, ``F_x``, ``F_y``, ``T_z``,
must vanish (no horizontal external force): their window mean is reported as a check
(``horizontal_residual_n``) and gates the confidence (an operator's hand on the robot shows there).

**Unobservable: the payload's height.** A static wrench carries the moment of a vertical force
only: ``T`` does not depend on ``p_z`` (the cross product with ``e_z``), so the payload's CoM is
known on its vertical line only. Its height would need the robot to tilt (a second orientation of
gravity in the body) or to accelerate; neither happens while standing.

**Other links.** For a payload on a leg link, ``g_p,a`` changes too, ``f_46`` is no longer the true
wrench and the estimate is biased (by ``-J_c,b^T J_c,m^-T dg_p,a``): the formulas are exact for the
base link (the torso, where payloads go), approximate elsewhere. A locked actuator's row leaves
eq. (46) (its force is the lock's): the square system is gone and the identification pauses.

**Standing still** — no ground truth, the estimator's inputs only, each threshold of
:class:`PayloadIdentificationConfig`: the state estimate's base velocity and angular velocity and
the actuators' velocities small (the CoM velocity follows from these), the momentum rate (the
estimator's ``dh_b``, low-passed: the CoM acceleration times ``m`` and the rate of the angular
momentum) small, both soles loaded (the estimator's filtered normal forces), every actuator driven
or limp; and all of it for ``settle_s`` without interruption, so that a sway, whose velocity
vanishes only at its turning points where its acceleration peaks, never counts.

**Windowed average.** While still, the inputs are summed over blocks of ``block_samples`` ticks
and each block gives one sample of ``theta`` (one 12 x 12 solve per block; eq. (46) is linear in
``tau_bar``, and the model terms do not move while the robot stands). The blocks of the last
``window_s`` seconds form the estimate: their mean, the standard deviation of ``dm`` over them
(the residual spread) and its standard error. The estimate is **confident** when the window holds
``min_still_s`` of still blocks, the spread and the standard error are below their limits and the
horizontal residual is small; only then is it reported (:attr:`PayloadIdentifier.identified`). A
payload put on while the robot stands shows as a spread (the window holds both masses) until the
old blocks have left it. The window restarts when the model's inertias change
(:meth:`~kangaroo_wbc.model.closed_loop_model.ClosedLoopModel.add_payload`: what was unmodelled
is now modelled) and when an actuator changes mode.

**Ball-screw drives.** At standstill a screw holds any force inside its friction band (docs/
estimation.md, "Ball-screw actuators"): a load added at rest is partly carried by the band and not
seen by the motor torque. And the estimator's learnt torque bias (``ActuatorCompensation.torque_bias``)
fits the actuators to the model's weight: the same residual as a payload. The component
(:class:`~kangaroo_wbc.components.contact_wrench.ContactWrenchEstimation`) stops that learning
once the identification is first confident: the bias is then a tare, taken on the robot the model
describes.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ConfigError, InputError
from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel


@dataclass
class PayloadIdentificationConfig:
    """Parameters of :class:`PayloadIdentifier` (module docstring).

    Attributes:
        block_samples: ticks averaged into one sample of the window (one eq. (46) solve each).
        window_s: the estimate averages the still blocks of the last ``window_s`` [s].
        min_still_s: still time [s] the window must hold before the estimate is confident.
        settle_s: the robot must have been still this long [s] before its samples count.
        max_base_speed_m_s: still: estimated base speed below this [m/s].
        max_base_rate_rad_s: still: estimated base angular speed below this [rad/s].
        max_actuator_speed_m_s: still: every actuator slower than this [m/s].
        max_com_acceleration_m_s2: still: low-passed linear momentum rate over the model's mass
            below this [m/s²].
        max_angular_momentum_rate_nm: still: low-passed angular momentum rate (about the base
            origin) below this [N·m].
        momentum_filter_s: time constant of that low-pass [s].
        min_sole_force_n: still on both soles: every sole's estimated normal force above this [N].
        max_mass_std_kg: confident: standard deviation of the window's block masses below this [kg].
        max_mass_stderr_kg: confident: their standard error below this [kg].
        max_mass_drift_kg: confident: the mean ``dm`` of the window's newer half and of its older
            half, and that of its newest ``recent_s`` and of the rest, differ by less than this [kg]
            (a payload put on or taken off while standing, a load settling into a screw's
            friction band).
        recent_s: the newest part of the window compared with the rest [s].
        max_horizontal_residual_n: confident: the window's mean horizontal force balance
            ``|[F_x, F_y]|`` below this [N].
        min_mass_for_com_kg: the CoM is given when ``|dm|`` is above this [kg] and four standard
            errors (below it, ``dm p / dm`` divides noise by noise).
    """

    block_samples: int = 10
    window_s: float = 2.0
    min_still_s: float = 1.0
    settle_s: float = 0.5
    max_base_speed_m_s: float = 0.01
    max_base_rate_rad_s: float = 0.05
    max_actuator_speed_m_s: float = 0.005
    max_com_acceleration_m_s2: float = 0.1
    max_angular_momentum_rate_nm: float = 2.0
    momentum_filter_s: float = 0.05
    min_sole_force_n: float = 50.0
    max_mass_std_kg: float = 0.5
    max_mass_stderr_kg: float = 0.1
    max_mass_drift_kg: float = 0.25
    recent_s: float = 0.1
    max_horizontal_residual_n: float = 5.0
    min_mass_for_com_kg: float = 0.5

    def __post_init__(self) -> None:
        if int(self.block_samples) != self.block_samples or self.block_samples < 1:
            raise InputError(f"PayloadIdentificationConfig.block_samples must be an integer >= 1, "
                             f"got {self.block_samples}")
        for k in ("window_s", "min_still_s", "max_base_speed_m_s", "max_base_rate_rad_s", "max_actuator_speed_m_s",
                  "max_com_acceleration_m_s2", "max_angular_momentum_rate_nm", "momentum_filter_s",
                  "max_mass_std_kg", "max_mass_stderr_kg", "max_mass_drift_kg", "recent_s",
                  "max_horizontal_residual_n"):
            v = getattr(self, k)
            if not (math.isfinite(v) and v > 0):
                raise InputError(f"PayloadIdentificationConfig.{k} must be finite and > 0, got {v}")
        for k in ("settle_s", "min_sole_force_n", "min_mass_for_com_kg"):
            v = getattr(self, k)
            if not (math.isfinite(v) and v >= 0):
                raise InputError(f"PayloadIdentificationConfig.{k} must be finite and >= 0, got {v}")
        if self.min_still_s > self.window_s:
            raise InputError(f"PayloadIdentificationConfig.min_still_s ({self.min_still_s} s) must not exceed "
                             f"window_s ({self.window_s} s)")


@dataclass
class PayloadEstimate:
    """Output of :meth:`PayloadIdentifier.update` (a new object at each block; between blocks the last).

    Attributes:
        stamp_s: time [s] of the last block in the window (NaN: none yet).
        confident: the window passes every test of the config (module docstring); the other
            fields are reported either way, for diagnostics.
        still: the robot counted as standing still at the last tick.
        reason: why not confident ("" when confident).
        mass_kg: unmodelled mass ``dm`` [kg], the window's mean (NaN without blocks).
        mass_std_kg: standard deviation of the blocks' ``dm`` [kg].
        mass_stderr_kg: its standard error, ``std / sqrt(blocks)`` [kg].
        com_xy_in_world_m: horizontal position of the payload's CoM in the world frame [m]; NaN
            while ``|dm|`` is too small to divide by (``min_mass_for_com_kg``). Its height is
            unobservable (module docstring).
        com_xy_from_base_m: the same, from the base origin, world axes [m].
        first_moment_xy_kg_m: ``dm (p - p_b)`` horizontal, world axes [kg·m] (defined at any ``dm``).
        total_mass_kg: the model's mass plus ``dm`` [kg].
        mass_drift_kg: mean ``dm`` of the window's newer half minus its older half's, or of its
            newest ``recent_s`` minus the rest's, whichever is larger in magnitude [kg].
        horizontal_residual_n: window mean of ``|[F_x, F_y]|`` of the balance [N] (should be 0).
        blocks: blocks in the window; still_s: the still time they cover [s].
    """

    stamp_s: float = math.nan
    confident: bool = False
    still: bool = False
    reason: str = "no still samples yet"
    mass_kg: float = math.nan
    mass_std_kg: float = math.nan
    mass_stderr_kg: float = math.nan
    mass_drift_kg: float = math.nan
    com_xy_in_world_m: np.ndarray = field(default_factory=lambda: np.full(2, np.nan))
    com_xy_from_base_m: np.ndarray = field(default_factory=lambda: np.full(2, np.nan))
    first_moment_xy_kg_m: np.ndarray = field(default_factory=lambda: np.full(2, np.nan))
    total_mass_kg: float = math.nan
    horizontal_residual_n: float = math.nan
    blocks: int = 0
    still_s: float = 0.0

    def as_dict(self) -> dict:
        """Plain values (lists for the arrays), e.g. for diagnostics or JSON."""
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()}


class PayloadIdentifier:
    """Unmodelled payload mass and horizontal CoM from the wrench estimator's terms (module docstring).

    Args:
        clm: the closed-loop model the wrench estimator runs on (floating base): its mass and
            :attr:`~kangaroo_wbc.model.closed_loop_model.ClosedLoopModel.inertia_version`.
        config: :class:`PayloadIdentificationConfig`.
    """

    def __init__(self, clm: ClosedLoopModel, config: PayloadIdentificationConfig | None = None) -> None:
        if not clm.floating_base:
            raise ConfigError("PayloadIdentifier needs a floating-base model (the base rows are the robot's balance)")
        self.clm = clm
        self.config = config or PayloadIdentificationConfig()
        self.gravity_m_s2 = float(np.linalg.norm(clm.model.gravity.linear))
        self._idx_v_a = np.asarray(clm.idx_v_a)
        n_a = clm.n_a
        self._sum_b = np.zeros(n_a)  # block sums of g_p,a - tau_bar, g_b + dh_b, p_b
        self._sum_base = np.zeros(6)
        self._n_block = 0
        self._dh_lp = np.zeros(6)  # low-passed momentum rate
        self._dh_valid = False
        self._last_stamp: float | None = None
        self._still_since: float | None = None
        self._version = clm.inertia_version
        self._modes: tuple | None = None
        self._block_t0 = 0.0
        #: the window: per block ``(stamp [s], dm [kg], dm dx, dm dy [kg·m], F_x, F_y [N], p_b,x, p_b,y [m],
        #: duration [s])``
        self._window: deque[np.ndarray] = deque()
        self.estimate = PayloadEstimate()
        #: the last confident estimate, or None (what is reported)
        self.identified: PayloadEstimate | None = None
        #: blocks used since construction (statistics)
        self.blocks_total = 0

    def reset(self) -> None:
        """Forget the window, the block under way and the stillness history (the last confident
        estimate is kept until a new one replaces it)."""
        self._window.clear()
        self._n_block = 0
        self._still_since = None
        self._dh_valid = False
        self.estimate = PayloadEstimate(reason="restarted")

    # ------------------------------------------------------------------ stillness
    def _is_still(self, estimator, v: np.ndarray, dt: float, locked: bool) -> bool:
        """The standing-still test of the module docstring at this tick, ``dt`` [s] after the last
        (updates the momentum low-pass)."""
        cfg = self.config
        dh = estimator.momentum_rate_in_base
        if not self._dh_valid or not (0.0 < dt < 1.0):
            self._dh_lp[:] = dh
            self._dh_valid = True
        else:
            a = dt / (cfg.momentum_filter_s + dt)
            self._dh_lp += a * (dh - self._dh_lp)
        if locked:
            return False
        lp, max_dl = self._dh_lp, cfg.max_com_acceleration_m_s2 * self.clm.mass_kg
        return bool(math.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2) < cfg.max_base_speed_m_s
                    and math.sqrt(v[3] ** 2 + v[4] ** 2 + v[5] ** 2) < cfg.max_base_rate_rad_s
                    and np.max(np.abs(v[self._idx_v_a])) < cfg.max_actuator_speed_m_s
                    and math.sqrt(lp[0] ** 2 + lp[1] ** 2 + lp[2] ** 2) < max_dl
                    and math.sqrt(lp[3] ** 2 + lp[4] ** 2 + lp[5] ** 2) < cfg.max_angular_momentum_rate_nm
                    and np.min(estimator.estimate.wrench_sole_in_sole[:, 2]) > cfg.min_sole_force_n)

    # ------------------------------------------------------------------ update
    def update(self, estimator, q: np.ndarray, v: np.ndarray, stamp_s: float) -> PayloadEstimate:
        """One tick, after ``estimator``'s update at the state ``(q, v)`` of time ``stamp_s`` [s].

        ``estimator``: the :class:`~kangaroo_wbc.estimation.contact_wrench.ContactWrenchEstimator`
        of the tick, on this identifier's model, with its base rows (``base_row_weight > 0``, the
        default): its public terms ``J_cm_T``, ``g_pa``, ``J_cb_T``, ``g_base``,
        ``momentum_rate_in_base`` and ``estimate`` (actuator forces, filtered sole forces) are read.

        Returns:
            :attr:`estimate` (a new object when a block completes).

        Raises:
            ConfigError: an estimator on another model or without base rows.
        """
        if estimator.clm is not self.clm:
            raise ConfigError("PayloadIdentifier.update: the wrench estimator runs on another model")
        if not estimator.base_rows:
            raise ConfigError("PayloadIdentifier needs the wrench estimator's base rows (base_row_weight > 0): "
                              "the model's weight and CoM come from them")
        modes = tuple(estimator.actuator_modes.values())
        if self._last_stamp is not None and stamp_s < self._last_stamp:  # a restarted clock
            self._last_stamp = None
            self.reset()
        if self.clm.inertia_version != self._version or (self._modes is not None and modes != self._modes):
            self._version = self.clm.inertia_version
            self.reset()
        self._modes = modes
        cfg = self.config
        dt = 0.0 if self._last_stamp is None else stamp_s - self._last_stamp
        self._last_stamp = stamp_s
        still = self._is_still(estimator, v, dt, "locked" in modes)
        if not still:
            self._still_since = None
            self._n_block = 0
        elif self._still_since is None:
            self._still_since = stamp_s
        self._drop_old(stamp_s)
        if self._still_since is None or stamp_s - self._still_since < cfg.settle_s:
            if self.estimate.still != still or (not still and self.estimate.reason != "moving"):
                self._publish(stamp_s, still, "moving" if not still else "settling")
            return self.estimate
        # a still tick: into the block (eq. (46)'s right-hand side, the base rows' model terms)
        if self._n_block == 0:
            self._sum_b[:] = 0.0
            self._sum_base[:] = 0.0
            self._block_t0 = stamp_s - dt  # the block covers its first tick's period
        self._sum_b += estimator.g_pa
        self._sum_b -= estimator.estimate.actuator_force
        self._sum_base += estimator.g_base
        self._sum_base += estimator.momentum_rate_in_base
        self._n_block += 1
        if self._n_block < cfg.block_samples:
            return self.estimate
        n, self._n_block = self._n_block, 0
        try:
            f46 = np.linalg.solve(estimator.J_cm_T, self._sum_b / n)  # eq. (46), actuated rows alone
        except np.linalg.LinAlgError:
            return self.estimate
        r_b = estimator.J_cb_T @ f46 - self._sum_base / n  # what the model's weight misses (base frame)
        if not np.all(np.isfinite(r_b)):
            return self.estimate
        oMb = pin.XYZQUATToSE3(q[:7])
        R, p_b = oMb.rotation, oMb.translation
        F, T = R @ r_b[:3], R @ r_b[3:]
        g = self.gravity_m_s2
        self._window.append(np.array([stamp_s, F[2] / g, -T[1] / g, T[0] / g, F[0], F[1], p_b[0], p_b[1],
                                      stamp_s - self._block_t0]))
        self.blocks_total += 1
        return self._publish(stamp_s, True, "")

    def _drop_old(self, stamp_s: float) -> None:
        w, horizon = self._window, stamp_s - self.config.window_s
        while w and w[0][0] <= horizon:
            w.popleft()

    def _publish(self, stamp_s: float, still: bool, reason: str) -> PayloadEstimate:
        """The window's estimate and its confidence (module docstring)."""
        cfg, w = self.config, self._window
        est = PayloadEstimate(still=still, blocks=len(w))
        if not w:
            est.reason = reason or "no still samples yet"
            self.estimate = est
            return est
        W = np.array(w)
        dm, moment = W[:, 1], W[:, 2:4]
        est.stamp_s = float(W[-1, 0])
        est.still_s = float(np.sum(W[:, 8]))
        est.mass_kg = float(np.mean(dm))
        est.mass_std_kg = float(np.std(dm)) if len(w) > 1 else math.nan
        est.mass_stderr_kg = est.mass_std_kg / math.sqrt(len(w)) if len(w) > 1 else math.nan
        est.total_mass_kg = self.clm.mass_kg + est.mass_kg
        half, recent = len(w) // 2, W[:, 0] > W[-1, 0] - cfg.recent_s
        if half and not recent.all():
            drifts = (np.mean(dm[half:]) - np.mean(dm[:half]), np.mean(dm[recent]) - np.mean(dm[~recent]))
            est.mass_drift_kg = float(max(drifts, key=abs))
        est.first_moment_xy_kg_m = np.mean(moment, axis=0)
        est.horizontal_residual_n = float(np.linalg.norm(np.mean(W[:, 4:6], axis=0)))
        if abs(est.mass_kg) >= cfg.min_mass_for_com_kg and abs(est.mass_kg) > 4.0 * (est.mass_stderr_kg or 0.0):
            est.com_xy_from_base_m = est.first_moment_xy_kg_m / est.mass_kg
            est.com_xy_in_world_m = est.com_xy_from_base_m + W[-1, 6:8]
        if reason:
            est.reason = reason
        elif est.still_s < cfg.min_still_s - 1e-9:
            est.reason = f"{est.still_s:.2f} s of still samples, {cfg.min_still_s} s needed"
        elif not est.mass_std_kg <= cfg.max_mass_std_kg:
            est.reason = f"spread {est.mass_std_kg:.2f} kg above {cfg.max_mass_std_kg} kg"
        elif not est.mass_stderr_kg <= cfg.max_mass_stderr_kg:
            est.reason = f"standard error {est.mass_stderr_kg:.3f} kg above {cfg.max_mass_stderr_kg} kg"
        elif not abs(est.mass_drift_kg) <= cfg.max_mass_drift_kg:
            est.reason = f"drift {est.mass_drift_kg:+.2f} kg across the window, above {cfg.max_mass_drift_kg} kg"
        elif not est.horizontal_residual_n <= cfg.max_horizontal_residual_n:
            est.reason = (f"horizontal force balance {est.horizontal_residual_n:.1f} N above "
                          f"{cfg.max_horizontal_residual_n} N (an external force?)")
        else:
            est.confident, est.reason = True, ""
            self.identified = est
        self.estimate = est
        return est


__all__ = ["PayloadEstimate", "PayloadIdentificationConfig", "PayloadIdentifier"]
