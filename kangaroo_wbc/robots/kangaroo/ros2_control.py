"""The Kangaroo's ros2_control files, generated from ``params.yaml`` (committed; a test regenerates them).

``kangaroo-wbc model ros2-control [ROOT]`` (:func:`write`) writes, under the package root, for
the two joint spaces of the hardware map (``<s>`` = ``""`` for ``actuator``, ``_serial`` for ``serial``):

* ``config/hardware_map.yaml``: the hardware map (:mod:`kangaroo_wbc.robots.kangaroo.hardware_map`);
* ``config/ros2_controllers<s>.yaml``: the controller manager's file (:func:`controllers_yaml`);
* ``urdf/kangaroo_ros2_control<s>.urdf``: ``kangaroo.urdf`` with the driver's joint names and a
  ``<ros2_control>`` block for ``gz_ros2_control/GazeboSimSystem`` (:func:`ros2_control_urdf`; any
  other hardware plugin with ``--hardware-plugin``, written to ``--out``);
* ``urdf/kangaroo_gz<s>.sdf``: ``kangaroo.sdf`` (loops closed) with the same joint names, the IMU
  sensor and gz_ros2_control's system plugin (:func:`gazebo_sdf`).

The joints of the block, of the controllers and of the map are the same, in the same order: the
block lists the commanded joints controller by controller, then the state-only ones.

In the serial joint space the driver's joints are the model's output joints under the map's names;
the model gives them no effort limit (``output_effort_nm: 0``: no motor), which ros2_control
(Jazzy and later: the resource manager clamps commands to the URDF limits) and Gazebo would apply
to the commands. They get :func:`serial_effort_limits` instead: the largest serial torque the
actuators' ``max_force_n`` can produce over a sample of the reachable set, with a margin.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np
import pinocchio as pin
import yaml

from kangaroo_wbc.errors import ConfigError
from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel
from kangaroo_wbc.model.closures import parse_native
from kangaroo_wbc.model.hardware_map import (
    HardwareMap,
    merge_documents,
    parse_hardware_map,
    read_document,
)
from kangaroo_wbc.model.serial_map import SerialJointMap
from kangaroo_wbc.robots.kangaroo.description import Description
from kangaroo_wbc.robots.kangaroo.files import HEADER as MODEL_HEADER
from kangaroo_wbc.robots.kangaroo.files import generate_texts
from kangaroo_wbc.robots.kangaroo.generator import build
from kangaroo_wbc.robots.kangaroo.hardware_map import HEADER as MAP_HEADER
from kangaroo_wbc.robots.kangaroo.hardware_map import (
    dump_yaml,
    hardware_map_document,
    hardware_map_text,
)
from kangaroo_wbc.robots.kangaroo.params import KangarooParams, load_params
from kangaroo_wbc.robots.kangaroo.sdf_writer import write_sdf
from kangaroo_wbc.robots.kangaroo.urdf_writer import write_urdf

#: The package root of the source tree (``config/``, ``urdf/`` beside ``kangaroo_wbc/``).
ROOT = Path(__file__).resolve().parents[3]
GAZEBO_PLUGIN = "gz_ros2_control/GazeboSimSystem"
#: Controller manager rate [Hz]: the rate of the whole-body controller's loop.
UPDATE_RATE_HZ = 1000
#: Where the gz_ros2_control plugin's controller manager reads the description with the block
#: (``/robot_description`` is the package's own robot_state_publisher's, without it).
DESCRIPTION_TOPIC = "/ros2_control/robot_description"
#: Token of the SDF's ``<parameters>`` path, replaced by the installed share folder at launch
#: (gz passes the text to rcl as it is).
SHARE_TOKEN = "$(find kangaroo_wbc)"
#: Margin on the sampled serial torque bound, and the sample (seeded: the files are reproducible).
EFFORT_MARGIN, EFFORT_SAMPLES, EFFORT_SEED = 1.5, 200, 37
SUFFIX = {"actuator": "", "serial": "_serial"}


def position_controller(effort_controller: str) -> str:
    """The boot/hold controller of a leg: ``leg_<side>_effort_controller`` -> ``leg_<side>_position_controller``."""
    return effort_controller.removesuffix("effort_controller") + "position_controller"


@lru_cache(maxsize=4)
def serial_effort_limits(prm_key: str = "") -> dict[str, float]:
    """Serial torque bound [N·m] per output joint: ``max_k sum |A^{-T}| max_force_n`` over
    :data:`EFFORT_SAMPLES` reachable configurations (uniform strokes, kept within the passive
    limits), times :data:`EFFORT_MARGIN`, rounded up to 10 N·m. ``prm_key`` is the YAML text of
    non-default parameters (cache key); empty for the packaged ones."""
    prm = load_params() if not prm_key else KangarooParams(yaml.safe_load(prm_key))
    texts = generate_texts(prm, mjcf=False)
    clm = ClosedLoopModel(pin.buildModelFromXML(texts["urdf"]),
                          parse_native(yaml.safe_load(texts["closures"]), "<generated>"), source="<generated>")
    doc = hardware_map_document(prm)["joint_spaces"]["serial"]["joints"]
    outputs = list(dict.fromkeys(j["model"] for j in doc.values()))
    smap = SerialJointMap(clm, outputs)
    m = clm.model
    f_max = m.effortLimit[clm.idx_v_a]
    lo, hi = m.lowerPositionLimit[clm.idx_q_a], m.upperPositionLimit[clm.idx_q_a]
    lim = clm.passive_joint_limits()
    rng = np.random.default_rng(EFFORT_SEED)
    bound, kept = np.zeros(len(outputs)), 0
    while kept < EFFORT_SAMPLES:
        q, info = clm.closure_fk(lo + (hi - lo) * rng.random(clm.n_a), clm.q_ref, raise_on_failure=False)
        if not info.converged or np.any(q[lim.idx_q] < lim.lower) or np.any(q[lim.idx_q] > lim.upper):
            continue
        kept += 1
        bound = np.maximum(bound, np.abs(np.linalg.inv(smap.output_jacobian(q)).T) @ f_max)
    return {n: float(10.0 * np.ceil(EFFORT_MARGIN * b / 10.0)) for n, b in zip(outputs, bound)}


def _effort_limits(prm: KangarooParams) -> dict[str, float]:
    default = load_params()
    return serial_effort_limits("" if prm.data == default.data else yaml.safe_dump(prm.data))


def hardware_description(prm: KangarooParams, hw: HardwareMap) -> Description:
    """The generator's description with the driver's joint names (model joint -> hardware name) and,
    in the serial space, the serial joints' effort limits."""
    desc = build(prm)
    rename = {j.model: j.name for j in hw.joints}
    limits = _effort_limits(prm) if hw.joint_space == "serial" else {}
    joints = []
    for j in desc.joints:
        joint = dataclasses.replace(j, name=rename.get(j.name, j.name))
        if j.name in limits:
            joint = dataclasses.replace(joint, effort=limits[j.name])
        joints.append(joint)
    return dataclasses.replace(desc, joints=joints)


