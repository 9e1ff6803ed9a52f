"""Whole-body control on a test bench: the pelvis held by the rig's clamp (the one-leg rig).

The model keeps its floating base (:func:`~kangaroo_wbc.robots.kangaroo.rig.load_one_leg`) and the
clamp becomes a contact of the same QP (:mod:`kangaroo_wbc.control.contacts`): a **bilateral
fixture** on ``base_link`` whose corner forces are free (:attr:`ContactSpec.bilateral`). With the
fixture always active the QP keeps its decision vector and its rows,

.. math::

    x = [\\dot v_{base},\\; \\ddot\\theta_a,\\; f_{clamp},\\; f_{sole}], \\qquad
    J_{base} T \\dot\\nu + \\dot J_{base} v = 0 \\;\\Rightarrow\\; \\dot v_{base} = 0,

and the base rows of eq. (62) say which wrench the clamp carries (the leg's weight and whatever the
sole pushes on the plate); the actuated rows (eq. (69)) are unchanged, since no actuated joint
moves the clamped frame. A fixed-base controller would need a second formulation; this one is the
robot's, with one more contact.

Tasks: the CoM and the angular momentum cannot be controlled on a clamped robot (they follow the leg)
and would fight the sole's pose task, so they are disabled; the base orientation task stays (its
rows act on the clamped base only); the posture task regularises the leg.

.. code-block:: python

    wbc = rig_controller(clm, "left_sole")     # contacts: the clamp, then the sole "left"
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.control.contacts import ContactSpec
from kangaroo_wbc.control.wbc import WbcSettings, WholeBodyController
from kangaroo_wbc.errors import FrameNotFound, suggest
from kangaroo_wbc.model import ClosedLoopModel

#: Contact name of the rig's clamp (the behaviours' ``fixture``).
FIXTURE = "pelvis_clamp"
#: The clamp's corners: a square of this side [m] in the base frame's xy plane (any three corners
#: not on a line span every wrench; the size only scales the corner forces of a clamp torque).
FIXTURE_SIDE_M = 0.2
#: Corners of a sole contact, as the corner frames ``<sole>_corner_<tag>`` of the model.
SOLE_CORNERS = ("fl", "fr", "rl", "rr")

#: Gains of the rig's sole pose task: stiffer than the free robot's swing foot (nothing to balance,
#: the sole's circle is the task), critically damped (kd = 2 sqrt(kp)).
RIG_FOOT_KP = 2500.0
RIG_FOOT_KD = 100.0


def fixture_contact(clm: ClosedLoopModel, frame: str = "base_link", name: str = FIXTURE,
                    side_m: float = FIXTURE_SIDE_M) -> ContactSpec:
    """The rig's clamp on ``frame``: a bilateral fixture with four corners (module docstring).

    Raises:
        FrameNotFound: ``frame`` is not a frame of the model (the message lists the frames).
    """
    if not clm.model.existFrame(frame):
        raise FrameNotFound(f"rig fixture: unknown frame {frame!r}."
                            + suggest(frame, [f.name for f in clm.model.frames]))
    return ContactSpec.rectangle(name, frame, side_m, side_m, bilateral=True)


def sole_contact(clm: ClosedLoopModel, name: str, sole_frame: str) -> ContactSpec:
    """The sole ``sole_frame`` with its four corner frames, as the free robot's controller builds it."""
    corners = [f"{sole_frame}_corner_{c}" for c in SOLE_CORNERS]
    return ContactSpec.from_corner_frames(clm.model, name, sole_frame, corners)


def rig_settings(base_frame: str = "base_link") -> WbcSettings:
    """The rig's controller settings: the robot's, with the sole task's gains above."""
    return WbcSettings(base_frame=base_frame, foot_kp=RIG_FOOT_KP, foot_kd=RIG_FOOT_KD)


def rig_controller(clm: ClosedLoopModel, sole_frame: str, sole_name: str = "left",
                   settings: WbcSettings | None = None) -> WholeBodyController:
    """The whole-body controller of a clamped robot: contacts ``[clamp, sole]`` (the clamp named
    :data:`FIXTURE`), the CoM and angular-momentum tasks disabled (module docstring)."""
    settings = settings or rig_settings()
    contacts = [fixture_contact(clm, settings.base_frame), sole_contact(clm, sole_name, sole_frame)]
    wbc = WholeBodyController(clm, contacts, settings)
    wbc.com_task.enabled = False
    wbc.momentum_task.enabled = False
    return wbc


def clamp_wrench(wbc: WholeBodyController) -> np.ndarray:
    """The wrench the clamp carries in the last solution [N, N·m] (world axes, about the base origin)."""
    out = wbc.last_output
    return np.zeros(6) if out is None else out.wrenches[FIXTURE].copy()


__all__ = ["FIXTURE", "fixture_contact", "sole_contact", "rig_settings", "rig_controller", "clamp_wrench"]
