"""numba's on-disk cache of the package's compiled kernels: whether it is built, and building it.

Every per-tick kernel (:func:`kangaroo_wbc.model.compiled.compiled`) is compiled by numba at its
first call and kept in numba's on-disk cache: ``__pycache__`` beside its source file, or numba's
user-wide cache folder when the package folder is read-only. Compiling all of them takes tens of
seconds (39.8 s for the one-process loop with an empty cache on a 2-core Xeon VM, 4.4 s once
cached); a node started with an empty cache spends that time before its first message, and the
four processes of the separate deployment compile the same kernels side by side on the same cores.

* :func:`state` (standard library only, a few milliseconds, nothing imported from the package):
  whether the cache was built for the present sources. :func:`build` leaves a stamp holding a
  fingerprint of the kernels' source files (path, size, modification time: what numba's own cache
  index compares) and numba's and Python's versions; a different fingerprint means numba will
  compile again.
* :func:`build`: runs the one-process loop (:class:`~kangaroo_wbc_tools.pipeline.closed_loop.ClosedLoopRun`)
  for :data:`BUILD_DURATION_S` of simulated time, which calls every kernel the nodes call, then
  writes the stamp. Kernels already cached are loaded, not compiled.
* ``python -m kangaroo_wbc_tools.pipeline.compile_cache [--check]``, an internal tool (the one ``python -m``
  left beside ``kangaroo-wbc``, not a user command): ``setup.py`` runs it after
  ``colcon build`` installs the package, and ``kangaroo_wbc.launch.py`` before the nodes when
  :func:`state` says the cache is not built (one log line with the estimate first).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

#: The package folder (the sources numba caches beside).
PACKAGE_DIR = Path(__file__).resolve().parents[1]
#: Subpackages holding the kernels the nodes run (the tools' ``analysis`` has kernels of its own,
#: never run by a node).
RUNTIME_PACKAGES = ("model", "sim", "estimation", "control")
#: A source file holds kernels when its text has one of these.
KERNEL_MARKERS = ("@compiled", "compiled(", "numba.njit", "@njit")
#: Name of the stamp file (in ``<package>/__pycache__``, else the user cache folder).
STAMP_NAME = "kangaroo_wbc-compiled-kernels.json"
#: Simulated time [s] of the one-process loop that builds the cache: boot, calibration (0.2 s)
#: and control ticks.
BUILD_DURATION_S = 0.4
#: Estimate [s] of a build from an empty cache when no build was timed on this machine: measured
#: 39.8 s on a 2-core Xeon VM (``kangaroo-wbc demo --duration 0.2`` from an empty cache).
DEFAULT_BUILD_S = 40.0


@dataclass
class CacheState:
    """What :func:`state` found."""

    built: bool
    stamp: Path
    reason: str  # why it is not built ("" when built)
    estimate_s: float  # expected duration of a build [s]

    def message(self) -> str:
        """One log line for a start-up that has to build the cache first."""
        return (f"compiling the package's numba kernels into the cache ({self.reason}): about "
                f"{self.estimate_s:.0f} s, once; later starts load them from the cache")


def kernel_sources(package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """The runtime source files that define compiled kernels."""
    out = []
    for sub in RUNTIME_PACKAGES:
        for path in sorted((package_dir / sub).rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except OSError:
                continue
            if any(marker in text for marker in KERNEL_MARKERS):
                out.append(path)
    return out


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def fingerprint(package_dir: Path = PACKAGE_DIR) -> str:
    """Hash of the kernels' sources (path, size, mtime) and numba's and Python's versions."""
    h = hashlib.sha256()
    h.update(f"{sys.version_info[:2]} numba {_version('numba')} llvmlite {_version('llvmlite')}".encode())
    for path in kernel_sources(package_dir):
        st = path.stat()
        h.update(f"{path.relative_to(package_dir)} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def stamp_path(package_dir: Path = PACKAGE_DIR) -> Path:
    """Where the stamp goes: where numba puts the cache (the package folder when writable, else
    the user cache folder, one stamp per package location)."""
    pycache = package_dir / "__pycache__"
    if os.access(pycache if pycache.is_dir() else package_dir, os.W_OK):
        return pycache / STAMP_NAME
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(str(package_dir).encode()).hexdigest()[:12]
    return cache / "kangaroo_wbc" / f"{key}-{STAMP_NAME}"


def _read_stamp(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def state(package_dir: Path = PACKAGE_DIR) -> CacheState:
    """Whether the kernel cache was built for the present sources (never raises)."""
    path = stamp_path(package_dir)
    try:
        stamp = _read_stamp(path)
        current = fingerprint(package_dir)
    except OSError as exc:
        return CacheState(False, path, f"sources unreadable: {exc}", DEFAULT_BUILD_S)
    estimate = float(stamp.get("cold_build_s") or DEFAULT_BUILD_S)
    if not stamp:
        return CacheState(False, path, "none built for this install yet", estimate)
    if stamp.get("fingerprint") != current:
        return CacheState(False, path, "the sources or numba changed since it was built", estimate)
    return CacheState(True, path, "", estimate)


def _runtime_dispatchers() -> list:
    """numba dispatchers of every module of :data:`RUNTIME_PACKAGES`."""
    import importlib
    import pkgutil

    from numba.core.registry import CPUDispatcher

    out = []
    for sub in RUNTIME_PACKAGES:
        pkg = importlib.import_module(f"kangaroo_wbc.{sub}")
        names = [pkg.__name__] + [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
        for name in names:
            module = importlib.import_module(name)
            out += [v for v in vars(module).values()
                    if isinstance(v, CPUDispatcher) and v.py_func.__module__ == name]
    return out


def build(package_dir: Path = PACKAGE_DIR) -> dict:
    """Compile (or load) every kernel the nodes call and write the stamp. Returns what was done:
    ``kernels`` (of the runtime packages), ``compiled`` and ``loaded`` (from the cache: kernels
    called from Python; a kernel called only from other kernels is compiled into them),
    ``build_s`` [s] and ``stamp``."""
    t0 = time.perf_counter()
    dispatchers = _runtime_dispatchers()
    from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=BUILD_DURATION_S))
    run.log.enabled = False
    run.run()
    compiled = sum(len(d.stats.cache_misses) > 0 for d in dispatchers)
    loaded = sum(len(d.stats.cache_hits) > 0 and not d.stats.cache_misses for d in dispatchers)
    build_s = time.perf_counter() - t0
    path = stamp_path(package_dir)
    # the estimate of the next build from an empty cache: this one if it compiled most kernels
    cold = build_s if 2 * compiled >= len(dispatchers) else _read_stamp(path).get("cold_build_s")
    result = {"kernels": len(dispatchers), "compiled": compiled, "loaded": loaded,
              "build_s": round(build_s, 1), "stamp": str(path)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"fingerprint": fingerprint(package_dir),
                                "cold_build_s": round(cold, 1) if cold else None, **result}, indent=1) + "\n")
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m kangaroo_wbc_tools.pipeline.compile_cache``: build the kernel cache (``--check``: only
    say whether it is built; exit 1 if not)."""
    p = argparse.ArgumentParser(prog="python -m kangaroo_wbc_tools.pipeline.compile_cache",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="only report whether the cache is built (exit 1 if not)")
    p.add_argument("--quiet", action="store_true",
                   help="no line before the build (the caller said what is being done)")
    args = p.parse_args(argv)
    found = state()
    if args.check:
        print(f"kernel cache {'built' if found.built else 'not built: ' + found.reason} ({found.stamp})")
        return 0 if found.built else 1
    if found.built:
        print(f"kernel cache: already built for these sources ({found.stamp})", flush=True)
        return 0
    if not args.quiet:
        print(f"kernel cache: {found.message()}", flush=True)
    try:
        result = build()
    except Exception as exc:  # noqa: BLE001 - reported in one line; the nodes compile at their start
        print(f"kernel cache: not built ({type(exc).__name__}: {exc}); each node compiles what it "
              "needs when it starts", file=sys.stderr, flush=True)
        return 1
    print(f"kernel cache: built in {result['build_s']:.1f} s: of {result['kernels']} kernels, "
          f"{result['compiled']} compiled, {result['loaded']} loaded from the cache, the others "
          f"compiled into their callers ({result['stamp']})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