def ros2_control_block(hw: HardwareMap, plugin: str = GAZEBO_PLUGIN, plugin_params: dict[str, str] | None = None,
                       effort_limits: dict[str, float] | None = None, name: str = "KangarooSystem") -> str:
    """The ``<ros2_control>`` element: the hardware ``plugin`` (with ``<param>`` s), the commanded
    joints controller by controller (command ``effort`` and ``position``, state ``position``,
    ``velocity``, ``effort``), then the state-only joints (state ``position``, ``velocity``), then
    the IMU sensor (the ten interfaces imu_sensor_broadcaster reads).

    No ``initial_value``: gz_ros2_control resets each commanded joint to it (0 when absent), and
    only the zero configuration of the closed SDF is known to close every loop.
    """
    effort_limits = effort_limits or {}
    out = [f"  <ros2_control name={quoteattr(name)} type=\"system\">", "    <hardware>",
           f"      <plugin>{plugin}</plugin>"]
    out += [f"      <param name={quoteattr(k)}>{v}</param>" for k, v in (plugin_params or {}).items()]
    out.append("    </hardware>")
    for n in hw.commanded():
        limit = effort_limits.get(n)
        out.append(f"    <joint name={quoteattr(n)}>")
        if limit is None:
            out.append('      <command_interface name="effort"/>')
        else:
            out.append(f'      <command_interface name="effort"><param name="min">{-limit:g}</param>'
                       f'<param name="max">{limit:g}</param></command_interface>')
        out.append('      <command_interface name="position"/>')
        out += [f'      <state_interface name="{s}"/>' for s in ("position", "velocity", "effort")]
        out.append("    </joint>")
    for j in hw.joints:
        if j.name not in hw.commanded():
            out.append(f"    <joint name={quoteattr(j.name)}>")
            out += [f'      <state_interface name="{s}"/>' for s in ("position", "velocity")]
            out.append("    </joint>")
    out.append(f"    <sensor name={quoteattr(hw.imu.sensor_name)}>")
    for part, axes in (("orientation", "xyzw"), ("angular_velocity", "xyz"), ("linear_acceleration", "xyz")):
        out += [f'      <state_interface name="{part}.{a}"/>' for a in axes]
    out.append("    </sensor>")
    out.append("  </ros2_control>")
    return "\n".join(out)


