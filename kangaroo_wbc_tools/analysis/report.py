"""The ``kangaroo-wbc analyze`` report: Markdown + PNG figures in an output folder."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.leg import LegSpec
from kangaroo_wbc_tools.analysis.mechanism import (
    joint_limit_shape,
    manipulability_map,
    singularity_scan,
    transmission_sweep,
)
from kangaroo_wbc_tools.analysis.table3 import (
    PAPER_TABLE3,
    inertia_report,
    serial_model,
    table3,
    table3_error,
)
from kangaroo_wbc_tools.analysis.talos import talos_lower_body


def run_analysis(clm: ClosedLoopModel, q_nominal: np.ndarray, leg: LegSpec, out: Path,
                 progress: Callable | None = None, levels: int = 4, quick: bool = False,
                 q_table3: np.ndarray | None = None, output_joints: list[str] | None = None,
                 ankle_stage=None, standing_knee_deg: float | None = None) -> dict:
    """Run the five analyses of the paper's Sections IV-V on one leg and write the report.

    ``q_table3`` is the closed configuration used for Table III (default ``q_nominal``) and
    ``output_joints`` the serial joints in which Kangaroo's CAMM is expressed. With an
    ``ankle_stage`` (:class:`~kangaroo_wbc_tools.analysis.ankle_window.RodStage`) and the knee angle of
    ``q_nominal``, the reached ankle pitch window and Table II's are checked against the rods' dead
    points over the knee stroke (urdf/README.md, "Design trade-off — ankle pitch").
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    summary: dict = {}
    figures: list[tuple[str, str]] = []

    def save(fig, png: str, title: str) -> None:
        fig.tight_layout()
        fig.savefig(out / png, dpi=110)
        plt.close(fig)
        figures.append((title, png))

    # 1. singularity scan over the leg's actuator box
    sing = singularity_scan(clm, q_nominal, leg.all_actuators, levels=2 if quick else levels, progress=progress)
    summary["max_condition_number"] = round(sing["max_condition_number"], 3)
    summary["median_condition_number"] = round(sing["median_condition_number"], 3)
    summary["singularity_samples"] = sing["samples"]
    summary["closure_fk_failures"] = sing["fk_failures"]
    summary["unreachable_samples"] = sing["unreachable"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(sing["conditions"], bins=40, color="tab:blue")
    ax.set_xlabel("condition number of J_l,u")
    ax.set_ylabel("samples")
    ax.set_title(f"{leg.side} leg: {len(sing['conditions'])} reachable configurations of the actuator box")
    save(fig, "singularity_condition_numbers.png", "Condition number of J_l,u over the reachable set")

    # 2. joint-limit shapes (hip, ankle) by the QP IK of eq. (IV): actuator strokes and the passive
    # joints' URDF limits
    shapes = {}
    for name, acts, outs in (("hip", leg.actuators["hip_pitch_roll"], leg.hip_outputs),
                             ("ankle", leg.actuators["ankle"], leg.ankle_outputs)):
        pts = joint_limit_shape(clm, q_nominal, acts, outs, directions=16 if quick else 48)
        shapes[name] = pts
        deg = np.degrees(pts)
        summary[f"{name}_roll_range_deg"] = [round(float(deg[:, 0].min()), 2), round(float(deg[:, 0].max()), 2)]
        summary[f"{name}_pitch_range_deg"] = [round(float(deg[:, 1].min()), 2), round(float(deg[:, 1].max()), 2)]
    summary["ankle_pitch_window_deg"] = summary["ankle_pitch_range_deg"]  # at q_nominal's (standing) knee
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, (name, pts) in zip(axes, shapes.items()):
        deg = np.degrees(np.vstack([pts, pts[:1]]))
        ax.plot(deg[:, 0], deg[:, 1], "-o", ms=2)
        ax.set_xlabel(f"{name} roll [deg]")
        ax.set_ylabel(f"{name} pitch [deg]")
        ax.set_title(f"{name} joint-limit shape (QP IK)")
        ax.grid(True, alpha=0.3)
        ax.set_aspect("equal", adjustable="datalim")
    save(fig, "joint_limit_shapes.png", "Joint-limit shapes of hip and ankle (analogues of Figs. 7 and 11)")

    if ankle_stage is not None:
        from kangaroo_wbc_tools.analysis.ankle_window import (
            KNEE_DEG,
            TABLE_II_PITCH_DEG,
            dead_point_margins,
            knee_window,
            plot_windows,
            rod_pitch_limits,
        )

        if standing_knee_deg is None:
            raise ValueError("ankle_stage needs standing_knee_deg (the knee angle of q_nominal)")
        cranks = _ankle_crank_range(clm, q_nominal, leg)
        limits = rod_pitch_limits(clm, leg.side)
        knees = np.linspace(*KNEE_DEG, 121)
        reach = knee_window(cranks, limits, knees)
        at = {k: knee_window(cranks, limits, np.array([k]))[0] for k in (0.0, standing_knee_deg, 30.0, 60.0, 90.0,
                                                                          120.0)}
        below, above = dead_point_margins(ankle_stage, reach, knees)
        summary["ankle_window"] = {
            "crank_deg": [round(c, 2) for c in cranks], "rod_pitch_limits_deg": [round(x, 2) for x in limits],
            "common_mode_deg_at_knee": {f"{k:.1f}": [round(float(x), 2) for x in w] for k, w in at.items()},
            "dead_point_margin_deg": [round(below, 2), round(above, 2)],
            "table_ii_at_standing_knee": bool(at[standing_knee_deg][0] <= TABLE_II_PITCH_DEG[0]
                                              and at[standing_knee_deg][1] >= TABLE_II_PITCH_DEG[1])}
        windows = {"reached": tuple(summary["ankle_pitch_range_deg"]), "Table II": TABLE_II_PITCH_DEG}
        fig, ax = plt.subplots(figsize=(8, 5))
        plot_windows(ax, ankle_stage, windows, standing_knee_deg, reachable=reach)
        save(fig, "ankle_window.png", "Knee-dependent ankle pitch window against the lower rods' dead points "
             "(analogue of Fig. 11)")

    # 3. manipulability of the foot (Fig. 5)
    man = manipulability_map(clm, q_nominal, leg, levels=3 if quick else 6, progress=progress)
    fig = plt.figure(figsize=(6, 5))
    ax = fig.add_subplot(projection="3d")
    p = man["positions"]
    sc = ax.scatter(p[:, 0], p[:, 1], p[:, 2], c=man["manipulability"], cmap="viridis", s=8)
    fig.colorbar(sc, ax=ax, label="normalised manipulability")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    ax.set_zlabel("z [m]")
    ax.set_title(f"{leg.sole_frame} workspace")
    save(fig, "foot_manipulability.png", "Normalised manipulability of the foot over the workspace (Fig. 5)")
    summary["manipulability_samples"] = int(len(man["manipulability"]))

    # 4. transmission: orientation over the leg-length stroke, sole force along the squat
    tr = transmission_sweep(clm, q_nominal, leg)
    summary["foot_orientation_deviation_deg"] = round(tr["max_orientation_deviation_deg"], 4)
    summary["sole_force_peak_stroke_fraction"] = round(tr["sole_force_peak_stroke_fraction"], 3)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    axes[0].plot(tr["stroke_m"] * 1e3, tr["orientation_deviation_deg"])
    axes[0].set_xlabel("leg-length actuator stroke [mm]")
    axes[0].set_ylabel("foot orientation change w.r.t. pelvis [deg]")
    axes[0].set_title("Knee + ankle transmission (Figs. 12-13)")
    sq = tr["squat_mask"]
    axes[1].plot(tr["stroke_m"][sq] * 1e3, tr["sole_force_n"][sq])
    axes[1].axvline(tr["nominal_stroke_m"] * 1e3, color="gray", ls="--", label="nominal")
    axes[1].legend()
    axes[1].set_xlabel("leg-length actuator stroke [mm]")
    axes[1].set_ylabel("sole normal force at max actuator force [N]")
    axes[1].set_title("Force transmission along the squat (Fig. 15)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    save(fig, "transmission.png", "Knee/ankle transmission and squat force")

    # 5. Table III against TALOS, both robots in TALOS's nominal walking posture
    talos_model, q_talos = talos_lower_body()
    rep_t = inertia_report(serial_model(talos_model), q_talos, "left_sole_link")
    q_k = q_nominal if q_table3 is None else q_table3
    rep_k = inertia_report(clm, q_k, leg.sole_frame, output_joints=output_joints)
    t3 = table3(rep_t, rep_k)
    summary["table3"] = t3
    summary["table3_paper"] = PAPER_TABLE3
    summary["table3_error"] = round(table3_error(t3), 4)
    summary["talos_legs_mass_kg"] = round(rep_t.mass_kg, 3)
    summary["kangaroo_mass_kg"] = round(rep_k.mass_kg, 3)
    summary["sole_inertia_diag_talos"] = np.round(np.diag(rep_t.Lambda), 4).tolist()
    summary["sole_inertia_diag_kangaroo"] = np.round(np.diag(rep_k.Lambda), 4).tolist()
    summary["analysis_seconds"] = round(time.perf_counter() - t0, 2)
    _write_markdown(out, summary, figures)
    return summary


def _ankle_crank_range(clm: ClosedLoopModel, q_nominal: np.ndarray, leg: LegSpec) -> tuple[float, float]:
    """Foot pitch w.r.t. the femur (knee + ankle pitch) [deg] with both ankle actuators at each end
    of their stroke, at ``q_nominal``'s knee (closure FK, the other actuators nominal)."""
    theta = q_nominal[clm.idx_q_a].copy()
    ip = clm.model.joints[clm.model.getJointId(leg.ankle_outputs[1])].idx_q
    ik = clm.model.joints[clm.model.getJointId(leg.ankle_outputs[1].replace("ankle_pitch", "knee"))].idx_q
    out = []
    for end in (0, 1):
        for a in leg.actuators["ankle"]:
            i = clm.actuated_joint_names.index(a)
            theta[i] = (clm.model.lowerPositionLimit, clm.model.upperPositionLimit)[end][clm.idx_q_a[i]]
        q = q_nominal
        for t in np.linspace(0.0, 1.0, 9)[1:]:  # continuation along the stroke
            q, _ = clm.closure_fk(q_nominal[clm.idx_q_a] + t * (theta - q_nominal[clm.idx_q_a]), q, max_iter=100)
        out.append(float(np.degrees(q[ip] + q[ik])))
    return min(out), max(out)


def _ankle_window_text(s: dict) -> str:
    if "ankle_window" not in s:
        return ""
    w = s["ankle_window"]
    rows = "\n".join(f"| {k} | {v[0]}…{v[1]} |" for k, v in w["common_mode_deg_at_knee"].items())
    return f"""
Knee-dependent ankle pitch window along the common mode (both ankle actuators alike): the cranks'
range over the ankle strokes ({w['crank_deg'][0]}…{w['crank_deg'][1]}° w.r.t. the femur) cut by the lower
rods' pitch limits ({w['rod_pitch_limits_deg'][0]}…{w['rod_pitch_limits_deg'][1]}°),
`kangaroo_wbc_tools.analysis.ankle_window` (urdf/README.md, "Ankle window: knee-dependent limits").
Smallest distance to the rods' dead points over the knee stroke, below / above the window:
{w['dead_point_margin_deg'][0]}° / {w['dead_point_margin_deg'][1]}°.
Table II's −36…34° inside the window at the standing knee: {w['table_ii_at_standing_knee']}.

| knee [deg] | ankle pitch window [deg] |
|---|---|
{rows}
"""


def _write_markdown(out: Path, s: dict, figures: list[tuple[str, str]]) -> None:
    t3, paper = s["table3"], s["table3_paper"]
    rows = "\n".join(
        f"| {k} | {' / '.join(f'{x:.2f}' for x in t3[k])} | {' / '.join(f'{x:.1f}' for x in paper[k])} |"
        for k in ("linear", "angular", "camm"))
    figs = "\n\n".join(f"### {title}\n\n![{title}]({png})" for title, png in figures)
    text = f"""# Kangaroo mechanism analysis

Generated by `kangaroo-wbc analyze` from `urdf/kangaroo.urdf` + `urdf/kangaroo_closures.yaml`
in {s['analysis_seconds']} s.

## Summary

| quantity | value |
|---|---|
| max condition number of J_l,u over the reachable set (grid of {s['singularity_samples']} points of the box, \
{s['unreachable_samples']} of them outside the passive-joint limits) | {s['max_condition_number']} |
| median condition number | {s['median_condition_number']} |
| hip roll / pitch range reached [deg] | {s['hip_roll_range_deg']} / {s['hip_pitch_range_deg']} |
| ankle roll / pitch range reached [deg] | {s['ankle_roll_range_deg']} / {s['ankle_pitch_range_deg']} |
| foot orientation change over the leg-length stroke [deg] | {s['foot_orientation_deviation_deg']} |
| stroke fraction of the sole-force peak | {s['sole_force_peak_stroke_fraction']} |

Table II of the paper gives hip roll ±27°, hip pitch −40…42°, ankle roll ±27°, ankle pitch −36…34°.
{_ankle_window_text(s)}
## Table III: TALOS / Kangaroo ratios (x / y / z)

| index | ours | paper |
|---|---|---|
{rows}

Largest relative error of the nine ratios against the paper's (`table3_error`): {s['table3_error']}.

Masses: TALOS legs {s['talos_legs_mass_kg']} kg, Kangaroo model {s['kangaroo_mass_kg']} kg.
Sole inertia diagonal (linear x, y, z [kg], angular x, y, z [kg·m²]):
TALOS {s['sole_inertia_diag_talos']}, Kangaroo {s['sole_inertia_diag_kangaroo']}.

Why ours differ from the paper's: PAL's Kangaroo CAD masses and inertias are not public, so our model
distributes the public link masses over simple shapes (see `urdf/README.md`), and the rods, cranks and
actuator bodies of the linkages are our own estimates; the nominal poses (Fig. 17) are approximations;
the paper does not define the CAMM index vectors exactly — we compare the rows of the angular part of
the projected CMM over the 12 actuated coordinates (TALOS: 12 leg joints). The qualitative result holds
when every ratio is above one: Kangaroo's actuators near the pelvis make the feet lighter to move.

## Figures

{figs}
"""
    (out / "report.md").write_text(text)
