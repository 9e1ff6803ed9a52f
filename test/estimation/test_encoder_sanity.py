"""Unit tests of the encoder jump and freeze checks (``kangaroo_wbc.estimation.encoder_sanity``).

Synthetic streams, no ROS: smooth sinusoidal actuator motion with velocities consistent with the
positions, at speeds up to the checker's bound, then one fault at a time.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.estimation.encoder_sanity import EncoderSanityChecker, EncoderSanityConfig

NAMES = ["a0", "a1", "a2", "a3"]
V_MAX = np.array([0.5, 0.5, 1.0, 0.5])  # [m/s]
DT = 1e-3  # [s]
CFG = EncoderSanityConfig(nominal_dt_s=DT)
BOUND = CFG.jump_speed_factor * V_MAX  # [m/s]


def _motion(k: int, speed_fraction: float = 0.9, period_s: float = 0.5):
    """Positions [m] and velocities [m/s] at sample k: a sinusoid whose peak speed is
    ``speed_fraction`` of each actuator's jump bound."""
    w = 2 * np.pi / period_s
    amp = speed_fraction * BOUND / w
    phase = np.arange(len(NAMES))
    t = k * DT
    return amp * np.sin(w * t + phase), amp * w * np.cos(w * t + phase), t


def _run(checker, ks, **kw):
    return [checker.update(*_motion(k, **kw)) for k in ks]


def test_motion_within_the_bound_is_accepted():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    rng = np.random.default_rng(0)
    for k in range(2000):
        pos, vel, t = _motion(k, speed_fraction=0.99)
        v = checker.update(pos + rng.normal(0.0, 1e-6, len(NAMES)), vel, t)
        assert v.accepted and not v.persistent, (k, v.message)


def test_fast_motion_explained_by_the_reported_velocity_is_accepted():
    # e.g. a fall in a simulator that does not limit the drives' speed: 3x the bound
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    verdicts = _run(checker, range(1000), speed_fraction=3.0)
    assert all(v.accepted for v in verdicts), next(v.message for v in verdicts if not v.accepted)


def test_fast_motion_without_a_reported_velocity_is_a_jump():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    verdicts = [
        checker.update(pos, np.zeros(len(NAMES)), t)
        for pos, _, t in map(_motion, range(50), [3.0] * 50)
    ]
    assert not all(v.accepted for v in verdicts)


def test_velocity_spike_alone_is_a_jump():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    _run(checker, range(50))
    pos, vel, t = _motion(50)
    vel[3] += 10.0 * BOUND[3]  # [m/s] the reading is fine, the velocity field is not
    v = checker.update(pos, vel, t)
    assert not v.accepted and v.jumped == ("a3",)


@pytest.mark.parametrize("index", range(len(NAMES)))
def test_one_sample_glitch_is_rejected_once_and_named(index):
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    _run(checker, range(100))
    pos, vel, t = _motion(100)
    # beyond the bound even where the motion (at most 0.9 of it) moves the other way
    glitch = 2.0 * (BOUND[index] * DT + CFG.position_tolerance)
    pos[index] += glitch
    v = checker.update(pos, vel, t)
    assert not v.accepted and not v.persistent
    assert v.jumped == (NAMES[index],) and NAMES[index] in v.message and "rejected" in v.message
    # back to the true reading: consistent with the reference
    after = _run(checker, range(101, 200))
    assert all(x.accepted for x in after)


def test_step_below_the_bound_is_accepted():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    _run(checker, range(50), speed_fraction=0.0)
    pos, vel, t = _motion(50, speed_fraction=0.0)
    pos[0] += 0.9 * (BOUND[0] * DT + CFG.position_tolerance)
    assert checker.update(pos, vel, t).accepted


def test_persistent_step_is_reported_after_max_rejected_samples_then_reanchored():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    _run(checker, range(50), speed_fraction=0.0)
    step = 5e-3  # [m] far beyond max_rejected_samples * bound * dt
    assert step > CFG.max_rejected_samples * BOUND[1] * DT + CFG.position_tolerance
    verdicts = []
    for k in range(50, 60):
        pos, vel, t = _motion(k, speed_fraction=0.0)
        pos[1] += step
        verdicts.append(checker.update(pos, vel, t))
    n = CFG.max_rejected_samples
    assert [v.accepted for v in verdicts[:n]] == [False] * n
    assert [v.persistent for v in verdicts[:n]] == [False] * (n - 1) + [True]
    assert verdicts[n - 1].jumped == ("a1",) and "persistent" in verdicts[n - 1].message
    assert all(v.accepted for v in verdicts[n:])  # re-anchored on the new reading


