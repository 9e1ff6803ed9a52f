"""Reference governor: external references bounded to what the robot can do, and rate-limited.

External references (``wbc/com_reference``, ``wbc/<sole>/pose_reference``) come from other
programs and people; a finite one may still be far outside what the robot can reach. Before the
whole-body controller sees one, the governor

* bounds the CoM's horizontal position to the **support polygon** of the soles in contact (the
  convex hull of their corner points, at the current state), scaled by ``com_polygon_scale``
  about the behaviour's own CoM (the pose it balances at; the hull's area centroid if that lies
  outside) and shrunk by ``com_margin_m``: a static CoM outside the polygon cannot be
  balanced, and the actuator strokes and the QP's minimum sole forces allow much less. Measured
  on Kangaroo standing with the simulated ball-screw drives (a reference 0.3 m away for 4 s in
  each of eight directions): the polygon less 3 cm (7 cm ahead) drops the robot, and so does
  half of it less 2 cm (5 cm sideways); 0.3 of it less 2 cm at 0.05 m/s keeps it up in every
  direction (scaled about the standing CoM: no fall and no safe-mode tick in any of the eight
  directions; the stroke bound below then stops the reference 11 mm ahead and 25 mm sideways);
* bounds the CoM height to ``[z_stand - com_drop_max_m, z_stand + com_rise_max_m]`` around the
  standing CoM height recorded at the first governed tick (the actuator strokes allow no more);
* bounds a swing sole's position to ``foot_reach_m`` around the behaviour's own reference for it,
  and never below the lowest sole in contact;
* bounds a swing sole's orientation to ``foot_tilt_max_rad`` from the behaviour's reference;
* stops an external CoM reference where an actuator comes within ``stroke_hold_m`` of an end of
  its stroke, and moves it back towards the behaviour's own within ``stroke_retreat_m`` (the
  strokes bound the CoM long before the polygon does: standing Kangaroo's leg-length actuators
  are 7.5 mm from their ends, and a CoM 4.7 cm sideways drives one past);
* moves the governed reference towards the bounded target at ``com_speed_max_mps`` /
  ``foot_speed_max_mps`` at most (a step of 0.3 m is a ramp, not a jump), also when a reference
  expires (back to the behaviour's own).

Each tick's :attr:`ReferenceGovernor.bounded` names every reference that was bounded and by
which bound; the controller component turns it into a WARN.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import InputError


@dataclass
class GovernorSettings:
    """Bounds of the external references.

    Attributes:
        com_polygon_scale: the support polygon is first scaled by this about the behaviour's own CoM [-]
            (the actuator strokes and the QP's minimum sole forces allow less than the polygon).
        com_margin_m: then the CoM stays this far inside it [m].
        com_drop_max_m: largest CoM lowering below the standing height [m].
        com_rise_max_m: largest CoM raising above the standing height [m].
        com_speed_max_mps: largest speed of the governed CoM reference [m/s].
        foot_reach_m: largest distance of a swing-sole reference from the behaviour's own [m].
        foot_speed_max_mps: largest speed of a governed swing-sole reference [m/s].
        foot_tilt_max_rad: largest rotation of a swing-sole reference from the behaviour's [rad].
        stroke_hold_m: an external CoM reference stops where an actuator comes this close to an
            end of its stroke [m] ...
        stroke_retreat_m: ... and moves back towards the behaviour's own closer than this [m].
    """

    com_polygon_scale: float = 0.3
    com_margin_m: float = 0.02
    com_drop_max_m: float = 0.20
    com_rise_max_m: float = 0.02
    com_speed_max_mps: float = 0.05
    foot_reach_m: float = 0.15
    foot_speed_max_mps: float = 0.30
    foot_tilt_max_rad: float = 0.35
    stroke_hold_m: float = 0.004
    stroke_retreat_m: float = 0.002

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not (np.isfinite(value) and value >= 0.0):
                raise InputError(f"GovernorSettings.{name} must be finite and >= 0, got {value}")
        if self.com_speed_max_mps <= 0.0 or self.foot_speed_max_mps <= 0.0:
            raise InputError("GovernorSettings: the speed limits must be > 0")
        if not 0.0 < self.com_polygon_scale <= 1.0:
            raise InputError(f"GovernorSettings.com_polygon_scale must be in (0, 1], got {self.com_polygon_scale}")


def convex_hull_2d(points: np.ndarray, tolerance: float = 1e-9) -> np.ndarray:
    """Counter-clockwise convex hull (monotone chain) of ``(N, 2)`` points: ``(M, 2)``, corners
    only: a vertex within ``tolerance`` [m] of the line through its neighbours is dropped (the
    corners of soles side by side are collinear up to rounding)."""
    pts = sorted({(float(x), float(y)) for x, y in np.asarray(points, dtype=float)})
    if len(pts) <= 2:
        return np.array(pts)

    def half(seq):
        out: list[tuple[float, float]] = []
        for p in seq:
            while len(out) >= 2 and ((out[-1][0] - out[-2][0]) * (p[1] - out[-2][1])
                                     - (out[-1][1] - out[-2][1]) * (p[0] - out[-2][0])) <= 0.0:
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(reversed(pts))
    hull = lower[:-1] + upper[:-1]
    i = 0
    while len(hull) > 3 and i < len(hull):  # then the vertices on a line through their neighbours
        (ax, ay), (bx, by), (cx, cy) = hull[i - 1], hull[i], hull[(i + 1) % len(hull)]
        cross = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
        if cross <= tolerance * math.hypot(cx - ax, cy - ay):  # b's distance from the line a-c
            del hull[i]
            i = max(i - 1, 0)
        else:
            i += 1
    return np.array(hull)


def polygon_contains(point: np.ndarray, polygon: np.ndarray, tolerance: float = 0.0) -> bool:
    """True if ``point`` lies in the convex polygon (counter-clockwise), ``tolerance`` [m] outside allowed."""
    edges = np.roll(polygon, -1, axis=0) - polygon
    rel = np.asarray(point, dtype=float)[:2] - polygon
    cross = edges[:, 0] * rel[:, 1] - edges[:, 1] * rel[:, 0]
    return bool(np.all(cross >= -tolerance * np.linalg.norm(edges, axis=1)))


def polygon_centroid(polygon: np.ndarray) -> np.ndarray:
    """Area centroid of a convex polygon (counter-clockwise, at least 3 corners) [m]."""
    x, y = polygon[:, 0], polygon[:, 1]
    xn, yn = np.roll(x, -1), np.roll(y, -1)
    cross = x * yn - xn * y
    area = 0.5 * cross.sum()
    return np.array([((x + xn) * cross).sum(), ((y + yn) * cross).sum()]) / (6.0 * area)


def shrink_polygon(hull: np.ndarray, margin: float) -> np.ndarray | None:
    """The convex polygon ``hull`` (counter-clockwise) with every edge moved ``margin`` inwards,
    or None when nothing is left."""
    n = len(hull)
    if n < 3:
        return None
    edges = np.roll(hull, -1, axis=0) - hull
    normals = np.stack([-edges[:, 1], edges[:, 0]], axis=1)  # inward for counter-clockwise
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    offsets = np.einsum("ij,ij->i", normals, hull) + margin  # n_i . x >= offset_i inside
    out = []
    for i in range(n):  # vertex i: edges i-1 and i
        j = i - 1
        A = np.array([normals[j], normals[i]])
        if abs(np.linalg.det(A)) < 1e-12:
            continue
        out.append(np.linalg.solve(A, [offsets[j], offsets[i]]))
    out = np.array(out)
    if len(out) < 3 or np.any(np.einsum("ij,kj->ki", normals, out) < offsets - 1e-9):
        return None  # an edge vanished: the margin is larger than the polygon
    return out


def project_to_polygon(point: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """The point of the convex polygon (counter-clockwise) nearest to ``point`` (itself if inside)."""
    edges = np.roll(polygon, -1, axis=0) - polygon
    rel = point - polygon
    if np.all(edges[:, 0] * rel[:, 1] - edges[:, 1] * rel[:, 0] >= 0.0):
        return np.array(point, dtype=float)
    t = np.clip(np.einsum("ij,ij->i", rel, edges) / np.einsum("ij,ij->i", edges, edges), 0.0, 1.0)
    candidates = polygon + t[:, None] * edges
    return candidates[np.argmin(np.linalg.norm(candidates - point, axis=1))]


@dataclass
class _Ramp:
    """A rate-limited reference: where it is, how fast it moves, and when it was last moved."""

    position: np.ndarray
    t: float
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def towards(self, target: np.ndarray, t: float, speed_max: float) -> bool:
        """Move towards ``target`` at ``speed_max`` at most until time ``t``; True once there."""
        dt = max(t - self.t, 0.0)
        self.t = t
        step = target - self.position
        dist, reach = float(np.linalg.norm(step)), speed_max * dt
        if dist <= reach:
            self.velocity = step / dt if dt > 0.0 else np.zeros(3)
            self.position = np.array(target, dtype=float)
            return True
        self.velocity = step * (speed_max / dist)
        self.position = self.position + step * (reach / dist)
        return False


class ReferenceGovernor:
    """Bounds and rate-limits the external references (module docstring).

    Args:
        settings: the bounds.
    """

    def __init__(self, settings: GovernorSettings | None = None) -> None:
        self.settings = settings or GovernorSettings()
        self._com: _Ramp | None = None
        self._feet: dict[str, _Ramp] = {}
        self._z_stand: float | None = None
        self._tick: tuple[float | None, float | None] = (None, None)  # (previous, current) tick time
        #: ``{reference: bound}`` of the references bounded this tick (empty: none)
        self.bounded: dict[str, str] = {}

    @property
    def idle(self) -> bool:
        """No ramp under way (the references are the behaviour's own)."""
        return self._com is None and not self._feet

    @property
    def feet(self) -> list[str]:
        """Swing soles whose reference is governed (external, or ramping back)."""
        return list(self._feet)

    def foot_rotation(self, name: str, own: np.ndarray | None, external: np.ndarray | None) -> np.ndarray | None:
        """``external`` [rotation matrix] within ``foot_tilt_max_rad`` of ``own`` (None: ``own``)."""
        if external is None or own is None:
            return own if external is None else external
        s = self.settings
        w = pin.log3(own.T @ external)
        angle = float(np.linalg.norm(w))
        if angle <= s.foot_tilt_max_rad:
            return external
        self.bounded[f"wbc/{name}/pose_reference rotation"] = (
            f"{np.degrees(s.foot_tilt_max_rad):.0f} deg from the behaviour's: {np.degrees(angle):.0f} deg asked")
        return own @ pin.exp3(w * (s.foot_tilt_max_rad / angle))

    def _at(self, t: float) -> None:
        if t != self._tick[1]:
            self._tick = (self._tick[1], t)

    def _start_time(self, t: float) -> float:
        """A new ramp starts from the previous tick: it moves on its first tick already."""
        previous = self._tick[0]
        return t if previous is None or previous > t else previous

    def reset(self) -> None:
        """Forget the ramps (a new behaviour or a restart): the next external reference starts
        from the behaviour's own."""
        self._com, self._feet = None, {}

    def com(self, t: float, own: np.ndarray, external: np.ndarray | None, support_xy: np.ndarray,
            stroke: tuple[str, float] = ("", np.inf)) -> tuple[np.ndarray, np.ndarray] | None:
        """The governed CoM reference ``(position, velocity)`` at time ``t`` [s], or None to use
        the behaviour's own ``own`` [m] (no external reference, and the ramp has caught up).

        Args:
            support_xy: ``(N, 2)`` corner points of the soles in contact, world [m].
            stroke: the actuator nearest to an end of its stroke and its distance to it [m].
        """
        self._at(t)
        s = self.settings
        if self._z_stand is None:
            self._z_stand = float(own[2])
        if external is None and self._com is None:
            return None
        target = np.array(own if external is None else external, dtype=float)
        if external is not None:
            target = self._bound_com(target, support_xy, np.asarray(own, dtype=float)[:2])
        if self._com is None:
            self._com = _Ramp(np.array(own, dtype=float), self._start_time(t))
        ramp = self._com
        name, margin = stroke
        if external is not None and margin < s.stroke_hold_m:
            retreat = margin < s.stroke_retreat_m
            target = np.array(own, dtype=float) if retreat else ramp.position.copy()
            self.bounded["wbc/com_reference strokes"] = (
                f"{name} {margin * 1e3:.1f} mm from the end of its stroke: the reference "
                f"{'moves back' if retreat else 'holds'}")
        if ramp.towards(target, t, s.com_speed_max_mps) and external is None:
            self._com = None  # caught up with the behaviour's own: hand back
            return None
        return ramp.position.copy(), ramp.velocity.copy()

    def _bound_com(self, target: np.ndarray, support_xy: np.ndarray, own_xy: np.ndarray) -> np.ndarray:
        s = self.settings
        hull = convex_hull_2d(support_xy)
        if len(hull) >= 3:  # scaled about the behaviour's own CoM: the pose it balances at
            centre = own_xy if polygon_contains(own_xy, hull) else polygon_centroid(hull)
            hull = centre + s.com_polygon_scale * (hull - centre)
        region = shrink_polygon(hull, s.com_margin_m)
        if region is None:  # a degenerate support: its centre
            xy = np.mean(support_xy, axis=0) if len(support_xy) else target[:2]
        else:
            xy = project_to_polygon(target[:2], region)
        if np.linalg.norm(xy - target[:2]) > 1e-9:
            self.bounded["wbc/com_reference"] = (
                f"support polygon (x{s.com_polygon_scale:g}, less {s.com_margin_m * 1e3:.0f} mm): "
                f"({target[0]:.3f}, {target[1]:.3f}) m -> ({xy[0]:.3f}, {xy[1]:.3f}) m")
        lo, hi = self._z_stand - s.com_drop_max_m, self._z_stand + s.com_rise_max_m
        z = float(np.clip(target[2], lo, hi))
        if z != target[2]:
            self.bounded["wbc/com_reference height"] = (
                f"CoM height {lo:.3f}..{hi:.3f} m: {target[2]:.3f} -> {z:.3f} m")
        return np.array([xy[0], xy[1], z])

    def foot(self, name: str, t: float, own: np.ndarray, external: np.ndarray | None,
             floor_z: float) -> np.ndarray | None:
        """The governed position [m] of swing sole ``name`` at time ``t`` [s] given the
        behaviour's own ``own``, or None to use the behaviour's (no external reference and the
        ramp has caught up).

        Args:
            floor_z: lowest height of a sole in contact [m].
        """
        s = self.settings
        self._at(t)
        ramp = self._feet.get(name)
        if external is None and ramp is None:
            return None
        target = np.array(own if external is None else external, dtype=float)
        if external is not None:
            offset = target - own
            dist = float(np.linalg.norm(offset))
            if dist > s.foot_reach_m:
                target = own + offset * (s.foot_reach_m / dist)
                self.bounded[f"wbc/{name}/pose_reference"] = (
                    f"reach {s.foot_reach_m:.2f} m from the behaviour's reference: {dist:.3f} m asked")
            if target[2] < floor_z:
                target[2] = floor_z
                self.bounded[f"wbc/{name}/pose_reference height"] = f"not below the support soles ({floor_z:.3f} m)"
        if ramp is None:
            ramp = self._feet[name] = _Ramp(np.array(own, dtype=float), self._start_time(t))
        if ramp.towards(target, t, s.foot_speed_max_mps) and external is None:
            del self._feet[name]
            return None
        return ramp.position.copy()


__all__ = ["GovernorSettings", "ReferenceGovernor", "convex_hull_2d", "project_to_polygon", "shrink_polygon"]
