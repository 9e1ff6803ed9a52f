"""Unit tests of the per-sample Butterworth low-pass (paper Section VI-B: 2nd order, 5 Hz)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.signal

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.estimation.filters import ButterworthFilter

FS = 1000.0  # [Hz]
FC = 5.0  # [Hz]


def _run(f: ButterworthFilter, x: np.ndarray) -> np.ndarray:
    return np.array([f(xi).copy() for xi in x])


@pytest.mark.parametrize("order", [1, 2, 4])
def test_matches_scipy_sosfilt(order):
    f = ButterworthFilter(FC, FS, n_channels=3, order=order)
    f.reset(np.zeros(3))
    x = np.random.default_rng(0).normal(size=(3000, 3))
    np.testing.assert_allclose(_run(f, x), scipy.signal.sosfilt(f.sos, x, axis=0), rtol=0, atol=1e-12)


def test_step_response_of_second_order_butterworth():
    """Unit DC gain and the textbook overshoot of a 2nd-order Butterworth (zeta = 1/sqrt 2):
    exp(-pi zeta / sqrt(1 - zeta^2)) = exp(-pi) = 4.3 %."""
    f = ButterworthFilter(FC, FS, n_channels=1)
    f.reset(np.zeros(1))
    y = _run(f, np.ones((2000, 1)))[:, 0]
    assert abs(y[-1] - 1.0) < 1e-6
    assert abs((y.max() - 1.0) - np.exp(-np.pi)) < 3e-3
    # rise to 90 % in ~ 0.34 s / fc-ish: bounded between 1/(4 fc) and 1/fc
    t90 = np.argmax(y > 0.9) / FS
    assert 1.0 / (4 * FC) < t90 < 1.0 / FC


@pytest.mark.parametrize("freq,gain", [(FC, 1 / np.sqrt(2)), (10 * FC, 1e-2), (0.1 * FC, 1.0)])
def test_gain_at_cutoff_and_rolloff(freq, gain):
    """-3 dB at the cutoff, -40 dB/decade above it (2nd order), flat below it."""
    f = ButterworthFilter(FC, FS, n_channels=1)
    f.reset(np.zeros(1))
    t = np.arange(int(max(3.0 / freq, 2.0) * FS)) / FS  # transient (~0.5 s) + periods
    y = _run(f, np.sin(2 * np.pi * freq * t)[:, None])[:, 0]
    steady = y[len(y) // 2:]
    assert abs(np.max(np.abs(steady)) / gain - 1.0) < 0.03


def test_first_sample_initialises_without_transient():
    f = ButterworthFilter(FC, FS, n_channels=2)
    x = np.array([3.0, -7.0])
    for _ in range(50):
        np.testing.assert_allclose(f(x), x, rtol=0, atol=1e-9)


def test_invalid_parameters_raise():
    with pytest.raises(InputError):
        ButterworthFilter(600.0, 1000.0)
    with pytest.raises(InputError):
        ButterworthFilter(5.0, 1000.0, order=0)


def test_a_sample_of_the_wrong_size_is_rejected():
    f = ButterworthFilter(FC, FS, n_channels=3)
    f(np.zeros(3))
    with pytest.raises(InputError, match="shape"):
        f(np.zeros(4))
