"""MuJoCo simulator of a closed-chain robot exported by :mod:`kangaroo_wbc.sim.mjcf_export`.

:class:`ClosedChainSim` is the ROS-free core of the simulated hardware interface: it takes actuator
force commands, steps MuJoCo in lockstep and returns what the hardware would publish (encoder
readings with boot offsets, motor torques, passive absolute encoders, IMU, see
:mod:`kangaroo_wbc.sim.sensors`) and, separately, the ground truth (every URDF joint, base pose and
twist, per-sole contact wrench and CoP, loop-closure violation).

Initial configurations are closed: the passive joints (and the auxiliary cut-body joints) are found
by a damped Newton iteration on the residuals of the equality constraints,

.. math::  \\Delta\\theta_u = -J_u^{+}\\, r(\\theta_a, \\theta_u)

with the actuated joints and the floating base held, ``r`` the stacked site-position (and weld
orientation) residuals and ``J_u`` their Jacobian columns of the free joints.
"""

from __future__ import annotations

import math
import sys
import threading
import time as _time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from kangaroo_wbc.errors import ClosureFkError, InputError, JointNotFound, ModelError, suggest
from kangaroo_wbc.model.ball_screw import BallScrewActuators
from kangaroo_wbc.model.block_lu import independent_blocks
from kangaroo_wbc.model.compiled import all_finite, compiled
from kangaroo_wbc.model.so3 import log3
from kangaroo_wbc.sim.actuator import ActuatorDrives
from kangaroo_wbc.sim.mjcf_export import BALL_SCREW_KEYS, CUT_JOINT_PREFIX, META_PREFIX
from kangaroo_wbc.sim.sensors import SensorConfig, SensorReadings, SensorSuite

_SLIDE = int(mujoco.mjtJoint.mjJNT_SLIDE)
_HINGE = int(mujoco.mjtJoint.mjJNT_HINGE)
_FREE = int(mujoco.mjtJoint.mjJNT_FREE)
_BOX = int(mujoco.mjtGeom.mjGEOM_BOX)
#: GIL switch interval [s] while a :meth:`Simulator.start_step` runs: the worker's few Python lines
#: between MuJoCo calls must not wait the default 5 ms for the caller's thread.
ASYNC_SWITCH_INTERVAL_S = 2e-5

#: integration step of mj_step per integrator, for the steps that reuse the sensor pass (RK4 and
#: the others evaluate the dynamics several times: always a full mj_step)
_INTEGRATORS = {int(mujoco.mjtIntegrator.mjINT_EULER): mujoco.mj_Euler,
                int(mujoco.mjtIntegrator.mjINT_IMPLICIT): mujoco.mj_implicit,
                int(mujoco.mjtIntegrator.mjINT_IMPLICITFAST): mujoco.mj_implicit}


@compiled
def clamp_forces(req, limits, applied):
    """``applied = min(max(req, -limits), limits)``; returns how many entries were clamped, or -1
    (nothing written) if ``req`` holds a non-finite value."""
    for i in range(req.shape[0]):
        if not math.isfinite(req[i]):
            return -1
    n = 0
    for i in range(req.shape[0]):
        a = min(max(req[i], -limits[i]), limits[i])
        applied[i] = a
        n += a != req[i]
    return n


#: Friction constraint of the simulated drives' actuated joints: time constant [s] and impedance.
FRICTION_SOLREF_S = 0.002
FRICTION_SOLIMP = (0.99, 0.999, 0.001, 0.5, 2.0)

#: Below this normal force [N] a sole is reported as not in contact (CoP undefined).
CONTACT_FORCE_THRESHOLD_N = 1.0


@dataclass
class CommandReport:
    """Outcome of :meth:`ClosedChainSim.set_command`.

    Attributes:
        requested: forces as requested [N] (or [N·m]) in actuator order.
        applied: forces after clamping to the actuator limits.
        clamped: names of the actuators whose request exceeded its limit.
    """

    requested: np.ndarray
    applied: np.ndarray
    clamped: list[str]


@dataclass
class ContactWrench:
    """Ground-truth floor contact on one sole, expressed in the sole frame.

    Attributes:
        force_in_sole: total contact force on the foot [N].
        torque_in_sole: total contact torque about the sole-frame origin [N·m].
        cop_in_sole: centre of pressure in the sole plane [m] (NaN when not in contact).
        in_contact: normal force above :data:`CONTACT_FORCE_THRESHOLD_N`.
        n_contacts: number of MuJoCo contact points.
    """

    force_in_sole: np.ndarray
    torque_in_sole: np.ndarray
    cop_in_sole: np.ndarray
    in_contact: bool
    n_contacts: int


@dataclass
class GroundTruth:
    """Simulator ground truth at one tick (never available on the robot).

    Attributes:
        time: simulation time [s].
        joint_names: URDF joint names (movable joints, MJCF order).
        joint_positions: [rad] or [m].
        joint_velocities: [rad/s] or [m/s].
        base_position_in_world: root link position [m].
        base_orientation_xyzw: root link orientation, quaternion ``x, y, z, w``.
        base_linear_velocity_in_world: [m/s].
        base_angular_velocity_in_base: [rad/s].
        contacts: sole frame name → :class:`ContactWrench`.
        actuator_forces: applied actuator forces [N] (or [N·m]).
        max_closure_violation_m: largest position residual of the loop-closure equalities [m].
        max_closure_violation_rad: largest orientation residual of the weld equalities [rad].
    """

    time: float
    joint_names: list[str]
    joint_positions: np.ndarray
    joint_velocities: np.ndarray
    base_position_in_world: np.ndarray
    base_orientation_xyzw: np.ndarray
    base_linear_velocity_in_world: np.ndarray
    base_angular_velocity_in_base: np.ndarray
    contacts: dict[str, ContactWrench]
    actuator_forces: np.ndarray
    max_closure_violation_m: float
    max_closure_violation_rad: float

    def joint_position(self, name: str) -> float:
        """Position of one joint by URDF name."""
        try:
            return float(self.joint_positions[self.joint_names.index(name)])
        except ValueError:
            raise JointNotFound(f"unknown joint {name!r}." + suggest(name, self.joint_names)) from None


@dataclass
class ClosureSolveInfo:
    """Result of the initial closure solve."""

    iterations: int
    residual: float
    converged: bool


