"""Floating-base state from the IMU and contact-aided leg kinematics.

**Orientation and angular velocity** come from the IMU (its own attitude filter), moved to the
base with the fixed IMU mounting ``R_base_imu`` read from the model:
``R_world_base = R_world_imu R_base_imu^T``, ``omega_base_in_base = R_base_imu omega_imu_in_imu``.

**Linear velocity** (leg odometry). A sole in contact does not move. With ``r`` the sole position
relative to the base origin and ``u = J^lin_joints(q) theta_dot`` the sole velocity due to the
joints, both in base axes, ``0 = v_base + omega x r + u`` gives one measurement per sole in contact:

.. math::  v_{base,i} = -\\omega \\times r_i - u_i   \\quad\\text{(base frame)}

**Position.** When a sole touches down its world position is stored (*anchor*, height optionally
snapped to a known flat ground). While it stays in contact, ``p_base = anchor_i - R_world_base r_i``
is a position measurement, so the base does not drift during stance; in flight the position is
dead-reckoned. The anchor is the mean of ``p_base + R r_i`` over the first ``anchor_window_s`` of
the contact (the sole is not a position measurement meanwhile): a single sample would freeze that
sample's IMU orientation noise, about 1 mrad times the leg length, ~1 mm, into the anchor, hence
into the base position for the whole stance.

**Filter.** A linear Kalman filter per world axis on ``x = [p, v]`` (the three axes share the same
model, so they share one 2×2 covariance):

.. math::

    x_{k+1} = \\begin{bmatrix} 1 & dt \\\\ 0 & 1 \\end{bmatrix} x_k
              + \\begin{bmatrix} dt^2/2 \\\\ dt \\end{bmatrix} a_k, \\qquad
    Q = \\sigma_a^2 \\begin{bmatrix} dt^4/4 & dt^3/2 \\\\ dt^3/2 & dt^2 \\end{bmatrix}

with ``a = R_world_imu f_imu + g`` (accelerometer specific force, lever arm neglected) or ``a = 0``
without accelerometer, then the leg-odometry velocity update (variance ``sigma_v^2 / n``) and the
anchored-position update (``sigma_p^2 / n``), ``n`` the number of soles in contact. It is a
complementary filter with a covariance-tuned crossover: the IMU carries the high frequencies,
the legs the low ones.

**Contacts** come from the estimated normal forces with hysteresis (:class:`ContactDetector`),
or are given directly by the caller.

**Held base.** While the robot hangs on the crane (boot) no sole is a fixed point, and an IMU
that is not perfectly still (or a simulated crane that holds the base kinematically while the
dynamics report an acceleration) would make the dead-reckoned position drift; the offset would stay
for good once the soles anchor it at release (horizontal position is unobservable from then on).
``update(..., held=True)`` replaces the leg updates by a zero-velocity update (variance
``held_velocity_std^2``), which keeps the boot position; the base does not rotate either, so the
mean gyro reading while held is its bias (``estimate_gyro_bias``), removed from then on (a 1 mrad/s
bias times the leg length would bias the leg-odometry velocity by ~1 mm/s).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import EstimationError, FrameNotFound, InputError, ModelError, suggest
from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel, support_mask
from kangaroo_wbc.model.compiled import all_finite, buffers, compiled
from kangaroo_wbc.model.so3 import quaternion_xyzw_into


class ContactDetector:
    """Per-sole contact flags from normal forces with hysteresis.

    A sole enters contact when its normal force rises above ``force_on_n`` and leaves it when the
    force falls below ``force_off_n`` (``force_off_n < force_on_n``).

    Args:
        n_soles: number of soles.
        force_on_n, force_off_n: thresholds [N].
        initial: initial state of every sole (standing robot: True).
    """

    def __init__(self, n_soles: int, force_on_n: float = 60.0, force_off_n: float = 30.0,
                 initial: bool = True) -> None:
        if not 0.0 <= force_off_n < force_on_n:
            raise InputError(f"ContactDetector: need 0 <= force_off_n ({force_off_n}) < force_on_n ({force_on_n}) [N]")
        self.force_on_n, self.force_off_n = float(force_on_n), float(force_off_n)
        self.state = np.full(n_soles, bool(initial))

    def update(self, normal_forces_n: np.ndarray) -> np.ndarray:
        """New contact flags from the sole normal forces [N] (NaN keeps the previous state)."""
        f = np.asarray(normal_forces_n, dtype=float)
        if f.shape != self.state.shape:
            raise InputError(f"ContactDetector: {f.shape[0] if f.ndim else 0} forces for {self.state.size} soles")
        state = self.state.copy()  # a new array: callers may keep the previous one
        on, off = self.force_on_n, self.force_off_n
        for i, x in enumerate(f.tolist()):  # a handful of soles: plain floats
            if x > on:
                state[i] = True
            elif x < off:
                state[i] = False
        self.state = state
        return state


@dataclass
class FloatingBaseConfig:
    """Noise model and options of :class:`FloatingBaseEstimator`.

    Attributes:
        accel_noise_std: process noise on the base acceleration [m/s²].
        leg_velocity_std: leg-odometry velocity noise, per sole [m/s].
        foot_position_std: anchored-foot position noise, per sole [m].
        use_accelerometer: predict with the accelerometer (else constant velocity).
        ground_height_m: height of a flat ground; anchors of soles touching down are snapped to
            it (None: keep the estimated sole height).
        gravity_m_s2: gravity magnitude [m/s²] (world z up).
        initial_position_std: initial position standard deviation [m].
        held_velocity_std: zero-velocity measurement noise while the base is held [m/s].
        estimate_gyro_bias: while the base is held, estimate the gyro bias as the mean reading.
        anchor_window_s: averaging window of a new anchor after touchdown [s] (0: first sample).
    """

    accel_noise_std: float = 1.0
    leg_velocity_std: float = 0.02
    foot_position_std: float = 0.005
    use_accelerometer: bool = True
    ground_height_m: float | None = 0.0
    gravity_m_s2: float = 9.81
    initial_position_std: float = 0.01
    held_velocity_std: float = 1e-4
    estimate_gyro_bias: bool = True
    anchor_window_s: float = 0.03

    def __post_init__(self) -> None:
        for k in ("accel_noise_std", "leg_velocity_std", "foot_position_std", "initial_position_std",
                  "held_velocity_std"):
            if not getattr(self, k) > 0:
                raise InputError(f"FloatingBaseConfig.{k} must be > 0, got {getattr(self, k)}")
        if not self.anchor_window_s >= 0:
            raise InputError(f"FloatingBaseConfig.anchor_window_s must be >= 0 [s], got {self.anchor_window_s}")


class FloatingBaseEstimator:
    """Base pose and twist from the IMU and the legs (see the module docstring).

    Args:
        clm: closed-loop model with a floating base.
        sole_frames: contact frames (origin on the sole).
        imu_frame: frame of the IMU, rigidly attached to the base link.
        config: noise model.
    """

    def __init__(self, clm: ClosedLoopModel, sole_frames: Sequence[str], imu_frame: str = "imu",
                 config: FloatingBaseConfig | None = None) -> None:
        if not clm.floating_base:
            raise ModelError("FloatingBaseEstimator needs a model with a floating base")
        self.clm, self.model = clm, clm.model
        self.own_data = clm.model.createData()
        self.config = config or FloatingBaseConfig()
        m = self.model
        names = [f.name for f in m.frames]
        for f in [*sole_frames, imu_frame]:
            if not m.existFrame(f):
                raise FrameNotFound(f"unknown frame {f!r}." + suggest(f, names))
        self.sole_frames = list(sole_frames)
        self.sole_ids = [int(m.getFrameId(f)) for f in sole_frames]
        imu = m.frames[m.getFrameId(imu_frame)]
        if imu.parentJoint != 1:
            raise ModelError(f"IMU frame {imu_frame!r} must be attached to the base link (the floating-base "
                             f"joint), it moves with joint {m.names[imu.parentJoint]!r}")
        self.R_base_imu = imu.placement.rotation.copy()
        c = len(self.sole_ids)
        self.contact = np.ones(c, dtype=bool)
        self.anchor_in_world = np.zeros((c, 3))
        self._anchor_age = np.zeros(c)  # time since touchdown [s] (anchor averaged while < window)
        self._anchor_n = np.zeros(c, dtype=int)
        #: gyro bias [rad/s] (IMU frame), estimated while the base is held
        self.gyro_bias = np.zeros(3)
        self.sole_in_base = np.zeros((c, 3))  # r_i [m]
        self.x = np.zeros((2, 3))  # [p_world; v_world]
        self.P = np.eye(2)
        self.R_world_base = np.eye(3)
        self.angular_velocity_base_in_base = np.zeros(3)
        self.initialized = False
        self.q_base = np.zeros(7)
        self.q_base[6] = 1.0
        self.v_base = np.zeros(6)
        # joint columns (base excluded) that move each sole: the support of its parent joint
        cols = [np.flatnonzero(row[6:]) + 6 for row in support_mask(m, self.sole_ids)]
        self._sole_cols = np.zeros((c, max([len(x) for x in cols], default=0)), dtype=np.int64)
        self._n_cols = np.array([len(x) for x in cols], dtype=np.int64)
        for i, x in enumerate(cols):
            self._sole_cols[i, :len(x)] = x
        self._p_soles = np.zeros((c, 3))
        self._params = np.zeros(len(_P))
        self._no_acc = np.zeros(3)
        arrays = dict(R_base_imu=self.R_base_imu, gyro_bias=self.gyro_bias, gyro_n=np.zeros(1, dtype=np.int64),
                      sole_cols=self._sole_cols, n_cols=self._n_cols, p_soles=self._p_soles, contact=self.contact,
                      x=self.x, P=self.P, anchors=self.anchor_in_world, age=self._anchor_age, count=self._anchor_n,
                      par=self._params, sole_in_base=self.sole_in_base, u=np.zeros((c, 3)), q_base=self.q_base,
                      v_base=self.v_base)
        #: the filter's state, tables and work arrays for :func:`_base_tick` (:data:`FloatingBaseBuffers`)
        self._buffers = FloatingBaseBuffers.make(**arrays)
        # compile (or load) the kernel now, not in a tick: one call on scratch copies of the state,
        # with pinocchio's own arrays (their memory layout is part of the compiled signature)
        d = self.own_data
        pin.computeJointJacobians(m, d, pin.neutral(m))
        scratch = FloatingBaseBuffers.make(**{k: a.copy() for k, a in arrays.items()})
        _base_tick(scratch, np.array([0.0, 0.0, 0.0, 1.0]), np.zeros(3), self._no_acc, d.J, d.oMi[1].rotation,
                   d.oMi[1].translation, np.zeros(m.nv), np.zeros(c, dtype=np.bool_), np.empty((3, 3)), np.empty(3))

    # ------------------------------------------------------------------ helpers
    def _orientation(self, quat_imu_xyzw: np.ndarray) -> np.ndarray:
        qn = np.asarray(quat_imu_xyzw, dtype=float)
        n = float(np.linalg.norm(qn))
        if qn.shape != (4,) or not np.isfinite(qn).all() or n < 0.5:
            raise EstimationError(f"invalid IMU orientation quaternion {qn}")
        x, y, z, w = qn / n
        R_world_imu = pin.Quaternion(w, x, y, z).toRotationMatrix()
        return R_world_imu @ self.R_base_imu.T

    def _kinematics(self, q: np.ndarray, data: pin.Data | None) -> pin.Data:
        """``data`` holding the joint Jacobians and the soles' placements at ``q`` (own data updated
        here if None: only the sole frames are placed); the sole positions into ``_p_soles``."""
        if data is None:
            data, m = self.own_data, self.model
            pin.computeJointJacobians(m, data, q)
            for i, fid in enumerate(self.sole_ids):
                self._p_soles[i] = pin.updateFramePlacement(m, data, fid).translation
        else:
            for i, fid in enumerate(self.sole_ids):
                self._p_soles[i] = data.oMf[fid].translation
        return data

    # ------------------------------------------------------------------ public
    def reset(self, q: np.ndarray, orientation_imu_xyzw: np.ndarray | None = None,
              contact: np.ndarray | None = None, data: pin.Data | None = None) -> None:
        """Initialise the pose: orientation from the IMU (default identity), ``x = y = 0`` and a
        height that puts the soles in contact on the ground (``ground_height_m``, else 0).

        ``data``: pinocchio data already holding the full-model update at ``q`` (e.g.
        :attr:`PassiveStateEstimator.data`); None computes it here.
        """
        data = self._kinematics(q, data)
        self.R_world_base = np.eye(3) if orientation_imu_xyzw is None else self._orientation(orientation_imu_xyzw)
        oMb = data.oMi[1]
        self.sole_in_base[:] = (self._p_soles - oMb.translation) @ oMb.rotation  # r_i = R_b^T (p_i - p_b)
        if contact is not None:
            self.contact[:] = np.asarray(contact, dtype=bool)
        soles_w = self.sole_in_base @ self.R_world_base.T  # R r_i, (c, 3)
        ground = self.config.ground_height_m or 0.0
        sel = self.contact if self.contact.any() else np.ones_like(self.contact)
        self.x[:] = 0.0
        self.x[0, 2] = ground - float(np.mean(soles_w[sel, 2]))
        self.anchor_in_world[:] = self.x[0] + soles_w
        self._anchor_age[:] = np.inf
        s = self.config.initial_position_std
        self.P[:] = np.diag([s * s, self.config.leg_velocity_std ** 2])
        self.initialized = True
        _write_base_state(self.x, self.R_world_base, self.angular_velocity_base_in_base, self.q_base, self.v_base)

    def update(self, q: np.ndarray, v: np.ndarray, orientation_imu_xyzw: np.ndarray,
               angular_velocity_imu_in_imu: np.ndarray, linear_acceleration_imu_in_imu: np.ndarray | None,
               contact: np.ndarray, dt_s: float, data: pin.Data | None = None, held: bool = False) -> None:
        """One tick.

        Args:
            q, v: joint state (base entries ignored).
            orientation_imu_xyzw: IMU orientation in the world, ROS order ``x, y, z, w``.
            angular_velocity_imu_in_imu: gyro [rad/s].
            linear_acceleration_imu_in_imu: specific force [m/s²] (None: no accelerometer).
            contact: per-sole contact flags.
            dt_s: time step [s].
            data: pinocchio data already holding the full-model update at ``q`` (e.g.
                :attr:`PassiveStateEstimator.data` after its update); None computes it here.
            held: the base is held still (robot hanging on the crane): zero-velocity update
                instead of the leg updates, contacts ignored (see the module docstring).

        Raises:
            EstimationError: invalid IMU sample or time step.
        """
        cfg = self.config
        if not 0.0 < dt_s < 1.0:
            raise EstimationError(f"dt_s = {dt_s} s outside (0, 1)")
        gyro = np.asarray(angular_velocity_imu_in_imu, dtype=float)
        use_acc = cfg.use_accelerometer and linear_acceleration_imu_in_imu is not None
        acc = np.asarray(linear_acceleration_imu_in_imu, dtype=float) if use_acc else self._no_acc
        if gyro.shape != (3,) or acc.shape != (3,) or not all_finite(gyro, acc):
            which = "angular velocity" if gyro.shape != (3,) or not np.isfinite(gyro).all() else "linear acceleration"
            raise EstimationError(f"invalid IMU {which}")
        quat = np.asarray(orientation_imu_xyzw, dtype=float)
        if quat.shape != (4,):
            raise EstimationError(f"invalid IMU orientation quaternion {quat}")
        contact = np.asarray(contact, dtype=np.bool_)
        if contact.shape != self.contact.shape:
            raise EstimationError(f"{contact.size} contact flags for {self.contact.size} soles")
        v = np.asarray(v, dtype=float)
        if v.shape != (self.model.nv,):
            raise EstimationError(f"v has shape {v.shape}, expected ({self.model.nv},)")
        data = self._kinematics(q, data)  # the sole placements into _p_soles too
        if not self.initialized:
            self.reset(q, orientation_imu_xyzw, contact, data)
        oMb = data.oMi[1]
        par = self._params
        par[_P_DT], par[_P_ACC_VAR], par[_P_HELD_VAR] = dt_s, cfg.accel_noise_std ** 2, cfg.held_velocity_std ** 2
        par[_P_LEG_VAR], par[_P_FOOT_VAR] = cfg.leg_velocity_std ** 2, cfg.foot_position_std ** 2
        par[_P_WINDOW], par[_P_GRAVITY] = cfg.anchor_window_s, cfg.gravity_m_s2
        par[_P_BIAS] = float(held and cfg.estimate_gyro_bias)
        par[_P_SNAP] = float(cfg.ground_height_m is not None)
        par[_P_GROUND] = cfg.ground_height_m or 0.0
        par[_P_USE_ACC], par[_P_HELD] = float(use_acc), float(held)
        R = np.empty((3, 3))
        omega_b = np.empty(3)
        ok = _base_tick(self._buffers, quat, gyro, acc, data.J, oMb.rotation, oMb.translation, v, contact, R, omega_b)
        if not ok:
            raise EstimationError(f"invalid IMU orientation quaternion {quat}")
        self.R_world_base = R
        self.angular_velocity_base_in_base = omega_b

    @property
    def position_in_world(self) -> np.ndarray:
        """Base position [m] in the world (odom) frame."""
        return self.x[0]

    @property
    def linear_velocity_in_world(self) -> np.ndarray:
        """Base linear velocity [m/s] in world axes."""
        return self.x[1]

    @property
    def position_variance(self) -> float:
        """Variance of each position coordinate [m²]."""
        return float(self.P[0, 0])

    @property
    def velocity_variance(self) -> float:
        """Variance of each velocity coordinate [m²/s²]."""
        return float(self.P[1, 1])


# indices into the kernel's parameter vector
_P = ("dt", "acc_var", "held_var", "leg_var", "foot_var", "window", "gravity", "bias", "snap", "ground", "use_acc",
      "held")
(_P_DT, _P_ACC_VAR, _P_HELD_VAR, _P_LEG_VAR, _P_FOOT_VAR, _P_WINDOW, _P_GRAVITY, _P_BIAS, _P_SNAP, _P_GROUND,
 _P_USE_ACC, _P_HELD) = range(len(_P))

#: The estimator's arrays of :func:`_base_tick`, written in place (``gyro_n``: gyro samples in the
#: bias; ``age``, ``count``: of the anchors; ``par``: indexed by ``_P_*``; ``u``: ``u_i``).
FloatingBaseBuffers = buffers("FloatingBaseBuffers", (
    "R_base_imu", "gyro_bias", "gyro_n", "sole_cols", "n_cols", "p_soles", "contact", "x", "P", "anchors", "age",
    "count", "par", "sole_in_base", "u", "q_base", "v_base"))


@compiled
def _write_base_state(x, R, omega_b, q_base, v_base):
    """``q_base = [p, quat(R) x, y, z, w]``, ``v_base = [R^T v, omega_b]`` (pinocchio's free flyer)."""
    for j in range(3):
        q_base[j] = x[0, j]
        v_base[j] = R[0, j] * x[1, 0] + R[1, j] * x[1, 1] + R[2, j] * x[1, 2]
        v_base[3 + j] = omega_b[j]
    quat = np.empty(4)
    quaternion_xyzw_into(R, quat)
    for j in range(4):
        q_base[3 + j] = quat[j]


@compiled
def _base_tick(buf, quat, gyro, acc, J, Rb, pb, v, contact_in, R, omega_b):
    """One :meth:`FloatingBaseEstimator.update` after the input checks (compiled: the filter is a few
    dozen scalars, far below the cost of as many numpy calls). Updates the state arrays of ``buf`` in
    place and writes ``R_world_base`` into ``R``, the base angular velocity into ``omega_b``; False,
    with nothing changed, for a quaternion that is not finite or of norm < 0.5."""
    R_base_imu, gyro_bias, gyro_n, par = buf.R_base_imu, buf.gyro_bias, buf.gyro_n, buf.par
    sole_cols, n_cols, p_soles, sole_in_base, u = buf.sole_cols, buf.n_cols, buf.p_soles, buf.sole_in_base, buf.u
    contact, x, P, anchors, age, count = buf.contact, buf.x, buf.P, buf.anchors, buf.age, buf.count
    held = par[_P_HELD] > 0.0
    nq = math.sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3])
    if not (math.isfinite(nq) and nq >= 0.5):
        return False
    # --- orientation: R_world_base = R_world_imu R_base_imu^T (Eigen's quaternion-to-matrix)
    qx, qy, qz, qw = quat[0] / nq, quat[1] / nq, quat[2] / nq, quat[3] / nq
    tx, ty, tz = 2.0 * qx, 2.0 * qy, 2.0 * qz
    twx, twy, twz = tx * qw, ty * qw, tz * qw
    txx, txy, txz = tx * qx, ty * qx, tz * qx
    tyy, tyz, tzz = ty * qy, tz * qy, tz * qz
    Rwi = np.empty((3, 3))
    Rwi[0, 0], Rwi[0, 1], Rwi[0, 2] = 1.0 - (tyy + tzz), txy - twz, txz + twy
    Rwi[1, 0], Rwi[1, 1], Rwi[1, 2] = txy + twz, 1.0 - (txx + tzz), tyz - twx
    Rwi[2, 0], Rwi[2, 1], Rwi[2, 2] = txz - twy, tyz + twx, 1.0 - (txx + tyy)
    for i in range(3):
        for j in range(3):
            R[i, j] = Rwi[i, 0] * R_base_imu[j, 0] + Rwi[i, 1] * R_base_imu[j, 1] + Rwi[i, 2] * R_base_imu[j, 2]
    # --- gyro bias (mean reading while held) and base angular velocity
    if par[_P_BIAS] > 0.0:
        gyro_n[0] += 1
        for j in range(3):
            gyro_bias[j] += (gyro[j] - gyro_bias[j]) / gyro_n[0]
    for i in range(3):
        omega_b[i] = (R_base_imu[i, 0] * (gyro[0] - gyro_bias[0]) + R_base_imu[i, 1] * (gyro[1] - gyro_bias[1])
                      + R_base_imu[i, 2] * (gyro[2] - gyro_bias[2]))
    # --- soles: r_i = Rb^T (p_i - p_b), u_i = Rb^T J_lin,i(joints) v_joints (world Jacobian at p_i)
    c = p_soles.shape[0]
    for i in range(c):
        px, py, pz = p_soles[i, 0], p_soles[i, 1], p_soles[i, 2]
        lx = ly = lz = 0.0
        for k in range(n_cols[i]):
            col = sole_cols[i, k]
            vc = v[col]
            lx += (J[0, col] - (py * J[5, col] - pz * J[4, col])) * vc
            ly += (J[1, col] - (pz * J[3, col] - px * J[5, col])) * vc
            lz += (J[2, col] - (px * J[4, col] - py * J[3, col])) * vc
        dx, dy, dz = px - pb[0], py - pb[1], pz - pb[2]
        for j in range(3):
            sole_in_base[i, j] = Rb[0, j] * dx + Rb[1, j] * dy + Rb[2, j] * dz
            u[i, j] = Rb[0, j] * lx + Rb[1, j] * ly + Rb[2, j] * lz
    # --- contacts (none while held) and touchdowns
    touchdown = np.zeros(c, dtype=np.bool_)
    n = 0
    for i in range(c):
        now = contact_in[i] and not held
        touchdown[i] = now and not contact[i]
        contact[i] = now
        n += now
    # --- predict
    a = np.zeros(3)
    if par[_P_USE_ACC] > 0.0:
        for i in range(3):
            a[i] = R_base_imu[i, 0] * acc[0] + R_base_imu[i, 1] * acc[1] + R_base_imu[i, 2] * acc[2]
        a0, a1, a2 = a[0], a[1], a[2]
        for i in range(3):
            a[i] = R[i, 0] * a0 + R[i, 1] * a1 + R[i, 2] * a2
        a[2] -= par[_P_GRAVITY]
    dt = par[_P_DT]
    for j in range(3):
        x[0, j] += dt * x[1, j] + 0.5 * dt * dt * a[j]
        x[1, j] += dt * a[j]
    p00, p01, p11 = P[0, 0], P[0, 1], P[1, 1]
    p00, p01 = p00 + dt * (2 * p01 + dt * p11), p01 + dt * p11
    s2 = par[_P_ACC_VAR]
    p00 += s2 * dt ** 4 / 4
    p01 += s2 * dt ** 3 / 2
    p11 += s2 * dt * dt
    if held:
        # --- zero-velocity update (H = [0 1], z = 0)
        S = p11 + par[_P_HELD_VAR]
        k0, k1 = p01 / S, p11 / S
        for j in range(3):
            y = -x[1, j]
            x[0, j] += k0 * y
            x[1, j] += k1 * y
        p00, p01, p11 = p00 - k0 * p01, p01 - k0 * p11, p11 - k1 * p11
    elif n:
        soles_w = np.empty((c, 3))  # R r_i
        for i in range(c):
            for j in range(3):
                soles_w[i, j] = (R[j, 0] * sole_in_base[i, 0] + R[j, 1] * sole_in_base[i, 1]
                                 + R[j, 2] * sole_in_base[i, 2])
        # --- leg-odometry velocity update (H = [0 1]): v_b,i = -omega x r_i - u_i, mean in world axes
        wx, wy, wz = omega_b[0], omega_b[1], omega_b[2]
        vb = np.zeros(3)
        for i in range(c):
            if contact[i]:
                rx, ry, rz = sole_in_base[i, 0], sole_in_base[i, 1], sole_in_base[i, 2]
                vb[0] += -(wy * rz - wz * ry) - u[i, 0]
                vb[1] += -(wz * rx - wx * rz) - u[i, 1]
                vb[2] += -(wx * ry - wy * rx) - u[i, 2]
        S = p11 + par[_P_LEG_VAR] / n
        k0, k1 = p01 / S, p11 / S
        for j in range(3):
            y = (R[j, 0] * vb[0] + R[j, 1] * vb[1] + R[j, 2] * vb[2]) / n - x[1, j]
            x[0, j] += k0 * y
            x[1, j] += k1 * y
        p00, p01, p11 = p00 - k0 * p01, p01 - k0 * p11, p11 - k1 * p11
        # --- anchors of new contacts (averaged over the window), then position update (H = [1 0])
        window = par[_P_WINDOW]
        n_p = 0
        zp = np.zeros(3)
        for i in range(c):
            if touchdown[i]:
                age[i] = 0.0
                count[i] = 0
            new = contact[i] and age[i] < window
            if new or touchdown[i]:
                count[i] += 1
                for j in range(3):
                    anchors[i, j] += (x[0, j] + soles_w[i, j] - anchors[i, j]) / count[i]
                if par[_P_SNAP] > 0.0:
                    anchors[i, 2] = par[_P_GROUND]
            if contact[i]:
                age[i] += dt
                if not new:
                    n_p += 1
                    for j in range(3):
                        zp[j] += anchors[i, j] - soles_w[i, j]
        if n_p:
            S = p00 + par[_P_FOOT_VAR] / n_p
            k0, k1 = p00 / S, p01 / S
            for j in range(3):
                y = zp[j] / n_p - x[0, j]
                x[0, j] += k0 * y
                x[1, j] += k1 * y
            p00, p01, p11 = p00 - k0 * p00, p01 - k0 * p01, p11 - k1 * p01
    P[0, 0], P[0, 1], P[1, 0], P[1, 1] = p00, p01, p01, p11
    _write_base_state(x, R, omega_b, buf.q_base, buf.v_base)
    return True


__all__ = ["ContactDetector", "FloatingBaseConfig", "FloatingBaseEstimator"]
