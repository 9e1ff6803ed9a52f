"""Linear constraints of the whole-body QP (rows of ``A x = b``, ``lo <= G x <= hi`` or box bounds)."""

from kangaroo_wbc.control.constraints.actuator_force_limits import ActuatorForceLimits
from kangaroo_wbc.control.constraints.actuator_stroke_limits import ActuatorStrokeLimits
from kangaroo_wbc.control.constraints.base import Constraint
from kangaroo_wbc.control.constraints.floating_base_dynamics import FloatingBaseDynamics
from kangaroo_wbc.control.constraints.friction_cone import ContactForceBox, FrictionCones
from kangaroo_wbc.control.constraints.passive_joint_limits import PassiveJointLimits
from kangaroo_wbc.control.constraints.stationary_contact import StationaryContacts

__all__ = ["Constraint", "FloatingBaseDynamics", "StationaryContacts", "FrictionCones", "ContactForceBox",
           "ActuatorForceLimits", "ActuatorStrokeLimits", "PassiveJointLimits"]
