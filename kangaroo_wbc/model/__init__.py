"""Robot-agnostic closed-linkage core on pinocchio (no ROS imports).

See ``docs/model.md`` for the file format, conventions and the equation ↔ function table.
"""

from kangaroo_wbc.model.closed_loop_model import (
    ClosedLoopModel,
    Closure,
    ClosureFkInfo,
    SubMechanism,
    select_independent_rows,
)
from kangaroo_wbc.model.closures import DIRECTIONS, ClosureFile, ClosureSpec, load_closure_file
from kangaroo_wbc.model.couplings import CouplingSpec
from kangaroo_wbc.model.dynamics import (
    ProjectedDynamics,
    centroidal_momentum_matrix,
    equivalent_cartesian_inertia,
    gravity_actuated,
    inverse_dynamics,
    lagrange_multipliers,
    projected_dynamics,
)

__all__ = [
    "ClosedLoopModel", "Closure", "ClosureFkInfo", "SubMechanism", "select_independent_rows",
    "DIRECTIONS", "ClosureFile", "ClosureSpec", "CouplingSpec", "load_closure_file",
    "ProjectedDynamics", "centroidal_momentum_matrix", "equivalent_cartesian_inertia",
    "gravity_actuated", "inverse_dynamics", "lagrange_multipliers", "projected_dynamics",
]
