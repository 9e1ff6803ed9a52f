"""Helpers shared by the CLI subcommands: argument types, output folders, errors, JSON and
tables, progress display and signals.

Every subcommand follows the same rules:

* **Arguments are checked when parsed**, before anything runs: typed, ranged and finite
  (:func:`positive_float`, :func:`positive_int`, :func:`seed`, ...), output paths checked
  (:func:`output_folder`, :func:`output_file`). A rejected argument is one line on stderr naming
  the option and what it accepts, exit code 2 (:class:`UsageError`).
* **``--json``**: the last stdout line is one JSON object, a failure included
  (``{"ok": false, "error": "..."}``).
* **Output folders** (``--out``) are never shared by two runs: an existing non-empty folder is
  refused unless ``--force``, which first removes the previous run's artefacts, and only those
  listed in that run's manifest (:func:`prepare_output_folder`, :func:`seal_output_folder`).
* **Progress** (:class:`kangaroo_wbc.progress.Progress`, built on tqdm) goes to stderr: a live
  bar on a terminal, at most one line every :data:`~kangaroo_wbc.progress.LINE_INTERVAL_S`
  otherwise, nothing with ``--json`` unless ``--progress on``.
* **SIGINT / SIGTERM**: loops that can stop at a tick boundary run under :class:`StopSignals`
  and report the time run so far; exit code 128 + the signal number (130, 143).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import shutil
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from kangaroo_wbc.progress import LINE_INTERVAL_S

PROG = "kangaroo-wbc"

# ---------------------------------------------------------------------------------------- errors


class UsageError(Exception):
    """A command-line argument or option combination was rejected (exit code 2, one line)."""


class Interrupted(BaseException):
    """SIGINT / SIGTERM where the command cannot stop at a tick boundary (exit 128 + signum)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def fail(message: str, json_mode: bool) -> None:
    """Report a failure: one line on stderr, and with ``--json`` one JSON object on stdout."""
    message = " ".join(str(message).split())  # one line, whatever the message held
    print(message, file=sys.stderr, flush=True)
    if json_mode:
        print_json({"ok": False, "error": message})


class CliParser(argparse.ArgumentParser):
    """argparse whose errors raise :class:`UsageError` (one line, exit 2) instead of printing the
    usage; subparsers made by ``add_subparsers`` are of this class too.

    Two changes to argparse's reading of a command line: a value starting with ``-`` and a digit
    (``--cmd-vel -0.1,0,0``, ``--push -40N@1s``, ``--payload -2kg@torso@1``) is a value, not an
    option (argparse takes only plain numbers such as ``-1`` as values); an unknown option is named
    with the nearest options of the command that was meant (``--behavior``: ``--behaviour``?).
    """

    #: What argparse takes for a value, not an option: ``-`` then a digit, or ``-.`` then a digit.
    NEGATIVE_VALUE = re.compile(r"^-\.?\d")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = self.NEGATIVE_VALUE

    def error(self, message: str):
        raise UsageError(f"{self.prog}: error: {message}")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:  # type: ignore[override]
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = self._chosen_subparser(parsed)
            options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
            hints = []
            for extra in extras:
                close = difflib.get_close_matches(extra.split("=", 1)[0], options, n=2, cutoff=0.6)
                if extra.startswith("-") and close:
                    hints.append(f"{extra}: did you mean {' or '.join(close)}?")
            hint = f" ({'; '.join(hints)})" if hints else ""
            parser.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return parsed

    def _chosen_subparser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The innermost (sub)parser the command line chose (``demo``, ``model info``...)."""
        parser: argparse.ArgumentParser = self
        while True:
            sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
            name = None if sub is None else getattr(parsed, sub.dest or "", None)
            if sub is None or name not in sub.choices:
                return parser
            parser = sub.choices[name]


class OptionalActions(argparse._SubParsersAction):
    """The actions of a command that also runs by itself (``bench`` and ``bench qp-solvers``,
    ``analyze`` and ``analyze ankle-window``): an option of the command given before the action's
    name (``bench --quick qp-solvers``) would be silently ignored, so it is refused, naming it.
    Made by :func:`add_optional_actions`."""

    def __call__(self, parser, namespace, values, option_string=None):
        name = values[0] if values else ""
        for action in parser._actions:
            if not action.option_strings or action.dest in ("help", "version"):
                continue
            if getattr(namespace, action.dest, action.default) != action.default:
                parser.error(f"{action.option_strings[0]} is an option of '{parser.prog}', not of "
                             f"'{parser.prog} {name}' (see {parser.prog} {name} --help)")
        super().__call__(parser, namespace, values, option_string)


def add_optional_actions(parser: argparse.ArgumentParser, dest: str) -> argparse._SubParsersAction:
    """Actions of ``parser`` (``parser ACTION ...``) that the command may also go without: the
    command's own options keep working (``kangaroo-wbc bench --quick``); ``dest`` is None without one."""
    sub = parser.add_subparsers(dest=dest, metavar="[ACTION]", action=OptionalActions, title="actions",
                                description=f"without an ACTION, {parser.prog} runs itself with the options below; "
                                            f"an ACTION takes its own options: {parser.prog} ACTION --help")
    sub.required = False
    return sub


