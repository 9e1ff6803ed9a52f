"""Unit tests of the encoder calibration (Kangaroo paper eq. (41)-(42)).

Synthetic data: a closed configuration from closure FK, readings = true actuator positions +
random boot offsets (relative actuators only), absolute encoders = true passive angles.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.errors import CalibrationError, JointNotFound
from kangaroo_wbc.estimation.calibration import CalibrationConfig, EncoderCalibrator
from test.estimation.conftest import (
    DIGIT,
    DIGIT_ABSOLUTE,
    DIGIT_ENCODERS,
    closed_configuration,
    model,
)

OFFSET_TOL = 1e-6  # [m] or [rad], noise-free recovery
MAX_ITERATIONS = 10
#: (model, encoders, absolute actuators, offset half-range [m or rad]); None = the model's own lists
CASES = {
    "u2ups": ("u2ups", ["platform_pitch", "platform_roll"], [], 0.01),
    "digit": (DIGIT, DIGIT_ENCODERS, DIGIT_ABSOLUTE, 0.1),
    "kangaroo": ("kangaroo", None, None, 0.01),
}
N_SAMPLES = 200


def _setup(case: str, folder, seed: int, floating: bool = True):
    name, enc, absolute, half = CASES[case]
    clm = model(name, folder, floating)
    cal = EncoderCalibrator(clm, enc, absolute)
    rng = np.random.default_rng(seed)
    q = closed_configuration(clm, seed, spread=0.1)
    offsets = np.where(cal.is_absolute, 0.0, rng.uniform(-half, half, clm.n_a))
    return clm, cal, q, offsets, rng


def _readings(clm, cal, q, offsets, rng, n, enc_noise=0.0, act_noise=0.0):
    theta = q[clm.idx_q_a] + offsets + rng.normal(0.0, act_noise, (n, clm.n_a)) * (act_noise > 0)
    truth = cal.encoder_positions(q)
    enc = {name: truth[i] + rng.normal(0.0, enc_noise, n) * (enc_noise > 0)
           for i, name in enumerate(cal.encoder_names)}
    return theta, enc


@pytest.mark.parametrize("case", list(CASES))
def test_offsets_recovered_without_noise(case, mechanism_dir):
    clm, cal, q, offsets, rng = _setup(case, mechanism_dir, seed=3)
    theta, enc = _readings(clm, cal, q, offsets, rng, 1)
    res = cal.calibrate(theta, enc, np.zeros((1, clm.n_a)))
    assert res.iterations <= MAX_ITERATIONS
    np.testing.assert_allclose(res.offsets, offsets, rtol=0, atol=OFFSET_TOL)
    assert res.residual_history[-1] < cal.config.tolerance
    assert res.closure_error < 1e-9
    np.testing.assert_allclose(res.correct(theta[0]), q[clm.idx_q_a], atol=OFFSET_TOL)
    # Newton: the residual falls quadratically once close (last ratio tiny).
    h = res.residual_history
    assert h[-1] < 1e-3 * h[-2] or h[-1] < 1e-12


def test_digit_six_offsets_and_history(mechanism_dir):
    """Six random offsets (the paper's Fig. 18 setting) from several initial measurements."""
    for seed in range(6):
        clm, cal, q, offsets, rng = _setup("digit", mechanism_dir, seed)
        assert np.count_nonzero(offsets) == 6
        theta, enc = _readings(clm, cal, q, offsets, rng, 1)
        res = cal.calibrate(theta, enc)
        assert res.iterations <= MAX_ITERATIONS
        assert np.max(np.abs(res.offsets - offsets)) < OFFSET_TOL


@pytest.mark.parametrize("case", ["u2ups", "digit", "kangaroo"])
def test_noise_propagates_linearly(case, mechanism_dir):
    """With encoder noise sigma averaged over N samples, the offset error matches the linear
    propagation sigma/sqrt(N) * ||row of J^{-1}|| (within 5 standard deviations)."""
    clm, cal, q, offsets, rng = _setup(case, mechanism_dir, seed=5)
    sigma = 1e-4  # [rad]
    theta, enc = _readings(clm, cal, q, offsets, rng, N_SAMPLES, enc_noise=sigma)
    res = cal.calibrate(theta, enc)
    err = res.offsets - offsets
    _, J = cal._residual(q, cal.encoder_positions(q))
    Jinv = np.linalg.inv(J)
    enc_cols = slice(clm.n_c, None)
    rows = clm.n_u + np.arange(len(cal.relative))
    std = sigma / np.sqrt(N_SAMPLES) * np.linalg.norm(Jinv[rows, enc_cols], axis=1)
    assert np.all(np.abs(err[cal.relative]) < 5 * std + 1e-12)


# ---------------------------------------------------------------- failures
def test_missing_encoder_reading_raises(mechanism_dir):
    clm, cal, q, offsets, rng = _setup("digit", mechanism_dir, 0)
    theta, enc = _readings(clm, cal, q, offsets, rng, 1)
    enc.pop(DIGIT_ENCODERS[2])
    with pytest.raises(CalibrationError, match="missing encoders"):
        cal.calibrate(theta, enc)


def test_unobservable_offsets_raise(mechanism_dir):
    clm = model(DIGIT, mechanism_dir, True)
    cal = EncoderCalibrator(clm, DIGIT_ENCODERS[:5], DIGIT_ABSOLUTE)
    q = closed_configuration(clm, 0)
    theta = q[clm.idx_q_a][None]
    enc = dict(zip(cal.encoder_names, cal.encoder_positions(q)))
    with pytest.raises(CalibrationError, match="missing encoders"):
        cal.calibrate(theta, enc)


def test_no_encoder_at_all_raises(mechanism_dir):
    with pytest.raises(CalibrationError, match="no absolute encoders"):
        EncoderCalibrator(model("u2ups", mechanism_dir), [], [])


def test_unknown_names_raise(mechanism_dir):
    clm = model("u2ups", mechanism_dir)
    with pytest.raises(JointNotFound, match="Valid names"):
        EncoderCalibrator(clm, ["platform_pich"], [])
    with pytest.raises(JointNotFound):
        EncoderCalibrator(clm, ["platform_pitch"], ["no_such_actuator"])


def test_moving_robot_raises(mechanism_dir):
    clm, cal, q, offsets, rng = _setup("digit", mechanism_dir, 0)
    theta, enc = _readings(clm, cal, q, offsets, rng, N_SAMPLES)
    fast = np.full((N_SAMPLES, clm.n_a), 0.05)
    with pytest.raises(CalibrationError, match="moving"):
        cal.calibrate(theta, enc, fast)
    ramp = theta + np.linspace(0.0, 0.01, N_SAMPLES)[:, None]
    with pytest.raises(CalibrationError, match="moving"):
        cal.calibrate(ramp, enc)


def test_non_convergence_and_non_finite_raise(mechanism_dir):
    clm, _, q, offsets, rng = _setup("digit", mechanism_dir, 0)
    cal = EncoderCalibrator(clm, DIGIT_ENCODERS, DIGIT_ABSOLUTE, CalibrationConfig(max_iterations=1))
    theta, enc = _readings(clm, cal, q, offsets, rng, 1)
    with pytest.raises(CalibrationError, match="did not converge"):
        cal.calibrate(theta, enc)
    enc[DIGIT_ENCODERS[0]] = np.array([np.nan])
    with pytest.raises(CalibrationError, match="non-finite"):
        cal.calibrate(theta, enc)