def ros2_control_urdf(prm: KangarooParams, hw: HardwareMap, plugin: str = GAZEBO_PLUGIN,
                      plugin_params: dict[str, str] | None = None) -> str:
    """``kangaroo.urdf`` with the driver's joint names and the ``<ros2_control>`` block."""
    desc = hardware_description(prm, hw)
    limits = {j.name: j.effort for j in desc.joints if j.name in hw.commanded()} if hw.joint_space == "serial" else {}
    header = MODEL_HEADER.format(what=f"URDF with the <ros2_control> block of the {hw.joint_space!r} joint space",
                                 mass=desc.total_mass, cage=", without torso cage").replace(
        "kangaroo-wbc model generate", "kangaroo-wbc model ros2-control")
    text = write_urdf(desc, header)
    return text.replace("</robot>\n", ros2_control_block(hw, plugin, plugin_params, limits) + "\n</robot>\n")


def gazebo_sdf(prm: KangarooParams, hw: HardwareMap, controllers_file: str) -> str:
    """``kangaroo.sdf`` with the driver's joint names, an IMU sensor at the ``imu`` frame (named
    as the block's sensor: gz_ros2_control finds it by name), the IMU system and
    gz_ros2_control's system plugin reading ``controllers_file``."""
    desc = hardware_description(prm, hw)
    header = MODEL_HEADER.format(what=f"SDF for Gazebo with gz_ros2_control, {hw.joint_space!r} joint space",
                                 mass=desc.total_mass, cage=", without torso cage").replace(
        "kangaroo-wbc model generate", "kangaroo-wbc model ros2-control")
    text = write_sdf(desc, header)
    root = desc.links[0].name
    sensor = (f"      <sensor name={quoteattr(hw.imu.sensor_name)} type=\"imu\">"
              f"<pose relative_to={quoteattr(hw.imu.frame_id)}>0 0 0 0 0 0</pose>"
              f"<always_on>1</always_on><update_rate>{UPDATE_RATE_HZ}</update_rate>"
              f"<topic>{hw.imu.sensor_name}</topic></sensor>\n")
    start = text.index(f"    <link name={quoteattr(root)}>")
    end = text.index("    </link>\n", start)
    text = text[:end] + sensor + text[end:]
    plugins = ("    <plugin filename=\"gz-sim-imu-system\" name=\"gz::sim::systems::Imu\"/>\n"
               "    <plugin filename=\"gz_ros2_control-system\" name=\"gz_ros2_control::GazeboSimROS2ControlPlugin\">\n"
               f"      <parameters>{controllers_file}</parameters>\n"
               f"      <ros><remapping>/robot_description:={DESCRIPTION_TOPIC}</remapping></ros>\n"
               "      <hold_joints>true</hold_joints>\n"
               "    </plugin>\n")
    return text.replace("  </model>\n", plugins + "  </model>\n")


