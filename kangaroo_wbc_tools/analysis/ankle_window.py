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
the standing knee. :func:`study` runs them: ``kangaroo-wbc analyze ankle-window --help``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from kangaroo_wbc.model.compiled import compiled

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


@compiled
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


@compiled
def _smallest_singular_value(jac):
    """(determinant, smallest singular value) of a 2x2 matrix."""
    a, b, c, d = jac[0, 0], jac[0, 1], jac[1, 0], jac[1, 1]
    det = a * d - b * c
    s2 = a * a + b * b + c * c + d * d
    return det, math.sqrt(max(0.5 * (s2 - math.sqrt(max(s2 * s2 - 4.0 * det * det, 0.0))), 0.0))


@compiled
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
    return roll, pitch, _smallest_singular_value(jac)[1], closed


@compiled
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


@compiled
def _common_mode(p, knees, cranks, out_det, out_smin):
    res = np.zeros(2)
    jac = np.zeros((2, 2))
    for i in range(knees.size):
        for j in range(cranks.size):
            _rod_map(p, knees[i], cranks[j], cranks[j], 0.0, cranks[j] - knees[i], res, jac)
            out_det[i, j], out_smin[i, j] = _smallest_singular_value(jac)


def common_mode_map(stage: RodStage, knee_deg: np.ndarray, crank_deg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Determinant [m^2/rad^2] and smallest singular value [m/rad] of the rod map along the common
    mode (both cranks alike: zero roll, pitch = crank - knee, exact) on a knee x crank grid."""
    knees = np.radians(np.asarray(knee_deg, float))
    cranks = np.radians(np.asarray(crank_deg, float))
    det, smin = np.zeros((knees.size, cranks.size)), np.zeros((knees.size, cranks.size))
    _common_mode(stage.vector(), knees, cranks, det, smin)
    return det, smin


def rod_pitch_limits(clm, side: str = "left") -> tuple[float, float]:
    """Limits [deg] of the lower rods' pitch joints (``<side>_ankle_<inner|outer>_lower_rod_pitch``,
    the rod's angle w.r.t. its knee crank) in a loaded Kangaroo-style model: the tightest of the two
    rods. They bound the reachable ankle set away from the lever/rod dead points."""
    m = clm.model
    lo, hi = -math.inf, math.inf
    for part in ("inner", "outer"):
        name = f"{side}_ankle_{part}_lower_rod_pitch"
        if not m.existJointName(name):
            raise ValueError(f"model has no joint '{name}'")
        iq = m.joints[m.getJointId(name)].idx_q
        lo, hi = max(lo, float(m.lowerPositionLimit[iq])), min(hi, float(m.upperPositionLimit[iq]))
    return math.degrees(lo), math.degrees(hi)


def knee_window(crank_deg: tuple[float, float], rod_limits_deg: tuple[float, float],
                knee_deg: np.ndarray) -> np.ndarray:
    """Ankle pitch window [deg] at each knee angle along the common mode (both cranks alike, zero
    roll; exact there): the cranks' range ``crank_deg`` (foot pitch w.r.t. the femur over the ankle
    strokes) cut by the lower rods' pitch limits. With the rods parallel to the tibia the rod pitch
    w.r.t. its knee crank is ``knee - crank``, so the limits ``[a, b]`` allow cranks in ``[knee - b,
    knee - a]``; the window is ``[max(crank_lo, knee - b), min(crank_hi, knee - a)] - knee``, NaN
    where empty. It shrinks away from the knee where the crank range sits inside the limits (the
    analogue of the paper's Fig. 11)."""
    knee = np.asarray(knee_deg, float)
    lo = np.maximum(crank_deg[0], knee - rod_limits_deg[1]) - knee
    hi = np.minimum(crank_deg[1], knee - rod_limits_deg[0]) - knee
    empty = lo > hi
    return np.column_stack([np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)])


