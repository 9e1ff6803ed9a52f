"""The ``kangaroo-wbc`` command line.

Each subcommand lives in its own module of this package and exposes
``register(subparsers)``; the module adds its parser and sets ``func``. Measuring subcommands take
``--json`` and print one JSON object as their last line of output.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand modules, in the order they appear in ``--help``.
SUBCOMMAND_MODULES = [
    "kangaroo_wbc.cli.model_cmd",
    "kangaroo_wbc.cli.analyze_cmd",
    "kangaroo_wbc.cli.bench_cmd",
    "kangaroo_wbc.cli.demo_cmd",
    "kangaroo_wbc.cli.sim_cmd",
    "kangaroo_wbc.cli.soak_cmd",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kangaroo-wbc",
        description="Closed-linkage modelling, estimation and whole-body control for the Kangaroo biped.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from kangaroo_wbc.errors import KangarooWbcError

    try:
        return int(args.func(args) or 0)
    except KangarooWbcError as exc:
        print(f"kangaroo-wbc {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
