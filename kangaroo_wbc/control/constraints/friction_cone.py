"""Linearised friction cones and unilaterality of the corner forces (Kangaroo paper III-B).

For corner force ``f`` of a sole with rotation ``R`` (normal ``n = R e_z``, tangents
``t_1 = R e_x``, ``t_2 = R e_y``) and friction coefficient ``mu``:

.. math::

    |t_j^T f| \\le \\tilde\\mu\\, n^T f \\;(j = 1, 2), \\qquad f_{min} \\le n^T f \\le f_{max},
    \\qquad \\tilde\\mu = \\mu / \\sqrt 2 \\text{ (inner pyramid, default) or } \\mu

i.e. four rows ``(±t_j - \\tilde\\mu n)^T f \\le 0`` and one two-sided normal row per corner. All
corner normal forces non-negative is exactly "the CoP lies inside the sole polygon".
Corners of inactive soles are pinned to zero force by box bounds, and their normal rows are
relaxed, so the row pattern is the same in every contact phase.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kangaroo_wbc.control.constraints.base import Constraint
from kangaroo_wbc.control.contacts import ContactTerms, DecisionLayout
from kangaroo_wbc.control.projected_model import ProjectedModel

ROWS_PER_POINT = 5


class FrictionCones(Constraint):
    """Friction pyramids + normal-force bounds (5 rows per corner)."""

    kind = "ineq"
    name = "friction_cones"

    def __init__(self, layout: DecisionLayout, inner_pyramid: bool = True) -> None:
        super().__init__(layout)
        self.inner_pyramid = bool(inner_pyramid)
        self._eye = {c.n_points: np.eye(c.n_points) for c in layout.contacts}

    def n_rows(self) -> int:
        return ROWS_PER_POINT * sum(c.n_points for c in self.layout.contacts)

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        L = self.layout
        row = 0
        for c in L.contacts:
            terms = contacts[c.name]
            R = terms.R
            n, t1, t2 = R[:, 2], R[:, 0], R[:, 1]
            mu = c.mu / np.sqrt(2.0) if self.inner_pyramid else c.mu
            block = np.stack([t1 - mu * n, -t1 - mu * n, t2 - mu * n, -t2 - mu * n, n])  # (5, 3)
            cols = L.force_slice(c.name)
            P = c.n_points
            rows = slice(row, row + 5 * P)
            M[rows, cols] = np.kron(self._eye[P], block)
            lo[rows] = -np.inf
            hi[rows] = 0.0
            normal = slice(row + 4, row + 5 * P, 5)
            if terms.active:
                lo[normal] = c.normal_force_min_n
                hi[normal] = c.normal_force_max_n
            else:
                hi[normal] = np.inf
            row += 5 * P


class ContactForceBox(Constraint):
    """Box bounds on the corner forces: free when the sole is in contact, zero otherwise."""

    kind = "box"
    name = "contact_force_box"

    def n_rows(self) -> int:
        return 0

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        for c in self.layout.contacts:
            s = self.layout.force_slice(c.name)
            if contacts[c.name].active:
                lo[s], hi[s] = -np.inf, np.inf
            else:
                lo[s], hi[s] = 0.0, 0.0


__all__ = ["FrictionCones", "ContactForceBox", "ROWS_PER_POINT"]
