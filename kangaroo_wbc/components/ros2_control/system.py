r"""The simulated robot as a ros2_control system: what its broadcasters publish, what its effort
controllers take.

:class:`SimulatedRos2ControlSystem` turns the simulated robot's native samples (relative encoders,
motor torques, passive encoders, IMU) into what ``joint_state_broadcaster`` and
``imu_sensor_broadcaster`` publish for the joints and the sensor of the generated ``<ros2_control>``
block (:meth:`~SimulatedRos2ControlSystem.broadcast`), and the ``data`` of the
``JointGroupEffortController`` s back into actuator forces
(:meth:`~SimulatedRos2ControlSystem.on_command`), with those controllers' behaviour:

* **joint states**: every joint with state interfaces, in the block's order (the commanded joints
  controller by controller, then the state-only encoders), ``position``, ``velocity``, ``effort``;
  a joint without an effort interface has NaN there (the broadcaster's fill). Actuator space: the
  raw encoder readings (relative ones with their boot offset: the state estimator calibrates them),
  the effort as the map's ``effort_state`` (axial force ``\bar\tau = \tau_m 2 \pi \eta / L``,
  eq. (47), or the motor torque itself), the passive encoders ``scale · θ + offset`` with their
  velocities by finite differences of the readings. Serial space: the driver is homed (it knows the
  boot offsets of its encoders, as a robot exposing serial joints must), its joints are the closed
  chain's outputs at the homed actuator readings (closure FK, exact maps of
  :class:`~kangaroo_wbc.model.serial_map.SerialJointMap`): ``y = S q``, ``\dot y = A \dot\theta_a``,
  ``\tau_y = A^{-T} \bar\tau``.
* **the controller manager**: at boot the effort controllers are inactive (the position
  controllers hold, :mod:`~kangaroo_wbc.components.ros2_control.hand_over`); a message to an
  inactive one is not applied; :meth:`~SimulatedRos2ControlSystem.switch` activates them.
* **commands**: one ``data`` per controller, in its ``joints`` order. A message of the wrong size
  is refused with an error and the controller keeps its last command (forward_command_controller:
  the update logs an error and writes nothing); a non-finite one is dropped with a warning (Jazzy
  and later). The actuators get a new force vector once every controller has answered (a refused
  message counts: its controller's update runs with its kept command) and each has a valid command:
  the simulator's watchdog keeps watching that stream, as a driver's would. Serial space:
  ``\bar\tau = A^T \tau_y`` at the configuration of the latest joint state (virtual work, eq. (23)).

No rclpy: the ``sim`` node publishes these arrays, the one-process loop hands them to the nodes'
boundary (:class:`~kangaroo_wbc.components.ros2_control.boundary.Ros2ControlBoundary`) in-process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.components.ros2_control.boundary import Ros2ControlConfig
from kangaroo_wbc.components.ros2_control.hand_over import ControllerManagerModel, HandOverPlan
from kangaroo_wbc.components.samples import (
    ActuatorCommand,
    ActuatorSample,
    EncoderSample,
    Event,
    ImuSample,
    Level,
    NameMap,
    Status,
)
from kangaroo_wbc.errors import ConfigError, KangarooWbcError
from kangaroo_wbc.model.ball_screw import BallScrewActuators
from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel
from kangaroo_wbc.model.hardware_map import HardwareMap, check_against_model
from kangaroo_wbc.model.serial_map import SerialJointMap

#: joint_state_broadcaster's ``header.frame_id`` (its ``frame_id`` parameter's default).
JOINT_STATE_FRAME_ID = "base_link"


@dataclass
class BroadcastState:
    """One update of the broadcasters at ``stamp_s`` [s]: the ``JointState`` arrays (``names``,
    ``position``, ``velocity``, ``effort``, NaN where an interface is missing) and the IMU (None:
    no sample) with its ``imu_frame_id``."""

    stamp_s: float
    names: list[str]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    imu: ImuSample | None
    imu_frame_id: str


class SimulatedRos2ControlSystem:
    """The simulated robot's broadcasters and effort controllers (see the module docstring).

    Args:
        hw: the hardware map (its selected joint space).
        clm: the closed-chain model (checked against ``hw``).
        actuator_names, encoder_names: the simulator's actuator and passive-encoder order.
        config: the controller manager's file (default: ``hw``'s own controllers and IMU).
        plan: the controllers of that file and the hand-over (default: the effort controllers
            alone); at boot all but the effort controllers are active (:attr:`manager`).

    Raises:
        ConfigError: the map does not fit the model or the simulator's names.
    """

    def __init__(self, hw: HardwareMap, clm: ClosedLoopModel, actuator_names: Sequence[str],
                 encoder_names: Sequence[str], config: Ros2ControlConfig | None = None,
                 plan: HandOverPlan | None = None) -> None:
        check_against_model(hw, clm)
        self.hw, self.clm = hw, clm
        self.imu_frame_id = config.imu_frame_id if config is not None else hw.imu.frame_id
        self.controllers = dict(hw.controllers)
        if plan is None:
            plan = HandOverPlan(dict.fromkeys(self.controllers, "effort_controllers/JointGroupEffortController"),
                                tuple(self.controllers), ())
        #: the controller manager's switch bookkeeping: an inactive effort controller applies nothing
        self.plan, self.manager = plan, ControllerManagerModel(plan.boot_states())
        commanded = hw.commanded()
        #: the joint state's names: the commanded joints, then the state-only ones (the block's order)
        self.names = commanded + [j.name for j in hw.joints if j.name not in commanded]
        self.serial = hw.joint_space == "serial"
        acts, encs = list(actuator_names), list(encoder_names)
        missing = sorted({j.model for j in hw.role("actuator")} - set(acts))
        missing += sorted({j.model for j in hw.role("encoder")} - set(encs))
        if missing or (self.serial and sorted(acts) != sorted(clm.actuated_joint_names)):
            raise ConfigError(f"{hw.source}: the simulator has no joints {missing or clm.actuated_joint_names}")
        self._to_model = NameMap(acts, clm.actuated_joint_names)
        n = len(self.names)
        self._effort = np.full(n, np.nan)
        if self.serial:
            joints = [hw.joint(c) for c in commanded]
            self.map = SerialJointMap(clm, [j.model for j in joints])
            self._scale = np.array([j.scale for j in joints])
            self._offset = np.array([j.offset for j in joints])
            screws = BallScrewActuators.from_model(clm, default_screw_lead_m=np.nan, default_screw_efficiency=np.nan)
            self._nm_per_n = np.where(screws.is_linear, 1.0 / screws.paper_gain, 1.0)
            if not np.all(np.isfinite(self._nm_per_n)):
                raise ConfigError(f"{clm.closure_file.source}: actuators: screw lead and efficiency needed for "
                                  f"the serial joints' torques")
            self._model_to_sim = NameMap(clm.actuated_joint_names, acts)
        else:
            rows = {name: i for i, name in enumerate(self.names)}
            act_joints = hw.role("actuator")
            self._act_rows = np.array([rows[j.name] for j in act_joints], dtype=int)
            self._act_src = np.array([acts.index(j.model) for j in act_joints], dtype=int)
            self._act_effort_gain = np.array([1.0 / j.motor_torque_per_newton() if j.effort_state == "axial_force"
                                              else 1.0 for j in act_joints])
            enc_joints = hw.role("encoder")
            self._enc_rows = np.array([rows[j.name] for j in enc_joints], dtype=int)
            self._enc_src = np.array([encs.index(j.model) for j in enc_joints], dtype=int)
            self._enc_scale = np.array([j.scale for j in enc_joints])
            self._enc_offset = np.array([j.offset for j in enc_joints])
            cmd = [hw.joint(c) for c in commanded]
            #: simulator actuator index of each command entry, and its N per unit
            self._cmd_sim = np.array([acts.index(j.model) for j in cmd], dtype=int)
            self._cmd_n_per_unit = np.array([1.0 / j.motor_torque_per_newton() if j.effort_command == "motor_torque"
                                             else 1.0 for j in cmd])
        self._n_act = len(acts)
        self._last_enc: tuple[float, np.ndarray] | None = None
        #: serial space: the configuration of the latest joint state (the commands' mapping point)
        #: and its output Jacobian ``A`` (the commands map through it, in whatever thread they come)
        self.q: np.ndarray | None = None
        self._A: np.ndarray | None = None
        #: each controller's last valid ``data`` (None: none yet) and whether it answered since the
        #: last force vector was formed
        self._data: dict[str, np.ndarray | None] = dict.fromkeys(self.controllers)
        self._answered: set[str] = set()
        self.counts = {"valid": 0, "refused": 0, "dropped": 0, "inactive": 0}
        self._problem: Event | None = None  # the latest refusal since the last status()

    # ------------------------------------------------------------------ state
    def broadcast(self, act: ActuatorSample, enc: EncoderSample, imu: ImuSample | None,
                  encoder_offset: np.ndarray | None = None) -> BroadcastState:
        """The broadcasters' messages for the simulator's samples (simulator order).

        ``encoder_offset``: serial space, the encoders' boot offsets (simulator order) the homed
        driver removes. Raises KangarooWbcError if the serial joints cannot be computed (closure FK).
        """
        n = len(self.names)
        position, velocity, effort = np.empty(n), np.empty(n), np.full(n, np.nan)
        t = float(act.stamp_s)
        if self.serial:
            theta = self._to_model(act.position - (0.0 if encoder_offset is None else encoder_offset))
            s = self.map.to_serial(theta, self._to_model(act.velocity), self.q)
            assert s.A is not None  # to_serial always returns the map's Jacobian
            self.q, self._A = s.q, s.A  # one assignment each: the commands' thread reads them
            position[:] = self._scale * s.y + self._offset
            velocity[:] = self._scale * s.y_dot
            if act.effort is not None:  # tau_y = A^-T tau_a (eq. (23))
                effort[:] = np.linalg.solve(s.A.T, self._to_model(act.effort) / self._nm_per_n) / self._scale
        else:
            position[self._act_rows] = act.position[self._act_src]
            velocity[self._act_rows] = act.velocity[self._act_src]
            if act.effort is not None:
                effort[self._act_rows] = act.effort[self._act_src] * self._act_effort_gain
            reading = enc.position[self._enc_src] * self._enc_scale + self._enc_offset
            position[self._enc_rows] = reading
            last = self._last_enc
            dt = t - last[0] if last is not None else 0.0
            velocity[self._enc_rows] = (reading - last[1]) / dt if last is not None and dt > 0.0 else 0.0
            self._last_enc = (t, reading)
        return BroadcastState(t, self.names, position, velocity, effort, imu, self.imu_frame_id)

    # ------------------------------------------------------------------ commands
    def on_command(self, controller: str, data: Sequence[float] | np.ndarray, stamp_s: float = 0.0
                   ) -> tuple[ActuatorCommand | None, list[Event]]:
        """One message of ``<controller>/commands``; returns the actuator forces (simulator order,
        stamped ``stamp_s``) once every controller answered with a valid command (else None), and
        the events to log (module docstring)."""
        cmd, events = self._on_command(controller, data, stamp_s)
        if events:
            self._problem = max(events, key=lambda e: e.level)
        return cmd, events

    def refuse(self, controller: str, reason: str) -> list[Event]:
        """A message of ``<controller>/commands`` refused before it was read (e.g. a second
        publisher on the topic): the controller keeps its last command."""
        self.counts["refused"] += 1
        event = Event(Level.ERROR, f"{controller}/commands.source", f"{controller}/commands: {reason}: refused")
        self._problem = event
        return [event]

    def switch(self, activate: Sequence[str], deactivate: Sequence[str], strictness: int) -> tuple[bool, str]:
        """The controller manager's ``switch_controller`` (:class:`ControllerManagerModel`): an
        effort controller activated starts with no command (forward_command_controller resets its
        buffer on activation)."""
        ok, message, started = self.manager.switch(activate, deactivate, strictness)
        for c in started:
            if c in self._data:
                self._data[c] = None
                self._answered.discard(c)
        return ok, message

    @property
    def effort_active(self) -> bool:
        """Every effort controller is active (the position controllers' hold is handed over)."""
        return all(self.manager.active(c) for c in self.controllers)

    def status(self) -> Status:
        """The ``effort_controllers`` diagnostic status: the commands taken, refused and dropped,
        and the latest refusal since the previous call."""
        problem, self._problem = self._problem, None
        values = {**self.counts, "controllers": ", ".join(self.controllers), "joint_space": self.hw.joint_space,
                  "active": ", ".join(c for c in self.controllers if self.manager.active(c))}
        if problem is not None:
            return Status("effort_controllers", problem.level, problem.message, values)
        return Status("effort_controllers", Level.OK, f"{len(self.controllers)} effort controllers", values)

    def _on_command(self, controller: str, data: Sequence[float] | np.ndarray, stamp_s: float
                    ) -> tuple[ActuatorCommand | None, list[Event]]:
        topic = f"{controller}/commands"
        joints = self.controllers.get(controller)
        if joints is None:
            return None, [Event(Level.ERROR, f"{topic}.unknown", f"{topic}: no such effort controller; the "
                                f"controllers are {sorted(self.controllers)}")]
        if not self.manager.active(controller):  # an inactive controller's update does not run
            self.counts["inactive"] += 1
            return None, []
        try:
            values = np.asarray(data, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            values = np.zeros(0)
        if values.shape != (len(joints),):
            self.counts["refused"] += 1
            self._answered.add(controller)
            kept = "keeping its last command" if self._data[controller] is not None else "no command yet"
            events = [Event(Level.ERROR, f"{topic}.size", f"{topic}: {values.size} values for the {len(joints)} joints "
                            f"{list(joints)}: refused, {kept}")]
        elif not np.isfinite(values).all():
            self.counts["dropped"] += 1
            bad = [j for j, x in zip(joints, values) if not np.isfinite(x)]
            return None, [Event(Level.WARN, f"{topic}.nan", f"{topic}: non-finite command of {bad}: dropped")]
        else:
            self.counts["valid"] += 1
            self._data[controller] = values.copy()
            self._answered.add(controller)
            events = []
        if len(self._answered) < len(self.controllers) or any(d is None for d in self._data.values()):
            return None, events
        self._answered.clear()
        try:
            forces = self._forces(np.concatenate([self._data[c] for c in self.controllers]))
        except KangarooWbcError as exc:
            return None, events + [Event(Level.ERROR, "commands.map", f"effort commands not mapped to the "
                                         f"actuators: {exc}")]
        return ActuatorCommand(forces, float(stamp_s)), events

    def _forces(self, data: np.ndarray) -> np.ndarray:
        """The controllers' data (command order, hardware units) as actuator forces [N] (simulator order)."""
        if self.serial:
            A = self._A
            if A is None:
                raise KangarooWbcError("no joint state yet: the serial torques map at its configuration")
            return self._model_to_sim(A.T @ (data * self._scale))  # tau_a = A^T tau_y
        forces = np.zeros(self._n_act)
        forces[self._cmd_sim] = data * self._cmd_n_per_unit
        return forces


__all__ = ["BroadcastState", "JOINT_STATE_FRAME_ID", "SimulatedRos2ControlSystem"]
