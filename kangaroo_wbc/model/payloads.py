"""Payloads a closed-loop model carries beyond its files: point masses at links' centres of mass,
set as a whole (``docs/morphology.md``). One :class:`ModelPayloads` per model in a process
(:func:`model_payloads`): the parts that share a model (the composed deployment's nodes) share it,
and a change is applied once.
"""

from __future__ import annotations

import weakref
from typing import Any

from kangaroo_wbc.errors import InputError, suggest


def payload_links(clm: Any) -> list[str]:
    """The links of ``clm`` a payload may go on (pinocchio's body frames: the URDF links, which are
    the simulator's bodies)."""
    import pinocchio as pin

    return [f.name for f in clm.model.frames if f.type == pin.FrameType.BODY]


class ModelPayloads:
    """The payloads a closed-loop model carries, set as a whole: :meth:`set` makes each body's mass its
    mass as loaded plus the payloads on it, through
    :meth:`~kangaroo_wbc.model.ClosedLoopModel.add_payload` (the difference only, so setting what the
    model already carries changes nothing). One object per model (:func:`model_payloads`): nodes that
    share a model (the composed deployment) share it, and a change is applied once.
    """

    def __init__(self, clm: Any) -> None:
        self.clm = clm
        m = clm.model
        self._links = payload_links(clm)
        self._body = {name: m.frames[m.getFrameId(name)].parentJoint for name in self._links}
        #: each body's mass as loaded [kg], by joint index
        self._nominal = {j: float(m.inertias[j].mass) for j in set(self._body.values())}
        self.carried: dict[str, float] = {}  # link -> mass [kg]

    def check(self, payloads: dict[str, float]) -> str | None:
        """None if :meth:`set` accepts ``payloads``, else the reason (naming the valid links)."""
        for link in payloads:
            if link not in self._body:
                return f"unknown link {link!r}." + suggest(link, self._links)
        for j, mass in self._targets(payloads).items():
            if not mass > 0.0:
                links = [n for n in payloads if self._body[n] == j]
                return f"payloads on {links} leave the body without mass ({self._nominal[j]:.3f} kg as loaded)"
        return None

    def _targets(self, payloads: dict[str, float]) -> dict[int, float]:
        targets = dict(self._nominal)
        for link, mass in payloads.items():
            targets[self._body[link]] += mass
        return targets

    def set(self, payloads: dict[str, float]) -> bool:
        """Make the model carry ``payloads`` (``{link: mass [kg]}``, nothing else); returns whether a
        mass changed.

        Raises:
            InputError: :meth:`check` refuses them (nothing changes).
        """
        reason = self.check(payloads)
        if reason:
            raise InputError(reason)
        m, changed = self.clm.model, False
        link_of = {j: link for link, j in self._body.items()}
        for j, mass in self._targets(payloads).items():
            delta = mass - float(m.inertias[j].mass)
            if abs(delta) > 1e-9:
                self.clm.add_payload(link_of[j], delta)
                changed = True
        self.carried = {k: float(v) for k, v in payloads.items() if v != 0.0}
        return changed

    def describe(self) -> str:
        """``"base_link +6 kg"``-like text of the payloads carried, or ``"no payload"``."""
        return ", ".join(f"{k} {v:+g} kg" for k, v in self.carried.items()) or "no payload"


_MODEL_PAYLOADS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> ModelPayloads


def model_payloads(clm: Any) -> ModelPayloads:
    """The :class:`ModelPayloads` of ``clm`` (one per model in the process; created on first use,
    so before any payload: the masses as loaded)."""
    if clm not in _MODEL_PAYLOADS:
        _MODEL_PAYLOADS[clm] = ModelPayloads(clm)
    return _MODEL_PAYLOADS[clm]


__all__ = ["ModelPayloads", "model_payloads", "payload_links"]
