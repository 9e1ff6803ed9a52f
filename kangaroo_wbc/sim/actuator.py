"""The simulated ball-screw actuators and their drives (what the hardware does between the command
and the sensors; the model's equations are :mod:`kangaroo_wbc.model.ball_screw`).

Per control period, for all actuators at once (numpy over the actuators, no loop):

1. **Command path** (the drive's firmware): the commanded axial force ``F_cmd`` [N] becomes a motor
   torque reference through the *nominal* model, with the driving/back-driving efficiency and the
   friction feed-forward at the measured velocity,
   ``tau_ref = BallScrewActuators.torque_from_force(F_cmd, x_dot)``, clamped to the motor torque
   limit (``max_force_n L / (2 pi eta)``), and sent as a current reference ``i_ref = tau_ref / k_t``
   (nominal torque constant).
2. **Current loop**: first order with bandwidth ``f_c``, exact discretisation
   ``i += (1 - exp(-2 pi f_c dt)) (i_ref - i)``.
3. **Motor and screw**: the electromagnetic torque uses the *true* torque constant,
   ``tau_e = (1 + e_k) k_t i`` with a per-boot error ``e_k`` uniform in ``±torque_constant_error``;
   the axial force delivered into the linkage is the model's
   ``F = eta_m y - (Delta |y| + F_c) s(x_dot) - b x_dot`` (``y = tau_e 2 pi / L``). The rotor
   inertia is the MJCF joint's armature (``J_r (2 pi / L)^2``), so MuJoCo integrates it. The losses
   are stiff near standstill, so MuJoCo carries them: the dry part ``F_c + Delta |y|`` (bearings
   plus the driving/back-driving switch, updated every period) is the joint's ``frictionloss``, a
   constraint the solver treats implicitly (true stiction, regularised: its smooth zone takes the
   place of ``s``), the viscous part ``b`` adds to the joint's damping (implicit integrator). A
   friction force computed from the velocity and applied explicitly chatters at these slopes
   (``mu / v_s`` up to 1e5 N·s/m on a 0.5 kg reflected mass).
4. **Sensors**: the drive reports the measured current as a torque, ``k_t (i + b_i) + noise``
   (per-boot bias, white noise), i.e. ``tau_e / (1 + e_k)`` plus offset and noise; the motor
   encoder is quantised to ``L / counts_per_rev``.
"""

from __future__ import annotations

import math

import numpy as np

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.ball_screw import BallScrewActuators, screw_split, screw_torque
from kangaroo_wbc.model.compiled import compiled


@compiled
def _drive_period(params, force, velocity, tau_max, alpha, kt_ratio, current, tau_ref, saturated, ctrl, friction,
                  enabled):
    """Steps 1-3 of the module docstring for every actuator (compiled; the screw through
    :func:`~kangaroo_wbc.model.ball_screw.screw_torque`). A disabled drive's torque reference is
    zero (no friction feed-forward either): its current decays and the screw keeps its losses."""
    for i in range(force.shape[0]):
        p = params[i]
        t = screw_torque(p, force[i], velocity[i], 0.0, True, True) if enabled[i] else 0.0
        saturated[i] = abs(t) > tau_max[i]
        tau_ref[i] = min(max(t, -tau_max[i]), tau_max[i])
        current[i] += alpha[i] * (tau_ref[i] - current[i])
        ctrl[i], friction[i] = screw_split(p, kt_ratio[i] * current[i])


class ActuatorDrives:
    """Drives and ball screws of one simulated robot (module docstring).

    Args:
        model: the actuators' parameters (nominal ones and, in ``extra``, the hardware's errors).
        control_period_s: one command period [s].
    """

    def __init__(self, model: BallScrewActuators, control_period_s: float) -> None:
        if not (math.isfinite(control_period_s) and control_period_s > 0):
            raise InputError(f"control period must be > 0 [s], got {control_period_s}")
        self.model = model
        n = len(model.names)
        extra = model.extra or {}
        zeros = np.zeros(n)
        bw = extra.get("current_bandwidth_hz", np.full(n, np.inf))
        finite = np.isfinite(bw) & (bw > 0)
        #: current-loop gain per period [-] (1: the current follows its reference at once)
        self.alpha = np.where(finite, 1.0 - np.exp(-2.0 * math.pi * np.where(finite, bw, 0.0) * control_period_s), 1.0)
        self.torque_constant_error = extra.get("torque_constant_error", zeros)
        self.noise_std_nm = extra.get("current_noise_std_nm", zeros)
        self.bias_std_nm = extra.get("current_bias_std_nm", zeros)
        self.encoder_step = model.encoder_step()
        self._quantised = self.encoder_step > 0
        self._step_or_one = np.where(self._quantised, self.encoder_step, 1.0)
        self._lin = model.is_linear
        self.torque_constant_ratio = np.ones(n)  # true k_t / nominal k_t
        self.bias_nm = np.zeros(n)
        self.current_nm = np.zeros(n)  # k_t,nominal i [N·m]: what the current sensor reads, noise-free
        self.torque_reference_nm = np.zeros(n)
        self.saturated = np.zeros(n, dtype=bool)
        self._all_enabled = np.ones(n, dtype=bool)

    def boot(self, rng: np.random.Generator) -> None:
        """Per-boot draws: torque-constant errors and current-sensor biases; currents at zero."""
        n = len(self.model.names)
        self.torque_constant_ratio = 1.0 + rng.uniform(-1.0, 1.0, n) * self.torque_constant_error
        self.bias_nm = rng.standard_normal(n) * self.bias_std_nm
        self.current_nm[:] = 0.0
        self.torque_reference_nm[:] = 0.0

    @property
    def motor_torque_nm(self) -> np.ndarray:
        """True electromagnetic motor torque ``tau_e`` [N·m]."""
        return self.torque_constant_ratio * self.current_nm

    def command(self, force_n: np.ndarray, velocity_m_s: np.ndarray, ctrl: np.ndarray,
                friction_n: np.ndarray, enabled: np.ndarray | None = None) -> None:
        """One command period (steps 1-3): writes the MuJoCo actuator force ``ctrl = eta_m y`` [N]
        and the dry friction ``friction_n = F_c + Delta |y|`` [N] (MuJoCo's ``frictionloss``; the
        viscous part is the joint's damping).

        Args:
            force_n: commanded axial forces [N] (torques [N·m] for revolute actuators).
            velocity_m_s: actuator velocities at the period's start [m/s].
            enabled: per actuator, False for a drive that produces no current (a failed driver, a
                locked actuator's): its torque reference is zero whatever the command (None: all enabled).
        """
        _drive_period(self.model.params, np.asarray(force_n, dtype=float), np.asarray(velocity_m_s, dtype=float),
                      self.model.max_motor_torque_nm, self.alpha, self.torque_constant_ratio, self.current_nm,
                      self.torque_reference_nm, self.saturated, ctrl, friction_n,
                      self._all_enabled if enabled is None else np.asarray(enabled, dtype=bool))

    def measured_torque(self, rng: np.random.Generator) -> np.ndarray:
        """The current sensor's motor torque [N·m]: ``k_t (i + b_i)`` plus white noise."""
        return self.current_nm + self.bias_nm + rng.standard_normal(self.current_nm.shape[0]) * self.noise_std_nm

    def quantise(self, position: np.ndarray) -> np.ndarray:
        """Encoder readings [m] (or [rad]) rounded to the encoder's quantum, in place."""
        q = self._step_or_one
        np.copyto(position, np.round(position / q) * q, where=self._quantised)
        return position


__all__ = ["ActuatorDrives"]
