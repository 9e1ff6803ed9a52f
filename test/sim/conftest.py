"""Fixtures of the simulator tests: the small mechanisms of ``test/data`` exported to MJCF.

Unit-test data: a planar four-bar (revolute actuator), the RRPR linkage (one ball-screw actuator,
also with a floating base standing on its sole), and the RRPR cut at its prismatic pair.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kangaroo_wbc.sim.mjcf_export import export_mjcf

DATA = Path(__file__).resolve().parents[1] / "data"
MECHANISMS = ["four_bar", "rrpr", "rrpr_prismatic_cut"]
#: sole of the floating RRPR: (length_x, width_y) [m] of the base block
RRPR_SOLE = {"sole": (0.3, 0.2)}


def paths(name: str) -> tuple[Path, Path]:
    """URDF and closure file of one test mechanism."""
    return DATA / f"{name}.urdf", DATA / f"{name}_closures.yaml"


@pytest.fixture(scope="session")
def mjcf_fixed() -> dict[str, str]:
    """MJCF text of every test mechanism, fixed base."""
    return {n: export_mjcf(*paths(n), floating_base=False) for n in MECHANISMS}


@pytest.fixture(scope="session")
def mjcf_rrpr_floating() -> str:
    """MJCF text of the RRPR linkage with a free base and a sole box, standing on the floor."""
    return export_mjcf(*paths("rrpr"), floating_base=True, soles=RRPR_SOLE)
