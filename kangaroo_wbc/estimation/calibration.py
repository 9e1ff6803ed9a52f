"""Start-up calibration of relative actuator encoders (Kangaroo paper, Section VI-A, eq. (41)-(42)).

Ball-screw actuators read their position through a motor-side encoder: the reading carries an
unknown constant **offset** at every boot, ``theta_bar_a = theta_a + offset``. A few passive
joints carry absolute encoders. With the robot at rest, the closures ``e_l(theta) = 0`` plus the
encoder equations ``E theta = theta_m`` determine the full configuration, hence the offsets.

The paper augments the constraint Jacobian with the measurement matrix ``E`` (one row per
encoded passive DOF, a single 1 in the column of that DOF) and the closure error with the
measurement error (eq. (41)-(42)):

.. math::

    J(\\theta) = \\begin{bmatrix} J_l(\\theta) \\\\ E \\end{bmatrix}, \\qquad
    e(\\theta) = \\begin{bmatrix} e_l(\\theta) \\\\ E\\theta - \\theta_m \\end{bmatrix}, \\qquad
    J(\\theta)\\, \\Delta\\theta = -\\alpha\\, e(\\theta)

iterated (``theta <- theta (+) Delta theta``, ``pin.integrate``) until ``||e|| < eps``. The unknowns
are the passive coordinates and the positions of the actuators with *relative* encoders; actuators
listed as absolute keep their reading. The sign convention matches :mod:`passive_state` (``e`` is
"current minus target"; the paper writes the target minus the current value). With ``alpha = 1``
this is Newton's method (a backtracking line search guards the first steps). When there are more
measurements than unknowns the step is the least-squares one; when there are fewer, or the
encoders do not see every relative actuator, ``J`` is rank-deficient and calibration fails with the
unobservable actuators named.

Offsets follow the simulator's sensor model: ``offset = reading - true position`` [m] (or [rad]
for revolute actuators), zero for absolute actuators. Use :meth:`CalibrationResult.correct` to turn
readings into calibrated positions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import CalibrationError, InputError, JointNotFound, suggest
from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel

#: Relative singular-value threshold below which the augmented Jacobian is declared rank-deficient.
OBSERVABILITY_RTOL = 1e-8


@dataclass
class CalibrationConfig:
    """Parameters of :class:`EncoderCalibrator`.

    Attributes:
        alpha: step gain of ``J dtheta = -alpha e`` (1: Newton) [-].
        tolerance: stop when ``||e||_2 < tolerance`` [m, rad] (the paper's ``epsilon``), or when
            the step is shorter than it (redundant, noisy encoders: least-squares optimum).
        max_iterations: iterations before declaring non-convergence.
        max_velocity: largest actuator speed allowed in the calibration window [m/s or rad/s].
        max_position_drift: largest change of the mean actuator (and encoder) position between the
            first and the last quarter of the window [m or rad] (insensitive to white noise).
        limit_margin: a calibrated actuator position or a passive encoder reading beyond the
            model's position limits by more than this is implausible: the encoders contradict the
            closures (the iteration can converge to a configuration the mechanism cannot reach)
            [m or rad]; ``inf`` disables the check.
    """

    alpha: float = 1.0
    tolerance: float = 1e-10
    max_iterations: int = 30
    max_velocity: float = 5e-3
    max_position_drift: float = 2e-4
    limit_margin: float = 0.01

    def __post_init__(self) -> None:
        if not 0.0 < self.alpha <= 1.0:
            raise InputError(f"CalibrationConfig.alpha must be in (0, 1], got {self.alpha}")
        if not self.tolerance > 0 or not self.max_iterations >= 1:
            raise InputError("CalibrationConfig: tolerance must be > 0 and max_iterations >= 1")
        if not (self.max_velocity > 0 and self.max_position_drift > 0):
            raise InputError("CalibrationConfig: max_velocity and max_position_drift must be > 0")
        if not self.limit_margin >= 0:
            raise InputError(f"CalibrationConfig.limit_margin must be >= 0, got {self.limit_margin}")


@dataclass
class CalibrationResult:
    """Outcome of :meth:`EncoderCalibrator.calibrate`.

    Attributes:
        actuator_names: actuated joints, the order of :attr:`offsets`.
        offsets: encoder offsets ``reading - true`` [m] (or [rad]); 0 for absolute actuators.
        q: calibrated closed configuration (the estimator's initial state).
        residual_history: ``||e||_2`` before each iteration and at the end [m, rad].
        iterations: Newton iterations performed.
        encoder_residual: ``E theta - theta_m`` at the solution [rad] (noise indicator when the
            measurements are redundant; ~0 otherwise).
        closure_error: ``||e_l||_inf`` at the solution [m, rad].
        samples: number of samples averaged.
    """

    actuator_names: list[str]
    offsets: np.ndarray
    q: np.ndarray
    residual_history: list[float]
    iterations: int
    encoder_residual: np.ndarray
    closure_error: float
    samples: int

    def correct(self, readings: np.ndarray) -> np.ndarray:
        """Calibrated actuator positions ``reading - offset`` [m or rad]."""
        return np.asarray(readings, dtype=float) - self.offsets


def _drift(x: np.ndarray) -> float:
    """Largest change of the mean between the first and the last quarter of ``x`` (samples, n)."""
    k = max(1, x.shape[0] // 4)
    return float(np.max(np.abs(x[-k:].mean(axis=0) - x[:k].mean(axis=0)), initial=0.0))


class EncoderCalibrator:
    """Offsets of relative actuator encoders from passive absolute encoders (eq. (41)-(42)).

    Args:
        clm: the closed-loop model.
        absolute_encoders: passive 1-DOF joints with absolute encoders (default: the model's
            ``absolute_encoders``).
        absolute_actuators: actuators whose encoders are absolute (default: the model's
            ``absolute_actuators``).
        config: iteration and stillness parameters.

    Raises:
        JointNotFound: an encoder or actuator name the model does not have.
        CalibrationError: an encoder on a multi-DOF joint, or no relative actuator to calibrate
            is fine but no encoder at all while some actuators are relative.
    """

    def __init__(self, clm: ClosedLoopModel, absolute_encoders: Sequence[str] | None = None,
                 absolute_actuators: Sequence[str] | None = None,
                 config: CalibrationConfig | None = None) -> None:
        self.clm = clm
        self.config = config or CalibrationConfig()
        m = clm.model
        self.encoder_names = list(clm.absolute_encoders if absolute_encoders is None else absolute_encoders)
        absolute = list(clm.absolute_actuators if absolute_actuators is None else absolute_actuators)
        for n in absolute:
            if n not in clm.actuated_joint_names:
                raise JointNotFound(f"absolute actuator {n!r} is not an actuated joint."
                                    + suggest(n, clm.actuated_joint_names))
        self.is_absolute = np.array([n in absolute for n in clm.actuated_joint_names], dtype=bool)
        self.relative = np.flatnonzero(~self.is_absolute)
        self._enc_q, self._enc_v, self._enc_cont = [], [], []
        for n in self.encoder_names:
            if n not in clm.passive_joint_names:
                raise JointNotFound(f"absolute encoder {n!r} is not a passive joint."
                                    + suggest(n, clm.passive_joint_names))
            jm = m.joints[m.getJointId(n)]
            if jm.nv != 1:
                raise CalibrationError(f"absolute encoder {n!r}: joint has {jm.nv} DOFs; only 1-DOF "
                                       f"passive joints can carry an encoder")
            self._enc_q.append(jm.idx_q)
            self._enc_v.append(jm.idx_v)
            self._enc_cont.append(jm.nq == 2)  # continuous revolute: (cos, sin)
        if len(self.relative) and not self.encoder_names:
            raise CalibrationError("no absolute encoders: the offsets of the relative actuators "
                                   f"{[clm.actuated_joint_names[i] for i in self.relative]} are unobservable")
        #: unknown velocity columns: passive DOFs, then relative actuators
        self.cols = np.concatenate([clm.idx_v_u, clm.idx_v_a[self.relative]]).astype(int)

    # ------------------------------------------------------------------ helpers
    def encoder_positions(self, q: np.ndarray) -> np.ndarray:
        """Angles of the encoded passive joints in ``q`` [rad] (or [m])."""
        out = np.empty(len(self._enc_q))
        for i, (iq, cont) in enumerate(zip(self._enc_q, self._enc_cont)):
            out[i] = np.arctan2(q[iq + 1], q[iq]) if cont else q[iq]
        return out

    def _residual(self, q: np.ndarray, theta_m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e_l, J_l = self.clm.error_and_jacobian(q)
        d = self.encoder_positions(q) - theta_m
        d = np.where(self._enc_cont, np.arctan2(np.sin(d), np.cos(d)), d)
        E = np.zeros((len(self._enc_v), self.clm.model.nv))
        E[np.arange(len(self._enc_v)), self._enc_v] = 1.0
        e = np.concatenate([e_l, d])
        J = np.vstack([J_l, E])[:, self.cols]
        return e, J

    def _check_rank(self, J: np.ndarray) -> None:
        n_unknown = J.shape[1]
        if J.shape[0] < n_unknown:
            raise CalibrationError(
                f"missing encoders: {J.shape[0] - self.clm.n_c} encoder rows for {len(self.relative)} relative "
                f"actuators ({n_unknown} unknowns, {J.shape[0]} equations)")
        _, s, Vt = np.linalg.svd(J)
        rank = int(np.sum(s > OBSERVABILITY_RTOL * s[0])) if s.size else 0
        if rank < n_unknown:
            null = Vt[rank:]
            weight = np.linalg.norm(null[:, self.clm.n_u:], axis=0)
            names = [self.clm.actuated_joint_names[self.relative[i]] for i in np.flatnonzero(weight > 1e-6)]
            raise CalibrationError(
                f"missing encoders: the offsets of {names or 'some actuators'} are unobservable with the "
                f"encoders {self.encoder_names} (augmented Jacobian rank {rank} < {n_unknown} unknowns)")

    def _check_limits(self, theta_true: np.ndarray, theta_m: np.ndarray) -> None:
        """CalibrationError if a calibrated actuator position or an encoder reading lies outside
        the model's position limits by more than ``limit_margin``."""
        margin = self.config.limit_margin
        if not np.isfinite(margin):
            return
        clm = self.clm
        lo, hi = clm.model.lowerPositionLimit, clm.model.upperPositionLimit
        checks = [("actuator", n, theta_true[i], clm.idx_q_a[i]) for i, n in enumerate(clm.actuated_joint_names)]
        checks += [("passive encoder", n, x, iq)
                   for n, x, iq, cont in zip(self.encoder_names, theta_m, self._enc_q, self._enc_cont) if not cont]
        bad = [f"{kind} {n} at {x:.4g} outside [{lo[iq]:.4g}, {hi[iq]:.4g}]" for kind, n, x, iq in checks
               if lo[iq] < hi[iq] and not lo[iq] - margin <= x <= hi[iq] + margin]
        if bad:
            more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
            raise CalibrationError(f"implausible calibration (encoders inconsistent with the closures): "
                                   f"{'; '.join(bad[:3])}{more} (margin {margin:g})")

    def _window(self, x: np.ndarray, n: int, what: str) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[None, :]
        if x.ndim != 2 or x.shape[1] != n or x.shape[0] == 0:
            raise InputError(f"{what} has shape {x.shape}, expected (samples, {n})")
        if not np.all(np.isfinite(x)):
            raise CalibrationError(f"{what} contains non-finite values")
        return x

    # ------------------------------------------------------------------ main
    def calibrate(self, actuator_positions: np.ndarray, encoder_positions: Mapping[str, np.ndarray | float],
                  actuator_velocities: np.ndarray | None = None,
                  q_guess: np.ndarray | None = None) -> CalibrationResult:
        """Compute the encoder offsets from a window of samples taken at rest.

        Args:
            actuator_positions: encoder readings, shape (samples, n_a) or (n_a,) [m or rad],
                in the order of ``clm.actuated_joint_names``.
            encoder_positions: passive absolute encoder readings by joint name, each a scalar or
                an array of samples [rad].
            actuator_velocities: actuator velocities over the window, (samples, n_a) [m/s];
                checked against ``max_velocity`` when given.
            q_guess: initial configuration (default: the model's closed reference).

        Raises:
            CalibrationError: the robot moves over the window, an encoder is missing or the
                offsets are unobservable, the iteration does not converge, or the solution lies
                outside the position limits (``limit_margin``).
        """
        cfg, clm = self.config, self.clm
        theta_bar = self._window(actuator_positions, clm.n_a, "actuator_positions")
        missing = [n for n in self.encoder_names if n not in encoder_positions]
        if missing:
            raise CalibrationError(f"missing encoders: no reading for {missing} (got {sorted(encoder_positions)})")
        enc = [np.atleast_1d(np.asarray(encoder_positions[n], dtype=float)) for n in self.encoder_names]
        if any(not np.all(np.isfinite(x)) or x.size == 0 for x in enc):
            raise CalibrationError("passive encoder readings are empty or non-finite")
        drift = max(_drift(theta_bar), max((_drift(x[:, None]) for x in enc), default=0.0))
        if drift > cfg.max_position_drift:
            raise CalibrationError(
                f"robot moving during calibration: mean position drifts by {drift:.2e} > "
                f"{cfg.max_position_drift:.1e} over the window")
        if actuator_velocities is not None:
            vel = self._window(actuator_velocities, clm.n_a, "actuator_velocities")
            v_max = float(np.max(np.abs(vel)))
            if v_max > cfg.max_velocity:
                raise CalibrationError(f"robot moving during calibration: actuator speed {v_max:.2e} > "
                                       f"{cfg.max_velocity:.1e}")
        theta_mean = theta_bar.mean(axis=0)
        theta_m = np.array([x.mean() for x in enc])

        q = clm.check_configuration(clm.q_ref if q_guess is None else q_guess).copy()
        q[clm.idx_q_a[self.is_absolute]] = theta_mean[self.is_absolute]
        for iq, cont, val in zip(self._enc_q, self._enc_cont, theta_m):
            if cont:
                q[iq], q[iq + 1] = np.cos(val), np.sin(val)
            else:
                q[iq] = val
        m = clm.model
        dv = np.zeros(m.nv)
        e, J = self._residual(q, theta_m)
        self._check_rank(J)
        history = [float(np.linalg.norm(e))]
        it = 0
        while history[-1] >= cfg.tolerance:
            if it >= cfg.max_iterations:
                raise CalibrationError(
                    f"calibration did not converge in {it} iterations: ||e|| = {history[-1]:.3e} >= "
                    f"{cfg.tolerance:.1e} (history {[f'{h:.1e}' for h in history[-5:]]})")
            step = -cfg.alpha * np.linalg.lstsq(J, e, rcond=None)[0]
            if float(np.linalg.norm(step)) < cfg.tolerance:
                break  # redundant encoders: least-squares optimum reached with ||e|| > 0
            it += 1
            t = 1.0
            while True:  # backtracking on ||e||
                dv[:] = 0.0
                dv[self.cols] = t * step
                q_new = pin.integrate(m, q, dv)
                e_new, J_new = self._residual(q_new, theta_m)
                n_new = float(np.linalg.norm(e_new))
                if n_new < history[-1] or t < 1e-3 or not np.isfinite(n_new):
                    break
                t *= 0.5
            if not np.isfinite(n_new):
                raise CalibrationError("calibration diverged (non-finite closure error)")
            q, e, J = q_new, e_new, J_new
            history.append(n_new)
        theta_true = q[clm.idx_q_a]
        self._check_limits(theta_true, theta_m)
        offsets = np.where(self.is_absolute, 0.0, theta_mean - theta_true)
        e_l = clm.closure_error(q)
        return CalibrationResult(
            actuator_names=list(clm.actuated_joint_names), offsets=offsets, q=q, residual_history=history,
            iterations=it, encoder_residual=self.encoder_positions(q) - theta_m,
            closure_error=float(np.max(np.abs(e_l), initial=0.0)), samples=int(theta_bar.shape[0]))


__all__ = ["CalibrationConfig", "CalibrationResult", "EncoderCalibrator"]
