"""Unit tests of the ankle F/T comparison (no ROS): a one-body foot whose answers are worked by hand.

The foot: a body of mass 2 kg with its CoM 0.1 m along the x axis of its joint (a rotation about
z), the sensor frame at the joint, the sole frame 0.1 m below it.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.components.ankle_ft import (
    GRAVITY_M_S2,
    AnkleFtComparison,
    AnkleFtSensor,
    AnkleFtSettings,
)
from kangaroo_wbc.components.samples import Level
from kangaroo_wbc.errors import FrameNotFound

MASS_KG, COM_X_M, SOLE_DEPTH_M = 2.0, 0.1, 0.1
SENSOR = AnkleFtSensor("leg_left_ft_sensor_broadcaster", "foot", "sole")


def _foot_model() -> pin.Model:
    model = pin.Model()
    jid = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "ankle")
    model.appendBodyToJoint(jid, pin.Inertia(MASS_KG, np.array([COM_X_M, 0.0, 0.0]), np.eye(3) * 0.01),
                            pin.SE3.Identity())
    model.addFrame(pin.Frame("foot", jid, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    model.addFrame(pin.Frame("sole", jid, 0, pin.SE3(np.eye(3), np.array([0.0, 0.0, -SOLE_DEPTH_M])),
                             pin.FrameType.OP_FRAME))
    return model


def _comparison(**settings) -> tuple[AnkleFtComparison, list]:
    events: list = []
    cmp = AnkleFtComparison(_foot_model(), [SENSOR], AnkleFtSettings(**settings),
                            event=lambda *e: events.append(e))
    return cmp, events


def test_a_resting_foot_puts_its_weight_at_its_com():
    """A sensor reading nothing (the foot only rests on the floor): the ground carries the foot's
    weight at its CoM, 0.1 m ahead of the sole origin."""
    cmp, _ = _comparison()
    w = cmp.ground_wrench_in_sole(SENSOR.broadcaster, np.zeros(1), np.zeros(3), np.zeros(3))
    weight = MASS_KG * GRAVITY_M_S2
    np.testing.assert_allclose(w[:3], [0.0, 0.0, weight], atol=1e-12)
    assert -w[4] / w[2] == pytest.approx(COM_X_M) and w[3] == pytest.approx(0.0, abs=1e-12)


def test_a_loaded_turned_foot_by_hand():
    """The foot turned 90° about z (its x axis along the world's y): sensor reads f = (10, 0, 300) N,
    τ = (5, -3, 1) N·m in its axes. Worked by hand: f_gr = R f + m g ẑ = (0, 10, 300 + m g); about the
    sensor τ = R τ_S − (c − p_S) × (−m g ẑ) with c − p_S = (0, 0.1, 0): (3, 5, 1) + (0.1 m g, 0, 0);
    about the sole (0.1 m below): + (0, 0, 0.1) × f_gr = (−1, 0, 0); back in the sole's (turned) axes."""
    cmp, _ = _comparison()
    f_s, t_s = np.array([10.0, 0.0, 300.0]), np.array([5.0, -3.0, 1.0])
    w = cmp.ground_wrench_in_sole(SENSOR.broadcaster, np.array([math.pi / 2]), f_s, t_s)
    mg = MASS_KG * GRAVITY_M_S2
    f_world = np.array([0.0, 10.0, 300.0 + mg])
    tau_world = np.array([3.0, 5.0, 1.0]) + np.array([COM_X_M * mg, 0.0, 0.0]) + np.array([-SOLE_DEPTH_M * 10.0, 0, 0])
    R = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # sole axes in the world
    np.testing.assert_allclose(w, np.concatenate([R.T @ f_world, R.T @ tau_world]), atol=1e-9)


def test_comparison_levels_and_differences():
    cmp, _ = _comparison(max_force_difference_n=20.0, max_cop_difference_m=0.02)
    assert cmp.status().level == Level.OK and "no F/T" in cmp.status().message  # never required
    cmp.on_wrench(SENSOR.broadcaster, "foot", np.array([0.0, 0.0, 400.0]), np.zeros(3), 1.0)
    truth = cmp.ground_wrench_in_sole(SENSOR.broadcaster, np.zeros(1), np.array([0.0, 0.0, 400.0]), np.zeros(3))
    cmp.compare(np.zeros(1), {"sole": truth}, 1.01)
    res = cmp.results[SENSOR.broadcaster]
    assert res["force_difference_n"] == pytest.approx(0.0, abs=1e-9)
    assert res["cop_difference_m"] == pytest.approx(0.0, abs=1e-12)
    assert res["age_s"] == pytest.approx(0.01) and cmp.status().level == Level.OK
    est = truth.copy()
    est[2] += 30.0  # 30 N more normal force than measured: WARN, the difference reported
    cmp.compare(np.zeros(1), {"sole": est}, 1.01)
    st = cmp.status()
    assert st.level == Level.WARN and "sole force differs by 30.0 N" in st.message
    assert st.values["sole.force_difference_n"] == pytest.approx(30.0)
    est = truth.copy()
    est[4] -= 0.05 * est[2]  # the CoP 5 cm further forward
    cmp.compare(np.zeros(1), {"sole": est}, 1.01)
    assert cmp.results[SENSOR.broadcaster]["cop_difference_m"] == pytest.approx(0.05)
    assert cmp.status().level == Level.WARN and "CoP" in cmp.status().message


def test_bad_samples_are_skipped_with_an_event():
    cmp, events = _comparison(max_age_s=0.1)
    assert not cmp.on_wrench(SENSOR.broadcaster, "foot", np.array([0.0, np.nan, 1.0]), np.zeros(3), 1.0)
    assert not cmp.on_wrench(SENSOR.broadcaster, "base_link", np.zeros(3), np.zeros(3), 1.0)
    assert not cmp.on_wrench("leg_right_ft_sensor_broadcaster", "foot", np.zeros(3), np.zeros(3), 1.0)
    assert cmp.skipped == 3 and not cmp.readings
    assert [e[0] for e in events] == [Level.WARN] * 3
    assert "non-finite" in events[0][2] and "'base_link', expected 'foot'" in events[1][2]
    assert "unknown sensor" in events[2][2]
    status = cmp.status()  # none accepted, three skipped: WARN naming the last one
    assert status.level == Level.WARN and "3 F/T sample(s) skipped" in status.message
    assert "unknown sensor" in status.message
    assert cmp.status().level == Level.OK  # nothing new: "no F/T" again
    cmp.on_wrench(SENSOR.broadcaster, "foot", np.array([0.0, 0.0, 100.0]), np.zeros(3), 1.0)
    cmp.compare(np.zeros(1), {"sole": np.zeros(6)}, 1.5)  # 0.5 s old: stale, not compared
    assert cmp.status().level == Level.WARN and "stale" in cmp.status().message
    assert math.isnan(cmp.results[SENSOR.broadcaster]["force_difference_n"])


def test_unknown_frames_are_refused_with_the_valid_ones():
    with pytest.raises(FrameNotFound, match="unknown frame 'fot'.*foot"):
        AnkleFtComparison(_foot_model(), [AnkleFtSensor("b", "fot", "sole")])


def test_the_measured_wrench_goes_through_the_low_pass():
    """With the estimate's filter, a 100 N step of the sensor shows as a smaller difference on the
    next tick (the filter's first step) and reaches the estimate's value once settled."""
    cmp = AnkleFtComparison(_foot_model(), [SENSOR], low_pass=(5.0, 1000.0, 2))
    q, name = np.zeros(1), SENSOR.broadcaster
    cmp.on_wrench(name, "foot", np.array([0.0, 0.0, 300.0]), np.zeros(3), 0.0)
    est = cmp.ground_wrench_in_sole(name, q, np.array([0.0, 0.0, 400.0]), np.zeros(3))
    cmp.compare(q, {"sole": est}, 0.0)  # the first sample initialises the filter: 100 N apart
    assert cmp.results[name]["force_difference_n"] == pytest.approx(100.0)
    cmp.on_wrench(name, "foot", np.array([0.0, 0.0, 400.0]), np.zeros(3), 0.001)
    cmp.compare(q, {"sole": est}, 0.001)
    assert 90.0 < cmp.results[name]["force_difference_n"] < 100.0  # filtered: barely moved
    for k in range(2, 1000):  # 1 s at 1 kHz: settled
        cmp.compare(q, {"sole": est}, 0.001 * k)
        cmp.readings[name].stamp_s = 0.001 * k  # held sample, fresh
    assert cmp.results[name]["force_difference_n"] < 1e-3
