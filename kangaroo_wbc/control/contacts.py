"""Contacts and the decision vector of the whole-body QPs.

**Decision vector** (the one layout every task and constraint of :mod:`kangaroo_wbc.control` uses):

.. math::

    x = \\begin{bmatrix} \\dot v_{base} \\\\ \\ddot\\theta_a \\\\ f_{1,1} \\\\ \\vdots \\\\ f_{K,P} \\end{bmatrix}
    \\in \\mathbb{R}^{n_b + n_a + 3 \\sum_k P_k}

* ``v_dot_base`` (6): floating-base acceleration in pinocchio's free-flyer convention (linear then
  angular, base frame) [m/s², rad/s²]; ``nu_dot = [v_dot_base, theta_ddot_a]`` (App. B);
* ``theta_ddot_a`` (n_a): actuator accelerations [m/s² for the ball screws, rad/s² for revolute];
* ``f_{k,i}`` (3 each): force at corner ``i`` of contact ``k``, world axes [N].

**Fixtures.** A contact marked ``bilateral`` (:attr:`ContactSpec.bilateral`) models a clamp: the
same stationarity rows (the frame does not accelerate) and the same corner-force columns, but no
friction-cone or normal-force rows (:class:`~kangaroo_wbc.control.constraints.FrictionCones` writes
zeros there): its ``W f`` spans every wrench, which the clamp carries. The one-leg test bench's
pelvis clamp is one (:mod:`kangaroo_wbc.control.rig`); with it active the floating base's rows
(eq. (62)) stay and ``v_dot_base = 0`` follows from the stationarity rows.

**Contact model.** Each sole touches the ground through its ``P`` corner points (4 for a
rectangular sole), each with a unilateral point force inside a linearised friction cone; this is
the Kangaroo paper's own formulation (III-B, ``F_i ∈ R³`` at ``c = 8`` points in double support).
Chosen over a 6D wrench with CoP bounds because (a) "all corner forces push" *is* "the CoP lies in
the sole polygon" with exact linear rows and no sole-size parameters beyond the corner positions,
(b) the yaw torque and friction coupling of the wrench cone are captured by the per-corner cones
(a conservative inner approximation of the full contact wrench cone), and (c) it matches how the
simulator's box-shaped soles make contact. Corners are given in the sole frame, so only the sole
frame's Jacobian is evaluated: corner ``i`` at ``r_i`` has Jacobian ``[I, -[R r_i]_×] J_sole`` and the
corner forces act on the sole as the wrench ``W f`` with ``W = [I ... I; [R r_1]_× ... [R r_P]_×]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import FrameNotFound, InputError, suggest
from kangaroo_wbc.model.compiled import compiled


@dataclass
class ContactSpec:
    """A sole in contact through corner points, or a bilateral fixture.

    The controllers built with a spec read its normal-force bounds every tick
    (:meth:`normal_force_bounds`), so :meth:`set_normal_force_min` and :meth:`prescribe_normal_force`
    take effect at the next tick; the other fields fix the problem's structure and must not change
    after a controller is built.

    Attributes:
        name: contact name used in references and messages (e.g. ``"left"``).
        frame: sole frame name (URDF link or frame); the contact is stationary in this frame.
        corners: (P, 3) corner positions in the sole frame [m].
        mu: Coulomb friction coefficient [-].
        normal_force_min_n: minimum normal force per corner when in contact [N].
        normal_force_max_n: maximum normal force per corner [N].
        bilateral: a fixture that holds the frame in place whatever the load (a test rig's clamp):
            its corner forces are free (no friction cone, no unilaterality, no normal-force
            bounds); three corners not on a line let it take any wrench. False: a sole.
        normal_force_n: the prescribed total normal force [N] (:meth:`prescribe_normal_force`), or
            None: the bounds above.
    """

    name: str
    frame: str
    corners: np.ndarray
    mu: float = 0.7
    normal_force_min_n: float = 0.0
    normal_force_max_n: float = 2000.0
    bilateral: bool = False
    normal_force_n: float | None = None

    def __post_init__(self) -> None:
        c = np.asarray(self.corners, dtype=float)
        if c.ndim != 2 or c.shape[1] != 3 or c.shape[0] < 1:
            raise InputError(f"contact {self.name!r}: corners must have shape (P, 3), got {c.shape}")
        if not (self.mu > 0 and np.isfinite(self.mu)):
            raise InputError(f"contact {self.name!r}: mu must be positive, got {self.mu}")
        self.set_normal_force_min(self.normal_force_min_n)
        self.corners = c

    @property
    def n_points(self) -> int:
        return int(self.corners.shape[0])

    def set_normal_force_min(self, newtons: float) -> None:
        """Change the minimum normal force per corner in contact [N] (used from the next tick on).

        Raises:
            InputError: not ``0 <= newtons < normal_force_max_n``.
        """
        if not 0.0 <= newtons < self.normal_force_max_n:
            raise InputError(f"contact {self.name!r}: need 0 <= normal_force_min_n < {self.normal_force_max_n}, "
                             f"got {newtons}")
        self.normal_force_min_n = float(newtons)

    def prescribe_normal_force(self, newtons: float | None) -> None:
        """Prescribe the total normal force [N] the contact pushes with while active (a press of known
        force): each of its P corners ``F / P``, equal lower and upper bounds on its normal rows. None:
        back to the bounds ``[normal_force_min_n, normal_force_max_n]`` per corner.

        Raises:
            InputError: not ``0 <= newtons <= P normal_force_max_n``, or a bilateral contact.
        """
        if newtons is not None:
            if self.bilateral:
                raise InputError(f"contact {self.name!r} is a bilateral fixture: it has no normal force to prescribe")
            if not (np.isfinite(newtons) and 0.0 <= newtons <= self.n_points * self.normal_force_max_n):
                raise InputError(f"contact {self.name!r}: a prescribed normal force must lie in "
                                 f"[0, {self.n_points * self.normal_force_max_n:g}] N, got {newtons}")
        self.normal_force_n = None if newtons is None else float(newtons)

    def normal_force_bounds(self) -> tuple[float, float]:
        """This tick's bounds of each corner's normal force [N]: ``(F / P, F / P)`` while a normal force
        ``F`` is prescribed, else ``(normal_force_min_n, normal_force_max_n)``."""
        if self.normal_force_n is None:
            return float(self.normal_force_min_n), float(self.normal_force_max_n)
        per_corner = self.normal_force_n / self.n_points
        return per_corner, per_corner

    @classmethod
    def rectangle(cls, name: str, frame: str, length_m: float, width_m: float,
                  center_m: Sequence[float] = (0.0, 0.0, 0.0), **kwargs) -> ContactSpec:
        """Rectangular sole of ``length_m`` (x) by ``width_m`` (y) centred at ``center_m`` in the sole frame."""
        half = np.array([0.5 * length_m, 0.5 * width_m, 0.0])
        signs = np.array([[1, 1, 0], [1, -1, 0], [-1, 1, 0], [-1, -1, 0]])
        corners = np.asarray(center_m, dtype=float).reshape(3) + signs * half
        return cls(name=name, frame=frame, corners=corners, **kwargs)

    @classmethod
    def from_corner_frames(cls, model: pin.Model, name: str, frame: str, corner_frames: Sequence[str],
                           **kwargs) -> ContactSpec:
        """Corners read from frames rigidly attached to the sole (e.g. ``left_sole_corner_fl``)."""
        names = [f.name for f in model.frames]
        for n in [frame, *corner_frames]:
            if not model.existFrame(n):
                raise FrameNotFound(f"contact {name!r}: unknown frame {n!r}." + suggest(n, names))
        data = model.createData()
        pin.framesForwardKinematics(model, data, pin.neutral(model))
        oMs = data.oMf[model.getFrameId(frame)]
        sole_joint = model.frames[model.getFrameId(frame)].parentJoint
        corners = []
        for n in corner_frames:
            f = model.frames[model.getFrameId(n)]
            if f.parentJoint != sole_joint:
                raise InputError(f"contact {name!r}: corner frame {n!r} is not on the body of {frame!r}")
            corners.append((oMs.inverse() * data.oMf[model.getFrameId(n)]).translation)
        return cls(name=name, frame=frame, corners=np.array(corners), **kwargs)


def wrench_map(R_sole: np.ndarray, corners: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``W`` (6, 3P): corner forces (world axes) → wrench at the sole origin (linear first, world axes).

    Column block ``i`` is ``[I; [R r_i]_×]`` with ``r_i`` the corner position in the sole frame.
    """
    P = corners.shape[0]
    W = np.zeros((6, 3 * P)) if out is None else out
    _wrench_map_into(np.ascontiguousarray(R_sole, dtype=float), corners, W)
    return W


@compiled
def _wrench_map_into(R, corners, W):
    """:func:`wrench_map` compiled (a few dozen numbers: below the numpy calls' overhead)."""
    for i in range(corners.shape[0]):
        rx = R[0, 0] * corners[i, 0] + R[0, 1] * corners[i, 1] + R[0, 2] * corners[i, 2]
        ry = R[1, 0] * corners[i, 0] + R[1, 1] * corners[i, 1] + R[1, 2] * corners[i, 2]
        rz = R[2, 0] * corners[i, 0] + R[2, 1] * corners[i, 1] + R[2, 2] * corners[i, 2]
        c = 3 * i
        for j in range(3):
            for k in range(3):
                W[j, c + k] = 1.0 if j == k else 0.0
        W[3, c], W[3, c + 1], W[3, c + 2] = 0.0, -rz, ry
        W[4, c], W[4, c + 1], W[4, c + 2] = rz, 0.0, -rx
        W[5, c], W[5, c + 1], W[5, c + 2] = -ry, rx, 0.0


@dataclass(frozen=True)
class DecisionLayout:
    """Index layout of the decision vector ``x = [v_dot_base, theta_ddot_a, f_1, ..., f_K]``.

    Computed once (the layout is immutable; they are read every tick): the sizes ``n_nu``, ``n_f``,
    ``n``, the slices ``nu``, ``actuated`` and ``forces`` of ``x``, and the ``contact_names``.
    """

    n_b: int
    n_a: int
    contacts: tuple[ContactSpec, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        n_nu = self.n_b + self.n_a
        slices, start = {}, n_nu
        for c in self.contacts:
            slices[c.name] = slice(start, start + 3 * c.n_points)
            start += 3 * c.n_points
        derived = dict(n_nu=n_nu, n_f=start - n_nu, n=start, nu=slice(0, n_nu), actuated=slice(self.n_b, n_nu),
                       forces=slice(n_nu, start), contact_names=tuple(c.name for c in self.contacts), _slices=slices)
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    def force_slice(self, name: str) -> slice:
        """Slice of ``x`` holding the corner forces of contact ``name`` (3P entries)."""
        try:
            return self._slices[name]
        except KeyError:
            raise InputError(f"unknown contact {name!r}; contacts are {list(self.contact_names)}") from None

    def describe(self) -> str:
        """The decision vector with its block sizes, e.g. for the controller node's start-up line."""
        parts = [f"v_dot_base[{self.n_b}]", f"theta_ddot_a[{self.n_a}]"]
        parts += [f"f_{c.name}[{3 * c.n_points}]" for c in self.contacts]
        return "x = [" + ", ".join(parts) + f"] (n = {self.n})"


@dataclass
class ContactTerms:
    """Per-tick contact quantities shared by the constraints (filled by the controller).

    Attributes:
        spec: the contact.
        active: whether the sole is in contact this tick.
        R: sole rotation in the world (3, 3).
        J: projected sole Jacobian ``J_sole T`` (6, n_nu), linear first, world axes.
        drift: sole acceleration at ``nu_dot = 0`` (6,) [m/s², rad/s²].
        twist: sole velocity (6,) [m/s, rad/s].
        W: corner-force → sole-wrench map (6, 3P).
    """

    spec: ContactSpec
    active: bool
    R: np.ndarray
    J: np.ndarray
    drift: np.ndarray
    twist: np.ndarray
    W: np.ndarray


__all__ = ["ContactSpec", "ContactTerms", "DecisionLayout", "wrench_map"]
