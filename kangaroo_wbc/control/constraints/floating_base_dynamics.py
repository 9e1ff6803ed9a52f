"""Floating-base rows of the projected dynamics (eq. (62) of the Kangaroo paper, App. B).

.. math::

    M_{b,m} \\dot\\nu + h_{b,m} = J_{c,b}^T F
    \\;\\Longleftrightarrow\\;
    \\begin{bmatrix} M_{p,b} & -(J_{sole,b}^T W) \\end{bmatrix} x = -h_{p,b}

``M_{p,b}``, ``h_{p,b}`` are the base rows of ``T^T M T`` and ``T^T (h + M k)``; ``J_{sole,b}^T W`` maps
the corner forces of each sole to generalized forces on the base rows. Inactive contacts keep
their (zero) columns, so the row pattern never changes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kangaroo_wbc.control.constraints.base import NO_CONTACT, Constraint
from kangaroo_wbc.control.contacts import ContactTerms, DecisionLayout
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel


class DynamicsRows(Constraint):
    """Rows ``first_row .. first_row + n_rows()`` of the projected dynamics between two limits:
    ``limits[0] - h_p <= [M_p | -(J_sole^T W) ...] x <= limits[1] - h_p`` on those rows."""

    first_row = 0
    limits: tuple[np.ndarray, np.ndarray]

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        terms = self.contact_terms(contacts)
        Js, Ws = (tuple([t.J for t in terms]), tuple([t.W for t in terms])) if terms else (NO_CONTACT, NO_CONTACT)
        _dynamics_rows(pm.M_p, pm.h_p, self.first_row, Js, Ws, self.force_columns, self.limits, M, lo, hi)


class FloatingBaseDynamics(DynamicsRows):
    """Newton-Euler equations of the whole robot (n_b equality rows)."""

    kind = "eq"
    name = "floating_base_dynamics"

    def __init__(self, layout: DecisionLayout) -> None:
        super().__init__(layout)
        self.limits = (np.zeros(layout.n_b), np.zeros(layout.n_b))

    def n_rows(self) -> int:
        return self.layout.n_b


@compiled
def _dynamics_rows(M_p, h_p, r0, Js, Ws, force_columns, limits, M, lo, hi):
    """The ``m = M.shape[0]`` rows ``r0 ..`` of ``[M_p | -(J_i^T W_i) ...]`` with ``lo = limits[0] - h_p``,
    ``hi = limits[1] - h_p`` on them: contact ``i`` has ``J_i = Js[i]`` (6, n_nu), ``W_i = Ws[i]`` and
    its force columns from ``force_columns[i, 0]``."""
    low, high = limits
    m, n_nu = M.shape[0], M_p.shape[1]
    for r in range(m):
        for j in range(n_nu):
            M[r, j] = M_p[r0 + r, j]
        lo[r] = low[r] - h_p[r0 + r]
        hi[r] = high[r] - h_p[r0 + r]
    for i in range(force_columns.shape[0]):
        J, W, c0 = Js[i], Ws[i], force_columns[i, 0]
        for r in range(m):
            for k in range(force_columns[i, 1]):
                s = 0.0
                for d in range(6):
                    s += J[d, r0 + r] * W[d, k]
                M[r, c0 + k] = -s


__all__ = ["DynamicsRows", "FloatingBaseDynamics"]
