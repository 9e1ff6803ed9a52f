"""The constraint rows of a closed-linkage model: its loops and couplings resolved against the
pinocchio model, the rows of ``e_l`` / ``J_l`` kept (Kangaroo paper, eq. (2)-(4)) and the compiled
kernel that evaluates them.

Rows are ordered loop by loop (each loop's kept directions, ``0..5`` = ``x, y, z, rx, ry, rz``, see
:data:`~kangaroo_wbc.model.closures.DIRECTIONS`), then one row per joint coupling
(:mod:`kangaroo_wbc.model.couplings`). Row selection (:mod:`kangaroo_wbc.model.structure`) starts
from every declared direction (:meth:`ConstraintRows.select_declared`) and keeps a maximal
independent subset (:meth:`ConstraintRows.keep`); the kernel follows the kept rows.

A loop's row of ``J_l`` only depends on the joints that move one of its two frames and not the
other: the *signed support* ``mask_u - mask_a`` (+1 / -1 on the velocity columns that move only
frame ``u`` / only frame ``a``), which the kernel uses to build the relative Jacobian.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import FrameNotFound, ModelError, suggest
from kangaroo_wbc.model.closures import ClosureSpec
from kangaroo_wbc.model.configuration import support_mask
from kangaroo_wbc.model.couplings import CouplingSpec, CouplingTables, coupling_tables

#: Entries of ``|J_l|`` below this are treated as structural zeros (sub-mechanism membership).
STRUCTURAL_ZERO = 1e-9


@dataclass
class Closure:
    """A loop closure resolved against a pinocchio model."""

    spec: ClosureSpec
    frame_a_id: int
    frame_u_id: int
    rows: np.ndarray  # selected direction indices (0..5) after redundancy removal


class KernelTables(NamedTuple):
    """Index tables of the closures, in the order :class:`~kangaroo_wbc.model.closure_kernel.ClosureKernel`
    takes them after the model (see :meth:`ConstraintRows.kernel_tables`)."""

    #: frames of the closures (both sides), sorted; a closure's slots index this array
    frame_ids: np.ndarray
    #: per closure: the slot of its frame ``a`` and of its frame ``u`` in ``frame_ids``
    slot_a: np.ndarray
    slot_u: np.ndarray
    #: per closure: +1 / -1 on the velocity columns that move only frame ``u`` / only ``a``, else 0
    signed_mask: np.ndarray
    #: the kept rows in the flattened (closure, 6) error
    flat_rows: np.ndarray
    #: closures whose rotation error is the SO(3) log
    rot_log3: np.ndarray
    #: universal-joint cuts: (closure indices, their (i, j, k, sign) rows)
    universal: tuple[np.ndarray, np.ndarray]
    #: the joint couplings, rows after the loops' (:class:`~kangaroo_wbc.model.couplings.CouplingTables`)
    couplings: CouplingTables


def universal_cut_indices(direction_indices) -> tuple[int, int, int, int] | None:
    """``(i, j, k, sign)`` of a universal-joint cut (exactly one declared rotation direction
    ``3 + k``), None for any other closure: free rotation axes ``i`` (first, fixed in ``F_a``) and
    ``j`` (second, fixed in ``F_u``), constrained axis ``k``, and the sign ``-epsilon_ijk`` that
    makes ``e_k = sign * (R_a^T R_u)[i, j]`` equal the rotation about ``k`` to first order. For
    ``R_a^T R_u = R_i(alpha) R_j(beta)`` the entry ``[i, j]`` vanishes exactly."""
    rot = [int(d) - 3 for d in direction_indices if int(d) >= 3]
    if len(rot) != 1:
        return None
    k = rot[0]
    i, j = [a for a in range(3) if a != k]
    eps = 1 if (i, j, k) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)) else -1
    return i, j, k, -eps


class ConstraintRows:
    """The loops and couplings of a model and the rows of ``e_l`` / ``J_l`` kept.

    Args:
        model: the pinocchio spanning tree (its frames name the closures' sides).
        closures: the loop closures, in file order.
        couplings: the joint couplings, in file order.
        source: the closure file, named in errors.

    Raises:
        FrameNotFound: a closure names a frame the model does not have (the valid ones listed).
        ModelError: duplicated coupling names, or a coupling the model cannot express.
    """

    def __init__(self, model: pin.Model, closures: Sequence[ClosureSpec], couplings: Sequence[CouplingSpec],
                 source: str) -> None:
        self.model = model
        self.source = source
        self._resolve_loops(closures)
        self.couplings: list[CouplingSpec] = list(couplings)
        names = [c.name for c in self.couplings]
        if len(set(names)) != len(names):
            raise ModelError(f"{source}: duplicated coupling names in {names}")
        #: the couplings' kernel tables and the support of their rows (1 on the coupled joints)
        self.coupling_tables: CouplingTables = coupling_tables(model, self.couplings, source)
        t = self.coupling_tables
        self.coupling_mask = np.zeros((len(self.couplings), model.nv))
        for k in range(len(self.couplings)):
            used = t.term_side[k] >= 0
            self.coupling_mask[k, t.term_v[k, used]] = 1.0
        self._kernel: Any = None
        self.select_declared()

    def _resolve_loops(self, specs: Sequence[ClosureSpec]) -> None:
        """The loops' frames, their slots and signed supports; every declared row selected."""
        m = self.model
        frame_names = [f.name for f in m.frames]
        self.closures: list[Closure] = []
        for c in specs:
            ids = []
            for key, name in (("frame_a", c.frame_a), ("frame_u", c.frame_u)):
                if not m.existFrame(name):
                    raise FrameNotFound(f"{self.source}: closure {c.name!r}: {key}: unknown frame {name!r}."
                                        + suggest(name, frame_names))
                ids.append(int(m.getFrameId(name)))
            self.closures.append(Closure(c, ids[0], ids[1], np.array(c.direction_indices, dtype=int)))
        self.frame_ids = np.array(sorted({i for c in self.closures for i in (c.frame_a_id, c.frame_u_id)}),
                                  dtype=int)
        slot = {fid: k for k, fid in enumerate(self.frame_ids)}
        self.slot_a = np.array([slot[c.frame_a_id] for c in self.closures], dtype=int)
        self.slot_u = np.array([slot[c.frame_u_id] for c in self.closures], dtype=int)
        mask = support_mask(m, self.frame_ids)
        #: (K, nv) per loop: +1 / -1 on the columns that move only frame ``u`` / only ``a``
        self.signed_mask = mask[self.slot_u] - mask[self.slot_a]

    # ------------------------------------------------------------------ the selection
    @property
    def n_couplings(self) -> int:
        """Number of coupling rows (the last rows of ``e_l``, ``J_l``)."""
        return len(self.couplings)

    @property
    def constrained(self) -> bool:
        """Whether there is any loop or coupling."""
        return bool(self.closures) or bool(self.couplings)

    def _update(self) -> None:
        """The tables that follow the kept rows of each loop; the kernel is rebuilt on next use."""
        #: flat index of each kept loop row into the (K*6) stacked full closure error
        self.flat_rows = np.concatenate(
            [6 * k + c.rows for k, c in enumerate(self.closures)] + [np.zeros(0, dtype=int)]).astype(int)
        self.n_c = int(len(self.flat_rows)) + self.n_couplings
        # universal-joint cuts: exactly one declared rotation direction k, the two others free
        cuts = {k: universal_cut_indices(c.spec.direction_indices) for k, c in enumerate(self.closures)
                if np.any(c.rows >= 3)}
        uj = [k for k, ijk in cuts.items() if ijk is not None]
        self.uj_idx = np.array(uj, dtype=int)
        self.rot_idx = np.array([k for k, ijk in cuts.items() if ijk is None], dtype=int)
        self.uj_ijk = np.array([cuts[k] for k in uj], dtype=int).reshape(-1, 4)
        #: the constraint each row belongs to: loop ``k`` (``< K``), then coupling ``K + k``
        K = len(self.closures)
        self.row_closure = np.concatenate([np.repeat(np.arange(K), [len(c.rows) for c in self.closures]),
                                           K + np.arange(self.n_couplings)]).astype(int)
        self._kernel_built = False

    def select_declared(self) -> None:
        """Select every declared direction of every loop (and every coupling)."""
        for c in self.closures:
            c.rows = np.array(c.spec.direction_indices, dtype=int)
        self._update()

    def keep(self, keep: np.ndarray) -> None:
        """Keep the rows ``keep`` (indices into the currently selected rows; coupling rows always stay)."""
        keep_set = set(np.asarray(keep).tolist())
        start = 0
        for c in self.closures:
            n = len(c.rows)
            c.rows = np.array([d for i, d in enumerate(c.rows) if start + i in keep_set], dtype=int)
            start += n
        self._update()

    def add_loops(self, specs: Sequence[ClosureSpec]) -> None:
        """Add loops with every declared row selected; the other loops keep their selection."""
        kept = {c.spec.name: c.rows.copy() for c in self.closures}
        self._resolve_loops([*(c.spec for c in self.closures), *specs])
        for c in self.closures:
            c.rows = kept.get(c.spec.name, c.rows)
        self._update()

    @contextmanager
    def all_declared(self) -> Iterator[None]:
        """Every declared row selected inside the block, the kept ones again after it."""
        rows = [c.rows for c in self.closures]
        self.select_declared()
        try:
            yield
        finally:
            for c, r in zip(self.closures, rows):
                c.rows = r
            self._update()

    def row_support(self) -> np.ndarray:
        """(n_c, nv): the signed joint support of each kept row (loops: ``mask_u - mask_a``;
        couplings: 1 on the coupled joints)."""
        return np.vstack([self.signed_mask[self.row_closure[:self.n_c - self.n_couplings]], self.coupling_mask])

    def kernel_tables(self) -> KernelTables:
        """The index tables that :func:`~kangaroo_wbc.model.closure_kernel.build_kernel` takes after the model."""
        return KernelTables(self.frame_ids, self.slot_a, self.slot_u, self.signed_mask, self.flat_rows,
                            self.rot_idx, (self.uj_idx, self.uj_ijk), self.coupling_tables)

    # ------------------------------------------------------------------ evaluation
    @property
    def kernel(self):
        """The compiled closure kinematics of the kept rows (built on first use after a change of
        the selection), None without loops and couplings.

        Raises:
            ModelError: a joint type it does not support (planar, helical, composite).
        """
        if not self._kernel_built:
            from kangaroo_wbc.model.closure_kernel import build_kernel

            self._kernel = build_kernel(self.model, *self.kernel_tables()) if self.constrained else None
            self._kernel_built = True
        return self._kernel

    def error_and_jacobian(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(e_l, J_l)`` of the kept rows at ``q`` (copies; empty without constraints)."""
        if not self.constrained:
            return np.zeros(0), np.zeros((0, self.model.nv))
        e, J = self.kernel.error_and_jacobian(q)
        return e.copy(), J.copy()

    def declared_errors(self, q: np.ndarray) -> np.ndarray:
        """Closure error on every declared direction, (K, 6) with zeros on undeclared ones."""
        e = np.zeros(6 * len(self.closures))
        if not self.constrained:
            return e.reshape(-1, 6)
        with self.all_declared():
            e[self.flat_rows] = self.kernel.error(q)[:len(self.flat_rows)]
        return e.reshape(-1, 6)

    def coupling_errors(self, q: np.ndarray) -> np.ndarray:
        """The coupling rows of ``e_l`` [rad or m]."""
        if not self.couplings:
            return np.zeros(0)
        return self.kernel.error(q)[self.n_c - self.n_couplings:].copy()

    def declared_residual(self, q: np.ndarray) -> float:
        """``||e||_inf`` over every declared direction of every loop and every coupling [m, rad]."""
        if not self.constrained:
            return 0.0
        return float(max(np.max(np.abs(self.declared_errors(q)), initial=0.0),
                         np.max(np.abs(self.coupling_errors(q)), initial=0.0)))

    def constraint_names(self) -> list[str]:
        """One name per constraint (the index of :attr:`row_closure`): the loops, then ``coupling <name>``."""
        return [c.spec.name for c in self.closures] + [f"coupling {c.name}" for c in self.couplings]


__all__ = ["Closure", "ConstraintRows", "KernelTables", "STRUCTURAL_ZERO", "universal_cut_indices"]
