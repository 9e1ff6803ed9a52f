"""The hardware map: which joints a robot's driver exposes, and how each maps onto the model.

A driver (a ros2_control system on the robot, gz_ros2_control in Gazebo) names its joints its own
way, may expose the actuators or serial-equivalent joints, and may report the actuator effort as an
axial force or as a motor torque. One YAML file says so (the Kangaroo's is generated from its
parameter file: ``config/hardware_map.yaml``); :func:`load_hardware_map` reads it, merges an
optional override file and checks it against the model. Format (``format: kangaroo_wbc/hardware_map/1``):

.. code-block:: yaml

    joint_space: serial                 # the space the hardware exposes: actuator | serial
    imu: {sensor_name: imu_sensor, frame_id: imu}
    force_torque:                       # optional ankle F/T sensors, one force_torque_sensor_broadcaster each
      leg_left_ft_sensor_broadcaster: {sensor_name: leg_left_ft_sensor, frame_id: left_foot_link, sole: left_sole}
    joint_spaces:
      serial:
        controllers:                    # effort controllers, each with its joints in command order
          leg_left_effort_controller: [leg_left_1_joint, ...]
        joints:                         # hardware joint name -> model joint
          leg_left_1_joint: {model: left_hip_yaw_joint, role: serial, encoder: absolute,
                             effort_state: joint_torque, effort_command: joint_torque, scale: 1.0, offset: 0.0}
        rename: {}                      # generated hardware name -> the driver's name (overrides)

Roles: ``actuator`` (a model actuator; position [m], velocity [m/s], effort ``axial_force`` [N] or
``motor_torque`` [N·m], converted through ``screw_lead_m`` and ``screw_efficiency``, eq. (47)),
``encoder`` (a passive joint with an absolute encoder, state only) and ``serial`` (a passive
output joint of the serial space; effort ``joint_torque`` [N·m], or [N] for a prismatic one).
``scale`` and ``offset`` relate the hardware value to the model's: ``hardware = scale * model +
offset`` for positions, ``scale * model`` for velocities, ``model / scale`` for efforts (the same
power). ``encoder``: ``absolute``, or ``relative`` (a per-boot offset, calibrated by the state
estimator: actuators only).

``force_torque`` (optional; absent or ``{}``: none): per ``force_torque_sensor_broadcaster`` (its
controller name, topic ``/<name>/wrench``) the ros2_control ``sensor_name``, the ``frame_id`` of its
messages (a frame of the model, on the foot) and the ``sole`` it is compared with
(:mod:`kangaroo_wbc.components.ankle_ft`). The sensors are never required.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from kangaroo_wbc.errors import ConfigError, JointNotFound, suggest

FORMAT = "kangaroo_wbc/hardware_map/1"
JOINT_SPACES = ("actuator", "serial")
ROLES = ("actuator", "encoder", "serial")
ENCODERS = ("absolute", "relative")
#: Effort kinds per role (state and command).
EFFORTS = {"actuator": ("axial_force", "motor_torque"), "serial": ("joint_torque",), "encoder": (None,)}
JOINT_KEYS = ("model", "role", "encoder", "effort_state", "effort_command", "scale", "offset", "screw_lead_m",
              "screw_efficiency")
TOP_KEYS = ("format", "robot", "joint_space", "imu", "force_torque", "joint_spaces")
FT_KEYS = ("sensor_name", "frame_id", "sole")


@dataclass(frozen=True)
class HardwareJoint:
    """One joint of the driver: its ``name`` there, the ``model`` joint, and how values convert."""

    name: str
    model: str
    role: str
    encoder: str
    effort_state: str | None
    effort_command: str | None
    scale: float = 1.0
    offset: float = 0.0
    screw_lead_m: float = float("nan")
    screw_efficiency: float = float("nan")

    def motor_torque_per_newton(self) -> float:
        """``L / (2 pi eta)`` [N·m/N]: the motor torque of 1 N of axial force (eq. (47) inverted)."""
        return self.screw_lead_m / (2.0 * np.pi * self.screw_efficiency)


@dataclass(frozen=True)
class ImuMapping:
    """The IMU: ``sensor_name`` of its ros2_control ``<sensor>`` and the ``frame_id`` its messages
    must carry (the model's IMU frame)."""

    sensor_name: str
    frame_id: str


@dataclass(frozen=True)
class ForceTorqueMapping:
    """An ankle force/torque sensor: the ``broadcaster`` (force_torque_sensor_broadcaster's
    controller name), its ros2_control ``sensor_name``, the ``frame_id`` of its messages (a model
    frame) and the model's ``sole`` frame it is compared with."""

    broadcaster: str
    sensor_name: str
    frame_id: str
    sole: str


@dataclass(frozen=True)
class HardwareMap:
    """The selected joint space of a hardware map file (see the module docstring)."""

    source: str
    robot: str
    joint_space: str
    joints: tuple[HardwareJoint, ...]
    controllers: dict[str, tuple[str, ...]]
    imu: ImuMapping
    force_torque: tuple[ForceTorqueMapping, ...] = ()

    @property
    def names(self) -> list[str]:
        """Hardware joint names, in file order."""
        return [j.name for j in self.joints]

    def joint(self, name: str) -> HardwareJoint:
        """The joint of hardware name ``name``. Raises JointNotFound listing the valid names."""
        for j in self.joints:
            if j.name == name:
                return j
        raise JointNotFound(f"{self.source}: unknown hardware joint {name!r}." + suggest(name, self.names))

    def role(self, role: str) -> list[HardwareJoint]:
        """The joints of one role, in file order."""
        return [j for j in self.joints if j.role == role]

    def commanded(self) -> list[str]:
        """Hardware names of the commanded joints, controller after controller, in command order."""
        return [n for joints in self.controllers.values() for n in joints]


def merge_documents(base: dict, over: Mapping) -> dict:
    """``base`` with ``over`` merged in (mappings recursively, anything else replaced)."""
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = merge_documents(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def read_document(path: str | Path) -> dict:
    """The mapping of a YAML file. Raises ConfigError: missing file, invalid YAML, not a mapping."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"{p}: hardware map file not found")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level")
    return data


def _unknown_keys(d: Mapping, valid: tuple[str, ...], where: str) -> None:
    for k in d:
        if k not in valid:
            raise ConfigError(f"{where}: unknown key {k!r}." + suggest(str(k), list(valid)))


def _mapping(d: Any, where: str) -> dict:
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: expected a mapping, got {d!r}")
    return d


def _number(v: Any, where: str, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or (positive and v <= 0):
        raise ConfigError(f"{where}: expected a finite{' positive' if positive else ''} number, got {v!r}")
    return float(v)


def _choice(v: Any, valid: tuple, where: str) -> Any:
    if v not in valid:
        raise ConfigError(f"{where}: {v!r} is not one of {list(valid)}")
    return v


def _joint(name: str, d: Any, where: str) -> HardwareJoint:
    d = _mapping(d, where)
    _unknown_keys(d, JOINT_KEYS, where)
    if not isinstance(d.get("model"), str) or not d["model"]:
        raise ConfigError(f"{where}.model: expected the model joint's name, got {d.get('model')!r}")
    role = _choice(d.get("role"), ROLES, f"{where}.role")
    encoder = _choice(d.get("encoder", "absolute"), ENCODERS, f"{where}.encoder")
    if encoder == "relative" and role != "actuator":
        raise ConfigError(f"{where}.encoder: 'relative' is for actuators only (the state estimator calibrates "
                          f"actuator offsets); a {role} joint must be absolute")
    efforts = EFFORTS[role]
    default = efforts[0]
    eff_state = _choice(d.get("effort_state", default), efforts, f"{where}.effort_state")
    eff_cmd = _choice(d.get("effort_command", default), efforts, f"{where}.effort_command")
    scale = _number(d.get("scale", 1.0), f"{where}.scale")
    if scale == 0.0:
        raise ConfigError(f"{where}.scale: must not be 0")
    lead = eta = float("nan")
    if role == "actuator":
        lead = _number(d.get("screw_lead_m"), f"{where}.screw_lead_m", positive=True)
        eta = _number(d.get("screw_efficiency"), f"{where}.screw_efficiency", positive=True)
        if eta > 1.0:
            raise ConfigError(f"{where}.screw_efficiency: must be <= 1, got {eta}")
        if scale != 1.0 or d.get("offset", 0.0) != 0.0:
            raise ConfigError(f"{where}: scale/offset are for serial and encoder joints (an actuator's offset "
                              f"is its encoder's, calibrated when 'encoder: relative')")
    return HardwareJoint(name, d["model"], role, encoder, eff_state, eff_cmd, scale,
                         _number(d.get("offset", 0.0), f"{where}.offset"), lead, eta)


def parse_hardware_map(data: dict, source: str = "<memory>", joint_space: str | None = None) -> HardwareMap:
    """The :class:`HardwareMap` of a parsed file, with ``joint_space`` (if given) replacing the
    file's choice. Every joint space of the file is checked, not only the selected one.

    Raises:
        ConfigError: naming the file and the key of the first problem.
    """
    _unknown_keys(data, TOP_KEYS, source)
    if data.get("format") != FORMAT:
        raise ConfigError(f"{source}: format: expected {FORMAT!r}, got {data.get('format')!r}")
    space = _choice(joint_space or data.get("joint_space"), JOINT_SPACES, f"{source}: joint_space")
    spaces = _mapping(data.get("joint_spaces"), f"{source}: joint_spaces")
    _unknown_keys(spaces, JOINT_SPACES, f"{source}: joint_spaces")
    if space not in spaces:
        raise ConfigError(f"{source}: joint_spaces: no {space!r} section")
    imu = _mapping(data.get("imu"), f"{source}: imu")
    _unknown_keys(imu, ("sensor_name", "frame_id"), f"{source}: imu")
    for k in ("sensor_name", "frame_id"):
        if not isinstance(imu.get(k), str) or not imu[k]:
            raise ConfigError(f"{source}: imu.{k}: expected a non-empty name, got {imu.get(k)!r}")
    parsed = {name: _space(name, sec, f"{source}: joint_spaces.{name}") for name, sec in spaces.items()}
    joints, controllers = parsed[space]
    return HardwareMap(source, str(data.get("robot", "")), space, joints, controllers,
                       ImuMapping(imu["sensor_name"], imu["frame_id"]),
                       _force_torque(data.get("force_torque") or {}, f"{source}: force_torque"))


def _force_torque(d: Any, where: str) -> tuple[ForceTorqueMapping, ...]:
    """The ``force_torque`` section, checked (each sensor name and sole at most once)."""
    out = []
    for name, entry in _mapping(d, where).items():
        entry = _mapping(entry, f"{where}.{name}")
        _unknown_keys(entry, FT_KEYS, f"{where}.{name}")
        for k in FT_KEYS:
            if not isinstance(entry.get(k), str) or not entry[k]:
                raise ConfigError(f"{where}.{name}.{k}: expected a non-empty name, got {entry.get(k)!r}")
        out.append(ForceTorqueMapping(str(name), entry["sensor_name"], entry["frame_id"], entry["sole"]))
    for key in ("sensor_name", "sole"):
        values = [getattr(m, key) for m in out]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ConfigError(f"{where}: {key} {twice} used by more than one sensor")
    return tuple(out)


def _space(space: str, sec: Any, where: str) -> tuple[tuple[HardwareJoint, ...], dict[str, tuple[str, ...]]]:
    """The joints and controllers of one ``joint_spaces`` section, checked."""
    sec = _mapping(sec, where)
    _unknown_keys(sec, ("controllers", "joints", "rename"), where)
    rename = _mapping(sec.get("rename") or {}, f"{where}.rename")
    raw_joints = _mapping(sec.get("joints"), f"{where}.joints")
    for old in rename:
        if old not in raw_joints:
            raise ConfigError(f"{where}.rename: unknown joint {old!r}." + suggest(str(old), list(raw_joints)))
    new_names = [str(rename.get(n, n)) for n in raw_joints]
    dup = sorted({n for n in new_names if new_names.count(n) > 1})
    if dup:
        raise ConfigError(f"{where}: hardware joint names {dup} used twice (after rename)")
    joints = tuple(_joint(str(rename.get(n, n)), d, f"{where}.joints.{n}") for n, d in raw_joints.items())
    models = [j.model for j in joints]
    dup = sorted({n for n in models if models.count(n) > 1})
    if dup:
        raise ConfigError(f"{where}.joints: model joints {dup} mapped twice")
    wrong = [j.name for j in joints if j.role == ("serial" if space == "actuator" else "actuator")]
    if wrong:
        raise ConfigError(f"{where}.joints: {wrong} have a role that does not belong to the {space!r} joint space")
    controllers: dict[str, tuple[str, ...]] = {}
    by_name = {j.name: j for j in joints}
    for cname, cjoints in _mapping(sec.get("controllers"), f"{where}.controllers").items():
        if not isinstance(cjoints, list) or not cjoints:
            raise ConfigError(f"{where}.controllers.{cname}: expected a non-empty list of joints")
        names = [str(rename.get(n, n)) for n in cjoints]
        for n in names:
            if n not in by_name:
                raise ConfigError(f"{where}.controllers.{cname}: unknown joint {n!r}." + suggest(n, list(by_name)))
            if by_name[n].role == "encoder":
                raise ConfigError(f"{where}.controllers.{cname}: {n!r} is an encoder (state only), not commandable")
        controllers[str(cname)] = tuple(names)
    commanded = [n for c in controllers.values() for n in c]
    twice = sorted({n for n in commanded if commanded.count(n) > 1})
    if twice:
        raise ConfigError(f"{where}.controllers: joints {twice} in more than one place")
    missing = [j.name for j in joints if j.role != "encoder" and j.name not in commanded]
    if missing:
        raise ConfigError(f"{where}.controllers: commandable joints {missing} are in no controller")
    return joints, controllers


def load_hardware_map(path: str | Path, override: str | Path | Mapping | None = None,
                      joint_space: str | None = None) -> HardwareMap:
    """Read a hardware map file, merge ``override`` (a file or a mapping of the same structure:
    mappings merge key by key, anything else replaces) and select ``joint_space`` (default: the
    file's ``joint_space``)."""
    data, source = read_document(path), str(path)
    if override is not None:
        over = override if isinstance(override, Mapping) else read_document(override)
        data = merge_documents(data, over)
        source = f"{source} + {override if not isinstance(override, Mapping) else '<override>'}"
    return parse_hardware_map(data, source, joint_space)


def check_against_model(hw: HardwareMap, clm: Any) -> None:
    """Check ``hw`` against a :class:`~kangaroo_wbc.model.ClosedLoopModel`: actuator joints are
    exactly its actuators and encoder joints its ``absolute_encoders`` (all of them: the state
    estimator calibrates with them), serial joints passive joints
    (as many as actuators; :class:`~kangaroo_wbc.model.serial_map.SerialJointMap` checks the rest).

    Raises:
        ConfigError: naming the file and the joints.
    """
    frames = [f.name for f in clm.model.frames]
    for ft in hw.force_torque:
        for key in ("frame_id", "sole"):
            name = getattr(ft, key)
            if name not in frames:
                raise ConfigError(f"{hw.source}: force_torque.{ft.broadcaster}.{key}: {name!r} is not a frame of the "
                                  "model." + suggest(name, frames))
    where = f"{hw.source}: joint_spaces.{hw.joint_space}"
    for j in hw.joints:
        valid = {"actuator": clm.actuated_joint_names, "encoder": clm.absolute_encoders,
                 "serial": clm.passive_joint_names}[j.role]
        if j.model not in valid:
            raise ConfigError(f"{where}.joints.{j.name}.model: {j.model!r} is not one of the model's {j.role} joints."
                              + suggest(j.model, list(valid)))
    if hw.joint_space == "actuator":
        for role, names in (("actuator", clm.actuated_joint_names), ("encoder", clm.absolute_encoders)):
            missing = sorted(set(names) - {j.model for j in hw.role(role)})
            if missing:
                raise ConfigError(f"{where}.joints: the model's {role} joints {missing} are not mapped")
    else:
        n = len(hw.role("serial"))
        if n != clm.n_a:
            raise ConfigError(f"{where}.joints: {n} serial joints, the model has {clm.n_a} actuators")
