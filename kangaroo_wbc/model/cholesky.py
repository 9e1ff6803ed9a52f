"""Compiled dense kernels for the small matrices of a control tick (a dozen to a few dozen rows),
where a LAPACK call's overhead exceeds the arithmetic."""

from __future__ import annotations

import math

from kangaroo_wbc.model.compiled import compiled


@compiled
def cholesky_in_place(L, n, rel_tol):
    """Cholesky factor of the symmetric matrix held in the lower triangle of ``L[:n, :n]``,
    written over it (``A = L L^T``; the strict upper triangle is not read). False, with ``L``
    partly overwritten, when a pivot is not above ``rel_tol`` times its diagonal entry (0: not
    positive): the matrix is not numerically positive definite."""
    for j in range(n):
        d = L[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > rel_tol * L[j, j]:
            return False
        d = math.sqrt(d)
        L[j, j] = d
        for i in range(j + 1, n):
            s = L[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


__all__ = ["cholesky_in_place"]
