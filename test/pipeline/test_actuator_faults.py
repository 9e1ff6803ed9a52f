"""Integration test: actuator faults in the one-process closed loop (a locked screw, a limp driver).

The simulator welds or disables the actuator and the controller re-allocates in place at the fault's
time; the robot keeps standing.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

MORPHOLOGY_CHANGE_MAX_MS = 5.0  # the controller's update, issue's budget [ms]
COM_RMSE_AFTER_FAULT_TOL_M = 0.01


def test_standing_through_a_locked_and_a_limp_actuator():
    faults = (("locked", "left_ankle_inner_actuator", 0.5), ("limp", "right_hip_yaw_actuator", 1.0))
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=4.0, faults=faults))
    summary = run.run()
    assert not summary["fell"] and summary["qp_failures"] == 0
    assert [(f["actuator"], f["mode"]) for f in summary["faults"]] == [(n, m) for m, n, _ in faults]
    assert summary["morphology_change_ms"] < MORPHOLOGY_CHANGE_MAX_MS
    assert summary["com_rmse_after_fault_m"] < COM_RMSE_AFTER_FAULT_TOL_M
    assert run.sim.actuator_modes["left_ankle_inner_actuator"] == "locked"
    assert run.wbc.actuator_modes["right_hip_yaw_actuator"] == "limp"


def test_a_fault_on_an_unknown_actuator_is_an_input_error():
    with pytest.raises(InputError, match="fault locked:left_ankle@1"):
        ClosedLoopRun(LoopConfig(behaviour="stand", faults=(("locked", "left_ankle", 1.0),)))


def test_sway_goes_on_smaller_about_where_an_ankle_actuator_locked():
    """After the lock the behaviour's CoM reference is governed about its value at the lock: the
    sway keeps going, smaller, and the robot neither falls nor fails a QP."""
    fault = ("locked", "left_ankle_inner_actuator", 3.0)
    run = ClosedLoopRun(LoopConfig(behaviour="sway", duration_s=8.0, faults=(fault,)))
    summary = run.run()
    assert not summary["fell"] and summary["qp_failures"] == 0
    assert summary["com_rmse_after_fault_m"] < COM_RMSE_AFTER_FAULT_TOL_M
    t, ref = run.log.array("t"), run.log.array("com_ref").reshape(-1, 3)
    after = t >= summary["faults"][0]["t_s"]
    before = (t > t[after][0] - 3.0) & ~after
    sway_after, sway_before = np.ptp(ref[after, 1]), np.ptp(ref[before, 1])
    assert 0.005 < sway_after < sway_before


def test_payload_on_the_torso_is_carried_and_weighed():
    """6 kg attached at 1 s: the robot stands, and the estimated vertical forces sum to the new weight."""
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=4.0, payloads=((6.0, "torso", 1.0),)))
    masses = run.sim.total_mass_kg, run.clm.mass_kg
    summary = run.run()
    assert not summary["fell"] and summary["qp_failures"] == 0
    assert summary["payloads"][0]["link"] == "base_link" and summary["payloads"][0]["mass_kg"] == 6.0
    assert 0.97 <= summary["fz_sum_over_mg"] <= 1.03
    assert summary["morphology_change_ms"] < MORPHOLOGY_CHANGE_MAX_MS
    assert run.sim.total_mass_kg - masses[0] == pytest.approx(6.0)  # the simulator and the shared model
    assert run.clm.mass_kg - masses[1] == pytest.approx(6.0)
