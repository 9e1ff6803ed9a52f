"""``kangaroo-wbc evaluate estimation``: the estimators against the simulator's truth, with ideal and
with realistic (ball-screw) actuators, and the contact-wrench estimator in several variants.

One closed-loop run per actuator kind (stand, then lateral sway; the loop's own estimators in the
loop). Beside the loop's contact-wrench estimator, the same torque samples and state estimates go
to one more :class:`~kangaroo_wbc.components.contact_wrench.ContactWrenchEstimation` per variant
of :data:`VARIANTS` (the controller's model update at the same state shared): the paper's
estimator (actuated rows, eq. (47)), the floating-base rows, and each actuator compensation of
:mod:`kangaroo_wbc.estimation.actuator_force` alone and together. Their figures are measured like
the loop's (:func:`~kangaroo_wbc_tools.pipeline.metrics.summarize`): ``fz_sum_over_mg`` (mean over the
standing ticks off the crane), ``zmp_rmse_m`` (horizontal, ticks with a valid estimate), and
``fz_sole_rmse_n``, the error of each sole's normal force (how the load splits between the feet,
which the base rows do not fix).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from kangaroo_wbc.components.assembly import apply_ready
from kangaroo_wbc.components.contact_wrench import ContactWrenchEstimation, ContactWrenchSettings
from kangaroo_wbc.components.simulated_robot import SimulatedRobotConfig
from kangaroo_wbc.estimation import paper_screws
from kangaroo_wbc.estimation.actuator_force import ActuatorCompensation
from kangaroo_wbc.estimation.contact_wrench import ContactWrenchConfig

_NONE = ActuatorCompensation.paper()
#: name → (base-row weight, compensations): the variants of the table, in its order.
VARIANTS: dict[str, tuple[float, ActuatorCompensation]] = {
    "paper": (0.0, _NONE),
    "paper+actuator_model+inertia": (0.0, ActuatorCompensation(torque_bias=False)),
    "base_rows": (10.0, _NONE),
    "base_rows+actuator_model": (10.0, ActuatorCompensation(rotor_inertia=False, torque_bias=False)),
    "base_rows+inertia": (10.0, ActuatorCompensation(actuator_model=False, torque_bias=False)),
    "base_rows+torque_bias": (10.0, ActuatorCompensation(actuator_model=False, rotor_inertia=False)),
    "base_rows+all": (10.0, ActuatorCompensation()),
}
#: The loop's estimator with realistic actuators (the default of the one-process loop and the node).
DEFAULT_VARIANT = "base_rows+all"
#: Keys of the loop's own figures in the JSON.
LOOP_KEYS = ("calibration_iterations", "calibration_offset_error_m", "passive_position_rmse_rad",
             "passive_velocity_rmse_rad_s", "max_closure_error", "fz_sum_over_mg", "zmp_rmse_m",
             "base_position_drift_m", "fell", "com_rmse_m", "estimator_ms_p50", "estimator_ms_p99", "duration_s")


@dataclass
class _Record:
    """Per-tick figures of one variant, aligned with the loop's log rows."""

    fz: list = field(default_factory=list)  # per-sole normal force, world z [N]
    zmp: list = field(default_factory=list)
    zmp_valid: list = field(default_factory=list)


