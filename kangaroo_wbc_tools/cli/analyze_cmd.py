"""``kangaroo-wbc analyze``: the mechanism analysis of the paper's Sections IV-V, as a report."""

from __future__ import annotations

import argparse
from pathlib import Path

from kangaroo_wbc.progress import Progress
from kangaroo_wbc_tools.cli.common import (
    add_json_flag,
    add_out_options,
    add_progress_flag,
    kangaroo_folder,
    number_in,
    prepare_output_folder,
    print_json,
)

#: Grid levels per actuator of the singularity scan: 8^6 = 262 144 closed configurations at most.
MAX_LEVELS = 8


def _analyze(args: argparse.Namespace) -> int:
    import numpy as np

    from kangaroo_wbc.analysis.ankle_window import RodStage
    from kangaroo_wbc.analysis.report import run_analysis
    from kangaroo_wbc.analysis.talos import TALOS_NOMINAL_LEG
    from kangaroo_wbc.robots.kangaroo.robot import (
        configuration_from_outputs,
        leg_spec,
        load_kangaroo,
        output_joint_names,
        standing_configuration,
    )

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
