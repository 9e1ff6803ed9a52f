"""Walking and jumping behaviours: footsteps, the DCM plan, the gait's phases and references.

The behaviours run here on synthetic states (no model, no simulator); the closed loop walks in
``test/pipeline/test_walking.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kangaroo_wbc.control.behaviours import (
    BEHAVIOURS,
    BehaviourState,
    GaitSettings,
    Jump,
    Walk,
    dcm_plan,
    make_behaviour,
    next_footstep,
    quintic,
)
from kangaroo_wbc.errors import InputError

DT = 0.001


def _state(yaw: float = 0.0) -> BehaviourState:
    """Two soles 0.2 m apart on the floor (z = 0), CoM 0.75 m above their middle, heading ``yaw``."""
    c, s = math.cos(yaw), math.sin(yaw)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    left = np.array([-s * 0.1, c * 0.1, 0.0])
    right = -left
    return BehaviourState(com=np.array([0.0, 0.0, 0.75]), base_rotation=R,
                          soles={"left": (R, left), "right": (R, right)}, contacts=("left", "right"),
                          actuators={"left_leg_length_actuator": 0.01, "right_leg_length_actuator": 0.01})


def _run(behaviour, seconds: float, t0: float = 0.0, every=None):
    """References at 1 kHz for ``seconds`` from ``t0``; ``every(t, ref)`` after each."""
    refs = []
    for k in range(int(round(seconds / DT))):
        t = t0 + k * DT
        ref = behaviour.references(t)
        refs.append(ref)
        if every is not None:
            every(t, ref)
    return refs


def test_dcm_plan_matches_the_backward_recursion():
    """The closed form of :func:`dcm_plan` against the readable recursion ``ξ_k = r_k + a (ξ_{k+1} - r_k)``."""
    rng = np.random.default_rng(3)
    zmp = np.cumsum(rng.normal(scale=0.01, size=(400, 2)), axis=0)
    omega, dt = 3.6, 0.005
    a = math.exp(-omega * dt)
    xi = np.empty_like(zmp)
    nxt = zmp[-1]
    for k in range(zmp.shape[0] - 1, -1, -1):
        xi[k] = zmp[k] + a * (nxt - zmp[k])
        nxt = xi[k]
    np.testing.assert_allclose(dcm_plan(zmp, omega, dt), xi, atol=1e-12)
    # at rest on a constant ZMP the DCM sits on it
    np.testing.assert_allclose(dcm_plan(np.ones((50, 2)), omega, dt), np.ones((50, 2)), atol=1e-12)


def test_next_footstep_advances_the_walking_frame_within_the_limits():
    gait = GaitSettings()
    path, step = next_footstep((0.0, 0.0, 0.0), np.array([0.3, 0.0, 0.0]), 0.65, "left", 1.0, 0.2, gait)
    assert path == pytest.approx((0.195, 0.0, 0.0))
    assert (step.side, step.x, step.y, step.yaw) == ("left", pytest.approx(0.195), pytest.approx(0.1), 0.0)
    # a command beyond the per-step bounds is clipped
    path, step = next_footstep((0.0, 0.0, 0.0), np.array([5.0, -5.0, 5.0]), 0.65, "right", -1.0, 0.2, gait)
    assert path[2] == pytest.approx(gait.max_step_yaw_rad)
    assert math.hypot(path[0], path[1]) == pytest.approx(math.hypot(gait.max_step_length_m, gait.max_side_step_m))
    # the sole is beside the frame: width/2 to the right, along the new heading
    yaw = path[2]
    assert (step.x - path[0], step.y - path[1]) == pytest.approx((0.1 * math.sin(yaw), -0.1 * math.cos(yaw)))


def test_quintic_meets_its_boundary_conditions():
    for t, expected in ((0.0, (1.0, 0.5, -2.0)), (0.3, (2.0, -1.0, 3.0))):
        assert quintic((1.0, 0.5, -2.0), (2.0, -1.0, 3.0), 0.3, t) == pytest.approx(expected)


def test_walk_is_registered_and_validates_its_inputs():
    assert BEHAVIOURS["walk"] is Walk and BEHAVIOURS["jump"] is Jump
    with pytest.raises(InputError, match="finite"):
        make_behaviour("walk", cmd_vel=(float("nan"), 0.0, 0.0))
    with pytest.raises(InputError, match="single_support_s"):
        make_behaviour("walk", gait={"single_support_s": -1.0})
    with pytest.raises(InputError, match="walk"):
        make_behaviour("walk", gait={"no_such_setting": 1.0})
    w = make_behaviour("walk", cmd_vel=(9.0, -9.0, 9.0))
    w.start(0.0, _state())
    w.references(0.0)
    for _ in range(5000):  # the command in use ramps up to the clipped request
        w.references(_ + 1.0 * DT)
    g = w.gait
    np.testing.assert_allclose(w.velocity_command, [g.max_forward_mps, -g.max_lateral_mps, g.max_yaw_rate_radps])


def test_zero_command_stands_still():
    w = Walk()
    w.start(0.0, _state())
    refs = _run(w, 2.0)
    assert w.phase == "stand" and w.touchdowns == []
    assert all(set(r.active_contacts) == {"left", "right"} and not r.foot_poses for r in refs)
    np.testing.assert_allclose(refs[-1].com_position, [0.0, 0.0, 0.75], atol=1e-9)


def test_walking_forward_alternates_the_soles_and_lands_them_on_their_footsteps():
    w = Walk(cmd_vel=(0.3, 0.0, 0.0))
    w.start(0.0, _state())
    g, landed, swinging = w.gait, [], []

    def check(t, ref):
        if w.phase != "single_support" and swinging:  # a touchdown: the swing's last reference
            landed.append(swinging[-1])
            swinging.clear()
        if w.phase == "single_support":
            assert len(ref.active_contacts) == 1
            (swing, foot), = ref.foot_poses.items()
            assert swing not in ref.active_contacts
            # the swing sole lifts between the soles' heights, at most the step height
            assert -g.touchdown_depth_m - 1e-9 <= foot.position[2] <= g.step_height_m + 1e-9
            swinging.append((swing, foot.position.copy()))
        else:
            assert set(ref.active_contacts) == {"left", "right"}
        # the CoM reference obeys the pendulum: c'' = ω² (c - r)
        r = w.zmp_reference
        np.testing.assert_allclose(ref.com_acceleration[:2], w.omega**2 * (ref.com_position[:2] - r), atol=1e-9)

    _run(w, 6.0, every=check)
    steps = [s for _, s, _ in w.touchdowns]
    assert len(steps) >= 7
    assert [s.side for s in steps[:4]] == ["left", "right", "left", "right"]  # left first, straight ahead
    # footsteps one step length apart (0.3 m/s × 0.65 s) once the command has ramped up
    assert steps[-1].x - steps[-3].x == pytest.approx(2 * 0.3 * g.step_s, abs=1e-6)
    assert all(abs(abs(s.y) - 0.1) < 1e-9 for s in steps)
    # the last swing reference of each step is its footstep, pressed touchdown_depth_m into the floor
    assert len(landed) == len(steps)
    for (side, last), step in zip(landed, steps):
        assert side == step.side
        assert last[:2] == pytest.approx(step.xy, abs=1e-6)
        assert last[2] == pytest.approx(-g.touchdown_depth_m, abs=1e-6)
    # the CoM moves forward at about the commanded speed
    assert w.velocity_command[0] == pytest.approx(0.3)


def test_turning_in_place_turns_the_soles_and_the_base():
    w = Walk(cmd_vel=(0.0, 0.0, 0.3))
    w.start(0.0, _state())
    refs = _run(w, 8.0)
    yaw = math.atan2(refs[-1].base_rotation[1, 0], refs[-1].base_rotation[0, 0])
    assert 1.8 < yaw < 2.4  # ≈ 0.3 rad/s over the 7.4 s walked after the start-up double support
    steps = [s for _, s, _ in w.touchdowns]
    assert all(abs(s.x) < 0.2 and abs(s.y) < 0.2 for s in steps)  # in place


def test_walk_stops_side_by_side_when_the_command_returns_to_zero():
    w = Walk(cmd_vel=(0.2, 0.0, 0.1))
    w.start(0.0, _state())
    _run(w, 3.0)
    w.command(0.0, 0.0, 0.0)
    refs = _run(w, 4.0, t0=3.0)
    assert w.phase == "stand"
    left, right = w.soles["left"], w.soles["right"]
    assert math.hypot(left.x - right.x, left.y - right.y) == pytest.approx(0.2, abs=0.02)
    assert left.yaw == pytest.approx(right.yaw, abs=0.02)
    assert set(refs[-1].active_contacts) == {"left", "right"}


def test_step_adjustment_moves_the_footstep_towards_a_dcm_error():
    w = Walk(cmd_vel=(0.3, 0.0, 0.0))
    w.start(0.0, _state())
    offset = np.zeros(3)

    def measure(t, ref):
        # the measured CoM: the reference's, 1 cm to the left from 2 s on (a push)
        if t > 2.0:
            offset[1] = 0.01
        w.observe(ref.com_position + offset, ref.com_velocity)

    _run(w, 4.0, every=measure)
    before = [a for t, _, a in w.touchdowns if t < 2.0]
    after = [a for t, _, a in w.touchdowns if t > 2.0 + w.gait.step_s]
    assert max(before) < 1e-3  # on the plan: (almost) no adjustment
    # after the push: 1 cm, grown over the single support and halved by the gain
    expected = min(w.gait.step_adjustment_gain * math.exp(w.omega * w.gait.single_support_s) * 0.01,
                   w.gait.max_step_adjustment_m)
    assert after and min(after) == pytest.approx(expected, rel=0.1)


def test_jump_phases_and_references():
    j = Jump()
    state = _state()
    state.actuators["left_hip_inner_actuator"] = -0.02
    j.start(0.0, state)
    phases, flight, pitch = [], [], {}
    strokes = np.array([0.004, 0.006, -0.011])  # the "measured" strokes fed to observe

    def follow(t, ref):
        # the CoM follows the reference; after take-off it flies ballistically
        vz = ref.com_velocity[2]
        R = ref.base_rotation
        pitch.setdefault(j.phase, []).append((math.atan2(R[0, 2], R[2, 2]), ref.base_angular_velocity[1],
                                              ref.com_position[2], ref.com_velocity[2]))
        if j.phase == "flight":
            flight.append(t)
            assert ref.active_contacts == ()
            # the legs held in actuator space as they left the ground (the strokes measured at the
            # switch to flight), the leg-length actuators at flight_leg_length_m, with the flight's
            # posture gains; the CoM, sole and base tasks off
            assert ref.posture == pytest.approx([j.flight_leg_length_m] * 2 + [-0.011])
            assert ref.task_gains == {"posture": (j.flight_posture_kp, j.flight_posture_kd)}
            assert ref.task_weights == {"com": 0.0, "base_orientation": 0.0, "posture": j.flight_posture_weight,
                                        "foot_left": 0.0, "foot_right": 0.0}
            assert ref.foot_poses == {}
        elif j.phase == "push":
            assert ref.task_weights == {"angular_momentum": j.push_momentum_weight,
                                        "base_orientation": j.push_base_weight}
            assert ref.posture is None
        elif j.phase in ("crouch", "hold"):
            assert ref.task_weights == {} and ref.posture is None
        j.observe(np.r_[0.0, 0.0, ref.com_position[2]], np.r_[0.0, 0.0, vz], strokes)
        if not phases or phases[-1] != j.phase:
            phases.append(j.phase)

    _run(j, 5.0, every=follow)
    assert phases == ["crouch", "hold", "push", "flight", "landing", "recover", "done"]
    # touchdown expected 2 v / g after the switch to flight, v the vertical CoM velocity measured then
    assert flight[-1] - flight[0] == pytest.approx(j.flight_time_planned_s, abs=2 * DT)
    assert j.finished(5.0)
    # the pelvis: pitched forward in the crouch, pitched back with the CoM's rise in the push
    # (rate -k dz/dt), upright from the flight on
    hold, push = np.array(pitch["hold"]), np.array(pitch["push"])
    assert hold[:, 0] == pytest.approx(j.crouch_pitch_rad) and hold[:, 1] == pytest.approx(0.0)
    k, zc = j.push_pitch_gain_rad_per_m, 0.75 - j.crouch_m
    assert push[:, 0] == pytest.approx(j.crouch_pitch_rad - k * (push[:, 2] - zc), abs=1e-9)
    assert push[:, 1] == pytest.approx(-k * push[:, 3], abs=1e-9)
    assert np.array(pitch["recover"])[:, 0] == pytest.approx(0.0)
    with pytest.raises(InputError, match="crouch_m"):
        Jump(crouch_m=0.5)
    with pytest.raises(InputError, match="crouch_pitch_rad"):
        Jump(crouch_pitch_rad=2.0)
    with pytest.raises(InputError, match="flight_posture_weight"):
        Jump(flight_posture_weight=-1.0)
