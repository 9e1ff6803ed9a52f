"""``kangaroo-wbc bench``: timings of the core, the pipeline stages and a peer, in one run.

Median and 99th percentile [ms] over ``--iterations`` calls after a warm-up, on a smooth
actuator trajectory (new inputs every call). See ``docs/performance.md`` for the table and how to
reproduce it.

Its actions: ``bench qp-solvers`` (every QP solver on the QPs of the closed loop,
:mod:`kangaroo_wbc_tools.bench.qp_solvers`) and ``bench peer-env`` (create, update or check the peer
library's environment, :mod:`kangaroo_wbc_tools.bench.peer_env`; ``make peer-env``).
"""

from __future__ import annotations

import argparse

from kangaroo_wbc.progress import Progress
from kangaroo_wbc_tools.cli.common import (
    BEHAVIOURS_HELP,
    add_json_flag,
    add_optional_actions,
    add_progress_flag,
    behaviour,
    existing_folder,
    kangaroo_folder,
    number_in,
    output_folder,
    print_json,
    python_interpreter,
    seed,
)

QUICK_ITERATIONS = 50
QUICK_PEER_ITERATIONS = 3
#: Timed calls per benchmark at most (2000 is the default; a million takes hours), peer samples at most.
MAX_ITERATIONS = 1_000_000
MAX_PEER_ITERATIONS = 10_000
#: Closed-loop seconds ``bench qp-solvers`` records at most: every QP is kept in memory (a second
#: is a thousand problems) and solved again by every solver.
MAX_QP_DURATION_S = 10.0
#: ... and at least: the controller solves its first QP once the estimators are ready (about 0.2 s).
MIN_QP_DURATION_S = 0.5


def _fmt(t: dict | None) -> str:
    if not t:
        return "n/a"
    return f"{t['median']:.4g} ms (p99 {t['p99']:.4g})"


def _print_text(r: dict) -> None:
    mach = r["machine"]
    print(f"machine      {mach['cpu_model']}, {mach['cores_usable']} cores, python {mach['python']}, "
          f"numpy {mach['numpy']}, pinocchio {mach['pinocchio']}")
    print(f"closure FK   {_fmt(r['closure_fk_ms'])} on {r['closure_fk_model']}")
    for name, m in r["models"].items():
        print(f"[{name}] nq={m['nq']} actuated={m['n_actuated']} passive={m['n_passive']} rows={m['n_constraints']}")
        for key, t in m.items():
            if key.endswith("_ms") and isinstance(t, dict):
                print(f"  {key[:-3]:<30}{_fmt(t)}")
    for key in ("estimator_step_ms", "wrench_step_ms", "wbc_step_ms_double", "wbc_step_ms_single", "pipeline_ms"):
        val = r.get(key)
        label = key.replace("_ms_", "_").removesuffix("_ms")
        print(f"{label:<32}{_fmt(val) if val else 'null: ' + r['null_reasons'].get(key, '')}")
    for key in ("sim_rtf_all_nodes", "sim_rtf_all_nodes_lockstep"):
        rtf = r.get(key)
        print(f"{key:<32}{rtf if rtf is not None else 'null: ' + r['null_reasons'].get(key, '')}")
    qp = r.get("qp_solvers")
    if qp:
        times = ", ".join(f"{n} {q['median_us']:.1f}" + ("" if q["within_tolerance"] else " (off tolerance)")
                          for n, q in qp["solvers"].items())
        print(f"QP solvers   median us on {qp['qps']} closed-loop QPs: {times}; fastest {qp['fastest']}, "
              f"default {qp['default']}")
    peer = r.get("peer", {})
    line = f"peer         {peer.get('name')}: {peer.get('status')}; fk_speedup {peer.get('fk_speedup')}"
    if peer.get("fk_speedup") is not None:
        line += f" ({peer['fk_speedup_method']} on {peer['fk_speedup_model']})"
    print(line)
    for name, a in peer.get("agreement", {}).get("models", {}).items():
        if a.get("method"):
            print(f"  {name:<20}{a['method']}: frames within {a['frame_placement_max_diff_m']:.3g} m "
                  f"(agree: {a['frames_agree']}), peer / ours {a['speedup_vs_ours']}")
        else:
            print(f"  {name:<20}{a.get('reason')}")


