"""The one-leg test bench: the Kangaroo with one leg removed and the pelvis clamped (bring-up rig).

The rig's model is **derived at load time from the committed generated files** (``urdf/kangaroo.urdf``
and ``urdf/kangaroo_closures.yaml``), never generated a second time, so it cannot drift from the
robot's: :func:`one_leg_texts` removes the other leg's subtree and everything that names it.

* **Subtree.** The other leg's roots are the joints from ``base_link`` whose name starts with
  ``<side>_`` (hip yaw joint, hip yaw actuator pivot); every link below them is removed with its
  joints, frames (the cut frames, the sole and its corners) and inertias. Every remaining link and
  joint keeps its name, and nothing that remains may carry the removed side's prefix (checked).
* **Closure file.** Loops with a frame in the removed subtree, the removed actuated joints, absolute
  encoders and actuators, their ``actuators`` entries and their sub-mechanisms are dropped; a loop
  with one frame removed and the other kept is an error (the cut would not be a cut any more).

:func:`load_one_leg` loads the derived pair as every other model is loaded
(:meth:`ClosedLoopModel.from_files`) with a **floating base**: the clamp is modelled where it acts,
as a bilateral fixture on the pelvis (:mod:`kangaroo_wbc.control.rig`), so the estimators and the
controller keep the structure they have on the free robot. The simulator welds the pelvis to the
world instead (:func:`make_rig_sim`: the MJCF's root without a free joint) and adds a **force plate**:
a static box under the foot whose contact force is the plate's reading (the simulator's ground-truth
sole wrench, :meth:`~kangaroo_wbc.sim.ClosedChainSim.contact_wrenches`).

.. code-block:: python

    from kangaroo_wbc.robots.kangaroo.rig import make_rig, one_leg_texts

    rig = make_rig("one_leg")            # model (floating base), MJCF with the plate, geometry
    texts = one_leg_texts("left")        # {"urdf": ..., "closures": ...}
"""

from __future__ import annotations

import math
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import mujoco
import numpy as np
import pinocchio as pin
import yaml

from kangaroo_wbc.errors import ConfigError, InputError, ModelError, suggest
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.robots.kangaroo.files import FILE_NAMES, kangaroo_files
from kangaroo_wbc.robots.kangaroo.generator import SIDES
from kangaroo_wbc.robots.kangaroo.robot import SOLES
from kangaroo_wbc.sim.simulator import ClosedChainSim

#: Rig configurations known to :func:`make_rig` (the ``--rig`` option and the ``rig`` launch argument).
RIGS: tuple[str, ...] = ("one_leg",)

#: The pelvis's height above the floor on the rig [m] (the root's weld in the MJCF).
RIG_PELVIS_HEIGHT_M = 1.2
#: The rig's boot pose of the kept leg: serial output angles [rad] (hip pitch, knee, ankle pitch;
#: the sole level: ankle pitch = -(knee + hip pitch)), the others at the standing pose.
RIG_POSE_OUTPUTS = {"hip_pitch": -0.2, "knee": 0.9, "ankle_pitch": -0.7}
#: The force plate: its top this far below the sole at the boot pose [m], and its size
#: (length x, width y, thickness z) [m], centred under the sole.
PLATE_BELOW_SOLE_M = 0.07
PLATE_SIZE_M = (0.40, 0.30, 0.04)
#: MJCF names of the plate's geometry and body.
PLATE_NAME = "force_plate"


def _removed_links(root: ET.Element, side: str) -> set[str | None]:
    """Links of the ``side`` leg: the subtrees below the joints from ``base_link`` named ``<side>_*``."""
    children: dict[str | None, list[str | None]] = {}
    roots: list[str | None] = []
    for j in root.iter("joint"):
        # a URDF joint has a parent and a child element
        parent = cast(ET.Element, j.find("parent")).get("link")
        child = cast(ET.Element, j.find("child")).get("link")
        children.setdefault(parent, []).append(child)
        if parent == "base_link" and str(j.get("name")).startswith(f"{side}_"):
            roots.append(child)
    if not roots:
        raise ModelError(f"no joint from base_link named {side}_*: the URDF has no {side} leg to remove")
    removed, stack = set(), list(roots)
    while stack:
        link = stack.pop()
        removed.add(link)
        stack += children.get(link, [])
    return removed


