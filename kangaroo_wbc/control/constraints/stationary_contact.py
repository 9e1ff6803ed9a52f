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
from kangaroo_wbc.model.compiled import compiled
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
        terms = self.contact_terms(contacts)
        if not terms:
            return
        _contact_rows((tuple([t.J for t in terms]), tuple([t.drift for t in terms]), tuple([t.twist for t in terms])),
                      tuple([t.active for t in terms]), self.velocity_gain, M, lo)


@compiled
def _contact_rows(sole_terms, active, velocity_gain, M, b):
    """Six rows per contact ``i``: ``J_i nu_dot = -drift_i - K_v twist_i`` if ``active[i]``, else
    ``0 = 0``; ``sole_terms = (Js, drifts, twists)`` per contact (the force columns stay zero)."""
    Js, drifts, twists = sole_terms
    for i in range(len(active)):
        J, drift, twist = Js[i], drifts[i], twists[i]
        for d in range(6):
            r = 6 * i + d
            if active[i]:
                for j in range(J.shape[1]):
                    M[r, j] = J[d, j]
                b[r] = -drift[d] - velocity_gain * twist[d]
            else:
                for j in range(J.shape[1]):
                    M[r, j] = 0.0
                b[r] = 0.0


__all__ = ["StationaryContacts"]
