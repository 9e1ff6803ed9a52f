"""Integration test: a payload in the shipped node graph over real DDS (separate and composed).

The simulator attaches 6 kg to the torso (its ``payloads`` parameter) and tells nobody; the runner,
as the operator, sets the controller's ``payloads``; the controller updates its model and publishes
``model/payloads``, and the estimators set their models to the same (composed: the one shared
model, changed once). The robot keeps standing and the estimated sole forces carry the new weight.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("rclpy")

STANDING_BASE_HEIGHT_M = 0.90
PAYLOAD = (6.0, "torso", 1.0)  # 6 kg on the torso 1 s after the behaviour starts
ROBOT_MASS_KG = 36.0  # the model as loaded
WEIGHT_TOLERANCE = 0.03  # issue #25's acceptance: fz_sum_over_mg within 0.97-1.03 after the payload


@pytest.mark.slow
@pytest.mark.parametrize("processes", ["separate", "composed"])
def test_a_payload_reaches_every_model_and_the_robot_stands_weighed(processes, isolated_domain):
    from kangaroo_wbc_tools.graph.processes import run_graph

    summary = run_graph(processes=processes, duration_s=4.0, behaviour="stand", sim_mode="lockstep",
                        payloads=[PAYLOAD], wall_timeout_s=180.0)
    brief = {k: v for k, v in summary.items() if k != "nodes"}
    assert summary["exit_codes"] == {name: 0 for name in summary["exit_codes"]}, brief
    assert summary["fell"] is False and summary["safe_mode_entries"] == 0, brief
    assert summary["min_base_height_m"] > STANDING_BASE_HEIGHT_M - 0.04, brief
    payload = summary["payloads"][0]
    assert payload["link"] == "base_link" and payload["told_ok"], brief
    assert 0.0 <= payload["model_after_payload_s"] < 0.1, brief  # the controller's model, in simulated time
    assert summary["model_payloads"] == {"base_link": 6.0}, brief
    assert summary["robot_mass_kg"] == pytest.approx(ROBOT_MASS_KG + 6.0), brief
    # the estimated sole forces weigh the robot with its payload (without it they would read 42/36)
    assert abs(payload["fz_sum_over_mg_after"] - 1.0) < WEIGHT_TOLERANCE, brief
    assert abs(summary["fz_sum_over_mg"] - 1.0) < WEIGHT_TOLERANCE, brief
    logs = Path(summary["logs"])
    log = {p.stem: p.read_text() for p in logs.glob("*.log")}
    if processes == "separate":
        assert "payload +6 kg on base_link at t = " in log["sim"]  # the simulator attached it
        for node in ("state_estimator", "contact_wrench_estimator"):  # each set its own model
            assert "payloads applied: base_link +6 kg, robot 42.000 kg" in log[node], node
    else:  # one model, shared: the controller changed it, the estimators found it changed
        text = log["composed"]
        assert "payload +6 kg on base_link at t = " in text
        assert text.count("model updated in") == 1
        assert "payloads applied" not in text and "payloads in the model already: base_link +6 kg" in text