def one_leg_texts(keep: str = "left", urdf_dir: str | Path | None = None) -> dict[str, str]:
    """URDF and closure-file texts of the one-leg model keeping leg ``keep`` (``left``/``right``),
    derived from the generated files of ``urdf_dir`` (default: :func:`kangaroo_files`); keyed
    ``urdf`` and ``closures`` as :data:`~kangaroo_wbc.robots.kangaroo.files.FILE_NAMES`.

    Raises:
        InputError: ``keep`` is not a side.
        ModelError: the files do not split into two legs as the generator makes them.
    """
    if keep not in SIDES:
        raise InputError(f"one-leg rig: unknown leg {keep!r}; legs are {list(SIDES)}")
    drop = next(s for s in SIDES if s != keep)
    urdf_path, closures_path = kangaroo_files(urdf_dir)
    tree = ET.parse(str(urdf_path))
    root = tree.getroot()
    removed = _removed_links(root, drop)
    removed_joints = set()
    for j in list(root.findall("joint")):
        if cast(ET.Element, j.find("child")).get("link") in removed:
            removed_joints.add(str(j.get("name")))
            root.remove(j)
    for link in list(root.findall("link")):
        if link.get("name") in removed:
            root.remove(link)
    left_over = [e.get("name") for e in (*root.findall("link"), *root.findall("joint"))
                 if str(e.get("name")).startswith(f"{drop}_")]
    if left_over:
        raise ModelError(f"{urdf_path}: {drop}_* elements outside the {drop} leg's subtree: {left_over}")
    header = (f"<!-- One-leg rig: {Path(urdf_path).name} without the {drop} leg (derived at load time by "
              "kangaroo_wbc.robots.kangaroo.rig; not a generated file) -->\n")
    urdf = header + ET.tostring(root, encoding="unicode") + "\n"
    doc = yaml.safe_load(closures_path.read_text())
    gone = removed | removed_joints

    def keep_names(key: str) -> list[str]:
        return [n for n in doc.get(key) or [] if n not in gone]

    closures = []
    for c in doc.get("closures") or []:
        out = [c["frame_a"] in removed, c["frame_u"] in removed]
        if all(out):
            continue
        if any(out):
            raise ModelError(f"{closures_path}: closure {c['name']!r} joins the {drop} leg to the rest of the robot")
        closures.append(c)
    doc["closures"] = closures
    for key in ("actuated_joints", "absolute_encoders", "absolute_actuators"):
        doc[key] = keep_names(key)
    doc["actuators"] = {n: v for n, v in (doc.get("actuators") or {}).items() if n not in gone}
    if "submechanism_joints" in doc:
        subs = {}
        for name, entry in doc["submechanism_joints"].items():
            kept = {k: [n for n in v if n not in gone] for k, v in entry.items()}
            if any(kept.values()):
                subs[name] = kept
        doc["submechanism_joints"] = subs
    text = (f"# One-leg rig: {Path(closures_path).name} without the {drop} leg (derived at load time by\n"
            "# kangaroo_wbc.robots.kangaroo.rig; not a generated file)\n"
            + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None))
    return {"urdf": urdf, "closures": text}


@dataclass
class Rig:
    """A rig configuration: the model the estimators and the controller share, the simulator's MJCF
    and the rig's geometry.

    Attributes:
        name: the configuration (:data:`RIGS`).
        leg: the leg kept (``left`` / ``right``).
        clm: the closed-loop model (floating base: the clamp is the controller's fixture contact).
        mjcf: MJCF text of the simulated rig (pelvis welded, force plate).
        sole: the kept leg's sole frame.
        initial_actuator_positions: the boot pose's actuator positions [m] by name (:func:`rig_pose`).
        plate_top_in_world_m: height of the plate's top surface in the simulator's world [m].
        plate_below_sole_m: the plate's top below the sole at the boot pose [m] (the rig's
            geometry, which the behaviour is told).
    """

    name: str
    leg: str
    clm: ClosedLoopModel
    mjcf: str
    sole: str
    initial_actuator_positions: dict[str, float]
    plate_top_in_world_m: float
    plate_below_sole_m: float


def load_one_leg(keep: str = "left", urdf_dir: str | Path | None = None,
                 floating_base: bool = True) -> ClosedLoopModel:
    """The one-leg closed-loop model of :func:`one_leg_texts` (``floating_base`` False: rooted at the
    pelvis, as ``link_tf`` draws it)."""
    clm, _ = _load_and_export(one_leg_texts(keep, urdf_dir), keep, mjcf=False, floating_base=floating_base)
    return clm


