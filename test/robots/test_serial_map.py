"""The Kangaroo's serial joint space through the exact closed-chain maps (unit tests: no ROS).

Six serial-equivalent joints per leg, in the order of PAL's controllers (hip yaw, hip pitch, hip
roll, knee, ankle pitch, ankle roll), mapped to and from the 12 actuators over the reachable set
(uniform strokes, redrawn while a passive joint is past its limit). Oracles: the state round trip,
finite differences of closure FK, and the null space of ``J_l`` for the generalised forces.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.serial_map import SerialJointMap
from kangaroo_wbc.robots.kangaroo.robot import standing_configuration
from test.model.test_serial_map import equivalent_generalised_forces
from test.robots.conftest import CLOSURES, URDF

SEED = 11
N_SAMPLES = 40
#: Round trip [m, rad] and force equivalence (relative to ||tau_a||).
TOL = 1e-9
ORDER = ("hip_yaw", "hip_pitch", "hip_roll", "knee", "ankle_pitch", "ankle_roll")


@pytest.fixture(scope="module", params=[False, True], ids=["fixed_base", "floating_base"])
def kmap(request) -> SerialJointMap:
    """The full model and its serial map in PAL's joint order (unit-test data)."""
    clm = ClosedLoopModel.from_files(URDF, CLOSURES, floating_base=request.param)
    return SerialJointMap(clm, [f"{s}_{k}_joint" for s in ("left", "right") for k in ORDER])


def reachable_states(clm: ClosedLoopModel, rng: np.random.Generator, n: int):
    """``n`` random closed configurations of the reachable set with random actuator velocities."""
    m = clm.model
    lo, hi = m.lowerPositionLimit[clm.idx_q_a], m.upperPositionLimit[clm.idx_q_a]
    lim = clm.passive_joint_limits()
    out = []
    while len(out) < n:
        q, _ = clm.closure_fk(lo + (hi - lo) * rng.random(clm.n_a), clm.q_ref)
        if np.all(q[lim.idx_q] >= lim.lower - 1e-9) and np.all(q[lim.idx_q] <= lim.upper + 1e-9):
            out.append((q, rng.normal(scale=0.05, size=clm.n_a)))
    return out


def test_serial_actuator_serial_round_trip(kmap):
    clm = kmap.clm
    start = standing_configuration(clm)
    worst = {"theta": 0.0, "theta_dot": 0.0, "y": 0.0, "y_dot": 0.0}
    for q, theta_dot in reachable_states(clm, np.random.default_rng(SEED), N_SAMPLES):
        s = kmap.to_serial(q[clm.idx_q_a], theta_dot, q)
        a = kmap.to_actuators(s.y, s.y_dot, start)  # from the standing pose: the branch is kept
        back = kmap.to_serial(a.theta_a, a.theta_dot_a, start)
        for key, err in (("theta", a.theta_a - q[clm.idx_q_a]), ("theta_dot", a.theta_dot_a - theta_dot),
                         ("y", back.y - s.y), ("y_dot", back.y_dot - s.y_dot)):
            worst[key] = max(worst[key], float(np.max(np.abs(err))))
    assert max(worst.values()) <= TOL, worst


def test_serial_torques_and_actuator_forces_give_the_same_generalised_forces(kmap):
    clm = kmap.clm
    rng = np.random.default_rng(SEED + 1)
    worst = 0.0
    for q, theta_dot in reachable_states(clm, rng, N_SAMPLES):
        tau_a = rng.normal(scale=1000.0, size=clm.n_a)
        tau_y = kmap.serial_torques(q, tau_a)
        worst = max(worst, equivalent_generalised_forces(clm, q, tau_a, tau_y, kmap.output_joint_names))
        y_dot = kmap.output_jacobian(q) @ theta_dot
        assert tau_y @ y_dot == pytest.approx(tau_a @ theta_dot, rel=1e-9)
    assert worst <= TOL


