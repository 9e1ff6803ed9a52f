"""Actuator forces from measured motor torques, beyond eq. (47) of the Kangaroo paper.

The paper turns the measured motor torque into the axial force with the ideal screw,
``tau_bar = tau_m 2 pi eta / L`` (eq. (47)). A real ball-screw actuator differs
(:mod:`kangaroo_wbc.model.ball_screw`): efficiency ``eta`` when driving and ``eta' < eta`` when
back-driven, bearing friction, the rotor's inertia reflected through the screw, and a current
sensor with an offset. :class:`ActuatorForceEstimator` inverts that model, each part switchable
(:class:`ActuatorCompensation`) so that it can be measured against the plain eq. (47):

* ``actuator_model``: the driving/back-driving switch and the Coulomb + viscous friction at the
  measured actuator velocity, ``F = eta_m y - (Delta |y| + F_c) s(x_dot) - b x_dot``;
* ``rotor_inertia``: ``- m_r x_ddot`` with ``m_r = J_r (2 pi / L)^2`` and the actuator acceleration
  from the passive-state estimator's actuator velocities (a one-tick difference; the wrench
  estimator's 5 Hz Butterworth filters the result with the other inputs);
* ``torque_bias``: a per-actuator motor-torque offset ``b_tau`` learnt online while the robot stands
  still on both soles (:meth:`ActuatorForceEstimator.update_bias`). The known support gives the
  information: with the floating-base rows the wrench estimator over-determines the sole wrenches
  (weight and momentum balance), and the residual of its actuated rows,
  ``r = J_c,m^T f - (g_p,a - tau_bar)``, is what the actuators' forces disagree with the rest by.
  Were ``f`` exact, ``r`` would be the force offset itself; the least-squares ``f`` leaves its
  component outside the six directions the base rows fix. The estimate follows ``r`` with time
  constant ``bias_time_constant_s`` (converted to motor torque by ``dF/dtau = eta_m 2 pi / L``),
  ``b_tau += dt / T_b * r / (eta_m 2 pi / L)``, and stays frozen whenever the robot moves, a sole is
  unloaded or the base rows are off (no information then).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.ball_screw import BallScrewActuators
from kangaroo_wbc.model.compiled import compiled


@dataclass
class ActuatorCompensation:
    """Which parts of the actuator model the estimator inverts, and the bias learning.

    Attributes:
        actuator_model: driving/back-driving efficiency switch and friction (False: eq. (47)).
        rotor_inertia: subtract the reflected rotor inertia times the actuator acceleration.
        torque_bias: learn and subtract a per-actuator motor-torque offset while standing still.
        bias_time_constant_s: time constant of the bias estimate [s].
        still_velocity_m_s: "still": every actuator slower than this [m/s].
        min_sole_force_n: "on both soles": every sole's estimated normal force above this [N].
        max_bias_nm: the estimate is clamped to ``±max_bias_nm`` [N·m].
        sample_rate_hz: update rate [Hz] (acceleration difference, bias step).
    """

    actuator_model: bool = True
    rotor_inertia: bool = True
    torque_bias: bool = True
    bias_time_constant_s: float = 0.5
    still_velocity_m_s: float = 0.003
    min_sole_force_n: float = 50.0
    max_bias_nm: float = 1.0
    sample_rate_hz: float = 1000.0

    def __post_init__(self) -> None:
        for k in ("bias_time_constant_s", "still_velocity_m_s", "min_sole_force_n", "max_bias_nm", "sample_rate_hz"):
            if not getattr(self, k) > 0:
                raise InputError(f"ActuatorCompensation.{k} must be > 0, got {getattr(self, k)}")

    @classmethod
    def paper(cls) -> ActuatorCompensation:
        """Eq. (47) alone: no compensation."""
        return cls(actuator_model=False, rotor_inertia=False, torque_bias=False)


@compiled
def _bias_step(residual, velocity, normal_force, still_velocity, min_force, samples_per_tau, max_bias, gain, bias):
    """One bias step (module docstring), compiled: only while every actuator is still, every sole
    loaded and the residual finite, ``b += r / (T f_s g)`` clipped to ``max_bias``; True if it learnt."""
    for i in range(velocity.shape[0]):
        if abs(velocity[i]) > still_velocity:
            return False
    for i in range(normal_force.shape[0]):
        if normal_force[i] < min_force:
            return False
    for i in range(residual.shape[0]):
        if not np.isfinite(residual[i]):
            return False
    for i in range(bias.shape[0]):
        bias[i] = min(max(bias[i] + residual[i] / (samples_per_tau * gain[i]), -max_bias), max_bias)
    return True


class ActuatorForceEstimator:
    """Axial actuator forces [N] from motor torques [N·m] (module docstring).

    Args:
        actuators: the ball-screw parameters (nominal).
        compensation: which compensations run (default: all).
    """

    def __init__(self, actuators: BallScrewActuators, compensation: ActuatorCompensation | None = None) -> None:
        self.actuators = actuators
        self.compensation = compensation or ActuatorCompensation()
        n = len(actuators.names)
        self.bias_nm = np.zeros(n)  # learnt motor-torque offsets [N·m]
        self.acceleration = np.zeros(n)  # last actuator acceleration [m/s²]
        self.force = np.zeros(n)  # last output [N]
        self._v_prev: np.ndarray | None = None
        self._gain = actuators.mean_efficiency * actuators.torque_to_force  # dF/dtau [N/(N·m)]

    def reset(self) -> None:
        """Forget the velocity history (after a gap); the bias is kept (a property of the hardware)."""
        self._v_prev = None
        self.acceleration[:] = 0.0

    def estimate(self, motor_torque_nm: np.ndarray, velocity_m_s: np.ndarray,
                 estimated_velocity_m_s: np.ndarray | None = None) -> np.ndarray:
        """Actuator forces [N] (a buffer, overwritten at the next call).

        Args:
            motor_torque_nm: measured motor torques.
            velocity_m_s: measured actuator velocities (the friction and the switch).
            estimated_velocity_m_s: the passive-state estimator's actuator velocities, differenced
                for the acceleration (default: ``velocity_m_s``).
        """
        c, a = self.compensation, self.actuators
        tau = np.asarray(motor_torque_nm, dtype=float)
        if c.torque_bias:
            tau = tau - self.bias_nm
        accel = None
        if c.rotor_inertia:
            v_est = np.asarray(velocity_m_s if estimated_velocity_m_s is None else estimated_velocity_m_s, float)
            if self._v_prev is None:
                self._v_prev = v_est.copy()
            np.multiply(v_est - self._v_prev, c.sample_rate_hz, out=self.acceleration)
            self._v_prev[:] = v_est
            accel = self.acceleration
        self.force[:] = a.force_from_torque(tau, velocity_m_s, accel, switch=c.actuator_model,
                                            friction=c.actuator_model)
        return self.force

    def update_bias(self, residual_n: np.ndarray, velocity_m_s: np.ndarray, sole_normal_force_n: np.ndarray) -> bool:
        """One step of the bias estimate from the actuated rows' residual ``r`` [N] of the wrench
        estimate (module docstring); True if the robot was still on its soles and it learnt."""
        c = self.compensation
        return c.torque_bias and _bias_step(
            np.asarray(residual_n, dtype=float), np.asarray(velocity_m_s, dtype=float),
            np.asarray(sole_normal_force_n, dtype=float), c.still_velocity_m_s, c.min_sole_force_n,
            c.bias_time_constant_s * c.sample_rate_hz, c.max_bias_nm, self._gain, self.bias_nm)


__all__ = ["ActuatorCompensation", "ActuatorForceEstimator"]
