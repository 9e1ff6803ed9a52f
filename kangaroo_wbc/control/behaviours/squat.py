""":class:`Squat`: CoM height cycles (the leg-length actuators do most of the work)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.control.behaviours.base import Behaviour
from kangaroo_wbc.control.wbc import WbcReferences


@dataclass
class Squat(Behaviour):
    """CoM height ``z(t) = z0 - depth/2 (1 - cos(2π t / period))`` for ``cycles`` periods [m, s].

    The CoM keeps its starting horizontal position (start from a centred :class:`Stand`).
    """

    name: str = "squat"
    depth_m: float = 0.05
    period_s: float = 4.0
    cycles: int = 2

    def _references(self, tau: float) -> WbcReferences:
        w = 2 * math.pi / self.period_s
        tau = min(tau, self.cycles * self.period_s)
        z = -0.5 * self.depth_m * (1 - math.cos(w * tau))
        dz = -0.5 * self.depth_m * w * math.sin(w * tau)
        ddz = -0.5 * self.depth_m * w**2 * math.cos(w * tau)
        if tau >= self.cycles * self.period_s:
            dz = ddz = 0.0
        e = np.array([0.0, 0.0, 1.0])
        com = self.state.com
        return WbcReferences(active_contacts=self._all_contacts(), com_position=com + z * e, com_velocity=dz * e,
                             com_acceleration=ddz * e, base_rotation=self.state.base_rotation)

    def finished(self, t: float) -> bool:
        return t - self.t0 >= self.cycles * self.period_s
