"""Unit test: no compiled kernel of :mod:`kangaroo_wbc` takes more than 12 arguments (issue #26).

A kernel is a function decorated with the package's :func:`~kangaroo_wbc.model.compiled.compiled`
(or numba's ``njit``/``jit``/``cfunc`` directly). Arrays that travel together go in a buffer object
(:func:`kangaroo_wbc.model.compiled.buffers`) instead of a long positional list.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np

from kangaroo_wbc.model.compiled import buffers, compiled

PACKAGE = Path(__file__).resolve().parents[1] / "kangaroo_wbc"
TOOLS = PACKAGE.parent / "kangaroo_wbc_tools"  # the mechanism analysis has kernels of its own
MAX_ARGUMENTS = 12
_DECORATORS = ("compiled", "njit", "jit", "cfunc")


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in _DECORATORS:
            return True
    return False


def kernels(root: Path = PACKAGE) -> list[tuple[str, int, str, int]]:
    """``(file, line, name, number of arguments)`` of every kernel below ``root``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef) and _is_kernel(node):
                a = node.args
                n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
                out.append((str(path.relative_to(root.parent)), node.lineno, node.name, n))
    return out


def test_the_scan_finds_kernels_and_counts_their_arguments():
    found = {name: n for _, _, name, n in kernels()}
    assert found.get("all_finite") == 2  # model/compiled.py: the scan sees the package's decorator
    assert len(found) > 40


def test_no_kernel_takes_more_than_twelve_arguments():
    long = [f"{f}:{line} {name} ({n} arguments)" for root in (PACKAGE, TOOLS) for f, line, name, n in kernels(root)
            if n > MAX_ARGUMENTS]
    assert not long, "kernels with more than 12 arguments (use a buffer object):\n" + "\n".join(long)


_PairBuffers = buffers("_PairBuffers", ["x", "out", "gain"])


@compiled
def _scaled_copy(buf, offset):
    x, out = buf.x, buf.out
    for i in range(x.shape[0]):
        out[i] = buf.gain * x[i] + offset
    return out.shape[0]


def test_a_buffer_object_shares_its_arrays_with_the_owner():
    x, out = np.arange(3.0), np.zeros(3)
    buf = _PairBuffers.make(x=x, out=out, gain=2.0)
    assert _scaled_copy(buf, 1.0) == 3
    np.testing.assert_array_equal(out, [1.0, 3.0, 5.0])
    x[:] = [10.0, 20.0, 30.0]  # written in place by the owner: the kernel sees it
    _scaled_copy(buf, 0.0)
    np.testing.assert_array_equal(out, [20.0, 40.0, 60.0])


def test_a_buffer_object_names_missing_and_unknown_fields():
    try:
        _PairBuffers.make(x=np.zeros(2), gain=1.0, typo=3)
    except TypeError as exc:
        assert "missing fields ['out']" in str(exc) and "unknown fields ['typo']" in str(exc)
    else:
        raise AssertionError("TypeError expected")


def test_a_kernel_taking_a_buffer_object_loads_from_the_disk_cache_in_a_new_process():
    """The second process finds the kernel compiled by the first (numba's cache index must be able
    to pickle the buffer type): otherwise every node compiles its kernels at start-up again."""
    script = ("import numpy as np\n"
              "from test.test_kernel_arguments import _PairBuffers, _scaled_copy\n"
              "_scaled_copy(_PairBuffers.make(x=np.zeros(2), out=np.zeros(2), gain=1.0), 0.0)\n"
              "print(sum(_scaled_copy.stats.cache_hits.values()), sum(_scaled_copy.stats.cache_misses.values()))\n")
    root = PACKAGE.parent
    runs = [subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=120)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    hits, misses = (int(x) for x in runs[1].stdout.split())
    assert (hits, misses) == (1, 0), runs[1].stdout
