"""Smoke test of ``kangaroo-wbc bench --quick --json`` (integration: runs the whole benchmark briefly).

Checks the report's shape — keys present, timings finite and positive, ``null`` only with a
reason — never the timings themselves: they depend on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math

import pytest

from kangaroo_wbc_tools import cli
from kangaroo_wbc_tools.cli import bench_cmd

TOP_KEYS = ("machine", "config", "closure_fk_ms", "closure_fk_model", "rnea_ms", "crba_ms", "models",
            "estimator_step_ms", "wrench_step_ms", "wbc_step_ms_double", "wbc_step_ms_single", "pipeline_ms",
            "sim_rtf_all_nodes", "sim_rtf_all_nodes_lockstep", "qp_solvers", "peer", "references_ms", "null_reasons")
MODEL_KEYS = ("closure_fk_ms", "error_and_jacobian_ms", "mapping_jacobian_ms", "rnea_ms", "crba_ms",
              "inverse_dynamics_ms", "projected_dynamics_ms")


def _parser() -> argparse.ArgumentParser:
    """The CLI parser; registers ``bench`` itself if the CLI does not list it (yet)."""
    if "kangaroo_wbc_tools.cli.bench_cmd" in cli.SUBCOMMAND_MODULES:
        return cli.build_parser()
    parser = argparse.ArgumentParser(prog="kangaroo-wbc")
    bench_cmd.register(parser.add_subparsers(dest="command"))
    return parser


def _positive_finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def _check_timing(t: dict, where: str) -> None:
    for k in ("median", "p99"):
        assert _positive_finite(t[k]), f"{where}.{k} = {t[k]!r}"
    assert t["p99"] >= t["median"], where
    assert t["n"] > 0, where


@pytest.fixture(scope="module")
def report() -> dict:
    """The JSON report of one quick run (its last stdout line). The peer environment is used if it
    is there, never created (no network in the tests)."""
    args = _parser().parse_args(["bench", "--quick", "--json", "--no-peer-setup"])
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert args.func(args) == 0
    return json.loads(buf.getvalue().strip().splitlines()[-1])


def test_report_has_every_key(report):
    for key in TOP_KEYS:
        assert key in report, key
    for key in ("cpu_model", "cores_usable", "python", "numpy", "pinocchio"):
        assert report["machine"][key], key
    assert report["config"]["quick"] is True
    speed = report["machine"]["speed_reference"]  # the machine's speed on fixed workloads
    for key in ("python_sum_range_1000_us", "numpy_small_ops_us", "numpy_matmul_64_us"):
        assert _positive_finite(speed[key]["best_us"]) and speed[key]["median_us"] >= speed[key]["best_us"], key


def test_timings_are_finite_and_positive(report):
    _check_timing(report["closure_fk_ms"], "closure_fk_ms")
    _check_timing(report["rnea_ms"], "rnea_ms")
    assert report["models"], "no model was benchmarked"
    for name, m in report["models"].items():
        for key in MODEL_KEYS:
            _check_timing(m[key], f"{name}.{key}")
        assert m["closure_fk_ms"]["residual_max_sampled"] <= m["closure_fk_ms"]["tol"]


def test_null_values_come_with_a_reason(report):
    for key in ("estimator_step_ms", "wrench_step_ms", "wbc_step_ms_double", "wbc_step_ms_single", "pipeline_ms"):
        if report[key] is None:
            assert report["null_reasons"].get(key), key
        else:
            _check_timing(report[key], key)
    for key in ("sim_rtf_all_nodes", "sim_rtf_all_nodes_lockstep"):
        rtf = report[key]
        # null only without the Kangaroo model, never because the closed loop failed
        reason = report["null_reasons"].get(key, "")
        assert (rtf is None and reason.startswith("needs the Kangaroo model")) or _positive_finite(rtf), (key, reason)


def test_qp_solver_block_compares_every_solver_of_the_facade(report):
    from kangaroo_wbc.control.qp_solvers import DEFAULT_SOLVER, SOLVERS

    block = report["qp_solvers"]
    assert block["qps"] > 0 and block["default"] == DEFAULT_SOLVER
    assert set(block["solvers"]) == set(SOLVERS)
    for name, r in block["solvers"].items():
        assert _positive_finite(r["median_us"]) and r["p99_us"] >= r["median_us"], name
    assert block["solvers"][DEFAULT_SOLVER]["within_tolerance"]
    assert block["fastest"] in SOLVERS


def test_peer_block_reports_a_status(report):
    peer = report["peer"]
    assert peer["name"] == "toolbox-parallel-robots"
    assert peer["status"]
    if peer.get("fk_speedup") is not None:
        assert _positive_finite(peer["fk_speedup"])
    # where the pinocchio-3 peer is, or why it is missing; per model, agreement next to the speed ratio
    assert peer["peer_env"]["state"] in ("ready", "missing", "failed"), peer["peer_env"]
    assert peer["peer_env"]["python"] or peer["peer_env"]["reason"]
    assert set(peer["agreement"]["models"]) == set(report["models"])
    for name, a in peer["agreement"]["models"].items():
        if a["compared"] and a.get("method"):
            assert isinstance(a["frames_agree"], bool), name
            assert a["frame_placement_max_diff_m"] >= 0 and _positive_finite(a["speedup_vs_ours"]), name
        else:
            assert a["reason"], name


def test_node_graph_figures_of_the_shipped_path(report):
    """Both deployments ran over DDS: rates, latency and each node's CPU per sample are reported."""
    graph = report["node_graph"]
    for deployment in ("composed", "separate"):
        g = graph[deployment]
        assert "error" not in g, g
        assert _positive_finite(g["real_time_factor"]) and g["fell"] is False
        assert all(code == 0 for code in g["exit_codes"].values()), g["exit_codes"]
        assert g["topic_rates_hz_wall"]["actuators/command"] > 0
        assert _positive_finite(g["command_latency_ms"]["p99"])
        nodes = {"composed"} if deployment == "composed" else {
            "sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller"}
        assert nodes <= set(g["nodes"]), g["nodes"]
        for name in nodes:
            assert _positive_finite(g["nodes"][name]["cpu_ms_per_tick"]), name


def test_cpu_ms_per_robot_ms_sums_the_processes_over_the_real_time_factor() -> None:
    from kangaroo_wbc_tools.bench.runner import cpu_ms_per_robot_ms

    nodes = {"sim": {"cpu_load": 0.5}, "whole_body_controller": {"cpu_load": 0.7}}
    assert cpu_ms_per_robot_ms(nodes, 0.6) == 2.0
    assert cpu_ms_per_robot_ms({"sim": {"cpu_load": None}}, 1.0) is None
    assert cpu_ms_per_robot_ms(nodes, None) is None and cpu_ms_per_robot_ms({}, 1.0) is None
