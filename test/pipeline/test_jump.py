"""The jump: the model's geometry behind its take-off, and the closed loop through the flight.

Integration tests (closure FK of the Kangaroo model; the simulator → estimators → WBC loop, no
ground truth fed back; the metrics read the simulator's truth).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.robots.kangaroo.robot import SOLES, load_kangaroo
from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig


def _pelvis_in_sole(clm, data, theta, q_guess):
    """Closure FK at the actuator strokes ``theta``: the pelvis pose in the left sole's frame and the
    closed configuration."""
    q, _ = clm.closure_fk(theta, q_guess=q_guess)
    pin.framesForwardKinematics(clm.model, data, q)
    return data.oMf[clm.model.getFrameId(SOLES["left"])].inverse(), q


def test_with_the_ankles_held_a_flat_footed_push_moves_the_com_mostly_horizontally():
    """Why a take-off with the ankle actuators held cannot be vertical in this model: with the
    ankle strokes fixed and the sole flat on the floor, extending the leg from a 58 mm crouch to
    20 mm moves the whole-body CoM more than twice as far horizontally as vertically, whatever the
    hip pitch (it turns the pelvis about the hip, whose CoM lies near the hip axes)
    (docs/locomotion.md, "Jump")."""
    clm = load_kangaroo(floating_base=False)
    data = clm.model.createData()
    names = clm.actuated_joint_names
    hip = [i for i, n in enumerate(names) if "hip_inner" in n or "hip_outer" in n]
    leg = [i for i, n in enumerate(names) if "leg_length" in n]
    ankle = [i for i, n in enumerate(names) if "ankle" in n]
    q = None
    for a in (-0.02, -0.01):
        for h in (-0.02, 0.0, 0.02):
            com = []
            for L in (0.058, 0.020):
                theta = np.zeros(clm.n_a)
                theta[leg], theta[hip], theta[ankle] = L, h, a
                pelvis, q = _pelvis_in_sole(clm, data, theta, q)
                com.append(pelvis.act(pin.centerOfMass(clm.model, data, q)))
            dx, _, dz = com[1] - com[0]
            assert abs(dz) < 0.5 * abs(dx), (a, h, dx, dz)


def _airborne_ticks(run):
    """The longest interval with both soles off the ground (the simulator's truth), one tick of
    margin at each contact change, and the logged true state."""
    n = run.log.array("t").size
    q = run.log.array("q_true").reshape(n, -1)
    v = run.log.array("v_true").reshape(n, -1)
    airborne = ~np.any(run.log.array("contact_true").reshape(n, -1) > 0.5, axis=1)
    edges = np.flatnonzero(np.diff(np.r_[0, airborne.astype(int), 0]))
    starts, ends = edges[::2], edges[1::2]
    k = int(np.argmax(ends - starts))
    return range(starts[k] + 1, ends[k] - 1), q, v


def _momentum(run, ticks, q, v):
    """Whole-body angular momentum about the CoM [N·m·s] (pinocchio's centroidal momentum of the true state)."""
    model = run.clm.model
    data = model.createData()
    return np.array([pin.computeCentroidalMomentum(model, data, q[i], v[i]).angular.copy() for i in ticks])


@pytest.fixture(scope="module")
def jump_run():
    """Integration fixture: boot, jump (seeded), land and recover to standing."""
    run = ClosedLoopRun(LoopConfig(behaviour="jump", duration_s=5.0, seed=0))
    return run, run.run()


def test_the_jump_flies_lands_and_recovers(jump_run):
    """Both soles leave the ground for longer than issue #24's 0.08 s, the controller plans no
    contact in the air and holds the legs' strokes there; the robot lands, does not fall and is back
    to standing within the run; forces stay finite and within limits."""
    from kangaroo_wbc.control.behaviours import Jump

    run, s = jump_run
    assert s["flight_time_s"] >= 0.08, s
    assert s["apex_height_gain_m"] > 0.02, s
    assert s["fell"] is False and s["jump_completed"] is True, s
    assert s["peak_actuator_force_ratio"] <= 1.0
    tau = run.log.array("tau")
    assert np.all(np.isfinite(tau))
    phase = run.log.array("plan").reshape(-1, len(Jump.TRACE))[:, 0]
    flight = phase == Jump.PHASES.index("flight")
    airborne = ~np.any(run.log.array("contact_true").reshape(phase.size, -1) > 0.5, axis=1)
    # the planned flight overlaps the true one by most of its length
    assert np.count_nonzero(flight & airborne) > 0.7 * np.count_nonzero(flight)
    assert phase[-1] == Jump.PHASES.index("done")


def test_in_the_air_the_lift_off_angular_momentum_is_conserved(jump_run):
    """Why a jump lands pitched: once both soles are off the ground nothing but gravity (acting at
    the CoM) acts on the robot, so the whole-body angular momentum about the CoM (the simulator's
    truth, pinocchio's centroidal momentum) keeps the value the push left it; the legs' motion in
    the air only moves it between the bodies (docs/locomotion.md, "Jump")."""
    run, _ = jump_run
    ticks, q, v = _airborne_ticks(run)
    assert len(ticks) > 50
    momentum = _momentum(run, ticks, q, v)
    drift = np.linalg.norm(momentum - momentum[0], axis=1)
    assert np.max(drift) <= 0.02 * np.linalg.norm(momentum[0]) + 0.02, (momentum[0], np.max(drift))


def test_pitching_the_pelvis_back_in_the_push_lowers_the_lift_off_momentum(jump_run):
    """In this leg a vertical CoM velocity with the pelvis upright carries pitch angular momentum
    (the pelvis and thighs rise behind the CoM, the shanks move back below it). The default push
    pitches the pelvis back with the CoM's rise and weights the angular-momentum task; with the
    pelvis held upright (the previous push, 0.95 m/s) the robot leaves the ground with more than 1.8 times the
    pitch momentum, and lands on soles far behind its CoM (docs/locomotion.md, "Jump")."""
    run, _ = jump_run
    upright = ClosedLoopRun(LoopConfig(behaviour="jump", duration_s=2.9, seed=0, behaviour_options={
        "crouch_pitch_rad": 0.0, "push_pitch_gain_rad_per_m": 0.0, "push_momentum_weight": 0.01,
        "push_base_weight": 1.0, "takeoff_velocity_mps": 0.95}))
    upright.run()
    lift_off = []
    for r in (run, upright):
        ticks, q, v = _airborne_ticks(r)
        lift_off.append(_momentum(r, ticks[:1], q, v)[0])
    pitched, held = lift_off
    assert held[1] > 1.8 * pitched[1] > 0.0, (pitched, held)
    # the run's metric is the same quantity at the same tick (the first airborne one)
    summary = jump_run[1]
    assert summary["liftoff_pitch_momentum_nms"] == pytest.approx(pitched[1], abs=1e-9)
