"""Fixtures for the closed-linkage core tests (unit tests: no ROS, no simulator)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc_tools.bench.workload import FIXTURES_ENV, fixtures_dir
from test.model.mechanisms import ALL

#: Third-party fixture folder, found as the benchmark finds it ($KANGAROO_WBC_FIXTURES, else
#: shared/fixtures/third_party beside the repository).
FIXTURES = fixtures_dir() or Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "third_party"
THIRD_PARTY = ["5bar_linkage", "digit_like_2legs"]


def third_party_dir(name: str) -> Path:
    """One third-party fixture's folder; skips the test when it is absent."""
    d = FIXTURES / name
    if not d.is_dir():
        pytest.skip(f"third-party fixture folder not found: {d} (set {FIXTURES_ENV} to its parent)")
    return d


def third_party_paths(name: str) -> tuple[Path, Path]:
    """Third-party fixture files; skips the test when the shared fixture folder is absent."""
    d = third_party_dir(name)
    return d / "robot.urdf", d / "robot.yaml"


@pytest.fixture(scope="session")
def mechanism_dir(tmp_path_factory) -> Path:
    """Folder holding the URDF + closure files of the test mechanisms (unit-test data)."""
    folder = tmp_path_factory.mktemp("mechanisms")
    for make in ALL.values():
        make(folder)
    return folder


def load(name: str, folder: Path, floating_base: bool = False) -> ClosedLoopModel:
    """Load one of the own mechanisms or a third-party fixture by name."""
    if name in THIRD_PARTY:
        urdf, yml = third_party_paths(name)
    else:
        urdf, yml = folder / f"{name}.urdf", folder / f"{name}_closures.yaml"
    return ClosedLoopModel.from_files(urdf, yml, floating_base=floating_base)
