"""The contact-wrench estimator with a locked or a limp actuator (issue #25).

Algebra (unit tests, the real Kangaroo model standing): with a locked actuator the row of eq. (46)
leaves the least squares, so the wrenches are recovered whatever its motor torque reads, and the
lock's force is read off the removed row; a limp actuator's force is zero whatever its sensor reads;
back to ``active`` the estimate is that of an estimator that never changed.

Against the simulator (integration): the one-process closed loop (the MuJoCo Kangaroo with ideal
actuators, the whole-body controller standing) locks or disables an actuator; beside the loop, two
estimators take the same torque samples and state estimates, one told the mode at the fault's tick
(as the loop tells its own), one never told. The time-mean of each sole's raw wrench error against
MuJoCo's contact wrenches, over the standing ticks after the fault, is what is compared (the
per-tick error is dominated by the contact solver's tick-to-tick jitter, the same for both).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.components.contact_wrench import ContactWrenchEstimation, ContactWrenchSettings
from kangaroo_wbc.components.samples import ActuatorSample
from kangaroo_wbc.components.simulated_robot import SimulatedRobotConfig
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.estimation import paper_screws
from kangaroo_wbc.estimation.actuator_force import ActuatorCompensation
from kangaroo_wbc.estimation.contact_wrench import ContactWrenchConfig, ContactWrenchEstimator
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration
from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig
from test.estimation.conftest import KANGAROO_SOLES

ANKLE, LEG, HIP_YAW = "left_ankle_inner_actuator", "left_leg_length_actuator", "right_hip_yaw_actuator"
ANKLE_OUTER = "left_ankle_outer_actuator"


# ---------------------------------------------------------------------------------------------- algebra
@pytest.fixture(scope="module")
def standing():
    """The floating-base Kangaroo in its standing configuration, leaning a little (every actuator
    loaded), chosen sole wrenches and the actuator forces that balance them (quasi-static eq. (46))."""
    clm = load_kangaroo(floating_base=True)
    q = standing_configuration(clm)
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.02, -0.03, 0.1)).coeffs()
    probe = ContactWrenchEstimator(clm, KANGAROO_SOLES, config=ContactWrenchConfig(filter_enabled=False))
    probe.update_model(q)
    # the ground wrenches that balance gravity through the base rows, split unevenly between the soles
    f = np.linalg.lstsq(probe.J_cb_T, probe.g_base, rcond=None)[0]
    f += 0.3 * np.linalg.svd(probe.J_cb_T)[2][-1] * np.linalg.norm(f)  # a null-space part: uneven split
    tau = probe.g_pa - probe.J_cm_T @ f  # eq. (46): g_p,a - tau = J_c,m^T f
    return clm, q, f.reshape(2, 6), tau


def _estimator(clm, **cfg) -> ContactWrenchEstimator:
    return ContactWrenchEstimator(clm, KANGAROO_SOLES, config=ContactWrenchConfig(filter_enabled=False, **cfg))


@pytest.mark.parametrize("name", [ANKLE, LEG, HIP_YAW])
def test_a_locked_actuator_row_leaves_eq46_and_gives_the_lock_force(standing, name):
    clm, q, f, tau = standing
    k = clm.actuated_joint_names.index(name)
    assert abs(tau[k]) > 1.0  # the lock carries a load
    measured = tau.copy()
    measured[k] = 0.0  # no motor force on a seized screw: the lock carries it
    est = _estimator(clm)
    wrong = est.update(q, actuator_force=measured).wrench_sole_in_sole_raw.copy()
    assert np.abs(wrong - f).max() > 1.0  # told nothing, the estimate is off
    est.set_actuator_mode(name, "locked")
    out = est.update(q, actuator_force=measured)
    np.testing.assert_allclose(out.wrench_sole_in_sole_raw, f, atol=1e-6 * np.abs(f).max())
    assert out.actuator_force[k] == pytest.approx(tau[k], rel=1e-6)  # the lock's force, from the constraint
    assert out.residual < 1e-6 and out.base_residual < 1e-6
    # whatever the locked actuator's motor torque reads, it is not used
    garbage = measured.copy()
    garbage[k] = 1e4
    np.testing.assert_allclose(est.update(q, actuator_force=garbage).wrench_sole_in_sole_raw, f,
                               atol=1e-6 * np.abs(f).max())
    assert est.actuator_modes[name] == "locked" and not est.driven[k] and est.driven.sum() == clm.n_a - 1


def test_a_limp_actuator_force_is_zero_whatever_its_sensor_reads(standing):
    clm, q, _, _ = standing
    k = clm.actuated_joint_names.index(ANKLE)
    est = _estimator(clm)
    est.update_model(q)
    # a true state with the limp actuator's force zero: wrenches that balance gravity (base rows) and
    # load the limp actuator with nothing, eq. (46) row k: g_p,a,k = (J_c,m^T f)_k
    f = np.linalg.lstsq(np.vstack([est.J_cb_T, est.J_cm_T[k]]), np.r_[est.g_base, est.g_pa[k]], rcond=None)[0]
    true_tau = est.g_pa - est.J_cm_T @ f
    assert abs(true_tau[k]) < 1e-9 * np.abs(true_tau).max() and np.abs(true_tau).max() > 10.0
    reads = true_tau.copy()
    reads[k] = 80.0  # a failed driver's reading: not a force on the mechanism
    wrong = est.update(q, actuator_force=reads).wrench_sole_in_sole_raw.copy()
    assert np.abs(wrong.reshape(-1) - f).max() > 1.0
    est.set_actuator_mode(ANKLE, "limp")
    right = est.update(q, actuator_force=reads)
    assert right.actuator_force[k] == 0.0
    np.testing.assert_allclose(right.wrench_sole_in_sole_raw.reshape(-1), f, atol=1e-6 * np.abs(f).max())
    assert est.actuator_modes[ANKLE] == "limp" and not est.driven[k]


@pytest.mark.parametrize("motor_torque", [False, True])
def test_back_to_active_is_the_estimate_of_an_estimator_never_changed(standing, motor_torque):
    clm, q, _, tau = standing
    est, fresh = _estimator(clm), _estimator(clm)
    for name, mode in [(ANKLE, "locked"), (HIP_YAW, "limp"), (ANKLE, "active"), (HIP_YAW, "active")]:
        est.set_actuator_mode(name, mode)
        assert est.mode_change_ms >= 0.0
    x = tau / est.transmission.paper_gain if motor_torque else tau
    key = "motor_torque" if motor_torque else "actuator_force"
    a = est.update(q, **{key: x})
    b = fresh.update(q, **{key: x})
    np.testing.assert_array_equal(a.wrench_sole_in_sole_raw, b.wrench_sole_in_sole_raw)
    np.testing.assert_array_equal(a.actuator_force, b.actuator_force)
    assert set(est.actuator_modes.values()) == {"active"} and est.driven.all()


def test_mode_change_between_model_update_and_estimate_refactorises(standing):
    """A change between :meth:`update_model` and :meth:`estimate_wrenches` takes effect at once."""
    clm, q, f, tau = standing
    k = clm.actuated_joint_names.index(LEG)
    measured = tau.copy()
    measured[k] = 0.0
    est = _estimator(clm)
    est.update_model(q)
    est.set_actuator_mode(LEG, "locked")
    out = est.estimate_wrenches(actuator_force=measured)
    np.testing.assert_allclose(out.wrench_sole_in_sole_raw, f, atol=1e-6 * np.abs(f).max())


def test_without_base_rows_a_lock_leaves_the_minimum_norm_solution(standing):
    """The paper's actuated rows alone (``base_row_weight`` 0): 12 equations for the two soles' 12
    unknowns; with a lock 11, so the estimate is the minimum-norm least-squares one (finite, the 11
    kept equations met), not the true wrenches."""
    clm, q, f, tau = standing
    k = clm.actuated_joint_names.index(ANKLE)
    est = _estimator(clm, base_row_weight=0.0)
    assert np.allclose(est.update(q, actuator_force=tau).wrench_sole_in_sole_raw, f, atol=1e-6 * np.abs(f).max())
    est.set_actuator_mode(ANKLE, "locked")
    out = est.update(q, actuator_force=tau)
    w = out.wrench_sole_in_sole_raw.reshape(-1)
    assert np.isfinite(w).all() and out.residual < 1e-6 * np.abs(tau).max()
    kept = np.delete(np.arange(clm.n_a), k)
    np.testing.assert_allclose((est.J_cm_T @ w)[kept], (est.g_pa - tau)[kept], atol=1e-6 * np.abs(tau).max())


def test_unknown_actuator_or_mode_is_an_input_error_naming_the_valid_ones(standing):
    clm = standing[0]
    est = _estimator(clm)
    with pytest.raises(InputError, match="left_ankle_inner_actuator"):
        est.set_actuator_mode("left_ankle_inner", "locked")
    with pytest.raises(InputError, match=r"modes are \['active', 'locked', 'limp'\]"):
        est.set_actuator_mode(ANKLE, "welded")
    assert set(est.actuator_modes.values()) == {"active"}


# ------------------------------------------------------------------------------------ in the simulator
def _lock_force(sim, name: str) -> float:
    """MuJoCo's force on the locked actuator's joint from its two-sided limit (the lock) [N]: the
    limit rows' ``J^T efc_force`` at the joint's degree of freedom."""
    import mujoco

    m, d = sim.model, sim.data
    joint = m.actuator_trnid[sim.actuator_names.index(name), 0]
    rows = (d.efc_type[:d.nefc] == int(mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT)) & (d.efc_id[:d.nefc] == joint)
    res = np.zeros(m.nv)
    mujoco.mj_mulJacTVec(m, d, res, np.where(rows, d.efc_force[:d.nefc], 0.0))
    return float(res[m.jnt_dofadr[joint]])


#: the stand behaviour leaning 5 cm to the left: the left sole carries 220 N of the 355 N, the left
#: ankle's outer actuator ~60 N before its lock and ~98 N after it
LEAN = {"com_offset_m": (0.0, 0.05, 0.0)}


def _run_fault(mode: str, name: str, at_s: float = 1.0, duration_s: float = 4.0, frozen: bool = False,
               options: dict | None = None, ideal: bool = True) -> dict:
    """The closed loop standing (``options`` of the stand behaviour; ``ideal`` actuators, or the
    simulated ball-screw drives with the loop's compensations), ``name`` put in ``mode`` ``at_s``
    after the behaviour starts; beside it three estimators: told the mode at the fault's tick, never
    told (``untold``), told ``locked`` whatever the mode (``as_locked``: the force an unknown).
    ``frozen``: the untold one reads the actuator's motor torque frozen at its last value before the
    fault (a failed driver's telemetry). Per tick after the fault (+0.3 s): their raw wrench errors,
    the told one's force of the actuator and the simulator's lock force."""
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=duration_s, faults=((mode, name, at_s),),
                                   behaviour_options=dict(options or {}),
                                   robot=SimulatedRobotConfig(ideal_actuators=ideal)))
    clm, rate = run.clm, 1.0 / run.dt
    compensation = None if ideal else ActuatorCompensation(sample_rate_hz=rate)

    def shadow():
        return ContactWrenchEstimation(clm, paper_screws(clm), ContactWrenchConfig(sample_rate_hz=rate),
                                       ContactWrenchSettings(sole_frames=tuple(run.soles)), compensation)

    told, untold, as_locked = shadow(), shadow(), shadow()
    k = clm.actuated_joint_names.index(name)
    rec = {"told": [], "untold": [], "as_locked": [], "lock": [], "lock_true": [], "t": []}
    last = {"effort": 0.0}

    def on_tick(run):
        if run.last_inputs is None:
            return
        sample, est = run.last_inputs
        faulted = run.sim.actuator_modes[name] != "active"
        if faulted and told.estimator.actuator_modes[name] == "active":
            told.set_actuator_mode(name, mode)  # at the fault's tick, as the loop tells its own
            as_locked.set_actuator_mode(name, "locked")
            assert told.drain_events()[0].message.startswith(f"{name}: active -> {mode}")
        if not faulted:
            last["effort"] = sample.effort[k]
        untold_sample = sample
        if frozen and faulted:
            effort = sample.effort.copy()
            effort[k] = last["effort"]
            untold_sample = ActuatorSample(sample.position, sample.velocity, effort, sample.stamp_s)
        outs = []
        for comp, s in ((told, sample), (untold, untold_sample), (as_locked, sample)):
            comp.set_released(run.control.ready)
            comp.on_state(est.q, est.v, est.stamp_s)
            outs.append(comp.step(s))
            comp.drain_events()
        started = run.control.behaviour_started_s
        if None in outs or started is None or run.robot.time < started + at_s + 0.3:
            return
        gt = run.robot.ground_truth()
        truth = np.array([np.r_[gt.contacts[s].force_in_sole, gt.contacts[s].torque_in_sole] for s in run.soles])
        rec["told"].append(outs[0].wrench_sole_in_sole_raw - truth)
        rec["untold"].append(outs[1].wrench_sole_in_sole_raw - truth)
        rec["as_locked"].append(outs[2].wrench_sole_in_sole_raw - truth)
        rec["lock"].append(outs[0].actuator_force[k])
        rec["lock_true"].append(_lock_force(run.sim, name) if mode == "locked" else 0.0)
        rec["t"].append(run.robot.time)

    summary = run.run(on_tick=on_tick)
    assert not summary["fell"]
    out = {key: np.asarray(v) for key, v in rec.items()}
    assert out["t"].size > 900  # the standing ticks after the fault
    out["summary"], out["loop_modes"] = summary, run.wrench.estimator.actuator_modes
    print(f"{mode} {name} {options or ''}{'' if ideal else ' (drives)'}: time-mean error told "
          f"{_bias(out['told']):.2f}, untold {_bias(out['untold']):.2f}, as locked {_bias(out['as_locked']):.2f}; "
          f"force {out['lock'].mean():.1f} N, simulator {out['lock_true'].mean():.1f} N")
    return out


@pytest.fixture(scope="module")
def locked_ankle():
    return _run_fault("locked", ANKLE)


@pytest.fixture(scope="module")
def locked_loaded_ankle():
    return _run_fault("locked", ANKLE_OUTER, options=LEAN)


@pytest.fixture(scope="module")
def limp_ankle():
    return _run_fault("limp", ANKLE, frozen=True)


def _bias(errors: np.ndarray) -> float:  # (printed: pytest -s)
    """Largest time-mean error of any sole wrench component [N] or [N·m]."""
    return float(np.abs(errors.mean(axis=0)).max())


LOCKED_ANKLE_TOL = 1.0  # [N], [N·m] time-mean error, told (measured 0.08-0.34)
UNTOLD_MIN = 5.0  # [N], [N·m] the untold estimator's error is at least this (measured 9.9-10.0)


@pytest.mark.integration
@pytest.mark.slow
def test_locked_ankle_while_standing_matches_the_simulator(locked_ankle):
    r = locked_ankle
    assert _bias(r["told"]) < LOCKED_ANKLE_TOL
    assert _bias(r["untold"]) > UNTOLD_MIN
    # the lock's force, read off the removed row, is MuJoCo's limit force (measured -50.7 N against -50.6 N)
    assert abs(r["lock_true"].mean()) > 20.0
    assert r["lock"].mean() == pytest.approx(r["lock_true"].mean(), abs=2.0)
    assert r["loop_modes"][ANKLE] == "locked"  # the loop told its own estimator


LOADED_UNTOLD_MIN = 5.0  # [N], [N·m] (measured 8.4)


@pytest.mark.integration
@pytest.mark.slow
def test_a_locked_ankle_carrying_the_lean_matches_the_simulator(locked_loaded_ankle):
    """Leaning to the left, the locked left ankle outer actuator carries ~58 N: told, the estimate
    matches MuJoCo's contact wrenches on average and the lock's force MuJoCo's limit force; untold
    (the motor force zero), the soles' wrenches are off."""
    r = locked_loaded_ankle
    assert abs(r["lock_true"].mean()) > 40.0
    assert _bias(r["told"]) < LOCKED_ANKLE_TOL
    assert _bias(r["untold"]) > LOADED_UNTOLD_MIN
    assert r["lock"].mean() == pytest.approx(r["lock_true"].mean(), abs=3.0)  # (-57.5 N, -57.6 N)
    assert r["loop_modes"][ANKLE_OUTER] == "locked"


@pytest.mark.integration
@pytest.mark.slow
def test_limp_ankle_while_standing_matches_the_simulator(limp_ankle):
    """The left ankle actuator carries ~50 N when its driver fails and its torque reading freezes at
    that value: told, the estimate takes the force as zero (what the simulator applies) and matches;
    untold, it takes the frozen reading."""
    r = limp_ankle
    assert _bias(r["told"]) < LOCKED_ANKLE_TOL
    assert _bias(r["untold"]) > UNTOLD_MIN
    assert (r["lock"] == 0.0).all()  # the limp actuator's force used: zero
    assert r["loop_modes"][ANKLE] == "limp"


@pytest.fixture(scope="module")
def limp_ankle_drives():
    return _run_fault("limp", ANKLE, ideal=False)


@pytest.mark.integration
@pytest.mark.slow
def test_limp_with_ball_screw_drives_zero_force_beats_an_unknown_force(limp_ankle_drives):
    """Why ``limp`` keeps the row with the force zero rather than leaving it out as for a lock: with
    the simulated drives the back-driven screw exerts its friction (the bearings' Coulomb friction,
    15 N on Kangaroo, no load-dependent part without motor torque), small against the loads, and the
    equation it keeps helps. Measured: zero force 5.2 N time-mean error, an unknown force 10.8 N (the
    failed driver's reading through the compensations, 4.6 N: its friction model at the measured
    velocity, within the noise of the zero force's)."""
    r = limp_ankle_drives
    assert _bias(r["told"]) < 8.0
    assert _bias(r["as_locked"]) > 1.5 * _bias(r["told"])
