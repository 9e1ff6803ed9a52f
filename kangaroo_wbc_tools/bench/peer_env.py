"""The benchmark's peer environment: a separate virtual environment with pinocchio 3.

The peer library (toolbox-parallel-robots) solves its loops with pinocchio 3's proximal solver
(``ContactCholeskyDecomposition``, gone in pinocchio 4, which the project uses). Its FK only agrees
with ours to the tolerance of the comparison there, so ``kangaroo-wbc bench`` runs the peer worker
under an interpreter of its own: a venv outside the repository with the pinned
``requirements-peer.txt``.

* Location: ``$KANGAROO_WBC_PEER_VENV``, else ``${XDG_CACHE_HOME:-~/.cache}/kangaroo_wbc/peer-venv``.
* Created on first use by ``kangaroo-wbc bench`` (one progress line on stderr; ``--no-peer-setup``
  skips it) or by ``make peer-env`` / ``kangaroo-wbc bench peer-env``; updated when
  ``requirements-peer.txt`` changes (a stamp file in the venv holds its hash).
* It is usable when its interpreter imports pinocchio with ``ContactCholeskyDecomposition``, the
  toolbox, casadi, scipy and PyYAML, and what the peer worker imports from this checkout
  (:data:`WORKER_IMPORTS`: ``kangaroo_wbc.model`` needs numba) (:func:`probe`).
* Setup never raises: offline, no ``venv`` module, a pip failure... come back as a
  :class:`PeerEnv` whose ``reason`` the bench report carries.

The base interpreter is the one this venv was made from (``sys._base_executable``): the pins are
for CPython 3.11, as the project's own requirements.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from kangaroo_wbc_tools.bench.workload import REPO_ROOT

#: Environment variable naming the peer venv's folder.
VENV_ENV = "KANGAROO_WBC_PEER_VENV"

#: The pinned requirements of the peer venv (repository root).
REQUIREMENTS = REPO_ROOT / "requirements-peer.txt"

#: File in the venv holding the hash of the requirements it was installed from.
STAMP_NAME = ".kangaroo_wbc-peer-requirements.sha256"

#: Seconds allowed for ``python -m venv`` and for the pip install.
VENV_TIMEOUT_S = 300.0
PIP_TIMEOUT_S = 1800.0
PROBE_TIMEOUT_S = 120.0

#: Modules of this checkout the peer worker imports (on ``PYTHONPATH``, as :func:`peers.run_worker`
#: runs it; a package with every one of its modules, since the model imports some of them only when
#: a model is built): the probe imports them too, so that a peer environment lacking one of their
#: dependencies (numba) is found out at setup, not as a per-model error in the bench's report.
WORKER_IMPORTS = ("kangaroo_wbc_tools.bench.peer_worker", "kangaroo_wbc.model")

#: What the peer interpreter must import (printed as one JSON line by ``python -c``; the worker's
#: own modules are the arguments).
PROBE_CODE = r"""
import json, sys
out = {"python": sys.version.split()[0], "missing": []}
try:
    import pinocchio
    out["pinocchio"] = pinocchio.__version__
    out["contact_cholesky"] = hasattr(pinocchio, "ContactCholeskyDecomposition")
except Exception as exc:
    out["missing"].append("pinocchio (%s: %s)" % (type(exc).__name__, exc))
for mod in ("casadi", "scipy.optimize", "yaml", "numpy"):
    try:
        __import__(mod)
    except Exception as exc:
        out["missing"].append("%s (%s: %s)" % (mod, type(exc).__name__, exc))
import importlib.util
if importlib.util.find_spec("toolbox_parallel_robots") is None:
    out["missing"].append("toolbox_parallel_robots")
import importlib, pkgutil
for name in sys.argv[1:]:
    try:
        module = importlib.import_module(name)
        for sub in pkgutil.walk_packages(getattr(module, "__path__", []), name + "."):
            name = sub.name
            importlib.import_module(name)
    except Exception as exc:
        out["missing"].append("%s for the peer worker (%s: %s)" % (name, type(exc).__name__, exc))
try:
    from importlib import metadata
    out["toolbox_version"] = metadata.version("toolbox-parallel-robots")
except Exception:
    out["toolbox_version"] = None
