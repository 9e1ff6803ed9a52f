"""Sensor models of the simulated robot: encoders, motor torque, passive encoders, IMU.

What the hardware gives, and therefore what the simulator reports (``docs/sim.md``):

* **actuator position as the encoder reads it** [m] (or [rad] for a revolute actuator). Ball-screw
  actuators read the screw through an encoder on the motor side, so they are *relative*: at every
  boot the reading carries an unknown constant offset (drawn uniformly in ``±encoder_offset_range``).
  Actuators listed in ``absolute_actuators`` read the true position;
* actuator velocity [m/s];
* **motor torque** [N·m], the inverse of eq. (47) of the Kangaroo paper,

  .. math::  \\bar\\tau = \\tau_m \\frac{2 \\pi \\eta}{L}
             \\quad\\Longleftrightarrow\\quad
             \\tau_m = \\bar\\tau \\frac{L}{2 \\pi \\eta}

  with ``L`` the screw lead [m] and ``eta`` the screw efficiency (the force divided by
  :func:`~kangaroo_wbc.model.ball_screw.paper_gain`), plus Gaussian noise;
* absolute encoders on the passive joints listed in ``absolute_encoders`` [rad];
* IMU: orientation quaternion (``x, y, z, w``), angular velocity and linear acceleration (specific
  force, gravity included) in the IMU frame, with white noise and a per-boot constant bias.

All randomness comes from the ``numpy.random.Generator`` handed in, so a seed fixes the sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.ball_screw import paper_gain
from kangaroo_wbc.model.compiled import compiled

_EMPTY = np.zeros(0)


@compiled
def _apply(noise, theta_a, theta_dot_a, force, gain, passive, quat_wxyz, gyro, accel, boot, out):
    """:meth:`SensorSuite.read` after the draw (compiled): ``noise`` the stacked channels' noise,
    ``out`` = [position, velocity, motor torque, passive encoders, (IMU quaternion x y z w, gyro,
    accelerometer)] (no IMU: empty ``quat_wxyz``), ``gain`` the eq. (47) gains (the motor torque is
    ``force / gain``; ones: ``force`` passes), ``boot`` =
    [encoder offsets, gyro bias, accelerometer bias]. Orientation noise right-multiplies by
    ``exp(noise / 2)``, then normalises."""
    n, n_p = theta_a.shape[0], passive.shape[0]
    for i in range(n):
        out[i] = theta_a[i] + boot[i] + noise[i]
        out[n + i] = theta_dot_a[i] + noise[n + i]
        out[2 * n + i] = force[i] / gain[i] + noise[2 * n + i]
    o = 3 * n
    for i in range(n_p):
        out[o + i] = passive[i] + noise[o + i]
    if quat_wxyz.shape[0] == 0:
        return
    o += n_p
    w1, x1, y1, z1 = quat_wxyz[0], quat_wxyz[1], quat_wxyz[2], quat_wxyz[3]
    ex, ey, ez = noise[o], noise[o + 1], noise[o + 2]
    th = math.sqrt(ex * ex + ey * ey + ez * ez)
    if th < 1e-12:
        w2, x2, y2, z2 = 1.0, 0.5 * ex, 0.5 * ey, 0.5 * ez
    else:
        sn = math.sin(0.5 * th) / th
        w2, x2, y2, z2 = math.cos(0.5 * th), sn * ex, sn * ey, sn * ez
    qw = w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2
    qx = w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2
    qy = w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2
    qz = w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2
    nrm = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
    out[o], out[o + 1], out[o + 2], out[o + 3] = qx / nrm, qy / nrm, qz / nrm, qw / nrm
    for i in range(3):
        out[o + 4 + i] = gyro[i] + boot[n + i] + noise[o + 3 + i]
        out[o + 7 + i] = accel[i] + boot[n + 3 + i] + noise[o + 6 + i]


@lru_cache(maxsize=64)
def _noise_plan(stds: tuple[float, ...], sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray | None]:
    """How :meth:`SensorSuite.read` scales one standard-normal draw into its channels: the
    per-entry standard deviations of the noisy entries and where they go in the stacked channels
    (None: every entry is noisy)."""
    std = np.repeat(np.asarray(stds, dtype=float), sizes)
    noisy = np.flatnonzero(std > 0)
    return std[noisy], None if noisy.size == std.size else noisy


@dataclass
class SensorConfig:
    """Noise, bias and offset parameters of the simulated sensors (standard deviations unless noted).

    Attributes:
        encoder_offset_range_m: half-width of the uniform boot offset of relative linear encoders [m].
        encoder_offset_range_rad: same for relative encoders of revolute actuators [rad].
        actuator_position_noise_std: encoder noise [m] or [rad].
        actuator_velocity_noise_std: velocity noise [m/s] or [rad/s].
        motor_torque_noise_std: motor torque noise [N·m].
        passive_encoder_noise_std: passive absolute encoder noise [rad] (or [m]).
        imu_orientation_noise_std: orientation noise, rotation vector per axis [rad].
        gyro_noise_std: angular velocity white noise [rad/s].
        gyro_bias_std: per-boot constant gyro bias [rad/s].
        accel_noise_std: linear acceleration white noise [m/s²].
        accel_bias_std: per-boot constant accelerometer bias [m/s²].
        default_screw_lead_m: screw lead used when an actuator has none [m] (PAL's public value).
        default_screw_efficiency: screw efficiency used when an actuator has none [-].
    """

    encoder_offset_range_m: float = 0.02
    encoder_offset_range_rad: float = 0.5
    actuator_position_noise_std: float = 1e-6
    actuator_velocity_noise_std: float = 1e-4
    motor_torque_noise_std: float = 0.002
    passive_encoder_noise_std: float = 1e-4
    imu_orientation_noise_std: float = 1e-3
    gyro_noise_std: float = 2e-3
    gyro_bias_std: float = 1e-3
    accel_noise_std: float = 0.02
    accel_bias_std: float = 0.02
    default_screw_lead_m: float = 0.005
    default_screw_efficiency: float = 0.9

    def __post_init__(self) -> None:
        for k, v in self.__dict__.items():
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise InputError(f"SensorConfig.{k} must be a finite number >= 0, got {v!r}")
        if self.default_screw_lead_m <= 0 or not 0 < self.default_screw_efficiency <= 1:
            raise InputError("SensorConfig: default_screw_lead_m must be > 0 and default_screw_efficiency in (0, 1]")

    @classmethod
    def noiseless(cls) -> SensorConfig:
        """All noise and biases zero (boot offsets kept)."""
        return cls(**{k: 0.0 for k in cls.__dataclass_fields__ if k.endswith("_std")})


@dataclass
class ImuReading:
    """One IMU sample, expressed in the IMU frame.

    Attributes:
        orientation_xyzw: orientation of the IMU frame in the world, quaternion ``x, y, z, w``.
        angular_velocity_imu_in_imu: [rad/s].
        linear_acceleration_imu_in_imu: specific force (gravity included) [m/s²].
    """

    orientation_xyzw: np.ndarray
    angular_velocity_imu_in_imu: np.ndarray
    linear_acceleration_imu_in_imu: np.ndarray


@dataclass
class SensorReadings:
    """What the hardware interface publishes at one control tick.

    Attributes:
        time: simulation time [s].
        actuator_names: actuated joint names (order of every actuator array).
        actuator_position: encoder reading [m] (or [rad]); relative encoders carry a boot offset.
        actuator_velocity: [m/s] (or [rad/s]).
        motor_torque: measured motor torque [N·m] (axial force for revolute actuators: [N·m] too).
        passive_encoder_names: passive joints with absolute encoders.
        passive_encoder_position: their readings [rad] (or [m]).
        imu: the IMU sample, or None if the model has no IMU.
    """

    time: float
    actuator_names: list[str]
    actuator_position: np.ndarray
    actuator_velocity: np.ndarray
    motor_torque: np.ndarray
    passive_encoder_names: list[str]
    passive_encoder_position: np.ndarray
    imu: ImuReading | None = None


@dataclass
class SensorSuite:
    """Sensor models for one robot; :meth:`boot` draws the per-boot offsets and biases.

    Args:
        actuator_names: actuated joints.
        actuator_is_linear: per actuator, True for a prismatic (ball-screw) actuator.
        absolute_actuators: actuators whose encoder is absolute (no boot offset).
        screw_lead_m, screw_efficiency: per actuator (NaN → the config defaults); only linear
            actuators use them, revolute ones report their joint torque directly.
        passive_encoder_names: passive joints with absolute encoders.
        config: noise parameters.
    """

    actuator_names: list[str]
    actuator_is_linear: np.ndarray
    absolute_actuators: list[str]
    screw_lead_m: np.ndarray
    screw_efficiency: np.ndarray
    passive_encoder_names: list[str]
    config: SensorConfig = field(default_factory=SensorConfig)

    def __post_init__(self) -> None:
        n = len(self.actuator_names)
        self.actuator_is_linear = np.asarray(self.actuator_is_linear, dtype=bool)
        lead = np.asarray(self.screw_lead_m, dtype=float).copy()
        eff = np.asarray(self.screw_efficiency, dtype=float).copy()
        if lead.shape != (n,) or eff.shape != (n,) or self.actuator_is_linear.shape != (n,):
            raise InputError("SensorSuite: per-actuator arrays must all have one entry per actuator")
        lead[np.isnan(lead)] = self.config.default_screw_lead_m
        eff[np.isnan(eff)] = self.config.default_screw_efficiency
        if np.any(lead <= 0) or np.any(eff <= 0) or np.any(eff > 1):
            raise InputError(f"SensorSuite: screw leads must be > 0 and efficiencies in (0, 1], got {lead}, {eff}")
        self.screw_lead_m, self.screw_efficiency = lead, eff
        #: eq. (47)'s motor torque → force gains, :func:`~kangaroo_wbc.model.ball_screw.paper_gain`
        #: (1 for revolute actuators)
        self.paper_gain = paper_gain(self.actuator_is_linear, lead, eff)
        self.is_absolute = np.array([a in self.absolute_actuators for a in self.actuator_names], dtype=bool)
        self._pass = np.ones(n)  # gains of efforts that pass through (the drives' motor torques)
        self._boot = np.zeros(n + 6)  # the per-boot draws in one vector for the compiled read (views below)
        self.encoder_offset, self.gyro_bias, self.accel_bias = self._boot[:n], self._boot[n:n + 3], self._boot[n + 3:]

    # ------------------------------------------------------------------ boot
    def boot(self, rng: np.random.Generator) -> None:
        """Draw the encoder offsets of relative encoders and the IMU biases (one robot power-up)."""
        c = self.config
        half = np.where(self.actuator_is_linear, c.encoder_offset_range_m, c.encoder_offset_range_rad)
        offset = rng.uniform(-1.0, 1.0, size=len(self.actuator_names)) * half
        self.encoder_offset[:] = np.where(self.is_absolute, 0.0, offset)
        self.gyro_bias[:] = rng.normal(0.0, c.gyro_bias_std, size=3) if c.gyro_bias_std > 0 else 0.0
        self.accel_bias[:] = rng.normal(0.0, c.accel_bias_std, size=3) if c.accel_bias_std > 0 else 0.0

    # ------------------------------------------------------------------ models
    def read(self, rng: np.random.Generator, time: float, theta_a: np.ndarray, theta_dot_a: np.ndarray,
             actuator_force: np.ndarray, passive_positions: np.ndarray,
             imu_quat_wxyz: np.ndarray | None, imu_gyro: np.ndarray | None,
             imu_accel: np.ndarray | None, motor_torque: np.ndarray | None = None) -> SensorReadings:
        """Turn true quantities into sensor readings (adds offsets, biases and noise).

        ``motor_torque`` [N·m]: what the drives report (:mod:`kangaroo_wbc.sim.actuator`), used
        instead of the eq. (47) inverse of ``actuator_force`` (white noise is still added)."""
        c = self.config
        n = len(self.actuator_names)
        imu_ok = imu_quat_wxyz is not None and imu_gyro is not None and imu_accel is not None
        stds: tuple[float, ...] = (c.actuator_position_noise_std, c.actuator_velocity_noise_std,
                                   c.motor_torque_noise_std, c.passive_encoder_noise_std)
        sizes: tuple[int, ...] = (n, n, n, len(passive_positions))
        if imu_ok:
            stds += (c.imu_orientation_noise_std, c.gyro_noise_std, c.accel_noise_std)
            sizes += (3, 3, 3)
        # one draw for all noisy channels: the same numbers as one rng.normal(0, std, size) per
        # channel in this order (normal(0, s) is s times a standard normal), for a seventh of the
        # cost; scaled in one product into one buffer, the channels are views of it
        scale, noisy = _noise_plan(stds, sizes)  # cached: the configuration rarely changes
        z = rng.standard_normal(scale.shape[0])
        if noisy is None:  # every channel noisy
            full = scale * z
        else:
            full = np.zeros(sum(sizes))
            full[noisy] = scale * z
        # offsets, screw model, biases and the orientation noise in one compiled pass, into one
        # buffer whose slices are the readings (the same operations in the same order as the numpy
        # expressions they replace: the same numbers, tested)
        n_p = len(passive_positions)
        out = np.empty(3 * n + n_p + (10 if imu_ok else 0))
        quat = gyro = accel = _EMPTY
        if imu_ok:
            quat, gyro, accel = (np.asarray(x, dtype=float) for x in (imu_quat_wxyz, imu_gyro, imu_accel))
        arrays = [np.asarray(x, dtype=float) for x in (theta_a, theta_dot_a, actuator_force, passive_positions)]
        if [x.shape for x in arrays + [quat, gyro, accel]] != [(n,), (n,), (n,), (n_p,)] + (
                [(4,), (3,), (3,)] if imu_ok else [(0,)] * 3):
            raise InputError(f"SensorSuite.read: true quantities of shapes {[x.shape for x in arrays]} and IMU "
                             f"{[x.shape for x in (quat, gyro, accel)]}; expected {n} actuators, {n_p} passive "
                             f"encoders, IMU (4,), (3,), (3,)")
        theta_a, theta_dot_a, actuator_force, passive_positions = arrays
        gain = self.paper_gain
        if motor_torque is not None:  # the drives' reading, passed through (no screw conversion)
            actuator_force = np.asarray(motor_torque, dtype=float)
            if actuator_force.shape != (n,):
                raise InputError(f"SensorSuite.read: {actuator_force.shape} motor torques for {n} actuators")
            gain = self._pass
        _apply(full, theta_a, theta_dot_a, actuator_force, gain, passive_positions, quat, gyro, accel, self._boot, out)
        pos, vel, tau, passive = out[:n], out[n:2 * n], out[2 * n:3 * n], out[3 * n:3 * n + n_p]
        o = 3 * n + n_p
        imu = ImuReading(out[o:o + 4], out[o + 4:o + 7], out[o + 7:o + 10]) if imu_ok else None
        return SensorReadings(time, list(self.actuator_names), pos, vel, tau, list(self.passive_encoder_names),
                              passive, imu)
