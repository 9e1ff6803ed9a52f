"""Integration test: actuator faults in the one-process closed loop (a locked screw, a limp driver).

The simulator welds or disables the actuator and the controller re-allocates in place at the fault's
time; the robot keeps standing.
"""

from __future__ import annotations

import pytest

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.pipeline.closed_loop import ClosedLoopRun, LoopConfig

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
