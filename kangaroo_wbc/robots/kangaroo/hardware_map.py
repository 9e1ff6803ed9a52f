"""The Kangaroo's hardware map (``config/hardware_map.yaml``), generated from ``params.yaml``.

Format and loader: :mod:`kangaroo_wbc.model.hardware_map`. Both joint spaces are written:

* ``actuator``: the 12 prismatic actuators under the model's names, effort as axial force [N]
  (what a ros2_control system that exposes a prismatic joint reports and takes, Gazebo's
  included), screw lead and efficiency from ``params.yaml`` for drivers that speak motor torque;
  encoder kind from ``absolute_actuators``; the passive absolute encoders (``absolute_encoders``)
  as state-only joints.
* ``serial``: six joints per leg under PAL's names, in the order of PAL's leg controllers
  (``kangaroo_controller_configuration/config/leg_effort_controller.yaml``): ``leg_<side>_1_joint``
  hip yaw, ``_2_joint`` hip pitch, ``_3_joint`` hip roll (the axes of PAL's description: ``_2``
  turns about y, ``_3`` about x), ``leg_<side>_length_joint`` the leg's length, ``_4_joint`` ankle
  pitch, ``_5_joint`` ankle roll. This model's leg has a revolute knee where PAL's description has
  a prismatic length joint: ``leg_<side>_length_joint`` maps to the knee angle [rad], and a driver
  whose length joint is prismatic needs its own map. Every serial joint is absolute (the
  hardware computes it from absolute sensors).

Each leg has one ``leg_<side>_effort_controller`` (PAL's name) over its six joints.
"""

from __future__ import annotations

from typing import Any

import yaml

from kangaroo_wbc.model.hardware_map import FORMAT
from kangaroo_wbc.robots.kangaroo.generator import SIDES, actuator_joint, output_joint
from kangaroo_wbc.robots.kangaroo.params import ACTUATORS, KangarooParams, load_params

#: PAL's serial joint suffixes and the model's output keys, in the order of PAL's leg controllers.
PAL_SERIAL = (("1", "hip_yaw"), ("2", "hip_pitch"), ("3", "hip_roll"), ("length", "knee"),
              ("4", "ankle_pitch"), ("5", "ankle_roll"))

#: Name of the IMU's ros2_control ``<sensor>`` (and of the Gazebo sensor, which gz_ros2_control
#: finds by that name) and the model frame its messages carry.
IMU_SENSOR = "imu_sensor"
IMU_FRAME = "imu"


def ft_broadcaster(side: str) -> str:
    """The name of an ankle's force_torque_sensor_broadcaster, ``leg_<side>_ft_sensor_broadcaster``."""
    return f"leg_{side}_ft_sensor_broadcaster"


def ankle_ft_sensors() -> dict[str, dict[str, str]]:
    """The ankle F/T sensors (``force_torque``): one per foot, at the foot link (its origin the ankle's
    U-joint centre; the foot's mass below it), compared with that foot's sole."""
    return {ft_broadcaster(s): {"sensor_name": f"leg_{s}_ft_sensor", "frame_id": f"{s}_foot_link", "sole": f"{s}_sole"}
            for s in SIDES}

HEADER = """\
# Kangaroo hardware map: the joints a ros2_control driver exposes and how each maps onto the model.
# GENERATED from kangaroo_wbc/robots/kangaroo/params.yaml - do not edit; regenerate with
#   kangaroo-wbc model ros2-control
# Override it with a file of the same structure (mappings merge key by key): e.g. select the
# joint space, rename joints (joint_spaces.<space>.rename: {generated name: driver's name}), give a
# serial joint's sign and zero (scale, offset: hardware = scale * model + offset) or an actuator's
# effort as motor torque [N m] (effort_state / effort_command: motor_torque).
# Format: kangaroo_wbc/model/hardware_map.py; docs/ros2_control.md.
"""


def pal_serial_joint(side: str, suffix: str) -> str:
    """PAL's name of a serial leg joint, e.g. ``leg_left_length_joint``."""
    return f"leg_{side}_{suffix}_joint"


def effort_controller(side: str) -> str:
    """PAL's name of a leg's effort controller, ``leg_<side>_effort_controller``."""
    return f"leg_{side}_effort_controller"


def hardware_map_document(prm: KangarooParams | None = None) -> dict[str, Any]:
    """The hardware map as a mapping (both joint spaces; ``joint_space: actuator``)."""
    prm = prm or load_params()
    absolute_actuators = set(prm.raw("absolute_actuators"))
    actuator_joints: dict[str, Any] = {}
    for side in SIDES:
        for key in ACTUATORS:
            a = prm.actuator(key)
            actuator_joints[actuator_joint(side, key)] = {
                "model": actuator_joint(side, key), "role": "actuator",
                "encoder": "absolute" if key in absolute_actuators else "relative",
                "effort_state": "axial_force", "effort_command": "axial_force",
                "screw_lead_m": a["screw_lead_m"], "screw_efficiency": a["screw_efficiency"]}
    for side in SIDES:
        for key in prm.raw("absolute_encoders"):
            actuator_joints[output_joint(side, key)] = {"model": output_joint(side, key), "role": "encoder",
                                                        "encoder": "absolute"}
    serial_joints: dict[str, Any] = {}
    for side in SIDES:
        for suffix, key in PAL_SERIAL:
            serial_joints[pal_serial_joint(side, suffix)] = {
                "model": output_joint(side, key), "role": "serial", "encoder": "absolute",
                "effort_state": "joint_torque", "effort_command": "joint_torque", "scale": 1.0, "offset": 0.0}
    return {
        "format": FORMAT,
        "robot": prm.raw("name"),
        "joint_space": "actuator",
        "imu": {"sensor_name": IMU_SENSOR, "frame_id": IMU_FRAME},
        "force_torque": ankle_ft_sensors(),
        "joint_spaces": {
            "actuator": {
                "controllers": {effort_controller(s): [actuator_joint(s, k) for k in ACTUATORS] for s in SIDES},
                "joints": actuator_joints,
                "rename": {},
            },
            "serial": {
                "controllers": {effort_controller(s): [pal_serial_joint(s, x) for x, _ in PAL_SERIAL] for s in SIDES},
                "joints": serial_joints,
                "rename": {},
            },
        },
    }


class _FlowLists(yaml.SafeDumper):
    """Joint dicts on one line each, lists of names on one line: a file a person can read."""


def _represent_dict(dumper: yaml.SafeDumper, data: dict) -> yaml.Node:
    flow = all(not isinstance(v, (dict, list)) for v in data.values()) and len(data) > 0
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


_FlowLists.add_representer(dict, _represent_dict)
_FlowLists.add_representer(list, _represent_list)


def dump_yaml(doc: dict[str, Any]) -> str:
    """YAML text of a generated document: key order kept, leaves on one line per joint."""
    return yaml.dump(doc, Dumper=_FlowLists, sort_keys=False, width=1000, allow_unicode=True)


def hardware_map_text(prm: KangarooParams | None = None) -> str:
    """The text of ``config/hardware_map.yaml``."""
    return HEADER + dump_yaml(hardware_map_document(prm))
