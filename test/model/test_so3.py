"""Unit tests of the SO(3) maps (compiled scalar and batched) against pinocchio's."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.model.so3 import exp3_batch, jlog3_batch, log3, log3_batch


def _samples() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(size=(30, 3)), 1e-7 * rng.normal(size=(5, 3)), np.zeros((1, 3)),
                      [[0.0, 0.0, np.pi - 1e-3]], 3e-5 * np.ones((1, 3))])


def test_exp_log_match_pinocchio():
    r = _samples()
    R = exp3_batch(r)
    for k in range(len(r)):
        np.testing.assert_allclose(R[k], pin.exp3(r[k]), atol=1e-14)
    logs = log3_batch(R)
    for k in range(len(r)):
        np.testing.assert_allclose(logs[k], pin.log3(R[k]), atol=1e-9)


def test_log_of_exp_is_identity_inside_the_ball():
    r = _samples()
    r = r[np.linalg.norm(r, axis=1) < np.pi - 1e-2]
    np.testing.assert_allclose(log3_batch(exp3_batch(r)), r, atol=1e-12)


def test_jlog_matches_pinocchio_and_finite_differences():
    r = _samples()
    r = r[np.linalg.norm(r, axis=1) < 3.0]
    J = jlog3_batch(r)
    h = 1e-7
    for k in range(len(r)):
        R = pin.exp3(r[k])
        np.testing.assert_allclose(J[k], pin.Jlog3(R), atol=1e-12)
        fd = np.column_stack([(pin.log3(R @ pin.exp3(h * e)) - pin.log3(R @ pin.exp3(-h * e))) / (2 * h)
                              for e in np.eye(3)])
        np.testing.assert_allclose(J[k], fd, atol=1e-6)


def test_near_pi_log_keeps_angle():
    R = exp3_batch(np.array([[0.0, np.pi - 1e-8, 0.0]]))
    assert abs(np.linalg.norm(log3_batch(R)[0]) - (np.pi - 1e-8)) < 1e-6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_log3_equals_pinocchio(seed):
    """Rotation vectors of random rotations, tiny ones and ones within 1e-3 of π."""
    rng = np.random.default_rng(seed)
    for angle in (0.0, 1e-9, 3e-5, 0.3, 1.5, 2.9, np.pi - 2e-3, np.pi - 5e-4, np.pi - 1e-6, np.pi):
        for _ in range(20):
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
            R = pin.exp3(angle * axis)
            w = log3(R)
            if angle > np.pi - 1e-6:  # the axis' sign is free at π: compare the rotation it gives
                np.testing.assert_allclose(pin.exp3(w), R, atol=1e-9)
                assert np.linalg.norm(w) == pytest.approx(np.linalg.norm(pin.log3(R)), abs=1e-9)
            else:
                np.testing.assert_allclose(w, pin.log3(R), rtol=0, atol=1e-9 if angle > np.pi - 1e-2 else 1e-12)


def test_quaternion_from_matrix_matches_eigen_including_its_sign():
    from kangaroo_wbc.model.so3 import quaternion_xyzw_from_matrix

    rng = np.random.default_rng(7)
    rotations = [pin.exp3(rng.normal(size=3)) for _ in range(200)]
    # tr R <= 0 on every branch (largest diagonal entry x, y, z): rotations near pi
    rotations += [pin.exp3((np.pi - 1e-3 * k) * axis) for k in range(3) for axis in np.eye(3)]
    for R in rotations:
        R = np.ascontiguousarray(R)
        ref = pin.Quaternion(np.asfortranarray(R)).coeffs()
        np.testing.assert_allclose(quaternion_xyzw_from_matrix(R), ref, atol=1e-14)
