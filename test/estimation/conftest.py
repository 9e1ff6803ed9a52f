"""Fixtures of the estimation tests (unit tests: no ROS; the simulator only where marked).

Models: the own small mechanisms (``test/model/mechanisms.py``), the third-party digit-like biped
(12 revolute actuators, 36 passive DOFs, floating base; soles ``foot_frame``/``foot_left_frame``)
and, when generated, the Kangaroo model (``urdf/kangaroo.urdf``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.model import ClosedLoopModel
from test.model.conftest import load
from test.model.mechanisms import ALL

ROOT = Path(__file__).resolve().parents[2]
KANGAROO_URDF = ROOT / "urdf" / "kangaroo.urdf"
KANGAROO_CLOSURES = ROOT / "urdf" / "kangaroo_closures.yaml"
KANGAROO_SOLES = ["left_sole", "right_sole"]

DIGIT = "digit_like_2legs"
DIGIT_SOLES = ["foot_frame", "foot_left_frame"]
#: 1-DOF passive joints of the digit-like fixture used as absolute encoders, and the actuators
#: declared absolute so that the remaining six offsets are observable.
DIGIT_ENCODERS = ["free_knee", "free_foot1", "free_foot2", "free_knee_left", "free_foot1_left",
                  "free_foot2_left"]
DIGIT_ABSOLUTE = ["motor_hip_x", "motor_hip_z", "motor_hip_y", "motor_hip_x_left", "motor_hip_z_left",
                  "motor_hip_y_left"]


@pytest.fixture(scope="session")
def mechanism_dir(tmp_path_factory) -> Path:
    """Folder holding the URDF + closure files of the own test mechanisms (unit-test data)."""
    folder = tmp_path_factory.mktemp("mechanisms")
    for make in ALL.values():
        make(folder)
    return folder


_CACHE: dict[tuple[str, bool], ClosedLoopModel] = {}


def model(name: str, folder: Path, floating_base: bool = False) -> ClosedLoopModel:
    """A model by name ('kangaroo', a third-party fixture or an own mechanism), cached per session.

    Callers must not rely on the state of ``clm.data`` between tests.
    """
    key = (name, floating_base)
    if key not in _CACHE:
        if name == "kangaroo":
            if not (KANGAROO_URDF.is_file() and KANGAROO_CLOSURES.is_file()):
                pytest.skip("the Kangaroo model has not been generated (urdf/kangaroo.urdf)")
            _CACHE[key] = ClosedLoopModel.from_files(KANGAROO_URDF, KANGAROO_CLOSURES, floating_base)
        else:
            _CACHE[key] = load(name, folder, floating_base)
    return _CACHE[key]


def mid_range(clm: ClosedLoopModel) -> np.ndarray:
    """Actuator positions at the middle of their limits (the reference value where unbounded)."""
    lo = clm.model.lowerPositionLimit[clm.idx_q_a]
    hi = clm.model.upperPositionLimit[clm.idx_q_a]
    ok = np.isfinite(lo) & np.isfinite(hi) & (hi > lo) & (hi - lo < 1e3)
    return np.where(ok, 0.5 * (lo + hi), clm.q_ref[clm.idx_q_a])


def closed_configuration(clm: ClosedLoopModel, seed: int, spread: float = 0.2,
                         base_rpy: tuple[float, float, float] | None = None) -> np.ndarray:
    """A random closed configuration around mid-range actuators (away from the straight-knee
    singularity of Kangaroo, whose reference configuration has the leg fully stretched), base at a
    given (default random) orientation when floating."""
    rng = np.random.default_rng(seed)
    lo = clm.model.lowerPositionLimit[clm.idx_q_a]
    hi = clm.model.upperPositionLimit[clm.idx_q_a]
    span = np.where(np.isfinite(hi - lo) & (hi > lo) & (hi - lo < 1e3), hi - lo, 1.0)
    theta = mid_range(clm) + spread * span * rng.uniform(-0.5, 0.5, clm.n_a)
    q = clm.q_ref.copy()
    for s in np.linspace(0.25, 1.0, 4):  # continuation from the reference configuration
        q, _ = clm.closure_fk((1 - s) * clm.q_ref[clm.idx_q_a] + s * theta, q, max_iter=100)
    if clm.floating_base:
        q[:3] = [0.1, -0.2, 0.9]
        rpy = base_rpy if base_rpy is not None else rng.uniform(-0.2, 0.2, 3)
        q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(*rpy)).coeffs()
    return q