@dataclass
class _Equality:
    name: str
    site1: int
    site2: int
    weld: bool


#: Run-time states of an actuator (:meth:`ClosedChainSim.set_actuator_mode`): driven; ``locked`` (a
#: seized screw or an engaged brake: the joint is held where it is, the motor force is zero);
#: ``limp`` (a failed driver: zero motor force, the screw still back-drivable with its losses).
ACTUATOR_MODES = ("active", "locked", "limp")
#: A locked actuator's joint limit: time constant in physics steps and (d0, dmax, width) of the
#: impedance (MuJoCo's solref / solimp of that joint while it is locked).
LOCK_TIME_CONSTANT_STEPS = 2.0
LOCK_SOLIMP = (0.99, 0.999, 0.001)


def _read_meta(model: mujoco.MjModel) -> tuple[dict[str, str], dict[str, float]]:
    texts, nums = {}, {}
    for i in range(model.ntext):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_TEXT, i) or ""
        if name.startswith(META_PREFIX):
            adr, size = model.text_adr[i], model.text_size[i]
            raw = bytes(model.text_data[adr:adr + size - 1]).decode()
            texts[name[len(META_PREFIX):]] = "" if raw == "-" else raw
    for i in range(model.nnumeric):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_NUMERIC, i) or ""
        if name.startswith(META_PREFIX):
            nums[name[len(META_PREFIX):]] = float(model.numeric_data[model.numeric_adr[i]])
    return texts, nums


