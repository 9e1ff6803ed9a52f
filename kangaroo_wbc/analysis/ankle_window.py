"""Design study of the ankle's lower stage: how wide can the ankle pitch window be?

Reduced model of the stage that carries the foot (urdf/README.md, "Design trade-off — ankle
pitch"): the foot hangs from the tibia on the ankle's universal joint (roll about the tibia's x
axis, then pitch about the cross's y axis) and two rods drive it, each from a crank pivoted on the
knee axis (the lower end of the ankle drive along the femur) to a rod end on the foot. The knee
transmission of the paper (Figs. 12-14) asks that the foot keep its orientation w.r.t. the femur
when only the knee moves; that holds exactly when each rod is the tibia vector plus an offset
along the knee axis (its *lean*) and each crank arm equals the foot's lever to its rod end, which is
how :class:`RodStage` builds the rods. The cranks' angles — the foot pitch w.r.t. the femur that the
ankle actuators command — are the inputs; the knee sweeps its 120 deg.

With rods parallel to the tibia (no lean) the determinant of the 2x2 map from the foot's (roll,
pitch) rates to the rod-length rates is, by the Binet-Cauchy identity,
``((r1 x r2) . t) (t . (e_roll x e_pitch))`` (``r_i`` the foot's levers, ``t`` the tibia axis): at zero
roll a sinusoid of the foot pitch w.r.t. the tibia with zeros 180 deg apart, whatever the lever
lengths, phases and rod-end positions. The pitch window plus the knee's 120 deg must then fit in
180 deg. A lean adds terms that can move the zeros apart; :func:`search` looks for such a design.

:func:`scan` solves the stage over a grid of knee angle x crank 1 x crank 2 (continuation from the
common mode) and reports the smallest singular value of the rod map [m/rad], the points where the
stage does not close (a singularity between the common mode and the point), and the ankle roll at
the standing knee. Run ``python -m kangaroo_wbc.analysis.ankle_window --help``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

try:  # numba is a dependency; without it the same functions run as plain Python (slowly)
    import numba

    def _jit(f: Callable) -> Callable:
        return numba.njit(cache=True, nogil=True)(f)
except ImportError:  # pragma: no cover - exercised only where numba is missing
    def _jit(f: Callable) -> Callable:
        return f

#: Table II ankle pitch joint range [deg] at the standing knee.
TABLE_II_PITCH_DEG = (-36.0, 34.0)
#: Knee stroke [deg] (Table II).
KNEE_DEG = (0.0, 120.0)


@dataclass(frozen=True)
class RodStage:
    """Geometry of the two rods (index 0 inner, 1 outer) of one ankle, lengths in [m], angles in
    [deg], in the femur frame at the zero configuration (x forward, y left, z up, knee axis y)."""

    lever_m: tuple[float, float]  # foot lever length = knee-crank arm
    lever_deg: tuple[float, float]  # lever direction from the tibia (pointing down), about +y
    lateral_m: tuple[float, float]  # rod end on the foot along y (from the ankle centre)
    lean_m: tuple[float, float] = (0.0, 0.0)  # rod top minus rod end along the knee axis
    height_m: tuple[float, float] = (0.0, 0.0)  # rod end offset along the tibia (up)
    tibia_m: float = 0.357

    @classmethod
    def from_params(cls, params) -> RodStage:
        """The committed stage of :mod:`kangaroo_wbc.robots.kangaroo` (no lean, levers in phase)."""
        k = params.num("ankle.heel_lever_m", True)
        lam = params.num("ankle.heel_lever_deg")
        w = params.num("ankle.chain_lateral_m", True)
        return cls((k, k), (lam, lam), (-w, w), tibia_m=params.num("leg.tibia_length_m", True))

    @classmethod
    def from_model(cls, clm, side: str = "left") -> RodStage:
        """The stage as built in a loaded Kangaroo-style model (``<side>_ankle_<inner|outer>_...``
        names), read at the zero configuration: raises ValueError when its rods do not keep the
        foot's orientation exactly (crank arm != foot lever) or a name is missing."""
        import pinocchio as pin

        m = clm.model
        d = m.createData()
        q = pin.neutral(m)
        pin.framesForwardKinematics(m, d, q)

        def joint(name: str) -> np.ndarray:
            if not m.existJointName(name):
                raise ValueError(f"model has no joint '{name}'")
            return d.oMi[m.getJointId(name)].translation.copy()

        knee, ankle = joint(f"{side}_knee_joint"), joint(f"{side}_ankle_pitch_joint")
        if np.linalg.norm((knee - ankle)[[0, 1]]) > 1e-9:
            raise ValueError("the tibia is not vertical at the zero configuration")
        lever, lam, lat, lean = [], [], [], []
        for part in ("inner", "outer"):
            frame = f"{side}_ankle_{part}_rod_cut_u"
            if not m.existFrame(frame):
                raise ValueError(f"model has no frame '{frame}'")
            end = d.oMf[m.getFrameId(frame)].translation
            top = joint(f"{side}_ankle_{part}_lower_rod_pitch")
            arm, foot = (top - knee)[[0, 2]], (end - ankle)[[0, 2]]
            if np.linalg.norm(arm - foot) > 1e-9:
                raise ValueError(f"{part} rod: knee-crank arm {arm} differs from the foot lever {foot}: "
                                 "the foot orientation is not kept exactly over the knee stroke")
            lever.append(float(np.hypot(*foot)))
            lam.append(float(np.degrees(np.arctan2(-foot[0], -foot[1]))))
            lat.append(float(end[1] - ankle[1]))
            lean.append(float(top[1] - end[1]))
        return cls((lever[0], lever[1]), (lam[0], lam[1]), (lat[0], lat[1]), (lean[0], lean[1]),
                   tibia_m=float(knee[2] - ankle[2]))

    def vector(self) -> np.ndarray:
        """Parameters packed for the compiled kernels (angles in [rad])."""
        return np.array([*self.lever_m, *np.radians(self.lever_deg), *self.lateral_m, *self.lean_m,
                         *self.height_m, self.tibia_m], float)