def dead_point_margins(stage: RodStage, window: np.ndarray, knee_deg: np.ndarray,
                       step_deg: float = 0.05) -> tuple[float, float]:
    """Smallest distance [deg] of a knee-dependent window (:func:`knee_window`, ankle pitch per knee)
    to the rods' dead points along the common mode, below and above it: the zeros of the rod map's
    determinant (:func:`common_mode_map`) nearest to the window's lower and upper ends at each knee,
    found on a ``step_deg`` grid of 180 deg on each side. Also the smallest singular value is
    positive in between (the determinant keeps its sign over the window)."""
    below, above = math.inf, math.inf
    for k, (lo, hi) in zip(np.asarray(knee_deg, float), window):
        if not np.isfinite(lo):
            continue
        pitch = np.arange(lo - 180.0, hi + 180.0 + step_deg, step_deg)
        det = common_mode_map(stage, np.array([k]), pitch + k)[0][0]
        inside = (pitch >= lo) & (pitch <= hi)
        ref = np.sign(det[inside][0])
        if np.any(np.sign(det[inside]) != ref):
            return -math.inf, -math.inf
        flip = np.sign(det) != ref
        lower, upper = flip & (pitch < lo), flip & (pitch > hi)
        if np.any(lower):
            below = min(below, lo - float(pitch[lower].max()))
        if np.any(upper):
            above = min(above, float(pitch[upper].min()) - hi)
    return below, above


def plot_windows(ax, stage: RodStage, windows: dict[str, tuple[float, float]], standing_knee_deg: float,
                 reachable: np.ndarray | None = None) -> None:
    """Rod-map conditioning along the common mode over the knee stroke, the dead points (zero
    determinant, red) and each pitch window as a box (window at the standing knee, all knees);
    ``reachable`` (:func:`knee_window` on :data:`KNEE_DEG` sampled at 121 knees) is drawn as the
    knee-dependent window, in the same coordinate (pitch + knee - standing knee)."""
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
    if reachable is not None:
        shift = knee - standing_knee_deg
        ax.fill_between(knee, reachable[:, 0] + shift, reachable[:, 1] + shift, color="magenta", alpha=0.25,
                        label="reachable (rod-pitch limits)")
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


def _evolve(cost: Callable[[np.ndarray], float], bounds: list, generations: int, popsize: int, seed: int,
            tol: float, progress: Callable[[int], None] | None) -> np.ndarray:
    """scipy's differential evolution (no polishing), reporting each generation to ``progress``."""
    from scipy.optimize import differential_evolution

    gen = [0]

    def callback(*_args) -> None:
        gen[0] += 1
        if progress is not None:
            progress(gen[0])

    return differential_evolution(cost, bounds, popsize=popsize, maxiter=generations, seed=seed, polish=False,
                                  tol=tol, callback=callback).x


def search(pitch_window_deg: tuple[float, float] = TABLE_II_PITCH_DEG, *, roll_deg: float = 27.0,
           generations: int = 60, popsize: int = 10, seed: int = 0, tibia_m: float = 0.357,
           progress: Callable[[int], None] | None = None) -> tuple[RodStage, WindowScan]:
    """Differential evolution over both rods' geometry (10 parameters, :data:`SEARCH_BOUNDS`) for
    the largest smallest singular value over the stroke box, with ``+-roll_deg`` reached at the
    standing knee and at most 65 deg of roll anywhere. Returns the best stage and its scan on a
    grid four times finer per axis than the one searched (a design that passes the coarse grid only
    between its points shows failures there)."""
    def cost(x: np.ndarray) -> float:
        s = scan(_stage_from(x, tibia_m), pitch_window_deg)
        r = s.roll_at_standing_knee_deg
        pen = 3.0 if r[0] * r[1] >= 0.0 else 0.0
        pen += 0.05 * max(0.0, roll_deg - min(abs(r[0]), abs(r[1]))) + 0.02 * max(0.0, s.max_roll_deg - 65.0)
        return -s.smallest_singular_value_m / 0.01 + pen + 0.02 * min(s.failures, 200)

    bounds = [b for pair in zip(SEARCH_BOUNDS, SEARCH_BOUNDS) for b in pair]
    x = _evolve(cost, bounds, generations, popsize, seed, 1e-8, progress)
    stage = _stage_from(x, tibia_m)
    return stage, scan(stage, pitch_window_deg, n_knee=97, n_crank=33)