class ClosedChainSim:
    """Closed-chain robot in MuJoCo with hardware-like sensors.

    Args:
        mjcf: MJCF text or path of a file written by :func:`~kangaroo_wbc.sim.mjcf_export.export_mjcf`.
        seed: seed of every random draw (encoder offsets, IMU biases, noise).
        control_period: duration of one :meth:`step` [s] (default: the MJCF timestep, 1 kHz).
        substeps: physics steps per control period (physics timestep = control_period / substeps).
        sensor_config: noise and offset parameters.
        initial_actuator_positions: true actuator positions at reset [m] or [rad] (array in actuator
            order or name → value; default: 0 clipped into each joint range).
        q_guess: name → value initial guesses of passive joints for the closure solve.
        floor_clearance_m: floating base only: height of the lowest sole point above the floor at
            reset [m].
        ideal_actuators: True: the commanded force acts on the joint as is and the motor torque
            sensor reads its eq. (47) inverse. False (default): the ball-screw actuators and drives
            of :mod:`kangaroo_wbc.sim.actuator` (losses, current loop, torque-constant error,
            current-sensor bias and noise, encoder quantisation) where the MJCF carries their
            parameters (:attr:`actuator_model`); a model without them stays ideal.
    """

    def __init__(
        self,
        mjcf: str | Path,
        *,
        seed: int = 0,
        control_period: float | None = None,
        substeps: int = 1,
        sensor_config: SensorConfig | None = None,
        initial_actuator_positions: Sequence[float] | Mapping[str, float] | None = None,
        q_guess: Mapping[str, float] | None = None,
        floor_clearance_m: float = 0.0,
        ideal_actuators: bool = False,
    ) -> None:
        text = str(mjcf)
        try:
            if "<mujoco" in text:
                self.model = mujoco.MjModel.from_xml_string(text)
            else:
                self.model = mujoco.MjModel.from_xml_path(str(Path(text)))
        except ValueError as exc:
            raise ModelError(f"MuJoCo could not load the model: {exc}") from exc
        if substeps < 1:
            raise InputError(f"substeps must be >= 1, got {substeps}")
        m = self.model
        if control_period is None:
            control_period = float(m.opt.timestep)
        if not (math.isfinite(control_period) and control_period > 0):
            raise InputError(f"control_period must be > 0 [s], got {control_period}")
        m.opt.timestep = control_period / substeps
        self.substeps = int(substeps)
        self.data = mujoco.MjData(m)
        self._meta, self._nums = _read_meta(m)
        self._init_names()
        self._init_equalities()
        self._init_soles()
        leads = np.array([self._nums.get(f"screw_lead_m:{n}", np.nan) for n in self.actuator_names])
        effs = np.array([self._nums.get(f"screw_efficiency:{n}", np.nan) for n in self.actuator_names])
        absolute = self._meta.get("absolute_actuators", "").split()
        self.sensors = SensorSuite(self.actuator_names, self._act_is_linear, absolute, leads, effs,
                                   self.passive_encoder_names, sensor_config or SensorConfig())
        self.force_limits = np.array([m.actuator_forcerange[i, 1] if m.actuator_forcelimited[i]
                                      else m.actuator_ctrlrange[i, 1] for i in range(m.nu)])
        self._init_actuators(leads, effs, bool(ideal_actuators))
        self._q_guess = dict(q_guess or {})
        self._floor_clearance = float(floor_clearance_m)
        self._initial_theta = self._theta_from(initial_actuator_positions)
        self._wall_time = 0.0
        self._sim_time_stepped = 0.0
        # start_step's worker: (go, done, [error])
        self._async: tuple[threading.Lock, threading.Lock, list[BaseException | None]] | None = None
        self._async_busy = False
        self._async_t0 = 0.0
        self._switch_interval = sys.getswitchinterval()
        self.last_closure_solve: ClosureSolveInfo | None = None
        self._modes = ["active"] * m.nu
        self._driven: np.ndarray | None = None  # 1 for a driven actuator, 0 else (None: all driven)
        self._joint_limits = (m.jnt_limited[self._act_joint].copy(), m.jnt_range[self._act_joint].copy(),
                              m.jnt_solref[self._act_joint].copy(), m.jnt_solimp[self._act_joint].copy())
        self.reset(seed)

    # ------------------------------------------------------------------ construction helpers
    def _init_actuators(self, leads: np.ndarray, effs: np.ndarray, ideal: bool) -> None:
        """The actuators' ball-screw model from the MJCF metadata (:attr:`actuator_model`) and, unless
        ``ideal`` or the metadata has none of the dynamics entries, their drives (:attr:`drives`):
        MuJoCo's actuators then take the drives' force plus a velocity gain (affine bias) and no
        longer clamp (the drives limit the motor torque)."""
        m, cfg = self.model, self.sensors.config
        # values: numbers, or None where the metadata has no entry (from_entries then takes the default)
        entries: dict[str, dict[str, Any]] = {
            n: {k: self._nums[f"{k}:{n}"] for k in BALL_SCREW_KEYS if f"{k}:{n}" in self._nums}
            for n in self.actuator_names}
        for n, lead, eff in zip(self.actuator_names, leads, effs):
            entries[n].update(screw_lead_m=None if np.isnan(lead) else lead, screw_efficiency=None if np.isnan(eff)
                              else eff)
            entries[n].setdefault("max_force_n", float(self.force_limits[self.actuator_names.index(n)]))
        #: the actuators' ball-screw parameters (nominal), :class:`~kangaroo_wbc.model.ball_screw.BallScrewActuators`
        self.actuator_model = BallScrewActuators.from_entries(
            self.actuator_names, self._act_is_linear, entries, default_screw_lead_m=cfg.default_screw_lead_m,
            default_screw_efficiency=cfg.default_screw_efficiency, source="MJCF actuator metadata")
        dynamics = any(k in e for e in entries.values() for k in BALL_SCREW_KEYS if k != "max_force_n")
        #: the simulated drives (None: ideal actuators)
        self.drives: ActuatorDrives | None = None
        if ideal or not dynamics:
            return
        self.drives = ActuatorDrives(self.actuator_model, float(m.opt.timestep) * self.substeps)
        m.actuator_ctrllimited[:] = 0
        m.actuator_forcelimited[:] = 0
        m.dof_damping[self._act_dadr] += self.actuator_model.viscous_friction_n_s_per_m
        # the dry friction sticks: MuJoCo's default soft friction constraint (time constant 20 ms)
        # lets a held actuator creep at ~0.2 mm/s within its friction band
        m.dof_solref[self._act_dadr] = (max(FRICTION_SOLREF_S, 2.0 * float(m.opt.timestep)), 1.0)
        m.dof_solimp[self._act_dadr] = FRICTION_SOLIMP
        self._friction = np.zeros(m.nu)

    @property
    def ideal_actuators(self) -> bool:
        """True if the commanded forces act as they are (no drive model)."""
        return self.drives is None

    def _apply_command(self) -> None:
        """The held command into MuJoCo's controls for one control period (through the drives)."""
        d = self.data
        command = self._command if self._driven is None else self._command * self._driven
        if self.drives is None:
            d.ctrl[:] = command
            return
        self.drives.command(command, d.qvel[self._act_dadr], d.ctrl, self._friction,
                            None if self._driven is None else self._driven > 0.0)
        self.model.dof_frictionloss[self._act_dadr] = self._friction

    def _init_names(self) -> None:
        m = self.model
        self.actuator_names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, i) for i in range(m.nu)]
        jnt_names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) or "" for j in range(m.njnt)]
        self._act_joint = np.array([m.actuator_trnid[i, 0] for i in range(m.nu)], dtype=int)
        for i, j in enumerate(self._act_joint):
            if int(m.actuator_trntype[i]) != int(mujoco.mjtTrn.mjTRN_JOINT) or \
                    int(m.jnt_type[j]) not in (_SLIDE, _HINGE):
                raise ModelError(f"actuator {self.actuator_names[i]!r} must drive a 1-DOF joint")
        self._act_is_linear = np.array([int(m.jnt_type[j]) == _SLIDE for j in self._act_joint])
        self._act_qadr = m.jnt_qposadr[self._act_joint]
        self._act_dadr = m.jnt_dofadr[self._act_joint]
        self._stroke_damping0: np.ndarray | None = None  # the model's own (set_stroke_damping)
        self.floating_base = bool(m.njnt and int(m.jnt_type[0]) == _FREE)
        self._held_base: np.ndarray | None = None
        urdf = self._meta.get("urdf_joints")
        one_dof = [n for j, n in enumerate(jnt_names)
                   if int(m.jnt_type[j]) in (_SLIDE, _HINGE)]
        self.joint_names = urdf.split() if urdf else [n for n in one_dof if not n.startswith(CUT_JOINT_PREFIX)]
        self._joint_id = {n: mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) for n in self.joint_names}
        missing = [n for n, j in self._joint_id.items() if j < 0]
        if missing:
            raise ModelError(f"joints {missing} listed in the metadata are not in the MJCF")
        self._jnt_qadr = np.array([m.jnt_qposadr[self._joint_id[n]] for n in self.joint_names], dtype=int)
        self._jnt_dadr = np.array([m.jnt_dofadr[self._joint_id[n]] for n in self.joint_names], dtype=int)
        self.passive_encoder_names = self._meta.get("absolute_encoders", "").split()
        for n in self.passive_encoder_names:
            if n not in self._joint_id:
                raise JointNotFound(f"absolute encoder on unknown joint {n!r}." + suggest(n, self.joint_names))
        self._enc_qadr = np.array([m.jnt_qposadr[self._joint_id[n]] for n in self.passive_encoder_names], dtype=int)
        # free DOFs of the closure solve: everything except actuated joints and the floating base
        held = set(self._act_dadr.tolist()) | (set(range(6)) if self.floating_base else set())
        self._solve_dofs = np.array([d for d in range(m.nv) if d not in held], dtype=int)
        self._root_body = 1
        self._imu_sensors = None  # sensordata addresses of the orientation, gyro and accelerometer
        if self._meta.get("imu", ""):
            ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, n)
                   for n in ("imu_orientation", "imu_gyro", "imu_accelerometer")]
            if min(ids) >= 0:
                self._imu_sensors = [int(m.sensor_adr[i]) for i in ids]

    def _init_equalities(self) -> None:
        m = self.model
        self._equalities: list[_Equality] = []
        for e in range(m.neq):
            name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_EQUALITY, e) or f"eq{e}"
            if int(m.eq_type[e]) not in (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD)):
                raise ModelError(f"equality {name!r}: only connect/weld equalities are supported")
            if int(m.eq_objtype[e]) != int(mujoco.mjtObj.mjOBJ_SITE):
                raise ModelError(f"equality {name!r}: only site-based equalities are supported")
            self._equalities.append(_Equality(name, int(m.eq_obj1id[e]), int(m.eq_obj2id[e]),
                                              int(m.eq_type[e]) == int(mujoco.mjtEq.mjEQ_WELD)))
        self._site1 = np.array([q.site1 for q in self._equalities], dtype=int)
        self._site2 = np.array([q.site2 for q in self._equalities], dtype=int)
        self._weld_idx = np.array([i for i, q in enumerate(self._equalities) if q.weld], dtype=int)
        n = len(self._equalities)
        self._n_rows = 3 * n + 3 * len(self._weld_idx)
        #: equality index -> first row of its weld orientation residual
        self._weld_row = {int(e): 3 * n + 3 * k for k, e in enumerate(self._weld_idx)}
        self._init_blocks()
        self._jp1, self._jr1, self._jp2, self._jr2 = (np.zeros((3, m.nv)) for _ in range(4))

    def _init_blocks(self) -> None:
        """Independent sub-mechanisms: equalities coupled through shared passive DOFs.

        A DOF moves the residual of an equality when it lies on the path to exactly one of its two
        sites (a common ancestor moves both sites alike). Equalities sharing such passive DOFs form
        one block; each block's ``J_u`` is solved on its own (small dense systems instead of one
        large one, see DESIGN "Where performance comes from").
        """
        m = self.model
        anc: dict[int, set[int]] = {0: set()}
        for b in range(1, m.nbody):  # parents come before children in MuJoCo
            own = set(range(int(m.body_dofadr[b]), int(m.body_dofadr[b]) + int(m.body_dofnum[b])))
            anc[b] = anc[int(m.body_parentid[b])] | own
        passive = set(self._solve_dofs.tolist())
        weld_row = self._weld_row
        moved = np.zeros((len(self._equalities), m.nv), dtype=bool)  # equality i, passive DOF moving its residual
        for i, q in enumerate(self._equalities):
            moving = anc[int(m.site_bodyid[q.site1])] ^ anc[int(m.site_bodyid[q.site2])]
            moved[i, sorted(moving & passive)] = True
        self._blocks: list[tuple[np.ndarray, np.ndarray]] = []
        for members, block_cols in independent_blocks(moved):
            rows = []
            for i in members:
                rows += [3 * i, 3 * i + 1, 3 * i + 2]
                if i in weld_row:
                    rows += [weld_row[i], weld_row[i] + 1, weld_row[i] + 2]
            if rows:  # DOFs of no equality form blocks of their own
                self._blocks.append((np.array(rows, dtype=int), block_cols))

    def _init_soles(self) -> None:
        m = self.model
        self.sole_names = self._meta.get("soles", "").split()
        # rigid group of a body: nearest ancestor-or-self with a joint (welded bodies share it)
        group = np.zeros(m.nbody, dtype=int)
        for b in range(1, m.nbody):  # parents come before children in MuJoCo
            group[b] = b if m.body_jntnum[b] else group[m.body_parentid[b]]
        self._sole_site: dict[str, int] = {}
        self._sole_geom_mask: dict[str, np.ndarray] = {}
        self._sole_box: dict[str, int] = {}
        for s in self.sole_names:
            sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, s)
            if sid < 0:
                raise ModelError(f"sole frame {s!r} has no site in the MJCF")
            self._sole_site[s] = sid
            g = group[m.site_bodyid[sid]]
            body = np.asarray(m.geom_bodyid)
            self._sole_geom_mask[s] = (body != 0) & (group[body] == g)
            self._sole_box[s] = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"{s}__box")

    def _theta_from(self, values: Sequence[float] | Mapping[str, float] | None) -> np.ndarray:
        m = self.model
        lo = np.array([m.jnt_range[j, 0] if m.jnt_limited[j] else -np.inf for j in self._act_joint])
        hi = np.array([m.jnt_range[j, 1] if m.jnt_limited[j] else np.inf for j in self._act_joint])
        theta = np.clip(m.qpos0[self._act_qadr], lo, hi)
        if isinstance(values, Mapping):
            for n, v in values.items():
                if n not in self.actuator_names:
                    raise JointNotFound(f"unknown actuator {n!r}." + suggest(n, self.actuator_names))
                theta[self.actuator_names.index(n)] = float(v)
        elif values is not None:
            theta = np.asarray(values, dtype=float).reshape(-1)
            if theta.shape != (m.nu,):
                raise InputError(f"expected {m.nu} actuator positions, got {theta.shape}")
        if not np.all(np.isfinite(theta)):
            raise InputError(f"non-finite initial actuator positions {theta}")
        return theta

    # ------------------------------------------------------------------ properties
    @property
    def n_actuators(self) -> int:
        return int(self.model.nu)

    @property
    def timestep(self) -> float:
        """Control period of one :meth:`step` [s]."""
        return float(self.model.opt.timestep * self.substeps)

    @property
    def physics_timestep(self) -> float:
        """MuJoCo integration step [s]."""
        return float(self.model.opt.timestep)

    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def real_time_factor(self) -> float:
        """Simulated time / wall-clock time spent in :meth:`step` since the last reset."""
        return self._sim_time_stepped / self._wall_time if self._wall_time > 0 else math.nan

    @property
    def command(self) -> np.ndarray:
        """Current (clamped) actuator command [N] or [N·m]."""
        return self._command.copy()

    # ------------------------------------------------------------------ reset and closure
    def reset(self, seed: int | None = None, actuator_positions: Sequence[float] | Mapping[str, float] | None = None
              ) -> ClosureSolveInfo:
        """Power-up: new encoder offsets and IMU biases, closed initial configuration at rest.

        Args:
            seed: new seed (default: keep the constructor seed sequence going).
            actuator_positions: true actuator positions (default: the constructor's).

        Raises:
            ClosureFkError: the loops could not be closed from the initial guess.
        """
        if seed is not None:
            self.seed = int(seed)
            self.rng = np.random.default_rng(self.seed)
        elif not hasattr(self, "rng"):
            self.seed = 0
            self.rng = np.random.default_rng(0)
        theta = self._initial_theta if actuator_positions is None else self._theta_from(actuator_positions)
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        d.qpos[self._act_qadr] = theta
        for n, v in self._q_guess.items():
            if n not in self._joint_id:
                raise JointNotFound(f"q_guess: unknown joint {n!r}." + suggest(n, self.joint_names))
            d.qpos[m.jnt_qposadr[self._joint_id[n]]] = float(v)
        info = self.solve_closure()
        if not info.converged:
            raise ClosureFkError(f"initial closure solve did not converge (residual {info.residual:.3e} m) "
                                 f"for actuator positions {dict(zip(self.actuator_names, theta.tolist()))}")
        if self.floating_base:
            self._place_on_floor()
        d.qvel[:] = 0.0
        self._command = np.zeros(m.nu)
        d.ctrl[:] = 0.0
        mujoco.mj_forward(m, d)
        self._fwd_state: tuple[bytes, bytes, bytes] | None = None  # the next step runs a full mj_step
        self.sensors.boot(self.rng)
        if self.drives is not None:
            self.drives.boot(self.rng)
        self._wall_time = 0.0
        self._sim_time_stepped = 0.0
        return info

    def joint_positions_by_name(self) -> dict[str, float]:
        """Current true joint positions by URDF name [rad] or [m]."""
        return {n: float(self.data.qpos[a]) for n, a in zip(self.joint_names, self._jnt_qadr)}

    def _residual(self) -> np.ndarray:
        """Stacked equality residuals, site 2 relative to site 1 in the world frame.

        Rows: the position residual of every equality [m], then the orientation residual of every
        weld [rad] (rotation vector of ``R_1^T R_2`` in world axes).
        """
        d = self.data
        n = len(self._equalities)
        r = np.empty(self._n_rows)
        r[:3 * n] = (d.site_xpos[self._site2] - d.site_xpos[self._site1]).reshape(-1)
        for k, e in enumerate(self._weld_idx):
            R1 = d.site_xmat[self._site1[e]].reshape(3, 3)
            R2 = d.site_xmat[self._site2[e]].reshape(3, 3)
            r[3 * n + 3 * k:3 * n + 3 * k + 3] = R1 @ log3(R1.T @ R2)
        return r

    def _residual_jacobian(self) -> np.ndarray:
        """Jacobian of :meth:`_residual` w.r.t. the MuJoCo velocity (orientation rows to first order)."""
        m, d = self.model, self.data
        J = np.zeros((self._n_rows, m.nv))
        for i, q in enumerate(self._equalities):
            mujoco.mj_jacSite(m, d, self._jp1, self._jr1, q.site1)
            mujoco.mj_jacSite(m, d, self._jp2, self._jr2, q.site2)
            J[3 * i:3 * i + 3] = self._jp2 - self._jp1
            if q.weld:
                k = self._weld_row[i]
                J[k:k + 3] = self._jr2 - self._jr1
        return J

    def solve_closure(self, tol: float = 1e-10, max_iter: int = 200, max_step: float = 0.5) -> ClosureSolveInfo:
        """Close the loops: Levenberg-Marquardt on the equality residuals over the passive joints.

        .. math::  \\Delta\\theta_u = -J_u^T (J_u J_u^T + \\lambda I)^{-1} r

        with ``lambda`` lowered after a step that reduces ``|r|`` and raised otherwise, and steps
        capped at ``max_step`` ([rad] or [m]) so that the iteration stays on the assembly branch
        of the initial guess. Actuated joints and the floating base are held; only ``qpos`` changes.
        """
        m, d = self.model, self.data
        cols = self._solve_dofs
        dv = np.zeros(m.nv)
        lam = 1e-6

        def evaluate() -> np.ndarray:
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            return self._residual()

        r = evaluate()
        res = float(np.max(np.abs(r))) if r.size else 0.0
        it = 0
        while res >= tol and it < max_iter and cols.size:
            it += 1
            Ju = self._residual_jacobian()[:, cols]
            A = Ju @ Ju.T
            q_old = d.qpos.copy()
            norm_old = float(np.linalg.norm(r))
            while True:
                step = -Ju.T @ np.linalg.solve(A + lam * np.eye(len(r)), r)
                nrm = float(np.linalg.norm(step))
                if nrm > max_step:
                    step *= max_step / nrm
                dv[:] = 0.0
                dv[cols] = step
                mujoco.mj_integratePos(m, d.qpos, dv, 1.0)
                r_new = evaluate()
                if float(np.linalg.norm(r_new)) < norm_old:
                    lam = max(lam * 0.1, 1e-12)
                    r = r_new
                    break
                d.qpos[:] = q_old
                lam *= 10.0
                if lam > 1e8:
                    r = evaluate()
                    break
            res = float(np.max(np.abs(r)))
            if lam > 1e8:  # stuck in a local minimum of |r|
                break
        info = ClosureSolveInfo(it, res, res < max(tol, 1e-9))
        self.last_closure_solve = info
        return info

    def _place_on_floor(self) -> None:
        """Floating base: put the lowest sole (or any collision geom) point at ``floor_clearance_m``."""
        m, d = self.model, self.data
        mujoco.mj_kinematics(m, d)
        geoms = [g for g in self._sole_box.values() if g >= 0]
        if not geoms:
            geoms = [g for g in range(m.ngeom) if m.geom_bodyid[g] != 0 and m.geom_conaffinity[g]]
        if not geoms:
            return
        z_min = math.inf
        for g in geoms:
            R = d.geom_xmat[g].reshape(3, 3)
            half = m.geom_size[g]
            if int(m.geom_type[g]) == _BOX:
                for sx in (-1, 1):
                    for sy in (-1, 1):
                        for sz in (-1, 1):
                            p = d.geom_xpos[g] + R @ (half * np.array([sx, sy, sz]))
                            z_min = min(z_min, p[2])
            else:
                z_min = min(z_min, d.geom_xpos[g][2] - float(m.geom_rbound[g]))
        d.qpos[2] += self._floor_clearance - z_min

    # ------------------------------------------------------------------ command and stepping
    def set_command(self, forces: Sequence[float] | np.ndarray | Mapping[str, float]) -> CommandReport:
        """Set the actuator forces [N] (torques [N·m] for revolute actuators) held until the next call.

        Args:
            forces: one value per actuator (actuator order) or a name → value mapping (actuators not
                named keep their current command).

        Returns:
            what was requested and applied, and which actuators were clamped to their limit.

        Raises:
            InputError: wrong size, unknown name or non-finite value (the command is left unchanged).
        """
        if isinstance(forces, Mapping):
            req = self._command.copy()
            for n, v in forces.items():
                if n not in self.actuator_names:
                    raise InputError(f"unknown actuator {n!r} in command." + suggest(n, self.actuator_names))
                try:
                    req[self.actuator_names.index(n)] = float(v)
                except (TypeError, ValueError) as exc:
                    raise InputError(f"command for {n!r} is not a number: {v!r}") from exc
        else:
            try:
                req = np.array(forces, dtype=float).reshape(-1)
            except (TypeError, ValueError) as exc:
                raise InputError(f"command is not numeric: {forces!r}") from exc
            if req.shape != (self.n_actuators,):
                raise InputError(f"command has {req.size} values, expected {self.n_actuators} "
                                 f"({self.actuator_names})")
        applied = np.empty(req.shape)
        n_clamped = clamp_forces(req, self.force_limits, applied)  # compiled: a dozen actuators
        if n_clamped < 0:
            bad = [n for n, v in zip(self.actuator_names, req) if not math.isfinite(v)]
            raise InputError(f"non-finite command for {bad}; command unchanged")
        clamped = [n for n, a, r in zip(self.actuator_names, applied, req) if a != r] if n_clamped else []
        self._command = applied
        return CommandReport(req, applied.copy(), clamped)

    @property
    def actuator_modes(self) -> dict[str, str]:
        """Each actuator's mode (:data:`ACTUATOR_MODES`), by name."""
        return dict(zip(self.actuator_names, self._modes))

    def set_actuator_mode(self, name: str, mode: str) -> None:
        """Lock, disable (``limp``) or re-enable (``active``) actuator ``name`` from the next step on.

        ``locked`` holds its joint at the present position by a joint limit on both sides (MuJoCo's
        limit constraint: the weld takes any force); ``locked`` and ``limp`` apply no motor force;
        ``active`` restores the joint's limits and the commanded force. Call it between steps (not
        while a :meth:`start_step` is under way).

        Raises:
            InputError: unknown actuator or mode.
        """
        if name not in self.actuator_names:
            raise InputError(f"unknown actuator {name!r}." + suggest(name, self.actuator_names))
        if mode not in ACTUATOR_MODES:
            raise InputError(f"unknown actuator mode {mode!r}; modes are {list(ACTUATOR_MODES)}")
        i = self.actuator_names.index(name)
        m, j = self.model, self._act_joint[i]
        self._modes[i] = mode
        if mode == "locked":
            x = float(self.data.qpos[self._act_qadr[i]])
            m.jnt_limited[j], m.jnt_range[j] = 1, (x, x)
            # a seized screw is rigid: the stiffest limit the step resolves (time constant of two
            # steps, impedance near 1); MuJoCo's default (20 ms, 0.9-0.95) lets a loaded lock creep
            m.jnt_solref[j] = (LOCK_TIME_CONSTANT_STEPS * m.opt.timestep, 1.0)
            m.jnt_solimp[j, :3] = LOCK_SOLIMP
        else:
            m.jnt_limited[j], m.jnt_range[j] = self._joint_limits[0][i], self._joint_limits[1][i]
            m.jnt_solref[j], m.jnt_solimp[j] = self._joint_limits[2][i], self._joint_limits[3][i]
        driven = np.array([x == "active" for x in self._modes], dtype=float)
        self._driven = None if driven.all() else driven
        self._fwd_state = None

    def add_payload(self, body: str, mass_kg: float) -> None:
        """Attach (``mass_kg`` > 0) or remove (< 0) a point payload at the centre of mass of ``body``
        from the next step on: its mass changes, its CoM and rotational inertia stay (as
        :meth:`ClosedLoopModel.add_payload` does); MuJoCo's mass-dependent constants are recomputed.

        Raises:
            InputError: unknown body, or a non-finite mass or one that leaves the body without mass.
        """
        m = self.model
        b = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, body)
        if b < 0:
            names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(1, m.nbody)]
            raise InputError(f"unknown body {body!r}." + suggest(body, names))
        if not (math.isfinite(mass_kg) and m.body_mass[b] + mass_kg > 0.0):
            raise InputError(f"payload {mass_kg} kg on {body!r}: the body's mass {m.body_mass[b]:.3f} kg "
                             f"must stay > 0")
        m.body_mass[b] += mass_kg
        mujoco.mj_setConst(m, mujoco.MjData(m))  # scratch data: mj_setConst moves its data to qpos0
        self._fwd_state = None

    def step(self, n: int = 1) -> None:
        """Advance ``n`` control periods (each ``substeps`` MuJoCo steps) with the held command."""
        if n < 0:
            raise InputError(f"cannot step a negative number of periods ({n})")
        m, d = self.model, self.data
        t0 = _time.perf_counter()
        held = self._held_base
        integrate = _INTEGRATORS.get(int(m.opt.integrator))
        # The sensor pass that ended the previous step left the position and velocity stages of
        # this very state in ``data``: only the acceleration stage (actuation, constraint forces)
        # depends on the new command. Skipping the rest is what mj_step computes, bit for bit
        # (tested), unless the state was changed in between (then a full mj_step).
        fresh = integrate is not None and self.drives is None and self._forward_is_current()
        for i in range(int(n) * self.substeps):
            if i % self.substeps == 0:
                self._apply_command()
            if i == 0 and fresh:
                mujoco.mj_checkPos(m, d)
                mujoco.mj_checkVel(m, d)
                mujoco.mj_forwardSkip(m, d, mujoco.mjtStage.mjSTAGE_VEL, 1)
                mujoco.mj_checkAcc(m, d)
                assert integrate is not None  # fresh implies an integrator
                integrate(m, d)
            else:
                mujoco.mj_step(m, d)
            if held is not None:  # crane: the base is kinematically held
                d.qpos[:7] = held
                d.qvel[:6] = 0.0
        # recompute derived quantities (sensors, contacts, site poses) for the new state
        mujoco.mj_forward(m, d)
        self._mark_forward()
        self._wall_time += _time.perf_counter() - t0
        self._sim_time_stepped += n * self.timestep
        if not all_finite(d.qpos, d.qvel):
            raise ModelError(f"simulation diverged at t={d.time:.4f} s (non-finite state)")

    def start_step(self) -> None:
        """Begin one control period of :meth:`step` in a worker thread and return at once; MuJoCo
        releases the GIL, so the caller computes meanwhile (the next command, with a one-period
        delay). Until :meth:`wait_step` nothing may read or change the simulator.

        The worker runs ``mj_step`` per substep and the sensor pass (``mj_forward``): the same
        states as :meth:`step` (tested), with two MuJoCo calls to keep the GIL hand-overs few.
        """
        self.prepare_step_worker()
        if self._async_busy:
            raise InputError("start_step: the previous step is still under way (call wait_step first)")
        self._apply_command()  # here, not in the worker: one hand-over of the interpreter fewer
        self._async_busy = True
        self._async_t0 = _time.perf_counter()
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(ASYNC_SWITCH_INTERVAL_S)
        assert self._async is not None  # prepare_step_worker started the worker
        self._async[0].release()

    def wait_step(self) -> None:
        """Wait for the step begun by :meth:`start_step` (no-op if none); raises as :meth:`step`."""
        if not self._async_busy:
            return
        assert self._async is not None  # a step is under way: start_step started the worker
        go, done, error = self._async
        done.acquire()
        self._async_busy = False
        sys.setswitchinterval(self._switch_interval)
        self._wall_time += _time.perf_counter() - self._async_t0
        self._sim_time_stepped += self.timestep
        self._fwd_state = None  # the next step() recomputes every stage
        if error[0] is not None:
            exc, error[0] = error[0], None
            raise ModelError(f"simulation step failed: {exc!r}") from exc
        d = self.data
        if not all_finite(d.qpos, d.qvel):
            raise ModelError(f"simulation diverged at t={d.time:.4f} s (non-finite state)")

    def prepare_step_worker(self) -> None:
        """Start the worker thread of :meth:`start_step` if not done yet (:meth:`start_step` does it
        at its first call; call it before a timed loop)."""
        if self._async is None:
            # two locks used as binary semaphores, both taken: the caller releases ``go``, the
            # worker ``done`` (C-level locks: threading.Semaphore runs Python code under the GIL at
            # every signal, in both threads, which the caller's thread pays for)
            go, done = threading.Lock(), threading.Lock()
            go.acquire()
            done.acquire()
            self._async = (go, done, [None])
            threading.Thread(target=self._step_worker, name="mujoco-step", daemon=True).start()

    def _step_worker(self) -> None:
        assert self._async is not None  # started by prepare_step_worker after setting it
        go, done, error = self._async
        m, d = self.model, self.data
        while True:
            go.acquire()
            try:
                held = self._held_base
                for _ in range(self.substeps):
                    mujoco.mj_step(m, d)
                    if held is not None:  # crane: the base is kinematically held
                        d.qpos[:7] = held
                        d.qvel[:6] = 0.0
                mujoco.mj_forward(m, d)
            except BaseException as exc:  # noqa: BLE001 - handed to wait_step
                error[0] = exc
            done.release()

    def _mark_forward(self) -> None:
        """Remember the state whose position and velocity stages ``data`` now holds (its bytes)."""
        d = self.data
        self._fwd_state = (d.qpos.tobytes(), d.qvel.tobytes(), d.eq_active.tobytes())

    def _forward_is_current(self) -> bool:
        """True if ``data`` still holds the position and velocity stages of the last sensor pass:
        bit for bit the same ``qpos``, ``qvel`` and active equalities (no mocap bodies, no
        actuator activations)."""
        d, fwd = self.data, self._fwd_state
        return (fwd is not None and d.qpos.tobytes() == fwd[0] and d.qvel.tobytes() == fwd[1]
                and d.eq_active.tobytes() == fwd[2] and self.model.nmocap == 0 and self.model.na == 0)

    def hold_base(self, hold: bool = True) -> None:
        """Hang the floating base on a crane (held at its current pose) or release it.

        Robots are booted hanging, still, so that the encoders can be calibrated; releasing the
        crane lets the robot stand on its own. No effect on a fixed-base model.
        """
        if not self.floating_base:
            return
        self._held_base = self.data.qpos[:7].copy() if hold else None
        if hold:
            self.data.qvel[:6] = 0.0

    @property
    def base_held(self) -> bool:
        """True while the base hangs on the crane (:meth:`hold_base`)."""
        return self._held_base is not None

    # ------------------------------------------------------------------ observations
    def base_position(self) -> np.ndarray:
        """True position of the base (root link) in the world [m] (cheaper than :meth:`ground_truth`)."""
        d = self.data
        return d.qpos[0:3].copy() if self.floating_base else d.xpos[self._root_body].copy()

    def actuator_positions(self) -> np.ndarray:
        """True actuator positions [m] or [rad] (not what the encoders read)."""
        return self.data.qpos[self._act_qadr].copy()

    def set_stroke_damping(self, damping_n_s_per_m: float | np.ndarray) -> None:
        """Viscous damping [N·s/m or N·m·s/rad] on every actuator's joint on top of the model's own
        (its drive's viscous friction): a driver's velocity loop, integrated implicitly by MuJoCo
        (``implicitfast``), so it is stable at any gain — an explicit ``-k_d theta_dot`` force over
        the 1 ms step is not on an actuator whose reflected mass is small (ideal actuators: no
        rotor inertia). 0 restores the model's damping."""
        m = self.model
        if self._stroke_damping0 is None:
            self._stroke_damping0 = m.dof_damping[self._act_dadr].copy()
        m.dof_damping[self._act_dadr] = self._stroke_damping0 + damping_n_s_per_m

    def actuator_velocities(self) -> np.ndarray:
        """True actuator velocities [m/s] or [rad/s]."""
        return self.data.qvel[self._act_dadr].copy()

    def read_sensors(self) -> SensorReadings:
        """What the hardware publishes now (encoder offsets, noise, motor torques, IMU)."""
        d = self.data
        quat = gyro = acc = None
        if self._imu_sensors is not None:
            aq, ag, aa = self._imu_sensors
            # views: the sensor models read them once into new arrays (the readings)
            quat, gyro, acc = d.sensordata[aq:aq + 4], d.sensordata[ag:ag + 3], d.sensordata[aa:aa + 3]
        drives = self.drives
        r = self.sensors.read(self.rng, self.time, d.qpos[self._act_qadr], d.qvel[self._act_dadr],
                              d.actuator_force, d.qpos[self._enc_qadr], quat, gyro, acc,
                              motor_torque=None if drives is None else drives.measured_torque(self.rng))
        if drives is not None:
            drives.quantise(r.actuator_position)
        return r

    def closure_violation(self) -> tuple[float, float]:
        """Largest loop-closure residual: position [m] and weld orientation [rad]."""
        r = self._residual()
        n = len(self._equalities)
        if n == 0:
            return 0.0, 0.0
        pos = float(np.sqrt(np.max(np.sum(r[:3 * n].reshape(n, 3) ** 2, axis=1))))
        rot = float(np.sqrt(np.max(np.sum(r[3 * n:].reshape(-1, 3) ** 2, axis=1)))) if self._weld_idx.size else 0.0
        return pos, rot

    def contact_wrenches(self) -> dict[str, ContactWrench]:
        """Floor contact wrench on each sole in the sole frame (sum of MuJoCo contacts on its foot).

        The contact force of MuJoCo contact ``i`` acts on ``geom2`` along the contact normal (from
        ``geom1`` to ``geom2``); a foot that is ``geom1`` receives the opposite. Torques are taken
        about the sole-frame origin.
        """
        m, d = self.model, self.data
        n = int(d.ncon)
        out = {}
        if n and self.sole_names:
            con = d.contact
            geom1 = np.asarray(con.geom1[:n])
            geom2 = np.asarray(con.geom2[:n])
            active = np.asarray(con.efc_address[:n]) >= 0
            frames = np.asarray(con.frame[:n]).reshape(n, 3, 3)  # rows: normal, tangent 1, tangent 2
            pos = np.asarray(con.pos[:n])
            f6 = np.zeros((n, 6))
            for i in np.flatnonzero(active):
                mujoco.mj_contactForce(m, d, int(i), f6[i])
            f_w = np.einsum("nji,nj->ni", frames, f6[:, :3])
            t_w = np.einsum("nji,nj->ni", frames, f6[:, 3:])
        for s in self.sole_names:
            R = d.site_xmat[self._sole_site[s]].reshape(3, 3)
            f = np.zeros(3)
            t = np.zeros(3)
            count = 0
            if n:
                mask = self._sole_geom_mask[s]
                sign = np.where(mask[geom2], 1.0, np.where(mask[geom1], -1.0, 0.0)) * active
                sel = np.flatnonzero(sign)
                count = int(sel.size)
                if count:
                    fs = sign[sel, None] * f_w[sel]
                    ts = sign[sel, None] * t_w[sel]
                    r = pos[sel] - d.site_xpos[self._sole_site[s]]
                    f = R.T @ fs.sum(axis=0)
                    t = R.T @ (np.cross(r, fs).sum(axis=0) + ts.sum(axis=0))
            in_contact = bool(f[2] > CONTACT_FORCE_THRESHOLD_N)
            cop = np.array([-t[1] / f[2], t[0] / f[2], 0.0]) if in_contact else np.full(3, np.nan)
            out[s] = ContactWrench(f, t, cop, in_contact, count)
        return out

    def ground_truth(self) -> GroundTruth:
        """Everything the simulator knows (for tests, benchmarks and ``sim/ground_truth/*``)."""
        d = self.data
        pos = self.base_position()
        if self.floating_base:
            qw, lin, ang = d.qpos[3:7].copy(), d.qvel[0:3].copy(), d.qvel[3:6].copy()
        else:
            qw, lin, ang = d.xquat[self._root_body].copy(), np.zeros(3), np.zeros(3)
        qw /= np.linalg.norm(qw)
        viol_m, viol_rad = self.closure_violation()
        return GroundTruth(
            time=self.time,
            joint_names=list(self.joint_names),
            joint_positions=d.qpos[self._jnt_qadr].copy(),
            joint_velocities=d.qvel[self._jnt_dadr].copy(),
            base_position_in_world=pos,
            base_orientation_xyzw=np.array([qw[1], qw[2], qw[3], qw[0]]),
            base_linear_velocity_in_world=lin,
            base_angular_velocity_in_base=ang,
            contacts=self.contact_wrenches(),
            actuator_forces=d.actuator_force.copy(),
            max_closure_violation_m=viol_m,
            max_closure_violation_rad=viol_rad,
        )

    @property
    def total_mass_kg(self) -> float:
        """Mass of the robot [kg] (all bodies but the world)."""
        return float(np.sum(self.model.body_mass[1:]))

    # ------------------------------------------------------------------ model-based helpers
    def mapping_jacobian(self) -> np.ndarray:
        """``J_m`` of the current configuration, ``theta_dot_u = J_m theta_dot_a`` (eq. (7)).

        Computed on the MuJoCo model from the equality Jacobian ``J = [J_a  J_u]`` (the floating base
        held), block by independent sub-mechanism: ``J_m = -J_u^+ J_a``; rows are the passive and
        cut-body DOFs.
        """
        J = self._residual_jacobian()
        row_of = {int(d): i for i, d in enumerate(self._solve_dofs)}
        J_m = np.zeros((len(self._solve_dofs), len(self._act_dadr)))
        for rows, cols in self._blocks:
            if cols.size == 0:
                continue
            Jb = J[rows]
            sol = np.linalg.lstsq(Jb[:, cols], Jb[:, self._act_dadr], rcond=1e-10)[0]
            J_m[[row_of[int(c)] for c in cols]] = -sol
        return J_m

    def actuator_bias_forces(self) -> np.ndarray:
        """Actuator forces balancing MuJoCo's bias forces (gravity + Coriolis) with the base held.

        .. math::  \\tau_a = b_a + J_m^T b_u = b_a - \\sum_k J_{a,k}^T J_{u,k} (J_{u,k}^T J_{u,k})^{-1} b_{u,k}

        (eq. (14)-(18) of the Kangaroo paper: passive generalised forces mapped to the actuators),
        one small solve per independent sub-mechanism ``k``, no explicit ``J_m``.
        """
        b = self.data.qfrc_bias
        J = self._residual_jacobian()
        tau = b[self._act_dadr].copy()
        for rows, cols in self._blocks:
            if cols.size == 0:
                continue
            Jb = J[rows]
            Ju = Jb[:, cols]
            A = Ju.T @ Ju
            A[np.diag_indices_from(A)] += 1e-12 * max(1.0, float(np.trace(A)))
            z = np.linalg.solve(A, b[cols])
            tau -= Jb[:, self._act_dadr].T @ (Ju @ z)
        return tau

