"""Unit tests of the CoM disturbance observer and its place in the controller (no simulator).

The observer is closed around a CoM that is a double integrator driven by the CoM task's PD: the
plant every ``J_com nu_dot + drift`` of the QP becomes when the CoM task is met, plus the
disturbance ``d`` the robot adds (:mod:`kangaroo_wbc.control.com_disturbance`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kangaroo_wbc.control.com_disturbance import ComDisturbanceObserver
from kangaroo_wbc.control.supervisor import WbcSupervisor
from kangaroo_wbc.control.wbc import WbcSettings, WholeBodyController
from kangaroo_wbc.errors import InputError
from test.control.conftest import EXACT_TOL, digit_contacts, digit_limits, random_state

DT = 1e-3  # [s] control period
KP, KD = 100.0, 20.0  # the controller's CoM gains [1/s², 1/s]
#: relative agreement of the 1 kHz discrete loop with the continuous transfer function
DISCRETE_TOL = 0.05


def _pd_loop(disturbance, observer: ComDisturbanceObserver | None, duration_s: float) -> np.ndarray:
    """CoM error ``c_ref - c`` (N, 3) of a double integrator ``c'' = a_plan + d(t)`` under the CoM
    task's law ``a_plan = kp e + kd e' - d_hat`` (reference at rest), sampled every tick."""
    c, c_dot = np.zeros(3), np.zeros(3)
    errors = []
    for k in range(int(round(duration_s / DT))):
        t = k * DT
        d_hat = observer.update(t, c_dot) if observer is not None else np.zeros(3)
        a_plan = KP * (0.0 - c) + KD * (0.0 - c_dot) - d_hat
        if observer is not None:
            observer.planned(a_plan)
        a = a_plan + disturbance(t)
        c = c + DT * c_dot + 0.5 * DT**2 * a  # exact over the period (a held)
        c_dot = c_dot + DT * a
        errors.append(-c)
    return np.array(errors)


def test_constant_disturbance_leaves_no_steady_state_error():
    """The PD alone settles at ``-d / kp``; with the observer the error goes to zero."""
    d = np.array([0.3, -0.2, 0.4])  # [m/s²], within the bound
    plain = _pd_loop(lambda t: d, None, 3.0)
    np.testing.assert_allclose(plain[-1], -d / KP, rtol=1e-3)
    observer = ComDisturbanceObserver(cutoff_hz=3.0, max_m_s2=0.5)
    observed = _pd_loop(lambda t: d, observer, 3.0)
    assert np.max(np.abs(observed[-1])) < 1e-3 * np.max(np.abs(d / KP))
    np.testing.assert_allclose(observer.estimate, d, rtol=1e-3)


def test_bound_saturates_the_estimate_and_the_pd_takes_the_rest():
    """Anti-windup: a disturbance beyond ``max_m_s2`` holds the estimate at the bound, never past
    it, and leaves the PD the part above it."""
    d = np.array([2.0, -0.1, 0.0])
    observer = ComDisturbanceObserver(cutoff_hz=3.0, max_m_s2=0.5)
    estimates = []

    def disturbance(t):
        estimates.append(observer.estimate.copy())
        return d

    errors = _pd_loop(disturbance, observer, 3.0)
    assert np.max(np.abs(estimates)) <= 0.5
    np.testing.assert_allclose(observer.estimate, [0.5, -0.1, 0.0], atol=1e-4)
    np.testing.assert_allclose(errors[-1], -(d - observer.estimate) / KP, rtol=1e-3, atol=1e-9)


def test_sinusoidal_disturbance_follows_the_transfer_function():
    """``e/d = -s / ((s + omega_c)(s² + kd s + kp))``: the error amplitude at twice the sway
    frequency (period 3 s) is the transfer function's gain, over 4x below the PD alone's
    (``|s / (s + omega_c)|`` = 0.22 there)."""
    w, amplitude, f_c = 2 * 2 * math.pi / 3.0, 0.3, 3.0
    observer = ComDisturbanceObserver(cutoff_hz=f_c, max_m_s2=1.0)
    errors = _pd_loop(lambda t: np.array([0.0, 0.0, amplitude * math.sin(w * t)]), observer, 12.0)
    measured = np.max(np.abs(errors[-3000:, 2]))  # the last 3 s, two periods of the disturbance
    s = 1j * w
    gain = abs(s / ((s + 2 * math.pi * f_c) * (s * s + KD * s + KP)))
    assert measured == pytest.approx(amplitude * gain, rel=DISCRETE_TOL)
    plain = _pd_loop(lambda t: np.array([0.0, 0.0, amplitude * math.sin(w * t)]), None, 12.0)
    assert np.max(np.abs(plain[-3000:, 2])) > 4 * measured


def test_history_restarts_after_a_gap_a_missing_plan_or_a_restart():
    """A sample needs two states within ``max_gap_s`` and the plan applied between them; otherwise
    the estimate is held. ``reset`` clears it; a zero cutoff never moves it."""
    obs = ComDisturbanceObserver(cutoff_hz=3.0, max_m_s2=0.5, max_gap_s=0.01)
    alpha = 1 - math.exp(-2 * math.pi * 3.0 * DT)
    obs.update(0.0, np.zeros(3))
    obs.planned(np.zeros(3))
    np.testing.assert_allclose(obs.update(DT, [0.0, 0.0, -1e-4]), [0.0, 0.0, -0.1 * alpha], atol=EXACT_TOL)
    held = obs.estimate.copy()
    obs.update(2 * DT, np.zeros(3))  # no plan after the last state (the QP failed)
    np.testing.assert_array_equal(obs.estimate, held)
    obs.planned(np.zeros(3))
    obs.update(2 * DT + 0.02, [0.0, 0.0, 1.0])  # a gap
    np.testing.assert_array_equal(obs.estimate, held)
    obs.planned(np.zeros(3))
    obs.restart()  # the supervisor's safe command acted
    obs.update(3 * DT + 0.02, np.zeros(3))
    np.testing.assert_array_equal(obs.estimate, held)
    obs.update(4 * DT + 0.02, [np.nan, 0.0, 0.0])  # no usable state: restart, held
    np.testing.assert_array_equal(obs.estimate, held)
    obs.reset()
    np.testing.assert_array_equal(obs.estimate, 0.0)
    off = ComDisturbanceObserver(cutoff_hz=0.0)
    off.update(0.0, np.zeros(3))
    off.planned(np.zeros(3))
    np.testing.assert_array_equal(off.update(DT, np.ones(3)), 0.0)
    with pytest.raises(InputError, match="cutoff_hz"):
        ComDisturbanceObserver(cutoff_hz=-1.0)


def _controller(clm, **kw) -> WholeBodyController:
    return WholeBodyController(clm, digit_contacts(), WbcSettings(base_frame="torso", **kw), digit_limits(clm))


def test_controller_feeds_the_estimate_to_the_com_task(digit_fb):
    """Two stamped steps at one state: the CoM did not accelerate, so the sample is minus the
    first solution's planned CoM acceleration, and the second QP's CoM target subtracts its
    low-pass; unstamped steps hold the estimate."""
    wbc = _controller(digit_fb)
    q, _, v = random_state(digit_fb, 0, speed=0.0)
    out = wbc.step(q, v, active_contacts=("right", "left"), stamp_s=0.0)
    plan = wbc.pm.J_com @ out.nu_dot + wbc.pm.com_drift
    assert np.max(np.abs(plan)) > 0.01  # the first solution accelerates the CoM toward its target
    wbc.step(q, v, active_contacts=("right", "left"), stamp_s=DT)
    alpha = 1 - math.exp(-2 * math.pi * wbc.settings.com_disturbance_cutoff_hz * DT)
    expected = np.clip(-alpha * plan, -0.5, 0.5)
    np.testing.assert_allclose(wbc.com_observer.residual, -plan, rtol=1e-9, atol=EXACT_TOL)
    np.testing.assert_allclose(wbc.com_task.disturbance, expected, rtol=1e-9, atol=EXACT_TOL)
    J, r = wbc.com_task.jacobian_and_target(wbc.pm)
    plain = wbc.com_task.disturbance.copy()
    wbc.com_task.disturbance = np.zeros(3)
    np.testing.assert_allclose(r, wbc.com_task.jacobian_and_target(wbc.pm)[1] - plain, atol=EXACT_TOL)
    wbc.com_task.disturbance = plain
    wbc.step(q, v, active_contacts=("right", "left"))
    np.testing.assert_array_equal(wbc.com_task.disturbance, plain)
    wbc.reset_references()
    np.testing.assert_array_equal(wbc.com_task.disturbance, 0.0)


def test_supervisor_stamps_the_state_and_restarts_the_history_in_safe_mode(digit_fb):
    """The supervisor gives the controller the state's time (tick time minus its age); a safe
    tick between two control ticks forms no sample (its command, not the plan, acted)."""
    sup = WbcSupervisor(_controller(digit_fb))
    q, v = digit_fb.q_ref.copy(), np.zeros(digit_fb.model.nv)
    obs = sup.controller.com_observer
    sup.tick(1.0, q, v, state_age_s=0.004)
    sup.tick(1.0 + DT, q, v, state_age_s=0.004)
    assert np.all(np.isfinite(obs.residual))
    sample = obs.estimate.copy()
    assert sup.tick(1.0 + 2 * DT, q, v, state_age_s=1.0).mode == "safe"  # stale
    obs.residual[:] = np.nan
    sup.tick(1.0 + 3 * DT, q, v, state_age_s=0.004)
    assert np.all(np.isnan(obs.residual))
    np.testing.assert_array_equal(obs.estimate, sample)


def test_configure_checks_and_clips_at_once():
    obs = ComDisturbanceObserver(cutoff_hz=3.0, max_m_s2=0.5)
    obs.estimate[:] = [0.4, -0.4, 0.1]
    obs.configure(1.0, 0.2)
    np.testing.assert_allclose(obs.estimate, [0.2, -0.2, 0.1])
    assert obs.omega_c == pytest.approx(2 * np.pi)
    with pytest.raises(InputError):
        obs.configure(float("nan"), 0.2)
    assert obs.max_m_s2 == 0.2  # unchanged by the refused call
