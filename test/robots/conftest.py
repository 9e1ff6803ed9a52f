"""Fixtures for the Kangaroo model tests: the committed ``urdf/`` files loaded once per session.

Unit tests: no ROS, no simulator (the MJCF file is only compared byte for byte).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.robots.kangaroo import ACTUATORS, load_params

URDF_DIR = Path(__file__).resolve().parents[2] / "urdf"
URDF = URDF_DIR / "kangaroo.urdf"
CLOSURES = URDF_DIR / "kangaroo_closures.yaml"
SERIAL_URDF = URDF_DIR / "kangaroo_serial.urdf"


@pytest.fixture(scope="session")
def params():
    """The packaged generator parameters (unit-test data)."""
    return load_params()


@pytest.fixture(scope="session")
def kangaroo() -> ClosedLoopModel:
    """The committed full model, fixed base (unit-test data)."""
    return ClosedLoopModel.from_files(URDF, CLOSURES, floating_base=False)


class Leg:
    """Closure FK of one leg driven by actuator keys (``ACTUATORS``), the other leg held at zero."""

    def __init__(self, clm: ClosedLoopModel, side: str = "left") -> None:
        self.clm = clm
        self.side = side
        self.col = {k: clm.actuated_joint_names.index(f"{side}_{k}_actuator") for k in ACTUATORS}

    def theta(self, **strokes: float) -> np.ndarray:
        th = np.zeros(self.clm.n_a)
        for k, v in strokes.items():
            th[self.col[k]] = v
        return th

    def solve(self, q_guess: np.ndarray | None = None, **strokes: float) -> np.ndarray:
        """Closed configuration for the given strokes [m] (raises ClosureFkError if it fails)."""
        q, _ = self.clm.closure_fk(self.theta(**strokes), self.clm.q_ref if q_guess is None else q_guess)
        return q

    def joint(self, q: np.ndarray, key: str) -> float:
        """Position of ``<side>_<key>`` (a full joint name suffix) [rad] or [m]."""
        m = self.clm.model
        return float(q[m.joints[m.getJointId(f"{self.side}_{key}")].idx_q])


@pytest.fixture(scope="session")
def left(kangaroo) -> Leg:
    """Closure FK helper on the left leg (unit-test helper)."""
    return Leg(kangaroo, "left")
