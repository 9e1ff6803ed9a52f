"""Unit tests of the simulator's actuator modes (a locked screw, a limp driver) on the Kangaroo model.

Integration-light: the Kangaroo MJCF hanging on its crane (base held), ideal actuators.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.robots.kangaroo.sim import make_kangaroo_sim

ACT = "left_ankle_inner_actuator"
LOCK_DRIFT_TOL_M = 2e-4  # a locked joint under 3 kN moves less than this [m] (MuJoCo's soft limit)


@pytest.fixture()
def sim():
    s = make_kangaroo_sim(ideal_actuators=True)
    s.hold_base(True)
    s.step(50)
    return s


def test_locked_actuator_holds_its_joint_under_a_large_command(sim):
    i = sim.actuator_names.index(ACT)
    x0 = sim.actuator_positions()[i]
    sim.set_actuator_mode(ACT, "locked")
    force = np.zeros(sim.n_actuators)
    force[i] = 3000.0
    sim.set_command(force)
    sim.step(300)
    assert abs(sim.actuator_positions()[i] - x0) < LOCK_DRIFT_TOL_M
    assert sim.data.ctrl[i] == 0.0  # no motor force on a locked screw
    assert sim.actuator_modes[ACT] == "locked"
    sim.set_actuator_mode(ACT, "active")  # the command acts again and moves the joint
    sim.step(200)
    assert abs(sim.actuator_positions()[i] - x0) > 10 * LOCK_DRIFT_TOL_M


def test_limp_actuator_applies_no_force_the_others_keep_theirs(sim):
    i = sim.actuator_names.index(ACT)
    sim.set_actuator_mode(ACT, "limp")
    sim.set_command(np.full(sim.n_actuators, 100.0))
    sim.step(1)
    assert sim.data.ctrl[i] == 0.0
    others = np.delete(np.arange(sim.n_actuators), i)
    np.testing.assert_allclose(sim.data.ctrl[others], 100.0)


def test_unknown_actuator_or_mode_is_an_input_error(sim):
    with pytest.raises(InputError, match="left_ankle_inner_actuator"):
        sim.set_actuator_mode("left_ankle_inner", "locked")
    with pytest.raises(InputError, match="modes are"):
        sim.set_actuator_mode(ACT, "seized")
    assert set(sim.actuator_modes.values()) == {"active"}


def test_payload_changes_the_body_mass_and_not_the_state(sim):
    mass, qpos = sim.total_mass_kg, sim.data.qpos.copy()
    sim.add_payload("base_link", 6.0)
    assert sim.total_mass_kg == pytest.approx(mass + 6.0)
    np.testing.assert_array_equal(sim.data.qpos, qpos)  # MuJoCo's constants recomputed on scratch data
    sim.add_payload("base_link", -6.0)
    assert sim.total_mass_kg == pytest.approx(mass)
    with pytest.raises(InputError, match="base_link"):
        sim.add_payload("base_lnk", 1.0)
    with pytest.raises(InputError, match="must stay > 0"):
        sim.add_payload("base_link", -1e3)


def test_limp_drive_produces_no_current_while_its_screw_is_back_driven():
    """With the simulated drives, a failed driver's current (and so its motor torque) stays at zero
    while the mechanism back-drives its screw: no friction feed-forward from a drive that is off."""
    s = make_kangaroo_sim()
    s.hold_base(True)
    s.step(50)
    i = s.actuator_names.index(ACT)
    s.set_actuator_mode(ACT, "limp")
    s.set_command(np.zeros(s.n_actuators))
    s.step(20)  # the current loop (kHz bandwidth) lets go of what it carried
    moved, x0 = 0.0, s.actuator_positions()[i]
    for _ in range(100):  # the unpowered leg sags on the crane: the limp screw creeps
        s.step(1)
        moved = max(moved, abs(s.actuator_positions()[i] - x0))
        assert abs(s.drives.current_nm[i]) < 1e-9 and abs(s.data.ctrl[i]) < 1e-6
    assert moved > 1e-6  # it moves (friction ff would then act)


def test_a_locked_actuator_carries_a_load_without_creeping():
    """A seized screw is rigid: 400 N pushed up under the sole of the hanging leg (the locked
    leg-length actuator carries it through the knee linkage) moves the lock by less than the
    tolerance; MuJoCo's default limit softness let the same load push it 81 mm."""
    import mujoco

    s = make_kangaroo_sim(ideal_actuators=True)
    s.hold_base(True)
    s.step(50)
    name = "left_leg_length_actuator"
    i = s.actuator_names.index(name)
    j = int(s.model.actuator_trnid[i, 0])
    solref = s.model.jnt_solref[j].copy()
    s.set_actuator_mode(name, "locked")
    x0 = s.actuator_positions()[i]
    s.set_command(np.zeros(s.n_actuators))
    s.data.xfrc_applied[mujoco.mj_name2id(s.model, mujoco.mjtObj.mjOBJ_BODY, "left_sole"), 2] = 400.0
    s.step(300)
    assert abs(s.actuator_positions()[i] - x0) < LOCK_DRIFT_TOL_M
    s.set_actuator_mode(name, "active")  # unlocked: the limit's softness is the model's again
    np.testing.assert_array_equal(s.model.jnt_solref[j], solref)