# ---------------------------------------------------------------------------- argument types


def _number(text: str, kind: type) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, "
                                         f"got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _number(text, float)
    if not value > 0.0:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0."""
    value = _number(text, float)
    if not value >= 0.0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def fraction(text: str) -> float:
    """A number in [0, 1)."""
    value = _number(text, float)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1), got {text}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return value


#: Seeds go to numpy and MuJoCo: 32-bit unsigned.
SEED_MAX = 2**32 - 1

#: One control tick of the simulated loops [s] (the simulator's step, ``SimulatedRobotConfig``'s
#: ``period_s``): a run shorter than one tick would run nothing, and is refused.
TICK_S = 1e-3
#: Longest run [s] of ``demo``, ``evaluate`` and ``sim``: the one-process loop logs about 9 kB a
#: tick (5 GB for these 10 minutes); a longer run is a soak.
MAX_DURATION_S = 600.0
#: Longest soak [min]: one day.
MAX_SOAK_MINUTES = 1440.0
#: Longest start-up wait [s] of the node graph.
MAX_STARTUP_TIMEOUT_S = 3600.0


def number_in(low: float, high: float, *, kind: type = float, low_open: bool = False, unit: str = "",
              hint: str = "") -> Any:
    """An argument type: a finite number (``kind=int``: an integer) in ``[low, high]`` (``(low, high]``
    with ``low_open``), ``unit`` and ``hint`` in the message of a value outside. The function has
    ``bounds = (low, high)`` (the tests check every numeric option has one)."""
    what = "an integer" if kind is int else "a number"
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"

    def parse(text: str) -> Any:
        value = _number(text, kind)
        if not ((value > low if low_open else value >= low) and value <= high):
            raise argparse.ArgumentTypeError(f"must be {what} in {interval}{unit}{hint}, got {text}")
        return value

    parse.bounds = (low, high)  # type: ignore[attr-defined]
    parse.__name__ = f"{what.split()[-1]} in {interval}"  # argparse names the type in some messages
    return parse


#: ``--duration`` of a run: at least one tick, at most :data:`MAX_DURATION_S`.
duration = number_in(TICK_S, MAX_DURATION_S, unit=" s",
                     hint=f" (at least one control tick, {TICK_S * 1e3:g} ms; longer runs: soak)")
startup_timeout = number_in(0.0, MAX_STARTUP_TIMEOUT_S, low_open=True, unit=" s")


def seed(text: str) -> int:
    """A random seed, an integer in [0, 2^32 - 1]."""
    value = _number(text, int)
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, {SEED_MAX}], got {text}")
    return value


fraction.bounds = (0.0, 1.0)  # type: ignore[attr-defined]
seed.bounds = (0, SEED_MAX)  # type: ignore[attr-defined]


#: Room [bytes] kept in an output path for the names written under it (``logs/<node>.log``,
#: ``closure_calibration_timing.png``, ``bag/bag_0.mcap``).
NAMES_INSIDE_MAX = 64


def _check_length(path: Path, inside: int = 0) -> None:
    """Every component of ``path`` within the file system's NAME_MAX and the whole absolute path
    (plus ``inside`` bytes for what is written under it) within PATH_MAX."""
    base = next((p for p in (path, *path.parents) if os.path.exists(p)), Path("."))  # never raises
    try:
        name_max = os.pathconf(base, "PC_NAME_MAX")
        path_max = os.pathconf(base, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    for part in path.parts:
        if len(os.fsencode(part)) > name_max:
            raise argparse.ArgumentTypeError(f"name {part[:40]!r}... is {len(os.fsencode(part))} bytes long; "
                                             f"the file system allows {name_max}")
    total = len(os.fsencode(str(path.absolute()))) + inside
    if total > path_max:
        raise argparse.ArgumentTypeError(f"path of {total - inside} bytes (with the names written inside: {total}); "
                                         f"the file system allows {path_max}")


def _check_creatable(path: Path, folder: Path) -> None:
    """``folder`` (``path`` or its folder) is a folder or can be made: no file in its way, its
    deepest existing folder writable if something must be created there."""
    base = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    if not base.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: {base} is a file, not a folder")
    if base != folder and not os.access(base, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{path}: {folder}: cannot create the folder ({base} is not writable)")


def output_folder(text: str) -> Path:
    """A folder that is or can be made: not a file, no file among its parents, writable.

    Whether it may be written into (empty, or ``--force``) is decided by
    :func:`prepare_output_folder` once all arguments are parsed.
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty path")
    path = Path(text).expanduser()
    _check_length(path, NAMES_INSIDE_MAX)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a file; expected a folder")
    _check_creatable(path, path)
    if path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{path}: folder not writable")
    return path