def _run(args: argparse.Namespace) -> int:
    from kangaroo_wbc_tools.bench.runner import BenchConfig, run

    iterations = QUICK_ITERATIONS if args.quick and args.iterations is None else (args.iterations or 2000)
    peer_iterations = args.peer_iterations or (QUICK_PEER_ITERATIONS if args.quick else 60)
    cfg = BenchConfig(iterations=iterations, warmup=max(5, min(200, iterations // 10)),
                      peer_iterations=peer_iterations, peer_warmup=1 if args.quick else 5,
                      peer_pythons=list(args.peer_python or []), peers=not args.no_peers,
                      peer_setup=not args.no_peer_setup,
                      fixtures=args.fixtures, kangaroo_dir=args.kangaroo_dir,
                      quick=args.quick, verbose=not args.json)
    report = run(cfg)
    if args.json:
        print_json(report)
    else:
        _print_text(report)
    return 0


def _qp_solvers(args: argparse.Namespace) -> int:
    from kangaroo_wbc_tools.bench import qp_solvers

    display = Progress.from_args(args)

    def progress(ticks, total=None, desc=""):  # the loop's ticks, named for what they are here
        return display(ticks, total=total, desc=f"recording the QPs of {args.behaviour}")

    res = qp_solvers.run(args.duration, args.behaviour, args.seed, progress=progress)
    display.note(f"solved {res['meta']['qps']} QPs with {len(res['solvers'])} solvers")
    if args.json:
        print_json(res)
        return 0
    m = res["meta"]
    print(f"{m['qps']} QPs ({m['n']} variables, {m['n_eq']} equalities, {m['n_in']} inequalities + box) from "
          f"{m['duration_s']:g} s of '{m['behaviour']}'; KKT tolerance {m['kkt_tolerance']:g}")
    print(qp_solvers.table(res))
    print(f"fastest within tolerance: {res['fastest']}; default: {res['default']}")
    return 0


def _peer_env(args: argparse.Namespace) -> int:
    from kangaroo_wbc_tools.bench import peer_env

    if args.check:
        env = peer_env.find(args.venv)
    else:
        env = peer_env.ensure(args.venv, log=Progress.from_args(args).note)
    if args.json:
        print_json({"ok": env.python is not None, **env.as_dict()})
    elif env.python:
        note = f" ({env.reason})" if env.reason else ""
        print(f"peer environment {env.state}: {env.python} (pinocchio {env.pinocchio}, "
              f"toolbox-parallel-robots {env.toolbox_version}){note}")
    else:
        print(f"peer environment {env.state}: {env.reason}")
    return 0 if env.python else 1


def _register_actions(p: argparse.ArgumentParser) -> None:
    actions = add_optional_actions(p, "bench_command")
    q = actions.add_parser("qp-solvers", help="every QP solver on the QPs the controller solves in the closed loop",
                           description="Record the QPs the whole-body controller solves in the in-process closed "
                                       "loop, then solve them with every solver: per solver the median / p99 / "
                                       "maximum time, the largest KKT residual and the failures (docs/"
                                       "performance.md, \"QP solvers\"). Set OPENBLAS_NUM_THREADS=1 as the node "
                                       "does.")
    q.add_argument("--duration", type=number_in(MIN_QP_DURATION_S, MAX_QP_DURATION_S, unit=" s"), default=1.5,
                   metavar="S", help=f"closed-loop seconds recorded, {MIN_QP_DURATION_S:g} <= S <= "
                                     f"{MAX_QP_DURATION_S:g} (default 1.5)")
    q.add_argument("--behaviour", type=behaviour, default="sway", metavar="NAME",
                   help=f"{BEHAVIOURS_HELP} (default sway)")
    q.add_argument("--seed", type=seed, default=0, help="seed of the closed loop (default 0)")
    add_json_flag(q)
    add_progress_flag(q)
    q.set_defaults(func=_qp_solvers)
    e = actions.add_parser("peer-env", help="create, update or check the peer library's environment (make peer-env)",
                           description="Create or update the peer library's virtual environment (pinocchio 3 and "
                                       "the pins of requirements-peer.txt) and print its interpreter; exit 1 if it "
                                       "is not usable.")
    e.add_argument("--venv", type=output_folder, default=None, metavar="DIR",
                   help="folder of the environment (default $KANGAROO_WBC_PEER_VENV, else "
                        "~/.cache/kangaroo_wbc/peer-venv)")
    e.add_argument("--check", action="store_true",
                   help="only say whether the environment is usable (create or change nothing; exit 1 if not)")
    add_json_flag(e)
    add_progress_flag(e)
    e.set_defaults(func=_peer_env)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="timings of the closure FK, dynamics, pipeline stages and a peer library")
    p.add_argument("--iterations", type=number_in(1, MAX_ITERATIONS, kind=int), default=None, metavar="N",
                   help=f"timed calls per benchmark, 1 <= N <= {MAX_ITERATIONS} (default 2000)")
    p.add_argument("--quick", action="store_true",
                   help=f"CI smoke run: {QUICK_ITERATIONS} iterations, {QUICK_PEER_ITERATIONS} peer samples")
    p.add_argument("--peer-iterations", type=number_in(1, MAX_PEER_ITERATIONS, kind=int), default=None, metavar="N",
                   help=f"samples per model and method for the peer library, 1 <= N <= {MAX_PEER_ITERATIONS} "
                        "(default 60; it is slow)")
    p.add_argument("--peer-python", type=python_interpreter, action="append", metavar="PYTHON",
                   help="run the peer under this interpreter (one with pin 3.x and the toolbox) instead of "
                        "the bench's peer environment; repeatable")
    p.add_argument("--no-peer-setup", action="store_true",
                   help="do not create or update the peer environment (requirements-peer.txt in "
                        "~/.cache/kangaroo_wbc/peer-venv or $KANGAROO_WBC_PEER_VENV); use it only if it is there")
    p.add_argument("--no-peers", action="store_true", help="skip the peer comparison")
    p.add_argument("--fixtures", type=existing_folder, default=None,
                   help="folder of third-party closed-chain models (<dir>/<name>/robot.urdf|yaml)")
    p.add_argument("--kangaroo-dir", type=kangaroo_folder, default=None,
                   help="folder with kangaroo.urdf and kangaroo_closures.yaml (default: the repository's urdf/)")
    add_json_flag(p)
    p.set_defaults(func=_run)
    _register_actions(p)
