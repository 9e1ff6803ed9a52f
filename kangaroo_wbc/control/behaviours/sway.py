""":class:`LateralSway`: the CoM (hence the ZMP, quasi-statically) moves sideways between the soles."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.control.behaviours.base import Behaviour, min_jerk
from kangaroo_wbc.control.wbc import WbcReferences
from kangaroo_wbc.errors import InputError


@dataclass
class LateralSway(Behaviour):
    """CoM sways sideways between the soles: ``y = y_mid + ratio · half_gap · sin(2π t / period)``.

    ``ratio`` in [0, 1) is the fraction of the half distance between the sole centres; the
    amplitude ramps in over the first period; the sway is centred on the starting CoM.
    """

    name: str = "sway"
    ratio: float = 0.6
    period_s: float = 3.0
    cycles: int = 3

    def _on_start(self) -> None:
        soles = [p for _, p in self.state.soles.values()]
        if len(soles) < 2:
            raise InputError("lateral sway needs two soles")
        gap = soles[0] - soles[1]
        gap[2] = 0.0
        self._axis = gap / np.linalg.norm(gap)
        self._half_gap = 0.5 * float(np.linalg.norm(gap))

    def _references(self, tau: float) -> WbcReferences:
        T = self.period_s
        tau = min(tau, self.cycles * T)
        w = 2 * math.pi / T
        amp = self.ratio * self._half_gap
        ramp, dramp, ddramp = min_jerk(tau / T)
        dramp, ddramp = dramp / T, ddramp / T**2
        s, ds, dds = math.sin(w * tau), w * math.cos(w * tau), -(w**2) * math.sin(w * tau)
        y = amp * ramp * s
        dy = amp * (dramp * s + ramp * ds)
        ddy = amp * (ddramp * s + 2 * dramp * ds + ramp * dds)
        if tau >= self.cycles * T:
            dy = ddy = 0.0
        mid = self.state.com
        return WbcReferences(active_contacts=self._all_contacts(), com_position=mid + y * self._axis,
                             com_velocity=dy * self._axis, com_acceleration=ddy * self._axis,
                             base_rotation=self.state.base_rotation)

    def finished(self, t: float) -> bool:
        return t - self.t0 >= self.cycles * self.period_s