def output_file(text: str) -> Path:
    """A file that can be written: not a folder, its folder existing or creatable (an existing
    file is replaced)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file name, got an empty path")
    path = Path(text).expanduser()
    _check_length(path)
    if path.is_dir() or text.endswith(os.sep):
        raise argparse.ArgumentTypeError(f"{path} is a folder; expected a file name")
    _check_creatable(path, path.parent)
    if path.parent.is_dir() and not os.access(path.parent, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{path}: folder {path.parent} not writable")
    return path


# ------------------------------------------------------------------------------ behaviours

#: Behaviour names of the command line (demo, soak), with the controller behaviour each runs
#: (``kangaroo_wbc.control.behaviours.BEHAVIOURS``, the ``behaviour`` parameter of the
#: ``whole_body_controller`` node). ``push`` also pushes the pelvis (one-process loop only).
BEHAVIOURS = {"stand": "stand", "squat": "squat", "sway": "sway", "single_support": "weight_shift",
              "push": "push_recovery", "walk": "walk", "jump": "jump"}
BEHAVIOURS_HELP = ("stand, squat, sway, single_support (the controller's weight_shift), push (the "
                   "controller's push_recovery, plus a lateral push of the pelvis), walk (at --cmd-vel), "
                   "jump (in place, then stand)")


def behaviour(text: str) -> str:
    """A behaviour name of the command line (:data:`BEHAVIOURS`); the controller's own names are
    refused with the name to use instead."""
    if text in BEHAVIOURS:
        return text
    cli_name = {v: k for k, v in BEHAVIOURS.items() if k != v}.get(text)
    if cli_name is not None:
        raise argparse.ArgumentTypeError(f"{text!r} is the controller's name; on the command line it is "
                                         f"{cli_name!r} (choose from {', '.join(BEHAVIOURS)})")
    raise argparse.ArgumentTypeError(f"unknown behaviour {text!r} (choose from {', '.join(BEHAVIOURS)})")


def velocity_command(text: str) -> tuple[float, float, float]:
    """``vx,vy,wz`` [m/s, m/s, rad/s]: three finite numbers."""
    parts = text.split(",")
    try:
        values = tuple(float(x) for x in parts)
    except ValueError:
        values = ()
    if len(values) != 3 or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected vx,vy,wz (three numbers in m/s, m/s, rad/s), got {text!r}")
    return values


def push_spec(text: str) -> tuple[float, float]:
    """``FORCE[N]@TIME[s]`` (e.g. ``40N@5s``, ``-40@5``): a sideways push [N] (world +y, at the pelvis)
    ``TIME`` [s] after the behaviour starts; ``|FORCE| <= 1000``, ``TIME >= 0``."""
    match = re.fullmatch(r"\s*([-+]?\d+(?:\.\d*)?)\s*N?\s*@\s*(\d+(?:\.\d*)?)\s*s?\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(f"expected FORCE@TIME such as 40N@5s, got {text!r}")
    force, at = float(match.group(1)), float(match.group(2))
    if abs(force) > 1000.0:
        raise argparse.ArgumentTypeError(f"push force {force} N: at most 1000 N")
    return force, at


def fault_spec(text: str) -> tuple[str, str, float]:
    """``MODE:ACTUATOR@TIME[s]`` (e.g. ``lock:left_ankle_inner_actuator@3``): actuator ``ACTUATOR``
    locked (``lock``) or limp (``limp``) ``TIME`` [s] after the behaviour starts; the simulator's
    format (:func:`~kangaroo_wbc.components.simulated_robot.parse_fault`). The actuator name is
    checked against the model when the run is built."""
    from kangaroo_wbc.components.simulated_robot import parse_fault
    from kangaroo_wbc.errors import InputError

    try:
        mode, name, at = parse_fault(text)
    except InputError:
        mode = "active"
    if mode == "active":  # an actuator starts active: nothing to change
        raise argparse.ArgumentTypeError(f"expected lock:ACTUATOR@TIME or limp:ACTUATOR@TIME such as "
                                         f"lock:left_ankle_inner_actuator@3, got {text!r}")
    return mode, name, at


def payload_spec(text: str) -> tuple[float, str, float]:
    """``MASS[kg]@LINK@TIME[s]`` (e.g. ``6kg@torso@4``): a point mass attached at the centre of mass of
    ``LINK`` (``torso``: the base link; a negative mass removes one) ``TIME`` [s] after the behaviour
    starts; ``|MASS| <= 100``; the simulator's format
    (:func:`~kangaroo_wbc.components.simulated_robot.parse_payload`). The link is checked against
    the model when the run is built."""
    from kangaroo_wbc.components.simulated_robot import parse_payload
    from kangaroo_wbc.errors import InputError

    try:
        return parse_payload(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"payload {text!r}: ")) from None


def add_behaviour_option(parser: argparse.ArgumentParser, default: str = "stand",
                         help_text: str = BEHAVIOURS_HELP) -> None:
    parser.add_argument("--behaviour", type=behaviour, default=default, metavar="NAME",
                        help=f"{help_text} (default {default})")


# ------------------------------------------------------------------------------ input paths


def existing_folder(text: str) -> Path:
    """A folder that exists (read before anything runs)."""
    path = Path(text).expanduser()
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{path}: no such folder")
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a file; expected a folder")
    return path


def input_file(text: str) -> Path:
    """A regular file that exists; otherwise what the path is (a folder, a device, nothing)."""
    import stat

    path = Path(text).expanduser()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise argparse.ArgumentTypeError(f"{path}: no such file") from None
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise argparse.ArgumentTypeError(f"{path} is a folder, not a file")
    if not stat.S_ISREG(mode):
        kind = ("a character device" if stat.S_ISCHR(mode) else "a block device" if stat.S_ISBLK(mode)
                else "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise argparse.ArgumentTypeError(f"{path} is {kind}, not a file")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{path}: not readable")
    return path


def kangaroo_folder(text: str) -> Path:
    """A folder holding ``kangaroo.urdf`` and ``kangaroo_closures.yaml``."""
    path = existing_folder(text)
    missing = [n for n in ("kangaroo.urdf", "kangaroo_closures.yaml") if not (path / n).is_file()]
    if missing:
        raise argparse.ArgumentTypeError(f"{path}: no {' and no '.join(missing)} in this folder")
    return path


def python_interpreter(text: str) -> str:
    """An executable file, or a command on the PATH (a Python interpreter)."""
    found = shutil.which(text) if os.sep not in text else (text if os.access(text, os.X_OK) else None)
    if found is None or os.path.isdir(found):
        what = "no such file" if not os.path.lexists(os.path.expanduser(text)) else "not an executable file"
        raise argparse.ArgumentTypeError(f"{text}: {what}")
    return found


# ------------------------------------------------------------------------------ output folders

#: The manifest of every output folder this command line fills: written empty when the folder is
#: taken, then listing every entry the run wrote (:func:`seal_output_folder`). ``--force`` removes
#: a folder's contents only when every entry is listed in it.
MANIFEST = ".kangaroo-wbc-output"
MARKER = MANIFEST  # the name of earlier versions
#: This process's mark in the manifests it writes (a folder it took is sealed by it alone).
_RUN_ID = uuid.uuid4().hex


def _entries(path: Path) -> list[str]:
    """Every entry under ``path`` (files, folders, links; links not followed) as sorted relative
    POSIX paths, the manifest itself excluded."""
    out = []
    for root, dirs, files in os.walk(path):
        rel = Path(root).relative_to(path)
        for name in dirs + files:
            out.append((rel / name).as_posix())
    return sorted(e for e in out if e != MANIFEST)


def _read_manifest(path: Path) -> dict | None:
    """The folder's manifest, or None (missing, unreadable, not one of ours)."""
    try:
        data = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_manifest(path: Path, entries: list[str], complete: bool) -> None:
    (path / MANIFEST).write_text(json.dumps({"command": [PROG, *sys.argv[1:]], "run": _RUN_ID,
                                             "complete": complete, "entries": entries}, indent=1) + "\n")