def test_large_gap_allows_proportionally_larger_motion():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    pos, vel, t = _motion(0, speed_fraction=0.0)
    checker.update(pos, vel, t)
    gap = 0.1  # [s] without samples
    moved = pos + 0.9 * BOUND * gap
    assert checker.update(moved, vel, t + gap).accepted
    assert not checker.update(
        moved + 1.1 * BOUND * DT + 2 * CFG.position_tolerance, vel, t + gap + DT
    ).accepted


def test_freeze_while_the_velocity_reports_motion_is_persistent():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    _run(checker, range(100))
    frozen_value = _motion(99)[0][2]
    verdicts = []
    for k in range(100, 100 + 3 * CFG.freeze_samples):
        pos, vel, t = _motion(k)
        pos[2] = frozen_value  # stuck reading, the velocity field still reports the motion
        verdicts.append(checker.update(pos, vel, t))
    first = next(i for i, v in enumerate(verdicts) if not v.accepted)
    # declared once the run reaches freeze_samples and the integrated velocity exceeds the travel
    assert first >= CFG.freeze_samples - 1
    assert all(v.persistent and v.frozen == ("a2",) for v in verdicts[first:])
    assert "a2" in verdicts[first].message and "frozen" in verdicts[first].message
    # the reading moves again: accepted (the bound grows with the time since the reference)
    assert all(v.accepted for v in _run(checker, range(100 + 3 * CFG.freeze_samples, 400)))


def test_whole_entry_frozen_with_a_moving_velocity_is_detected():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    _run(checker, range(100))
    stuck_pos, stuck_vel, _ = _motion(99)
    assert abs(stuck_vel[0]) * CFG.freeze_samples * DT > CFG.freeze_min_travel
    out = []
    for k in range(100, 100 + 2 * CFG.freeze_samples):
        pos, vel, t = _motion(k)
        pos[0], vel[0] = stuck_pos[0], stuck_vel[0]
        out.append(checker.update(pos, vel, t))
    assert any(v.persistent and v.frozen == ("a0",) for v in out)


def test_held_actuator_with_velocity_noise_is_not_frozen():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    rng = np.random.default_rng(1)
    held = np.array([0.01, -0.02, 0.03, 0.0])
    for k in range(5000):
        vel = rng.normal(0.0, 1e-3, len(NAMES)) + 1e-4  # noise and a small bias [m/s]
        v = checker.update(held, vel, k * DT)
        assert v.accepted, (k, v.message)


def test_repeated_stamps_neither_jump_nor_count_as_frozen():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    pos, vel, t = _motion(10)
    vel[:] = 0.3  # would integrate to a large travel if the repeats counted
    for _ in range(5 * CFG.freeze_samples):
        assert checker.update(pos, vel, t).accepted


def test_out_of_order_sample_uses_the_nominal_period():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    _run(checker, range(20), speed_fraction=0.0)
    pos, vel, t = _motion(20, speed_fraction=0.0)
    assert checker.update(pos + 0.5 * BOUND * DT, vel, t - 0.5).accepted
    assert not checker.update(pos + 3.0 * BOUND * DT, vel, t - 0.4).accepted
    # the reference time did not go back: one period later only one period of motion is allowed
    assert not checker.update(pos + 3.0 * BOUND * DT, vel, t + DT).accepted


def test_unusable_speed_limit_disables_the_jump_check_of_that_actuator():
    checker = EncoderSanityChecker(NAMES, [np.inf, 0.0, 1.0, 0.5], CFG)
    pos, vel, t = _motion(0, speed_fraction=0.0)
    checker.update(pos, vel, t)
    pos[:2] += 1.0
    assert checker.update(pos, vel, t + DT).accepted
    pos[3] += 1.0
    assert checker.update(pos, vel, t + 2 * DT).jumped == ("a3",)


