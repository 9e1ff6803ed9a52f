"""LU factorisation of ``J_lu`` block by block (the sub-mechanisms of a closed-chain robot).

``J_lu`` couples only the passive joints of one loop group: its rows and columns split into
independent square blocks (on the Kangaroo: 2, 8 and 22 per leg, hip yaw, hip pitch-roll, knee and
ankle together). :func:`block_structure` finds them from the sparsity pattern (connected
components of the row-column graph); :class:`BlockLU` factorises every block with partial pivoting
(as LAPACK ``getrf``) and solves ``J_lu X = B`` or ``J_lu^T X = B`` in compiled code. For the
Kangaroo this is 22 k instead of 262 k multiply-adds per factorisation.
"""

from __future__ import annotations

import math

import numpy as np

from kangaroo_wbc.model.compiled import buffers, compiled

#: The factors of a :class:`BlockLU` for kernels: per block, its rows, columns and size, the
#: packed LU and the pivots (as :func:`factor_blocks` writes them).
BlockFactors = buffers("BlockFactors", ("rows", "cols", "sizes", "LU", "piv"))


def independent_blocks(pattern: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Independent blocks ``(rows, cols)`` of a matrix with nonzero ``pattern``: the connected
    components of the graph of its rows and columns (a nonzero entry joins its row and column),
    ordered by their first row; components without a row come last."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    pattern = np.asarray(pattern, dtype=bool)
    n_r, n_c = pattern.shape
    graph = np.zeros((n_r + n_c, n_r + n_c), dtype=bool)
    graph[:n_r, n_r:] = pattern
    graph[n_r:, :n_r] = pattern.T
    k, label = connected_components(csr_matrix(graph), directed=False)
    return [(np.flatnonzero(label[:n_r] == i), np.flatnonzero(label[n_r:] == i)) for i in range(k)]


def block_structure(pattern: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Independent square blocks ``(rows, cols)`` of a square matrix with nonzero ``pattern``.

    None when a connected component is not square (then the matrix is singular or needs the
    dense factorisation).
    """
    pattern = np.asarray(pattern, dtype=bool)
    if pattern.shape[0] != pattern.shape[1]:
        return None
    blocks = independent_blocks(pattern)
    return None if any(rows.size != cols.size for rows, cols in blocks) else blocks


@compiled
def factor_blocks(A, rows, cols, sizes, LU, piv):
    """Partial-pivoting LU of every block ``A[rows_b][:, cols_b]`` into ``LU[b]``, pivots into
    ``piv[b]`` (compiled; for :class:`BlockLU` and fused kernels); False if singular."""
    for b in range(sizes.shape[0]):
        m = sizes[b]
        for i in range(m):
            for j in range(m):
                LU[b, i, j] = A[rows[b, i], cols[b, j]]
        for k in range(m):
            p, best = k, abs(LU[b, k, k])
            for i in range(k + 1, m):
                if abs(LU[b, i, k]) > best:
                    p, best = i, abs(LU[b, i, k])
            piv[b, k] = p
            if best == 0.0:
                return False
            if p != k:
                for j in range(m):
                    LU[b, k, j], LU[b, p, j] = LU[b, p, j], LU[b, k, j]
            inv = 1.0 / LU[b, k, k]
            for i in range(k + 1, m):
                LU[b, i, k] *= inv
                f = LU[b, i, k]
                if f != 0.0:
                    for j in range(k + 1, m):
                        LU[b, i, j] -= f * LU[b, k, j]
    return True


@compiled
def _finite_3d(a):
    """Every entry of the 3-D array ``a`` is finite."""
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                if not math.isfinite(a[i, j, k]):
                    return False
    return True


@compiled
def _block_solve(LU, piv, b, m, y):
    """``y <- A_b^{-1} y`` for block ``b`` (size ``m``) of the factors: ``P A_b = L U``."""
    for k in range(m):
        p = piv[b, k]
        if p != k:
            y[k], y[p] = y[p], y[k]
    for i in range(m):
        s = y[i]
        for j in range(i):
            s -= LU[b, i, j] * y[j]
        y[i] = s
    for i in range(m - 1, -1, -1):
        s = y[i]
        for j in range(i + 1, m):
            s -= LU[b, i, j] * y[j]
        y[i] = s / LU[b, i, i]


@compiled
def factor_blocks_and_map(J, rows, cols, cols_in_J, sizes, LU, piv, idx_u, idx_a, n_b, T, J_m):
    """Factorise ``J_lu = J[:, idx_u]`` by blocks (``cols_in_J = idx_u[cols]``: no copy of ``J_lu``)
    and write ``J_m = -J_lu^{-1} J[:, idx_a]`` into ``J_m`` (n_u, n_a) and ``T[idx_u, n_b:]``.
    False if a block is singular or the factors are not finite (``T``, ``J_m`` then untouched)."""
    if not factor_blocks(J, rows, cols_in_J, sizes, LU, piv):
        return False
    for b in range(sizes.shape[0]):
        m = sizes[b]
        for i in range(m):
            for j in range(m):
                if not math.isfinite(LU[b, i, j]):
                    return False
    y = np.empty(LU.shape[1])
    for c in range(idx_a.shape[0]):
        col = idx_a[c]
        for b in range(sizes.shape[0]):
            m = sizes[b]
            nonzero = False
            for i in range(m):
                y[i] = J[rows[b, i], col]
                if y[i] != 0.0:
                    nonzero = True
            if nonzero:  # else a block untouched by this actuator (another sub-mechanism): zeros
                _block_solve(LU, piv, b, m, y)
            for i in range(m):
                u = cols[b, i]
                v = -y[i] if nonzero else 0.0
                J_m[u, c] = v
                T[idx_u[u], n_b + c] = v
    return True


@compiled
def solve_blocks(LU, piv, rows, cols, sizes, B, X, transpose):
    """``X = A^{-1} B`` (or ``A^{-T} B``) with the block factors of :func:`factor_blocks` (compiled;
    :class:`BlockLU` and the fused estimator and projected-model kernels call it); ``B``, ``X`` are
    (n, k)."""
    y = np.empty(LU.shape[1])
    for b in range(sizes.shape[0]):
        m = sizes[b]
        for c in range(B.shape[1]):
            src = cols[b] if transpose else rows[b]
            dst = rows[b] if transpose else cols[b]
            nonzero = False
            for i in range(m):
                if B[src[i], c] != 0.0:
                    nonzero = True
                    break
            if not nonzero:  # a block untouched by this column (another sub-mechanism's actuator)
                for i in range(m):
                    X[dst[i], c] = 0.0
                continue
            if not transpose:  # P A = L U: L U x = P b, b from the block rows, x to the block columns
                for i in range(m):
                    y[i] = B[rows[b, i], c]
                _block_solve(LU, piv, b, m, y)
                for i in range(m):
                    X[cols[b, i], c] = y[i]
            else:  # A^T = U^T L^T P: U^T z = b (block columns), L^T w = z, x = P^T w (block rows)
                for i in range(m):
                    y[i] = B[cols[b, i], c]
                for i in range(m):
                    s = y[i]
                    for j in range(i):
                        s -= LU[b, j, i] * y[j]
                    y[i] = s / LU[b, i, i]
                for i in range(m - 1, -1, -1):
                    s = y[i]
                    for j in range(i + 1, m):
                        s -= LU[b, j, i] * y[j]
                    y[i] = s
                for k in range(m - 1, -1, -1):
                    p = piv[b, k]
                    if p != k:
                        y[k], y[p] = y[p], y[k]
                for i in range(m):
                    X[rows[b, i], c] = y[i]


@compiled
def _project_through(factors, G, g, idx_u, idx_a, J_la, work, GT_a, g_a):
    """``GT_a = G_a^T - J_la^T A^{-T} G_u^T`` and ``g_a = g[idx_a] - J_la^T A^{-T} g[idx_u]`` (see
    :meth:`BlockLU.project_through`); ``work``: (2, n, 1 + r), the right-hand sides and solutions."""
    n, r = idx_u.shape[0], G.shape[0]
    rhs, Y = work[0], work[1]
    for i in range(n):
        rhs[i, 0] = g[idx_u[i]]
        for k in range(r):
            rhs[i, 1 + k] = G[k, idx_u[i]]
    solve_blocks(factors.LU, factors.piv, factors.rows, factors.cols, factors.sizes, rhs, Y, True)
    for j in range(idx_a.shape[0]):
        s = g[idx_a[j]]
        for i in range(n):
            c = J_la[i, j]
            if c != 0.0:  # an actuator drives one sub-mechanism: most of J_la is zero
                s -= c * Y[i, 0]
        g_a[j] = s
        for k in range(r):
            s = G[k, idx_a[j]]
            for i in range(n):
                c = J_la[i, j]
                if c != 0.0:
                    s -= c * Y[i, 1 + k]
            GT_a[j, k] = s


@compiled
def _pivot_ratios(LU, sizes, out):
    """Per block, ``min |u_kk| / max |u_kk|`` of the factor ``U`` (0 for a zero block)."""
    for b in range(sizes.shape[0]):
        lo, hi = np.inf, 0.0
        for k in range(sizes[b]):
            d = abs(LU[b, k, k])
            lo = min(lo, d)
            hi = max(hi, d)
        out[b] = lo / hi if hi > 0.0 else 0.0


@compiled
def _worst_pivot(LU, sizes, out):
    """``(ratio, block)`` of the block with the smallest :func:`_pivot_ratios` ratio (``out``: its buffer)."""
    _pivot_ratios(LU, sizes, out)
    where = 0
    for b in range(1, sizes.shape[0]):
        if out[b] < out[where]:
            where = b
    return out[where], where


class BlockLU:
    """Block-diagonal LU of a square matrix with a fixed block structure (see the module docstring).

    Args:
        blocks: ``(rows, cols)`` per block, from :func:`block_structure`.
        n: matrix size.
    """

    def __init__(self, blocks: list[tuple[np.ndarray, np.ndarray]], n: int) -> None:
        M = max(len(r) for r, _ in blocks)
        self.n = n
        self.sizes = np.array([len(r) for r, _ in blocks], dtype=np.int64)
        self.rows = np.zeros((len(blocks), M), dtype=np.int64)
        self.cols = np.zeros((len(blocks), M), dtype=np.int64)
        for b, (r, c) in enumerate(blocks):
            self.rows[b, : len(r)] = r
            self.cols[b, : len(c)] = c
        self.LU = np.zeros((len(blocks), M, M))
        self.piv = np.zeros((len(blocks), M), dtype=np.int64)
        self._ratios = np.zeros(len(blocks))
        #: the factors as one buffer object (:data:`BlockFactors`) for kernels of other modules
        self.factors = BlockFactors.make(rows=self.rows, cols=self.cols, sizes=self.sizes, LU=self.LU, piv=self.piv)
        self._cols_in: tuple | None = None  # (idx_u, idx_u[cols]) of factor_and_map
        self._work: dict[tuple[int, int, int], np.ndarray] = {}  # project_through buffers
        # compile (or load) the kernels now rather than in the first control tick
        warm = np.zeros((n, n))
        for r, c in blocks:
            warm[r, c] = 1.0  # nonsingular on every block
        wide = np.zeros((n, n + 1))  # the column slice of a wider matrix (J_lu of J_l): its own signature
        wide[:, :n] = warm
        if self.factor(wide[:, :n]) and self.factor(warm):
            self.solve(np.ones((n, 1)))
            self.pivot_ratios()
            self.worst_pivot()
            # J_la is a column slice of the closure Jacobian in its users (non-contiguous layout)
            idx = np.arange(n, dtype=np.int64)
            self.project_through(np.ones((1, n)), np.ones(n), idx, idx[:1], np.ones((n, 2))[:, 1:], np.zeros((1, 1)),
                                 np.zeros(1))
        self.ok = False

    def factor(self, A: np.ndarray) -> bool:
        """Factorise ``A`` (n, n); False (and :attr:`ok` False) when a block is singular or not finite.

        ``A`` is read in place (a float64 column slice of a larger matrix too, e.g. ``J_lu`` of the
        closure Jacobian)."""
        A = np.asarray(A, dtype=float)
        self.ok = bool(factor_blocks(A, self.rows, self.cols, self.sizes, self.LU, self.piv)) and _finite_3d(self.LU)
        return self.ok

    def factor_and_map(self, J: np.ndarray, idx_u: np.ndarray, idx_a: np.ndarray, T: np.ndarray,
                       n_b: int) -> np.ndarray | None:
        """Factorise ``J[:, idx_u]`` (``J``: C-ordered (n, nv), e.g. the closure Jacobian ``J_l``)
        and return the mapping Jacobian ``J_m = -J_lu^{-1} J[:, idx_a]`` (eq. (7)), also written
        into ``T[idx_u, n_b:]``, in one compiled pass; None (and :attr:`ok` False) when a block is
        singular or not finite. :meth:`solve` then uses the same factors."""
        if self._cols_in is None or self._cols_in[0] is not idx_u:
            self._cols_in = (idx_u, np.ascontiguousarray(np.asarray(idx_u, dtype=np.int64)[self.cols]))
        J_m = np.empty((self.n, len(idx_a)))
        self.ok = bool(factor_blocks_and_map(J, self.rows, self.cols, self._cols_in[1], self.sizes, self.LU, self.piv,
                                       idx_u, idx_a, n_b, T, J_m))
        return J_m if self.ok else None

    def project_through(self, G: np.ndarray, g: np.ndarray, idx_u: np.ndarray, idx_a: np.ndarray,
                        J_la: np.ndarray, GT_a: np.ndarray, g_a: np.ndarray) -> None:
        """Rows ``G`` (r, nv) and a generalised force ``g`` (nv,) through the closures, with the
        factors of the last :meth:`factor` of ``A = J_lu`` (after a successful one):
        ``GT_a = (G_a + G_u J_m)^T`` (n_a, r) and ``g_a = g[idx_a] + J_m^T g[idx_u]`` (n_a,) with
        ``J_m = -J_lu^{-1} J_la`` (eq. (7)), in one compiled pass that never forms ``J_m``: one
        transposed block solve for ``[g_u, G_u^T]`` and products over the nonzeros of ``J_la``
        (n, n_a). ``idx_u``/``idx_a``: the velocity indices of ``A``'s columns and of the actuators.
        """
        if not self.ok:
            raise RuntimeError("BlockLU.project_through: no valid factorisation")
        shape = (2, self.n, 1 + int(G.shape[0]))
        work = self._work.get(shape)
        if work is None:
            work = self._work[shape] = np.empty(shape)
        _project_through(self.factors, G, g, idx_u, idx_a, J_la, work, GT_a, g_a)

    def pivot_ratios(self) -> np.ndarray:
        """Per block, ``min |u_kk| / max |u_kk|`` of the last factorisation (a view, overwritten by the
        next call): a cheap conditioning indicator, small near a singular block (for a block close to
        singular it is about ``1 / cond``, within a small factor)."""
        _pivot_ratios(self.LU, self.sizes, self._ratios)
        return self._ratios

    def worst_pivot(self) -> tuple[float, int]:
        """``(ratio, block)``: the smallest of :meth:`pivot_ratios` and its block, in one compiled pass
        (what a per-tick conditioning check needs)."""
        ratio, block = _worst_pivot(self.LU, self.sizes, self._ratios)
        return float(ratio), int(block)

    def solve(self, B: np.ndarray, transpose: bool = False) -> np.ndarray:
        """``A^{-1} B`` or ``A^{-T} B`` for ``B`` of shape (n,) or (n, k) (after a successful :meth:`factor`)."""
        if not self.ok:
            raise RuntimeError("BlockLU.solve: no valid factorisation")
        B = np.asarray(B, dtype=float)
        B2 = np.ascontiguousarray(B.reshape(self.n, -1))
        X = np.empty(B2.shape)
        solve_blocks(self.LU, self.piv, self.rows, self.cols, self.sizes, B2, X, transpose)
        return X if B.ndim == 2 else X[:, 0]


__all__ = ["BlockFactors", "BlockLU", "block_structure", "factor_blocks", "factor_blocks_and_map", "independent_blocks",
           "solve_blocks"]
