"""numba's kernel cache: its stamp follows the sources, and a build leaves it built.

Unit tests (``state`` on a scratch package folder: files and stamps only) and one integration
test (the cache build as a process, on the package itself).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kangaroo_wbc_tools.pipeline import compile_cache as cc

KERNEL = "from kangaroo_wbc.model.compiled import compiled\n\n\n@compiled\ndef twice(x):\n    return 2 * x\n"
PLAIN = "def thrice(x):\n    return 3 * x\n"


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """Unit fixture: a scratch package folder with one kernel file and one plain file."""
    root = tmp_path / "kangaroo_wbc"
    (root / "model").mkdir(parents=True)
    (root / "control").mkdir()
    (root / "model" / "kernels.py").write_text(KERNEL)
    (root / "control" / "plain.py").write_text(PLAIN)
    return root


def _write_stamp(package: Path, **extra) -> Path:
    path = cc.stamp_path(package)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"fingerprint": cc.fingerprint(package), **extra}))
    return path


def test_kernel_sources_are_the_files_with_kernels(package: Path) -> None:
    assert cc.kernel_sources(package) == [package / "model" / "kernels.py"]


def test_not_built_without_stamp(package: Path) -> None:
    found = cc.state(package)
    assert not found.built and found.reason == "none built for this install yet"
    assert found.estimate_s == cc.DEFAULT_BUILD_S
    assert found.stamp == package / "__pycache__" / cc.STAMP_NAME
    assert f"about {cc.DEFAULT_BUILD_S:.0f} s" in found.message()


def test_built_until_a_kernel_source_changes(package: Path) -> None:
    _write_stamp(package, cold_build_s=55.9)
    assert cc.state(package).built
    (package / "control" / "plain.py").write_text(PLAIN + "# a file without kernels\n")
    assert cc.state(package).built  # numba's cache does not depend on it either
    kernels = package / "model" / "kernels.py"
    later = kernels.stat().st_mtime_ns + 1_000_000_000
    os.utime(kernels, ns=(later, later))  # same text, newer: numba's index is stale too
    found = cc.state(package)
    assert not found.built and "changed" in found.reason
    assert found.estimate_s == 55.9  # the last build from an empty cache on this machine


def test_a_new_kernel_file_invalidates(package: Path) -> None:
    _write_stamp(package)
    (package / "control" / "more.py").write_text(KERNEL)
    assert not cc.state(package).built


def test_unreadable_stamp_is_not_built(package: Path) -> None:
    path = _write_stamp(package)
    path.write_text("{not json")
    assert not cc.state(package).built


def test_stamp_in_user_cache_when_package_is_read_only(package: Path, tmp_path: Path, monkeypatch) -> None:
    """numba caches in its user-wide folder when the package folder is read-only; so does the stamp."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cc.os, "access", lambda path, mode: False)
    path = cc.stamp_path(package)
    assert path.parent == tmp_path / "cache" / "kangaroo_wbc" and path.name.endswith(cc.STAMP_NAME)
    assert cc.stamp_path(tmp_path / "elsewhere") != path  # one stamp per package location


@pytest.mark.integration
def test_build_leaves_the_cache_built() -> None:
    """Integration test: ``python -m kangaroo_wbc_tools.pipeline.compile_cache`` builds (or finds) the
    package's cache, says what it did in one line, and ``--check`` then exits 0."""
    run = [sys.executable, "-m", "kangaroo_wbc_tools.pipeline.compile_cache"]
    cc.stamp_path().unlink(missing_ok=True)  # numba's own cache stays: a build loads what it has
    before = subprocess.run(run + ["--check"], capture_output=True, text=True, timeout=120)
    assert before.returncode == 1 and "not built" in before.stdout
    t0 = time.time()
    proc = subprocess.run(run, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2 and "about" in lines[0] and "built in" in lines[1], proc.stdout
    check = subprocess.run(run + ["--check"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    stamp = json.loads(cc.stamp_path().read_text())
    assert stamp["fingerprint"] == cc.fingerprint() and cc.stamp_path().stat().st_mtime >= t0 - 1.0
    # every kernel the loop calls from Python was compiled or loaded
    assert stamp["kernels"] > 50 and stamp["compiled"] + stamp["loaded"] > stamp["kernels"] // 2
    again = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "already built" in again.stdout
