"""Run-time access to the generated Kangaroo model: files, closed-loop model, standing pose, legs.

.. code-block:: python

    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration
    clm = load_kangaroo(floating_base=True)
    q = standing_configuration(clm)          # loops closed, soles level
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.leg import LegSpec
from kangaroo_wbc.robots.kangaroo.files import kangaroo_files
from kangaroo_wbc.robots.kangaroo.generator import (
    SIDES,
    actuator_joint,
    output_joint,
    output_joints,
)
from kangaroo_wbc.robots.kangaroo.params import ACTUATORS, load_params

SOLES = {side: f"{side}_sole" for side in SIDES}


def load_kangaroo(floating_base: bool = True, urdf_dir: str | Path | None = None) -> ClosedLoopModel:
    """The 76-joint closed-loop model from ``urdf/kangaroo.urdf`` + ``urdf/kangaroo_closures.yaml``."""
    urdf, closures = kangaroo_files(urdf_dir)
    return ClosedLoopModel.from_files(urdf, closures, floating_base=floating_base)


@lru_cache(maxsize=1)
def standing_actuator_positions() -> dict[str, float]:
    """Standing-pose actuator positions [m] by actuated joint name (both legs)."""
    pose = load_params().standing_actuators()
    return {actuator_joint(side, key): float(pose[key]) for side in SIDES for key in ACTUATORS}


def standing_configuration(clm: ClosedLoopModel, base_height_m: float | None = None) -> np.ndarray:
    """Closed configuration at the standing actuator positions.

    With a floating base, the base is placed upright with the soles on the ground plane ``z = 0``
    (unless ``base_height_m`` is given).
    """
    pose = standing_actuator_positions()
    theta = np.array([pose[n] for n in clm.actuated_joint_names])
    q, _ = clm.closure_fk(theta, clm.q_ref, max_iter=100)
    if clm.floating_base:
        import pinocchio as pin

        q[:7] = np.r_[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
        pin.framesForwardKinematics(clm.model, clm.data, q)
        z = min(clm.data.oMf[clm.model.getFrameId(s)].translation[2] for s in SOLES.values())
        q[2] = -z if base_height_m is None else base_height_m
    return q


def leg_spec(side: str = "left") -> LegSpec:
    """Names of one Kangaroo leg for the mechanism analysis."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    a = {k: actuator_joint(side, k) for k in ACTUATORS}
    return LegSpec(
        side=side,
        actuators={"hip_yaw": [a["hip_yaw"]], "hip_pitch_roll": [a["hip_inner"], a["hip_outer"]],
                   "knee": [a["leg_length"]], "ankle": [a["ankle_inner"], a["ankle_outer"]]},
        hip_outputs=[output_joint(side, "hip_roll"), output_joint(side, "hip_pitch")],
        ankle_outputs=[output_joint(side, "ankle_roll"), output_joint(side, "ankle_pitch")],
        knee_actuator=a["leg_length"],
        sole_frame=SOLES[side],
    )


def output_joint_names() -> list[str]:
    """The 12 serial output joints, left leg then right leg."""
    return [name for side in SIDES for name in output_joints(side)]


def configuration_from_outputs(clm: ClosedLoopModel, outputs: dict[str, float],
                               q_guess: np.ndarray | None = None) -> np.ndarray:
    """Closed configuration whose serial output joints take the given angles [rad].

    Newton with continuation through the serial twin's map (:meth:`SerialTwin.serial_to_full`);
    joints not named keep the standing value.
    """
    from kangaroo_wbc.robots.kangaroo.serial_twin import SerialTwin

    twin = SerialTwin.from_urdf(clm, kangaroo_files()[0].with_name("kangaroo_serial.urdf"))
    serial = twin.serial
    q0 = standing_configuration(clm) if q_guess is None else q_guess
    qs = twin.full_to_serial(q0)
    for name, value in outputs.items():
        qs[serial.joints[serial.getJointId(name)].idx_q] = value
    q, _ = twin.serial_to_full(qs, q0)
    return q
