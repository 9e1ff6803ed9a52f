"""Centroidal angular-momentum damping.

.. math::

    J = A_{G,ang} T, \\qquad
    \\dot L_{des} = \\dot L_{ref} + K_d (L_{ref} - L), \\qquad
    r = \\dot L_{des} - (\\dot A_{G,ang} v + A_{G,ang} k)

``A_G`` is the centroidal momentum matrix (eq. (33) of the Kangaroo paper); ``L`` the angular
momentum about the CoM in world axes [kg·m²/s]. With ``L_ref = 0`` the task damps whole-body
rotation (the "angular momentum damping" of balance controllers); ``kp`` is unused.
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.control.tasks.base import Reference, Task
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel


class AngularMomentumTask(Task):
    """Angular momentum about the CoM (3 rows, world axes)."""

    momentum = Reference((3,))
    rate = Reference((3,))

    dim = 3

    def __init__(self, weight=1e-2, kd=10.0, name: str = "angular_momentum") -> None:
        super().__init__(name, weight, 0.0, kd)
        self.momentum = np.zeros(3)  # [kg·m²/s]
        self.rate = np.zeros(3)  # [N·m]

    def set_reference(self, momentum=None, rate=None) -> None:
        self.momentum = np.zeros(3) if momentum is None else momentum
        self.rate = np.zeros(3) if rate is None else rate

    def fill(self, pm: ProjectedModel, rows: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> int:
        return _momentum_rows(pm.A_G, pm.h_G, pm.A_G_drift, (self.momentum, self.rate), self.gains(), rows, k)


@compiled
def _momentum_rows(A_G, h_G, A_G_drift, ref, gains, rows, k):
    """Rows ``k..k+3`` of ``rows = (J, r, w)``: ``A_G,ang``, ``L_dot_ref + kd (L_ref - L) - drift`` and the
    weights; ``ref = (momentum, rate)``, ``gains = (kp, kd, weight)`` (``kp`` unused)."""
    J, r, w = rows
    momentum, rate = ref
    kd, weight = gains[1], gains[2]
    for i in range(3):
        for j in range(J.shape[1]):
            J[k + i, j] = A_G[3 + i, j]
        r[k + i] = rate[i] + kd[i] * (momentum[i] - h_G[3 + i]) - A_G_drift[3 + i]
        w[k + i] = weight[i]
    return k + 3


__all__ = ["AngularMomentumTask"]