class ShadowEstimators:
    """The variants' estimators, fed by :meth:`on_tick` after every tick of a
    :class:`~kangaroo_wbc_tools.pipeline.closed_loop.ClosedLoopRun`."""

    def __init__(self, run, variants: dict[str, tuple[float, ActuatorCompensation]] | None = None) -> None:
        self.run = run
        rate = 1.0 / run.dt
        self.estimators: dict[str, ContactWrenchEstimation] = {}
        for name, (weight, comp) in (variants or VARIANTS).items():
            cfg = ContactWrenchConfig(sample_rate_hz=rate, base_row_weight=weight)
            compensation = None if comp == _NONE else replace(comp, sample_rate_hz=rate)
            self.estimators[name] = ContactWrenchEstimation(
                run.clm, paper_screws(run.clm), cfg,
                ContactWrenchSettings(sole_frames=tuple(run.soles)), compensation=compensation)
        self.records = {name: _Record() for name in self.estimators}
        self._logged = 0

    def on_tick(self, run) -> None:
        """Run every variant on the tick's inputs; keep a row where the loop logged one."""
        rows = len(run.log.rows.get("t", []))
        logged, self._logged = rows > self._logged, rows
        if run.last_inputs is None:
            return
        sample, est = run.last_inputs
        pm = run.wbc.pm
        projected = pm if pm.is_current(est.q) else None
        for name, comp in self.estimators.items():
            apply_ready(run.control.ready, False, wrench=comp)  # the chain's handshake (components.assembly)
            comp.on_state(est.q, est.v, est.stamp_s)
            out = comp.step(sample, projected=projected)
            comp.drain_events()
            if not logged:
                continue
            rec = self.records[name]
            if out is None:
                rec.fz.append(np.full(len(run.soles), np.nan))
                rec.zmp.append(np.full(3, np.nan))
                rec.zmp_valid.append(False)
            else:
                rec.fz.append(out.wrench_sole_in_world[:, 2].copy())
                rec.zmp.append(out.zmp_in_world.copy())
                rec.zmp_valid.append(bool(out.zmp_valid))

    def figures(self) -> dict[str, dict[str, float | None]]:
        """Per variant: ``fz_sum_over_mg`` (mean, and its 5th / 95th percentiles ``_p05``,
        ``_p95``), ``zmp_rmse_m`` and ``zmp_median_error_m``, ``fz_sole_rmse_n`` and
        ``fz_sole_median_error_n`` (masks of :func:`~kangaroo_wbc_tools.pipeline.metrics.summarize`;
        the medians show the typical error where a few ill-conditioned ticks dominate the RMS)."""
        run, log = self.run, self.run.log
        t = log.array("t")
        free = log.array("crane") < 0.5
        released = run.release_time_s if run.release_time_s is not None else np.inf
        settled = free & (t > released + 0.3)
        zmp_true = log.array("zmp_true").reshape(-1, 3)
        fz_true = log.array("fz_true").reshape(-1, len(run.soles))
        mg = run.clm.mass_kg * 9.81
        out = {}
        for name, rec in self.records.items():
            n = min(len(rec.fz), t.size)
            fz = np.asarray(rec.fz[:n]).reshape(-1, len(run.soles))
            zmp = np.asarray(rec.zmp[:n]).reshape(-1, 3)
            s = settled[:n]
            valid = np.asarray(rec.zmp_valid[:n], bool) & free[:n] & np.all(np.isfinite(zmp_true[:n]), axis=1)
            err = (zmp - zmp_true[:n])[valid][:, :2]
            sole_err = (fz - fz_true[:n])[s]
            sole_err = sole_err[np.all(np.isfinite(sole_err), axis=1)]
            ratio = fz[s].sum(axis=1) / mg
            ratio = ratio[np.isfinite(ratio)]
            zmp_abs = np.sqrt(np.sum(err**2, axis=1))
            out[name] = {
                "fz_sum_over_mg": float(np.mean(ratio)) if ratio.size else None,
                "fz_sum_over_mg_p05": float(np.percentile(ratio, 5)) if ratio.size else None,
                "fz_sum_over_mg_p95": float(np.percentile(ratio, 95)) if ratio.size else None,
                "zmp_rmse_m": float(np.sqrt(np.mean(zmp_abs**2))) if err.size else None,
                "zmp_median_error_m": float(np.median(zmp_abs)) if err.size else None,
                "fz_sole_rmse_n": float(np.sqrt(np.mean(sole_err**2))) if sole_err.size else None,
                "fz_sole_median_error_n": float(np.median(np.abs(sole_err))) if sole_err.size else None,
            }
        return out


