"""``kangaroo-wbc soak``: long run of the closed loop (memory, latency drift, safe mode).

``--processes one`` (default): the components chained in this process
(:mod:`kangaroo_wbc_tools.pipeline.soak`). ``--processes separate|composed``: the node graph as it is
deployed (:func:`kangaroo_wbc_tools.graph.processes.soak_graph`), each process' memory and the
command latency sampled every minute. Keys: ``docs/safety.md``. Behaviour names are the demo's
(``kangaroo-wbc demo``). SIGINT / SIGTERM end the soak at a tick boundary with the report of the
time run (``"interrupted": true``, exit code 130 / 143).
"""

from __future__ import annotations

import argparse

from kangaroo_wbc.progress import Progress
from kangaroo_wbc_tools.cli.common import (
    BEHAVIOURS,
    BEHAVIOURS_HELP,
    MAX_SOAK_MINUTES,
    MAX_STARTUP_TIMEOUT_S,
    TICK_S,
    StopSignals,
    UsageError,
    add_behaviour_option,
    add_json_flag,
    add_progress_flag,
    fail,
    number_in,
    print_result,
    seed,
    startup_timeout,
)

DEFAULT_SIM_MODE = "realtime"
DEFAULT_STARTUP_TIMEOUT_S = 120.0
#: The soak's behaviours: the demo's (the walk at its default command; the soak takes no --cmd-vel).
SOAK_BEHAVIOURS_HELP = BEHAVIOURS_HELP.replace("walk (at --cmd-vel)", "walk (at the default 0.3 m/s forward)")


def _validate(args: argparse.Namespace) -> None:
    graph = args.processes != "one"
    for value, flag in ((args.sim_mode, "--sim-mode"), (args.startup_timeout, "--startup-timeout")):
        if value is not None and not graph:
            raise UsageError(f"kangaroo-wbc soak: error: {flag} applies to --processes separate|composed only")
    if graph and args.behaviour == "push":
        raise UsageError("kangaroo-wbc soak: error: --behaviour push needs --processes one (the sim node applies "
                         "no push)")


def _run(args: argparse.Namespace) -> int:
    progress = Progress.from_args(args)
    with StopSignals() as stop:
        if args.processes != "one":
            from kangaroo_wbc_tools.graph.processes import GraphStartError, soak_graph

            try:
                report = soak_graph(args.minutes, processes=args.processes,
                                    sim_mode=args.sim_mode or DEFAULT_SIM_MODE,
                                    behaviour=BEHAVIOURS[args.behaviour], seed=args.seed, progress=progress,
                                    startup_timeout_s=args.startup_timeout or DEFAULT_STARTUP_TIMEOUT_S,
                                    stop=stop)
            except GraphStartError as exc:
                fail(f"kangaroo-wbc soak: error: {exc}", args.json)
                return stop.exit_code or 1
            report["behaviour"] = args.behaviour
            ok = report["ok"]
        else:
            from kangaroo_wbc_tools.pipeline.soak import run_soak

            report = run_soak(args.minutes, behaviour=args.behaviour, seed=args.seed, progress=progress, stop=stop)
            ok = not (report["fell"] or report["safe_mode_entries"])
        stop.record(report)
    print_result(report, args.json)
    if stop.interrupted:
        assert stop.exit_code is not None  # interrupted: an exit code
        return stop.exit_code
    return 0 if ok else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("soak", help="run the closed loop for minutes; report memory and latency drift",
                       description=__doc__.split("\n\n", 1)[1])
    p.add_argument("--minutes", type=number_in(TICK_S / 60.0, MAX_SOAK_MINUTES, unit=" min",
                                              hint=f" (at least one control tick, {TICK_S * 1e3:g} ms; at most a day)"),
                   default=10.0, metavar="MIN",
                   help=f"minutes after boot, up to {MAX_SOAK_MINUTES:g}: simulated (one) or wall-clock "
                        "(separate/composed) (default 10)")
    add_behaviour_option(p, help_text=SOAK_BEHAVIOURS_HELP)
    p.add_argument("--seed", type=seed, default=0, help="simulator seed (default 0)")
    p.add_argument("--processes", choices=("one", "separate", "composed"), default="one",
                   help="one: the components in this process (simulated minutes); separate / composed: the node "
                        "graph as deployed (wall-clock minutes) (default one)")
    p.add_argument("--sim-mode", choices=("realtime", "lockstep"), default=None,
                   help=f"separate/composed: the simulator's mode (default {DEFAULT_SIM_MODE})")
    p.add_argument("--startup-timeout", type=startup_timeout, default=None, metavar="S",
                   help=f"separate/composed: wall time [s] for the controller to become ready, > 0 and <= "
                        f"{MAX_STARTUP_TIMEOUT_S:g} "
                        f"(default {DEFAULT_STARTUP_TIMEOUT_S:g})")
    add_json_flag(p)
    add_progress_flag(p)
    p.set_defaults(func=_run, validate=_validate)
