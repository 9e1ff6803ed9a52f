"""Shared helpers of the safety tests: actuator limits from the closure file, /diagnostics matching."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CLOSURES = REPO_ROOT / "urdf" / "kangaroo_closures.yaml"


def max_force_n() -> dict[str, float]:
    """``max_force_n`` per actuator name, from ``urdf/kangaroo_closures.yaml``."""
    data = yaml.safe_load(CLOSURES.read_text())
    return {name: float(a["max_force_n"]) for name, a in data["actuators"].items()}
