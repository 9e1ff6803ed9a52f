"""``kangaroo-wbc soak``: long run of the in-process closed loop (memory, latency drift, safe mode).

See :mod:`kangaroo_wbc.pipeline.soak` for the reported keys and ``docs/safety.md``.
"""

from __future__ import annotations

import argparse

from kangaroo_wbc.cli.common import add_json_flag, print_json, progress


def _run(args: argparse.Namespace) -> int:
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
    add_json_flag(p)
    p.set_defaults(func=_run)