def _load_and_export(texts: dict[str, str], keep: str, mjcf: bool,
                     floating_base: bool = True) -> tuple[ClosedLoopModel, str | None]:
    """The model from the derived texts and, if ``mjcf``, the rig's MJCF (pelvis welded at
    :data:`RIG_PELVIS_HEIGHT_M`, one sole box); the texts are written to a temporary folder for the
    file-based loaders."""
    with tempfile.TemporaryDirectory() as tmp:
        u, c = Path(tmp) / FILE_NAMES["urdf"], Path(tmp) / FILE_NAMES["closures"]
        u.write_text(texts["urdf"])
        c.write_text(texts["closures"])
        clm = ClosedLoopModel.from_files(u, c, floating_base=floating_base)
        clm.source = f"one-leg rig ({keep} leg) of {kangaroo_files()[0]}"
        xml = None
        if mjcf:
            from kangaroo_wbc.robots.kangaroo.sim import sole_boxes_from_corners
            from kangaroo_wbc.sim.mjcf_export import export_mjcf

            # the options of export_kangaroo_mjcf, for the one sole left
            xml = export_mjcf(u, c, floating_base=False, soles=sole_boxes_from_corners(u, (SOLES[keep],)),
                              model_name=f"kangaroo_{keep}_leg_rig", visual_collisions=True,
                              base_position=(0.0, 0.0, RIG_PELVIS_HEIGHT_M))
    return clm, xml


def rig_pose(leg: str = "left") -> tuple[dict[str, float], np.ndarray]:
    """The rig's boot pose of leg ``leg``: its actuator positions [m] by name, and the sole's position
    in the pelvis frame [m]. The leg hangs with the knee bent by :data:`RIG_POSE_OUTPUTS` (the standing
    pose's knee is almost straight: a sole circling about it would have to leave the leg's reach, and
    a force along a straight leg loads no actuator), the sole level.

    Computed on the full model through the serial twin
    (:func:`~kangaroo_wbc.robots.kangaroo.robot.configuration_from_outputs`)."""
    from kangaroo_wbc.robots.kangaroo.generator import output_joint
    from kangaroo_wbc.robots.kangaroo.robot import configuration_from_outputs, load_kangaroo

    full = load_kangaroo(floating_base=True)
    q = configuration_from_outputs(full, {output_joint(leg, k): v for k, v in RIG_POSE_OUTPUTS.items()})
    theta = {n: float(x) for n, x in zip(full.actuated_joint_names, q[full.idx_q_a]) if n.startswith(f"{leg}_")}
    pin.framesForwardKinematics(full.model, full.data, q)
    oMb = full.data.oMf[full.model.getFrameId("base_link")]
    sole = oMb.actInv(full.data.oMf[full.model.getFrameId(SOLES[leg])]).translation
    return theta, sole.copy()


def add_force_plate(mjcf: str, center_xy_m: tuple[float, float], top_z_m: float,
                    size_m: tuple[float, float, float] = PLATE_SIZE_M) -> str:
    """``mjcf`` with a static box (the force plate) in the world: top face at ``top_z_m`` [m],
    centred at ``center_xy_m`` [m], colliding with the robot as the floor does."""
    root = ET.fromstring(mjcf)
    world = cast(ET.Element, root.find("worldbody"))  # an MJCF has a worldbody
    floor = next((g for g in world.findall("geom") if g.get("name") == "floor"), None)
    if floor is None:
        raise ModelError("the MJCF has no floor geometry to copy the plate's contact settings from")
    lx, wy, tz = (float(s) for s in size_m)
    attrs = {"name": PLATE_NAME, "type": "box", "size": f"{lx / 2:g} {wy / 2:g} {tz / 2:g}",
             "pos": f"{center_xy_m[0]:g} {center_xy_m[1]:g} {top_z_m - tz / 2:g}", "rgba": "0.3 0.5 0.8 1"}
    for key in ("contype", "conaffinity", "friction"):
        value = floor.get(key)
        if value is not None:
            attrs[key] = value
    world.insert(list(world).index(floor) + 1, ET.Element("geom", attrs))
    return ET.tostring(root, encoding="unicode")


