"""``kangaroo-wbc soak``: long run of the closed loop (memory, latency drift, safe mode).

``--processes one`` (default): the components chained in this process
(:mod:`kangaroo_wbc.pipeline.soak`). ``--processes separate|composed``: the node graph as it is
deployed (:func:`kangaroo_wbc.pipeline.processes.soak_graph`), each process' memory and the
command latency sampled every minute. Keys: ``docs/safety.md``.
"""

from __future__ import annotations

import argparse

from kangaroo_wbc.cli.common import add_json_flag, print_json, progress


def _run(args: argparse.Namespace) -> int:
    if args.processes != "one":
        from kangaroo_wbc.pipeline.processes import GraphStartError, soak_graph

        try:
            report = soak_graph(args.minutes, processes=args.processes, sim_mode=args.sim_mode,
                                behaviour=args.behaviour, seed=args.seed, show_progress=not args.json)
        except GraphStartError as exc:
            print_json({"ok": False, "error": str(exc)}) if args.json else print(f"soak: {exc}")
            return 1
        print_json(report) if args.json else [print(f"{k:<32}{v}") for k, v in report.items()]
        return 0 if report["ok"] else 1
    from kangaroo_wbc.pipeline.soak import run_soak

    report = run_soak(args.minutes, behaviour=args.behaviour, seed=args.seed,
                      progress=lambda it, total, desc: progress(it, total, desc, enabled=not args.json))
    if args.json:
        print_json(report)
    else:
        for key, value in report.items():
            print(f"{key:<32}{value}")
    return 1 if report["fell"] or report["safe_mode_entries"] else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("soak", help="run the in-process closed loop for minutes; report memory and latency drift")
    p.add_argument("--minutes", type=float, default=10.0, help="simulated minutes after boot (default 10)")
    p.add_argument("--behaviour", default="stand", help="behaviour to run (default stand)")
    p.add_argument("--seed", type=int, default=0, help="simulator seed (default 0)")
    p.add_argument("--processes", choices=("one", "separate", "composed"), default="one",
                   help="one: the components in this process (simulated minutes); separate / composed: the node "
                        "graph as deployed (wall-clock minutes)")
    p.add_argument("--sim-mode", choices=("realtime", "lockstep"), default="realtime",
                   help="separate/composed: the simulator's mode (default realtime)")
    add_json_flag(p)
    p.set_defaults(func=_run)
