"""The ``kangaroo-wbc`` command line.

Each subcommand lives in its own module of this package and exposes
``register(subparsers)``; the module adds its parser and sets ``func`` (the command) and, where
options depend on each other or name an output folder, ``validate`` (run after parsing, before
anything else: it raises :class:`~kangaroo_wbc_tools.cli.common.UsageError` or prepares the folder).
Measuring subcommands take ``--json`` and print one JSON object as their last line of output.

Exit codes: 0 success; 1 the run failed its own criterion (the robot fell, a soak criterion, the
node graph did not start) or an unexpected internal error; 2 a rejected argument or input (one
line on stderr; with ``--json`` also ``{"ok": false, "error": ...}`` on stdout, as for every
failure); 130 / 143 stopped by SIGINT / SIGTERM.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys

from kangaroo_wbc import __version__
from kangaroo_wbc_tools.cli.common import (
    PROG,
    AbortOnSignal,
    CliParser,
    Interrupted,
    UsageError,
    fail,
    seal_output_folder,
)

# Subcommand modules, in the order they appear in ``--help``.
SUBCOMMAND_MODULES = [
    "kangaroo_wbc_tools.cli.model_cmd",
    "kangaroo_wbc_tools.cli.analyze_cmd",
    "kangaroo_wbc_tools.cli.bench_cmd",
    "kangaroo_wbc_tools.cli.demo_cmd",
    "kangaroo_wbc_tools.cli.sim_cmd",
    "kangaroo_wbc_tools.cli.soak_cmd",
]


def build_parser() -> argparse.ArgumentParser:
    parser = CliParser(
        prog=PROG,
        description="Closed-linkage modelling, estimation and whole-body control for the Kangaroo biped.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    json_mode = "--json" in argv
    args = None
    abort = AbortOnSignal().__enter__()  # before anything slow: a signal from now on ends the command
    try:
        args = build_parser().parse_args(argv)
        # the command as typed: "demo", "model generate" (an action of a command: <command>_command)
        command = " ".join(filter(None, (args.command, getattr(args, f"{args.command}_command", None))))
        validate = getattr(args, "validate", None)
        if validate is not None:
            try:
                validate(args)
            except UsageError as exc:
                text = str(exc)
                if not text.startswith(PROG):
                    raise UsageError(f"{PROG} {command}: error: {text}") from None
                raise
        from kangaroo_wbc.errors import KangarooWbcError

        try:
            return int(args.func(args) or 0)
        except KangarooWbcError as exc:
            raise UsageError(f"{PROG} {command}: error: {exc}") from None
    except UsageError as exc:
        fail(str(exc), json_mode)
        return 2
    except (KeyboardInterrupt, Interrupted) as exc:
        return _interrupted(abort, getattr(exc, "signum", signal.SIGINT), json_mode)
    except Exception as exc:  # an unexpected failure still ends with the JSON error object
        if abort.signum is not None:
            # the signal's exception, turned into another on its way out: numpy's import, interrupted,
            # raises ImportError ("Importing the numpy C-extensions failed")
            return _interrupted(abort, abort.signum, json_mode)
        fail(f"{PROG}: internal error: {type(exc).__name__}: {exc}", json_mode)
        return 1
    finally:
        abort.__exit__(None, None, None)
        seal_output_folder(getattr(args, "out", None))  # what the run wrote, for a later --force


def _interrupted(abort: AbortOnSignal, signum: int, json_mode: bool) -> int:
    """The command ended by signal ``signum``: one line (and the JSON error object), 128 + signum."""
    abort.disarm()  # the signal reached the command line: no more repeats
    fail(f"{PROG}: interrupted ({signal.Signals(signum).name})", json_mode)
    return 128 + signum


if __name__ == "__main__":
    sys.exit(main())