print(json.dumps(out))
"""


@dataclass
class PeerEnv:
    """The peer venv as found or set up. ``python`` is set only when it is usable."""

    venv: str
    python: str | None = None
    state: str = "missing"  # ready | created | updated | missing | failed
    reason: str | None = None
    setup_s: float | None = None
    pinocchio: str | None = None
    toolbox_version: str | None = None

    def as_dict(self) -> dict:
        out = asdict(self)
        out["requirements"] = REQUIREMENTS.name
        return out


Log = Callable[[str], None]


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def default_venv() -> Path:
    """``$KANGAROO_WBC_PEER_VENV``, else ``${XDG_CACHE_HOME:-~/.cache}/kangaroo_wbc/peer-venv``."""
    explicit = os.environ.get(VENV_ENV)
    if explicit:
        return Path(explicit).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "kangaroo_wbc" / "peer-venv"


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def base_python() -> str:
    """The interpreter this one's venv was made from (the same CPython), else this one."""
    return getattr(sys, "_base_executable", None) or sys.executable


def requirements_hash(requirements: Path = REQUIREMENTS) -> str | None:
    try:
        return hashlib.sha256(requirements.read_bytes()).hexdigest()
    except OSError:
        return None


def _tail(text: str, n: int = 3) -> str:
    """The last lines of a command's output, its ``ERROR:`` lines when it has some (pip's)."""
    lines = [ln.strip() for ln in text.splitlines()
             if ln.strip() and "is ignored: it is neither a file nor a directory" not in ln]
    errors = [ln for ln in lines if ln.startswith("ERROR:")]
    return " | ".join((errors or lines)[-n:])