def _foreign_entries(path: Path) -> tuple[list[str], dict | None]:
    """The entries of ``path`` its manifest does not list (all of them without a manifest)."""
    manifest = _read_manifest(path)
    listed = set(manifest.get("entries") or ()) if manifest else set()
    return [e for e in _entries(path) if e not in listed], manifest


def prepare_output_folder(path: Path, force: bool, option: str = "--out") -> Path:
    """Make ``path`` an empty output folder for this run, before anything runs.

    An existing non-empty folder is refused unless ``force``; with ``force`` the previous run's
    artefacts are deleted first, and only when every entry of the folder (at any depth) is listed
    in the :data:`MANIFEST` that run wrote: a file a user added, or a folder this command line
    never wrote, is named and nothing is deleted. The folder then gets an empty manifest, completed
    by :func:`seal_output_folder` at the end of the run.

    Raises:
        UsageError: the folder is not empty (no ``force``), or holds an entry not in its manifest.
    """
    if path.is_dir() and any(path.iterdir()):
        if not force:
            raise UsageError(f"{option} {path}: folder not empty (another run's results); choose a new folder "
                             f"or add --force to replace them")
        foreign, manifest = _foreign_entries(path)
        if foreign:
            more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
            if manifest is None:
                why = f"{PROG} did not write this folder (no {MANIFEST} manifest)"
            elif not manifest.get("complete"):
                why = f"the run that wrote it did not finish (its {MANIFEST} manifest is incomplete)"
            else:
                why = f"it is not in the {MANIFEST} manifest of the run that wrote the folder"
            raise UsageError(f"{option} {path}: --force removes only what {PROG} wrote there, and "
                             f"{str(path / foreign[0])!r}{more} is not its own: {why}; move it or choose "
                             "another folder")
        for entry in path.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
        _write_manifest(path, [], complete=False)
    except OSError as exc:
        raise UsageError(f"{option} {path}: {exc.strerror or exc}") from None
    return path


