"""The ``kangaroo-wbc bench`` run: core benchmarks, pipeline stages, peers, machine → one report."""

from __future__ import annotations

import importlib.util
import sys
import time
from dataclasses import dataclass, field

from kangaroo_wbc_tools.bench import core, peer_env, peers, qp_solvers, stages
from kangaroo_wbc_tools.bench.machine import machine_info, speed_reference
from kangaroo_wbc_tools.bench.workload import available_models, load_model, reachable_trajectory

#: Reference numbers from the papers (C++), for the table in ``docs/performance.md`` [ms].
PAPER_REFERENCES_MS = {
    "kangaroo_paper_estimator_model_update_id": 0.38,
    "kangaroo_paper_contact_wrench": 0.03,
    "centroidal_wbc_tocabi_33dof_single_support": 0.613,
    "centroidal_wbc_tocabi_33dof_double_support": 0.981,
}

#: Context targets (medians unless said) [ms]; reported, never asserted.
TARGETS_MS = {"estimator_step": 0.25, "wrench_step": 0.03, "wbc_step_median": 0.5, "wbc_step_p99": 1.0,
              "pipeline_p99": 1.0, "closure_fk_peer_speedup_min": 10.0}

#: Keys of the stages that need the Kangaroo model and the estimation / control / sim packages.
STAGE_KEYS = ("estimator_step_ms", "wrench_step_ms", "wrench_node_update_ms", "wbc_step_ms_double",
              "wbc_step_ms_single", "pipeline_ms", "sim_rtf_all_nodes", "sim_rtf_all_nodes_lockstep")


@dataclass
class BenchConfig:
    """Options of a run (see ``kangaroo-wbc bench --help``)."""

    iterations: int = 2000
    warmup: int = 200
    peer_iterations: int = 60
    peer_warmup: int = 5
    peer_pythons: list[str] = field(default_factory=list)
    peers: bool = True
    peer_setup: bool = True  # create / update the peer venv when missing (peer_env)
    fixtures: str | None = None
    kangaroo_dir: str | None = None
    rate_hz: float = 1000.0
    quick: bool = False
    verbose: bool = True


def _log(cfg: BenchConfig, msg: str) -> None:
    if cfg.verbose:
        print(msg, file=sys.stderr, flush=True)


def run(cfg: BenchConfig) -> dict:
    """Run every benchmark and return the report (the JSON object of ``bench --json``)."""
    t_start = time.perf_counter()
    _log(cfg, "bench: machine speed reference (fixed Python and numpy workloads)")
    report: dict = {"machine": {**machine_info(), "speed_reference": speed_reference()},
                    "config": {"iterations": cfg.iterations, "warmup": cfg.warmup, "rate_hz": cfg.rate_hz,
                               "peer_iterations": cfg.peer_iterations, "quick": cfg.quick,
                               "fk_tol": core.FK_TOL},
                    "closure_fk_ms": None, "closure_fk_model": None, "rnea_ms": None, "crba_ms": None}
    reasons: dict[str, str] = {}
    specs, missing = available_models(cfg.fixtures, cfg.kangaroo_dir)
    report["models_missing"] = missing
    report["models"] = {}
    n = cfg.iterations + cfg.warmup
    peer_inputs: list[peers.PeerModelInput] = []
    kangaroo = None
    for spec in specs:
        _log(cfg, f"bench: {spec.name}: loading and tracing {n} samples")
        clm = load_model(spec)
        traj, states = reachable_trajectory(clm, n, cfg.rate_hz)
        _log(cfg, f"bench: {spec.name}: core benchmarks")
        res = core.bench_model(clm, traj, states, cfg.warmup)
        entry = {"nq": int(clm.model.nq), "nv": int(clm.model.nv), "n_actuated": clm.n_a, "n_passive": clm.n_u,
                 "n_constraints": clm.n_c, "n_closures": len(clm.closures),
                 "trajectory": {"amplitude": [float(f"{a:.3g}") for a in traj.amplitude],
                                "frequency_hz": [round(float(f), 3) for f in traj.frequency_hz]}}
        entry.update(res.as_dict())
        report["models"][spec.name] = entry
        if report["closure_fk_ms"] is None:  # models come Kangaroo first, then the digit-like legs
            report["closure_fk_ms"] = entry["closure_fk_ms"]
            report["closure_fk_model"] = spec.name
            report["rnea_ms"] = entry["rnea_ms"]
            report["crba_ms"] = entry["crba_ms"]
        if spec.kind == "kangaroo":
            kangaroo = (spec, clm)
        m_peer = min(cfg.peer_iterations + cfg.peer_warmup, n)
        peer_inputs.append(peers.PeerModelInput(
            name=spec.name, clm=clm, urdf=str(spec.urdf), closures=str(spec.closures),
            theta_a=traj.theta_a[:m_peer], q0=clm.q_ref.copy(), ours_q=states[:m_peer],
            ours_fk_median_ms=res.timings["closure_fk"].median,
            ours_jacobian_median_ms=res.timings["mapping_jacobian"].median))
    if report["closure_fk_ms"] is None:
        reasons["closure_fk_ms"] = "no benchmark model found: " + "; ".join(f"{k}: {v}" for k, v in missing.items())

    _log(cfg, "bench: pipeline stages")
    stage_results = stages.run_stages(kangaroo, cfg.iterations, cfg.warmup, cfg.rate_hz, quick=cfg.quick)
    for key in STAGE_KEYS:
        value, reason = stage_results.get(key, (None, "not measured"))
        report[key] = value
        if value is None:
            reasons[key] = reason
    report["stages_detail"] = stage_results.get("detail", {})

    _log(cfg, "bench: QP solvers on the closed loop's QPs")
    report["qp_solvers"] = qp_solver_block(0.5 if cfg.quick else 1.5)

    _log(cfg, "bench: node graph (composed and separate processes over DDS, realtime)")
    report["node_graph"] = node_graph(5.0 if cfg.quick else 20.0)

    if cfg.peers and peer_inputs:
        _log(cfg, f"bench: peer toolbox-parallel-robots ({cfg.peer_iterations} samples per model and method)")
        report["peer"] = run_peer(cfg, peer_inputs)
    else:
        report["peer"] = {"name": "toolbox-parallel-robots", "status": "skipped (--no-peers)" if not cfg.peers
                          else "skipped: no model", "fk_speedup": None}
    report["references_ms"] = {"paper": PAPER_REFERENCES_MS, "targets": TARGETS_MS}
    report["null_reasons"] = reasons
    report["wall_time_s"] = round(time.perf_counter() - t_start, 1)
    return report


