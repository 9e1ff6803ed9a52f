"""Compare the bench's component medians of this checkout with another one's, interleaved.

    source scripts/env.sh && python scripts/bench_interleaved.py OTHER_CHECKOUT [--rounds 40] [--json]

Two benchmark runs taken one after the other on a shared or throttled VM differ by more than the
changes they are meant to show (the machine's speed reference, ``kangaroo-wbc bench``'s
``machine.speed_reference``, can move by a factor two within a minute). This script starts one
worker process per checkout, each with that checkout's code on ``sys.path`` and the objects its own
``run_stages`` builds for ``kangaroo-wbc bench`` (same model, same inputs, the shipped configuration
of that checkout); then, for ``--rounds`` rounds, it times each component in one worker and then the
other (the order alternating between rounds), ``--ticks`` calls each. Both versions see the same
minutes of the machine. Reported per component: the median over all calls of each checkout, the
relative difference of those, and the median of the per-round ratios.

The other checkout needs no environment of its own (this one's venv runs both), only the same
dependencies. Components: ``estimator_step_ms``, ``wrench_step_ms``, ``wbc_step_ms_double``,
``wbc_step_ms_single``, ``pipeline_ms`` (the keys of ``kangaroo-wbc bench --json``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parents[1]
#: the order in which ``run_stages`` times its closures
TIMED = ("estimator_step_ms", "wrench_step_ms", "wrench_node_update_ms", "wbc_step_ms_double",
         "wbc_step_ms_single", "pipeline_ms")
COMPARED = ("estimator_step_ms", "wrench_step_ms", "wbc_step_ms_double", "wbc_step_ms_single", "pipeline_ms")


def worker(ticks: int) -> None:
    """Build the checkout's stage closures (its ``run_stages`` with the timer replaced by a recorder),
    then answer one component name per stdin line with the call times [ms] of one pass, as JSON."""
    import numpy as np

    if (Path.cwd() / "kangaroo_wbc_tools").is_dir():
        from kangaroo_wbc_tools.bench import stages
        from kangaroo_wbc_tools.bench.workload import available_models, load_model
    else:  # checkouts from before the tools package (kangaroo_wbc.bench)
        from kangaroo_wbc.bench import stages  # type: ignore[no-redef]
        from kangaroo_wbc.bench.workload import available_models, load_model  # type: ignore[no-redef]
    recorded: list = []

    class _NoTiming:
        def as_dict(self) -> dict:
            return {}

    def record(fn, inputs, warmup=0, keep_outputs=True):
        for x in inputs[:warmup]:
            fn(x)
        recorded.append((fn, list(inputs[warmup:])))
        return _NoTiming(), []

    stages.time_calls = record
    specs, _ = available_models(None, None)
    kangaroo = [s for s in specs if s.kind == "kangaroo"]
    if not kangaroo:
        raise SystemExit("no Kangaroo model in this checkout (make model-files)")
    clm = load_model(kangaroo[0])
    result = stages.run_stages((kangaroo[0], clm), ticks, max(5, ticks // 10), 1000.0, quick=True)
    if len(recorded) != len(TIMED):
        reasons = {k: v[1] for k, v in result.items() if k != "detail" and v[0] is None}
        raise SystemExit(f"the stages did not all build: {reasons}")
    table = dict(zip(TIMED, recorded))
    gc.collect()
    gc.freeze()
    print("ready", flush=True)
    clock = time.perf_counter
    for line in sys.stdin:
        key = line.strip()
        if not key:
            break
        fn, xs = table[key]
        d = np.empty(len(xs))
        for k, x in enumerate(xs):
            t0 = clock()
            fn(x)
            d[k] = clock() - t0
        print(json.dumps((d * 1e3).tolist()), flush=True)


class _Worker:
    def __init__(self, root: Path, ticks: int) -> None:
        env = dict(os.environ, PYTHONPATH=str(root))
        self.root = root
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", "--ticks", str(ticks)],
                                     cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("ready"):
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise SystemExit(f"bench_interleaved: the worker of {root} did not start: {err.strip()[-600:]}")

    def time(self, key: str) -> list[float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(key + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.write("\n")
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("other", nargs="?", help="the other checkout (a git worktree of another commit)")
    p.add_argument("--rounds", type=int, default=40, help="interleaved rounds (default 40)")
    p.add_argument("--ticks", type=int, default=300, help="calls per component and round (default 300)")
    p.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        worker(a.ticks)
        return 0
    if not a.other:
        p.error("name the other checkout")
    other = Path(a.other).resolve()
    if not (other / "kangaroo_wbc").is_dir():
        p.error(f"{other} is not a kangaroo_wbc checkout")
    if a.rounds < 1 or a.ticks < 20:
        p.error("--rounds >= 1 and --ticks >= 20")
    import numpy as np

    sides = {"other": _Worker(other, a.ticks), "this": _Worker(HERE, a.ticks)}
    calls: dict = {s: {k: [] for k in COMPARED} for s in sides}
    ratios: dict = {k: [] for k in COMPARED}
    try:
        from tqdm import tqdm

        rounds = tqdm(range(a.rounds), desc="rounds", disable=a.json or not sys.stderr.isatty())
        for r in rounds:
            order = ("other", "this") if r % 2 == 0 else ("this", "other")
            for key in COMPARED:
                med = {}
                for side in order:
                    d = sides[side].time(key)
                    calls[side][key] += d
                    med[side] = float(np.median(d))
                ratios[key].append(med["this"] / med["other"])
    except KeyboardInterrupt:
        print("bench_interleaved: interrupted; the rounds so far:", file=sys.stderr)
    finally:
        for w in sides.values():
            w.close()
    report: dict = {"other": str(other), "this": str(HERE), "rounds": len(ratios[COMPARED[0]]), "ticks": a.ticks,
                    "components": {}}
    for key in COMPARED:
        if not calls["this"][key]:
            continue
        o, t = float(np.median(calls["other"][key])), float(np.median(calls["this"][key]))
        entry = {"other_median_ms": round(o, 5), "this_median_ms": round(t, 5),
                 "difference_pct": round(100.0 * (t / o - 1.0), 2),
                 "median_round_ratio_pct": round(100.0 * (float(np.median(ratios[key])) - 1.0), 2)}
        report["components"][key] = entry
        if not a.json:
            print(f"{key:20s} other {o:.4f} ms  this {t:.4f} ms  {entry['difference_pct']:+.1f} %  "
                  f"(median of round ratios {entry['median_round_ratio_pct']:+.1f} %)")
    if a.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