# --- Planar study: what giving up the exact invariance buys ------------------------------------
#
# In the sagittal plane the lower stage is a four-bar on the tibia: a crank turned by the ankle
# actuators (pivoted on the knee axis, or on the femur off it), a rod, and the foot's lever about
# the ankle. Angles are measured like the ankle pitch (about +y) from the downward direction, a unit
# vector u(phi) = (-sin phi, -cos phi) in (x, z); the knee flexes the tibia by +k, so a direction
# fixed in the femur turns by -k in the tibia frame. The foot's orientation w.r.t. the femur is
# psi + k (psi the lever angle in the tibia frame); it stays constant over the knee stroke exactly
# for the parallelogram (pivot on the knee axis, crank = lever, rod = tibia). Every other shape is
# allowed here: the study asks how far the foot must turn over the knee stroke for Table II's pitch
# window to fit between the dead points (lever along the rod, or crank along the rod: the actuators
# lose the foot's pitch) with a margin.


@dataclass(frozen=True)
class PlanarStage:
    """Sagittal lower ankle stage; lengths [m], angles [deg] (see the comment above)."""

    pivot_m: tuple[float, float]  # crank pivot in the femur frame (x, z) from the knee axis
    crank_m: float
    lever_m: float
    crank_deg: float  # crank angle in the tibia frame at the standing knee, standing strokes
    lever_deg: float  # lever angle in the tibia frame at the standing knee, standing strokes
    swing_deg: float  # crank half-swing over the ankle actuators' common stroke
    tibia_m: float = 0.357
    standing_knee_deg: float = 10.0

    def vector(self) -> np.ndarray:
        return np.array([*self.pivot_m, self.crank_m, self.lever_m, math.radians(self.crank_deg),
                         math.radians(self.lever_deg), math.radians(self.swing_deg), self.tibia_m,
                         math.radians(self.standing_knee_deg)], float)


@dataclass
class PlanarScan:
    """What :func:`planar_scan` found (angles in [deg])."""

    pitch_window_deg: tuple[float, float]  # ankle pitch change at the standing knee, over the swing
    min_transmission_deg: float  # smallest angle to a dead point over knee stroke x swing (<0: passed)
    foot_deviation_deg: float  # foot orientation w.r.t. the femur, max - min over the knee stroke
    failures: int  # grid points where the stage does not assemble (0: it closes everywhere)


@compiled
def _pivot_in_tibia(p, knee):
    """Crank pivot (fixed in the femur) in the tibia frame at a knee angle."""
    ck, sk = math.cos(-knee), math.sin(-knee)
    return ck * p[0] + sk * p[1], -sk * p[0] + ck * p[1]


@compiled
def _planar_point(p, rod, knee, beta, psi_prev, sign_l, sign_c):
    """Lever angle (continued from psi_prev) and the signed sines of the lever-rod and crank-rod
    angles at one knee angle / crank angle (femur frame); ok False when the stage cannot close."""
    ox, oz = _pivot_in_tibia(p, knee)
    th = beta - knee
    cx, cz = -p[2] * math.sin(th), -p[2] * math.cos(th)
    px, pz = ox + cx, oz + cz
    dx, dz = px, pz + p[7]  # crank pin - ankle
    dist = math.hypot(dx, dz)
    b = p[3]
    r = (dist * dist + b * b - rod * rod) / (2.0 * b * dist)
    if abs(r) > 1.0:
        return psi_prev, -1.0, -1.0, False
    phi = math.atan2(-dx, -dz)
    al = math.acos(r)
    w1 = (phi + al - psi_prev + math.pi) % (2.0 * math.pi) - math.pi
    w2 = (phi - al - psi_prev + math.pi) % (2.0 * math.pi) - math.pi
    psi = psi_prev + (w1 if abs(w1) <= abs(w2) else w2)
    lx, lz = -b * math.sin(psi), -b * math.cos(psi)
    rx, rz = px - lx, pz + p[7] - lz  # rod from the lever pin to the crank pin
    s_l = sign_l * (rx * lz - rz * lx) / (rod * b)
    s_c = sign_c * (rx * cz - rz * cx) / (rod * p[2])
    return psi, s_l, s_c, True


