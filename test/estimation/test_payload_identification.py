"""Unit tests of the payload identification (``kangaroo_wbc/estimation/payload_identification.py``).

Synthetic wrenches on the Kangaroo model: the ground wrenches of a robot that carries a payload the
model does not know (a copy of the model with the payload's inertia added to the base body, its
weight balanced by pinocchio's generalised gravity), turned into the actuator forces eq. (46)
gives for them, fed through the real contact-wrench estimator on the nominal model. No simulator.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.components.contact_wrench import ContactWrenchEstimation, ContactWrenchSettings
from kangaroo_wbc.components.samples import ActuatorSample
from kangaroo_wbc.errors import ConfigError, InputError
from kangaroo_wbc.estimation import paper_screws
from kangaroo_wbc.estimation.actuator_force import ActuatorCompensation
from kangaroo_wbc.estimation.contact_wrench import ContactWrenchConfig, ContactWrenchEstimator
from kangaroo_wbc.estimation.payload_identification import (
    PayloadIdentificationConfig,
    PayloadIdentifier,
)
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

SOLES = ["left_sole", "right_sole"]
DT = 1e-3
#: exact arithmetic up to the 12 x 12 solves near the stretched knee (condition number ~60)
MASS_TOL_KG, COM_TOL_M = 1e-6, 1e-6


@pytest.fixture(scope="module")
def nominal():
    """Unit-test data: the floating-base Kangaroo model (not modified by these tests) and a standing
    configuration with the base turned and tilted, so that base and world axes differ."""
    clm = load_kangaroo(floating_base=True)
    q = standing_configuration(clm)
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.03, -0.02, 0.4)).coeffs()
    q[:2] = [0.3, -0.1]
    return clm, q


def true_wrenches(clm, q, estimator, mass_kg, lever_in_base, squeeze_n=20.0):
    """Sole wrenches (LOCAL, stacked (12,)) that balance the robot with ``mass_kg`` at
    ``lever_in_base`` [m] of the base body added, plus an internal squeeze the base rows do not see
    (the split between the soles is the actuators' business), and the world position of the payload."""
    m_true = clm.model.copy()
    m_true.inertias[1] = m_true.inertias[1] + pin.Inertia(mass_kg, np.asarray(lever_in_base, float), np.zeros((3, 3)))
    g_b_true = pin.computeGeneralizedGravity(m_true, m_true.createData(), q)[:6]
    J_b = estimator.J_cb_T  # base rows J_c,b^T, from the estimator's model update at q
    f = np.linalg.lstsq(J_b, g_b_true, rcond=None)[0]
    null = np.linalg.svd(J_b)[2][6:]  # wrench combinations the base rows do not see
    f += squeeze_n * null[0] / np.linalg.norm(null[0])
    oMb = pin.XYZQUATToSE3(q[:7])
    return f, oMb.act(np.asarray(lever_in_base, float))


def feed(pid, estimator, q, forces, t0=0.0, v=None, v_of_t=None):
    """Tick the estimator (actuator forces ``forces(t)``) and ``pid`` at 1 kHz from ``t0`` for
    ``len`` of the sample times; returns the last time."""
    v0 = np.zeros(estimator.model.nv) if v is None else v
    t = t0
    for t in t0 + DT * np.arange(1, 1 + forces.n):
        vt = v0 if v_of_t is None else v_of_t(t)
        estimator.update_model(q, vt)
        estimator.estimate_wrenches(actuator_force=forces(t, estimator))
        pid.update(estimator, q, vt, t)
    return t


class Forces:
    """``n`` ticks of the actuator forces eq. (46) gives for the sole wrenches ``f_of_t(t)``:
    ``tau_bar = g_p,a - J_c,m^T f`` (base payload: the actuated rows' gravity is the model's)."""

    def __init__(self, n, f_of_t):
        self.n, self.f_of_t = n, f_of_t

    def __call__(self, t, estimator):
        return estimator.g_pa - estimator.J_cm_T @ self.f_of_t(t)


def setup(nominal, mass_kg=6.0, lever=(0.05, -0.03, 0.2), config=None):
    clm, q = nominal
    est = ContactWrenchEstimator(clm, SOLES)
    est.update_model(q, np.zeros(clm.model.nv))
    f, p = true_wrenches(clm, q, est, mass_kg, lever)
    return clm, q, est, PayloadIdentifier(clm, config), f, p


def test_exact_recovery_of_an_unmodelled_torso_payload(nominal):
    """Unit: 6 kg 5 cm ahead, 3 cm right and 20 cm above the base origin, model not told: the mass
    and the horizontal CoM come back exactly (the height does not enter: unobservable)."""
    clm, q, est, pid, f, p = setup(nominal)
    feed(pid, est, q, Forces(2600, lambda t: f))  # settle_s, then a full window
    e = pid.estimate
    assert e.confident and pid.identified is e, e.reason
    assert abs(e.mass_kg - 6.0) < MASS_TOL_KG
    np.testing.assert_allclose(e.com_xy_in_world_m, p[:2], atol=COM_TOL_M)
    np.testing.assert_allclose(e.com_xy_from_base_m, p[:2] - q[:2], atol=COM_TOL_M)
    assert abs(e.total_mass_kg - (clm.mass_kg + 6.0)) < MASS_TOL_KG
    assert e.mass_std_kg < 1e-6 and e.horizontal_residual_n < 1e-6
    assert abs(e.still_s - pid.config.window_s) < 2 * DT  # the window is full, at its length


def test_payload_height_is_unobservable(nominal):
    """Unit: the same payload 30 cm higher (world vertical; the base is tilted) gives the same
    estimate (static wrenches carry no p_z)."""
    lever = np.array([0.05, -0.03, 0.2])
    _, q, est, pid, f, _ = setup(nominal, lever=lever)
    feed(pid, est, q, Forces(1600, lambda t: f))
    low = pid.estimate
    up_in_base = pin.XYZQUATToSE3(q[:7]).rotation.T @ np.array([0.0, 0.0, 0.3])
    _, q, est, pid, f, _ = setup(nominal, lever=lever + up_in_base)
    feed(pid, est, q, Forces(1600, lambda t: f))
    high = pid.estimate
    assert low.confident and high.confident
    assert abs(low.mass_kg - high.mass_kg) < MASS_TOL_KG
    np.testing.assert_allclose(low.first_moment_xy_kg_m, high.first_moment_xy_kg_m, atol=1e-6)


def test_model_told_reads_zero_and_withholds_the_com(nominal):
    """Unit: the robot the model describes weighs 0 kg more; the CoM of nothing is not given."""
    _, q, est, pid, f, _ = setup(nominal, mass_kg=0.0)
    feed(pid, est, q, Forces(1600, lambda t: f))
    e = pid.estimate
    assert e.confident
    assert abs(e.mass_kg) < MASS_TOL_KG
    assert np.all(np.isnan(e.com_xy_in_world_m))


@pytest.mark.parametrize("what", ["base speed", "base rate", "actuator speed", "sway"])
def test_no_identification_while_moving(nominal, what):
    """Unit: the same payload, but the state estimate says the robot moves: no sample, nothing
    reported (a sway: 3 cm at 0.6 Hz, whose velocity vanishes only at its turning points)."""
    clm, q, est, pid, f, _ = setup(nominal)
    v = np.zeros(clm.model.nv)
    v_of_t = None
    if what == "base speed":
        v[1] = 0.02
    elif what == "base rate":
        v[3] = 0.1
    elif what == "actuator speed":
        v[clm.idx_v_a[3]] = 0.01
    else:  # the base's lateral velocity and the momentum of the whole robot follow the sway
        w = 2 * np.pi * 0.6

        def v_of_t(t):
            vt = np.zeros(clm.model.nv)
            vt[1] = 0.03 * w * np.cos(w * t)
            return vt
    feed(pid, est, q, Forces(3000, lambda t: f), v=v, v_of_t=v_of_t)
    assert pid.identified is None and not pid.estimate.confident
    assert pid.blocks_total == 0, f"{pid.blocks_total} blocks counted while moving"


def test_no_identification_on_one_sole(nominal):
    """Unit: all the weight on one sole: not standing on both, no sample."""
    clm, q, est, pid, _, _ = setup(nominal)
    g_b = pin.computeGeneralizedGravity(clm.model, clm.model.createData(), q)[:6]
    right_only = np.linalg.lstsq(est.J_cb_T[:, 6:], g_b, rcond=None)[0]
    f = np.r_[np.zeros(6), right_only]
    feed(pid, est, q, Forces(2000, lambda t: f))
    assert pid.blocks_total == 0 and pid.identified is None


def test_a_payload_put_on_while_standing_waits_for_the_window(nominal):
    """Unit: 0 kg, then 6 kg from t = 2 s without motion: no confident estimate between (the
    window's halves and its newest 0.1 s disagree), 6 kg once the old blocks have left it."""
    _, q, est, pid, f6, _ = setup(nominal)
    _, _, _, _, f0, _ = setup(nominal, mass_kg=0.0)
    masses = []
    forces = Forces(4600, lambda t: f0 if t < 2.0 else f6)
    t = 0.0
    for t in DT * np.arange(1, 1 + forces.n):
        est.update_model(q, np.zeros(est.model.nv))
        est.estimate_wrenches(actuator_force=forces(t, est))
        e = pid.update(est, q, np.zeros(est.model.nv), t)
        if e.confident:
            masses.append((t, e.mass_kg))
    # the one block that holds the change (its first tick's 0.6 kg, or 5.4 kg) may be in a
    # confident window: 0.03 kg at most, at either end of the transition; no more
    wrong = [(t, m) for t, m in masses if min(abs(m), abs(m - 6.0)) > 0.05]
    assert not wrong, f"confident mixtures: {wrong[:3]}"
    assert any(abs(m) < 1e-6 for t, m in masses if t < 2.0)
    late = [t for t, m in masses if abs(m - 6.0) < 0.05]
    assert late and 2.0 + pid.config.window_s - 0.3 < late[0] <= 2.0 + pid.config.window_s + 0.02


def test_noise_gives_the_spread_and_the_mean(nominal):
    """Unit: white actuator-force noise (5 N rms): the mean within a few standard errors of 6 kg,
    the reported standard deviation that of the blocks."""
    clm, q, est, pid, f, _ = setup(nominal)
    rng = np.random.default_rng(3)

    class Noisy(Forces):
        def __call__(self, t, estimator):
            return super().__call__(t, estimator) + rng.normal(0.0, 5.0, clm.n_a)

    feed(pid, est, q, Noisy(2500, lambda t: f))
    e = pid.estimate
    assert e.blocks == 200 and e.mass_std_kg > 0.01
    assert abs(e.mass_kg - 6.0) < 5 * e.mass_stderr_kg + 1e-3


def test_model_change_restarts_the_window(nominal):
    """Unit: the model told of a payload (``add_payload``: ``inertia_version`` moves) restarts the
    window: what was unmodelled is modelled now."""
    clm = load_kangaroo(floating_base=True)  # its own: add_payload changes it
    q = nominal[1]
    _, _, est0, pid, f, _ = setup((clm, q))
    est = ContactWrenchEstimator(clm, SOLES)
    feed(pid, est, q, Forces(1600, lambda t: f))
    assert pid.estimate.confident
    clm.add_payload("base_link", 1.0)
    feed(pid, est, q, Forces(50, lambda t: f), t0=1.6)
    assert not pid.estimate.confident and pid.estimate.blocks <= 5


def test_errors(nominal):
    """Unit: wrong settings are named errors."""
    clm, q = nominal
    with pytest.raises(InputError, match="window_s"):
        PayloadIdentificationConfig(window_s=0.0)
    with pytest.raises(InputError, match="min_still_s"):
        PayloadIdentificationConfig(min_still_s=3.0, window_s=2.0)
    with pytest.raises(InputError, match="block_samples"):
        PayloadIdentificationConfig(block_samples=0)
    fixed = load_kangaroo(floating_base=False)
    with pytest.raises(ConfigError, match="floating-base"):
        PayloadIdentifier(fixed)
    paper = ContactWrenchEstimator(clm, SOLES, config=ContactWrenchConfig(base_row_weight=0.0))
    paper.update(q, actuator_force=np.zeros(clm.n_a), v=np.zeros(clm.model.nv))
    with pytest.raises(ConfigError, match="base rows"):
        PayloadIdentifier(clm).update(paper, q, np.zeros(clm.model.nv), 0.0)
    with pytest.raises(ConfigError, match="base rows"):
        ContactWrenchEstimation(clm, paper_screws(clm), ContactWrenchConfig(base_row_weight=0.0),
                                ContactWrenchSettings(payload_identification=True))


def test_component_freezes_the_torque_bias_at_the_tare(nominal):
    """Unit: the wrench component with identification and the learnt torque bias: the bias learns a
    sensor offset until the identification is first confident, then stays; the ``payload`` status
    reports the estimate."""
    clm, q = nominal
    screws = paper_screws(clm)
    comp = ActuatorCompensation(actuator_model=False, rotor_inertia=False, torque_bias=True)
    cw = ContactWrenchEstimation(clm, screws, settings=ContactWrenchSettings(payload_identification=True),
                                 compensation=comp)
    est = cw.estimator
    est.update_model(q, np.zeros(clm.model.nv))
    f, _ = true_wrenches(clm, q, est, 0.0, (0.0, 0.0, 0.0))
    force = est.g_pa - est.J_cm_T @ f
    gain = screws.paper_gain  # eq. (47): the force model without its switch and friction
    offset = np.zeros(clm.n_a)
    offset[3] = 0.05  # a current-sensor offset [N·m] on the left leg-length actuator
    cw.set_released(True)
    frozen_at = None
    for k in range(2500):
        t = k * DT
        cw.on_state(q, np.zeros(clm.model.nv), t)
        cw.step(ActuatorSample(np.zeros(clm.n_a), np.zeros(clm.n_a), force / gain + offset, t))
        if frozen_at is None and cw.identified_payload is not None:
            frozen_at, bias = t, cw.forces.bias_nm.copy()
    assert frozen_at is not None
    assert abs(bias[3]) > 0.5 * offset[3]  # it learnt before
    np.testing.assert_array_equal(cw.forces.bias_nm, bias)  # and not after
    events = [e.message for e in cw.drain_events()]
    assert any("torque bias frozen" in m for m in events), events
    status = {s.name: s for s in cw.statuses()}["payload"]
    assert status.values["confident"] and status.values["bias_frozen"]