def controllers_yaml(hw: HardwareMap, update_rate_hz: int = UPDATE_RATE_HZ) -> str:
    """The controller manager's parameter file: joint_state_broadcaster (``use_local_topics``: the
    package's state estimator publishes ``/joint_states``), imu_sensor_broadcaster, and per leg an
    ``effort_controllers/JointGroupEffortController`` (inactive until the hand-over) with a
    ``joint_trajectory_controller/JointTrajectoryController`` on the position interfaces that
    holds the leg at boot and is the effort controller's fallback; per ankle F/T sensor of the map a
    ``force_torque_sensor_broadcaster/ForceTorqueSensorBroadcaster`` (``sensor_name``, ``frame_id``;
    optional: not spawned by ``gazebo.launch.py``, gz_ros2_control has no F/T interface)."""
    cm: dict = {"update_rate": update_rate_hz,
                "joint_state_broadcaster": {"type": "joint_state_broadcaster/JointStateBroadcaster"},
                "imu_sensor_broadcaster": {"type": "imu_sensor_broadcaster/IMUSensorBroadcaster"}}
    doc: dict = {"controller_manager": {"ros__parameters": cm},
                 "joint_state_broadcaster": {"ros__parameters": {"use_local_topics": True}},
                 "imu_sensor_broadcaster": {"ros__parameters": {"sensor_name": hw.imu.sensor_name,
                                                                "frame_id": hw.imu.frame_id}}}
    for ft in hw.force_torque:
        cm[ft.broadcaster] = {"type": "force_torque_sensor_broadcaster/ForceTorqueSensorBroadcaster"}
        doc[ft.broadcaster] = {"ros__parameters": {"sensor_name": ft.sensor_name, "frame_id": ft.frame_id}}
    for name, joints in hw.controllers.items():
        hold = position_controller(name)
        cm[name] = {"type": "effort_controllers/JointGroupEffortController", "fallback_controllers": [hold]}
        cm[hold] = {"type": "joint_trajectory_controller/JointTrajectoryController"}
        doc[name] = {"ros__parameters": {"joints": list(joints)}}
        doc[hold] = {"ros__parameters": {"joints": list(joints), "command_interfaces": ["position"],
                                         "state_interfaces": ["position", "velocity"]}}
    header = MAP_HEADER.splitlines()
    text = "\n".join([f"# Kangaroo ros2_control controllers, {hw.joint_space!r} joint space "
                      f"(config/hardware_map.yaml).", *header[1:3],
                      "# Boot: the position controllers hold the legs; the effort controllers are loaded inactive",
                      "# and switched in when the whole-body controller is ready (docs/ros2_control.md).", ""])
    return text + dump_yaml(doc).replace("update_rate: 1000", "update_rate: 1000  # [Hz]")


@dataclasses.dataclass(frozen=True)
class GazeboFiles:
    """What ``launch/gazebo.launch.py`` starts Gazebo with: the URDF text for robot_state_publisher
    (the controller manager's description), the SDF to spawn, the controllers' file, and the
    controllers to spawn (broadcasters and hold controllers active, effort controllers inactive)."""

    urdf: str
    sdf_path: Path
    controllers_path: Path
    active: tuple[str, ...]
    inactive: tuple[str, ...]


