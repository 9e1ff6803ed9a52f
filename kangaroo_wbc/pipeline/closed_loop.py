"""The whole loop in one process, without ROS: simulator → estimators → controller → simulator.

This is what the ROS 2 graph does (``sim`` → ``state_estimator`` → ``contact_wrench_estimator`` →
``whole_body_controller``), composed as plain objects stepped in lockstep at the control rate, so
that a run is deterministic for a seed and as fast as the machine allows. The controller sees only
what the hardware would give it — encoder readings with unknown boot offsets, motor torques,
passive absolute encoders and the IMU — never the simulator's ground truth, which is logged for the
metrics only.

Boot sequence (as on the robot): the robot hangs on the crane, its actuators held by a damped PD
on the raw encoder readings; after ``settle_s`` the encoder offsets are calibrated from a still
window (eq. (41)-(42)); the estimators and the controller start; the crane releases the robot at
``release_s``; the behaviour starts once the controller has balanced the robot.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from kangaroo_wbc.control.behaviours import Behaviour, BehaviourState, apply_gains, make_behaviour
from kangaroo_wbc.control.contacts import ContactSpec
from kangaroo_wbc.control.wbc import WbcSettings, WholeBodyController
from kangaroo_wbc.errors import KangarooWbcError
from kangaroo_wbc.estimation import (
    CalibrationConfig,
    ContactDetector,
    ContactWrenchEstimator,
    EncoderCalibrator,
    FloatingBaseEstimator,
    PassiveStateEstimator,
    ScrewTransmission,
)
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.fast_kinematics import all_finite
from kangaroo_wbc.robots.kangaroo.robot import SOLES, load_kangaroo, standing_actuator_positions
from kangaroo_wbc.sim.kangaroo import make_kangaroo_sim

CORNERS = ("fl", "fr", "rl", "rr")
_EMPTY = np.zeros(0)
#: CLI behaviour names → controller behaviours.
BEHAVIOUR_ALIASES = {"single_support": "weight_shift", "push": "push_recovery"}


@dataclass
class LoopConfig:
    """Timing of the boot sequence and of the run [s], and the behaviour to run."""

    behaviour: str = "stand"
    duration_s: float = 10.0
    settle_s: float = 0.3
    calibration_window_s: float = 0.1
    release_s: float = 0.6
    behaviour_start_s: float = 1.5
    seed: int = 0
    crane_kp: float = 2.0e5  # [N/m] PD on the raw encoder readings while hanging
    crane_kd: float = 2.0e3  # [N·s/m]
    fall_height_m: float = 0.6  # base below this height: fallen (standing: 0.90 m)
    push_force_n: float = 50.0  # lateral push of the "push" behaviour [N] (world +y, at the pelvis)
    push_duration_s: float = 0.1
    push_delay_s: float = 1.0  # after the behaviour starts
    behaviour_options: dict = field(default_factory=dict)
    #: False: lockstep (each command drives the very next simulator step). True: the simulator
    #: advances in a worker thread while the estimators and the controller compute (MuJoCo
    #: releases the GIL), and their command drives the step after: the one-tick transport delay of
    #: the node graph, where the simulator and the nodes are separate processes.
    pipelined: bool = False


@dataclass
class TickLog:
    """Per-tick records (one row per control tick after the controller starts)."""

    rows: dict[str, list] = field(default_factory=dict)
    #: False: nothing is kept (long runs such as the soak keep their own bounded statistics)
    enabled: bool = True

    def add(self, **values) -> None:
        if not self.enabled:
            return
        for k, v in values.items():
            self.rows.setdefault(k, []).append(v)

    def array(self, key: str) -> np.ndarray:
        return np.asarray(self.rows.get(key, []), dtype=float)


class ClosedLoopRun:
    """Simulator, estimators and whole-body controller in lockstep (see the module docstring)."""

    def __init__(self, config: LoopConfig | None = None, clm: ClosedLoopModel | None = None,
                 wbc_settings: WbcSettings | None = None) -> None:
        self.config = cfg = config or LoopConfig()
        self.clm = clm or load_kangaroo(floating_base=True)
        self.sim = make_kangaroo_sim(floating_base=True, seed=cfg.seed)
        self.dt = self.sim.timestep
        clm = self.clm
        self.soles = [SOLES["left"], SOLES["right"]]
        self._sim_to_model = np.array([self.sim.actuator_names.index(n) for n in clm.actuated_joint_names])
        self._model_to_sim = np.array([clm.actuated_joint_names.index(n) for n in self.sim.actuator_names])
        # hanging on the crane the PD-held legs creep by ~1e-4 m/s and the velocity readings are noisy:
        # a still-enough window for calibration, whose error stays at the 1e-5 m level
        self.calibrator = EncoderCalibrator(clm, config=CalibrationConfig(max_velocity=0.05, max_position_drift=1e-3))
        # the full-model update of a tick is the controller's (shared with the wrench estimator)
        self.passive = PassiveStateEstimator(clm, model_data=False)
        self.base = FloatingBaseEstimator(clm, self.soles, imu_frame="imu")
        self.wrench = ContactWrenchEstimator(clm, self.soles, ScrewTransmission.from_model(clm))
        self.contact = ContactDetector(len(self.soles))
        contacts = [ContactSpec.from_corner_frames(clm.model, side, SOLES[side],
                                                   [f"{SOLES[side]}_corner_{c}" for c in CORNERS])
                    for side in ("left", "right")]
        self.wbc = WholeBodyController(clm, contacts, wbc_settings or WbcSettings(base_frame="base_link"))
        self.behaviour: Behaviour = make_behaviour(BEHAVIOUR_ALIASES.get(cfg.behaviour, cfg.behaviour),
                                                   **cfg.behaviour_options)
        gains = getattr(self.behaviour, "gains", None)
        if gains:
            apply_gains(self.wbc, gains)
        import mujoco

        self._push_body = mujoco.mj_name2id(self.sim.model, mujoco.mjtObj.mjOBJ_BODY, "base_link")
        self.log = TickLog()
        self.calibration = None
        self.qp_failures = 0
        self.safe_mode_ticks = 0
        self.fell = False
        self.last_state = None  # (q, v, references) given to the controller at the last tick
        self._true_ids: np.ndarray | None = None
        self._true_vids: np.ndarray | None = None
        m = clm.model
        self._sole_ids = [m.getFrameId(s) for s in self.soles]
        self._corner_ids = [[m.getFrameId(f"{s}_corner_{c}") for c in CORNERS] for s in self.soles]
        self.wall_time_s = 0.0
        self._pending_tau: np.ndarray | None = None  # pipelined: the command for the next step
        self._pending_t: float | None = None  # pipelined: the time of the tick whose step is under way

    # ------------------------------------------------------------------ simulator step
    def finish(self) -> None:
        """Wait for a pipelined simulator step under way (no-op in lockstep); its error, if any, is
        raised here. :meth:`run` calls it; callers driving :meth:`tick` themselves call it before
        reading the simulator."""
        if self._pending_t is None:
            return
        t, self._pending_t = self._pending_t, None
        self.sim.wait_step()
        self._after_step(t)

    def _after_step(self, t: float) -> None:
        """Simulator events after the step of the tick at time ``t``: the crane release."""
        if self.sim.base_held and t >= self.config.release_s:
            self.sim.hold_base(False)
            # the crane carried part of the weight: wrenches estimated while hanging are not ground
            # reactions, so the filter restarts from the first free sample instead of decaying
            # from them (and the momentum rate from the first free velocity)
            self.wrench.reset_filter()

    # ------------------------------------------------------------------ helpers
    def _sensors(self):
        r = self.sim.read_sensors()
        return (r, r.actuator_position[self._sim_to_model], r.actuator_velocity[self._sim_to_model],
                r.motor_torque[self._sim_to_model])

    def _command(self, tau_model: np.ndarray) -> None:
        tau = np.asarray(tau_model, dtype=float)
        if not np.all(np.isfinite(tau)):  # never send a NaN to an actuator
            tau = np.zeros_like(tau)
        self.sim.set_command(tau[self._model_to_sim])

    def _true_v(self, gt) -> np.ndarray:
        m = self.clm.model
        if self._true_vids is None:
            self._true_vids = np.array([m.joints[m.getJointId(n)].idx_v for n in gt.joint_names])
        v = np.zeros(m.nv)
        v[self._true_vids] = gt.joint_velocities
        return v

    def _true_q(self) -> np.ndarray:
        """Ground-truth configuration (metrics only)."""
        gt = self.sim.ground_truth()
        m = self.clm.model
        if self._true_ids is None:
            self._true_ids = np.array([m.joints[m.getJointId(n)].idx_q for n in gt.joint_names])
        q = np.zeros(m.nq)
        q[:3], q[3:7] = gt.base_position_in_world, gt.base_orientation_xyzw
        q[self._true_ids] = gt.joint_positions
        return q, gt

    # ------------------------------------------------------------------ boot
    def start(self) -> None:
        """Prepare a run and :meth:`boot`; then call :meth:`tick` once per control period (what
        :meth:`run` does, for callers that drive the ticks themselves)."""
        self._data_true = self.clm.model.createData()
        self._behaviour_started = False
        if self.config.pipelined:  # the simulator's worker thread ready before the first tick
            self.sim.prepare_step_worker()
        self.boot()

    def boot(self) -> None:
        """Crane phase: hold still, calibrate the relative encoders, start the estimators."""
        cfg, sim = self.config, self.sim
        sim.hold_base(True)
        _, theta0, _, _ = self._sensors()
        n_settle = int(round(cfg.settle_s / self.dt))
        n_window = int(round(cfg.calibration_window_s / self.dt))
        thetas, vels, enc = [], [], {n: [] for n in self.calibrator.encoder_names}
        for k in range(n_settle + n_window):
            r, theta, vel, _ = self._sensors()
            self._command(cfg.crane_kp * (theta0 - theta) - cfg.crane_kd * vel)
            sim.step()
            if k >= n_settle:
                thetas.append(theta)
                vels.append(vel)
                for name, value in zip(r.passive_encoder_names, r.passive_encoder_position):
                    if name in enc:
                        enc[name].append(value)
        self.calibration = self.calibrator.calibrate(np.array(thetas), {k: np.array(v) for k, v in enc.items()},
                                                     np.array(vels))
        q0 = self.calibration.q.copy()
        r, theta, vel, _ = self._sensors()
        imu = r.imu
        # start the floating base from the IMU orientation, feet on the ground
        self.passive.reset(q0)
        contact = np.ones(len(self.soles), dtype=bool)
        self.base.reset(self.passive.q, imu.orientation_xyzw, contact)
        self._q_hold = theta

    # ------------------------------------------------------------------ one tick
    def tick(self) -> dict:
        cfg, sim, clm = self.config, self.sim, self.clm
        tw = time.perf_counter()
        self.finish()  # pipelined: the step started by the previous tick
        ts = time.perf_counter()
        t = sim.time
        r, theta_raw, vel, torque = self._sensors()
        # ground truth at the instant of the measurements (metrics only, never fed back): the
        # estimates describe this instant, the state after the step is one tick later; without
        # the report log only the base height is read (fall detection)
        if self.log.enabled:
            q_true, gt = self._true_q()
            base_z = q_true[2]
        else:
            base_z = float(sim.base_position()[2])
        if cfg.pipelined:  # the simulator steps with the previous tick's command while the nodes compute
            if self._pending_tau is not None:  # finite (checked when queued); the simulator checks again
                sim.set_command(self._pending_tau[self._model_to_sim])
            self._push(t)
            self._pending_t = t
            sim.start_step()
        theta = self.calibration.correct(theta_raw)
        t0 = time.perf_counter()
        self.passive.update(theta, vel, self.dt)
        q, v = self.passive.q_at_sample.copy(), self.passive.v.copy()
        t1 = time.perf_counter()
        imu = r.imu
        # hanging, the crane holds the base still (the boot sequence knows it): no sole is a fixed
        # point for leg odometry, whatever the wrench estimate says; zero-velocity updates instead.
        # The contact flags are the previous tick's, as in the node graph (the state estimator
        # node reads the wrench node's last message).
        self.base.update(q, v, imu.orientation_xyzw, imu.angular_velocity_imu_in_imu,
                         imu.linear_acceleration_imu_in_imu, self.contact.state.copy(), self.dt,
                         held=self.sim.base_held)
        q[:7], v[:6] = self.base.q_base, self.base.v_base
        self.passive.set_base_state(self.base.q_base, self.base.v_base)
        tb = time.perf_counter()
        # one full-model update at the estimated state, shared by the wrench estimator and the
        # controller (composable nodes in one process); if it fails the controller's step below
        # reports it, and the wrench estimator makes its own
        try:
            self.wbc.update_model(q, v)
            shared = self.wbc.pm
        except KangarooWbcError:
            shared = None
        tm = time.perf_counter()
        est = self.wrench.update(q, motor_torque=torque, v=v, projected=shared)
        self.contact.update(est.wrench_sole_in_world[:, 2])
        t2 = time.perf_counter()
        if not self._behaviour_started and t >= cfg.behaviour_start_s:
            self.behaviour.start(t, BehaviourState.from_controller(self.wbc))
            self._behaviour_started = True
        refs = self.behaviour.references(t) if self._behaviour_started else None
        safe = False
        try:
            self.last_state = (q, v, refs)  # what the controller gets this tick (benchmarks replay it)
            out = self.wbc.step(q, v, references=refs)
            tau = out.tau_a
            status = "ok"
        except KangarooWbcError as exc:
            self.qp_failures += 1
            safe = True
            status = type(exc).__name__
            tau = -2.0e3 * vel  # damping fallback [N·s/m]
        t3 = time.perf_counter()
        if safe:
            self.safe_mode_ticks += 1
        if cfg.pipelined:
            tau = np.asarray(tau, dtype=float)
            self._pending_tau = tau if all_finite(tau, _EMPTY) else np.zeros_like(tau)  # never a NaN
            tc = tsim = time.perf_counter()
            sim_s = ts - tw  # waiting for the step that ran alongside this tick's predecessor
        else:
            self._command(tau)
            tc = time.perf_counter()
            self._push(t)
            sim.step()
            tsim = time.perf_counter()
            sim_s = tsim - tc
            self._after_step(t)
        # the estimators' share (the shared model update is the controller's) and the controller's
        est_s, wbc_s = (t1 - t0) + (tb - t1) + (t2 - tm), (tm - tb) + (t3 - t2)
        if self.log.enabled:  # ground-truth metrics of the report
            dt_ = self._data_true
            pin.centerOfMass(clm.model, dt_, q_true)
            pin.updateFramePlacements(clm.model, dt_)
            com_true = dt_.com[0].copy()
            fz_true = np.zeros(len(self.soles))
            cop_sum, corners = np.zeros(3), []
            for i, s in enumerate(self.soles):
                c = gt.contacts[s]
                oMs = dt_.oMf[self._sole_ids[i]]
                f_world = oMs.rotation @ c.force_in_sole
                fz_true[i] = f_world[2]
                if c.in_contact:
                    cop_sum += fz_true[i] * (oMs.rotation @ c.cop_in_sole + oMs.translation)
                    corners += [dt_.oMf[j].translation[:2].copy() for j in self._corner_ids[i]]
            zmp_true = cop_sum / fz_true.sum() if fz_true.sum() > 1.0 else np.full(3, np.nan)
            self.log.add(t=t, com_true=com_true, com_est=self.wbc.pm.com.copy(),
                         com_ref=self.wbc.com_task.position.copy(),
                         base_true=q_true[:3].copy(), base_est=q[:3].copy(),
                         zmp_est=est.zmp_in_world.copy(), zmp_valid=float(est.zmp_valid), zmp_true=zmp_true,
                         support=_hull_contains(np.array(corners), est.zmp_in_world[:2]) if corners else 0.0,
                         fz_est=est.wrench_sole_in_world[:, 2].copy(), fz_true=fz_true,
                         closure_error=self.passive.closure_error_norm,
                         passive_q_err=q[clm.idx_q_u] - q_true[clm.idx_q_u],
                         passive_v_err=v[clm.idx_v_u] - self._true_v(gt)[clm.idx_v_u],
                         est_ms=est_s * 1e3, passive_ms=(t1 - t0) * 1e3, wbc_ms=wbc_s * 1e3,
                         safe=float(safe), crane=float(self.sim.base_held),
                         behaviour=float(self._behaviour_started), tau=np.asarray(tau, float).copy())
        if base_z < cfg.fall_height_m:
            self.fell = True
        return {"t": t, "status": status, "est_ms": est_s * 1e3, "wbc_ms": wbc_s * 1e3,
                "stages_ms": {"sensors": (t0 - ts) * 1e3, "passive_state": (t1 - t0) * 1e3,
                              "floating_base": (tb - t1) * 1e3, "model_update": (tm - tb) * 1e3,
                              "contact_wrench": (t2 - tm) * 1e3, "controller": (t3 - t2) * 1e3,
                              "command": (tc - t3) * 1e3, "simulator_step": sim_s * 1e3}}

    def _push(self, t: float) -> None:
        """The lateral push of the ``push`` behaviour, applied during the step after time ``t``."""
        cfg = self.config
        if cfg.behaviour == "push" and self._behaviour_started:
            t_push = cfg.behaviour_start_s + cfg.push_delay_s
            on = t_push <= t < t_push + cfg.push_duration_s
            self.sim.data.xfrc_applied[self._push_body, :3] = (0.0, cfg.push_force_n if on else 0.0, 0.0)

    def run(self, progress=None, on_tick=None) -> dict:
        """Boot, then run ``duration_s``; returns the metrics (see :mod:`kangaroo_wbc.pipeline.metrics`).

        ``on_tick(run)`` is called after every control tick (e.g. to record :attr:`last_state`).
        """
        from kangaroo_wbc.pipeline.metrics import summarize

        w0 = time.perf_counter()
        self.start()
        n = int(round(self.config.duration_s / self.dt))
        it = progress(range(n), total=n, desc=f"demo {self.config.behaviour}") if progress else range(n)
        try:
            for _ in it:
                self.tick()
                if on_tick is not None:
                    on_tick(self)
                if self.fell:
                    break
        finally:
            self.finish()
        self.wall_time_s = time.perf_counter() - w0
        return summarize(self)


def standing_theta(clm: ClosedLoopModel) -> np.ndarray:
    """Standing actuator positions in the model's actuator order."""
    pose = standing_actuator_positions()
    return np.array([pose[n] for n in clm.actuated_joint_names])


def _hull_contains(points: np.ndarray, p: np.ndarray) -> float:
    """1.0 if the 2D point ``p`` lies in the convex hull of ``points`` (N, 2), else 0.0."""
    if points.shape[0] < 3 or not np.all(np.isfinite(p)):
        return 0.0
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)
    return float(np.all(hull.equations[:, :2] @ p + hull.equations[:, 2] <= 1e-9))
