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
        # Per contact: (row, col) index arrays of its P diagonal (5, 3) blocks, and its normal rows.
        self._blocks = []
        row = 0
        for c in layout.contacts:
            P, col = c.n_points, layout.force_slice(c.name).start
            # the five rows in the sole frame: t_1 - mu n, -t_1 - mu n, t_2 - mu n, -t_2 - mu n, n
            mu = c.mu / np.sqrt(2.0) if self.inner_pyramid else c.mu
            cone = np.array([[1.0, 0.0, -mu], [-1.0, 0.0, -mu], [0.0, 1.0, -mu], [0.0, -1.0, -mu], [0.0, 0.0, 1.0]])
            self._blocks.append((row, col, P, row + 4 + 5 * np.arange(P), slice(row, row + 5 * P), cone))
            row += 5 * P
        _cone_blocks(np.zeros((5, 3)), np.eye(3), 0, 0, 1, np.zeros((5, 3)))  # compile (or load) now

    @property
    def cone_matrices(self) -> list[np.ndarray]:
        """Per contact (layout order): the (5, 3) pyramid matrix in the sole frame (rows
        ``t_1 - mu n, -t_1 - mu n, t_2 - mu n, -t_2 - mu n, n``), the same for each of its corners."""
        return [blk[5] for blk in self._blocks]

    def n_rows(self) -> int:
        return ROWS_PER_POINT * sum(c.n_points for c in self.layout.contacts)

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        for c, (row, col, P, normal, rows, cone) in zip(self.layout.contacts, self._blocks):
            terms = contacts[c.name]
            _cone_blocks(cone, np.ascontiguousarray(terms.R), row, col, P, M)
            lo[rows] = -np.inf
            hi[rows] = 0.0
            if terms.active:
                lo[normal] = c.normal_force_min_n
                hi[normal] = c.normal_force_max_n
            else:
                hi[normal] = np.inf


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


@compiled
def _cone_blocks(cone, R, row, col, P, M):
    """``M[row + 5 i : row + 5 i + 5, col + 3 i : col + 3 i + 3] = cone R^T`` for the ``P`` corners
    (rows ``(R c_k)^T``; compiled: a handful of numbers, below a fancy-indexed numpy assignment)."""
    B = np.empty((5, 3))
    for a in range(5):
        for b in range(3):
            B[a, b] = cone[a, 0] * R[b, 0] + cone[a, 1] * R[b, 1] + cone[a, 2] * R[b, 2]
    for i in range(P):
        for a in range(5):
            for b in range(3):
                M[row + 5 * i + a, col + 3 * i + b] = B[a, b]


__all__ = ["FrictionCones", "ContactForceBox", "ROWS_PER_POINT"]
