"""Exact actuator <-> serial-joint maps on small closed chains (unit tests: no ROS, no simulator).

The oracles are independent of the mapping Jacobian under test: finite differences of closure FK
for the velocity map, and the null space of ``J_l`` (an SVD) for the force map: two generalised
force vectors act alike on the closed chain iff they differ by a constraint force ``J_l^T lambda``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from kangaroo_wbc.errors import ClosureFkError, InputError, JointNotFound, ModelError
from kangaroo_wbc.model.serial_map import SerialJointMap
from test.model.conftest import load

SEED = 3
#: Round trips and force equivalence [m, rad, relative].
TOL = 1e-9
#: Central finite differences of closure FK, step 1e-6 [m], relative to the largest entry of ``A``.
FD_TOL = 1e-6

OUTPUTS = {"rrpr": ["pivot_b"], "u2ups": ["platform_pitch", "platform_roll"]}


def equivalent_generalised_forces(clm, q, tau_a, tau_y, out_names) -> float:
    """``||N^T (S_a^T tau_a - S_y^T tau_y)|| / ||tau_a||`` with ``N`` an orthonormal basis of
    ``null(J_l)``: 0 when both do the same virtual work in every motion of the closed chain."""
    m = clm.model
    g_a, g_y = np.zeros(m.nv), np.zeros(m.nv)
    g_a[clm.idx_v_a] = tau_a
    for name, t in zip(out_names, tau_y):
        g_y[m.joints[m.getJointId(name)].idx_v] += t
    N = scipy.linalg.null_space(clm.constraint_jacobian(q))
    return float(np.linalg.norm(N.T @ (g_a - g_y)) / np.linalg.norm(tau_a))


@pytest.fixture(scope="module", params=sorted(OUTPUTS))
def mech(request, mechanism_dir):
    """(model, map) of one small mechanism (unit-test data)."""
    clm = load(request.param, mechanism_dir)
    return clm, SerialJointMap(clm, OUTPUTS[request.param])


def _sample(clm, rng):
    """Actuators in the middle 40 % of their strokes (all reachable), random velocities."""
    lo, hi = clm.model.lowerPositionLimit[clm.idx_q_a], clm.model.upperPositionLimit[clm.idx_q_a]
    return lo + (hi - lo) * (0.3 + 0.4 * rng.random(clm.n_a)), rng.normal(size=clm.n_a)


def test_round_trip_and_finite_differences(mech):
    clm, smap = mech
    rng = np.random.default_rng(SEED)
    for _ in range(10):
        theta, theta_dot = _sample(clm, rng)
        s = smap.to_serial(theta, theta_dot, clm.q_ref)
        back = SerialJointMap(clm, smap.output_joint_names).to_actuators(s.y, s.y_dot, clm.q_ref)
        assert np.max(np.abs(back.theta_a - theta)) <= TOL
        assert np.max(np.abs(back.theta_dot_a - theta_dot)) <= TOL * max(1.0, np.max(np.abs(theta_dot)))
        # A against central differences of closure FK
        h = 1e-6
        A_fd = np.column_stack([
            (smap.to_serial(theta + h * e, np.zeros(clm.n_a), s.q).y
             - smap.to_serial(theta - h * e, np.zeros(clm.n_a), s.q).y) / (2 * h) for e in np.eye(clm.n_a)])
        A = smap.output_jacobian(s.q)
        assert np.max(np.abs(A_fd - A)) <= FD_TOL * max(1.0, np.max(np.abs(A)))


def test_serial_torques_do_the_actuators_virtual_work(mech):
    clm, smap = mech
    rng = np.random.default_rng(SEED + 1)
    for _ in range(10):
        theta, theta_dot = _sample(clm, rng)
        s = smap.to_serial(theta, theta_dot, clm.q_ref)
        tau_a = rng.normal(size=clm.n_a)
        tau_y = smap.serial_torques(s.q, tau_a)
        assert equivalent_generalised_forces(clm, s.q, tau_a, tau_y, smap.output_joint_names) <= TOL
        assert tau_y @ s.y_dot == pytest.approx(tau_a @ theta_dot, rel=1e-12, abs=1e-12)
        assert np.allclose(smap.actuator_forces(s.q, tau_y), tau_a, rtol=0, atol=1e-12)


def test_bad_names_and_inputs(mechanism_dir):
    clm = load("u2ups", mechanism_dir)
    with pytest.raises(JointNotFound, match="actuated joint"):
        SerialJointMap(clm, ["left_actuator", "platform_roll"])
    with pytest.raises(JointNotFound, match="platform_pitch"):
        SerialJointMap(clm, ["platform_ptich", "platform_roll"])
    with pytest.raises(ModelError, match="duplicated"):
        SerialJointMap(clm, ["platform_roll", "platform_roll"])
    with pytest.raises(ModelError, match="2 actuators"):
        SerialJointMap(clm, ["platform_roll"])
    smap = SerialJointMap(clm, ["platform_pitch", "platform_roll"])
    with pytest.raises(InputError, match="actuator forces"):
        smap.serial_torques(clm.q_ref, [1.0, np.nan])
    with pytest.raises(InputError, match="serial joint positions"):
        smap.to_actuators([0.1], [0.0, 0.0])
    past_stroke = r"outside the reachable set.*left_actuator \S+ not in \[-0.05, 0.05\]"
    with pytest.raises(ClosureFkError, match=past_stroke):
        smap.to_actuators([1.4, 1.4], [0.0, 0.0], clm.q_ref)
