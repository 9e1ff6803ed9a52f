"""The one-leg test bench in one process: the node graph's components on the rig's model.

The same chain as :mod:`kangaroo_wbc_tools.pipeline.closed_loop` (``sim`` → ``state_estimator`` →
``contact_wrench_estimator`` → ``whole_body_controller`` → ``sim``, lockstep, through
:meth:`~kangaroo_wbc.components.assembly.Chain.tick`), built on the rig
(:func:`~kangaroo_wbc.robots.kangaroo.rig.make_rig`: one leg, the pelvis clamped, a force plate):

* **simulator**: :class:`~kangaroo_wbc.components.simulated_robot.SimulatedRobot` on the rig's
  :class:`~kangaroo_wbc.robots.kangaroo.rig.RigSim` (pelvis welded; the driver holds the actuators
  on their boot readings until the controller is ready, as on the crane);
* **state estimator**: :class:`~kangaroo_wbc.components.state_estimation.StateEstimation` with the
  one sole; it is never told that the robot left the crane (the pelvis stays clamped), so the base
  estimate keeps its zero-velocity updates and the gyro-bias estimate: the base is known, fixed;
* **contact-wrench estimator**: :class:`~kangaroo_wbc.components.contact_wrench.ContactWrenchEstimation`
  on the actuated rows only (``base_row_weight = 0``, the paper's eq. (46)): the base rows hold the
  clamp's unknown wrench; with one sole, six actuated rows determine its six unknowns;
* **controller**: :func:`~kangaroo_wbc.control.rig.rig_controller` (the clamp as a bilateral fixture
  contact) under :class:`~kangaroo_wbc.control.supervisor.WbcSupervisor` and
  :class:`~kangaroo_wbc.components.control.WholeBodyControl`, running the ``rig`` behaviour
  (:class:`~kangaroo_wbc.control.behaviours.RigCircleAndPress`) once ready.

The simulator's ground truth is read for the metrics only (:func:`~kangaroo_wbc_tools.pipeline.metrics.summarize_rig`):
the sole's true pose in the true pelvis frame against the reference in the estimated pelvis frame
(the rig's frame: the world's origin is the estimator's choice, the pelvis is where the leg is
measured from), and the plate's force (the simulator's contact force on the foot).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from kangaroo_wbc.components.assembly import ChainSettings, build_chain, loop_overrides
from kangaroo_wbc.components.rig import rig_robot, sole_target_in_base
from kangaroo_wbc.components.samples import ActuatorCommand, ActuatorSample, EncoderSample, NameMap
from kangaroo_wbc.components.simulated_robot import SimulatedRobotConfig
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.robots.kangaroo.rig import RIGS, make_rig
from kangaroo_wbc_tools.pipeline.closed_loop import TickLog, run_ticks


@dataclass
class RigConfig:
    """The rig run: configuration, leg, length [s] of simulated time, seed, actuators."""

    rig: str = "one_leg"
    leg: str = "left"
    duration_s: float = 10.0
    seed: int = 0
    ideal_actuators: bool = False
    #: parameters of the ``rig`` behaviour (:class:`~kangaroo_wbc.control.behaviours.RigCircleAndPress`)
    behaviour_options: dict = field(default_factory=dict)
    #: the press's hold: force samples from this long after the force ramp's end [s]
    press_settle_s: float = 0.5

    def __post_init__(self) -> None:
        if self.rig not in RIGS:
            raise InputError(f"unknown rig {self.rig!r}; rigs are {list(RIGS)}")
        if not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise InputError(f"duration_s must be positive, got {self.duration_s}")


# ---------------------------------------------------------------------------------------------- the components
# One construction per component on the rig: RigRun and the nodes (``rig`` parameter) call these.


class RigRun:
    """The components of the node graph chained on the rig (module docstring)."""

    def __init__(self, config: RigConfig | None = None) -> None:
        self.config = cfg = config or RigConfig()
        self.rig = rig = make_rig(cfg.rig, cfg.leg)
        self.clm = clm = rig.clm
        self.sole = rig.sole
        self.robot = rig_robot(rig, SimulatedRobotConfig(seed=cfg.seed, ideal_actuators=cfg.ideal_actuators))
        self.sim = self.robot.sim
        self.dt = self.robot.period_s
        self._act = NameMap(self.robot.actuator_names, clm.actuated_joint_names)
        self._enc = NameMap(self.robot.passive_encoder_names, clm.absolute_encoders)
        self._cmd = NameMap(clm.actuated_joint_names, self.robot.actuator_names)
        #: index array from the simulator's actuator order to the model's
        self.sim_to_model = self._act.index
        ideal = self.sim.ideal_actuators
        self.settings = settings = ChainSettings.load(overrides=loop_overrides(
            ideal_actuators=ideal, rig=cfg.rig, rig_leg=cfg.leg))
        self.chain = build_chain(clm, settings, rig_options={"plate_below_sole_m": rig.plate_below_sole_m,
                                                             **cfg.behaviour_options})
        self.estimation, self.wrench, self.control = self.chain.estimation, self.chain.wrench, self.chain.control
        self.wbc = self.control.supervisor.controller
        self.log = TickLog()
        self.qp_failures = 0
        self.safe_mode_ticks = 0
        self.interrupted = False
        self.wall_time_s = 0.0
        self._ready_sent = False
        m = clm.model
        self._sole_id, self._base_id = m.getFrameId(self.sole), m.getFrameId("base_link")
        self._data_true = m.createData()
        self._true_q_ids: np.ndarray | None = None

    @property
    def calibration(self):
        """The encoder calibration (None until the estimator calibrated)."""
        return self.estimation.calibration

    @property
    def behaviour(self):
        """The running behaviour (None before it starts)."""
        return self.control.supervisor.behaviour

    def tick(self) -> None:
        """One control period: samples → state → wrenches → command → simulator step."""
        robot = self.robot
        t = robot.time
        act, enc, imu = robot.samples(wall_s=time.perf_counter())
        assert act.effort is not None  # the simulated robot's samples carry the motor torques
        sample = ActuatorSample(self._act(act.position), self._act(act.velocity), self._act(act.effort), act.stamp_s)
        plate = self.sim.plate_force()  # the rig's force plate closes the press's loop
        step = self.chain.tick(sample, EncoderSample(self._enc(enc.position), enc.stamp_s), imu,
                               plate=(-float(plate[2]), t))
        est, out, cmd = step.estimate, step.wrench, step.command
        t0 = step.marks[0]
        if cmd is not None and cmd.mode != "control":
            self.safe_mode_ticks += 1
            self.qp_failures += int("QP" in cmd.reason)
        t1 = time.perf_counter()
        if self.control.ready != self._ready_sent:  # the wbc/ready handshake
            self._ready_sent = self.control.ready
            robot.set_controller_ready(self.control.ready)
        if cmd is not None:
            robot.submit(ActuatorCommand(self._cmd(cmd.tau_a), act.stamp_s), time.perf_counter())
        robot.step()
        if self.log.enabled and est is not None and out is not None:
            self._log(t, est, out, cmd, t1 - t0, plate)

    def run(self, progress=None, stop=None) -> dict:
        """Run ``duration_s`` from boot; returns the metrics
        (:func:`~kangaroo_wbc_tools.pipeline.metrics.summarize_rig`).
        ``stop()`` is polled at every tick boundary (the CLI's signals)."""
        from kangaroo_wbc_tools.pipeline.metrics import summarize_rig

        w0 = time.perf_counter()
        n = int(round(self.config.duration_s / self.dt))
        self.interrupted = run_ticks(self, n, f"demo rig {self.config.rig}", progress, stop=stop)
        self.wall_time_s = time.perf_counter() - w0
        return {**summarize_rig(self), "interrupted": self.interrupted}

    # ------------------------------------------------------------------ truth, for the metrics
    def _true_q(self, gt) -> np.ndarray:
        m = self.clm.model
        if self._true_q_ids is None:
            self._true_q_ids = np.array([m.joints[m.getJointId(n)].idx_q for n in gt.joint_names])
        q = np.zeros(m.nq)
        q[:3], q[3:7] = gt.base_position_in_world, gt.base_orientation_xyzw
        q[self._true_q_ids] = gt.joint_positions
        return q

    def _log(self, t: float, est, out, cmd, loop_s: float, plate: np.ndarray) -> None:
        gt = self.robot.ground_truth()
        m, d = self.clm.model, self._data_true
        pin.framesForwardKinematics(m, d, self._true_q(gt))
        sole_true = d.oMf[self._base_id].actInv(d.oMf[self._sole_id])
        behaviour = self.behaviour
        target = sole_target_in_base(self.control, self.config.leg)  # what the node publishes
        ref_in_base = np.full(3, np.nan) if target is None else target[0]
        contact = gt.contacts[self.sole]
        self.log.add(t=t, phase=getattr(behaviour, "phase", "wait") if behaviour is not None else "wait",
                     started=float(self.control.behaviour_started_s is not None),
                     sole_true_in_base=sole_true.translation.copy(), sole_ref_in_base=ref_in_base,
                     sole_rot_true_in_base=sole_true.rotation.copy(),
                     plate_force_world=-plate, correction=float(getattr(behaviour, "force_correction_n", 0.0)),
                     force_est_world=out.wrench_sole_in_world[0, :3].copy(),
                     wrench_est_in_sole=out.wrench_sole_in_sole[0].copy(),
                     wrench_true_in_sole=np.r_[contact.force_in_sole, contact.torque_in_sole],
                     safe=float(cmd.mode != "control"), tau=np.asarray(cmd.tau_a, float).copy(),
                     base_est=est.q[:3].copy(), loop_ms=loop_s * 1e3,
                     passive_q_err=est.q[self.clm.idx_q_u] - self._true_q(gt)[self.clm.idx_q_u])


__all__ = ["RigConfig", "RigRun"]
