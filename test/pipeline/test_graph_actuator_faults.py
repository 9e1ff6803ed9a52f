"""Integration test: an actuator fault in the shipped node graph over real DDS (separate processes).

The simulator locks an actuator (its ``faults`` parameter) and tells nobody; the runner, as the
operator, sets the controller's ``locked_actuators``; the controller re-allocates, publishes the
modes on ``actuators/modes`` and the contact-wrench estimator applies them. The robot keeps standing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("rclpy")

ACTUATOR = "left_ankle_inner_actuator"
STANDING_BASE_HEIGHT_M = 0.90


@pytest.mark.slow
def test_a_locked_actuator_reaches_every_node_and_the_robot_stands(isolated_domain):
    from kangaroo_wbc_tools.graph.processes import run_graph

    summary = run_graph(processes="separate", duration_s=2.0, behaviour="stand", sim_mode="lockstep",
                        faults=[("locked", ACTUATOR, 0.5)], wall_timeout_s=120.0)
    brief = {k: v for k, v in summary.items() if k != "nodes"}
    assert summary["exit_codes"] == {name: 0 for name in summary["exit_codes"]}, brief
    assert summary["fell"] is False and summary["safe_mode_entries"] == 0, brief
    assert summary["min_base_height_m"] > STANDING_BASE_HEIGHT_M - 0.02, brief
    fault = summary["faults"][0]
    assert fault["told_ok"] and fault["declared"] == "locked", brief
    assert 0.0 <= fault["modes_after_fault_s"] < 0.1, brief  # the controller's modes, in simulated time
    assert summary["actuator_modes"] == {ACTUATOR: "locked"}, brief
    assert f"{ACTUATOR} locked (operator)" in summary["actuator_modes_message"], brief  # its diagnostic names it
    logs = Path(summary["logs"])
    assert f"actuator {ACTUATOR} locked at t = " in (logs / "sim.log").read_text()  # the simulator welded it
    assert f"actuator modes applied: {{'{ACTUATOR}': 'locked'}}" in (
        logs / "contact_wrench_estimator.log").read_text()  # the wrench estimator received it
    assert f"actuator {ACTUATOR} locked (operator)" in (logs / "whole_body_controller.log").read_text()
