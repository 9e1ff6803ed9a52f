"""Unit tests of the plausibility check of the encoder calibration (``limit_margin``).

The Kangaroo model has as many passive absolute encoders as relative actuators, so almost any set
of readings yields a converged solution; readings the mechanism cannot produce lead to a solution
outside the actuator strokes or the encoded joints' limits, which the check rejects.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kangaroo_wbc.errors import CalibrationError
from kangaroo_wbc.estimation.calibration import CalibrationConfig, EncoderCalibrator
from test.estimation.conftest import model


@pytest.fixture(scope="module")
def standing(tmp_path_factory):
    """Kangaroo standing configuration (unit-test data), its actuator readings and encoder angles."""
    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    clm = model("kangaroo", tmp_path_factory.mktemp("unused"), True)
    q = standing_configuration(clm)
    cal = EncoderCalibrator(clm)
    return clm, cal, q[clm.idx_q_a], cal.encoder_positions(q)


def _calibrate(cal, theta, enc, **config):
    if config:
        cal = EncoderCalibrator(cal.clm, config=CalibrationConfig(**config))
    return cal.calibrate(theta[None], dict(zip(cal.encoder_names, enc)))


def test_consistent_readings_pass(standing):
    clm, cal, theta, enc = standing
    res = _calibrate(cal, theta, enc)
    assert np.max(np.abs(res.offsets)) < 1e-8


def test_reading_beyond_the_joint_limit_fails_naming_it(standing):
    clm, cal, theta, enc = standing
    bad = enc.copy()
    name = cal.encoder_names[0]
    upper = clm.model.upperPositionLimit[clm.model.joints[clm.model.getJointId(name)].idx_q]
    bad[0] = upper + 0.5  # [rad]: the mechanism cannot get there
    with pytest.raises(CalibrationError, match="implausible") as info:
        _calibrate(cal, theta, bad)
    assert name in str(info.value)
    # the same data pass without the check: the iteration itself converged
    res = _calibrate(cal, theta, bad, limit_margin=math.inf)
    assert res.residual_history[-1] < res.residual_history[0]


def test_margin_is_respected(standing):
    clm, cal, theta, enc = standing
    name = cal.encoder_names[0]
    jm = clm.model.joints[clm.model.getJointId(name)]
    upper = clm.model.upperPositionLimit[jm.idx_q]
    margin = 0.05
    inside, outside = enc.copy(), enc.copy()
    inside[0], outside[0] = upper + 0.5 * margin, upper + 2.0 * margin
    messages = []
    for readings in (inside, outside):
        try:
            _calibrate(cal, theta, readings, limit_margin=margin)
            messages.append("")
        except CalibrationError as exc:
            messages.append(str(exc))
    assert f"passive encoder {name}" not in messages[0]
    assert f"passive encoder {name}" in messages[1]


def test_negative_margin_is_rejected():
    from kangaroo_wbc.errors import InputError

    with pytest.raises(InputError):
        CalibrationConfig(limit_margin=-1.0)
