"""The controller component on a test bench (the one-leg rig, ``docs/morphology.md``): the rig's
controller (:func:`~kangaroo_wbc.control.rig.rig_controller`, the clamp as a bilateral fixture contact)
under a supervisor and :class:`~kangaroo_wbc.components.control.WholeBodyControl`, running the ``rig``
behaviour. :func:`~kangaroo_wbc.components.assembly.build_control` calls it for the nodes' ``rig``
parameter and the one-process bench alike.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kangaroo_wbc.components.control import ControlSettings, WholeBodyControl
from kangaroo_wbc.components.simulated_robot import SimulatedRobot, SimulatedRobotConfig
from kangaroo_wbc.control.rig import (
    FIXTURE,
    RIG_FOOT_KD,
    RIG_FOOT_KP,
    rig_controller,
    rig_settings,
)
from kangaroo_wbc.control.supervisor import SafetySettings, WbcSupervisor
from kangaroo_wbc.control.wbc import WbcSettings
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.robots.kangaroo.rig import PLATE_BELOW_SOLE_M, Rig, make_rig_sim


def rig_behaviour_options(rig_leg: str, plate_below_sole_m: float = PLATE_BELOW_SOLE_M, **options) -> dict:
    """The ``rig`` behaviour's parameters on the bench (the kept sole, the clamp, the plate's depth)."""
    return {"sole": rig_leg, "fixture": FIXTURE, "plate_below_m": plate_below_sole_m, **options}


def rig_control_settings(rig_sole: str, settings: ControlSettings | None = None,
                         ideal_actuators: bool = False) -> ControlSettings:
    """The controller component's settings on the rig: the one sole, the behaviour from ready."""
    settings = settings or ControlSettings()
    # the fault detector's evidence is the drive firmware's torque for a force (friction feed-forward
    # included); ideal actuators have no firmware: their torque sensor reads eq. (47)'s inverse (with
    # the drive model, 1 s turns made the leg-length actuator look like a failed driver: 33 N off 50 N)
    return replace(settings, sole_frames=(rig_sole,), behaviour_delay_s=0.0,
                   fault_detector=replace(settings.fault_detector, drive_model=not ideal_actuators))


def rig_control(clm: ClosedLoopModel, rig_sole: str, rig_leg: str, *, ideal_actuators: bool = False,
                behaviour_options: dict | None = None, wbc_settings: WbcSettings | None = None,
                safety: SafetySettings | None = None,
                control_settings: ControlSettings | None = None) -> WholeBodyControl:
    """The controller on the rig: :func:`~kangaroo_wbc.control.rig.rig_controller` (the clamp as a
    fixture contact; the rig's sole gains over ``wbc_settings``) under a supervisor, running the
    ``rig`` behaviour from the first tick (the free robot's start-up "stand" would take the hanging
    sole for a contact; restarted from the state at the ready handshake), the behaviour delay 0."""
    base = wbc_settings or rig_settings()
    wbc = rig_controller(clm, rig_sole, rig_leg, replace(base, foot_kp=RIG_FOOT_KP, foot_kd=RIG_FOOT_KD))
    options = rig_behaviour_options(rig_leg, **(behaviour_options or {}))
    supervisor = WbcSupervisor(wbc, safety)
    supervisor.select("rig", **options)
    control = WholeBodyControl(supervisor, rig_control_settings(rig_sole, control_settings, ideal_actuators))
    control.select("rig", **options)
    return control


def sole_target_in_base(control: WholeBodyControl, leg: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The bench sole's reference of the last tick in the estimated pelvis frame (``base_link``):
    ``(position [m], rotation (3, 3))``, or None while the behaviour gives none (the press). What the
    node publishes on ``rig/sole_target`` and the one-process bench measures against."""
    ref = control.supervisor.last_references
    foot = None if ref is None else ref.foot_poses.get(leg)
    if foot is None:
        return None
    controller = control.supervisor.controller
    R_b, p_b = getattr(controller, "full", controller).pm.placement("base_link")
    rotation = np.eye(3) if foot.rotation is None else R_b.T @ np.asarray(foot.rotation)
    return R_b.T @ (np.asarray(foot.position) - p_b), rotation


def rig_robot(rig: Rig, config: SimulatedRobotConfig | None = None) -> SimulatedRobot:
    """The simulated rig: :class:`SimulatedRobot` on :func:`make_rig_sim` (the pelvis welded, the force
    plate; seed, rate, sensor noise and actuators of ``config``)."""
    cfg = config or SimulatedRobotConfig()
    sim = make_rig_sim(rig, seed=cfg.seed, rate_hz=cfg.rate_hz, sensor_noise=cfg.sensor_noise,
                       ideal_actuators=cfg.ideal_actuators)
    return SimulatedRobot(cfg, sim=sim)


__all__ = ["rig_robot", "rig_behaviour_options", "rig_control_settings", "rig_control", "sole_target_in_base"]
