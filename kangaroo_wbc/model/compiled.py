"""The package's compile decorator for per-tick kernels, and two compiled finiteness checks.

Use :func:`compiled` for a function that runs at every control or estimation tick on small arrays
and scalars, where the interpreter's per-call overhead (numpy dispatch, temporaries, Python loops
over a few dozen numbers) dominates the arithmetic. Such a kernel is compiled by
`numba <https://numba.pydata.org>`_ (``njit``, ``cache=True``, ``nogil=True``) at its first call, or
loaded from numba's on-disk cache. The owner of a kernel calls it once with arrays of the right
types when a model, controller or estimator is built, so that the compilation (or the cache load)
happens then and never inside a control tick.

numba is a pinned dependency: there is no interpreted fallback. A readable numpy form of a kernel,
where one helps, belongs in its unit test as the oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np


def compiled(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` compiled by numba in nopython mode, cached on disk, releasing the GIL."""
    return numba.njit(cache=True, nogil=True)(f)


@compiled
def all_finite(a, b):
    """Every entry of the 1-D arrays ``a`` and ``b`` is finite (compiled: a fraction of
    ``np.isfinite(a).all()`` on the small vectors of a control tick)."""
    for i in range(a.shape[0]):
        if not np.isfinite(a[i]):
            return False
    for i in range(b.shape[0]):
        if not np.isfinite(b[i]):
            return False
    return True


@compiled
def _finite_array(a):
    for x in a.flat:
        if not np.isfinite(x):
            return False
    return True


def finite(a) -> bool:
    """Every entry of ``a`` (an array of any shape, or a sequence of numbers) is finite
    (compiled; a tuple or list is converted first, numba's reflected sequences are slow)."""
    return _finite_array(a if type(a) is np.ndarray else np.asarray(a, dtype=float))


__all__ = ["all_finite", "compiled", "finite"]
