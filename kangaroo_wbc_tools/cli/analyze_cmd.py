"""``kangaroo-wbc analyze``: the mechanism analysis of the paper's Sections IV-V, as a report.

``kangaroo-wbc analyze ankle-window``: the design study of the ankle's lower stage
(:mod:`kangaroo_wbc_tools.analysis.ankle_window`): how wide the ankle pitch window can be before a rod
reaches a dead point, for the committed stage and, on request, a searched design.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kangaroo_wbc.progress import Progress
from kangaroo_wbc_tools.cli.common import (
    UsageError,
    add_json_flag,
    add_optional_actions,
    add_out_options,
    add_progress_flag,
    kangaroo_folder,
    number_in,
    prepare_output_folder,
    print_json,
    print_result,
    seed,
)

#: Grid levels per actuator of the singularity scan: 8^6 = 262 144 closed configurations at most.
MAX_LEVELS = 8
#: Ankle pitch angles [deg] ``analyze ankle-window --pitch-window`` takes: a joint range within a half turn.
MAX_PITCH_DEG = 90.0
#: Generations of the design searches at most (the default search takes 60, the planar one 400).
MAX_GENERATIONS = 100_000
#: ``--margin`` [deg] below this bound: a rod 45 deg from its dead points has no room left to move.
MAX_MARGIN_DEG = 45.0


def _analyze(args: argparse.Namespace) -> int:
    import numpy as np

    from kangaroo_wbc.robots.kangaroo.robot import (
        configuration_from_outputs,
        leg_spec,
        load_kangaroo,
        output_joint_names,
        standing_configuration,
    )
    from kangaroo_wbc_tools.analysis.ankle_window import RodStage
    from kangaroo_wbc_tools.analysis.report import run_analysis
    from kangaroo_wbc_tools.analysis.talos import TALOS_NOMINAL_LEG

    clm = load_kangaroo(floating_base=False, urdf_dir=args.urdf_dir)
    q = standing_configuration(clm)
    # TALOS's nominal walking posture, joint by joint (TALOS order: yaw, roll, pitch, knee, ankle pitch, roll)
    yaw, roll, pitch, knee, ankle_pitch, ankle_roll = TALOS_NOMINAL_LEG
    posture = {}
    for side in ("left", "right"):
        posture.update({f"{side}_hip_yaw_joint": yaw, f"{side}_hip_roll_joint": roll,
                        f"{side}_hip_pitch_joint": pitch, f"{side}_knee_joint": knee,
                        f"{side}_ankle_pitch_joint": ankle_pitch, f"{side}_ankle_roll_joint": ankle_roll})
    q_t3 = configuration_from_outputs(clm, posture, q)
    knee_deg = float(np.degrees(q[clm.model.joints[clm.model.getJointId(f"{args.side}_knee_joint")].idx_q]))
    summary = run_analysis(clm, q, leg_spec(args.side), Path(args.out), levels=args.levels, quick=args.quick,
                           progress=Progress.from_args(args),
                           q_table3=q_t3, output_joints=output_joint_names(),
                           ankle_stage=RodStage.from_model(clm, args.side), standing_knee_deg=knee_deg)
    summary["report"] = str(Path(args.out) / "report.md")
    if args.json:
        print_json(summary)
    else:
        print(f"report written to {summary['report']}")
        for k in ("max_condition_number", "ankle_pitch_window_deg", "foot_orientation_deviation_deg",
                  "sole_force_peak_stroke_fraction", "table3", "table3_error"):
            print(f"  {k}: {summary[k]}")
    return 0


def _validate(args: argparse.Namespace) -> None:
    prepare_output_folder(args.out, args.force)


def _ankle_window(args: argparse.Namespace) -> int:
    from kangaroo_wbc_tools.analysis.ankle_window import TABLE_II_PITCH_DEG, study

    display = Progress.from_args(args)
    bars: list = []

    def progress(label: str, total: int):
        bars.append(display.bar(total, desc=f"{label} generations", unit="gen"))
        return lambda g: bars[-1].update(g - bars[-1].n)

    try:
        window = TABLE_II_PITCH_DEG if args.pitch_window is None else tuple(args.pitch_window)
        out = study(window, search_design=args.search, planar=args.planar,
                    margin_deg=args.margin, generations=args.generations, seed=args.seed, progress=progress)
    finally:
        for bar in bars:
            bar.close()
    print_result(out, args.json)
    return 0


def _validate_ankle_window(args: argparse.Namespace) -> None:
    low, high = args.pitch_window or (0.0, 1.0)
    if not low < high:
        raise UsageError(f"argument --pitch-window: MIN must be below MAX, got {low:g} {high:g}")
    if args.margin >= MAX_MARGIN_DEG:
        raise UsageError(f"argument --margin: must be a number in [0, {MAX_MARGIN_DEG:g}) deg, got {args.margin:g}")
    if args.planar is None and args.margin != DEFAULT_MARGIN_DEG:
        raise UsageError("argument --margin: applies to the planar study only (add --planar knee-axis|femur)")
    if args.generations is not None and not (args.search or args.planar):
        raise UsageError("argument --generations: applies to a search only (add --search or --planar)")


#: ``--margin`` default [deg]: the planar study's distance to the rods' dead points.
DEFAULT_MARGIN_DEG = 6.0


def _register_actions(p: argparse.ArgumentParser) -> None:
    actions = add_optional_actions(p, "analyze_command")
    a = actions.add_parser("ankle-window", help="design study: how wide can the ankle pitch window be?",
                           description="Scan the ankle's lower stage (the foot on two rods, cranks on the knee "
                                       "axis) over the knee stroke and the pitch window: the smallest singular "
                                       "value of the rod map and the points where it does not close; with "
                                       "--search or --planar, a design that fits a wider window "
                                       "(urdf/README.md, \"Design trade-off - ankle pitch\"). Prints a table, "
                                       "or one JSON object with --json.")
    a.add_argument("--pitch-window", nargs=2, type=number_in(-MAX_PITCH_DEG, MAX_PITCH_DEG, unit=" deg"),
                   default=None, metavar=("MIN", "MAX"),
                   help=f"ankle pitch joint range at the standing knee [deg], each in [-{MAX_PITCH_DEG:g}, "
                        f"{MAX_PITCH_DEG:g}], MIN < MAX (default: the paper's Table II range)")
    a.add_argument("--search", action="store_true", help="search the lean / phase design space (minutes)")
    a.add_argument("--planar", choices=("knee-axis", "femur"),
                   help="planar study without exact invariance: smallest foot deviation over the knee stroke "
                        "that fits the window, crank pivot on the knee axis or anywhere on the femur (seconds)")
    a.add_argument("--margin", type=number_in(0.0, MAX_MARGIN_DEG, unit=" deg"), default=DEFAULT_MARGIN_DEG,
                   metavar="DEG", help=f"planar study: distance to the dead points [deg], 0 <= DEG < "
                                       f"{MAX_MARGIN_DEG:g} (default {DEFAULT_MARGIN_DEG:g})")
    a.add_argument("--generations", type=number_in(1, MAX_GENERATIONS, kind=int), default=None, metavar="N",
                   help=f"search generations, 1 <= N <= {MAX_GENERATIONS} (default: the study's "
                        "SEARCH_GENERATIONS with --search, PLANAR_GENERATIONS with --planar)")
    a.add_argument("--seed", type=seed, default=0, help="seed of the search (default 0)")
    add_json_flag(a)
    add_progress_flag(a)
    a.set_defaults(func=_ankle_window, validate=_validate_ankle_window, out=None)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="mechanism analysis of the Kangaroo leg (report: Markdown + PNG)")
    add_out_options(p, "reports/analysis", "output folder of the report")
    p.add_argument("--side", default="left", choices=["left", "right"], help="the leg analysed (default left)")
    p.add_argument("--levels", type=number_in(1, MAX_LEVELS, kind=int), default=4, metavar="N",
                   help=f"grid levels per actuator of the singularity scan, 1 <= N <= {MAX_LEVELS} (N^6 closed "
                        "configurations of the leg's six actuators) (default 4)")
    p.add_argument("--quick", action="store_true", help="coarse grids (for smoke tests)")
    p.add_argument("--urdf-dir", type=kangaroo_folder, default=None,
                   help="folder holding kangaroo.urdf and kangaroo_closures.yaml")
    add_json_flag(p)
    add_progress_flag(p)
    p.set_defaults(func=_analyze, validate=_validate)
    _register_actions(p)
