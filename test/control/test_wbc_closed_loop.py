"""Integration tests: the WBC balancing the simulated Kangaroo (MuJoCo, closed chains, floor contact).

The controller sees the simulator's base state and actuator positions, passive joints from closure
FK (the estimator's job in the full pipeline). Slow: each simulated second takes a few wall seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.control.behaviours import (
    LateralSway,
    PushRecovery,
    Squat,
    Stand,
    WeightShift,
)
from test.control.sim_harness import ClosedLoop, kangaroo_paths

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(kangaroo_paths() is None, reason="urdf/kangaroo.* not generated")]

STAND_COM_TOL_M = 5e-3


def _com_error(log: np.ndarray) -> np.ndarray:
    return np.linalg.norm(log[:, 1:4] - log[:, 4:7], axis=1)


def test_stand_10_s_com_error_below_5_mm():
    loop = ClosedLoop.kangaroo()
    log = loop.run(Stand(settle_s=1.0), 10.0)
    assert np.max(_com_error(log)[500:]) < STAND_COM_TOL_M  # after the first 0.5 s
    assert loop.sim.ground_truth().base_position_in_world[2] > 0.8


def test_squat_tracks_the_com_height():
    loop = ClosedLoop.kangaroo()
    # 4 cm: the ankle actuators (±20 mm stroke) reach their limit near 4.5 cm at this posture.
    log = loop.run(Squat(depth_m=0.04, period_s=3.0, cycles=1), 3.5)
    assert np.max(_com_error(log)) < 5e-3
    assert log[:, 3].min() < log[0, 3] - 0.035


def test_lateral_sway_between_the_feet():
    loop = ClosedLoop.kangaroo()
    log = loop.run(LateralSway(ratio=0.6, period_s=2.5, cycles=1), 2.6)
    assert np.max(_com_error(log)) < 1e-2
    assert np.ptp(log[:, 2]) > 0.05  # sideways excursion [m] (amplitude ramps in over the cycle)


def test_weight_shift_to_single_support_and_back():
    loop = ClosedLoop.kangaroo()
    ws = WeightShift(stance="left", shift_s=1.5, lift_s=0.8, hold_s=1.5, lift_height_m=0.04)
    log = loop.run(ws, 6.2)
    single = log[:, 8] == 1
    assert single.sum() > 2000  # ~3 s with one sole
    assert np.max(_com_error(log)) < 1.5e-2
    assert np.max(log[single, 9]) < 1.5e-2  # swing-sole position error [m]
    gt = loop.sim.ground_truth()
    assert all(c.in_contact for c in gt.contacts.values())  # both soles down again


def test_push_recovery():
    loop = ClosedLoop.kangaroo()
    behaviour = PushRecovery()
    loop.wbc.step(*loop.state())
    full, gains = loop.full, behaviour.gains
    full.com_task.kp[:], full.com_task.kd[:] = gains["com_kp"], gains["com_kd"]
    full.momentum_task.kd[:] = gains["angular_momentum_kd"]
    full.momentum_task.weight[:] = gains["angular_momentum_weight"]
    push = lambda t: np.array([120.0, 0.0, 0.0]) if 1.0 <= t < 1.1 else None  # noqa: E731 - 12 N·s
    log = loop.run(behaviour, 3.0, disturbance=push)
    err = _com_error(log)
    assert np.max(err) > 5e-3  # the push moved the CoM
    assert np.max(err[-500:]) < STAND_COM_TOL_M  # and it came back
    assert loop.sim.ground_truth().base_position_in_world[2] > 0.8
