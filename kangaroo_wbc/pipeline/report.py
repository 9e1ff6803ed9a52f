"""Figures of a closed-loop run (the ``kangaroo-wbc demo`` report folder)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def write_report(out: Path, run, summary: dict) -> list[str]:
    """PNG plots + ``summary.json`` + ``report.md`` into ``out``; returns the file names written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    log = run.log
    t = log.array("t")
    files = []

    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    com_t, com_r = log.array("com_true"), log.array("com_ref")
    for i, lab in enumerate("xyz"):
        axes[0].plot(t, com_t[:, i] - (com_r[0, i] if lab == "z" else 0.0), label=f"CoM {lab} (true)")
        axes[0].plot(t, com_r[:, i] - (com_r[0, i] if lab == "z" else 0.0), "--", label=f"{lab} reference")
    axes[0].set_ylabel("CoM [m] (z relative)")
    axes[0].legend(ncol=3, fontsize=7)
    zmp_e, zmp_t = log.array("zmp_est"), log.array("zmp_true")
    on_crane = log.array("crane") > 0.5  # the crane carries part of the weight: no ZMP
    zmp_e[on_crane], zmp_t[on_crane] = np.nan, np.nan
    axes[1].plot(t, zmp_e[:, 1], label="ZMP y estimated")
    axes[1].plot(t, zmp_t[:, 1], label="ZMP y true")
    axes[1].plot(t, com_t[:, 1], label="CoM y")
    axes[1].set_ylabel("lateral [m]")
    axes[1].set_xlabel("time [s]")
    axes[1].legend(fontsize=7)
    fig.suptitle(f"{summary['behaviour']}: CoM tracking and ZMP")
    fig.tight_layout()
    fig.savefig(out / "com_zmp.png", dpi=110)
    plt.close(fig)
    files.append("com_zmp.png")

    fig, ax = plt.subplots(figsize=(9, 3.5))
    fz_e, fz_t = log.array("fz_est"), log.array("fz_true")
    for i, sole in enumerate(run.soles):
        ax.plot(t, fz_e[:, i], label=f"{sole} Fz estimated")
        ax.plot(t, fz_t[:, i], "--", label=f"{sole} Fz true")
    ax.axhline(run.clm.mass_kg * 9.81, color="gray", lw=0.8, label="m g")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("[N]")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title("Sole normal forces: estimated from motor torques vs simulator")
    fig.tight_layout()
    fig.savefig(out / "wrenches.png", dpi=110)
    plt.close(fig)
    files.append("wrenches.png")

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.3))
    axes[0].semilogy(t, np.maximum(log.array("closure_error"), 1e-16))
    axes[0].set_title("estimator closure error ||e_l||∞")
    axes[0].set_xlabel("time [s]")
    hist = run.calibration.residual_history if run.calibration is not None else []
    axes[1].semilogy(np.arange(len(hist)), np.maximum(np.asarray(hist, float), 1e-16), "o-")
    axes[1].set_title("calibration residual per iteration")
    axes[1].set_xlabel("iteration")
    axes[2].hist(log.array("wbc_ms"), bins=50, alpha=0.7, label="WBC")
    axes[2].hist(log.array("est_ms"), bins=50, alpha=0.7, label="estimators")
    axes[2].set_xlabel("[ms] per tick")
    axes[2].legend()
    axes[2].set_title("timing")
    fig.tight_layout()
    fig.savefig(out / "closure_calibration_timing.png", dpi=110)
    plt.close(fig)
    files.append("closure_calibration_timing.png")

    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    lines = "\n".join(f"| {k} | {v} |" for k, v in summary.items() if not isinstance(v, dict))
    imgs = "\n\n".join(f"![{f}]({f})" for f in files)
    (out / "report.md").write_text(f"# kangaroo_wbc demo: {summary['behaviour']}\n\n| metric | value |\n|---|---|\n"
                                   f"{lines}\n\n{imgs}\n")
    files += ["summary.json", "report.md"]
    return files
