"""What every behaviour shares: :class:`Behaviour` (task references over time for
:class:`~kangaroo_wbc.control.wbc.WholeBodyController`, started from :class:`BehaviourState`) and
smooth trajectories (:func:`min_jerk`, :func:`blend`, :func:`quintic`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from kangaroo_wbc.control.wbc import WbcReferences
from kangaroo_wbc.errors import InputError


def min_jerk(tau: float) -> tuple[float, float, float]:
    """Minimum-jerk blend ``s(τ) = 10τ³ - 15τ⁴ + 6τ⁵`` and its first two derivatives, τ clipped to [0, 1]."""
    t = min(max(tau, 0.0), 1.0)
    s = t**3 * (10 - 15 * t + 6 * t**2)
    ds = 30 * t**2 * (1 - t) ** 2
    dds = 60 * t * (1 - t) * (1 - 2 * t)
    return s, ds, dds


def blend(p0: np.ndarray, p1: np.ndarray, t: float, duration: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum-jerk move from ``p0`` to ``p1`` over ``duration`` [s]: position, velocity, acceleration."""
    s, ds, dds = min_jerk(t / duration)
    d = p1 - p0
    return p0 + s * d, ds / duration * d, dds / duration**2 * d


@dataclass
class BehaviourState:
    """Robot state a behaviour starts from (world frame).

    Attributes:
        com: CoM position [m].
        base_rotation: base orientation (3, 3).
        soles: contact name → (rotation (3, 3), position (3,) [m]) of each sole frame.
        contacts: names of the soles in contact.
        actuators: actuator name → position [m or rad], in the controller's actuator order.
    """

    com: np.ndarray
    base_rotation: np.ndarray
    soles: dict[str, tuple[np.ndarray, np.ndarray]]
    contacts: tuple[str, ...]
    actuators: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_controller(cls, wbc) -> BehaviourState:
        """Current state of a :class:`WholeBodyController` (after at least one ``step``)."""
        pm = wbc.pm
        R_base, _ = pm.placement(wbc.settings.base_frame)
        soles = {c.name: tuple(a.copy() for a in pm.placement(c.frame)) for c in wbc.contacts}
        theta = pm.q[wbc.clm.idx_q_a]
        return cls(com=pm.com.copy(), base_rotation=R_base.copy(), soles=soles, contacts=tuple(wbc.active_contacts),
                   actuators=dict(zip(wbc.clm.actuated_joint_names, theta.tolist())))


@dataclass
class Behaviour(ABC):
    """Maps time since :meth:`start` [s] to WBC references."""

    name: str = "behaviour"
    state: BehaviourState | None = field(default=None, init=False, repr=False)
    t0: float = field(default=0.0, init=False)
    #: whether sensing may drop a contact of the plan (a sole measured unloaded; the supervisor's
    #: measured contacts). A gait plans every contact change itself: a sole it unloads before a
    #: lift-off is still on the ground, and dropping it early on a lagging force estimate made the
    #: walk fall in the real-time node graph.
    measured_contact_veto = True

    def start(self, t: float, state: BehaviourState) -> None:
        """Start at time ``t`` [s] from ``state``."""
        self.t0 = float(t)
        self.state = state
        self._on_start()

    def _on_start(self) -> None:  # noqa: B027 - optional hook
        pass

    def references(self, t: float) -> WbcReferences:
        """References at absolute time ``t`` [s]."""
        if self.state is None:
            raise InputError(f"behaviour {self.name!r} used before start()")
        return self._references(max(t - self.t0, 0.0))

    @abstractmethod
    def _references(self, tau: float) -> WbcReferences:
        """References ``tau`` seconds after the start."""

    def finished(self, t: float) -> bool:
        """Whether the behaviour has completed (it keeps returning its final references)."""
        return False

    def observe(self, com: np.ndarray, com_velocity: np.ndarray,  # noqa: B027 - optional hook
                actuators: np.ndarray | None = None) -> None:
        """The measured CoM [m] and its velocity [m/s] (world) and the actuator positions [m or rad]
        (in :attr:`BehaviourState.actuators`' order) of this tick, before :meth:`references`
        (behaviours that plan from the measured state use them; the others ignore them)."""

    def _all_contacts(self) -> tuple[str, ...]:
        return tuple(self.state.soles)


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
