"""The node graph in one process, without ROS: the same components the nodes run, chained.

``sim`` → ``state_estimator`` → ``contact_wrench_estimator`` → ``whole_body_controller`` → ``sim``
is :class:`~kangaroo_wbc.components.simulated_robot.SimulatedRobot` →
:class:`~kangaroo_wbc.components.state_estimation.StateEstimation` →
:class:`~kangaroo_wbc.components.contact_wrench.ContactWrenchEstimation` →
:class:`~kangaroo_wbc.components.control.WholeBodyControl` → back, built from the nodes' default
parameters, stepped at the control rate, deterministic for a seed. The controller sees only what
the hardware gives (encoder readings with unknown boot offsets, motor torques, passive absolute
encoders, the IMU), never the simulator's ground truth, which is logged for the metrics only.

Boot as on the robot and in the launched graph: the robot hangs on the crane, actuators held by
the simulator's hold PD; the estimator calibrates from still samples; the controller commands and
says it is ready; the crane lets go; the behaviour starts ``behaviour_delay_s`` after ready.

Transport: in lockstep (default) each command drives the very next step (the ``lockstep`` sim mode
of the node graph); with ``pipelined`` the simulator steps in a worker thread while the components
compute, and each command drives the step after (the one-tick delay of the real-time graph).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from kangaroo_wbc.components.assembly import (
    ChainSettings,
    ChainStep,
    build_chain,
    loop_overrides,
    select_behaviour,
)
from kangaroo_wbc.components.samples import ActuatorCommand, ActuatorSample, EncoderSample, NameMap
from kangaroo_wbc.components.simulated_robot import (
    SimulatedRobot,
    SimulatedRobotConfig,
    payload_link,
)
from kangaroo_wbc.control.behaviours import BEHAVIOURS
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

CORNERS = ("fl", "fr", "rl", "rr")
#: CLI behaviour names → controller behaviours.
BEHAVIOUR_ALIASES = {"single_support": "weight_shift", "push": "push_recovery"}


@dataclass
class LoopConfig:
    """The run: behaviour, length [s] of simulated time, seed and transport."""

    behaviour: str = "stand"
    duration_s: float = 10.0
    seed: int = 0
    fall_height_m: float = 0.6  # base below this height: fallen (standing: 0.90 m)
    push_force_n: float = 50.0  # lateral push [N] (world +y, at the pelvis)
    push_duration_s: float = 0.1
    push_delay_s: float = 1.0  # after the behaviour starts
    #: whether the push is applied (None: with the "push" behaviour only)
    push: bool | None = None
    #: actuator faults ``(mode, actuator, t)``: at ``t`` [s] after the behaviour starts the simulator
    #: puts the actuator in ``mode`` (``locked`` or ``limp``) and the controller and the wrench
    #: estimator are told at the same tick, as the operator tells the nodes (the components'
    #: ``set_actuator_mode``, what the nodes' parameters and ``actuators/modes`` call)
    faults: tuple[tuple[str, str, float], ...] = ()
    #: payloads ``(mass [kg], link, t)``: at ``t`` [s] after the behaviour starts a point mass is
    #: attached at the link's centre of mass (negative: removed) in the simulator and in the model
    #: the estimators and the controller share (``torso``: the base link, which carries the torso)
    payloads: tuple[tuple[float, str, float], ...] = ()
    #: True: the payloads go on the simulated robot only, the model is not told (what the online
    #: payload identification, ``payload_identification``, is for)
    payload_unannounced: bool = False
    #: identify an unmodelled payload while standing (the wrench component's
    #: ``payload_identification``); None: on when ``payloads`` is not empty
    payload_identification: bool | None = None
    behaviour_options: dict = field(default_factory=dict)
    #: False: lockstep (each command drives the very next step). True: the simulator steps in a
    #: worker thread while the components compute; each command drives the step after.
    pipelined: bool = False
    robot: SimulatedRobotConfig = field(default_factory=SimulatedRobotConfig)
    #: the chain's settings; None: the shipped ``config/*.yaml`` (what the launched nodes run) with
    #: this run's overrides (:func:`~kangaroo_wbc.components.assembly.loop_overrides`)
    settings: ChainSettings | None = None
    #: the hardware interface between the simulator and the chain: ``native`` (its samples, mapped
    #: by name) or ``ros2_control`` (the simulated broadcasters and effort controllers through the
    #: nodes' boundary, :class:`~kangaroo_wbc.components.ros2_control.link.Ros2ControlLink`), the
    #: hardware exposing ``joint_space`` (``actuator`` or ``serial``)
    interface: str = "native"
    joint_space: str = "actuator"

    def __post_init__(self) -> None:
        name = BEHAVIOUR_ALIASES.get(self.behaviour, self.behaviour)
        if name not in BEHAVIOURS:
            raise InputError(f"unknown behaviour {self.behaviour!r}; known: "
                             f"{sorted(set(BEHAVIOURS) | set(BEHAVIOUR_ALIASES))}")


def run_ticks(run, n: int, desc: str, progress=None, on_tick=None, stop=None, until=None) -> bool:
    """Call ``run.tick()`` ``n`` times (the one-process loops: :class:`ClosedLoopRun`, the rig's
    :class:`~kangaroo_wbc_tools.pipeline.rig.RigRun`); returns True if ``stop()``, polled at every tick
    boundary, ended it early (the CLI's SIGINT / SIGTERM). ``progress(iterable, total=, desc=)``
    wraps the ticks (a progress bar, closed however the loop ends), ``on_tick(run)`` is called after
    each tick, and ``until()`` ends the loop normally once True (e.g. the robot fell)."""
    it = progress(range(n), total=n, desc=desc) if progress else range(n)
    try:
        for _ in it:
            if stop is not None and stop():
                return True
            run.tick()
            if on_tick is not None:
                on_tick(run)
            if until is not None and until():
                break
    finally:
        getattr(it, "close", lambda: None)()  # a progress bar left early
    return False


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
    """The components of the node graph chained in one process (see the module docstring)."""

    def __init__(self, config: LoopConfig | None = None, clm: ClosedLoopModel | None = None) -> None:
        self.config = cfg = config or LoopConfig()
        self.clm = clm = clm or load_kangaroo(floating_base=True)
        robot_cfg = SimulatedRobotConfig(**{**cfg.robot.__dict__, "seed": cfg.seed})
        self.robot = SimulatedRobot(robot_cfg)
        self.sim = self.robot.sim
        self.dt = self.robot.period_s
        behaviour = BEHAVIOUR_ALIASES.get(cfg.behaviour, cfg.behaviour)
        identify = bool(cfg.payloads) if cfg.payload_identification is None else cfg.payload_identification
        #: the settings the chain was built from (the launch's, with this run's overrides)
        self.settings = settings = cfg.settings or ChainSettings.load(overrides=loop_overrides(
            behaviour=behaviour, ideal_actuators=self.sim.ideal_actuators, payload_identification=identify,
            interface=cfg.interface, joint_space=cfg.joint_space))
        self.chain = build_chain(clm, settings)
        #: ros2_control: the simulated system and the nodes' boundary in-process (None: native)
        self.link = None
        if settings.estimator.interface == "ros2_control":
            from kangaroo_wbc.components.ros2_control.link import Ros2ControlLink
            from kangaroo_wbc.components.ros2_control.settings import build_boundary, build_system

            p = settings.estimator
            self.link = Ros2ControlLink(build_boundary(clm, p), build_system(
                clm, p, self.robot.actuator_names, self.robot.passive_encoder_names))
        self.estimation, self.wrench, self.control = self.chain.estimation, self.chain.wrench, self.chain.control
        self.wbc = self.control.supervisor.controller
        if cfg.behaviour_options:
            select_behaviour(self.control, settings.controller, behaviour, **cfg.behaviour_options)
        self.soles = list(self.control.settings.sole_frames)
        self._act = NameMap(self.robot.actuator_names, clm.actuated_joint_names)
        self._enc = NameMap(self.robot.passive_encoder_names, clm.absolute_encoders)
        self._cmd = NameMap(clm.actuated_joint_names, self.robot.actuator_names)
        #: index array from the simulator's actuator order to the model's: ``x_model = x_sim[sim_to_model]``
        self.sim_to_model = self._act.index
        import mujoco

        self._push_body = mujoco.mj_name2id(self.sim.model, mujoco.mjtObj.mjOBJ_BODY, "base_link")
        for mode, name, at in cfg.faults:
            if mode not in ("locked", "limp") or name not in clm.actuated_joint_names or not at >= 0.0:
                raise InputError(f"fault {mode}:{name}@{at}: mode locked or limp, an actuator of "
                                 f"{clm.actuated_joint_names}, a time >= 0 s")
        for mass, link, at in cfg.payloads:
            link = payload_link(link)
            if not (math.isfinite(mass) and at >= 0.0) or not clm.model.existFrame(link):
                raise InputError(f"payload {mass}kg@{link}@{at}: a finite mass [kg], a link of the model, "
                                 f"a time >= 0 s")
        self._faults = sorted([(m, n, t) for m, n, t in cfg.faults]
                              + [(m, payload_link(n), t) for m, n, t in cfg.payloads], key=lambda f: f[2])
        #: the faults and payloads applied: (t [s], actuator or link, mode or mass [kg], model update time [ms])
        self.morphology_changes: list[tuple[float, str, str | float, float]] = []
        self.log = TickLog()
        self.qp_failures = 0
        self.safe_mode_ticks = 0
        self.fell = False
        self.interrupted = False  # run() stopped early by its stop() callable
        self.last_state: tuple | None = None  # (q, v, references) the controller got at the last tick
        #: the last tick's torque sample (model order) and state estimate, or None if the estimator
        #: gave none (for estimators run beside the loop's, e.g. ``evaluate estimation``)
        self.last_inputs: tuple | None = None
        self.release_time_s: float | None = None
        self.wall_time_s = 0.0
        #: system clock [s since the epoch] when the run started (the bag's stamps: this + simulated time)
        self.wall_start_epoch_s: float | None = None
        #: the components' diagnostics each simulated second: (t [s], {node name: [Status]}) (for the bag)
        self.status_log: list[tuple[float, dict]] = []
        #: a walk's footsteps at each new plan: (t [s], [(footstep, floor z, planned)]) (the bag's markers)
        self.footstep_log: list[tuple[float, list]] = []
        self._plan_count = 0
        #: the width of the behaviour's plan trace (Walk.TRACE, Jump.TRACE; 0: none)
        self._trace_width = len(getattr(BEHAVIOURS[behaviour], "TRACE", ()))
        self._pending: ActuatorCommand | None = None  # pipelined: the command of the next step
        self._ready_sent = False
        m = clm.model
        self._sole_ids = [m.getFrameId(s) for s in self.soles]
        self._corner_ids = [[m.getFrameId(f"{s}_corner_{c}") for c in CORNERS] for s in self.soles]
        self._true_ids: np.ndarray | None = None
        self._true_vids: np.ndarray | None = None
        self._data_true = m.createData()

    @property
    def pending_command(self) -> ActuatorCommand | None:
        """Pipelined: the command (simulator order) queued for the next step."""
        return self._pending

    @property
    def calibration(self):
        """The encoder calibration (None until the estimator calibrated)."""
        return self.estimation.calibration

    # ------------------------------------------------------------------ run
    def start(self) -> None:
        """Prepare a run (callers driving :meth:`tick` themselves call it first, :meth:`finish` last)."""
        if self.wall_start_epoch_s is None:
            self.wall_start_epoch_s = time.time()

    def finish(self) -> None:
        """Wait for a simulator step under way (pipelined)."""
        self.robot.finish_step()

    def tick(self) -> dict:
        """One control period: samples → state → wrenches → command → simulator step."""
        cfg, robot = self.config, self.robot
        tw = time.perf_counter()
        self.finish()  # pipelined: the step the previous tick started
        ts = time.perf_counter()
        t = robot.time
        act, enc, imu = robot.samples(wall_s=ts)
        if self.log.enabled:
            q_true, gt = self._true_q()
            base_z = q_true[2]
        else:
            base_z = float(robot.base_position()[2])
        if cfg.pipelined:  # the simulator steps with the previous command while the components compute
            if self._pending is not None:
                robot.submit(self._pending, ts)
            self._push(t)
            robot.start_step()
        # ---- the chain (components.assembly), on the sample mapped by name as the nodes' conversion does
        if self.link is None:
            act_ = self._act
            assert act.effort is not None  # the simulated robot's samples carry the motor torques
            sample = ActuatorSample(act_(act.position), act_(act.velocity), act_(act.effort), act.stamp_s)
            encoders = EncoderSample(self._enc(enc.position), enc.stamp_s)
        else:  # through the simulated broadcasters and the state estimator's boundary
            sample, encoders, imu = self._through_boundary(act, enc, imu)
        if sample is None:  # refused by the boundary: no estimate, no command (the last one holds)
            now = time.perf_counter()
            step = ChainStep(None, None, None, (now,) * 5)
        else:
            step = self.chain.tick(sample, encoders, imu)
        est, out, cmd = step.estimate, step.wrench, step.command
        t0, t1, tm, t2, t3 = step.marks
        self.last_inputs = None if est is None else (sample, est)
        if est is not None:
            assert cmd is not None  # the chain's controller answers every estimate
            q, v = est.q.copy(), est.v.copy()
            self.last_state = (q, v, self.control.supervisor.last_references)
            if cmd.mode != "control":
                self.safe_mode_ticks += 1
                self.qp_failures += int("QP" in cmd.reason)
        if self.control.ready != self._ready_sent:  # the wbc/ready handshake
            self._ready_sent = self.control.ready
            robot.set_controller_ready(self.control.ready)
        if cmd is None:
            command = None
        elif self.link is None:
            command = ActuatorCommand(self._cmd(cmd.tau_a), act.stamp_s)
        else:  # the controller's boundary, behind the hand-over gate, and the simulated effort controllers
            assert est is not None  # a command comes with its estimate
            command = self.link.command(cmd.tau_a, est.q, self.control.ready, act.stamp_s)
            self.link.drain_events()
        if cfg.pipelined:
            self._pending = command
            tc = time.perf_counter()
            sim_s = ts - tw
        else:
            if command is not None:
                robot.submit(command, time.perf_counter())
            tc = time.perf_counter()
            self._push(t)
            robot.step()
            sim_s = time.perf_counter() - tc
        if self.release_time_s is None and not robot.base_held:
            self.release_time_s = t
        if self.log.enabled and est is not None and out is not None:
            self._log_metrics(t, q_true, gt, est, out, cmd, (t1 - t0) + (t2 - tm), (tm - t1) + (t3 - t2),
                              sample, imu)
        if self.log.enabled and (not self.status_log or t >= self.status_log[-1][0] + 1.0 - 1e-9):
            self.status_log.append((t, {"sim": self.robot.statuses(ts), "state_estimator": self.estimation.statuses(),
                                        "contact_wrench_estimator": self.wrench.statuses(),
                                        "whole_body_controller": self.control.statuses()}))
        if base_z < cfg.fall_height_m:
            self.fell = True
        return {"t": t, "status": "idle" if cmd is None else cmd.mode,
                "stages_ms": {"sensors": (t0 - ts) * 1e3, "state_estimation": (t1 - t0) * 1e3,
                              "model_update": (tm - t1) * 1e3, "contact_wrench": (t2 - tm) * 1e3,
                              "controller": (t3 - t2) * 1e3, "command": (tc - t3) * 1e3,
                              "simulator_step": sim_s * 1e3}}

    def run(self, progress=None, on_tick=None, stop=None) -> dict:
        """Run ``duration_s`` from boot; returns the metrics (:mod:`kangaroo_wbc_tools.pipeline.metrics`).

        ``on_tick(run)`` is called after every control tick (e.g. to record :attr:`last_state`).
        ``stop()`` is polled at every tick boundary: once it returns True the run ends there, the
        metrics cover the time run and ``interrupted`` is True (the CLI's SIGINT / SIGTERM).
        """
        from kangaroo_wbc_tools.pipeline.metrics import summarize

        w0 = time.perf_counter()
        self.start()
        n = int(round(self.config.duration_s / self.dt))
        try:
            self.interrupted = run_ticks(self, n, f"demo {self.config.behaviour}", progress, on_tick, stop,
                                         until=lambda: self.fell)
        finally:
            self.finish()
        self.wall_time_s = time.perf_counter() - w0
        return {**summarize(self), "interrupted": self.interrupted}

    # ------------------------------------------------------------------ helpers
    def _through_boundary(self, act, enc, imu) -> tuple:
        """ros2_control: the simulator's samples through its broadcasters and the boundary; a
        message the boundary refuses is reported by the state estimator, as its node does, and
        gives ``(None, None, None)``."""
        from kangaroo_wbc.components.ros2_control.boundary import BoundaryInputError

        assert self.link is not None  # called through the ros2_control link only
        try:
            return self.link.step_samples(act, enc, imu, self.robot.encoder_offsets)
        except BoundaryInputError as exc:
            self.estimation.reject(self.link.boundary.source_topic(exc), exc)
            self.estimation.drain_events()
            return None, None, None

    def _push(self, t: float) -> None:
        """The lateral push (``push``; the ``push`` behaviour's), applied during the step after time ``t``,
        and the actuator faults due by then."""
        cfg, started = self.config, self.control.behaviour_started_s
        while self._faults and started is not None and t >= started + self._faults[0][2]:
            what, name, _ = self._faults.pop(0)
            if isinstance(what, str):  # an actuator fault: the simulator, then the nodes' components
                self.robot.set_actuator_mode(name, what)
                t0 = time.perf_counter()
                self.control.set_actuator_mode(name, what)
                self.wrench.set_actuator_mode(name, what)
            else:  # a payload: the simulator's body and the shared model
                self.robot.add_payload(name, what)
                t0 = time.perf_counter()
                if not cfg.payload_unannounced:
                    self.clm.add_payload(name, what)
            self.morphology_changes.append((t, name, what, 1e3 * (time.perf_counter() - t0)))
        if (cfg.behaviour == "push" if cfg.push is None else cfg.push) and started is not None:
            t_push = started + cfg.push_delay_s
            on = t_push <= t < t_push + cfg.push_duration_s
            self.sim.data.xfrc_applied[self._push_body, :3] = (0.0, cfg.push_force_n if on else 0.0, 0.0)

    def _true_q(self):
        """Ground-truth configuration (metrics only)."""
        gt = self.robot.ground_truth()
        m = self.clm.model
        if self._true_ids is None:
            self._true_ids = np.array([m.joints[m.getJointId(n)].idx_q for n in gt.joint_names])
            self._true_vids = np.array([m.joints[m.getJointId(n)].idx_v for n in gt.joint_names])
        q = np.zeros(m.nq)
        q[:3], q[3:7] = gt.base_position_in_world, gt.base_orientation_xyzw
        q[self._true_ids] = gt.joint_positions
        return q, gt

    def _log_metrics(self, t, q_true, gt, est, out, cmd, est_s, wbc_s, sample, imu) -> None:
        clm, dt_ = self.clm, self._data_true
        pin.centerOfMass(clm.model, dt_, q_true)
        pin.updateFramePlacements(clm.model, dt_)
        fz_true = np.zeros(len(self.soles))
        cop_sum, corners = np.zeros(3), []
        for i, s in enumerate(self.soles):
            c = gt.contacts[s]
            oMs = dt_.oMf[self._sole_ids[i]]
            fz_true[i] = (oMs.rotation @ c.force_in_sole)[2]
            if c.in_contact:
                cop_sum += fz_true[i] * (oMs.rotation @ c.cop_in_sole + oMs.translation)
                corners += [dt_.oMf[j].translation[:2].copy() for j in self._corner_ids[i]]
        zmp_true = cop_sum / fz_true.sum() if fz_true.sum() > 1.0 else np.full(3, np.nan)
        v_true = np.zeros(clm.model.nv)
        v_true[self._true_vids] = gt.joint_velocities
        v_true[:3] = pin.XYZQUATToSE3(q_true[:7]).rotation.T @ gt.base_linear_velocity_in_world
        v_true[3:6] = gt.base_angular_velocity_in_base
        truth_in_sole = [np.r_[gt.contacts[s].force_in_sole, gt.contacts[s].torque_in_sole] for s in self.soles]
        no_imu = np.full(3, np.nan)
        behaviour: Any = self.control.supervisor.behaviour  # duck-typed below
        payload = self.wrench.payload_estimate
        if payload is not None:  # the identification's confident estimates (NaN otherwise)
            ok = payload.confident
            self.log.add(payload_mass=payload.mass_kg if ok else np.nan,
                         payload_com_xy=payload.com_xy_in_world_m.copy() if ok else np.full(2, np.nan))
        if self._trace_width:  # a walk or a jump: its plan and phase (NaN before it starts)
            self.log.add(plan=behaviour.trace() if hasattr(behaviour, "trace") else np.full(self._trace_width, np.nan))
        if hasattr(behaviour, "footstep_boxes") and behaviour.plan_count != self._plan_count:
            self._plan_count = behaviour.plan_count
            self.footstep_log.append((t, behaviour.footstep_boxes()))
        q, v = est.q, est.v
        self.log.add(t=t, com_true=dt_.com[0].copy(), com_est=self.wbc.pm.com.copy(),
                     com_ref=self.wbc.com_task.position.copy(), base_true=q_true[:3].copy(), base_est=q[:3].copy(),
                     zmp_est=out.zmp_in_world.copy(), zmp_valid=float(out.zmp_valid), zmp_true=zmp_true,
                     support_margin=_hull_margin(np.array(corners), out.zmp_in_world[:2]) if corners else -np.inf,
                     fz_est=out.wrench_sole_in_world[:, 2].copy(), fz_true=fz_true,
                     contact_true=np.array([float(gt.contacts[s].in_contact) for s in self.soles]),
                     closure_error=self.estimation.passive.closure_error_norm,
                     passive_q_err=q[clm.idx_q_u] - q_true[clm.idx_q_u],
                     passive_v_err=v[clm.idx_v_u] - v_true[clm.idx_v_u],
                     est_ms=est_s * 1e3, wbc_ms=wbc_s * 1e3, safe=float(cmd.mode != "control"),
                     crane=float(self.robot.base_held), behaviour=float(self.control.behaviour_started_s is not None),
                     tau=np.asarray(cmd.tau_a, float).copy(),
                     # for the bag: the estimate, the truth and the samples as the topics carry them
                     q_est=q.copy(), v_est=v.copy(), q_true=q_true, v_true=v_true,
                     act_position=sample.position, act_velocity=sample.velocity,
                     act_effort=np.full(clm.n_a, np.nan) if sample.effort is None else sample.effort,
                     imu_orientation_xyzw=np.full(4, np.nan) if imu is None else np.array(imu.orientation_xyzw),
                     imu_angular_velocity=no_imu if imu is None else np.array(imu.angular_velocity),
                     imu_linear_acceleration=no_imu if imu is None else np.array(imu.linear_acceleration),
                     wrench_est_in_sole=out.wrench_sole_in_sole.copy(), wrench_true_in_sole=np.array(truth_in_sole))


def _hull_margin(points: np.ndarray, p: np.ndarray) -> float:
    """Signed distance [m] of the 2D point ``p`` inside the convex hull of ``points`` (N, 2): positive
    inside (to the nearest edge), negative outside; -inf without a hull or a finite point."""
    if points.shape[0] < 3 or not np.all(np.isfinite(p)):
        return -np.inf
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points)  # unit outward normals: equations @ [p, 1] is the distance outside each edge
    return float(-np.max(hull.equations[:, :2] @ p + hull.equations[:, 2]))