@_jit
def _rod_map(p, knee, crank1, crank2, roll, pitch, res, jac):
    """Residuals (rod length errors [m]) and their Jacobian w.r.t. (roll, pitch) [m/rad]."""
    lt = p[10]
    cq, sq = math.cos(knee), math.sin(knee)
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    ax, az = -sq * lt, -cq * lt  # ankle centre: R_y(knee) (0, 0, -lt)
    for i in range(2):
        k, lam, y, s, z = p[i], p[2 + i], p[4 + i], p[6 + i], p[8 + i]
        crank = crank1 if i == 0 else crank2
        length = math.sqrt(lt * lt + s * s)
        lx, lz = -k * math.sin(lam), -k * math.cos(lam) + z  # lever in the foot frame (x, z)
        cc, sc = math.cos(crank), math.sin(crank)
        tx, ty, tz = cc * lx + sc * lz, y + s, -sc * lx + cc * lz  # rod top: R_y(crank) lever + lean
        # rod end: ankle + R_y(knee) R_x(roll) R_y(pitch) (lx, y, lz) and its two derivatives
        px, py, pz = cp * lx + sp * lz, y, -sp * lx + cp * lz  # R_y(pitch) h
        dpx, dpz = -sp * lx + cp * lz, -cp * lx - sp * lz  # d/dpitch
        rx, ry, rz = px, cr * py - sr * pz, sr * py + cr * pz  # R_x(roll) ...
        gy, gz = -sr * py - cr * pz, cr * py - sr * pz  # d/droll (x unchanged)
        by, bz = -sr * dpz, cr * dpz  # R_x(roll) d/dpitch (x = dpx)
        hx, hy, hz = ax + cq * rx + sq * rz, ry, az - sq * rx + cq * rz
        dx, dy, dz = hx - tx, hy - ty, hz - tz
        res[i] = (dx * dx + dy * dy + dz * dz - length * length) / (2.0 * length)
        jac[i, 0] = (dx * (sq * gz) + dy * gy + dz * (cq * gz)) / length
        jac[i, 1] = (dx * (cq * dpx + sq * bz) + dy * by + dz * (-sq * dpx + cq * bz)) / length


