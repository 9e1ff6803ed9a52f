"""Base class of the linear constraints of the whole-body QP.

A constraint owns a fixed number of rows (the QP keeps one sparsity pattern across ticks and
contact switches) and writes them in place each tick:

* ``kind = "eq"``: rows of ``A x = b`` (``lo`` is ``b``);
* ``kind = "ineq"``: rows of ``lo <= G x <= hi`` (``±inf`` for a missing side);
* ``kind = "box"``: entries of ``lb <= x <= ub`` for the variables it bounds (no matrix rows).

The decision vector is documented in :mod:`kangaroo_wbc.control.contacts`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

import numpy as np

from kangaroo_wbc.control.contacts import ContactTerms, DecisionLayout
from kangaroo_wbc.model.projected_model import ProjectedModel


class Constraint(ABC):
    """A block of linear constraints on ``x``."""

    kind: str = "eq"
    name: str = "constraint"

    def __init__(self, layout: DecisionLayout) -> None:
        self.layout = layout

    @abstractmethod
    def n_rows(self) -> int:
        """Number of matrix rows (0 for box constraints)."""

    @abstractmethod
    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        """Write the rows (``M``: (n_rows, n) view, ``lo``/``hi``: (n_rows,) views; for box
        constraints ``M`` is None and ``lo``/``hi`` are the full ``lb``/``ub`` of size n)."""

    def rows(self, pm: ProjectedModel, contacts: Mapping[str, ContactTerms]
             ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """Standalone evaluation (tests, diagnostics): ``(M, lo, hi)``."""
        n = self.layout.n
        if self.kind == "box":
            lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
            self.fill(None, lo, hi, pm, contacts)
            return None, lo, hi
        m = self.n_rows()
        M, lo, hi = np.zeros((m, n)), np.full(m, -np.inf), np.full(m, np.inf)
        self.fill(M, lo, hi, pm, contacts)
        if self.kind == "eq":
            hi[:] = lo
        return M, lo, hi


__all__ = ["Constraint"]
