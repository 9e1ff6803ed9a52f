"""Passive-joint limits of the whole-body QP (:mod:`kangaroo_wbc.control.constraints.passive_joint_limits`).

Unit tests (the generated Kangaroo model, no simulator): the rows are the passive joints' second
derivatives along the closure (oracle: closure FK and a central second difference), the bounds are
the damper of the module docstring, joints far from their limits get no row, and a bound the
actuators cannot meet is moved to what they can give. The integration test drives a swing foot's
orientation reference far outside the ankle's window in closed loop with MuJoCo.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.control.constraints import ActuatorStrokeLimits, PassiveJointLimits
from kangaroo_wbc.control.contacts import DecisionLayout
from kangaroo_wbc.control.wbc import WbcSettings, WholeBodyController
from kangaroo_wbc.model.closed_loop_model import PassiveLimits
from test.control.sim_harness import kangaroo_contacts, kangaroo_paths

#: second difference of closure FK: step [s] and tolerance [rad/s²] (FK residual 1e-13 / h² + O(h²))
FD_STEP_S = 1e-3
FD_TOL = 1e-4
#: the simulator's passive joints follow the controller's closure model to this much [rad]
#: (MuJoCo's soft loop constraints); measured 3e-4 rad at the ankle
SIM_TOL_RAD = 2e-3
#: how far past the margined limit the controller's own state may settle [rad]: the plant realises
#: the commanded accelerations only up to the model mismatch (measured 1.1e-4 rad; margin 0.02 rad)
STOP_TOL_RAD = 5e-4
#: the reduced controller's overshoot past the margined limit [rad]: its second QP trades eq. (30)
#: off (weighted lexicographic method), so the assembled solution balances the base rows only
#: approximately and the plant realises a slightly different swing acceleration (measured 0.61°)
REDUCED_OVERSHOOT_RAD = np.radians(1.0)


def _standing(clm):
    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    return standing_configuration(clm)


def _wbc(clm, **settings) -> WholeBodyController:
    return WholeBodyController(clm, kangaroo_contacts(clm.model), WbcSettings(**settings))


def test_rows_are_the_passive_accelerations_through_the_closures(kangaroo_fb):
    """Every limited passive joint gets a row (activation unbounded, a slot per joint) and the row
    ``T_u nu_dot + k_u`` equals the joint's second derivative along ``theta_a(t) = theta_a +
    theta_dot_a t + theta_ddot_a t² / 2`` computed by closure FK (base fixed: passive joints do
    not depend on it)."""
    clm = kangaroo_fb
    limits = clm.passive_joint_limits()
    wbc = _wbc(clm, passive_limit_rows=len(limits.names), passive_limit_activation_rad_s2=1e12)
    rng = np.random.default_rng(3)
    q0 = _standing(clm)
    theta0 = q0[clm.idx_q_a] + rng.uniform(-0.005, 0.005, clm.n_a)
    q0, _ = clm.closure_fk(theta0, q0, tol=1e-13)
    theta_dot, theta_ddot = rng.normal(0.0, 0.05, clm.n_a), rng.normal(0.0, 0.5, clm.n_a)
    nu = np.concatenate([np.zeros(6), theta_dot])
    wbc.pm.update(q0, nu)
    M, lo, hi = wbc.passive_limits.rows(wbc.pm, wbc.contact_terms(wbc.active_contacts))
    assert sorted(wbc.passive_limits.engaged) == sorted(limits.names)

    def passive(t: float) -> np.ndarray:
        q, _ = clm.closure_fk(theta0 + theta_dot * t + 0.5 * theta_ddot * t * t, q0, tol=1e-14, max_iter=50)
        return q[limits.idx_q]

    fd = (passive(FD_STEP_S) - 2.0 * passive(0.0) + passive(-FD_STEP_S)) / FD_STEP_S**2
    x = np.zeros(wbc.layout.n)
    x[wbc.layout.n_b:wbc.layout.n_nu] = theta_ddot
    rows = {wbc.passive_limits.limits.names[j]: s for s, j in enumerate(wbc.passive_limits.selected)}
    order = [rows[n] for n in limits.names]
    k_u = wbc.pm.k[limits.idx_v]
    np.testing.assert_allclose(M[order] @ x + k_u, fd, atol=FD_TOL)
    assert np.all(M[:, wbc.layout.n_nu:] == 0.0)  # no force columns


def test_bounds_are_the_damper_and_far_joints_get_no_row(kangaroo_fb):
    """At the standing pose at rest no joint is near a limit: no row. Moved to 0.01 rad from its
    (margined) upper limit, the ankle pitch gets the one row, bounded by ``2 d / dt^2 - k_u``."""
    clm = kangaroo_fb
    q = _standing(clm)
    wbc = _wbc(clm)
    pl = wbc.passive_limits
    wbc.pm.update(q, np.zeros(wbc.layout.n_nu))
    M, lo, hi = pl.rows(wbc.pm, wbc.contact_terms(wbc.active_contacts))
    assert pl.engaged == [] and np.all(M == 0.0) and np.all(np.isinf(lo)) and np.all(np.isinf(hi))

    m = clm.model
    name = "left_ankle_pitch_joint"
    iq = m.joints[m.getJointId(name)].idx_q
    upper = m.upperPositionLimit.copy()
    upper[iq] = q[iq] + wbc.settings.passive_limit_margin_rad + 0.01
    m.upperPositionLimit = upper
    try:
        wbc2 = _wbc(clm)
    finally:
        _restore_kangaroo_limits(clm)
    pl2 = wbc2.passive_limits
    wbc2.pm.update(q, np.zeros(wbc2.layout.n_nu))
    M, lo, hi = pl2.rows(wbc2.pm, wbc2.contact_terms(wbc2.active_contacts))
    assert pl2.engaged == [name]
    s = int(np.flatnonzero(pl2.selected >= 0)[0])
    dt = wbc2.settings.stroke_horizon_s
    k_u = wbc2.pm.k[m.joints[m.getJointId(name)].idx_v]
    assert hi[s] == pytest.approx(2.0 * 0.01 / dt**2 - k_u, rel=1e-9)
    velocity = m.velocityLimit[m.joints[m.getJointId(name)].idx_v]
    assert lo[s] == pytest.approx(-velocity / dt - k_u, rel=1e-9)  # the lower limit is far: the speed limit


def _restore_kangaroo_limits(clm) -> None:
    """The session fixture's model is shared: put the URDF's limits back."""
    from kangaroo_wbc.model import ClosedLoopModel

    urdf, closures, _ = kangaroo_paths()
    ref = ClosedLoopModel.from_files(urdf, closures, floating_base=True).model
    clm.model.upperPositionLimit = ref.upperPositionLimit.copy()
    clm.model.lowerPositionLimit = ref.lowerPositionLimit.copy()


def test_a_bound_the_actuators_cannot_meet_is_moved_to_their_reach():
    """One passive joint driven by one actuator (``theta_dot_u = 2 theta_dot_a``), moving at
    1 rad/s, 0.01 rad from its limit: the damper asks for -32 rad/s² of it; the actuator's box
    (±10) gives at most ±20: the row's upper bound becomes -20 (full braking), still feasible."""
    layout = DecisionLayout(0, 1, ())
    strokes = ActuatorStrokeLimits(layout, np.array([0]), np.array([-1.0]), np.array([1.0]), horizon_s=0.05,
                                   acceleration_max=10.0)
    limits = PassiveLimits(["u"], np.array([1]), np.array([1]), np.array([0]), np.array([-1.0]),
                           np.array([0.01]), np.array([np.inf]))
    con = PassiveJointLimits(layout, limits, strokes, slots=1, activation=1e9)
    T = np.array([[1.0], [2.0]])
    pm = SimpleNamespace(q=np.array([0.0, 0.0]), v=np.array([0.5, 1.0]), nu=np.array([0.5]), T=T,
                         k=np.zeros(2))
    M, lo, hi = con.rows(pm, {})
    assert M[0, 0] == 2.0
    assert 2.0 * (0.01 - 0.0 - 1.0 * 0.05) / 0.05**2 == pytest.approx(-32.0)  # what the damper asks
    assert hi[0] == pytest.approx(-20.0)  # what the actuator can give
    assert lo[0] <= hi[0]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(kangaroo_paths() is None, reason="urdf/kangaroo.* not generated")
