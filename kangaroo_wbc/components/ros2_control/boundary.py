r"""The ros2_control boundary: the standard broadcasters' and effort controllers' arrays <-> native samples.

A ros2_control robot (the real one, or Gazebo through gz_ros2_control) publishes its state with
``joint_state_broadcaster`` (``sensor_msgs/JointState``) and ``imu_sensor_broadcaster``
(``sensor_msgs/Imu``) and takes effort commands through ``JointGroupEffortController`` s
(``std_msgs/Float64MultiArray`` on ``<controller>/commands``, ``data`` in the controller's ``joints``
order). :class:`Ros2ControlBoundary` converts, through the hardware map
(:mod:`kangaroo_wbc.model.hardware_map`) and, in the serial joint space, the exact closed-chain maps
(:class:`~kangaroo_wbc.model.serial_map.SerialJointMap`):

* :meth:`~Ros2ControlBoundary.state`: a joint state (names in any order, extra joints ignored) to
  the native :class:`~kangaroo_wbc.components.samples.ActuatorSample` (encoder positions [m],
  velocities [m/s], motor torques [N·m], ``\tau_m = \bar\tau L / (2 \pi \eta)``, eq. (47)) and
  :class:`~kangaroo_wbc.components.samples.EncoderSample` (the passive absolute encoders [rad]).
  Serial joints become actuator strokes by closure kinematics with the outputs held, their
  velocities through ``A^{-1}``, their torques the actuator forces ``A^T \tau_y``.
* :meth:`~Ros2ControlBoundary.imu`: an IMU message's fields to an
  :class:`~kangaroo_wbc.components.samples.ImuSample`, its frame checked.
* :meth:`~Ros2ControlBoundary.commands`: the controller's actuator forces [N] to each effort
  controller's ``data``: axial forces, motor torques, or the serial torques ``A^{-T} \tau_a`` that do
  the same virtual work, at the configuration of the latest state.

Bad input raises :class:`BoundaryInputError` (an :class:`~kangaroo_wbc.errors.InputError` with a
cause ``key`` for throttled logs and diagnostics) and leaves the boundary as it was; nothing
non-finite is ever returned. What the broadcasters and controllers do is in ``docs/ros2_control.md``
with the upstream source of each behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kangaroo_wbc.components.samples import ActuatorSample, EncoderSample, ImuSample
from kangaroo_wbc.errors import ConfigError, InputError, KangarooWbcError, suggest
from kangaroo_wbc.model.ball_screw import BallScrewActuators
from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel
from kangaroo_wbc.model.hardware_map import HardwareMap, check_against_model, read_document
from kangaroo_wbc.model.serial_map import SerialJointMap

JOINT_STATE_BROADCASTER = "joint_state_broadcaster"
IMU_SENSOR_BROADCASTER = "imu_sensor_broadcaster"
FORCE_TORQUE_SENSOR_BROADCASTER_TYPE = "force_torque_sensor_broadcaster/ForceTorqueSensorBroadcaster"
#: ``|q| - 1`` beyond this is not a unit quaternion (the IMU's orientation is rejected).
QUATERNION_NORM_TOL = 1e-3
#: A measured joint may sit past its URDF limit by this much [m or rad] (a soft stop's overshoot and
#: the encoders' noise: in the simulated 20 s walk the straight knee goes 6.6e-4 rad past its stop,
#: and further while falling); the other assembly branch of the Kangaroo's ankle chains, which the
#: limit check keeps out, is 0.36 or more past (sampled states, test/robots/test_serial_map.py).
MEASURED_LIMIT_TOLERANCE = 0.05


class BoundaryInputError(InputError):
    """Unusable backend input. ``key`` names the cause (``joint_states.missing``, ``imu.frame``...)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Ros2ControlConfig:
    """What the boundary needs from the controller manager's parameter file (``ros2_controllers.yaml``).

    ``use_local_topics`` and ``map_interface_to_joint_state`` of joint_state_broadcaster (which
    hardware interface fills each ``JointState`` field), ``frame_id`` and ``sensor_name`` of
    imu_sensor_broadcaster, each effort controller's ``joints``, and each
    force_torque_sensor_broadcaster's ``frame_id`` (``force_torque``: optional ankle sensors).
    """

    use_local_topics: bool = False
    map_interface_to_joint_state: dict[str, str] = field(
        default_factory=lambda: {"position": "position", "velocity": "velocity", "effort": "effort"})
    imu_frame_id: str = ""
    imu_sensor_name: str = ""
    controllers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = "<memory>"
    #: force_torque_sensor_broadcaster name -> the ``frame_id`` of its messages
    force_torque: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_file(cls, path: str | Path) -> Ros2ControlConfig:
        """Read a controller manager parameter file: broadcasters by their default names, and every
        controller of type ``effort_controllers/JointGroupEffortController`` (or a
        ``forward_command_controller/ForwardCommandController`` on ``effort``) with its ``joints``."""
        doc, src = read_document(path), str(path)

        def params(name: str) -> dict:
            node = doc.get(name) or doc.get(f"/**/{name}") or {}
            return node.get("ros__parameters", {}) if isinstance(node, dict) else {}

        cm = params("controller_manager")
        jsb, imu = params(JOINT_STATE_BROADCASTER), params(IMU_SENSOR_BROADCASTER)
        mapping = {"position": "position", "velocity": "velocity", "effort": "effort"}
        renamed = jsb.get("map_interface_to_joint_state") or {}
        if not isinstance(renamed, dict) or any(k not in mapping for k in renamed):
            raise ConfigError(f"{src}: {JOINT_STATE_BROADCASTER}.map_interface_to_joint_state: expected keys "
                              f"among {sorted(mapping)}, got {renamed!r}")
        mapping.update({k: str(v) for k, v in renamed.items()})
        controllers, force_torque = {}, {}
        for name, entry in cm.items():
            kind = entry.get("type", "") if isinstance(entry, dict) else ""
            own = params(name)
            kind = own.get("type", kind)
            effort = kind == "effort_controllers/JointGroupEffortController" or (
                kind == "forward_command_controller/ForwardCommandController" and own.get("interface_name") == "effort")
            if effort:
                joints = own.get("joints")
                if not isinstance(joints, list) or not joints:
                    raise ConfigError(f"{src}: {name}.joints: expected the controller's joints, got {joints!r}")
                controllers[name] = tuple(str(j) for j in joints)
            if kind == FORCE_TORQUE_SENSOR_BROADCASTER_TYPE:
                frame = own.get("frame_id")
                if not isinstance(frame, str) or not frame:  # the broadcaster refuses to configure without it
                    raise ConfigError(f"{src}: {name}.frame_id: required by force_torque_sensor_broadcaster, "
                                      f"got {frame!r}")
                force_torque[name] = frame
        return cls(bool(jsb.get("use_local_topics", False)), mapping, str(imu.get("frame_id", "")),
                   str(imu.get("sensor_name", "")), controllers, src, force_torque)

    def joint_states_topic(self, namespace: str = "") -> str:
        """joint_state_broadcaster's topic: ``<ns>/joint_states``, or ``<ns>/joint_state_broadcaster/joint_states``
        with ``use_local_topics`` (``~/joint_states``)."""
        local = f"{JOINT_STATE_BROADCASTER}/" if self.use_local_topics else ""
        return f"{namespace.rstrip('/')}/{local}joint_states"

    def imu_topic(self, namespace: str = "") -> str:
        """imu_sensor_broadcaster's topic, ``<ns>/imu_sensor_broadcaster/imu`` (``~/imu``)."""
        return f"{namespace.rstrip('/')}/{IMU_SENSOR_BROADCASTER}/imu"

    def wrench_topics(self, namespace: str = "") -> dict[str, str]:
        """Each force_torque_sensor_broadcaster's topic, ``<ns>/<broadcaster>/wrench`` (``~/wrench``)."""
        return {b: f"{namespace.rstrip('/')}/{b}/wrench" for b in self.force_torque}

    def command_topics(self, namespace: str = "") -> dict[str, str]:
        """Each effort controller's command topic, ``<ns>/<controller>/commands`` (``~/commands``)."""
        return {c: f"{namespace.rstrip('/')}/{c}/commands" for c in self.controllers}


