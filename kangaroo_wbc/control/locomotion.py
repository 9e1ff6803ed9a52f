"""Walking from a velocity command: footsteps, a DCM plan and swing-sole trajectories.

:class:`Walk` is a :class:`~kangaroo_wbc.control.behaviours.Behaviour`: it maps time to the
whole-body controller's references (CoM, base yaw, the contacts of each phase, the swing sole's
pose) and takes the velocity command (``geometry_msgs/Twist`` on ``cmd_vel`` in the node) through
:meth:`Walk.command`.

**Gait.** A step is a double support (the ZMP moves onto the next stance sole) and a single support
(the other sole swings to its footstep). With a zero command the soles come side by side and the
robot stands (phase ``stand``); a non-zero command starts walking again.

**Footsteps** (:func:`next_footstep`) follow a walking frame ``(x, y, yaw)`` that advances by the
command over one step, each sole ``± width/2`` beside it; step length, side step and turn are bounded
per step, the command is bounded and rate-limited.

**CoM from the divergent component of motion (DCM).** With the CoM at constant height ``z0`` above
the floor, the linear inverted pendulum ``c̈ = ω² (c - r)`` (``ω = √(g / z0)``, ``r`` the ZMP) splits
into the DCM ``ξ = c + ċ/ω``, ``ξ̇ = ω (ξ - r)`` (unstable: planned backwards from the end of the
preview), and the CoM, ``ċ = ω (ξ - c)`` (stable: integrated forwards) — Takenaka et al. (2009);
Englsberger, Ott and Albu-Schäffer, "Three-dimensional bipedal walking control based on divergent
component of motion", IEEE T-RO 31(2), 2015. The ZMP reference stays at the stance sole's centre in
single support and moves linearly from sole to sole in double support. On a grid of step ``dt`` with
``r`` constant over a sample the backward recursion is exact, ``ξ_k = r_k + e^{-ω dt} (ξ_{k+1} - r_k)``
(:func:`dcm_plan`), with the robot at rest on the last ZMP at the end of the preview. The plan is
renewed at every phase change, from the command of that time. The whole-body controller tracks the
CoM reference ``(c, ċ, c̈ = ω² (c - r))`` with its CoM task.

**Step adjustment** (:meth:`Walk.observe`): at lift-off, the measured DCM's deviation from the plan,
times ``e^{ω T_ss}`` (its growth until touchdown) and ``step_adjustment_gain``, moves the swing
sole's footstep (bounded, never closer to the stance sole than ``min_step_width_m``) — the DCM step
adjustment of Englsberger et al. (2015).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from kangaroo_wbc.control.behaviours import BEHAVIOURS, Behaviour, min_jerk
from kangaroo_wbc.control.wbc import FrameReference, WbcReferences
from kangaroo_wbc.errors import InputError

GRAVITY = 9.81  # [m/s²]


def yaw_rotation(yaw: float) -> np.ndarray:
    """Rotation about the world z axis by ``yaw`` [rad]."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def yaw_of(R: np.ndarray) -> float:
    """Heading [rad] of the rotation ``R``'s x axis in the floor plane."""
    return math.atan2(R[1, 0], R[0, 0])


def _wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


