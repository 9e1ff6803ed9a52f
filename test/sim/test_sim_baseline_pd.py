"""Tests of the baseline actuator PD: gravity feed-forward (MuJoCo vs core) and position holding."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.sim.baseline_pd import BaselinePd, hold_position, model_gravity_compensation
from kangaroo_wbc.sim.simulator import ClosedChainSim
from test.sim.conftest import paths

GRAVITY_RTOL = 1e-6  # MuJoCo qfrc_bias through J_m vs pinocchio gravity through J_m, at rest
HOLD_TOL = 1e-4  # [m], [rad] static error of the PD with gravity compensation


@pytest.mark.parametrize("name,theta", [("four_bar", 0.4), ("rrpr", 0.02)])
def test_gravity_feedforward_matches_core(name, theta, mjcf_fixed):
    """Integration: the simulator's ``g_a + J_m^T g_u`` equals the core's ``gravity_actuated``."""
    sim = ClosedChainSim(mjcf_fixed[name], initial_actuator_positions=[theta])
    clm = ClosedLoopModel.from_files(*paths(name))
    g_core = model_gravity_compensation(clm)(sim.joint_positions_by_name())
    np.testing.assert_allclose(sim.actuator_bias_forces(), g_core, rtol=GRAVITY_RTOL)


@pytest.mark.parametrize("name,theta,kp,kd", [("four_bar", 0.4, 20.0, 1.0), ("rrpr", 0.02, 2e4, 300.0)])
def test_pd_with_gravity_compensation_holds_target(name, theta, kp, kd, mjcf_fixed):
    sim = ClosedChainSim(mjcf_fixed[name], initial_actuator_positions=[theta])
    pd = BaselinePd(kp, kd, sim.n_actuators, force_limits=sim.force_limits)
    hold_position(sim, pd, np.array([theta]), 500)
    assert sim.actuator_positions()[0] == pytest.approx(theta, abs=HOLD_TOL)
    # without feed-forward the same gains sag under gravity
    sim.reset(actuator_positions=[theta])
    hold_position(sim, pd, np.array([theta]), 500, gravity=False)
    assert abs(sim.actuator_positions()[0] - theta) > HOLD_TOL


def test_pd_law_and_input_checks():
    pd = BaselinePd([10.0, 20.0], 1.0, 2, force_limits=[100.0, 5.0])
    tau = pd.compute([0.0, 0.0], [1.0, 0.0], [1.0, 1.0], tau_ff=[0.5, 0.0])
    np.testing.assert_allclose(tau, [10.0 - 1.0 + 0.5, 5.0])  # second one clipped at 5 N
    with pytest.raises(InputError):
        pd.compute([0.0], [0.0, 0.0], [0.0, 0.0])
    with pytest.raises(InputError):
        pd.compute([np.nan, 0.0], [0.0, 0.0], [0.0, 0.0])
    with pytest.raises(InputError):
        BaselinePd(-1.0, 0.0, 2)
