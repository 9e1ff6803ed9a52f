"""Table III of the Kangaroo paper: TALOS / Kangaroo ratios of sole inertia and CAMM.

* Equivalent Cartesian inertia at the sole w.r.t. the (fixed) base, eq. (31) with ``eps = 1e-5``,
  projected onto the closures for Kangaroo (App. B). Index eq. (32):
  ``chi_j = ||Lambda_T[:, j]|| / ||Lambda_K[:, j]||``, ``j`` = linear x, y, z then angular x, y, z.
* Centroidal angular momentum matrix (CAMM), the angular rows of the centroidal momentum matrix
  (eq. (33)), projected onto the actuated coordinates for Kangaroo. Index eq. (34):
  ``gamma_j = ||alpha_T,j|| / ||alpha_K,j||``. The paper lists three values (x, y, z); we read
  ``alpha_j`` as the CAMM row of the angular-momentum component ``j``. Kangaroo's actuated
  coordinates are ball-screw displacements [m] while TALOS's are joint angles [rad], so Kangaroo's
  CAMM is expressed in its 12 serial output joints (hip yaw/roll/pitch, knee, ankle roll/pitch):
  ``alpha_out = alpha_a (S J_m)^{-1}`` (DIK, eq. (22)), the same coordinates as TALOS's joints.

Both robots are evaluated in the same serial posture (same hip, knee and ankle angles).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from kangaroo_wbc.model import ClosedLoopModel, ClosureFile
from kangaroo_wbc.model.dynamics import centroidal_momentum_matrix, equivalent_cartesian_inertia

EPS = 1e-5
PAPER_TABLE3 = {"linear": [3.6, 4.1, 4.6], "angular": [11.4, 4.9, 3.6], "camm": [2.6, 2.7, 2.0]}


@dataclass
class InertiaReport:
    Lambda: np.ndarray  # 6x6 equivalent Cartesian inertia at the sole
    camm: np.ndarray  # 3 x n angular rows of the (projected) CMM
    mass_kg: float


def serial_model(model: pin.Model) -> ClosedLoopModel:
    """Wrap a serial pinocchio model (every joint actuated, no closure)."""
    return ClosedLoopModel(model, ClosureFile(closures=[], actuated_joints=list(model.names)[1:], source=model.name))


def inertia_report(clm: ClosedLoopModel, q: np.ndarray, sole: str,
                   output_joints: list[str] | None = None) -> InertiaReport:
    """Sole inertia (eq. (31)) and CAMM (eq. (33)) of a fixed-base model at ``q``.

    ``output_joints`` (passive joints, as many as actuators) re-expresses the CAMM columns in those
    joints' velocities instead of the actuator velocities.
    """
    Lam = equivalent_cartesian_inertia(clm, q, sole, eps=EPS, projected=True)
    camm = centroidal_momentum_matrix(clm, q, projected=True)[3:6, clm.n_b:]
    if output_joints is not None:
        idx = [clm.passive_joint_names.index(n) for n in output_joints]
        S_Jm = clm.mapping_jacobian(q)[idx]
        camm = np.linalg.solve(S_Jm.T, camm.T).T
    return InertiaReport(Lambda=Lam, camm=camm, mass_kg=clm.mass_kg)


def table3(talos: InertiaReport, kangaroo: InertiaReport) -> dict[str, list[float]]:
    """TALOS / Kangaroo ratios (eq. (32), (34)); > 1 means Kangaroo is lighter in that direction."""
    chi = np.linalg.norm(talos.Lambda, axis=0) / np.linalg.norm(kangaroo.Lambda, axis=0)
    gamma = np.linalg.norm(talos.camm, axis=1) / np.linalg.norm(kangaroo.camm, axis=1)
    return {"linear": [round(float(x), 3) for x in chi[:3]],
            "angular": [round(float(x), 3) for x in chi[3:]],
            "camm": [round(float(x), 3) for x in gamma]}


def table3_error(ours: dict[str, list[float]], paper: dict[str, list[float]] | None = None) -> float:
    """Largest relative error of the nine Table III ratios against the paper's,
    ``max |ours / paper - 1|`` (``paper``: :data:`PAPER_TABLE3` by default)."""
    paper = PAPER_TABLE3 if paper is None else paper
    errors = [abs(o / p - 1.0) for key in ("linear", "angular", "camm")
              for o, p in zip(ours[key], paper[key], strict=True)]
    return float(max(errors))