def _clean_env() -> dict:
    """The environment for the peer venv's own commands: no other venv's variables."""
    env = dict(os.environ)
    for key in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV"):
        env.pop(key, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def probe(python: str | Path, timeout_s: float = PROBE_TIMEOUT_S) -> tuple[dict | None, str | None]:
    """Ask ``python`` what it imports. Returns ``(answer, None)`` when it can run the proximal peer,
    else ``(answer or None, reason)``."""
    env = _clean_env()
    env["PYTHONPATH"] = str(REPO_ROOT)  # the checkout, as the bench runs the worker
    try:
        proc = subprocess.run([str(python), "-c", PROBE_CODE, *WORKER_IMPORTS], capture_output=True,
                              text=True, timeout=timeout_s, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{python} does not run: {type(exc).__name__}: {exc}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        return None, f"{python} exited with {proc.returncode} and no answer: {_tail(proc.stderr)}"
    if answer.get("missing"):
        return answer, f"{python} cannot import: {'; '.join(answer['missing'])}"
    if not answer.get("contact_cholesky"):
        return answer, (f"{python} has pinocchio {answer.get('pinocchio')} without ContactCholeskyDecomposition "
                        "(the toolbox's proximal solver needs pinocchio 3)")
    return answer, None


def _usable(env: PeerEnv, python: Path, answer: dict) -> PeerEnv:
    env.python = str(python)
    env.pinocchio = answer.get("pinocchio")
    env.toolbox_version = answer.get("toolbox_version")
    return env


@contextlib.contextmanager
def _lock(venv: Path, log: Log) -> Iterator[None]:
    """Two setups of the same venv at once (two benches) wait for each other."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            log(f"peer environment: waiting for another setup of {venv}")
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def find(venv: Path | None = None) -> PeerEnv:
    """The peer venv if it exists and is usable; never creates anything."""
    venv = venv if venv is not None else default_venv()
    env = PeerEnv(venv=str(venv))
    python = venv_python(venv)
    if not python.exists():
        env.reason = (f"no peer environment at {venv} (create it with `make peer-env`, or run the bench "
                      "without --no-peer-setup)")
        return env
    answer, reason = probe(python)
    if reason is not None:
        env.state, env.reason = "failed", reason
        return env
    env.state = "ready"
    if (venv / STAMP_NAME).is_file() and (venv / STAMP_NAME).read_text().strip() != requirements_hash():
        env.reason = f"installed from an older {REQUIREMENTS.name}; `make peer-env` updates it"
    return _usable(env, python, answer or {})


def ensure(venv: Path | None = None, setup: bool = True, log: Log = _stderr, base: str | None = None,
           requirements: Path = REQUIREMENTS) -> PeerEnv:
    """The peer venv, created or updated first when ``setup`` (see the module docstring).

    ``base`` is the interpreter that creates the venv (default :func:`base_python`). Never raises
    for a failed setup: the returned :class:`PeerEnv` has ``python=None`` and the reason.
    """
    venv = venv if venv is not None else default_venv()
    want = requirements_hash(requirements)
    python = venv_python(venv)
    stamp = venv / STAMP_NAME

    def current() -> bool:
        return python.exists() and stamp.is_file() and stamp.read_text().strip() == want

    if not setup or (want is not None and current()):
        found = find(venv)
        if found.python is not None or not setup:
            return found
    if want is None:
        env = find(venv)
        if env.python is None:
            env.state = "failed"
            env.reason = f"{requirements} not found (the peer environment is set up from a source checkout)"
        return env
    try:
        with _lock(venv, log):
            if current():  # another process finished it meanwhile
                found = find(venv)
                if found.python is not None:
                    return found
            return _setup(venv, python, stamp, want, requirements, base or base_python(), log)
    except OSError as exc:  # the cache folder cannot be written...
        return PeerEnv(venv=str(venv), state="failed", reason=f"peer environment setup failed: {exc}")


def _failed(venv: Path, reason: str, log: Log, existed: bool, t0: float) -> PeerEnv:
    """A failed setup; an update that failed leaves the previous install, used if it still works."""
    log(f"peer environment: {reason}")
    if existed:
        previous = find(venv)
        if previous.python is not None:
            previous.reason = f"update failed, the previous install is used: {reason}"
            return previous
    return PeerEnv(venv=str(venv), state="failed", reason=reason, setup_s=round(time.perf_counter() - t0, 1))


def _setup(venv: Path, python: Path, stamp: Path, want: str, requirements: Path, base: str, log: Log) -> PeerEnv:
    t0 = time.perf_counter()
    existed = python.exists()
    if venv.exists() and not existed and not (venv / "pyvenv.cfg").exists() and any(venv.iterdir()):
        return _failed(venv, f"{venv} exists and is not a virtual environment; remove it or set {VENV_ENV}",
                       log, existed, t0)
    pins = [ln.split("==")[0] + " " + ln.split("==")[1] for ln in requirements.read_text().splitlines()
            if ln.split("==")[0] in ("pin", "toolbox-parallel-robots")]
    log(f"peer environment: {'installing into' if existed else 'creating'} {venv} ({', '.join(pins)}; "
        f"pip install -r {requirements.name}, a minute or two with a network; --no-peer-setup skips) ...")
    try:
        if not existed:
            proc = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True,
                                  timeout=VENV_TIMEOUT_S, env=_clean_env(), check=False)
            if proc.returncode != 0 or not python.exists():
                return _failed(venv, f"`{base} -m venv {venv}` failed ({proc.returncode}): "
                               f"{_tail(proc.stderr + proc.stdout)} (Debian: apt-get install python3.11-venv)",
                               log, existed, t0)
        stamp.unlink(missing_ok=True)
        proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--only-binary=:all:",
                               "--retries", "1", "--timeout", "30", "-r", str(requirements)],
                              capture_output=True, text=True, timeout=PIP_TIMEOUT_S, env=_clean_env(), check=False)
        if proc.returncode != 0:
            return _failed(venv, f"pip install -r {requirements.name} into {venv} failed ({proc.returncode}; "
                           f"offline?): {_tail(proc.stderr + proc.stdout)}", log, existed, t0)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _failed(venv, f"peer environment setup failed: {type(exc).__name__}: {exc}", log, existed, t0)
    answer, reason = probe(python)
    if reason is not None:
        return _failed(venv, f"installed, but {reason}", log, False, t0)
    answer = answer or {}
    stamp.write_text(want + "\n")
    env = PeerEnv(venv=str(venv), setup_s=round(time.perf_counter() - t0, 1))
    env.state = "updated" if existed else "created"
    log(f"peer environment: {env.state} in {env.setup_s:.0f} s: pinocchio {answer.get('pinocchio')}, "
        f"toolbox-parallel-robots {answer.get('toolbox_version')} ({python})")
    return _usable(env, python, answer)
