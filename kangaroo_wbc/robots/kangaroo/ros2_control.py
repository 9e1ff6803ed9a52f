"""The Kangaroo's ros2_control files, generated from ``params.yaml`` (committed; a test regenerates them).

``python -m kangaroo_wbc.robots.kangaroo.ros2_control [ROOT]`` writes, under the package root:

* ``config/hardware_map.yaml``: the hardware map (:mod:`kangaroo_wbc.robots.kangaroo.hardware_map`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kangaroo_wbc.robots.kangaroo.hardware_map import hardware_map_text
from kangaroo_wbc.robots.kangaroo.params import KangarooParams, load_params

#: The package root of the source tree (``config/``, ``urdf/`` beside ``kangaroo_wbc/``).
ROOT = Path(__file__).resolve().parents[3]


def generated_texts(prm: KangarooParams | None = None) -> dict[str, str]:
    """Every generated file's text, keyed by its path relative to the package root."""
    prm = prm or load_params()
    return {"config/hardware_map.yaml": hardware_map_text(prm)}


def write(root: str | Path = ROOT, prm: KangarooParams | None = None) -> list[Path]:
    """Write :func:`generated_texts` under ``root``; returns the paths written."""
    out = []
    for rel, text in generated_texts(prm).items():
        path = Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kangaroo_wbc.robots.kangaroo.ros2_control",
                                     description="Generate the Kangaroo's ros2_control files from params.yaml.")
    parser.add_argument("root", nargs="?", default=str(ROOT), help="package root (default: the source tree)")
    parser.add_argument("--params", default=None, help="parameter file (default: the packaged params.yaml)")
    args = parser.parse_args(argv)
    for path in write(args.root, load_params(args.params)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
