"""Base class of the linear constraints of the whole-body QP.

A constraint owns a fixed number of rows (the QP keeps one sparsity pattern across ticks and
contact switches) and writes them in place each tick:

* ``kind = "eq"``: rows of ``A x = b`` (``lo`` is ``b``);
* ``kind = "ineq"``: rows of ``lo <= G x <= hi`` (``±inf`` for a missing side);
* ``kind = "box"``: entries of ``lb <= x <= ub`` for the variables it bounds (no matrix rows).

The decision vector is documented in :mod:`kangaroo_wbc.control.contacts`. Each constraint writes
its rows with one compiled kernel, called from its :meth:`Constraint.fill` with the per-contact
arrays of this tick as tuples (layout order; :data:`NO_CONTACT` stands for an empty one, the kernels
loop over the layout's contacts only).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

import numpy as np

from kangaroo_wbc.control.contacts import ContactTerms, DecisionLayout
from kangaroo_wbc.model.projected_model import ProjectedModel

#: A one-entry tuple of an empty (6, 0) array: the per-contact tuple of a layout without contacts
#: (numba types an empty tuple apart and cannot index it).
NO_CONTACT = (np.zeros((6, 0)),)


class Constraint(ABC):
    """A block of linear constraints on ``x``."""

    kind: str = "eq"
    name: str = "constraint"

    def __init__(self, layout: DecisionLayout) -> None:
        self.layout = layout
        #: per contact (layout order): first column of its forces in ``x`` and their count (3 P)
        self.force_columns = np.array([[layout.force_slice(c.name).start, 3 * c.n_points] for c in layout.contacts],
                                      dtype=np.int64).reshape(-1, 2)

    @abstractmethod
    def n_rows(self) -> int:
        """Number of matrix rows (0 for box constraints)."""

    @abstractmethod
    def fill(self, M: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, pm: ProjectedModel,
             contacts: Mapping[str, ContactTerms]) -> None:
        """Write the rows (``M``: (n_rows, n) view, ``lo``/``hi``: (n_rows,) views; for box
        constraints ``M`` is None and ``lo``/``hi`` are the full ``lb``/``ub`` of size n)."""

    def mark_pattern(self, M: np.ndarray) -> None:
        """Write nonzeros where this constraint's rows (``M``: its (n_rows, n) view) may have
        entries that its fill at one state does not show (rows whose joints change from tick to
        tick); the QP solver is set up on that pattern. Default: nothing to add."""
        return None

    def contact_terms(self, contacts: Mapping[str, ContactTerms]) -> list[ContactTerms]:
        """The layout's contacts' terms, in layout order."""
        return [contacts[name] for name in self.layout.contact_names]

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


__all__ = ["Constraint", "NO_CONTACT"]
