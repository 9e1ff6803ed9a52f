"""``python -m kangaroo_wbc.robots.kangaroo [OUT_DIR] [--cage] [--params FILE] [--no-mjcf]``."""

from __future__ import annotations

import argparse
import sys

from kangaroo_wbc.robots.kangaroo.files import generate
from kangaroo_wbc.robots.kangaroo.params import load_params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kangaroo_wbc.robots.kangaroo",
                                     description="Generate the Kangaroo model files from params.yaml.")
    parser.add_argument("out_dir", nargs="?", default="urdf", help="output folder (default: urdf)")
    parser.add_argument("--cage", action="store_true", help="include the torso protection cage (+6 kg)")
    parser.add_argument("--params", default=None, help="parameter file (default: the packaged params.yaml)")
    parser.add_argument("--no-mjcf", action="store_true", help="do not export kangaroo.xml")
    args = parser.parse_args(argv)
    paths = generate(args.out_dir, load_params(args.params), cage=args.cage,
                     mjcf=False if args.no_mjcf else None)
    for path in paths.values():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
