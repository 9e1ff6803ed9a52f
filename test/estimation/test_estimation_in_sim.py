"""Integration tests: calibration, passive-state and wrench estimators on the MuJoCo simulator.

The Kangaroo hangs from a crane (fixed base, no contact) with noisy hardware-like sensors
(relative encoders with boot offsets, motor torques, passive absolute encoders). An actuator PD
holds it still (calibration window), then moves every actuator sinusoidally.

The MuJoCo export closes the ``[x, y, z, rz]`` rod-end loops with a cut body carrying two hinges
(a universal joint); the model's closure row for those cuts is exact for a universal joint, so the
idle *spin* of the rods (``*_spin`` joints) is estimated like every other passive joint.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.estimation.calibration import EncoderCalibrator
from kangaroo_wbc.estimation.contact_wrench import ContactWrenchConfig, ContactWrenchEstimator
from kangaroo_wbc.estimation.passive_state import PassiveStateEstimator
from test.estimation.conftest import KANGAROO_SOLES, model

pytestmark = pytest.mark.integration

CALIBRATION_TOL_M = 2e-5  # [m] offset error with the simulator's default sensor noise
POSITION_RMSE_TOL = 5e-4  # [rad] passive joints, during motion
SPIN_TOL = 1e-4  # [rad] rod spins (a log3 closure row slid them by ~5e-3 rad)
ACTUATOR_TOL_M = 5e-5  # [m] actuated joints (encoder noise 1e-6 m + calibration)
HANGING_WRENCH_TOL = 1.0  # [N], [N·m] static, no contact (motor-torque noise)


@pytest.fixture(scope="module")
def run(mechanism_dir):
    """Simulate calibration window, then 0.5 s of motion; record estimates and ground truth."""
    sim_mod = pytest.importorskip("kangaroo_wbc.robots.kangaroo.sim")
    from kangaroo_wbc.sim.baseline_pd import BaselinePd

    clm = model("kangaroo", mechanism_dir, True)
    theta0 = np.zeros(clm.n_a)
    theta0[[clm.actuated_joint_names.index(n) for n in clm.actuated_joint_names if "leg_length" in n]] = 0.05
    # ideal actuators: the hanging wrench checks the eq. (47) algebra against the motor-torque noise
    # (the ball-screw drives are measured by `kangaroo-wbc evaluate estimation`)
    sim = sim_mod.make_kangaroo_sim(floating_base=False, seed=3, initial_actuator_positions=theta0,
                                    ideal_actuators=True)
    assert sim.actuator_names == clm.actuated_joint_names
    pd = BaselinePd(kp=20000.0, kd=400.0, n_actuators=clm.n_a)
    ref0 = sim.actuator_positions()
    amp = np.tile([0.01, 0.02, 0.02, 0.03, 0.01, 0.01], 2)  # [m]
    w = 2 * np.pi * np.tile([0.5, 0.7, 0.9, 0.6, 0.8, 1.0], 2)  # [rad/s]

    def control(t: float, move: bool) -> None:
        ref = ref0 + (amp * np.sin(w * t) if move else 0.0)
        ref_dot = amp * w * np.cos(w * t) if move else np.zeros(clm.n_a)
        sim.set_command(pd.compute(sim.actuator_positions(), sim.actuator_velocities(), ref, ref_dot,
                                   tau_ff=sim.actuator_bias_forces()))
        sim.step()

    for _ in range(200):
        control(0.0, False)
    pos, vel, enc = [], [], {n: [] for n in sim.passive_encoder_names}
    for _ in range(200):
        control(0.0, False)
        r = sim.read_sensors()
        pos.append(r.actuator_position)
        vel.append(r.actuator_velocity)
        for n, x in zip(r.passive_encoder_names, r.passive_encoder_position):
            enc[n].append(x)
    calibration = EncoderCalibrator(clm).calibrate(np.array(pos), {k: np.array(v) for k, v in enc.items()},
                                                   np.array(vel))
    # hanging: the crane carries the weight, so only the actuated rows (eq. (46)) apply; the base rows
    # (Newton-Euler of a free robot) would put the weight on the soles
    wrench = ContactWrenchEstimator(clm, KANGAROO_SOLES,
                                    config=ContactWrenchConfig(filter_enabled=False, base_row_weight=0.0))
    est = PassiveStateEstimator(clm, q0=calibration.q)
    static_wrench = wrench.update(calibration.q, motor_torque=sim.read_sensors().motor_torque)
    static_wrench = static_wrench.wrench_sole_in_sole_raw.copy()
    m = clm.model
    names = list(clm.joint_names)
    gt_index = [sim.joint_names.index(n) for n in names]
    idx_q = np.array([m.joints[m.getJointId(n)].idx_q for n in names])
    errors = []
    for k in range(500):
        control(k * 1e-3, True)
        r = sim.read_sensors()
        est.update(calibration.correct(r.actuator_position), r.actuator_velocity)
        truth = sim.ground_truth().joint_positions[gt_index]
        errors.append(est.q_at_sample[idx_q] - truth)
    return {"clm": clm, "sim": sim, "calibration": calibration, "errors": np.array(errors), "names": names,
            "static_wrench": static_wrench, "estimator": est}


def test_calibration_recovers_the_boot_offsets(run):
    cal, sim = run["calibration"], run["sim"]
    assert cal.iterations <= 10
    assert np.max(np.abs(cal.offsets - sim.sensors.encoder_offset)) < CALIBRATION_TOL_M


def test_passive_state_tracks_the_simulator(run):
    names, err = run["names"], run["errors"]
    clm = run["clm"]
    spin = np.array(["spin" in n for n in names])
    actuated = np.array([n in clm.actuated_joint_names for n in names])
    rmse = np.sqrt(np.mean(err[:, ~actuated] ** 2))
    assert rmse < POSITION_RMSE_TOL, rmse
    assert np.max(np.abs(err[:, spin])) < SPIN_TOL
    assert np.max(np.abs(err[:, actuated])) < ACTUATOR_TOL_M
    assert run["estimator"].closure_error_norm < 1e-3


def test_hanging_robot_has_no_contact_wrench(run):
    assert np.max(np.abs(run["static_wrench"])) < HANGING_WRENCH_TOL
