"""``kangaroo-wbc sim``: run the embedded MuJoCo simulator without ROS and report what happened.

The Kangaroo starts on the floor in its standing pose (free base, loops closed) and is driven, at
the simulator's 1 kHz control rate, by

* ``--controller pd``: :class:`~kangaroo_wbc.sim.BaselinePd` holding the standing actuator
  positions, with the gravity feed-forward ``g_a + J_m^T g_u`` of the closed-loop model
  (:func:`~kangaroo_wbc.sim.model_gravity_compensation`, eq. (14)-(18) of the Kangaroo paper),
  re-evaluated every ``--ff-period-ms``;
* ``--controller none``: zero actuator force (the robot collapses).

Reported (``--json``: one JSON object as the last line):

* ``fell``: the CoM dropped below :data:`FALL_HEIGHT_FRACTION` of its initial height or the base
  tilted more than :data:`FALL_TILT_RAD`;
* ``max_closure_violation_m``: largest loop-closure residual over every tick [m];
* ``ground_truth_fz_over_mg``: sum of the true vertical contact forces over ``m g``, averaged over
  the last second (the second half of runs shorter than 2 s), i.e. once settled;
* ``rtf``: simulated time / wall-clock time of the whole loop (controller, physics, metrics);
  ``physics_rtf`` counts the MuJoCo steps only.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from kangaroo_wbc.progress import Progress
from kangaroo_wbc_tools.cli.common import (
    MAX_DURATION_S,
    TICK_S,
    add_json_flag,
    add_plot_option,
    add_progress_flag,
    duration,
    make_plot_folder,
    number_in,
    print_json,
    seed,
)

#: PD gains holding the standing pose (stiff enough for the inverted pendulum on the ankles, see
#: docs/sim.md "Tuning notes") [N/m], [N·s/m].
DEFAULT_KP_N_PER_M = 2e5
DEFAULT_KD_N_S_PER_M = 300.0
#: Gains beyond these (500 and 3000 times the defaults) make the 1 ms simulation unstable, not stiffer.
MAX_KP_N_PER_M = 1e8
MAX_KD_N_S_PER_M = 1e6
#: Fall criteria: CoM height below this fraction of the initial one, or base tilt above [rad].
FALL_HEIGHT_FRACTION = 0.7
FALL_TILT_RAD = 0.5
#: Averaging window of the contact-force ratio once settled [s].
SETTLED_WINDOW_S = 1.0
#: Sampling period of the plotted signals [s].
PLOT_PERIOD_S = 0.005
#: Ticks per progress-bar update.
PROGRESS_CHUNK = 100


def _base_tilt_rad(quat_wxyz: np.ndarray) -> float:
    """Angle between the base z axis and the world z axis [rad] (MuJoCo quaternion w, x, y, z)."""
    w, x, y, z = quat_wxyz / np.linalg.norm(quat_wxyz)
    cos_tilt = 1.0 - 2.0 * (x * x + y * y)  # R[2, 2]
    return math.acos(max(-1.0, min(1.0, cos_tilt)))


def run_sim(duration_s: float = 5.0, *, controller: str = "pd", seed: int = 0,
            kp: float = DEFAULT_KP_N_PER_M, kd: float = DEFAULT_KD_N_S_PER_M, ff_period_s: float = 0.01,
            progress=None, ideal_actuators: bool = False) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Simulate the Kangaroo standing on the floor for ``duration_s`` [s] (``ideal_actuators``: the
    commanded forces act as they are; default: the simulated ball-screw drives).

    ``progress(iterable, total=, desc=)`` wraps the loop (a progress display, e.g.
    :class:`~kangaroo_wbc.progress.Progress`); None: no display.

    Returns:
        ``(report, series)``: the JSON report and the sampled time series (``t`` [s],
        ``com_height_m``, ``closure_violation_m``, ``fz_over_mg``) for the plot.

    Raises:
        InputError: unknown controller or non-positive duration.
    """
    from kangaroo_wbc.errors import InputError
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_actuator_positions
    from kangaroo_wbc.robots.kangaroo.sim import make_kangaroo_sim
    from kangaroo_wbc.sim import BaselinePd, model_gravity_compensation

    if controller not in ("pd", "none"):
        raise InputError(f"controller must be 'pd' or 'none', got {controller!r}")
    if not (math.isfinite(duration_s) and duration_s > 0):
        raise InputError(f"duration must be > 0 [s], got {duration_s}")
    sim = make_kangaroo_sim(floating_base=True, seed=seed, initial_actuator_positions=standing_actuator_positions(),
                            ideal_actuators=ideal_actuators)
    m, d = sim.model, sim.data
    dt = sim.timestep
    n_ticks = max(1, int(round(duration_s / dt)))
    weight_n = sim.total_mass_kg * float(np.linalg.norm(m.opt.gravity))
    window_s = SETTLED_WINDOW_S if n_ticks * dt >= 2 * SETTLED_WINDOW_S else 0.5 * n_ticks * dt
    window_ticks = max(1, int(round(window_s / dt)))
    plot_every = max(1, int(round(PLOT_PERIOD_S / dt)))
    ff_every = max(1, int(round(ff_period_s / dt)))

    theta_ref = sim.actuator_positions()
    pd = BaselinePd(kp, kd, sim.n_actuators, force_limits=sim.force_limits)
    gravity = model_gravity_compensation(load_kangaroo(floating_base=True)) if controller == "pd" else None
    tau_ff = np.zeros(sim.n_actuators)

    com_z0 = float(d.subtree_com[1][2])  # body 1: the free base, its subtree is the whole robot
    min_com_z, max_tilt, worst_closure = com_z0, 0.0, 0.0
    fz_sum, fz_count = 0.0, 0
    series: dict[str, list[float]] = {"t": [], "com_height_m": [], "closure_violation_m": [], "fz_over_mg": []}
    tick = 0
    wall0 = time.perf_counter()
    chunks = range(int(math.ceil(n_ticks / PROGRESS_CHUNK)))
    for _ in progress(chunks, total=len(chunks), desc="sim") if progress else chunks:
        for _ in range(min(PROGRESS_CHUNK, n_ticks - tick)):
            if gravity is not None:
                if tick % ff_every == 0:
                    tau_ff = gravity(sim.joint_positions_by_name())
                sim.set_command(pd.compute(sim.actuator_positions(), sim.actuator_velocities(), theta_ref,
                                           tau_ff=tau_ff))
            sim.step()
            tick += 1
            closure = sim.closure_violation()[0]
            worst_closure = max(worst_closure, closure)
            com_z = float(d.subtree_com[1][2])
            min_com_z = min(min_com_z, com_z)
            max_tilt = max(max_tilt, _base_tilt_rad(d.qpos[3:7]))
            in_window = tick > n_ticks - window_ticks
            if in_window or tick % plot_every == 0:
                fz = sum(c.force_in_sole[2] for c in sim.contact_wrenches().values()) / weight_n
                if in_window:
                    fz_sum += fz
                    fz_count += 1
                if tick % plot_every == 0:
                    for key, value in (("t", sim.time), ("com_height_m", com_z),
                                       ("closure_violation_m", closure), ("fz_over_mg", fz)):
                        series[key].append(value)
    wall = time.perf_counter() - wall0
    fell = bool(min_com_z < FALL_HEIGHT_FRACTION * com_z0 or max_tilt > FALL_TILT_RAD)
    report = {
        "controller": controller,
        "ideal_actuators": bool(ideal_actuators),
        "seed": seed,
        "duration_s": n_ticks * dt,
        "ticks": n_ticks,
        "control_period_s": dt,
        "mass_kg": sim.total_mass_kg,
        "fell": fell,
        "com_height_initial_m": com_z0,
        "com_height_min_m": min_com_z,
        "base_tilt_max_rad": max_tilt,
        "max_closure_violation_m": worst_closure,
        "ground_truth_fz_over_mg": fz_sum / fz_count if fz_count else math.nan,
        "fz_window_s": window_ticks * dt,
        "rtf": n_ticks * dt / wall if wall > 0 else math.nan,
        "physics_rtf": sim.real_time_factor,
        "wall_time_s": wall,
    }
    return report, {k: np.asarray(v) for k, v in series.items()}


