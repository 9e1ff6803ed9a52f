"""Serial twin vs full model: same sole poses for matched states, round trip of the maps.

Unit tests (no ROS, no simulator).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.robots.kangaroo import SerialTwin, output_joints
from test.robots.conftest import CLOSURES, SERIAL_URDF, URDF

#: Pose agreement of frames between the two models (norm of log6) [m, rad].
POSE_TOL = 1e-9
SEED = 7
FRAMES = ["left_sole", "right_sole", "left_sole_corner_fl", "right_sole_corner_rr", "imu"]


@pytest.fixture(scope="module", params=[False, True], ids=["fixed_base", "floating_base"])
def twin(request) -> SerialTwin:
    """Full model + serial twin from the committed files (unit-test data)."""
    return SerialTwin.from_urdf(ClosedLoopModel.from_files(URDF, CLOSURES, floating_base=request.param), SERIAL_URDF)


def _random_state(twin: SerialTwin, rng: np.random.Generator) -> np.ndarray:
    """A random closed configuration of the reachable set: uniform actuator positions in the stroke
    box, redrawn while a passive joint is past its limit (the box's corners past the ankle rods' dead
    points are not reachable, and there the serial state does not determine the full one)."""
    full = twin.full
    m = full.model
    lo, hi = m.lowerPositionLimit[full.idx_q_a], m.upperPositionLimit[full.idx_q_a]
    lim = full.passive_joint_limits()
    while True:
        q, _ = full.closure_fk(lo + (hi - lo) * rng.random(full.n_a), full.q_ref)
        if np.all(q[lim.idx_q] >= lim.lower - 1e-9) and np.all(q[lim.idx_q] <= lim.upper + 1e-9):
            break
    if full.floating_base:
        quat = rng.normal(size=4)
        q[:3], q[3:7] = rng.normal(size=3), quat / np.linalg.norm(quat)
    return q


def test_serial_twin_structure(twin):
    s = twin.serial
    assert s.nq == 12 + 7 * twin.full.floating_base
    names = [n for n in s.names[1:] if n != "root_joint"]
    assert names == output_joints("left") + output_joints("right")
    assert sum(i.mass for i in s.inertias) == pytest.approx(sum(i.mass for i in twin.full.model.inertias))


def test_same_sole_pose_for_matched_states(twin):
    rng = np.random.default_rng(SEED)
    full, serial = twin.full, twin.serial
    sd = twin.serial_data
    for _ in range(6):
        q = _random_state(twin, rng)
        qs = twin.full_to_serial(q)
        pin.framesForwardKinematics(full.model, full.data, q)
        pin.framesForwardKinematics(serial, sd, qs)
        for f in FRAMES:
            M_full = full.data.oMf[full.model.getFrameId(f)]
            M_serial = sd.oMf[serial.getFrameId(f)]
            assert np.linalg.norm(pin.log6(M_full.actInv(M_serial)).vector) < POSE_TOL, f


def test_serial_to_full_round_trip(twin):
    """serial -> full recovers the actuator positions and the closed configuration."""
    rng = np.random.default_rng(SEED + 1)
    full = twin.full
    for _ in range(4):
        q = _random_state(twin, rng)
        q_back, info = twin.serial_to_full(twin.full_to_serial(q))
        assert info.converged
        assert np.max(np.abs(full.closure_error(q_back))) < 1e-10
        assert np.max(np.abs(pin.difference(full.model, q, q_back))) < 1e-8
