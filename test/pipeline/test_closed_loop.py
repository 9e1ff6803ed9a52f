"""Integration tests of the in-process closed loop: simulator → estimators → WBC (no ground truth fed back).

Each run boots on the crane, calibrates the relative encoders, releases the robot and balances it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig


def _stand(pipelined: bool) -> tuple[ClosedLoopRun, dict]:
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=1.2, seed=1, pipelined=pipelined))
    return run, run.run()


@pytest.fixture(scope="module")
def stand_run():
    """Integration fixture: 1.2 s of standing after boot (seeded)."""
    return _stand(pipelined=False)


def test_stands_without_falling_on_estimated_state(stand_run):
    run, s = stand_run
    assert not s["fell"]
    assert s["qp_failures"] == 0 and s["safe_mode_ticks"] == 0
    # the CoM stays where the controller wants it (true CoM vs reference)
    assert s["com_max_error_m"] < 0.005


def test_calibration_recovers_the_boot_offsets(stand_run):
    run, s = stand_run
    assert s["calibration_iterations"] <= 10
    assert s["calibration_offset_error_m"] < 1e-4


def test_commands_are_finite_and_within_limits(stand_run):
    run, _ = stand_run
    tau = run.log.array("tau")
    assert np.all(np.isfinite(tau))
    limits = run.sim.force_limits[run.sim_to_model]
    assert np.all(np.abs(tau) <= limits + 1e-6)


def test_estimated_state_tracks_ground_truth(stand_run):
    run, s = stand_run
    assert s["max_closure_error"] < 1e-4
    assert s["base_position_drift_m"] < 0.02
    # estimated sole forces carry the robot's weight (quasi-static estimate, eq. (45))
    assert abs(s["fz_sum_over_mg"] - 1.0) < 0.15


def test_demo_cli_writes_report_and_bag(tmp_path, capsys):
    from kangaroo_wbc_tools.cli import main

    out = tmp_path / "demo"
    rc = main(["demo", "--duration", "0.8", "--out", str(out), "--json", "--bag-decimation", "10"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and summary["fell"] is False
    for key in ("com_rmse_m", "zmp_inside_support_ratio", "qp_failures", "wbc_ms_p50", "wbc_ms_p99", "formulation"):
        assert key in summary
    assert (out / "com_zmp.png").stat().st_size > 10_000
    assert (out / "bag" / "metadata.yaml").is_file()
    from rosbags.rosbag2 import Reader

    with Reader(out / "bag") as reader:
        topics = {c.topic for c in reader.connections}
        assert {"/actuators/command", "/contact/left_sole/wrench", "/zmp", "/joint_states", "/tf"} <= topics
        assert reader.message_count == summary["bag_messages"]


def test_demo_cli_pipelined_runs_the_simulator_alongside_the_nodes(capsys):
    """``demo --pipelined``: the composed loop with the simulator in its worker thread stands."""
    import threading

    from kangaroo_wbc_tools.cli import main

    def workers() -> int:
        return sum(t.name == "mujoco-step" for t in threading.enumerate())

    before = workers()
    rc = main(["demo", "--duration", "0.8", "--pipelined", "--no-report", "--no-bag", "--json"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and summary["fell"] is False and summary["qp_failures"] == 0
    assert summary["pipelined"] is True
    assert workers() == before + 1  # this run's simulator stepped in its own worker thread


def test_non_finite_controller_output_never_reaches_the_actuators(stand_run):
    """A command with a NaN force is rejected whole by the simulated robot's command guard: the
    step after it applies the last valid command, finite."""
    from kangaroo_wbc.components.samples import ActuatorCommand

    run, _ = stand_run
    bad = np.full(run.clm.n_a, np.nan)
    bad[0] = 10.0
    events = run.robot.submit(ActuatorCommand(bad, run.robot.time), 0.0)
    assert any("non-finite" in e.message for e in events)
    run.robot.step()
    assert np.all(np.isfinite(run.sim.command))


def test_tick_reports_its_stages(stand_run):
    """The per-stage times of a tick are disjoint parts of it."""
    import time

    run, _ = stand_run
    for _ in range(20):
        w0 = time.perf_counter()
        info = run.tick()
        wall_ms = (time.perf_counter() - w0) * 1e3
        st = info["stages_ms"]
        assert set(st) == {"sensors", "state_estimation", "model_update", "contact_wrench", "controller", "command",
                           "simulator_step"}
        assert all(v >= 0.0 for v in st.values())
        assert sum(st.values()) <= wall_ms
        assert info["status"] == "control"


@pytest.fixture(scope="module")
def pipelined_run():
    """The same boot and standing with the simulator stepping alongside the nodes (one-tick delay)."""
    return _stand(pipelined=True)


def test_pipelined_loop_stands_with_the_one_tick_command_delay(pipelined_run):
    run, s = pipelined_run
    assert not s["fell"]
    assert s["qp_failures"] == 0 and s["safe_mode_ticks"] == 0
    assert s["com_max_error_m"] < 0.005
    assert s["calibration_offset_error_m"] < 1e-4
    assert abs(s["fz_sum_over_mg"] - 1.0) < 0.15


def test_pipelined_tick_applies_the_previous_command_and_never_a_nan(pipelined_run, monkeypatch):
    """Tick k's command drives the step that runs alongside tick k+1; a non-finite controller
    output becomes the supervisor's finite safe command before it is queued."""
    run, _ = pipelined_run
    limits = run.sim.force_limits
    for _ in range(5):
        info = run.tick()
        queued = run.pending_command.force.copy()
        assert info["status"] == "control" and set(info["stages_ms"]) >= {"sensors", "simulator_step"}
        run.tick()  # its step runs with `queued`
        run.finish()
        np.testing.assert_array_equal(run.sim.command, np.clip(queued, -limits, limits))
    t = run.sim.time
    run.finish()  # nothing under way: no-op
    assert run.sim.time == t

    class Bad:
        tau_a = np.full(run.clm.n_a, np.nan)

    monkeypatch.setattr(run.wbc, "step", lambda *a, **k: Bad())
    info = run.tick()
    assert info["status"] == "safe" and np.all(np.isfinite(run.pending_command.force))
    run.tick()
    run.finish()
    assert np.all(np.isfinite(run.sim.command))
