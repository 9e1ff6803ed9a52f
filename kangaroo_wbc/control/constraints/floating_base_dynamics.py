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

from kangaroo_wbc.control.constraints.base import Constraint
from kangaroo_wbc.control.contacts import ContactTerms
from kangaroo_wbc.model.projected_model import ProjectedModel


class FloatingBaseDynamics(Constraint):
    """Newton-Euler equations of the whole robot (n_b equality rows)."""

    kind = "eq"
    name = "floating_base_dynamics"

    def n_rows(self) -> int:
        return self.layout.n_b

    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        L = self.layout
        b = L.base
        M[:, L.nu] = pm.M_p[b]
        lo[:] = -pm.h_p[b]
        for c in L.contacts:
            terms = contacts[c.name]
            M[:, L.force_slice(c.name)] = -terms.force_jacobian[b]


__all__ = ["FloatingBaseDynamics"]
