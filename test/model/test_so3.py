"""Unit tests of the compiled SO(3) maps against pinocchio's."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.model.so3 import jlog3_into, log3


def _samples() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(size=(30, 3)), 1e-7 * rng.normal(size=(5, 3)), np.zeros((1, 3)),
                      [[0.0, 0.0, np.pi - 1e-3]], 3e-5 * np.ones((1, 3))])


def _jlog3(r: np.ndarray) -> np.ndarray:
    J = np.empty((3, 3))
    jlog3_into(r, float(np.linalg.norm(r)), J)
    return J


def test_log_matches_pinocchio_and_inverts_exp():
    for r in _samples():
        R = pin.exp3(r)
        np.testing.assert_allclose(log3(R), pin.log3(R), atol=1e-9)
        if np.linalg.norm(r) < np.pi - 1e-2:
            np.testing.assert_allclose(log3(R), r, atol=1e-12)


def test_jlog_matches_pinocchio_and_finite_differences():
    r = _samples()
    r = r[np.linalg.norm(r, axis=1) < 3.0]
    h = 1e-7
    for k in range(len(r)):
        R = pin.exp3(r[k])
        J = _jlog3(r[k])
        np.testing.assert_allclose(J, pin.Jlog3(R), atol=1e-12)
        fd = np.column_stack([(pin.log3(R @ pin.exp3(h * e)) - pin.log3(R @ pin.exp3(-h * e))) / (2 * h)
                              for e in np.eye(3)])
        np.testing.assert_allclose(J, fd, atol=1e-6)


def test_near_pi_log_keeps_angle():
    R = pin.exp3(np.array([0.0, np.pi - 1e-8, 0.0]))
    assert abs(np.linalg.norm(log3(R)) - (np.pi - 1e-8)) < 1e-6


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
