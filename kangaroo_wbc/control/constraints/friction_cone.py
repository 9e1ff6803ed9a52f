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
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel

ROWS_PER_POINT = 5


class FrictionCones(Constraint):
    """Friction pyramids + normal-force bounds (5 rows per corner)."""

    kind = "ineq"
    name = "friction_cones"

    def __init__(self, layout: DecisionLayout, inner_pyramid: bool = True) -> None:
        super().__init__(layout)
        self.inner_pyramid = bool(inner_pyramid)
        # per contact: the five rows in the sole frame: t_1 - mu n, -t_1 - mu n, t_2 - mu n, -t_2 - mu n, n
        cones = []
        for c in layout.contacts:
            mu = c.mu / np.sqrt(2.0) if self.inner_pyramid else c.mu
            cones.append([[1.0, 0.0, -mu], [-1.0, 0.0, -mu], [0.0, 1.0, -mu], [0.0, -1.0, -mu], [0.0, 0.0, 1.0]])
            if c.bilateral:  # a fixture (ContactSpec.bilateral): zero rows, 0 <= 0 and f_min <= 0 <= f_max
                cones[-1] = np.zeros((5, 3)).tolist()
        self._cones = np.array(cones, dtype=float).reshape(-1, 5, 3)

    def n_rows(self) -> int:
        return ROWS_PER_POINT * sum(c.n_points for c in self.layout.contacts)

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        terms = self.contact_terms(contacts)
        if not terms:
            return
        # the normal-force bounds are read every tick (ContactSpec.normal_force_bounds)
        normal = tuple([c.normal_force_bounds() for c in self.layout.contacts])
        _cone_rows(self._cones, self.force_columns, tuple([t.R for t in terms]), tuple([t.active for t in terms]),
                   normal, M, lo, hi)


class ContactForceBox(Constraint):
    """Box bounds on the corner forces: free when the sole is in contact, zero otherwise."""

    kind = "box"
    name = "contact_force_box"

    def n_rows(self) -> int:
        return 0

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        terms = self.contact_terms(contacts)
        if terms:
            _force_box(self.force_columns, tuple([t.active for t in terms]), lo, hi)


@compiled
def _cone_rows(cones, force_columns, Rs, active, normal, M, lo, hi):
    """Five rows per corner of contact ``i`` (sole rotation ``Rs[i]``): ``cones[i] R^T`` on the
    diagonal block of the corner's force, ``-inf < . <= 0`` for the four pyramid rows and
    ``normal[i] = (f_min, f_max)`` on the normal row if ``active[i]``, else ``-inf < . < inf``."""
    row = 0
    for i in range(force_columns.shape[0]):
        R, c0 = Rs[i], force_columns[i, 0]
        B = np.empty((5, 3))  # cone R^T: rows (R c_k)^T
        for a in range(5):
            for b in range(3):
                B[a, b] = cones[i, a, 0] * R[b, 0] + cones[i, a, 1] * R[b, 1] + cones[i, a, 2] * R[b, 2]
        for p in range(force_columns[i, 1] // 3):
            for a in range(5):
                for b in range(3):
                    M[row + a, c0 + 3 * p + b] = B[a, b]
                lo[row + a] = -np.inf
                hi[row + a] = 0.0
            if active[i]:
                lo[row + 4], hi[row + 4] = normal[i]
            else:
                hi[row + 4] = np.inf
            row += 5


@compiled
def _force_box(force_columns, active, lb, ub):
    """Bounds of the corner forces of contact ``i``: free if ``active[i]``, else zero."""
    for i in range(force_columns.shape[0]):
        c0 = force_columns[i, 0]
        for k in range(force_columns[i, 1]):
            lb[c0 + k] = -np.inf if active[i] else 0.0
            ub[c0 + k] = np.inf if active[i] else 0.0


__all__ = ["FrictionCones", "ContactForceBox", "ROWS_PER_POINT"]
