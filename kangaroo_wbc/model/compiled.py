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

A kernel takes at most 12 arguments (a test scans for it). Arrays that travel together (a
mechanism's index tables, an estimator's state and work buffers) go in one **buffer object**
made by :func:`buffers`: a numba ``StructRef`` holding references to the owner's numpy arrays.
Passing one to a kernel costs less than a long argument list (numba types each argument at
every call: about 0.1 µs per array), and kernels stay cacheable on disk.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref


def compiled(f: Callable[..., Any]) -> Callable[..., Any]:
    """``f`` compiled by numba in nopython mode, cached on disk, releasing the GIL."""
    return numba.njit(cache=True, nogil=True)(f)


class _BufferType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


def buffers(name: str, fields: Sequence[str]) -> Any:
    """A buffer-object class ``name`` with the given fields, for compiled kernels.

    Build an instance with :meth:`make` (keyword per field: numpy arrays, or scalars that never
    change) once, when the owner builds its buffers; pass it to kernels, which read
    ``buf.field``. The object holds references to the arrays, not copies: the owner writes its
    inputs into its own arrays in place (never rebinds them) and reads the kernels' outputs there.
    Reading a field through the object from Python is slow (a compiled getter): keep the arrays.

    Call it at module level (``Name = buffers("Name", ...)``): the class and its numba type are put
    in the caller's module under ``name`` and ``name + "Type"``, where pickle finds them. numba's
    on-disk cache of a kernel that takes the object is written and read back only then; otherwise
    every process compiles the kernel again at start-up (seconds per node).
    """
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    if caller is None:
        raise RuntimeError("buffers() must be called from a module")
    namespace = caller.f_globals
    module = namespace["__name__"]
    typ = type(f"{name}Type", (_BufferType,), {"__module__": module, "__qualname__": f"{name}Type"})
    structref.register(typ)
    namespace[f"{name}Type"] = typ
    cls = type(name, (structref.StructRefProxy,), {"__module__": module, "__qualname__": name,
                                                    "fields": tuple(fields), "make": classmethod(_make)})
    structref.define_proxy(cls, typ, list(fields))
    namespace.setdefault(name, cls)
    return cls


def _make(cls: Any, **values: Any) -> Any:
    """An instance of the buffer class ``cls`` from one keyword per field (missing or unknown
    fields raise TypeError)."""
    missing = [f for f in cls.fields if f not in values]
    unknown = [k for k in values if k not in cls.fields]
    if missing or unknown:
        raise TypeError(f"{cls.__name__}: missing fields {missing}, unknown fields {unknown}")
    return cls(*(values[f] for f in cls.fields))


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


__all__ = ["all_finite", "buffers", "compiled", "finite"]