@_jit
def _solve(p, knee, crank1, crank2, steps, iters):
    """(roll, pitch, smallest singular value, closed) at one point, by continuation from the
    common mode (exact: zero roll, pitch = mean crank - knee) to the requested differential."""
    mean, half = 0.5 * (crank1 + crank2), 0.5 * (crank1 - crank2)
    roll, pitch = 0.0, mean - knee
    res = np.zeros(2)
    jac = np.zeros((2, 2))
    closed = True
    for st in range(1, steps + 1):
        t = st / steps
        c1, c2 = mean + t * half, mean - t * half
        for _ in range(iters):
            _rod_map(p, knee, c1, c2, roll, pitch, res, jac)
            det = jac[0, 0] * jac[1, 1] - jac[0, 1] * jac[1, 0]
            if det == 0.0:
                return 0.0, 0.0, 0.0, False
            dr = (jac[1, 1] * res[0] - jac[0, 1] * res[1]) / det
            dp = (-jac[1, 0] * res[0] + jac[0, 0] * res[1]) / det
            n = math.hypot(dr, dp)
            f = 1.0 if n < 0.2 else 0.2 / n
            roll -= f * dr
            pitch -= f * dp
            if n < 1e-13:
                break
        _rod_map(p, knee, c1, c2, roll, pitch, res, jac)
        if abs(res[0]) > 1e-9 or abs(res[1]) > 1e-9 or abs(roll) > 1.4:
            closed = False
    a, b, c, d = jac[0, 0], jac[0, 1], jac[1, 0], jac[1, 1]
    s2 = a * a + b * b + c * c + d * d
    det = abs(a * d - b * c)
    smin = math.sqrt(max(0.5 * (s2 - math.sqrt(max(s2 * s2 - 4.0 * det * det, 0.0))), 0.0))
    return roll, pitch, smin, closed


@_jit
def _box(p, knees, cranks, steps, iters):
    smin, failures, max_roll = np.inf, 0, 0.0
    for q in knees:
        for c1 in cranks:
            for c2 in cranks:
                roll, _, s, closed = _solve(p, q, c1, c2, steps, iters)
                if not closed:
                    failures += 1
                    smin = 0.0
                    continue
                smin = min(smin, s)
                max_roll = max(max_roll, abs(roll))
    return smin, failures, max_roll


@_jit
def _common_mode(p, knees, cranks, out_det, out_smin):
    res = np.zeros(2)
    jac = np.zeros((2, 2))
    for i in range(knees.size):
        for j in range(cranks.size):
            _rod_map(p, knees[i], cranks[j], cranks[j], 0.0, cranks[j] - knees[i], res, jac)
            a, b, c, d = jac[0, 0], jac[0, 1], jac[1, 0], jac[1, 1]
            det = a * d - b * c
            s2 = a * a + b * b + c * c + d * d
            out_det[i, j] = det
            out_smin[i, j] = math.sqrt(max(0.5 * (s2 - math.sqrt(max(s2 * s2 - 4.0 * det * det, 0.0))), 0.0))