def plot_series(series: dict[str, np.ndarray], path: str | Path, title: str = "") -> None:
    """CoM height, closure violation and fz/mg against time, one panel each, saved to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(7, 7))
    panels = (("com_height_m", "CoM height [m]"), ("closure_violation_m", "closure violation [m]"),
              ("fz_over_mg", "Σ f_z / (m g) [-]"))
    for ax, (key, label) in zip(axes, panels):
        ax.plot(series["t"], series[key])
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[1].set_yscale("log")
    axes[-1].set_xlabel("simulated time [s]")
    if title:
        axes[0].set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _run(args: argparse.Namespace) -> int:
    report, series = run_sim(args.duration, controller=args.controller, seed=args.seed, kp=args.kp, kd=args.kd,
                             ff_period_s=args.ff_period_ms * 1e-3, progress=Progress.from_args(args),
                             ideal_actuators=args.ideal_actuators)
    if args.plot:
        plot_series(series, args.plot, title=f"Kangaroo standing, controller {args.controller}")
        report["plot"] = str(args.plot)
    if args.json:
        print_json(report)
    else:
        for key, value in report.items():
            print(f"{key:<26}{value:.6g}" if isinstance(value, float) else f"{key:<26}{value}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sim", help="run the MuJoCo simulator without ROS (Kangaroo standing on the floor)")
    p.add_argument("--duration", type=duration, default=5.0, metavar="S",
                   help=f"simulated time [s], {TICK_S:g} to {MAX_DURATION_S:g} (default 5)")
    p.add_argument("--controller", choices=("pd", "none"), default="pd",
                   help="pd: baseline PD on the standing pose + model gravity feed-forward; none: zero force")
    p.add_argument("--seed", type=seed, default=0, help="seed of the sensor noise and encoder offsets (default 0)")
    p.add_argument("--kp", type=number_in(0.0, MAX_KP_N_PER_M, unit=" N/m"), default=DEFAULT_KP_N_PER_M,
                   help=f"PD stiffness [N/m], 0 to {MAX_KP_N_PER_M:g} (default {DEFAULT_KP_N_PER_M:g})")
    p.add_argument("--kd", type=number_in(0.0, MAX_KD_N_S_PER_M, unit=" N·s/m"), default=DEFAULT_KD_N_S_PER_M,
                   help=f"PD damping [N·s/m], 0 to {MAX_KD_N_S_PER_M:g} (default {DEFAULT_KD_N_S_PER_M:g})")
    p.add_argument("--ff-period-ms", type=number_in(TICK_S * 1e3, MAX_DURATION_S * 1e3, unit=" ms"), default=10.0,
                   metavar="MS", help=f"period of the gravity feed-forward update [ms], {TICK_S * 1e3:g} (every "
                                      "tick) or more (default 10)")
    p.add_argument("--ideal-actuators", action="store_true",
                   help="ideal ball screws: forces act as commanded (default: the simulated drives, docs/sim.md)")
    add_plot_option(p, "save CoM height, closure violation, fz/mg vs time")
    add_json_flag(p)
    add_progress_flag(p)
    p.add_argument("--no-progress", dest="progress", action="store_const", const="off",
                   help="the same as --progress off")
    p.set_defaults(func=_run, validate=make_plot_folder)
