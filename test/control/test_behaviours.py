"""Unit tests of the behaviours: smooth references with consistent derivatives, phases and contacts."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.control.behaviours import (
    BehaviourState,
    LateralSway,
    Squat,
    Stand,
    WeightShift,
    make_behaviour,
    min_jerk,
)
from kangaroo_wbc.errors import InputError

DT = 1e-5  # [s] finite-difference step in time


def _state() -> BehaviourState:
    soles = {"left": (np.eye(3), np.array([0.0, 0.1, 0.0])), "right": (np.eye(3), np.array([0.0, -0.1, 0.0]))}
    return BehaviourState(com=np.array([0.01, 0.0, 0.75]), base_rotation=np.eye(3), soles=soles,
                          contacts=("left", "right"))


def test_min_jerk_boundaries():
    assert min_jerk(0.0) == (0.0, 0.0, 0.0)
    assert min_jerk(1.0) == (1.0, 0.0, 0.0)
    assert min_jerk(2.0) == (1.0, 0.0, 0.0)
    assert min_jerk(0.5)[0] == pytest.approx(0.5)


@pytest.mark.parametrize("behaviour", [Stand(), Squat(depth_m=0.05, period_s=2.0, cycles=2),
                                       LateralSway(ratio=0.6, period_s=2.0, cycles=2), WeightShift()])
def test_velocity_and_acceleration_are_derivatives_of_the_position(behaviour):
    behaviour.start(1.0, _state())
    for t in np.linspace(1.05, 4.5, 23):
        r0, rp, rm = behaviour.references(t), behaviour.references(t + DT), behaviour.references(t - DT)
        if rp.active_contacts != rm.active_contacts:
            continue
        np.testing.assert_allclose((rp.com_position - rm.com_position) / (2 * DT), r0.com_velocity, atol=1e-6)
        np.testing.assert_allclose((rp.com_velocity - rm.com_velocity) / (2 * DT), r0.com_acceleration, atol=1e-4)


def test_references_start_at_the_current_state():
    for b in (Squat(), LateralSway(), WeightShift()):
        b.start(0.0, _state())
        np.testing.assert_allclose(b.references(0.0).com_position, _state().com, atol=1e-12)


def test_squat_depth_and_sway_amplitude():
    sq = Squat(depth_m=0.06, period_s=2.0, cycles=1)
    sq.start(0.0, _state())
    z = [sq.references(t).com_position[2] for t in np.linspace(0, 2, 201)]
    assert min(z) == pytest.approx(0.75 - 0.06, abs=1e-9) and sq.finished(2.0)
    sw = LateralSway(ratio=0.5, period_s=2.0, cycles=3)
    sw.start(0.0, _state())
    y = np.array([sw.references(t).com_position[1] for t in np.linspace(0, 6, 601)])
    assert np.max(np.abs(y)) <= 0.5 * 0.1 + 1e-9 and np.max(np.abs(y)) > 0.45 * 0.1


def test_weight_shift_phases_contacts_and_swing_reference():
    ws = WeightShift(stance="left", shift_s=1.0, lift_s=0.5, hold_s=1.0, lift_height_m=0.04)
    ws.start(0.0, _state())
    assert ws.references(0.5).active_contacts == ("left", "right")
    np.testing.assert_allclose(ws.references(1.0).com_position[:2], [0.0, 0.1], atol=1e-9)  # over the stance sole
    hold = ws.references(2.0)
    assert hold.active_contacts == ("left",)
    np.testing.assert_allclose(hold.foot_poses["right"].position, [0.0, -0.1, 0.04])
    down = ws.references(2.999)
    assert down.foot_poses["right"].position[2] < 0.001
    assert ws.references(3.5).active_contacts == ("left", "right")
    assert ws.finished(4.0) and not ws.finished(3.9)


def test_errors():
    with pytest.raises(InputError):
        make_behaviour("moonwalk")
    with pytest.raises(InputError):
        Stand().references(0.0)
    with pytest.raises(InputError):
        WeightShift(stance="middle").start(0.0, _state())