def test_output_jacobian_against_closure_fk_differences(kmap):
    clm = kmap.clm
    q = standing_configuration(clm)
    theta, h = q[clm.idx_q_a], 1e-6
    cols = []
    for e in np.eye(clm.n_a):
        yp = kmap.to_serial(theta + h * e, np.zeros(clm.n_a), q).y
        ym = kmap.to_serial(theta - h * e, np.zeros(clm.n_a), q).y
        cols.append((yp - ym) / (2 * h))
    A = kmap.output_jacobian(q)
    assert np.max(np.abs(np.column_stack(cols) - A)) <= 1e-6 * np.max(np.abs(A))
    # each leg's serial joints depend on that leg's actuators only
    left = [i for i, n in enumerate(clm.actuated_joint_names) if n.startswith("left_")]
    assert np.all(A[:6][:, [i for i in range(clm.n_a) if i not in left]] == 0.0)


def test_compiled_solve_against_the_damped_newton_oracle(kmap, monkeypatch):
    """The compiled held-outputs Newton (block LU) gives the configuration of the readable damped
    Newton (ClosedLoopModel.newton over the same unknowns), and its velocity map is A's inverse
    (A from J_lu's LU, an independent factorisation); with the compiled path failing, the damped
    Newton takes over and gives the same state."""
    clm = kmap.clm
    rng = np.random.default_rng(SEED + 2)
    fallback = SerialJointMap(clm, kmap.output_joint_names)
    monkeypatch.setattr(fallback, "_held_newton", lambda q, tol, max_iter: (q, None, False))
    for q, theta_dot in reachable_states(clm, rng, 10):
        s = kmap.to_serial(q[clm.idx_q_a], theta_dot, q)
        guess = q.copy()
        guess[clm.idx_q_a] += 1e-3  # a nearby guess, as at 1 kHz
        a = kmap.to_actuators(s.y, s.y_dot, guess)
        start = guess.copy()
        start[kmap.idx_q_out] = s.y
        oracle, info = clm.newton(start, 50, 1e-12, unknowns=kmap.idx_v_unknown)
        assert info.converged and np.max(np.abs(a.q - oracle)) <= TOL
        A = kmap.output_jacobian(a.q)
        assert np.max(np.abs(a.A - A)) <= TOL * np.max(np.abs(A))
        assert np.max(np.abs(a.theta_dot_a - np.linalg.solve(A, s.y_dot))) <= TOL
        b = fallback.to_actuators(s.y, s.y_dot, guess)
        assert np.max(np.abs(b.theta_a - a.theta_a)) <= TOL and np.max(np.abs(b.theta_dot_a - a.theta_dot_a)) <= TOL


def test_the_other_assembly_branch_is_refused_at_the_boundarys_tolerance():
    """With coarse continuation steps (0.15 rad) some sampled serial states converge to the ankle
    chains' other assembly branch; every one of them is refused with the boundary's measured-limit
    tolerance (a few mm past a stop passes), every right one is kept."""
    from kangaroo_wbc.components.ros2_control.boundary import MEASURED_LIMIT_TOLERANCE
    from kangaroo_wbc.errors import ClosureFkError

    clm = ClosedLoopModel.from_files(URDF, CLOSURES, floating_base=True)
    coarse = SerialJointMap(clm, [f"{s}_{k}_joint" for s in ("left", "right") for k in ORDER], max_step_rad=0.15)
    start = standing_configuration(clm)
    refused = 0
    for q, theta_dot in reachable_states(clm, np.random.default_rng(0), 100):
        s = coarse.to_serial(q[clm.idx_q_a], theta_dot, q)
        try:
            a = coarse.to_actuators(s.y, s.y_dot, start, limit_tolerance=MEASURED_LIMIT_TOLERANCE)
        except ClosureFkError:
            refused += 1
            continue
        assert np.max(np.abs(a.theta_a - q[clm.idx_q_a])) <= TOL  # never a wrong state
    assert refused >= 1  # the sample reaches the other branch, and it is refused