def seal_output_folder(path: Path | None) -> bool:
    """List every entry of the output folder ``path`` in its manifest, if this process took it
    (:func:`prepare_output_folder`) and has not sealed it yet; the command line calls it when a
    command ends, however it ends. Returns whether it wrote the manifest."""
    if path is None or not isinstance(path, Path) or not path.is_dir():
        return False
    manifest = _read_manifest(path)
    if manifest is None or manifest.get("run") != _RUN_ID or manifest.get("complete"):
        return False
    try:
        _write_manifest(path, _entries(path), complete=True)
    except OSError:
        return False
    return True


def add_plot_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--plot", type=output_file, metavar="PNG", default=None,
                        help=f"{help_text} (its folder is created)")


def make_plot_folder(args: argparse.Namespace) -> None:
    """``validate`` of a command with ``--plot``: the figure's folder is made before the run."""
    if args.plot is not None:
        try:
            args.plot.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"--plot {args.plot}: {exc.strerror or exc}") from None


def add_out_options(parser: argparse.ArgumentParser, default: str, help_text: str) -> None:
    parser.add_argument("--out", type=output_folder, default=Path(default), metavar="DIR",
                        help=f"{help_text} (default {default}); must be new or empty unless --force")
    parser.add_argument("--force", action="store_true",
                        help="write into the non-empty --out folder of an earlier run after deleting what that "
                             "run wrote (refused, naming it, if the folder holds anything else)")


