"""Integration tests of the MuJoCo closed-chain simulator on the small test mechanisms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.sim.baseline_pd import BaselinePd
from kangaroo_wbc.sim.sensors import SensorConfig
from kangaroo_wbc.sim.simulator import ClosedChainSim
from test.sim.conftest import MECHANISMS, paths

CLOSURE_TOL_M = 1e-4  # [m] loops must stay closed while the actuators drive the mechanism
FK_TOL = 1e-8  # [rad], [m] MuJoCo closure solve vs the core's closure FK
WRENCH_SUM_RTOL = 0.01  # contact forces at rest sum to m*g within 1 %

#: per mechanism: (actuator amplitude around 0 [m] or [rad], PD gains kp, kd, start offset)
DRIVE = {
    "four_bar": (0.8, 20.0, 1.0, 0.0),
    "rrpr": (0.03, 2e4, 300.0, 0.0),
    "rrpr_prismatic_cut": (0.3, 400.0, 10.0, 0.3),
}


@pytest.mark.parametrize("name", MECHANISMS)
def test_initial_configuration_matches_core_closure_fk(name, mjcf_fixed):
    theta = [DRIVE[name][3] + 0.5 * DRIVE[name][0]]
    sim = ClosedChainSim(mjcf_fixed[name], initial_actuator_positions=theta)
    assert sim.last_closure_solve.converged
    clm = ClosedLoopModel.from_files(*paths(name))
    q_sim = sim.joint_positions_by_name()
    q_guess = clm.q_ref.copy()
    for n in clm.joint_names:
        q_guess[clm.model.joints[clm.model.getJointId(n)].idx_q] = q_sim[n]
    q, info = clm.closure_fk(np.array(theta), q_guess=q_guess)
    assert info.converged and info.iterations <= 2  # the MuJoCo solution is already closed
    for n in clm.joint_names:
        assert q[clm.model.joints[clm.model.getJointId(n)].idx_q] == pytest.approx(q_sim[n], abs=FK_TOL)


@pytest.mark.parametrize("name", MECHANISMS)
def test_loops_stay_closed_while_driving(name, mjcf_fixed):
    amp, kp, kd, start = DRIVE[name]
    sim = ClosedChainSim(mjcf_fixed[name], initial_actuator_positions=[start])
    pd = BaselinePd(kp, kd, 1)
    worst = 0.0
    period = 1.0  # [s]
    for k in range(1500):
        t = k * sim.timestep
        ref = start + amp * math.sin(2 * math.pi * t / period)
        dref = amp * 2 * math.pi / period * math.cos(2 * math.pi * t / period)
        cmd = pd.compute(sim.actuator_positions(), sim.actuator_velocities(), [ref], [dref],
                         tau_ff=sim.actuator_bias_forces())
        sim.set_command(cmd)
        sim.step()
        worst = max(worst, sim.ground_truth().max_closure_violation_m)
    assert worst < CLOSURE_TOL_M
    # the actuator really moved over most of its stroke
    assert abs(sim.actuator_positions()[0] - start) < 2 * amp
    assert sim.real_time_factor > 1.0


def test_resting_on_floor_contact_forces_sum_to_weight(mjcf_rrpr_floating):
    sim = ClosedChainSim(mjcf_rrpr_floating, seed=2)
    pd = BaselinePd(2e4, 300.0, 1)
    for _ in range(800):
        sim.set_command(pd.compute(sim.actuator_positions(), sim.actuator_velocities(), [0.0],
                                   tau_ff=sim.actuator_bias_forces()))
        sim.step()
    gt = sim.ground_truth()
    w = gt.contacts["sole"]
    weight = sim.total_mass_kg * 9.81
    assert w.in_contact and w.n_contacts >= 3
    assert w.force_in_sole[2] == pytest.approx(weight, rel=WRENCH_SUM_RTOL)
    assert np.linalg.norm(w.force_in_sole[:2]) < WRENCH_SUM_RTOL * weight
    # CoP inside the sole and on the side of the heavy lever (+x)
    assert 0.0 < w.cop_in_sole[0] < 0.15 and abs(w.cop_in_sole[1]) < 1e-3
    # the robot stands still on the floor
    assert abs(gt.base_position_in_world[2]) < 1e-3
    assert np.linalg.norm(gt.base_linear_velocity_in_world) < 1e-3
    assert gt.max_closure_violation_m < CLOSURE_TOL_M


def test_fixed_base_imu_measures_gravity(mjcf_fixed):
    sim = ClosedChainSim(mjcf_fixed["four_bar"], sensor_config=SensorConfig.noiseless())
    sim.set_command(sim.actuator_bias_forces())
    sim.step(5)
    imu = sim.read_sensors().imu
    assert imu is not None
    np.testing.assert_allclose(imu.linear_acceleration_imu_in_imu, [0, 0, 9.81], atol=1e-3)
    np.testing.assert_allclose(imu.orientation_xyzw, [0, 0, 0, 1], atol=1e-9)


def test_command_clamping_and_rejection(mjcf_fixed):
    sim = ClosedChainSim(mjcf_fixed["rrpr"])
    limit = sim.force_limits[0]
    rep = sim.set_command([10 * limit])
    assert rep.clamped == ["actuator"] and rep.applied[0] == limit
    rep = sim.set_command({"actuator": -3 * limit})
    assert rep.applied[0] == -limit
    rep = sim.set_command([1.0])
    assert rep.clamped == []
    before_q, before_t = sim.data.qpos.copy(), sim.time
    for bad in ([math.nan], [math.inf], [1.0, 2.0], {"actuatr": 1.0}, ["x"]):
        with pytest.raises(InputError):
            sim.set_command(bad)
        np.testing.assert_array_equal(sim.command, [1.0])
    np.testing.assert_array_equal(sim.data.qpos, before_q)
    assert sim.time == before_t
    sim.step(3)
    assert sim.ground_truth().actuator_forces[0] == pytest.approx(1.0)


def test_same_seed_same_trajectory_and_readings(mjcf_fixed):
    def run(seed):
        sim = ClosedChainSim(mjcf_fixed["rrpr"], seed=seed)
        out = []
        for k in range(200):
            sim.set_command([50.0 * math.sin(0.01 * k)])
            sim.step()
            r = sim.read_sensors()
            out.append(np.concatenate([sim.data.qpos, r.actuator_position, r.motor_torque,
                                       r.imu.linear_acceleration_imu_in_imu]))
        return np.array(out)

    a, b, c = run(4), run(4), run(5)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_substeps_and_timestep(mjcf_fixed):
    sim = ClosedChainSim(mjcf_fixed["four_bar"], substeps=2)
    assert sim.timestep == pytest.approx(0.001) and sim.physics_timestep == pytest.approx(0.0005)
    sim.step(10)
    assert sim.time == pytest.approx(0.01)
    with pytest.raises(InputError):
        ClosedChainSim(mjcf_fixed["four_bar"], substeps=0)


def test_ground_truth_by_name(mjcf_fixed):
    sim = ClosedChainSim(mjcf_fixed["rrpr"], initial_actuator_positions={"actuator": 0.02})
    gt = sim.ground_truth()
    assert gt.joint_names == ["output_joint", "cylinder_joint", "actuator"]
    assert gt.joint_position("actuator") == pytest.approx(0.02)
    # a longer actuator lifts the lever: rotation about +y is negative
    assert gt.joint_position("output_joint") < 0
    assert gt.contacts == {}
    np.testing.assert_allclose(gt.base_orientation_xyzw, [0, 0, 0, 1])


def test_third_party_digit_like_legs_close_and_stay_closed():
    """Integration: 6D closures with ball/universal joints (extended-URDF fixture), fixed base."""
    from test.model.conftest import third_party_dir

    d = third_party_dir("digit_like_2legs")
    from kangaroo_wbc.sim.mjcf_export import export_mjcf

    sim = ClosedChainSim(export_mjcf(d / "robot.urdf", d / "robot.yaml", floating_base=False, imu_frame=None))
    assert sim.last_closure_solve.converged
    pd = BaselinePd(200.0, 5.0, sim.n_actuators)
    theta0 = sim.actuator_positions()
    worst = 0.0
    for k in range(300):
        ref = theta0 + 0.1 * math.sin(2 * math.pi * k / 300)
        sim.set_command(pd.compute(sim.actuator_positions(), sim.actuator_velocities(), ref,
                                   tau_ff=sim.actuator_bias_forces()))
        sim.step()
        worst = max(worst, sim.closure_violation()[0])
    assert worst < CLOSURE_TOL_M


@pytest.mark.parametrize("integrator", ["IMPLICITFAST", "EULER", "RK4"])
def test_step_equals_mj_step_bit_for_bit(mjcf_rrpr_floating, integrator, monkeypatch):
    """The step reuses the sensor pass's position/velocity stages: same states and readings as
    mj_step + mj_forward, also across the crane, a state set from outside and substeps; so does
    the step in a worker thread (start_step / wait_step)."""
    import mujoco

    skips = []
    forward_skip = mujoco.mj_forwardSkip
    monkeypatch.setattr(mujoco, "mj_forwardSkip", lambda *a: (skips.append(1), forward_skip(*a)))

    def ref_step(sim):  # the plain scheme
        m, d = sim.model, sim.data
        d.ctrl[:] = sim._command
        for _ in range(sim.substeps):
            mujoco.mj_step(m, d)
            if sim._held_base is not None:
                d.qpos[:7] = sim._held_base
                d.qvel[:6] = 0.0
        mujoco.mj_forward(m, d)

    def async_step(sim):  # in a worker thread, the caller free meanwhile
        sim.start_step()
        sim.wait_step()

    runs = []
    for mode in ("step", "ref", "async"):
        out = []
        for substeps in (1, 2):
            sim = ClosedChainSim(mjcf_rrpr_floating, seed=3, substeps=substeps)
            sim.model.opt.integrator = getattr(mujoco.mjtIntegrator, f"mjINT_{integrator}")
            sim.hold_base(True)
            for k in range(300):
                if k == 100:
                    sim.hold_base(False)
                if k == 200:
                    sim.data.qvel[-1] += 0.1  # changed from outside: a full step must follow
                if k in (250, 260):
                    sim.data.eq_active[0] = k == 260  # a loop cut released for 10 steps, then again
                sim.set_command([80.0 * math.sin(0.02 * k)])
                if mode == "step":
                    sim.step()
                else:
                    (ref_step if mode == "ref" else async_step)(sim)
                out.append(np.concatenate([sim.data.qpos, sim.data.qvel, sim.data.sensordata,
                                           sim.data.actuator_force]))
        runs.append(np.array(out))
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[0], runs[2])
    # every step but the first after a boot or an outside change (and none for RK4) skipped
    assert len(skips) == (0 if integrator == "RK4" else 2 * (300 - 4))
    assert np.ptp(runs[0][:, 2]) > 1e-4  # the base moved after the release: the test exercises contact


def test_step_in_a_worker_thread_is_guarded(mjcf_rrpr_floating):
    """start_step twice without wait_step is refused; wait_step without a step is a no-op; the
    caller's thread runs Python while the worker steps (MuJoCo releases the GIL)."""
    import threading

    sim = ClosedChainSim(mjcf_rrpr_floating, seed=1)
    sim.wait_step()  # nothing under way
    t0 = sim.time
    sim.start_step()
    with pytest.raises(InputError, match="still under way"):
        sim.start_step()
    sim.wait_step()
    assert sim.time == pytest.approx(t0 + sim.timestep)
    assert any(t.name == "mujoco-step" for t in threading.enumerate())
    sim.step()  # a plain step after the worker's: every stage recomputed
    assert sim.time == pytest.approx(t0 + 2 * sim.timestep)