def test_swing_ankle_driven_far_outside_its_window_stops_at_its_limit():
    """Closed loop with MuJoCo: weight shift to the right sole, then the left (swing) sole's
    orientation reference ramps to 60° of pitch — far outside the ankle's window. The controller's
    model has the left ankle pitch limited to +3° (the simulator keeps the URDF's +30°), so the
    passive-joint rows, not the strokes or the simulator, stop it: it stays at 3° minus the margin
    (the controller's state within the plant mismatch, the simulator's within its loop compliance), the QP never
    fails, and the controller names the limit. The swing sole's weight is lowered (0.3): the
    orientation task, unreachable by 57°, would otherwise trade the balance for it (it topples the
    robot at the default weight with or without the rows)."""
    from kangaroo_wbc.control.behaviours import BehaviourState, WeightShift
    from kangaroo_wbc.control.wbc import FrameReference
    from kangaroo_wbc.model import ClosedLoopModel
    from kangaroo_wbc.robots.kangaroo.robot import standing_actuator_positions
    from kangaroo_wbc.sim.simulator import ClosedChainSim
    from test.control.sim_harness import ClosedLoop

    urdf, closures, mjcf = kangaroo_paths()
    clm = ClosedLoopModel.from_files(urdf, closures, floating_base=True)
    m = clm.model
    name = "left_ankle_pitch_joint"
    jid = m.getJointId(name)
    iq, limit = m.joints[jid].idx_q, np.radians(3.0)
    upper = m.upperPositionLimit.copy()
    upper[iq] = limit
    m.upperPositionLimit = upper
    sim = ClosedChainSim(str(mjcf), seed=0, initial_actuator_positions=standing_actuator_positions(),
                         ideal_actuators=True)
    wbc = _wbc(clm, base_frame="base_link", foot_weight=0.3)
    loop = ClosedLoop(clm, sim, wbc)
    act = [clm.actuated_joint_names.index(n) for n in sim.actuator_names]
    ws = WeightShift(stance="right", shift_s=1.5, lift_s=0.8, hold_s=10.0, lift_height_m=0.04)
    q, v = loop.state()
    wbc.step(q, v)
    ws.start(sim.time, BehaviourState.from_controller(wbc))
    stop = limit - wbc.settings.passive_limit_margin_rad
    col = list(sim.ground_truth().joint_names).index(name)
    ctrl, truth, named = [], [], set()
    for _ in range(int(round(5.5 / sim.timestep))):
        q, v = loop.state()
        t = sim.time
        ref = ws.references(t)
        if t > 2.5 and "left" in ref.foot_poses:  # swing: pitch the sole's reference up to 60°
            fr = ref.foot_poses["left"]
            pitch = np.radians(60.0) * min(1.0, t - 2.5)
            ref.foot_poses["left"] = FrameReference(position=fr.position,
                                                    rotation=pin.rpy.rpyToMatrix(0.0, pitch, 0.0) @ fr.rotation)
        out = wbc.step(q, v, references=ref)  # raises NoSolutionFound on a QP failure
        sim.set_command(out.tau_a[act])
        sim.step()
        ctrl.append(q[iq])
        truth.append(sim.ground_truth().joint_positions[col])
        named.update(wbc.active_limits()["passive_joint_limits"])
    ctrl_a, truth_a = np.array(ctrl), np.array(truth)
    assert ctrl_a.max() <= stop + STOP_TOL_RAD  # the controller's state: not past the margin
    assert ctrl_a[-500:].min() >= stop - np.radians(0.5)  # it got there and stays (last 0.5 s)
    assert truth_a.max() <= stop + SIM_TOL_RAD < limit
    assert f"{name} upper" in named
    assert sim.ground_truth().base_position_in_world[2] > 0.8  # still standing


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.skipif(kangaroo_paths() is None, reason="urdf/kangaroo.* not generated")
def test_reduced_controller_stops_the_swing_ankle_at_its_limit():
    """The reduced formulation (:mod:`~kangaroo_wbc.control.reduced_wbc`) puts a swing leg's
    passive-limit rows in its second QP. Closed loop with MuJoCo, weight shift to the right sole with
    a low swing-sole weight (0.3): without the rows the left ankle drifts to its actuators' stroke
    end (about −21° of pitch); with the controller's model limiting that ankle to −10°, the rows
    stop it at −10° plus the margin (:data:`REDUCED_OVERSHOOT_RAD` on the way), the QP never fails,
    and the controller names the limit."""
    from kangaroo_wbc.control.behaviours import BehaviourState, WeightShift
    from kangaroo_wbc.control.reduced_wbc import ReducedWholeBodyController
    from kangaroo_wbc.model import ClosedLoopModel
    from kangaroo_wbc.robots.kangaroo.robot import standing_actuator_positions
    from kangaroo_wbc.sim.simulator import ClosedChainSim
    from test.control.sim_harness import ClosedLoop

    urdf, closures, mjcf = kangaroo_paths()
    name, limit = "left_ankle_pitch_joint", np.radians(-10.0)

    def run(rows: int) -> tuple[np.ndarray, set, float]:
        clm = ClosedLoopModel.from_files(urdf, closures, floating_base=True)
        m = clm.model
        iq = m.joints[m.getJointId(name)].idx_q
        lower = m.lowerPositionLimit.copy()
        lower[iq] = limit
        m.lowerPositionLimit = lower
        sim = ClosedChainSim(str(mjcf), seed=0, initial_actuator_positions=standing_actuator_positions(),
                             ideal_actuators=True)
        wbc = ReducedWholeBodyController(clm, kangaroo_contacts(m), WbcSettings(
            base_frame="base_link", foot_weight=0.3, passive_limit_rows=rows))
        loop = ClosedLoop(clm, sim, wbc)
        act = [clm.actuated_joint_names.index(n) for n in sim.actuator_names]
        ws = WeightShift(stance="right", shift_s=1.5, lift_s=0.8, hold_s=10.0, lift_height_m=0.04)
        q, v = loop.state()
        wbc.step(q, v)
        ws.start(sim.time, BehaviourState.from_controller(loop.full))
        angles, named = [], set()
        for _ in range(int(round(3.5 / sim.timestep))):
            q, v = loop.state()
            out = wbc.step(q, v, references=ws.references(sim.time))  # raises NoSolutionFound on a QP failure
            sim.set_command(out.tau_a[act])
            sim.step()
            angles.append(q[iq])
            named.update(wbc.active_limits()["passive_joint_limits"])
        return np.array(angles), named, float(sim.ground_truth().base_position_in_world[2])

    free, _, _ = run(0)
    assert free.min() < limit - np.radians(5.0)  # the control: without rows it passes the limit
    stop = limit + WbcSettings().passive_limit_margin_rad
    held, named, base_z = run(6)
    assert held.min() >= stop - REDUCED_OVERSHOOT_RAD
    assert abs(held[-500:] - stop).max() <= np.radians(0.5)  # it got there and stays (last 0.5 s)
    assert f"{name} lower" in named
    assert base_z > 0.8