def common_mode_map(stage: RodStage, knee_deg: np.ndarray, crank_deg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Determinant [m^2/rad^2] and smallest singular value [m/rad] of the rod map along the common
    mode (both cranks alike: zero roll, pitch = crank - knee, exact) on a knee x crank grid."""
    knees = np.radians(np.asarray(knee_deg, float))
    cranks = np.radians(np.asarray(crank_deg, float))
    det, smin = np.zeros((knees.size, cranks.size)), np.zeros((knees.size, cranks.size))
    _common_mode(stage.vector(), knees, cranks, det, smin)
    return det, smin


def plot_windows(ax, stage: RodStage, windows: dict[str, tuple[float, float]], standing_knee_deg: float) -> None:
    """Rod-map conditioning along the common mode over the knee stroke, the dead points (zero
    determinant, red) and each pitch window as a box (window at the standing knee, all knees)."""
    lo = min(w[0] for w in windows.values()) - 20.0
    hi = max(w[1] for w in windows.values()) + 20.0
    knee = np.linspace(*KNEE_DEG, 121)
    pitch = np.linspace(lo, hi, 181)
    det, smin = common_mode_map(stage, knee, pitch + standing_knee_deg)
    mesh = ax.pcolormesh(knee, pitch, 1e3 * smin.T, shading="auto", cmap="viridis")
    ax.figure.colorbar(mesh, ax=ax, label="smallest singular value of the rod map [mm/rad]")
    ax.contour(knee, pitch, det.T, levels=[0.0], colors="red", linewidths=1.5)
    for (label, (w0, w1)), color in zip(windows.items(), ("white", "orange", "cyan")):
        ax.plot([KNEE_DEG[0], KNEE_DEG[1], KNEE_DEG[1], KNEE_DEG[0], KNEE_DEG[0]], [w0, w0, w1, w1, w0], color=color,
                lw=1.5, label=f"{label}: {w0:.1f}..{w1:.1f} deg")
    ax.set_xlabel("knee [deg]")
    ax.set_ylabel("ankle actuators' pitch, as ankle pitch at the standing knee [deg]")
    ax.set_title("Ankle rods: dead points (red) against the pitch windows, both strokes alike")
    ax.legend(loc="lower right", fontsize=8)


@dataclass
class WindowScan:
    """What :func:`scan` found (angles in [deg])."""

    pitch_window_deg: tuple[float, float]  # ankle pitch joint range at the standing knee
    crank_deg: tuple[float, float]  # the same as foot pitch w.r.t. the femur
    points: int
    failures: int  # grid points where the stage does not close
    smallest_singular_value_m: float  # 0 when a point fails
    max_roll_deg: float
    roll_at_standing_knee_deg: tuple[float, float]  # cranks (lo, hi) and (hi, lo)


def rod_map(stage: RodStage, knee_deg: float, crank_deg: tuple[float, float], roll_deg: float,
            pitch_deg: float) -> tuple[np.ndarray, np.ndarray]:
    """Rod length errors [m] and their Jacobian w.r.t. (roll, pitch) [m/rad] at one configuration."""
    res, jac = np.zeros(2), np.zeros((2, 2))
    _rod_map(stage.vector(), math.radians(knee_deg), math.radians(crank_deg[0]), math.radians(crank_deg[1]),
             math.radians(roll_deg), math.radians(pitch_deg), res, jac)
    return res, jac


def solve(stage: RodStage, knee_deg: float, crank_deg: tuple[float, float]) -> tuple[float, float, float, bool]:
    """Foot (roll, pitch) [deg] w.r.t. the tibia, smallest singular value [m/rad], closed."""
    roll, pitch, smin, closed = _solve(stage.vector(), math.radians(knee_deg), math.radians(crank_deg[0]),
                                       math.radians(crank_deg[1]), 8, 15)
    return math.degrees(roll), math.degrees(pitch), smin, bool(closed)


def scan(stage: RodStage, pitch_window_deg: tuple[float, float] = TABLE_II_PITCH_DEG, standing_knee_deg: float = 10.0,
         n_knee: int = 25, n_crank: int = 9) -> WindowScan:
    """Solve the stage over knee (Table II stroke) x crank 1 x crank 2, the cranks spanning the
    given ankle pitch window at the standing knee (crank = ankle pitch + knee)."""
    if n_knee < 2 or n_crank < 2:
        raise ValueError(f"grid too small: n_knee={n_knee}, n_crank={n_crank} (at least 2 each)")
    lo, hi = (float(a) + standing_knee_deg for a in pitch_window_deg)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"pitch window {pitch_window_deg} is not an increasing pair of finite angles")
    knees = np.radians(np.linspace(*KNEE_DEG, n_knee))
    cranks = np.radians(np.linspace(lo, hi, n_crank))
    smin, failures, max_roll = _box(stage.vector(), knees, cranks, 8, 15)
    rolls = (solve(stage, standing_knee_deg, (lo, hi))[0], solve(stage, standing_knee_deg, (hi, lo))[0])
    return WindowScan((float(pitch_window_deg[0]), float(pitch_window_deg[1])), (lo, hi), n_knee * n_crank ** 2,
                      int(failures), float(smin), math.degrees(max_roll), rolls)


#: Search box: lever length, lever direction, rod end |y|, lean, rod end height (per rod).
SEARCH_BOUNDS = ((0.03, 0.09), (0.0, 360.0), (0.015, 0.07), (-0.2, 0.2), (-0.03, 0.03))


def _stage_from(x: np.ndarray, tibia_m: float) -> RodStage:
    return RodStage((x[0], x[1]), (x[2], x[3]), (-x[4], x[5]), (x[6], x[7]), (x[8], x[9]), tibia_m)


def search(pitch_window_deg: tuple[float, float] = TABLE_II_PITCH_DEG, *, roll_deg: float = 27.0,
           generations: int = 60, popsize: int = 10, seed: int = 0, tibia_m: float = 0.357,
           progress: Callable[[int], None] | None = None) -> tuple[RodStage, WindowScan]:
    """Differential evolution over both rods' geometry (10 parameters, :data:`SEARCH_BOUNDS`) for
    the largest smallest singular value over the stroke box, with ``+-roll_deg`` reached at the
    standing knee and at most 65 deg of roll anywhere. Returns the best stage and its scan on a
    grid four times finer per axis than the one searched (a design that passes the coarse grid only
    between its points shows failures there)."""
    from scipy.optimize import differential_evolution

    def cost(x: np.ndarray) -> float:
        s = scan(_stage_from(x, tibia_m), pitch_window_deg)
        r = s.roll_at_standing_knee_deg
        pen = 3.0 if r[0] * r[1] >= 0.0 else 0.0
        pen += 0.05 * max(0.0, roll_deg - min(abs(r[0]), abs(r[1]))) + 0.02 * max(0.0, s.max_roll_deg - 65.0)
        return -s.smallest_singular_value_m / 0.01 + pen + 0.02 * min(s.failures, 200)

    bounds = [b for pair in zip(SEARCH_BOUNDS, SEARCH_BOUNDS) for b in pair]
    gen = [0]

    def callback(*_args) -> None:
        gen[0] += 1
        if progress is not None:
            progress(gen[0])

    out = differential_evolution(cost, bounds, popsize=popsize, maxiter=generations, seed=seed, polish=False,
                                 tol=1e-8, callback=callback)
    stage = _stage_from(out.x, tibia_m)
    return stage, scan(stage, pitch_window_deg, n_knee=97, n_crank=33)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kangaroo_wbc.analysis.ankle_window",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--pitch-window", nargs=2, type=float, default=TABLE_II_PITCH_DEG, metavar=("MIN", "MAX"),
                    help="ankle pitch joint range at the standing knee [deg] (default: Table II)")
    ap.add_argument("--search", action="store_true", help="search the lean / phase design space (minutes)")
    ap.add_argument("--generations", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from kangaroo_wbc.robots.kangaroo.params import load_params

    if a.generations < 1:
        ap.error(f"--generations must be at least 1, got {a.generations}")
    committed = RodStage.from_params(load_params())
    try:
        out = {"committed": asdict(scan(committed, tuple(a.pitch_window)))}
    except ValueError as e:
        ap.error(str(e))
    if a.search:
        def progress(g: int) -> None:
            print(f"\rgeneration {g}/{a.generations}", end="", file=sys.stderr, flush=True)

        stage, s = search(tuple(a.pitch_window), generations=a.generations, seed=a.seed, progress=progress)
        print(file=sys.stderr)
        out["search"] = {"stage": asdict(stage), "scan": asdict(s)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