def make_rig(name: str = "one_leg", leg: str = "left", urdf_dir: str | Path | None = None) -> Rig:
    """The rig configuration ``name`` (:data:`RIGS`) with leg ``leg`` kept.

    Raises:
        InputError: unknown rig (the message lists the valid ones) or leg.
    """
    if name not in RIGS:
        raise InputError(f"unknown rig {name!r}; rigs are {list(RIGS)}." + suggest(name, list(RIGS)))
    clm, xml = _load_and_export(one_leg_texts(leg, urdf_dir), leg, mjcf=True)
    assert xml is not None  # mjcf=True exports it
    initial, sole_in_base = rig_pose(leg)
    missing = [n for n in clm.actuated_joint_names if n not in initial]
    if missing:
        raise ConfigError(f"one-leg rig: no boot position for {missing}")
    top = RIG_PELVIS_HEIGHT_M + float(sole_in_base[2]) - PLATE_BELOW_SOLE_M
    if not top > PLATE_SIZE_M[2]:
        raise ConfigError(f"one-leg rig: the plate's top at {top:.3f} m leaves no room above the floor")
    mjcf = add_force_plate(xml, (float(sole_in_base[0]), float(sole_in_base[1])), top)
    return Rig(name=name, leg=leg, clm=clm, mjcf=mjcf, sole=SOLES[leg], initial_actuator_positions=initial,
               plate_top_in_world_m=top, plate_below_sole_m=PLATE_BELOW_SOLE_M)


class RigSim(ClosedChainSim):
    """The simulated rig: the pelvis welded to the world (no free joint), the force plate under the foot.

    :meth:`hold_base` and :attr:`base_held` keep the boot contract of the free robot's crane: the
    robot is *held* from boot until the controller is ready (the driver then holds the actuators on
    their first readings, :class:`~kangaroo_wbc.components.simulated_robot.SimulatedRobot`), and
    released after. On the rig the release lets the actuators take the controller's forces; the
    clamp never lets the pelvis go (the weld is in the model).
    """

    def __init__(self, mjcf: str | Path, **kwargs) -> None:
        self._boot_hold = False
        self._plate_geom: int | None = None
        super().__init__(mjcf, **kwargs)
        if self.floating_base:
            raise ModelError("RigSim needs a model whose root is welded to the world (no free joint)")

    def hold_base(self, hold: bool = True) -> None:
        """The boot hold (class docstring); the pelvis stays welded either way."""
        self._boot_hold = bool(hold)

    @property
    def base_held(self) -> bool:
        """True from boot until the controller is ready (class docstring)."""
        return self._boot_hold

    def plate_force(self) -> np.ndarray:
        """What the force plate measures: the force the robot exerts on it [N], world axes (its
        normal force is ``-plate_force()[2]``), the sum of MuJoCo's contact forces on the plate."""
        m, d = self.model, self.data
        if self._plate_geom is None:
            self._plate_geom = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, PLATE_NAME)
            if self._plate_geom < 0:
                raise ModelError(f"the rig's MJCF has no {PLATE_NAME!r} geometry")
        total, f6 = np.zeros(3), np.zeros(6)
        for i in range(int(d.ncon)):
            c = d.contact[i]
            sign = 1.0 if c.geom2 == self._plate_geom else -1.0 if c.geom1 == self._plate_geom else 0.0
            if sign and c.efc_address >= 0:
                mujoco.mj_contactForce(m, d, i, f6)
                total += sign * (c.frame.reshape(3, 3).T @ f6[:3])  # on geom2, along the normal from geom1
        return total


def make_rig_sim(rig: Rig, *, seed: int = 0, rate_hz: float = 1000.0, sensor_noise: bool = True,
                 ideal_actuators: bool = False) -> RigSim:
    """The rig's simulator as :class:`~kangaroo_wbc.components.simulated_robot.SimulatedRobot` builds
    the free robot's (physics step at most 1 ms, the hardware's sensor models), booted in the rig's
    pose (:func:`rig_pose`)."""
    from kangaroo_wbc.sim import SensorConfig

    substeps = max(1, math.ceil(1000.0 / rate_hz - 1e-9))
    return RigSim(rig.mjcf, seed=seed, control_period=1.0 / rate_hz, substeps=substeps,
                  sensor_config=None if sensor_noise else SensorConfig.noiseless(),
                  initial_actuator_positions=rig.initial_actuator_positions, ideal_actuators=ideal_actuators)


__all__ = ["RIGS", "Rig", "RigSim", "make_rig", "make_rig_sim", "one_leg_texts", "load_one_leg", "rig_pose",
           "add_force_plate", "PLATE_NAME", "RIG_PELVIS_HEIGHT_M", "PLATE_BELOW_SOLE_M"]