def peer_interpreters(cfg: BenchConfig) -> tuple[list[tuple[str, str]], dict, list[str]]:
    """The interpreters to run the peer under, the peer environment's entry of the report and what
    is missing.

    The pinocchio-3 interpreter is ``--peer-python`` when given, else the bench's peer venv
    (:mod:`kangaroo_wbc_tools.bench.peer_env`: found, or created on first use unless ``--no-peer-setup``).
    This interpreter runs the peer too when the toolbox is installed in it (SLSQP under pinocchio 4).
    """
    pythons: list[tuple[str, str]] = []
    missing: list[str] = []
    if importlib.util.find_spec("toolbox_parallel_robots") is not None:
        pythons.append((sys.executable, "this interpreter"))
    if cfg.peer_pythons:
        pythons += [(p, "--peer-python") for p in cfg.peer_pythons if p != sys.executable]
        env_entry = {"state": "not used (--peer-python given)"}
    else:
        env = peer_env.ensure(setup=cfg.peer_setup,
                              log=lambda msg: print(f"bench: {msg}", file=sys.stderr, flush=True))
        env_entry = env.as_dict()
        if env.python is not None:
            pythons.append((env.python, "peer venv (pinocchio 3)"))
        else:
            missing.append(f"pinocchio-3 peer environment missing: {env.reason}")
    return pythons, env_entry, missing


def run_peer(cfg: BenchConfig, peer_inputs: list[peers.PeerModelInput]) -> dict:
    """The ``peer`` block: the toolbox under each interpreter of :func:`peer_interpreters`."""
    pythons, env_entry, missing = peer_interpreters(cfg)
    if not any(label == "this interpreter" for _, label in pythons):
        env_entry["this_interpreter"] = "toolbox-parallel-robots not installed here; not run"
    block = peers.compare_with_peer(peer_inputs, pythons, cfg.peer_warmup, notes=missing)
    block["peer_env"] = env_entry
    return block


def qp_solver_block(duration_s: float) -> dict:
    """The ``qp_solvers`` block: every solver of the facade on the QPs the controller solved in
    ``duration_s`` of the in-process closed loop (:mod:`kangaroo_wbc_tools.bench.qp_solvers`); per solver
    the median / p99 solve time [µs], failures and whether it met the KKT tolerance, the fastest
    within it and the default."""
    res = qp_solvers.run(duration_s)
    keep = ("median_us", "p99_us", "failures", "kkt_max", "within_tolerance")
    return {"solvers": {name: {k: r[k] for k in keep} for name, r in res["solvers"].items()},
            "fastest": res["fastest"], "default": res["default"], "qps": res["meta"]["qps"]}


def node_graph(duration_s: float) -> dict:
    """The shipped node graph (sim backend, realtime) for ``duration_s`` of wall time, composed and
    separate: real-time factor, wall rates of the loop's topics, command latency, and per node the
    process CPU time per sample (executor, DDS, message conversion and compute) and its rate."""
    from kangaroo_wbc_tools.graph.processes import GraphStartError, run_graph

    out: dict = {"duration_s": duration_s}
    for processes in ("composed", "separate"):
        try:
            r = run_graph(processes=processes, duration_s=duration_s, sim_mode="realtime")
        except (GraphStartError, OSError) as exc:
            out[processes] = {"error": str(exc)}
            continue
        out[processes] = {k: r[k] for k in ("real_time_factor", "topic_rates_hz_wall", "command_latency_ms", "fell",
                                            "nodes", "exit_codes")}
        out[processes]["cpu_ms_per_robot_ms"] = cpu_ms_per_robot_ms(r.get("nodes", {}), r.get("real_time_factor"))
    return out


def cpu_ms_per_robot_ms(nodes: dict, real_time_factor: float | None) -> float | None:
    """CPU time of all the graph's processes per millisecond of robot (simulated) time: the sum of
    the nodes' ``cpu_load`` (CPU seconds per wall second, each process's own) over the real-time
    factor. Two cores give at most 2 at real time; None without the figures."""
    loads = [n.get("cpu_load") for n in nodes.values()]
    if not loads or any(x is None for x in loads) or not real_time_factor:
        return None
    return round(sum(loads) / real_time_factor, 3)
