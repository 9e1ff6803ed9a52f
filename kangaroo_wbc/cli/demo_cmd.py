"""``kangaroo-wbc demo`` and ``kangaroo-wbc evaluate estimation``: the closed loop in simulation."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kangaroo_wbc.cli.common import add_json_flag, print_json, progress

BEHAVIOURS = ["stand", "squat", "sway", "single_support", "push"]


def _run(args: argparse.Namespace, behaviour: str) -> tuple[dict, object]:
    from kangaroo_wbc.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    run = ClosedLoopRun(LoopConfig(behaviour=behaviour, duration_s=args.duration, seed=args.seed,
                                   pipelined=getattr(args, "pipelined", False)))
    summary = run.run(progress=lambda it, total, desc: progress(it, total, desc, enabled=not args.json))
    return summary, run


def _demo(args: argparse.Namespace) -> int:
    _validate_demo(args)
    if args.processes in ("separate", "composed"):
        from kangaroo_wbc.pipeline.processes import GraphStartError, run_graph

        try:
            summary = run_graph(processes=args.processes, duration_s=args.duration, behaviour=args.behaviour,
                                sim_mode=args.sim_mode, drop_ratio=args.drop_ratio, seed=args.seed,
                                show_progress=not args.json, startup_timeout_s=args.startup_timeout)
        except GraphStartError as exc:
            sys.stderr.write(f"kangaroo-wbc demo: error: {exc}\n")
            return 1
        print_json(summary) if args.json else [print(f"{k:<32}{v}") for k, v in summary.items()]
        return 1 if summary.get("fell") is not False else 0
    summary, run = _run(args, args.behaviour)
    out = Path(args.out)
    if not args.no_report:
        from kangaroo_wbc.pipeline.report import write_report

        summary["report_files"] = write_report(out, run, summary)
    if not args.no_bag:
        from kangaroo_wbc.pipeline.bag import write_run_bag

        summary["bag"] = str(out / "bag")
        summary["bag_messages"] = sum(write_run_bag(out / "bag", run, decimation=args.bag_decimation).values())
    if args.json:
        print_json(summary)
    else:
        for k, v in summary.items():
            print(f"{k:<32}{v}")
    return 0 if not summary["fell"] else 1


def _evaluate(args: argparse.Namespace) -> int:
    summary, _ = _run(args, "sway")
    keys = ["calibration_iterations", "calibration_offset_error_m", "passive_position_rmse_rad",
            "passive_velocity_rmse_rad_s", "max_closure_error", "fz_sum_over_mg", "zmp_rmse_m",
            "base_position_drift_m", "fell", "estimator_ms_p50", "estimator_ms_p99"]
    result = {k: summary[k] for k in keys}
    print_json(result) if args.json else [print(f"{k:<32}{v}") for k, v in result.items()]
    return 0


def _drop_ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {value}")
    return value


def _one_line_error(message: str) -> None:
    sys.stderr.write(f"kangaroo-wbc demo: error: {message}\n")
    raise SystemExit(2)


def _validate_demo(args: argparse.Namespace) -> None:
    """Cross-option checks, before anything runs (one line, exit code 2)."""
    graph = args.processes in ("separate", "composed")
    if args.drop_ratio and not graph:
        _one_line_error("--drop-ratio needs --processes separate or composed")
    if args.sim_mode != "lockstep" and not graph:
        _one_line_error("--sim-mode needs --processes separate or composed")
    if args.pipelined and graph:
        _one_line_error("--pipelined applies to --processes one only")
    if not args.duration > 0.0:
        _one_line_error(f"--duration must be > 0, got {args.duration}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="closed-loop demo in the MuJoCo simulator (estimators + WBC in the loop)")
    p.add_argument("--behaviour", default="stand", choices=BEHAVIOURS)
    p.add_argument("--duration", type=float, default=10.0, help="simulated time after boot [s]")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="reports/demo", help="report folder (plots, summary, bag)")
    p.add_argument("--processes", default="one", choices=["one", "separate", "composed"],
                   help="one: the components chained in this process, no ROS (report, bag); separate: the four "
                        "node processes over DDS; composed: the composed executable (one process, contract topics "
                        "published)")
    p.add_argument("--sim-mode", default="lockstep", choices=["lockstep", "realtime"],
                   help="separate/composed: lockstep (once the controller is ready, one 1 ms step per command; "
                        "--duration is simulated time) or realtime (the simulator follows the wall clock)")
    p.add_argument("--drop-ratio", type=_drop_ratio, default=0.0,
                   help="separate/composed: the simulator drops this fraction of the commands (0 <= x < 1)")
    p.add_argument("--startup-timeout", type=float, default=120.0,
                   help="separate/composed: wall time [s] for the controller to become ready")
    p.add_argument("--pipelined", action="store_true",
                   help="single process: the simulator steps in a worker thread alongside the estimators and the "
                        "controller, each command driving the step after (the node graph's one-tick delay); "
                        "default: lockstep, each command drives the very next step")
    p.add_argument("--no-report", action="store_true")
    p.add_argument("--no-bag", action="store_true")
    p.add_argument("--bag-decimation", type=int, default=1, help="record every N-th tick")
    add_json_flag(p)
    p.error = _one_line_error  # argparse's own errors too: one line, exit code 2
    p.set_defaults(func=_demo)

    e = sub.add_parser("evaluate", help="evaluate a component against the simulator's ground truth")
    esub = e.add_subparsers(dest="what", metavar="WHAT")
    esub.required = True
    ee = esub.add_parser("estimation", help="calibration, passive state, wrench/ZMP, base drift (stand + sway)")
    ee.add_argument("--duration", type=float, default=10.0)
    ee.add_argument("--seed", type=int, default=0)
    add_json_flag(ee)
    ee.set_defaults(func=_evaluate)