def gazebo_files(share: str | Path, joint_space: str, out_dir: str | Path,
                 hardware_map: str | Path | None = None) -> GazeboFiles:
    """The Gazebo files of ``joint_space`` from the installed ``share`` folder, the SDF written to
    ``out_dir`` with the share path in its ``<parameters>``. With a ``hardware_map`` override file
    every file is regenerated from the packaged parameters and the merged map (into ``out_dir``).

    Raises:
        ConfigError: an unknown joint space, a malformed override, missing generated files.
    """
    share, out = Path(share), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if joint_space not in SUFFIX:
        raise ConfigError(f"joint_space: {joint_space!r} is not one of {sorted(SUFFIX)}")
    sfx = SUFFIX[joint_space]
    if hardware_map:
        prm = load_params()
        doc = merge_documents(hardware_map_document(prm), read_document(hardware_map))
        hw = parse_hardware_map(doc, f"config/hardware_map.yaml + {hardware_map}", joint_space=joint_space)
        controllers = out / f"ros2_controllers{sfx}.yaml"
        controllers.write_text(controllers_yaml(hw))
        urdf, sdf = ros2_control_urdf(prm, hw), gazebo_sdf(prm, hw, str(controllers))
    else:
        paths = [share / "config" / f"ros2_controllers{sfx}.yaml", share / "urdf" / f"kangaroo_ros2_control{sfx}.urdf",
                 share / "urdf" / f"kangaroo_gz{sfx}.sdf", share / "config" / "hardware_map.yaml"]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise ConfigError(f"generated ros2_control files not found: {missing}")
        controllers = paths[0]
        urdf, sdf = paths[1].read_text(), paths[2].read_text().replace(SHARE_TOKEN, str(share))
        hw = parse_hardware_map(read_document(paths[3]), str(paths[3]), joint_space=joint_space)
    sdf_path = out / f"kangaroo_gz{sfx}.sdf"
    sdf_path.write_text(sdf)
    effort = tuple(hw.controllers)
    return GazeboFiles(urdf, sdf_path, controllers,
                       ("joint_state_broadcaster", "imu_sensor_broadcaster", *(position_controller(c) for c in effort)),
                       effort)


def generated_texts(prm: KangarooParams | None = None) -> dict[str, str]:
    """Every generated file's text, keyed by its path relative to the package root."""
    prm = prm or load_params()
    doc = hardware_map_document(prm)
    out = {"config/hardware_map.yaml": hardware_map_text(prm)}
    for space, sfx in SUFFIX.items():
        hw = parse_hardware_map(doc, "config/hardware_map.yaml", joint_space=space)
        out[f"config/ros2_controllers{sfx}.yaml"] = controllers_yaml(hw)
        out[f"urdf/kangaroo_ros2_control{sfx}.urdf"] = ros2_control_urdf(prm, hw)
        out[f"urdf/kangaroo_gz{sfx}.sdf"] = gazebo_sdf(prm, hw, f"{SHARE_TOKEN}/config/ros2_controllers{sfx}.yaml")
    return out


def write(root: str | Path = ROOT, prm: KangarooParams | None = None) -> list[Path]:
    """Write :func:`generated_texts` under ``root``; returns the paths written."""
    out = []
    for rel, text in generated_texts(prm).items():
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append(path)
    return out


def write_hardware_urdf(out: str | Path, plugin: str, prm: KangarooParams | None = None,
                        joint_space: str = "actuator", hardware_map: str | Path | None = None) -> Path:
    """Write to ``out`` the URDF of :func:`ros2_control_urdf` with the hardware plugin ``plugin`` (the
    robot's own driver, say) in ``joint_space``, the map generated from ``prm`` merged with the
    override file ``hardware_map`` if given (``kangaroo-wbc model ros2-control --hardware-plugin``)."""
    prm = prm if prm is not None else load_params()
    doc = hardware_map_document(prm)
    if hardware_map is not None:
        doc = merge_documents(doc, read_document(hardware_map))
    hw = parse_hardware_map(doc, str(hardware_map or "config/hardware_map.yaml"), joint_space=joint_space)
    path = Path(out)
    path.write_text(ros2_control_urdf(prm, hw, plugin))
    return path