# ------------------------------------------------------------------------------ JSON and tables


def _numpy_types() -> tuple[type, ...]:
    """numpy's array and scalar types if numpy is loaded, else none: a value can only be one of
    them then. Never imports numpy: after a signal that interrupted numpy's own import (the
    command's first second), importing it again fails ("cannot load module more than once"), and
    the report of the interruption must still be written."""
    np = sys.modules.get("numpy")
    types = (getattr(np, "ndarray", None), getattr(np, "generic", None))
    return tuple(t for t in types if isinstance(t, type))


def json_safe(obj: Any, reasons: dict[str, str] | None = None, path: str = "") -> Any:
    """``obj`` with every non-finite float (NaN, ±inf: not JSON) replaced by None; ``reasons``
    (if given) receives, by dotted key, why each is null. Numpy scalars and arrays become Python
    values first."""
    if isinstance(obj, _numpy_types()):
        obj = cast(Any, obj).tolist()
    if isinstance(obj, float) and not math.isfinite(obj):
        if reasons is not None:
            reasons[path or "value"] = (f"not a finite number ({obj}): nothing in this run to compute it from"
                                        if obj != obj else f"not a finite number ({obj})")
        return None
    if isinstance(obj, dict):
        return {k: json_safe(v, reasons, f"{path}.{k}" if path else str(k)) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v, reasons, f"{path}[{i}]") for i, v in enumerate(obj)]
    return obj


def finite_json(obj: dict) -> dict:
    """A result made JSON-safe by :func:`json_safe`, with ``null_reasons`` (merged with the result's
    own) naming every value it turned into null and why."""
    reasons: dict[str, str] = {}
    out = json_safe(obj, reasons)
    if reasons:
        out["null_reasons"] = {**(out.get("null_reasons") or {}), **reasons}
    return out


def write_json(path: Path, obj: dict) -> None:
    """Write ``obj`` (made JSON-safe: :func:`finite_json`) to ``path``, indented."""
    path.write_text(json.dumps(finite_json(obj), indent=2, default=json_default, allow_nan=False) + "\n")


def json_default(obj: Any) -> Any:
    """``json.dumps`` ``default=``: numpy scalars and arrays, paths."""
    if isinstance(obj, _numpy_types()):  # numpy scalars as their Python values
        return cast(Any, obj).tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj)}")


def print_json(obj: dict) -> None:
    """Print ``obj`` as one JSON line (the last line of a measuring subcommand); a non-finite
    number is null with its reason in ``null_reasons`` (:func:`finite_json`): strict JSON."""
    print(json.dumps(finite_json(obj), default=json_default, sort_keys=False, allow_nan=False), flush=True)


