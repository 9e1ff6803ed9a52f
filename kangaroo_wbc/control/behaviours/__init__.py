"""Balance behaviours: task references over time for :class:`~kangaroo_wbc.control.wbc.WholeBodyController`.

A behaviour is started from the robot's current state (:class:`BehaviourState`: CoM, base rotation,
sole poses) and then maps time to :class:`~kangaroo_wbc.control.wbc.WbcReferences`. Trajectories
are smooth (minimum-jerk blends, sinusoids with ramped amplitude) and carry their velocity and
acceleration feed-forward terms.

* :class:`Stand` — hold the CoM and the base orientation (balance).
* :class:`Squat` — CoM height cycles (the leg-length actuators do most of the work).
* :class:`LateralSway` — CoM (hence ZMP, quasi-statically) moves sideways between the feet.
* :class:`WeightShift` — CoM over one sole, lift the other (single support), hold, put it back.
* :class:`PushRecovery` — stand with stiffer CoM and angular-momentum damping after a push.
* :class:`RigCircleAndPress` — on the one-leg test bench: the sole circles in the air, then presses
  a force plate (:data:`RIG_BEHAVIOURS`).
* :class:`Walk` — walking from a velocity command (``walk``), :class:`Jump` — the knee-only jump.

One file per behaviour; this module is the explicit registry (no behaviour registers itself).
"""

from __future__ import annotations

from kangaroo_wbc.control.behaviours.base import (
    Behaviour,
    BehaviourState,
    blend,
    min_jerk,
    quintic,
)
from kangaroo_wbc.control.behaviours.jump import Jump
from kangaroo_wbc.control.behaviours.rig_press import RigCircleAndPress
from kangaroo_wbc.control.behaviours.squat import Squat
from kangaroo_wbc.control.behaviours.stand import PushRecovery, Stand
from kangaroo_wbc.control.behaviours.sway import LateralSway
from kangaroo_wbc.control.behaviours.walk import (
    Footstep,
    GaitSettings,
    Walk,
    dcm_plan,
    footstep_markers,
    next_footstep,
    yaw_of,
    yaw_rotation,
)
from kangaroo_wbc.control.behaviours.weight_shift import WeightShift
from kangaroo_wbc.errors import InputError

#: The behaviours of the free robot by name (the command line's and the launch file's choices).
BEHAVIOURS: dict[str, type[Behaviour]] = {
    "stand": Stand, "squat": Squat, "sway": LateralSway, "weight_shift": WeightShift,
    "push_recovery": PushRecovery, "walk": Walk, "jump": Jump}
#: Behaviours of a test bench: they need the rig's clamp (a bilateral fixture contact,
#: :mod:`kangaroo_wbc.control.rig`), so they are not offered on the free robot but
#: :func:`make_behaviour` builds them.
RIG_BEHAVIOURS: dict[str, type[Behaviour]] = {"rig": RigCircleAndPress}


def make_behaviour(name: str, **kwargs) -> Behaviour:
    """Behaviour by name (``stand``, ``squat``, ``sway``, ``weight_shift``, ``push_recovery``, ``walk``, ``jump``;
    on a test bench ``rig``)."""
    cls = BEHAVIOURS.get(name) or RIG_BEHAVIOURS.get(name)
    if cls is None:
        raise InputError(f"unknown behaviour {name!r}; known: {sorted(BEHAVIOURS)} "
                         f"(test bench: {sorted(RIG_BEHAVIOURS)})")
    return cls(**kwargs)


__all__ = ["Behaviour", "BehaviourState", "Stand", "Squat", "LateralSway", "WeightShift", "PushRecovery",
           "RigCircleAndPress", "Walk", "Jump", "GaitSettings", "Footstep", "BEHAVIOURS", "RIG_BEHAVIOURS",
           "make_behaviour", "min_jerk", "blend", "quintic", "footstep_markers", "next_footstep", "dcm_plan",
           "yaw_of", "yaw_rotation"]
