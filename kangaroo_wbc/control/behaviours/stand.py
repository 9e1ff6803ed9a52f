"""Standing behaviours: :class:`Stand` (hold the CoM and the base orientation) and :class:`PushRecovery`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from kangaroo_wbc.control.behaviours.base import Behaviour, blend
from kangaroo_wbc.control.wbc import WbcReferences


@dataclass
class Stand(Behaviour):
    """Hold the CoM above the middle of the soles at its starting height (``com_offset_m`` added)."""

    name: str = "stand"
    com_offset_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    center_over_feet: bool = True
    settle_s: float = 1.0

    def _on_start(self) -> None:
        target = self.state.com.copy()
        if self.center_over_feet:
            target[:2] = np.mean([p for _, p in self.state.soles.values()], axis=0)[:2]
        self._target = target + np.asarray(self.com_offset_m, dtype=float)

    def _references(self, tau: float) -> WbcReferences:
        p, v, a = blend(self.state.com, self._target, tau, self.settle_s)
        return WbcReferences(active_contacts=self._all_contacts(), com_position=p, com_velocity=v,
                             com_acceleration=a, base_rotation=self.state.base_rotation)


@dataclass
class PushRecovery(Stand):
    """Stand, with gains meant for rejecting pushes (applied by the caller, not here).

    ``gains`` are overrides of the :class:`~kangaroo_wbc.control.wbc.WbcSettings` fields of the same
    names for the caller to apply while the behaviour runs (stiffer CoM, stronger angular-momentum
    damping).
    """

    name: str = "push_recovery"
    gains: Mapping[str, float] = field(default_factory=lambda: {"com_kp": 150.0, "com_kd": 30.0,
                                                                 "angular_momentum_kd": 10.0,
                                                                 "angular_momentum_weight": 0.05})