def add_json_flag(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")


def _flatten(obj: dict, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in obj.items():
        if isinstance(value, dict) and value:
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def print_table(obj: dict) -> None:
    """``key  value`` lines; nested dictionaries as dotted keys, floats to 6 significant digits."""
    rows = list(_flatten(obj))
    width = min(48, max((len(k) for k, _ in rows), default=0) + 2)
    for key, value in rows:
        text = f"{value:.6g}" if isinstance(value, float) else str(value)
        print(f"{key:<{width - 1}} {text}")


def print_result(obj: dict, json_mode: bool) -> None:
    """One JSON line with ``--json``, else a table."""
    print_json(obj) if json_mode else print_table(obj)


# ------------------------------------------------------------------------------------ progress
# The display itself (Progress) is kangaroo_wbc.progress: the library's loops take it as a parameter.


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                        help="progress on stderr: auto (a bar on a terminal, a line every "
                             f"{LINE_INTERVAL_S:g} s otherwise, none with --json), on (also with --json), off")


# -------------------------------------------------------------------------------------- signals


def _raise_interrupted(signum: int, frame) -> None:
    raise Interrupted(signum)


def abort_on_sigterm():
    """SIGTERM raises :class:`Interrupted` (as SIGINT raises KeyboardInterrupt): no traceback, exit
    143. Returns the previous handler."""
    return signal.signal(signal.SIGTERM, _raise_interrupted)


class AbortOnSignal:
    """While active (main thread), SIGINT and SIGTERM end the command at the first signal: they
    raise :class:`Interrupted` (exit 130 / 143).

    An exception raised while Python runs a callback from compiled code (numba's JIT compiler calls
    llvmlite's object-cache hook through ctypes) is printed as "Exception ignored" and lost, and the
    command would go on. So after a signal the exception is raised again every :attr:`REPEAT_S`
    (a SIGALRM interval timer) until it ends the command, and those lost copies are not printed.
    Installed by the command line's ``main`` before anything slow is imported or built.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)
    #: Period [s] of the repeated exception after a signal.
    REPEAT_S = 0.25

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        self._hook: Any = None

    def __enter__(self) -> AbortOnSignal:
        import threading

        if threading.current_thread() is not threading.main_thread():
            return self  # an embedding application's thread: its handlers stay
        for s in (*self.SIGNALS, signal.SIGALRM):
            self._previous[s] = signal.signal(s, self._again if s == signal.SIGALRM else self._handle)
        self._hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def disarm(self) -> None:
        """No more repeated exceptions (the signal has ended the command)."""
        if self._previous:
            signal.setitimer(signal.ITIMER_REAL, 0.0)

    def __exit__(self, *exc: Any) -> None:
        if not self._previous:
            return
        self.disarm()
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()
        sys.unraisablehook = self._hook

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signum is None:
            self.signum = signum
            signal.setitimer(signal.ITIMER_REAL, self.REPEAT_S, self.REPEAT_S)
        raise Interrupted(self.signum)

    def _again(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            raise Interrupted(self.signum)

    def _unraisable(self, unraisable: Any) -> None:
        if self.signum is not None and isinstance(unraisable.exc_value, Interrupted | KeyboardInterrupt):
            return  # a copy lost in a callback: the next one ends the command
        self._hook(unraisable)


class StopSignals:
    """While active, SIGINT and SIGTERM ask a loop to stop at its next tick boundary.

    The loop polls the instance (``stop()`` is True once a signal came); a second signal aborts at
    once (:class:`Interrupted`). :attr:`exit_code` is 128 + the signal number, as a shell reports it.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, announce: bool = True, phase: str = "run") -> None:
        self.signum: int | None = None
        self.announce = announce
        #: what the command does now ("start-up", "run", "writing figures", "writing bag"...);
        #: the command sets it, a signal records it in :attr:`phase_at_signal`
        self.phase = phase
        self.phase_at_signal: str | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        for s in self.SIGNALS:
            self._previous[s] = signal.signal(s, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame) -> None:
        if self.signum is not None:
            raise Interrupted(signum)
        self.signum = signum
        self.phase_at_signal = self.phase
        if self.announce:
            what = ("stopping at the next tick and writing the results" if self.phase == "run"
                    else f"during {self.phase}: writing what there is")
            print(f"{PROG}: {signal.Signals(signum).name}: {what} (signal again to abort)", file=sys.stderr,
                  flush=True)

    def __call__(self) -> bool:
        return self.signum is not None

    @property
    def interrupted(self) -> bool:
        return self.signum is not None

    @property
    def exit_code(self) -> int | None:
        return None if self.signum is None else 128 + int(self.signum)

    def record(self, summary: dict) -> dict:
        """``interrupted`` (a signal came, in any phase) and ``interrupted_phase`` (the phase it came
        in, None without a signal) into ``summary``; returns it."""
        summary["interrupted"] = bool(summary.get("interrupted")) or self.interrupted
        summary["interrupted_phase"] = self.phase_at_signal if self.interrupted else (
            "run" if summary["interrupted"] else None)
        return summary