def test_reset_forgets_the_reference():
    checker = EncoderSanityChecker(NAMES, V_MAX, CFG)
    _run(checker, range(10), speed_fraction=0.0)
    pos, vel, t = _motion(10, speed_fraction=0.0)
    checker.reset()
    assert checker.update(pos + 1.0, vel, t).accepted


def test_bad_configuration_and_sizes_raise():
    with pytest.raises(InputError):
        EncoderSanityConfig(jump_speed_factor=0.5)
    with pytest.raises(InputError):
        EncoderSanityConfig(freeze_samples=1)
    with pytest.raises(InputError):
        EncoderSanityConfig(position_tolerance=-1.0)
    with pytest.raises(InputError):
        EncoderSanityChecker(NAMES, V_MAX[:2])
    checker = EncoderSanityChecker(NAMES, V_MAX)
    with pytest.raises(InputError):
        checker.update(np.zeros(3), np.zeros(3), 0.0)
    with pytest.raises(InputError):
        checker.update(np.full(4, np.nan), np.zeros(4), 0.0)


# --- the compiled passes against their readable numpy forms --------------------------------------

def _freeze_step_reference(pos, vel, dt, prev, run, travel, slot, freeze_samples, min_travel):
    run = (run + 1) * (pos == prev)
    travel = travel.copy()
    travel[slot] = vel * dt
    frozen = (run >= freeze_samples) & (np.abs(travel.sum(axis=0)) > min_travel)
    return run, travel, pos.copy(), (frozen if run.max() >= freeze_samples and frozen.any() else None)


def _jump_ratio_reference(pos, vel, ref, v_ref, dt, speed_bound, tolerance):
    unexplained = np.abs(pos - ref - 0.5 * dt * (vel + v_ref))
    ratio = unexplained / (speed_bound * dt + tolerance)
    return unexplained, ratio, (int(np.argmax(ratio)) if (ratio > 1.0).any() else -1)


def test_compiled_passes_match_their_numpy_forms() -> None:
    from kangaroo_wbc.estimation.encoder_sanity import _freeze_step, _jump_ratio

    rng = np.random.default_rng(3)
    n, f = 12, 5
    found_frozen = found_jump = 0
    for _ in range(400):
        prev = np.round(rng.normal(0.0, 1e-3, n), 5)
        pos = np.where(rng.random(n) < 0.7, prev, prev + 1e-5)
        vel = rng.normal(0.0, 0.05, n)
        run = rng.integers(0, 2 * f, n)
        travel = rng.normal(0.0, 2e-4, (f, n))
        slot, dt = int(rng.integers(0, f)), 1e-3
        want_run, want_travel, want_prev, want_frozen = _freeze_step_reference(
            pos, vel, dt, prev, run, travel, slot, f, 5e-4)
        got_run, got_travel, got_prev, mask = run.copy(), travel.copy(), prev.copy(), np.zeros(n, bool)
        got = _freeze_step(pos, vel, dt, got_prev, got_run, got_travel, slot, f, 5e-4, mask)
        np.testing.assert_array_equal(got_run, want_run)
        np.testing.assert_allclose(got_travel, want_travel, rtol=0, atol=1e-18)
        np.testing.assert_array_equal(got_prev, want_prev)
        assert got == (want_frozen is not None)
        if got:
            found_frozen += 1
            np.testing.assert_array_equal(mask, want_frozen)

        ref = pos + rng.normal(0.0, 2e-3, n) * (rng.random(n) < 0.1)
        v_ref = vel + rng.normal(0.0, 1e-3, n)
        bound = np.where(rng.random(n) < 0.1, np.inf, 0.75)
        unexplained, ratio = np.zeros(n), np.zeros(n)
        want_unexplained, want_ratio, want_worst = _jump_ratio_reference(pos, vel, ref, v_ref, dt, bound, 1e-4)
        got_worst = _jump_ratio(pos, vel, ref, v_ref, dt, bound, float(bound.min()), 1e-4, ratio, unexplained)
        np.testing.assert_allclose(unexplained, want_unexplained, rtol=1e-12, atol=1e-18)
        assert got_worst == want_worst
        if got_worst >= 0:
            found_jump += 1
            np.testing.assert_allclose(ratio, want_ratio, rtol=1e-12)
    assert found_frozen > 20 and found_jump > 20  # both outcomes exercised