@compiled
def _planar_scan(p, knees, n_beta, n_steps):
    """(window lo, window hi, min sine, foot deviation, failures) [rad]; knees ascending [rad]. The
    swing is followed from the standing crank at the standing knee, then the knee stroke both ways
    from there, so that each point stays on the standing assembly branch; a point that does not
    close counts as a failure (sine -1) and the rest of its sweep is not followed."""
    ks = p[8]
    beta0 = p[4] + ks
    # rod length and the dead points' sides from the standing assembly
    ox, oz = _pivot_in_tibia(p, ks)
    cx, cz = -p[2] * math.sin(p[4]), -p[2] * math.cos(p[4])
    lx, lz = -p[3] * math.sin(p[5]), -p[3] * math.cos(p[5])
    rx, rz = ox + cx - lx, oz + cz + p[7] - lz
    rod = math.hypot(rx, rz)
    sign_l = 1.0 if rx * lz - rz * lx > 0.0 else -1.0
    sign_c = 1.0 if rx * cz - rz * cx > 0.0 else -1.0
    lo, hi, worst, dev, failures = 0.0, 0.0, 1.0, 0.0, 0
    n = knees.size
    for j in range(n_beta):
        beta = beta0 - p[6] + 2.0 * p[6] * j / (n_beta - 1)
        psi = p[5]
        ok = True
        for st in range(1, n_steps + 1):  # along the swing at the standing knee
            psi, s_l, s_c, ok = _planar_point(p, rod, ks, beta0 + (beta - beta0) * st / n_steps, psi, sign_l, sign_c)
            if not ok:
                break
            worst = min(worst, s_l, s_c)
        if not ok:
            failures += n
            worst = -1.0
            continue
        lo, hi = min(lo, psi - p[5]), max(hi, psi - p[5])
        psi_stand = psi
        fmin, fmax = psi + ks, psi + ks
        for direction in (1, -1):
            psi = psi_stand
            for i in range(n):
                q = knees[i] if direction == 1 else knees[n - 1 - i]
                if (direction == 1 and q <= ks) or (direction == -1 and q >= ks):
                    continue
                psi, s_l, s_c, ok = _planar_point(p, rod, q, beta, psi, sign_l, sign_c)
                if not ok:
                    failures += 1
                    worst = -1.0
                    break
                worst = min(worst, s_l, s_c)
                fmin, fmax = min(fmin, psi + q), max(fmax, psi + q)
        if 2 * j == n_beta - 1:
            dev = fmax - fmin
    return lo, hi, worst, dev, failures


def planar_scan(stage: PlanarStage, n_knee: int = 121, n_beta: int = 25, n_steps: int = 60) -> PlanarScan:
    """Solve the planar stage over the knee stroke (Table II) x the crank swing (``n_beta`` odd, so
    that the standing strokes are on the grid)."""
    if n_knee < 2 or n_beta < 3 or n_beta % 2 == 0 or n_steps < 1:
        raise ValueError(f"bad grid: n_knee={n_knee} (>= 2), n_beta={n_beta} (odd, >= 3), n_steps={n_steps} (>= 1)")
    p = stage.vector()
    if not np.all(np.isfinite(p)) or min(stage.crank_m, stage.lever_m, stage.tibia_m) <= 0.0:
        raise ValueError(f"not a stage: {stage}")
    lo, hi, worst, dev, failures = _planar_scan(p, np.radians(np.linspace(*KNEE_DEG, n_knee)), n_beta, n_steps)
    return PlanarScan((math.degrees(lo), math.degrees(hi)), math.degrees(math.asin(max(-1.0, min(1.0, worst)))),
                      math.degrees(dev), int(failures))


#: Planar search box: pivot x, z [m] (only with an off-axis pivot), crank, lever [m], crank and
#: lever angles [deg], crank half-swing [deg].
PLANAR_BOUNDS = ((-0.08, 0.08), (-0.02, 0.12), (0.02, 0.08), (0.02, 0.08), (-180.0, 180.0), (-180.0, 180.0),
                 (10.0, 115.0))


