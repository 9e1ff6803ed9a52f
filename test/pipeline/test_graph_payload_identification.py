"""Integration test: online payload identification in the shipped node graph over real DDS
(separate and composed), as ``kangaroo-wbc demo --processes separate|composed --payload 6kg@torso@2
--payload-unannounced --ideal-actuators`` runs it.

The simulator attaches 6 kg to the torso 2 s after the behaviour starts and nobody tells the
controller (its ``payloads`` parameter stays empty: the models keep 36 kg). The
``contact_wrench_estimator`` weighs the robot while it stands still and publishes the confident
estimate on the latched ``payload/identified``; the runner reads it into the one-process demo's
summary keys. Ideal actuators, as the one-process test (test/pipeline/test_payload_identification.py):
the simulated drives' friction band at standstill hides part of a load put on at rest.
"""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy")

PAYLOAD = (6.0, "torso", 2.0)  # [kg], link, [s] after the behaviour starts
MASS_TOL_KG = 0.5  # the identified mass against the payload's
COM_TOL_M = 0.02  # its horizontal CoM against the payload's (the base link's CoM in the ground truth)
DURATION_S = 9.0  # simulated [s] after ready: the behaviour starts at 1 s, the payload at 3 s, ~4 s to identify


@pytest.mark.slow
@pytest.mark.parametrize("processes", ["separate", "composed"])
def test_an_unannounced_torso_payload_is_identified_in_the_node_graph(processes, isolated_domain):
    from kangaroo_wbc_tools.graph.processes import run_graph

    summary = run_graph(processes=processes, duration_s=DURATION_S, behaviour="stand", sim_mode="lockstep",
                        payloads=[PAYLOAD], payload_unannounced=True, ideal_actuators=True, wall_timeout_s=400.0)
    brief = {k: v for k, v in summary.items() if k != "nodes"}
    assert summary["exit_codes"] == {name: 0 for name in summary["exit_codes"]}, brief
    assert summary["fell"] is False and summary["safe_mode_entries"] == 0, brief
    # nobody told the controller: its models carry nothing
    payload = summary["payloads"][0]
    assert payload["announced"] is False and payload["told_after_payload_s"] is None, brief
    assert summary["model_payloads"] == {}, brief
    # the truth is the simulator's 6 kg; the estimate found it after it went on
    assert summary["payload_unmodelled_kg"] == PAYLOAD[0], brief
    assert abs(summary["payload_mass_error_kg"]) < MASS_TOL_KG, brief
    assert summary["payload_com_xy_error_m"] < COM_TOL_M, brief
    assert summary["payload_identification_delay_s"] is not None, brief
    assert summary["payload_identified_at_s"] > summary["payload_identification_delay_s"], brief
    assert 0.0 < summary["payload_confident_ratio"] < 1.0, brief  # not while the payload settles
