"""Stationary contacts (eq. (25b) projected, eq. (65)): soles in contact do not accelerate.

.. math::

    J_{sole} T \\dot\\nu + \\dot J_{sole} v + J_{sole} k = -K_v\\, J_{sole} T \\nu

The right-hand side is zero in the ideal case; the optional ``velocity_gain`` ``K_v`` [1/s] damps a
residual sole velocity (estimation drift, impacts) instead of letting it persist. Rows of
inactive soles are zeroed (``0 = 0``) so the pattern stays fixed.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kangaroo_wbc.control.constraints.base import Constraint
from kangaroo_wbc.control.contacts import ContactTerms, DecisionLayout
from kangaroo_wbc.model.projected_model import ProjectedModel


class StationaryContacts(Constraint):
    """Six rows per contact: linear then angular sole acceleration, world axes."""

    kind = "eq"
    name = "stationary_contacts"

    def __init__(self, layout: DecisionLayout, velocity_gain: float = 0.0) -> None:
        super().__init__(layout)
        self.velocity_gain = float(velocity_gain)

    def n_rows(self) -> int:
        return 6 * len(self.layout.contacts)

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        L = self.layout
        for i, c in enumerate(L.contacts):
            terms = contacts[c.name]
            rows = slice(6 * i, 6 * i + 6)
            if terms.active:
                M[rows, L.nu] = terms.J
                if self.velocity_gain:
                    lo[rows] = -terms.drift - self.velocity_gain * terms.twist
                else:
                    np.negative(terms.drift, out=lo[rows])
            else:
                M[rows, L.nu] = 0.0
                lo[rows] = 0.0


__all__ = ["StationaryContacts"]
