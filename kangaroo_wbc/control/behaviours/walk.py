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

from kangaroo_wbc.control.behaviours.base import Behaviour, min_jerk
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
        lim = self.command_limits
        self._target = np.clip(v, -lim, lim)

    @property
    def command_limits(self) -> np.ndarray:
        """The bounds ``(vx, vy, wz)`` [m/s, m/s, rad/s] a command is clipped to (symmetric)."""
        g = self.gait
        return np.array([g.max_forward_mps, g.max_lateral_mps, g.max_yaw_rate_radps])

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
