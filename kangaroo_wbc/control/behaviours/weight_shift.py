""":class:`WeightShift`: the CoM over one sole, the other lifted (single support), held, put back."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.control.behaviours.base import Behaviour, blend
from kangaroo_wbc.control.wbc import FrameReference, WbcReferences
from kangaroo_wbc.errors import InputError


@dataclass
class WeightShift(Behaviour):
    """Shift the CoM over ``stance`` sole, lift the other one (single support), hold, put it back.

    Phases [s]: shift ``shift_s``, lift ``lift_s`` (to ``lift_height_m``), hold ``hold_s``, lower
    ``lift_s`` (the sole ends ``touchdown_depth_m`` below its start height, pressing on the floor),
    shift back ``shift_s``. The swing sole is a contact again from the end of the lowering phase.
    """

    name: str = "weight_shift"
    stance: str = "left"
    shift_s: float = 2.0
    lift_s: float = 1.0
    hold_s: float = 2.0
    lift_height_m: float = 0.05
    touchdown_depth_m: float = 0.002
    com_inset_m: float = 0.0

    def _on_start(self) -> None:
        if self.stance not in self.state.soles:
            raise InputError(f"unknown stance sole {self.stance!r}; soles are {list(self.state.soles)}")
        others = [n for n in self.state.soles if n != self.stance]
        if not others:
            raise InputError("weight shift needs a second sole")
        self.swing = others[0]
        R_st, p_st = self.state.soles[self.stance]
        com0 = self.state.com.copy()
        over = com0.copy()
        over[:2] = p_st[:2]
        towards = com0[:2] - p_st[:2]
        dist = float(np.linalg.norm(towards))
        if dist > 0 and self.com_inset_m:
            over[:2] += self.com_inset_m * towards / dist
        self._com_mid, self._com_over = com0, over
        self._t = np.cumsum([self.shift_s, self.lift_s, self.hold_s, self.lift_s, self.shift_s])

    def _swing_ref(self, tau_phase: float, up: bool) -> FrameReference:
        R, p0 = self.state.soles[self.swing]
        top = p0 + np.array([0.0, 0.0, self.lift_height_m])
        low = p0 - np.array([0.0, 0.0, self.touchdown_depth_m])
        a, b = (p0, top) if up else (top, low)
        p, v, acc = blend(a, b, tau_phase, self.lift_s)
        return FrameReference(position=p, rotation=R, twist=np.concatenate([v, np.zeros(3)]),
                              acceleration=np.concatenate([acc, np.zeros(3)]))

    def _references(self, tau: float) -> WbcReferences:
        t1, t2, t3, t4, t5 = self._t
        both = self._all_contacts()
        single = (self.stance,)
        R_base = self.state.base_rotation
        if tau < t1:
            p, v, a = blend(self._com_mid, self._com_over, tau, self.shift_s)
            return WbcReferences(active_contacts=both, com_position=p, com_velocity=v, com_acceleration=a,
                                 base_rotation=R_base)
        if tau < t4:
            if tau < t2:
                foot = self._swing_ref(tau - t1, up=True)
            elif tau < t3:
                R, p0 = self.state.soles[self.swing]
                foot = FrameReference(position=p0 + np.array([0.0, 0.0, self.lift_height_m]), rotation=R)
            else:
                foot = self._swing_ref(tau - t3, up=False)
            return WbcReferences(active_contacts=single, com_position=self._com_over, com_velocity=np.zeros(3),
                                 com_acceleration=np.zeros(3), base_rotation=R_base, foot_poses={self.swing: foot})
        p, v, a = blend(self._com_over, self._com_mid, tau - t4, self.shift_s)
        return WbcReferences(active_contacts=both, com_position=p, com_velocity=v, com_acceleration=a,
                             base_rotation=R_base)

    def finished(self, t: float) -> bool:
        return t - self.t0 >= self._t[-1]