@dataclass
class GaitSettings:
    """Timing [s], geometry [m] and command limits [m/s, rad/s] of :class:`Walk`."""

    single_support_s: float = 0.5
    double_support_s: float = 0.15
    #: the first double support (from standing) is longer: the CoM moves over the first stance sole
    start_double_support_s: float = 0.6
    step_height_m: float = 0.05
    #: the swing sole's target is this far below the floor: it presses on it at touchdown
    touchdown_depth_m: float = 0.002
    #: distance between the sole centres across the walking direction (None: as the robot stands)
    step_width_m: float | None = None
    max_step_length_m: float = 0.25
    max_side_step_m: float = 0.1
    max_step_yaw_rad: float = 0.2
    max_forward_mps: float = 0.4
    max_lateral_mps: float = 0.2
    max_yaw_rate_radps: float = 0.5
    #: the command in use follows the requested one at these rates
    max_linear_accel_mps2: float = 0.5
    max_yaw_accel_radps2: float = 1.0
    #: footsteps planned ahead (the DCM plan's horizon)
    preview_steps: int = 3
    step_adjustment_gain: float = 0.5
    max_step_adjustment_m: float = 0.08
    #: narrowest distance between the sole centres across the stance sole's heading after an adjustment
    min_step_width_m: float = 0.16
    plan_dt_s: float = 0.005

    def __post_init__(self) -> None:
        for name in ("single_support_s", "double_support_s", "start_double_support_s", "plan_dt_s",
                     "max_step_length_m", "max_forward_mps", "max_yaw_rate_radps", "max_linear_accel_mps2",
                     "max_yaw_accel_radps2", "max_lateral_mps", "max_side_step_m", "max_step_yaw_rad"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InputError(f"gait setting {name} must be a positive finite number, got {value!r}")
        if not 0.0 <= self.step_height_m <= 0.2:
            raise InputError(f"step_height_m must lie in [0, 0.2] m, got {self.step_height_m}")
        if self.step_width_m is not None and not 0.1 <= self.step_width_m <= 0.6:
            raise InputError(f"step_width_m must lie in [0.1, 0.6] m, got {self.step_width_m}")
        if int(self.preview_steps) < 1:
            raise InputError(f"preview_steps must be at least 1, got {self.preview_steps}")

    @property
    def step_s(self) -> float:
        """One step: double plus single support [s]."""
        return self.double_support_s + self.single_support_s


@dataclass(frozen=True)
class Footstep:
    """A sole on the floor: contact name ``side``, centre ``(x, y)`` [m] and heading ``yaw`` [rad]."""

    side: str
    x: float
    y: float
    yaw: float

    @property
    def xy(self) -> np.ndarray:
        return np.array([self.x, self.y])

    def beside(self, side: str, offset: float) -> Footstep:
        """Sole ``side`` at ``offset`` [m] to the left of this one, same heading."""
        return Footstep(side, self.x - math.sin(self.yaw) * offset, self.y + math.cos(self.yaw) * offset, self.yaw)


def next_footstep(path: tuple[float, float, float], command: np.ndarray, step_s: float, side: str, sign: float,
                  width: float, gait: GaitSettings) -> tuple[tuple[float, float, float], Footstep]:
    """Advance the walking frame ``path = (x, y, yaw)`` by ``command = (vx, vy, wz)`` over one step of
    ``step_s`` [s] (within the gait's per-step bounds) and place sole ``side`` at ``sign · width/2`` to
    its left. Returns the new walking frame and the footstep."""
    x, y, yaw = path
    dx = float(np.clip(command[0] * step_s, -gait.max_step_length_m, gait.max_step_length_m))
    dy = float(np.clip(command[1] * step_s, -gait.max_side_step_m, gait.max_side_step_m))
    dyaw = float(np.clip(command[2] * step_s, -gait.max_step_yaw_rad, gait.max_step_yaw_rad))
    mid = yaw + 0.5 * dyaw  # displacement along the mean heading of the step
    c, s = math.cos(mid), math.sin(mid)
    path = (x + c * dx - s * dy, y + s * dx + c * dy, yaw + dyaw)
    return path, Footstep(side, path[0], path[1], path[2]).beside(side, sign * 0.5 * width)


def dcm_plan(zmp: np.ndarray, omega: float, dt: float) -> np.ndarray:
    """DCM (N, 2) for the ZMP samples ``zmp`` (N, 2) on a grid of step ``dt`` [s], at rest on the last
    ZMP after the last sample: ``ξ_k = (1 - a) r_k + a ξ_{k+1}``, ``a = e^{-ω dt}``, ``ξ_N = r_{N-1}``,
    evaluated as ``ξ_k = a^{-k} (Σ_{j≥k} (1 - a) a^j r_j + a^N ξ_N)``."""
    n = zmp.shape[0]
    a = math.exp(-omega * dt)
    powers = a ** np.arange(n, dtype=float)
    tail = np.cumsum(((1.0 - a) * powers)[::-1, None] * zmp[::-1], axis=0)[::-1]
    return (tail + a**n * zmp[-1]) / powers[:, None]


@dataclass
class Walk(Behaviour):
    """Walk at the commanded velocity (module docstring).

    Args:
        cmd_vel: the command at the start ``(vx, vy, wz)`` [m/s, m/s, rad/s] in the walking frame
            (x forward, y left); :meth:`command` changes it.
        gait: :class:`GaitSettings` (or a mapping of its fields).
    """

    name: str = "walk"
    measured_contact_veto = False  # the gait plans its contacts (Behaviour.measured_contact_veto)
    cmd_vel: tuple[float, float, float] = (0.0, 0.0, 0.0)
    gait: GaitSettings = field(default_factory=GaitSettings)

    def __post_init__(self) -> None:
        if isinstance(self.gait, dict):
            try:
                self.gait = GaitSettings(**self.gait)
            except TypeError as exc:
                raise InputError(f"walk: {exc}") from exc
        if len(tuple(self.cmd_vel)) != 3:
            raise InputError(f"cmd_vel must be (vx, vy, wz), got {self.cmd_vel!r}")
        self._target = np.zeros(3)
        self.command(*self.cmd_vel)

    # ------------------------------------------------------------------ inputs
    def command(self, vx: float, vy: float, wz: float) -> None:
        """Request the velocity ``(vx, vy, wz)`` [m/s, m/s, rad/s], clipped to the gait's limits.

        Raises:
            InputError: a non-finite component.
        """
        v = np.array([vx, vy, wz], dtype=float)
        if not np.all(np.isfinite(v)):
            raise InputError(f"velocity command must be finite, got {(vx, vy, wz)}")
        g = self.gait
        lim = np.array([g.max_forward_mps, g.max_lateral_mps, g.max_yaw_rate_radps])
        self._target = np.clip(v, -lim, lim)

    def observe(self, com: np.ndarray, com_velocity: np.ndarray, actuators: np.ndarray | None = None) -> None:
        """The measured CoM [m] and CoM velocity [m/s] (world) of this tick: the step adjustment's DCM."""
        w = self._omega
        self._measured_dcm = (com[0] + com_velocity[0] / w, com[1] + com_velocity[1] / w)

    # ------------------------------------------------------------------ read-outs
    @property
    def velocity_command(self) -> np.ndarray:
        """The command in use (rate-limited) ``(vx, vy, wz)``."""
        return self._cmd.copy()

    @property
    def omega(self) -> float:
        """The pendulum's ``ω = √(g / z0)`` [1/s]."""
        return self._omega

    @property
    def phase(self) -> str:
        """``stand``, ``double_support`` or ``single_support``."""
        return self._phase

    @property
    def footsteps(self) -> list[Footstep]:
        """The footsteps planned at the last phase change (the next landing first)."""
        return list(self._steps)

    @property
    def plan_count(self) -> int:
        """How many plans were made (one per phase change): a new count means new footsteps."""
        return self._plans

    def footstep_boxes(self) -> list[tuple[Footstep, float, bool]]:
        """For display: ``(footstep, floor height [m], planned)`` of the soles standing (``planned``
        False; a swinging sole where it will land) and of the planned footsteps."""
        z = self._floor_z
        standing = [(f, z, False) for n, f in self._feet.items() if self._swing_to is None or n != self._swing_to.side]
        return standing + [(f, z, True) for f in self._steps]

    @property
    def soles(self) -> dict[str, Footstep]:
        """Where each sole stands (a swinging sole: where it lifted off)."""
        return dict(self._feet)

    @property
    def zmp_reference(self) -> np.ndarray:
        """The ZMP reference (x, y) [m] of the last tick."""
        return np.array(self._zmp)

    #: :meth:`trace`'s fields
    TRACE = ("cmd_vx", "cmd_vy", "cmd_wz", "request_vx", "request_vy", "request_wz", "zmp_x", "zmp_y",
             "dcm_x", "dcm_y", "phase")
    PHASES = ("stand", "double_support", "single_support")

    def trace(self) -> np.ndarray:
        """This tick's plan for logs (fields :attr:`TRACE`; ``phase`` as its index in :attr:`PHASES`)."""
        return np.array([*self._cmd, *self._target, *self._zmp, *self._xi, self.PHASES.index(self._phase)])

    # ------------------------------------------------------------------ start
    def _on_start(self) -> None:
        st, g = self.state, self.gait
        if len(st.soles) != 2:
            raise InputError(f"walking needs two soles, got {list(st.soles)}")
        (n0, (R0, p0)), (n1, (_, p1)) = st.soles.items()
        rel = p0[:2] - p1[:2]
        heading = yaw_of(R0)
        left_first = -math.sin(heading) * rel[0] + math.cos(heading) * rel[1] > 0
        self._left, self._right = (n0, n1) if left_first else (n1, n0)
        self._feet = {n: Footstep(n, float(p[0]), float(p[1]), yaw_of(R)) for n, (R, p) in st.soles.items()}
        self._sole_rotation0 = {n: R.copy() for n, (R, _) in st.soles.items()}
        self._floor_z = float(min(p0[2], p1[2]))
        self._width = g.step_width_m or float(np.linalg.norm(rel))
        mid = 0.5 * (p0[:2] + p1[:2])
        self._yaw0 = 0.5 * (self._feet[n0].yaw + self._feet[n1].yaw)
        self._path = (float(mid[0]), float(mid[1]), self._yaw0)
        self._omega = math.sqrt(GRAVITY / max(float(st.com[2]) - self._floor_z, 0.1))
        self._com = (float(st.com[0]), float(st.com[1]))
        self._com_z = float(st.com[2])
        self._zmp, self._xi = (float(mid[0]), float(mid[1])), self._com
        self._cmd = np.zeros(3)
        self._base: tuple[float, np.ndarray] = (math.nan, st.base_rotation)  # (yaw, base rotation reference)
        self._measured_dcm: tuple[float, float] | None = None
        self._phase, self._start_t, self._end_t = "stand", 0.0, 0.0
        self._stance: str | None = None
        self._swing_from: Footstep | None = None
        self._swing_to: Footstep | None = None
        self._planned_to: Footstep | None = None  # the swing's footstep before the step adjustment
        self._steps: list[Footstep] = []
        self._tau = 0.0
        self._plans = 0
        #: each touchdown: (time since the start [s], its footstep, the step adjustment [m])
        self.touchdowns: list[tuple[float, Footstep, float]] = []
        self._plan(0.0)

    # ------------------------------------------------------------------ gait state machine
    def _other(self, side: str) -> str:
        return self._left if side == self._right else self._right

    def _moving(self) -> bool:
        return bool(np.any(np.abs(self._target) > 1e-3) or np.any(np.abs(self._cmd) > 1e-3))

    def _side_by_side(self) -> bool:
        left, right = self._feet[self._left], self._feet[self._right]
        return abs(_wrap(left.yaw - right.yaw)) < 0.02 and abs(
            float(np.linalg.norm(left.xy - right.xy)) - self._width) < 0.02

    def _advance(self, tau: float) -> None:
        """Phase changes due at ``tau`` (each renews the plan)."""
        g = self.gait
        while True:
            if self._phase == "stand":
                if not self._moving():
                    return
                # the first swing sole is the one on the side of the motion (left if straight ahead)
                v = self._target
                swing_left = v[1] > 1e-3 or (abs(v[1]) <= 1e-3 and v[2] >= -1e-3)
                self._stance = self._right if swing_left else self._left
                self._phase, self._start_t, self._end_t = "double_support", tau, tau + g.start_double_support_s
            elif tau < self._end_t:
                return
            elif self._phase == "double_support":
                swing = self._other(self._stance)
                self._swing_from = self._feet[swing]
                steps, paths = self._upcoming(self._stance, self._feet, self._path)
                self._planned_to, self._path = steps[0], paths[0]
                self._swing_to = self._adjusted(steps[0])
                self._phase, self._start_t = "single_support", self._end_t
                self._end_t = self._start_t + g.single_support_s
            else:  # touchdown
                swing = self._swing_to.side
                self.touchdowns.append((self._end_t, self._swing_to,
                                        float(np.linalg.norm(self._swing_to.xy - self._planned_to.xy))))
                self._feet[swing] = self._swing_to
                self._swing_from = self._swing_to = None
                if not self._moving() and self._side_by_side():
                    self._phase, self._start_t = "stand", self._end_t
                    self._stance = None
                else:
                    self._stance = swing
                    self._phase, self._start_t = "double_support", self._end_t
                    self._end_t = self._start_t + g.double_support_s
            self._plan(self._start_t)

    def _upcoming(self, stance: str, feet: dict, path: tuple) -> tuple[list[Footstep], list[tuple]]:
        """The next ``preview_steps`` footsteps after ``stance`` (and the walking frame after each) at
        the command in use; with a zero command the swing sole comes beside the stance sole."""
        g, steps, paths = self.gait, [], []
        feet = dict(feet)
        moving = bool(np.any(np.abs(self._cmd) > 1e-3))
        for _ in range(int(g.preview_steps)):
            swing = self._other(stance)
            sign = 1.0 if swing == self._left else -1.0
            if moving:
                path, step = next_footstep(path, self._cmd, g.step_s, swing, sign, self._width, g)
            else:
                step = feet[stance].beside(swing, sign * self._width)
                mid = feet[stance].beside(swing, sign * 0.5 * self._width)
                path = (mid.x, mid.y, mid.yaw)
            steps.append(step)
            paths.append(path)
            feet[swing], stance = step, swing
        return steps, paths

    def _adjusted(self, step: Footstep) -> Footstep:
        """``step`` moved by the DCM step adjustment (module docstring)."""
        g = self.gait
        if self._measured_dcm is None or g.step_adjustment_gain <= 0:
            return step
        error = np.subtract(self._measured_dcm, self._sample(self._dcm, self._tau))
        shift = g.step_adjustment_gain * math.exp(self._omega * g.single_support_s) * error
        norm = float(np.linalg.norm(shift))
        if norm > g.max_step_adjustment_m:
            shift *= g.max_step_adjustment_m / norm
        stance = self._feet[self._stance]
        x, y = step.x + shift[0], step.y + shift[1]
        # not closer to the stance sole than min_step_width_m across its heading
        c, s = math.cos(stance.yaw), math.sin(stance.yaw)
        lateral = -s * (x - stance.x) + c * (y - stance.y)
        sign = 1.0 if step.side == self._left else -1.0
        if sign * lateral < g.min_step_width_m:
            push = g.min_step_width_m - sign * lateral
            x, y = x - s * sign * push, y + c * sign * push
        return Footstep(step.side, x, y, step.yaw)

    def _plan(self, tau: float) -> None:
        """ZMP knots from ``tau`` over the preview, and the DCM on a grid (module docstring)."""
        g = self.gait
        self._plans += 1
        kt, kr = [tau], [np.array(self._zmp)]
        if self._phase == "stand":
            kt.append(tau + g.double_support_s)
            kr.append(0.5 * (self._feet[self._left].xy + self._feet[self._right].xy))
            self._steps = []
        else:
            stance = self._feet[self._stance]
            t = self._end_t
            if self._phase == "double_support":
                kt += [t, t + g.single_support_s]
                kr += [stance.xy, stance.xy]
                t += g.single_support_s
                steps = self._upcoming(self._stance, self._feet, self._path)[0]
            else:
                kt.append(t)
                kr.append(stance.xy)
                feet = {**self._feet, self._swing_to.side: self._swing_to}
                steps = [self._swing_to] + self._upcoming(self._swing_to.side, feet, self._path)[0]
            for step in steps:
                kt += [t + g.double_support_s, t + g.step_s]
                kr += [step.xy, step.xy]
                t += g.step_s
            last, before = steps[-1], (steps[-2] if len(steps) > 1 else stance)
            kt.append(t + g.double_support_s)
            kr.append(0.5 * (last.xy + before.xy))
            self._steps = steps
        kt.append(kt[-1] + 1.0)
        kr.append(kr[-1])
        kt, kr = np.array(kt), np.array(kr)
        grid = np.arange(tau, kt[-1] + g.plan_dt_s, g.plan_dt_s)
        zmp = np.column_stack([np.interp(grid, kt, kr[:, 0]), np.interp(grid, kt, kr[:, 1])])
        self._grid0 = tau
        self._zmp_plan, self._dcm = zmp, dcm_plan(zmp, self._omega, g.plan_dt_s)

    def _sample(self, plan: np.ndarray, tau: float) -> tuple[float, float]:
        """A plan ((N, 2) on the grid) at ``tau``, linearly interpolated (scalars: cheaper per tick)."""
        x = (tau - self._grid0) / self.gait.plan_dt_s
        i = min(max(int(x), 0), plan.shape[0] - 2)
        f = min(max(x - i, 0.0), 1.0)
        x0, y0, x1, y1 = plan.item(i, 0), plan.item(i, 1), plan.item(i + 1, 0), plan.item(i + 1, 1)
        return x0 + f * (x1 - x0), y0 + f * (y1 - y0)

    # ------------------------------------------------------------------ references
    def _references(self, tau: float) -> WbcReferences:
        g = self.gait
        dt = max(tau - self._tau, 0.0)
        self._tau = tau
        cmd, target = self._cmd, self._target
        for k, rate in enumerate((g.max_linear_accel_mps2, g.max_linear_accel_mps2, g.max_yaw_accel_radps2)):
            cmd[k] += min(max(target[k] - cmd[k], -rate * dt), rate * dt)
        self._advance(tau)
        (rx, ry), (xx, xy) = self._zmp, self._xi = self._sample(self._zmp_plan, tau), self._sample(self._dcm, tau)
        w, decay = self._omega, math.exp(-self._omega * dt)
        cx, cy = self._com = (xx + (self._com[0] - xx) * decay, xy + (self._com[1] - xy) * decay)  # ċ = ω (ξ - c)
        feet = {}
        yaws = [self._feet[n].yaw for n in (self._left, self._right)]
        if self._phase == "single_support":
            contacts = (self._stance,)
            swing, swing_ref = self._swing_reference(tau)
            feet[swing] = swing_ref
            yaws = [self._feet[self._stance].yaw, self._swing_yaw]
        else:
            contacts = (self._left, self._right)
        yaw = yaws[0] + 0.5 * _wrap(yaws[1] - yaws[0])
        if yaw != self._base[0]:  # constant in double support
            self._base = (yaw, yaw_rotation(yaw - self._yaw0) @ self.state.base_rotation)
        return WbcReferences(active_contacts=contacts, com_position=np.array([cx, cy, self._com_z]),
                             com_velocity=np.array([w * (xx - cx), w * (xy - cy), 0.0]),
                             com_acceleration=np.array([w * w * (cx - rx), w * w * (cy - ry), 0.0]),
                             base_rotation=self._base[1], foot_poses=feet)

    def _swing_reference(self, tau: float) -> tuple[str, FrameReference]:
        """The swing sole's pose, twist and acceleration: lift, move (middle 80 % of the swing), land."""
        g = self.gait
        a, b = self._swing_from, self._swing_to
        T = g.single_support_s
        s = (tau - self._start_t) / T
        m, dm, ddm = min_jerk((s - 0.1) / 0.8)
        dm, ddm = dm / (0.8 * T), ddm / (0.8 * T) ** 2
        dx, dy, dyaw = b.x - a.x, b.y - a.y, _wrap(b.yaw - a.yaw)
        self._swing_yaw = a.yaw + m * dyaw
        h, depth = g.step_height_m, g.touchdown_depth_m
        if s < 0.5:
            z, dz, ddz = min_jerk(2 * s)
            z, dz, ddz = h * z, 2 * h * dz / T, 4 * h * ddz / T**2
        else:
            z, dz, ddz = min_jerk(2 * s - 1)
            z, dz, ddz = h - (h + depth) * z, -2 * (h + depth) * dz / T, -4 * (h + depth) * ddz / T**2
        R0 = self._sole_rotation0[b.side]
        R = yaw_rotation(self._swing_yaw - yaw_of(R0)) @ R0
        return b.side, FrameReference(position=np.array([a.x + m * dx, a.y + m * dy, self._floor_z + z]), rotation=R,
                                      twist=np.array([dm * dx, dm * dy, dz, 0.0, 0.0, dm * dyaw]),
                                      acceleration=np.array([ddm * dx, ddm * dy, ddz, 0.0, 0.0, ddm * dyaw]))


def quintic(start: tuple[float, float, float], end: tuple[float, float, float], duration: float,
            t: float) -> tuple[float, float, float]:
    """The quintic from ``start = (p, v, a)`` to ``end = (p, v, a)`` over ``duration`` [s] at time ``t``
    (clipped to [0, duration]): position, velocity, acceleration."""
    T = duration
    p0, v0, a0 = start
    p1, v1, a1 = end
    # p(t) = p0 + v0 t + a0 t²/2 + c3 t³ + c4 t⁴ + c5 t⁵ meeting ``end`` at T
    M = np.array([[T**3, T**4, T**5], [3 * T**2, 4 * T**3, 5 * T**4], [6 * T, 12 * T**2, 20 * T**3]])
    rhs = np.array([p1 - p0 - v0 * T - 0.5 * a0 * T**2, v1 - v0 - a0 * T, a1 - a0])
    c3, c4, c5 = np.linalg.solve(M, rhs)
    t = min(max(t, 0.0), T)
    return (p0 + v0 * t + 0.5 * a0 * t**2 + c3 * t**3 + c4 * t**4 + c5 * t**5,
            v0 + a0 * t + 3 * c3 * t**2 + 4 * c4 * t**3 + 5 * c5 * t**4,
            a0 + 6 * c3 * t + 12 * c4 * t**2 + 20 * c5 * t**3)


@dataclass
class Jump(Behaviour):
    """In-place vertical jump driven by the leg-length actuators (the Kangaroo paper's Fig. 13).

    The CoM moves vertically above the soles' middle; the whole-body controller distributes the
    motion over the leg actuators (the leg-length actuators take most of it; in the model as built a
    vertical crouch also needs hip pitch, which turns the sole, and the ankle actuators cancel that:
    docs/locomotion.md).

    Phases (``phase``), CoM height ``z`` relative to standing ``z0``: ``crouch`` (down ``crouch_m``
    in ``crouch_s``, min-jerk, the pelvis pitching ``crouch_pitch_rad`` forward), ``hold``
    (``hold_s``), ``push`` (quintic to the take-off state: ``z0 + takeoff_height_m``,
    ``takeoff_velocity_mps`` up and ``-g``, so that the contact forces vanish, in ``push_s``; the
    pelvis pitches back with the CoM height, ``push_pitch_gain_rad_per_m`` per metre, and the
    angular-momentum task is weighted ``push_momentum_weight``, the base orientation
    ``push_base_weight``: in this leg a vertical CoM velocity with the pelvis upright carries pitch
    angular momentum, which the flight keeps; the stroke-limit horizon shortens to
    ``push_stroke_horizon_s``: the legs extend fast near their stroke end), ``flight`` (no contact;
    the legs held in actuator space at the strokes measured at the switch to flight, the leg-length
    actuators at ``flight_leg_length_m`` (nearly straight: the sole forward, under the CoM), with the
    posture gains ``flight_posture_kp`` / ``flight_posture_kd``, the CoM, sole and base tasks off for the tick:
    :attr:`WbcReferences.task_weights`; touchdown expected ``2 v / g`` after the switch to flight,
    ``v`` the vertical CoM velocity measured then), ``landing`` (both soles in contact; the flight
    posture held for ``landing_hold_s``; quintic from the measured CoM height and velocity to
    ``landing_crouch_m`` below standing in ``landing_s``), ``recover`` (back to standing in
    ``recover_s``), ``done`` (stand). With the ankles held a flat-footed push moves the CoM mostly
    horizontally in this model (docs/locomotion.md), so the push uses them.
    """

    name: str = "jump"
    measured_contact_veto = False  # the jump plans its contacts (Behaviour.measured_contact_veto)
    crouch_m: float = 0.08
    crouch_s: float = 1.0
    hold_s: float = 0.3
    push_s: float = 0.15
    takeoff_height_m: float = -0.01
    takeoff_velocity_mps: float = 1.3
    push_stroke_horizon_s: float = 0.01
    #: the pelvis pitched forward in the crouch [rad] and pitched back in the push with the CoM
    #: height, ``push_pitch_gain_rad_per_m`` per metre of rise (rate and acceleration fed forward);
    #: the push weights the angular-momentum task ``push_momentum_weight`` and the base orientation
    #: ``push_base_weight`` (docs/locomotion.md: the lift-off momentum against the apex)
    crouch_pitch_rad: float = 0.15
    push_pitch_gain_rad_per_m: float = 3.5
    push_momentum_weight: float = 1.0
    push_base_weight: float = 0.1
    landing_crouch_m: float = 0.05
    landing_s: float = 0.6
    recover_s: float = 1.5
    #: flight: the legs held in actuator space at the strokes measured at the switch to flight, the
    #: leg-length actuators at ``flight_leg_length_m`` [m of stroke] (nearly straight: this leg's
    #: leg-length actuator moves the sole forward as it extends, which keeps the soles under the
    #: CoM while the body pitches in the air), posture weight ``flight_posture_weight``; the CoM,
    #: sole and base-orientation tasks off (nothing but the legs can move in the air)
    flight_leg_length_m: float = 0.005
    flight_posture_weight: float = 10.0
    #: the posture task's ``(kp, kd)`` in the flight and the landing's hold: the legs leave the
    #: ground extending at up to 1 m/s of stroke and must stop within millimetres (0: its own gains)
    flight_posture_kp: float = 1000.0
    flight_posture_kd: float = 60.0
    #: touchdown expected ``2 v / g`` after the switch to flight, ``v`` the measured vertical CoM
    #: velocity then; the landing's contacts start ``touchdown_lead_s`` before it
    touchdown_lead_s: float = 0.0
    #: landing: the legs' flight posture held as in flight for ``landing_hold_s``, the CoM task
    #: weighted ``landing_com_weight`` meanwhile
    landing_hold_s: float = 0.1
    landing_com_weight: float = 1.0

    PHASES = ("crouch", "hold", "push", "flight", "landing", "recover", "done")
    TRACE = ("phase", "com_z_ref")

    def __post_init__(self) -> None:
        for name in ("crouch_s", "hold_s", "push_s", "landing_s", "recover_s", "takeoff_velocity_mps",
                     "push_stroke_horizon_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InputError(f"jump: {name} must be a positive finite number, got {value!r}")
        for name in ("flight_leg_length_m", "flight_posture_weight", "flight_posture_kp", "flight_posture_kd",
                     "touchdown_lead_s", "landing_hold_s",
                     "landing_com_weight", "push_pitch_gain_rad_per_m", "push_momentum_weight", "push_base_weight"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise InputError(f"jump: {name} must be a finite number >= 0, got {value!r}")
        if not (0.0 <= self.crouch_m <= 0.15 and 0.0 <= self.landing_crouch_m <= 0.15
                and -self.crouch_m < self.takeoff_height_m <= 0.05 and self.takeoff_velocity_mps <= 2.0
                and isinstance(self.crouch_pitch_rad, (int, float)) and abs(self.crouch_pitch_rad) <= 0.5
                and self.push_pitch_gain_rad_per_m <= 10.0):
            raise InputError("jump: crouch_m and landing_crouch_m must lie in [0, 0.15] m, takeoff_height_m in "
                             "(-crouch_m, 0.05] m, takeoff_velocity_mps in (0, 2] m/s, crouch_pitch_rad in "
                             "[-0.5, 0.5] rad, push_pitch_gain_rad_per_m in [0, 10] rad/m")

    @property
    def phase(self) -> str:
        return self._phase

    @property
    def flight_time_planned_s(self) -> float:
        """The predicted flight [s]: ``2 v / g``."""
        return 2.0 * self.takeoff_velocity_mps / GRAVITY

    def observe(self, com: np.ndarray, com_velocity: np.ndarray, actuators: np.ndarray | None = None) -> None:
        self._measured = (np.array(com, dtype=float), np.array(com_velocity, dtype=float))
        self._measured_strokes = None if actuators is None else np.array(actuators, dtype=float)

    def trace(self) -> np.ndarray:
        """This tick's phase (index in :attr:`PHASES`) and CoM height reference [m]."""
        return np.array([self.PHASES.index(self._phase), self._z])

    def _on_start(self) -> None:
        st = self.state
        self._xy = np.mean([p for _, p in st.soles.values()], axis=0)[:2]
        self._z0 = float(st.com[2])
        self._z, self._phase = self._z0, "crouch"
        self._measured: tuple[np.ndarray, np.ndarray] | None = None
        #: measured CoM position and velocity at the switch to flight
        self._takeoff: tuple[np.ndarray, np.ndarray] | None = None
        self._landed_at: float | None = None  # time of the touchdown [s since the start]
        self._landing_from: tuple[float, float, float] | None = None
        self._ends = dict(zip(("crouch", "hold", "push"), np.cumsum([self.crouch_s, self.hold_s, self.push_s])))
        names = list(st.actuators)
        self._standing_strokes = np.array([st.actuators[n] for n in names], dtype=float)
        self._leg_length = [i for i, n in enumerate(names) if "leg_length" in n]
        self._measured_strokes: np.ndarray | None = None
        self._flight_posture = self._in_flight(self._standing_strokes)

    def _in_flight(self, strokes: np.ndarray) -> np.ndarray:
        """The flight posture: ``strokes`` with the leg-length actuators at ``flight_leg_length_m``."""
        posture = np.array(strokes, dtype=float)
        posture[self._leg_length] = self.flight_leg_length_m
        return posture

    def _pelvis_pitch(self, tau: float, z: tuple[float, float, float]) -> tuple[float, float, float]:
        """The pelvis pitch [rad] (forward positive), its rate and acceleration: ``crouch_pitch_rad``
        reached with the crouch, then in the push ``crouch_pitch_rad - k (z - z_crouch)``, ``z`` the
        CoM height reference (with its rate and acceleration) and ``k`` ``push_pitch_gain_rad_per_m``."""
        e, p0 = self._ends, self.crouch_pitch_rad
        if tau < e["crouch"]:
            s, ds, dds = min_jerk(tau / self.crouch_s)
            return s * p0, ds * p0 / self.crouch_s, dds * p0 / self.crouch_s**2
        if tau < e["hold"]:
            return p0, 0.0, 0.0
        k, zc = self.push_pitch_gain_rad_per_m, self._z0 - self.crouch_m
        return p0 - k * (z[0] - zc), -k * z[1], -k * z[2]

    def finished(self, t: float) -> bool:
        return self._landed_at is not None and t - self.t0 >= self._landed_at + self.landing_s + self.recover_s

    def _touchdown(self, t_flight: float) -> bool:
        """The flight's expected end: ``2 v / g`` after the switch to flight, ``v`` the measured
        vertical CoM velocity then (the legs keep their length in the air, so the CoM comes back to
        its take-off height at touchdown), at most twice the planned flight."""
        v = self.takeoff_velocity_mps if self._takeoff is None else max(float(self._takeoff[1][2]), 0.0)
        expected = min(2.0 * v / GRAVITY, 2.0 * self.flight_time_planned_s)
        return t_flight >= expected - self.touchdown_lead_s

    def _references(self, tau: float) -> WbcReferences:
        e, z0, g = self._ends, self._z0, GRAVITY
        contacts, feet, horizon, weights, gains = self._all_contacts(), {}, self.push_stroke_horizon_s, {}, {}
        held = {"posture": (self.flight_posture_kp, self.flight_posture_kd)} if self.flight_posture_kp > 0 else {}
        posture = None
        z_to, v_to = z0 + self.takeoff_height_m, self.takeoff_velocity_mps
        if tau < e["crouch"]:
            s, ds, dds = min_jerk(tau / self.crouch_s)
            d = -self.crouch_m
            phase, horizon = "crouch", None
            z, dz, ddz = z0 + s * d, ds * d / self.crouch_s, dds * d / self.crouch_s**2
        elif tau < e["hold"]:
            phase, horizon, (z, dz, ddz) = "hold", None, (z0 - self.crouch_m, 0.0, 0.0)
        elif tau < e["push"]:
            phase = "push"
            z, dz, ddz = quintic((z0 - self.crouch_m, 0.0, 0.0), (z_to, v_to, -g), self.push_s, tau - e["hold"])
            weights = {"angular_momentum": self.push_momentum_weight, "base_orientation": self.push_base_weight}
        elif self._landed_at is None and not self._touchdown(tau - e["push"]):
            phase, t, horizon = "flight", tau - e["push"], None
            if self._takeoff is None:
                com = self._measured if self._measured is not None else (self.state.com, np.r_[0.0, 0.0, v_to])
                self._takeoff = (com[0].copy(), com[1].copy())
                if self._measured_strokes is not None:  # the legs stay as they left the ground
                    self._flight_posture = self._in_flight(self._measured_strokes)
            zt, vt = float(self._takeoff[0][2]), float(self._takeoff[1][2])
            z, dz, ddz = zt + vt * t - 0.5 * g * t * t, vt - g * t, -g
            contacts, posture = (), self._flight_posture
            weights = {"com": 0.0, "base_orientation": 0.0, "posture": self.flight_posture_weight,
                       **{f"foot_{name}": 0.0 for name in self.state.soles}}
            gains = held
        else:
            if self._landed_at is None:  # touchdown: from the measured CoM height and velocity
                self._landed_at = tau
                zm, vm = ((float(self._measured[0][2]), float(self._measured[1][2])) if self._measured is not None
                          else (z_to, -v_to))
                self._landing_from = (zm, vm, 0.0)
            t = tau - self._landed_at
            horizon = None
            if t < self.landing_s:
                phase = "landing"
                if t < self.landing_hold_s:  # the impact on the held legs; the CoM task takes over after
                    posture = self._flight_posture
                    weights = {"posture": self.flight_posture_weight, "com": self.landing_com_weight}
                    gains = held
                z, dz, ddz = quintic(self._landing_from, (z0 - self.landing_crouch_m, 0.0, 0.0), self.landing_s, t)
            else:
                phase, horizon = "recover", None
                s, ds, dds = min_jerk((t - self.landing_s) / self.recover_s)
                d = self.landing_crouch_m
                z, dz, ddz = z0 - d + s * d, ds * d / self.recover_s, dds * d / self.recover_s**2
                if t >= self.landing_s + self.recover_s:
                    phase = "done"
        self._phase, self._z = phase, z
        # the CoM moves over the soles' middle while crouching (the start-up stand centred it already)
        s, ds, dds = min_jerk(tau / self.crouch_s)
        c0, c1 = self.state.com[:2], self._xy
        xy, dxy, ddxy = c0 + s * (c1 - c0), ds / self.crouch_s * (c1 - c0), dds / self.crouch_s**2 * (c1 - c0)
        # the pelvis' pitch about its own y axis, from the crouch through the push; upright again after
        R0 = self.state.base_rotation
        pushing = phase in ("crouch", "hold", "push")
        pitch, rate, acc = self._pelvis_pitch(tau, (z, dz, ddz)) if pushing else (0.0, 0.0, 0.0)
        c, sn = math.cos(pitch), math.sin(pitch)
        axis = R0[:, 1]
        return WbcReferences(active_contacts=contacts, com_position=np.array([xy[0], xy[1], z]),
                             com_velocity=np.array([dxy[0], dxy[1], dz]),
                             com_acceleration=np.array([ddxy[0], ddxy[1], ddz]),
                             base_rotation=R0 @ np.array([[c, 0.0, sn], [0.0, 1.0, 0.0], [-sn, 0.0, c]]),
                             base_angular_velocity=rate * axis, base_angular_acceleration=acc * axis,
                             foot_poses=feet, stroke_horizon_s=horizon, posture=posture, task_weights=weights,
                             task_gains=gains)


def footstep_markers(boxes: list, contacts) -> list[tuple[np.ndarray, tuple, tuple]]:
    """Display boxes of :meth:`Walk.footstep_boxes` (``/wbc/footsteps`` markers): ``(x y z qx qy qz qw,
    rgba, size xyz)`` each, as large as the sole's corners span (``contacts``: the controller's
    :class:`~kangaroo_wbc.control.contacts.ContactSpec`); soles standing grey, planned footsteps blue
    (a left sole) or red, half transparent."""
    size = {c.name: np.ptp(c.corners, axis=0) for c in contacts}
    out = []
    for step, z, planned in boxes:
        lx, ly, _ = size.get(step.side, (0.2, 0.1, 0.0))
        q = (0.0, 0.0, np.sin(step.yaw / 2), np.cos(step.yaw / 2))
        colour = ((0.1, 0.3, 0.9, 0.6) if "left" in step.side else (0.9, 0.2, 0.1, 0.6)) if planned else (
            0.5, 0.5, 0.5, 0.8)
        out.append((np.array([step.x, step.y, z + 0.005, *q]), colour, (lx, ly, 0.01)))
    return out


BEHAVIOURS.update(walk=Walk, jump=Jump)

__all__ = ["GaitSettings", "Footstep", "Walk", "Jump", "footstep_markers", "next_footstep", "dcm_plan", "quintic",
           "yaw_rotation", "yaw_of"]