def planar_search(pitch_window_deg: tuple[float, float] = TABLE_II_PITCH_DEG, *, off_axis_pivot: bool = True,
                  margin_deg: float = 6.0, standing_pitch_deg: float = -5.0, generations: int = 400,
                  popsize: int = 30, seed: int = 0, tibia_m: float = 0.357, standing_knee_deg: float = 10.0,
                  progress: Callable[[int], None] | None = None) -> tuple[PlanarStage, PlanarScan, bool]:
    """Differential evolution for the smallest foot deviation over the knee stroke with the pitch
    window reached at the standing knee (window minus the standing ankle pitch, as a change) and
    every point of knee stroke x swing at least ``margin_deg`` from a dead point. Returns the best
    stage, its scan and whether it meets the window and the margin."""
    need_lo, need_hi = pitch_window_deg[0] - standing_pitch_deg, pitch_window_deg[1] - standing_pitch_deg
    if not (need_lo < 0.0 < need_hi):
        raise ValueError(f"window {pitch_window_deg} does not contain the standing pitch {standing_pitch_deg}")

    def stage_of(x: np.ndarray) -> PlanarStage:
        piv = (x[0], x[1]) if off_axis_pivot else (0.0, 0.0)
        y = x[2:] if off_axis_pivot else x
        return PlanarStage((float(piv[0]), float(piv[1])), float(y[0]), float(y[1]), float(y[2]), float(y[3]),
                           float(y[4]), tibia_m, standing_knee_deg)

    def shortfall(sc: PlanarScan, slack: float = 0.0) -> float:
        lo, hi = sc.pitch_window_deg
        return (max(0.0, lo - need_lo + slack) + max(0.0, need_hi - hi + slack)
                + max(0.0, margin_deg - sc.min_transmission_deg + slack))

    def cost(x: np.ndarray) -> float:  # on a coarse grid, with 0.25 deg to spare for the fine one
        sc = planar_scan(stage_of(x), n_knee=61, n_beta=9, n_steps=20)
        return sc.foot_deviation_deg + 10.0 * shortfall(sc, 0.25) + 20.0 * sc.failures

    bounds = list(PLANAR_BOUNDS if off_axis_pivot else PLANAR_BOUNDS[2:])
    stage = stage_of(_evolve(cost, bounds, generations, popsize, seed, 1e-10, progress))
    sc = planar_scan(stage)
    return stage, sc, bool(sc.failures == 0 and shortfall(sc) < 1e-6)


#: Default generations of :func:`search` and :func:`planar_search` in :func:`study`.
SEARCH_GENERATIONS = 60
PLANAR_GENERATIONS = 400

#: A progress display for :func:`study`: ``(label, total generations) -> callback(generation)``.
ProgressFactory = Callable[[str, int], Callable[[int], None]]


def study(pitch_window_deg: tuple[float, float] = TABLE_II_PITCH_DEG, *, search_design: bool = False,
          planar: str | None = None, margin_deg: float = 6.0, generations: int | None = None, seed: int = 0,
          progress: ProgressFactory | None = None) -> dict:
    """The ankle window study of ``kangaroo-wbc analyze ankle-window``: the :func:`scan` of the
    committed stage (``committed``), with ``search_design`` the :func:`search` of the lean / phase
    design space (``search``), with ``planar`` (``"knee-axis"`` or ``"femur"``) the
    :func:`planar_search` with the crank pivot on the knee axis or anywhere on the femur
    (``planar``). ``generations`` defaults to :data:`SEARCH_GENERATIONS` / :data:`PLANAR_GENERATIONS`.

    Raises:
        InputError: a window the stage cannot be scanned for (not increasing, not finite, without
            the standing pitch), an unknown ``planar`` pivot, ``generations`` < 1 or a margin
            outside [0, 45) deg.
    """
    from kangaroo_wbc.errors import InputError
    from kangaroo_wbc.robots.kangaroo.params import load_params

    if planar not in (None, "knee-axis", "femur"):
        raise InputError(f"planar pivot {planar!r}: expected 'knee-axis' or 'femur'")
    if generations is not None and generations < 1:
        raise InputError(f"generations must be at least 1, got {generations}")
    if not (math.isfinite(margin_deg) and 0.0 <= margin_deg < 45.0):
        raise InputError(f"margin must be in [0, 45) deg, got {margin_deg}")
    window = (float(pitch_window_deg[0]), float(pitch_window_deg[1]))

    def callback(label: str, total: int) -> Callable[[int], None] | None:
        return None if progress is None else progress(label, total)

    try:
        out: dict = {"committed": asdict(scan(RodStage.from_params(load_params()), window))}
        if search_design:
            gens = generations or SEARCH_GENERATIONS
            stage, s = search(window, generations=gens, seed=seed, progress=callback("search", gens))
            out["search"] = {"stage": asdict(stage), "scan": asdict(s)}
        if planar:
            gens = generations or PLANAR_GENERATIONS
            pstage, pscan, meets = planar_search(window, off_axis_pivot=planar == "femur", margin_deg=margin_deg,
                                                 generations=gens, seed=seed, progress=callback("planar", gens))
            out["planar"] = {"pivot": planar, "margin_deg": margin_deg, "meets_window_and_margin": meets,
                             "stage": asdict(pstage), "scan": asdict(pscan)}
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return out
