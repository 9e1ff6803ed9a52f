"""Integration tests: walking in the closed loop (simulator → estimators → WBC, no ground truth fed
back), in one process and through the separate node processes over DDS."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

#: the walk starts about 2.2 s after boot (crane, calibration, ready, behaviour_delay_s)
WALK_DURATION_S = 7.0


@pytest.fixture(scope="module")
def walk_run():
    """Integration fixture: 7 s from boot walking forward at 0.3 m/s (seeded)."""
    run = ClosedLoopRun(LoopConfig(behaviour="walk", duration_s=WALK_DURATION_S, seed=2,
                                   behaviour_options={"cmd_vel": (0.3, 0.0, 0.0)}))
    return run, run.run()


def test_walks_forward_at_the_commanded_speed_on_estimated_state(walk_run):
    run, s = walk_run
    assert s["fell"] is False and s["qp_failures"] == 0 and s["safe_mode_ticks"] == 0
    # ~4.8 s of walking, the first 0.6 s in the start-up double support
    assert 1.0 < s["distance_m"] < 1.6, s
    assert s["steps"] >= 6
    assert s["speed_tracking_rmse_mps"] < 0.08
    assert abs(s["yaw_change_rad"]) < 0.05
    assert s["footstep_error_m_max"] < 0.05
    assert s["zmp_inside_support_ratio"] > 0.95
    tau = run.log.array("tau")
    assert np.all(np.isfinite(tau))
    assert np.all(np.abs(tau) <= run.sim.force_limits[run.sim_to_model] + 1e-6)


def test_walk_plan_is_logged_for_the_report(walk_run):
    from kangaroo_wbc.control.behaviours import Walk

    run, _ = walk_run
    plan = run.log.array("plan").reshape(-1, len(Walk.TRACE))
    assert plan.shape[0] == run.log.array("t").size  # one row a tick (NaN before the walk starts)
    phase = plan[:, Walk.TRACE.index("phase")]
    phases = set(phase[np.isfinite(phase)].astype(int))
    assert phases == {1, 2}  # double and single support (a non-zero command walks from the first tick)
    # the bag carries the footsteps as markers, one array per new plan
    from rosbags.typesys import Stores, get_typestore

    from kangaroo_wbc_tools.pipeline.bag_messages import RunTopics

    markers = [m for m in RunTopics(run, get_typestore(Stores.ROS2_KILTED), decimation=10).messages()
               if m.topic == "/wbc/footsteps"]
    assert len(markers) == len(run.footstep_log) >= 10
    boxes = markers[-1].message.markers
    assert boxes[0].action == 3 and all(b.action == 0 and b.type == 1 for b in boxes[1:])
    # the soles standing and the planned footsteps: 2 + 3 in double support, 1 + (landing + 3) in single
    assert len(boxes) == 1 + 2 + run.control.supervisor.behaviour.gait.preview_steps


@pytest.mark.slow
def test_separate_processes_walk_from_the_cmd_vel_parameter(monkeypatch):
    """The shipped nodes over DDS (lockstep): the controller node walks at its cmd_vel parameter."""
    pytest.importorskip("rclpy")
    from kangaroo_wbc_tools.graph.processes import run_graph
    from test.integration.ros_harness import allocate_domain_id

    monkeypatch.setenv("ROS_DOMAIN_ID", str(allocate_domain_id()))
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    summary = run_graph(processes="separate", duration_s=5.0, sim_mode="lockstep", behaviour="walk",
                        controller_params={"cmd_vel": [0.3, 0.0, 0.0]}, wall_timeout_s=240.0)
    assert summary["exit_codes"] == {name: 0 for name in summary["exit_codes"]}, summary["logs"]
    assert summary["fell"] is False, summary
    assert summary["safe_mode_entries"] == 0, summary
    # the walk starts 1 s after ready; 0.6 s of start-up double support, then ~0.3 m/s
    assert summary["distance_m"] > 0.6, summary