def evaluate_estimation(duration_s: float = 10.0, seed: int = 0, progress=None, stop=None,
                        actuators: tuple[str, ...] = ("realistic", "ideal")) -> dict:
    """Run the evaluation (module docstring). Returns the JSON object: the loop's own figures with
    the first of ``actuators`` at the top level, ``paper_*`` (the paper's estimator on the same
    run), and ``table``: one row per actuator kind and variant."""
    from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    result: dict = {}
    table = []
    for kind in actuators:
        run = ClosedLoopRun(LoopConfig(behaviour="sway", duration_s=duration_s, seed=seed,
                                       robot=SimulatedRobotConfig(ideal_actuators=kind == "ideal")))
        shadows = ShadowEstimators(run)
        wrapped = None if progress is None else (
            lambda it, total, desc, _k=kind: progress(it, total=total, desc=f"evaluate {_k}"))
        summary = run.run(progress=wrapped, on_tick=shadows.on_tick, stop=stop)
        figures = shadows.figures()
        loop_variant = DEFAULT_VARIANT if kind == "realistic" else "base_rows"
        for name, fig in figures.items():
            table.append({"actuators": kind, "estimator": name, "in_the_loop": name == loop_variant, **fig})
        if not result:
            result = {k: summary.get(k) for k in LOOP_KEYS}
            result["actuators"] = kind
            result["interrupted"] = bool(summary.get("interrupted"))
            result.update({f"paper_{k}": v for k, v in figures["paper"].items()})
            result.update({k: v for k, v in figures[loop_variant].items() if k not in result})
        else:
            result[f"{kind}_actuators"] = {k: summary.get(k) for k in LOOP_KEYS}
            result["interrupted"] = result["interrupted"] or bool(summary.get("interrupted"))
        if stop is not None and stop():
            break
    result["table"] = table
    return result


def table_markdown(table: list[dict]) -> str:
    """The table as Markdown (docs/estimation.md)."""
    lines = ["| actuators | estimator | Σf_z / mg: mean [5 %, 95 %] | ZMP error [mm]: RMS, median | "
             "sole f_z error [N]: RMS, median |", "|---|---|---|---|---|"]

    def fmt(x, scale=1.0, digits=3):
        return "—" if x is None else f"{x * scale:.2g}" if abs(x * scale) >= 1e3 else f"{x * scale:.{digits}f}"

    for r in table:
        mark = " (loop)" if r.get("in_the_loop") else ""
        lines.append(f"| {r['actuators']} | {r['estimator']}{mark} | {fmt(r['fz_sum_over_mg'])} "
                     f"[{fmt(r['fz_sum_over_mg_p05'], 1.0, 2)}, {fmt(r['fz_sum_over_mg_p95'], 1.0, 2)}] | "
                     f"{fmt(r['zmp_rmse_m'], 1e3, 1)}, {fmt(r['zmp_median_error_m'], 1e3, 1)} | "
                     f"{fmt(r['fz_sole_rmse_n'], 1.0, 1)}, {fmt(r['fz_sole_median_error_n'], 1.0, 1)} |")
    return "\n".join(lines)


def plot_table(table: list[dict], path) -> None:
    """Bar chart of the table: ZMP RMSE and sole-force RMSE per variant, ideal vs realistic."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["estimator"] for r in table))
    kinds = list(dict.fromkeys(r["actuators"] for r in table))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / len(kinds)
    for ax, key, scale, label in ((axes[0], "zmp_median_error_m", 1e3, "ZMP error, median [mm]"),
                                  (axes[1], "fz_sole_median_error_n", 1.0, "sole normal force error, median [N]")):
        for k, kind in enumerate(kinds):
            vals = [next((r[key] for r in table if r["actuators"] == kind and r["estimator"] == n), None)
                    for n in names]
            ax.bar(np.arange(len(names)) + k * width, [np.nan if v is None else v * scale for v in vals], width,
                   label=f"{kind} actuators")
        ax.set_xticks(np.arange(len(names)) + 0.5 * width * (len(kinds) - 1))
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend()
    fig.suptitle("Contact-wrench estimator variants, stand + lateral sway (estimates vs the simulator)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


__all__ = ["DEFAULT_VARIANT", "ShadowEstimators", "VARIANTS", "evaluate_estimation", "plot_table", "table_markdown"]
