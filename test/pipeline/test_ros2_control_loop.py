"""Integration tests: the closed loop over the simulated ros2_control system (no ROS in the
one-process loop; the node graph over DDS in separate processes and composed).

The one-process loop converts the simulator's samples through its broadcasters and the nodes'
boundary in-process; the actuator joint space carries the native samples unchanged (the same run
as the native loop, to rounding), the serial one goes through the exact closed-chain maps. The
hand-over: no effort command reaches the simulated controllers before the controller is ready.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DURATION_S = 2.5  # boot on the crane, calibration, ready, release and 1 s of standing


def _run(interface: str, joint_space: str = "actuator") -> tuple[ClosedLoopRun, dict, dict]:
    run = ClosedLoopRun(LoopConfig(behaviour="sway", duration_s=DURATION_S, seed=3, interface=interface,
                                   joint_space=joint_space))
    seen = {"before_ready": 0, "ready": False}

    def watch(r: ClosedLoopRun) -> None:  # until the controller's first ready
        seen["ready"] = seen["ready"] or r.control.ready
        if r.link is not None and not seen["ready"]:
            seen["before_ready"] = max(seen["before_ready"], r.link.system.counts["valid"])
    return run, run.run(on_tick=watch), seen


@pytest.fixture(scope="module")
def native():
    """Integration fixture: the native one-process loop (reference)."""
    return _run("native")


@pytest.mark.parametrize("space", ["actuator", "serial"])
def test_one_process_loop_over_ros2_control(native, space):
    run, summary, seen = _run("ros2_control", space)
    assert summary["fell"] is False and summary["qp_failures"] == 0
    assert run.release_time_s is not None  # the controller's commands released the crane
    assert seen["before_ready"] == 0, "an effort command reached the robot before the controller was ready"
    assert run.link.gate.open and run.link.system.counts["valid"] > 0 and run.link.system.counts["refused"] == 0
    ref = native[1]["com_rmse_m"]
    assert abs(summary["com_rmse_m"] - ref) <= 0.2 * ref, (summary["com_rmse_m"], ref)
    if space == "actuator":  # the native samples through the boundary: the same run, to rounding
        np.testing.assert_allclose(run.log.array("com_est"), native[0].log.array("com_est"), rtol=0, atol=1e-9)


@pytest.mark.ros
@pytest.mark.parametrize("processes", ["separate", "composed"])
def test_graph_over_ros2_control_stands(processes, isolated_domain, tmp_path):
    """The node graph with the sim node as the ros2_control system (serial joints) and the nodes'
    interface parameter: the loop closes over the broadcasters' and effort controllers' topics.
    The hand-over: the whole_body_controller calls the simulator's
    ``controller_manager/switch_controller`` (STRICT, effort controllers in, position controllers
    out) at its first ready, and the robot stays held until that switch."""
    pytest.importorskip("rclpy")
    if processes == "composed" and importlib.util.find_spec("kangaroo_wbc.nodes.composed_node") is None:
        pytest.skip("the composed executable is not installed")
    from kangaroo_wbc_tools.graph.processes import run_graph

    summary = run_graph(processes=processes, duration_s=1.5, behaviour="stand", interface="ros2_control",
                        joint_space="serial", wall_timeout_s=300.0, log_dir=tmp_path)
    assert summary["exit_codes"] == {n: 0 for n in summary["exit_codes"]}, summary["logs"]
    logs = {f.stem: f.read_text(errors="replace") for f in tmp_path.glob("*.log")}
    sim = logs["composed" if processes == "composed" else "sim"]
    wbc = logs["composed" if processes == "composed" else "whole_body_controller"]
    switched = ("switch_controller: activate ['leg_left_effort_controller', 'leg_right_effort_controller'], "
                "deactivate ['leg_left_position_controller', 'leg_right_position_controller'], strictness 2: ok")
    assert sim.count(switched) == 1, sim[-3000:]  # one request, answered ok
    assert "hand-over: controller_manager/switch_controller: effort controllers active" in wbc, wbc[-3000:]
    assert "crane released at" in sim and sim.index(switched) < sim.index("crane released at")  # held until it
    assert summary["fell"] is False and summary["controller_stayed_ready"], summary["logs"]
    assert summary["safe_mode_entries"] == 0, summary["safe_mode_reasons"]
    rates = summary["topic_rates_hz"]
    assert rates["joint_state_broadcaster/joint_states"] >= 900.0 and rates["leg_left_effort_controller/commands"] > 0


def test_a_refused_broadcast_is_reported_and_skipped():
    """A joint_states message the boundary refuses (a joint missing) is counted and reported by the
    state estimator, as its node does; the loop goes on (the robot keeps its last command)."""
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=0.1, seed=1, interface="ros2_control"))
    broadcast = run.link.system.broadcast
    calls = {"n": 0}

    def lossy(*args, **kwargs):
        state = broadcast(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 20:  # one message without its first joint
            state.names, state.position = state.names[1:], state.position[1:]
            state.velocity, state.effort = state.velocity[1:], state.effort[1:]
        return state

    run.link.system.broadcast = lossy
    summary = run.run()
    assert summary["interrupted"] is False and run.estimation.stats["rejected"] == 1
    assert "joint_state_broadcaster/joint_states" in run.estimation.last_error
    assert "left_hip_yaw_actuator" in run.estimation.last_error and "missing" in run.estimation.last_error


def test_a_failed_switch_withholds_the_commands(isolated_domain, tmp_path):
    """No controller manager where the controller looks for it: after ``switch_timeout_s`` an
    ERROR, the effort commands withheld, nothing crashes; the robot stays held (the simulator's
    effort controllers are never switched in)."""
    pytest.importorskip("rclpy")
    from kangaroo_wbc_tools.graph.processes import run_graph

    summary = run_graph(processes="separate", duration_s=2.0, behaviour="stand", interface="ros2_control",
                        joint_space="actuator", wall_timeout_s=300.0, log_dir=tmp_path,
                        controller_params={"controller_manager": "no_such_manager", "switch_timeout_s": 0.5})
    assert summary["exit_codes"] == {n: 0 for n in summary["exit_codes"]}, summary["logs"]
    sim, wbc = ((tmp_path / f"{n}.log").read_text(errors="replace") for n in ("sim", "whole_body_controller"))
    assert "hand-over: calling no_such_manager/switch_controller" in wbc, wbc[-3000:]
    assert ("switch to the effort controllers failed: the service is not offered within 0.5 s; effort commands "
            "withheld, the position controllers hold") in wbc, wbc[-3000:]
    assert "switch_controller" not in sim and "crane released at" not in sim, sim[-3000:]
    assert summary["fell"] is False