@dataclass
class NativeState:
    """One joint-state message as native samples (and, in the serial space, the solved
    configuration the next commands are mapped at)."""

    actuators: ActuatorSample
    encoders: EncoderSample
    q: np.ndarray | None = None


class Ros2ControlBoundary:
    """Native samples <-> ros2_control arrays for one robot (see the module docstring).

    Args:
        hw: the hardware map (its selected joint space).
        clm: the closed-chain model (checked against ``hw``).
        config: the controller manager's file: its effort controllers must be those of ``hw``,
            joint for joint in the same order, and its IMU frame the map's (default: ``hw``'s own).

    Raises:
        ConfigError: the map does not fit the model, or the controllers' file does not fit the map.
    """

    def __init__(self, hw: HardwareMap, clm: ClosedLoopModel, config: Ros2ControlConfig | None = None) -> None:
        check_against_model(hw, clm)
        self.hw, self.clm = hw, clm
        self.config = config or Ros2ControlConfig(imu_frame_id=hw.imu.frame_id, imu_sensor_name=hw.imu.sensor_name,
                                                  controllers=dict(hw.controllers), source=hw.source)
        cfg = self.config
        if dict(cfg.controllers) != dict(hw.controllers):
            raise ConfigError(f"{cfg.source}: effort controllers {dict(cfg.controllers)} differ from those of "
                              f"{hw.source} ({hw.joint_space} joint space): {dict(hw.controllers)}")
        for key, value, want in (("frame_id", cfg.imu_frame_id, hw.imu.frame_id),
                                 ("sensor_name", cfg.imu_sensor_name, hw.imu.sensor_name)):
            if value != want:
                raise ConfigError(f"{cfg.source}: {IMU_SENSOR_BROADCASTER}.{key}: {value!r}, the hardware map "
                                  f"({hw.source}) says {want!r}")
        self.serial = hw.joint_space == "serial"
        m, a_names = clm.model, clm.actuated_joint_names
        pos = {n: i for i, n in enumerate(a_names)}
        #: hardware names read from the joint state, and for each its destination
        self._read_names = [j.name for j in hw.joints]
        if self.serial:
            self._serial = [hw.joint(n) for n in hw.commanded()]
            self.map = SerialJointMap(clm, [j.model for j in self._serial])
            self._scale = np.array([j.scale for j in self._serial])
            self._offset = np.array([j.offset for j in self._serial])
            self._enc_idx_q = np.array([m.joints[m.getJointId(n)].idx_q for n in clm.absolute_encoders], dtype=int)
            screws = BallScrewActuators.from_model(clm, default_screw_lead_m=np.nan, default_screw_efficiency=np.nan)
            self._nm_per_n = np.where(screws.is_linear, 1.0 / screws.paper_gain, 1.0)
            if not np.all(np.isfinite(self._nm_per_n)):
                raise ConfigError(f"{clm.closure_file.source}: actuators: screw lead and efficiency needed to give "
                                  f"the serial joints' torques as motor torques")
        else:
            acts = [hw.joint(n) for n in hw.commanded()]
            self._act_hw = [next(j.name for j in hw.role("actuator") if j.model == n) for n in a_names]
            self._act_rows = np.array([pos[j.model] for j in acts], dtype=int)  # command order -> model order
            per_n = {j.model: j.motor_torque_per_newton() for j in hw.role("actuator")}
            self._state_nm_per_n = np.array([per_n[n] if hw.joint(h).effort_state == "axial_force" else 1.0
                                             for n, h in zip(a_names, self._act_hw)])
            self._cmd_gain = np.array([j.motor_torque_per_newton() if j.effort_command == "motor_torque" else 1.0
                                       for j in acts])
            enc = {j.model: j for j in hw.role("encoder")}
            self._enc = [enc[n] for n in clm.absolute_encoders]
        self.q: np.ndarray | None = None

    def source_topic(self, exc: BoundaryInputError) -> str:
        """The topic (relative to the namespace) of the message ``exc`` refused (diagnostics)."""
        kind, cfg = exc.key.split(".")[0], self.config
        return {"joint_states": cfg.joint_states_topic(), "imu": cfg.imu_topic()}.get(kind, kind).lstrip("/")

    # ------------------------------------------------------------------ state
    def _fields(self, names: Sequence[str], fields: Mapping[str, Any]) -> dict[str, np.ndarray]:
        names = list(names)
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise BoundaryInputError("joint_states.duplicate", f"joint_states: joints {dup} listed twice")
        index = {n: i for i, n in enumerate(names)}
        missing = [n for n in self._read_names if n not in index]
        if missing:
            raise BoundaryInputError("joint_states.missing", f"joint_states: joints {missing} missing."
                                     + suggest(missing[0], names))
        rows = np.array([index[n] for n in self._read_names], dtype=int)
        out = {}
        for key, values in fields.items():
            v = np.asarray(values if values is not None else [], dtype=float)
            if v.size == 0 and key == "effort":
                out[key] = np.full(len(rows), np.nan)
                continue
            if v.shape != (len(names),):
                raise BoundaryInputError(f"joint_states.{key}_size", f"joint_states: {key} has {v.size} values for "
                                         f"{len(names)} names")
            out[key] = v[rows]
        return out

    def _finite(self, key: str, values: np.ndarray, names: Sequence[str]) -> np.ndarray:
        bad = ~np.isfinite(values)
        if bad.any():
            which = [n for n, b in zip(names, bad) if b]
            raise BoundaryInputError(f"joint_states.{key}_nan", f"joint_states: non-finite {key} of {which} "
                                     f"(a state interface missing, or the hardware's value)")
        return values

    def state(self, names: Sequence[str], position: Sequence[float] | np.ndarray,
              velocity: Sequence[float] | np.ndarray, effort: Sequence[float] | np.ndarray | None,
              stamp_s: float) -> NativeState:
        """A joint_state_broadcaster message's arrays as native samples.

        Positions and velocities of every mapped joint must be finite (the encoders' velocities
        excepted); efforts may all be absent (NaN or empty: the sample's ``effort`` is None) but not
        some of them.

        Raises:
            BoundaryInputError: duplicated or missing joints, arrays of the wrong size, non-finite
                values, or serial joints outside the reachable set.
        """
        if not np.isfinite(stamp_s):
            raise BoundaryInputError("joint_states.stamp", f"joint_states: non-finite stamp {stamp_s!r}")
        f = self._fields(names, {"position": position, "velocity": velocity, "effort": effort})
        hw_names = self._read_names
        self._finite("position", f["position"], hw_names)
        moving = [i for i, n in enumerate(hw_names) if self.hw.joint(n).role != "encoder"]
        self._finite("velocity", f["velocity"][moving], [hw_names[i] for i in moving])
        eff: np.ndarray | None  # None: no efforts reported
        eff = f["effort"][moving]
        if np.isnan(eff).all():
            eff = None
        else:
            self._finite("effort", eff, [hw_names[i] for i in moving])
        return self._serial_state(f, eff, stamp_s) if self.serial else self._actuator_state(f, eff, stamp_s)

    def _actuator_state(self, f: dict, eff: np.ndarray | None, stamp_s: float) -> NativeState:
        order = {n: i for i, n in enumerate(self._read_names)}
        rows = np.array([order[h] for h in self._act_hw], dtype=int)
        effort = None
        if eff is not None:
            moving = [n for n in self._read_names if self.hw.joint(n).role != "encoder"]
            by_name = dict(zip(moving, eff))
            effort = np.array([by_name[h] for h in self._act_hw]) * self._state_nm_per_n
        enc = np.array([(f["position"][order[j.name]] - j.offset) / j.scale for j in self._enc])
        return NativeState(ActuatorSample(f["position"][rows].copy(), f["velocity"][rows].copy(), effort, stamp_s),
                           EncoderSample(enc, stamp_s))

    def _serial_state(self, f: dict, eff: np.ndarray | None, stamp_s: float) -> NativeState:
        order = {n: i for i, n in enumerate(self._read_names)}
        rows = np.array([order[j.name] for j in self._serial], dtype=int)
        y = (f["position"][rows] - self._offset) / self._scale
        y_dot = f["velocity"][rows] / self._scale
        try:
            s = self.map.to_actuators(y, y_dot, limit_tolerance=MEASURED_LIMIT_TOLERANCE)
        except KangarooWbcError as exc:
            raise BoundaryInputError("joint_states.unreachable", f"joint_states: serial joints not mapped to the "
                                     f"actuators: {exc}") from exc
        effort = None
        if eff is not None:
            moving = {n: i for i, n in enumerate(n for n in self._read_names if self.hw.joint(n).role != "encoder")}
            tau_y = eff[[moving[j.name] for j in self._serial]] * self._scale
            effort = self.map.actuator_forces(s.q, tau_y) * self._nm_per_n
        self.q = s.q.copy()
        return NativeState(ActuatorSample(s.theta_a, s.theta_dot_a, effort, stamp_s),
                           EncoderSample(s.q[self._enc_idx_q].copy(), stamp_s), s.q)

    # ------------------------------------------------------------------ IMU
    def imu(self, frame_id: str, orientation_xyzw: Sequence[float] | np.ndarray,
            angular_velocity: Sequence[float] | np.ndarray, linear_acceleration: Sequence[float] | np.ndarray,
            stamp_s: float,
            orientation_covariance0: float = 0.0) -> ImuSample:
        """An imu_sensor_broadcaster message's fields as an :class:`ImuSample`.

        Raises:
            BoundaryInputError: a frame other than the map's IMU frame, no orientation
                (``orientation_covariance[0] == -1``), a non-unit quaternion or non-finite values.
        """
        want = self.hw.imu.frame_id
        if frame_id != want:
            raise BoundaryInputError("imu.frame", f"imu: frame_id {frame_id!r} is not the model's IMU frame {want!r} "
                                     f"(imu_sensor_broadcaster's frame_id parameter)")
        if orientation_covariance0 == -1.0:
            raise BoundaryInputError("imu.orientation", "imu: the message has no orientation "
                                     "(orientation_covariance[0] = -1); the state estimator needs it")
        parts = {"orientation": (orientation_xyzw, 4), "angular_velocity": (angular_velocity, 3),
                 "linear_acceleration": (linear_acceleration, 3), "stamp": ([stamp_s], 1)}
        arrays = {}
        for key, (values, n) in parts.items():
            v = np.asarray(values, dtype=float)
            if v.shape != (n,) or not np.isfinite(v).all():
                raise BoundaryInputError("imu.nan", f"imu: {key} {np.array2string(v, precision=4)} is not "
                                         f"{n} finite numbers")
            arrays[key] = v
        q = arrays["orientation"]
        norm = float(np.linalg.norm(q))
        if abs(norm - 1.0) > QUATERNION_NORM_TOL:
            raise BoundaryInputError("imu.quaternion", f"imu: orientation norm {norm:.6g} is not 1")
        return ImuSample(q / norm, arrays["angular_velocity"], arrays["linear_acceleration"], float(stamp_s))

    # ------------------------------------------------------------------ commands
    def commands(self, force_n: Sequence[float] | np.ndarray, q: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The controller's actuator forces [N] (model actuator order) as each effort controller's
        ``data`` (its ``joints`` order, the map's units).

        ``q``: serial space, the closed configuration the forces were computed at (the controller's
        state estimate); default: the configuration of the latest :meth:`state`.

        Raises:
            BoundaryInputError: forces of the wrong size or non-finite, no state yet (serial space:
                the torques depend on the configuration), or the map singular there.
        """
        f = np.asarray(force_n, dtype=float)
        if f.shape != (self.clm.n_a,):
            raise BoundaryInputError("command.size", f"command: {f.size} forces for {self.clm.n_a} actuators")
        if not np.isfinite(f).all():
            bad = [n for n, x in zip(self.clm.actuated_joint_names, f) if not np.isfinite(x)]
            raise BoundaryInputError("command.nan", f"command: non-finite force of {bad}")
        if self.serial:
            q = self.q if q is None else q
            if q is None:
                raise BoundaryInputError("command.no_state", "command: no joint state converted yet; the serial "
                                         "torques are mapped at the latest configuration")
            try:
                data = self.map.serial_torques(q, f) / self._scale
            except KangarooWbcError as exc:
                raise BoundaryInputError("command.singular", f"command: {exc}") from exc
        else:
            data = f[self._act_rows] * self._cmd_gain
        if not np.isfinite(data).all():  # never NaN to an actuator
            raise BoundaryInputError("command.nan", f"command: non-finite result {np.array2string(data, precision=4)}")
        out, start = {}, 0
        for name, joints in self.hw.controllers.items():
            out[name] = data[start:start + len(joints)].copy()
            start += len(joints)
        return out
