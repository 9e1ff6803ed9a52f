"""The payloads over ROS: the controller's latched ``model/payloads`` (what its model carries beyond
its files) and the estimators' :class:`PayloadFollower` (``docs/morphology.md``)."""

from __future__ import annotations

import math
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus

from kangaroo_wbc.components.samples import Level
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.payloads import model_payloads
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.diagnostics import HARDWARE_ID, make_status

#: The latched topic on which the controller publishes the payloads its model carries.
PAYLOADS_TOPIC = "model/payloads"


def payloads_msg(payloads: dict[str, float], message: str) -> Any:
    """``model/payloads``: one KeyValue per link (name → mass [kg] carried); level OK (a payload is no
    fault); ``message`` says what changed."""
    return make_status("model payloads", Level.OK, message, {k: f"{v:g}" for k, v in payloads.items()},
                       hardware_id=HARDWARE_ID)


def payloads_from_msg(msg: Any) -> dict[str, float]:
    """The payloads of a ``model/payloads`` message by link [kg].

    Raises:
        InputError: a value that is not a finite number.
    """
    out = {}
    for kv in msg.values:
        try:
            out[kv.key] = float(kv.value)
        except ValueError:
            out[kv.key] = math.nan
        if not math.isfinite(out[kv.key]):
            raise InputError(f"model/payloads: {kv.key}: {kv.value!r} is not a mass [kg]")
    return out


class PayloadFollower:
    """A node's model follows the controller's ``model/payloads`` (latched): the message is kept by
    the subscription and applied by :meth:`apply` in the thread that runs the node's component,
    before its next sample. With a model shared with the controller (composed) the masses are
    already set and nothing changes (:class:`ModelPayloads`)."""

    def __init__(self, node: Any, clm: Any) -> None:
        self._node = node
        self.payloads = model_payloads(clm)
        self._pending: dict[str, float] | None = None
        node.create_subscription(DiagnosticStatus, PAYLOADS_TOPIC, self._on_msg, qos.LATCHED)

    def _on_msg(self, msg: Any) -> None:
        try:
            self._pending = payloads_from_msg(msg)
        except InputError as exc:
            self._node.throttled.warning(PAYLOADS_TOPIC, f"{PAYLOADS_TOPIC} skipped: {exc}")

    def apply(self) -> None:
        """Set the model to the payloads last received (no-op when none is pending)."""
        if self._pending is None:
            return
        payloads, self._pending = self._pending, None
        try:
            changed = self.payloads.set(payloads)
        except InputError as exc:
            self._node.throttled.warning(PAYLOADS_TOPIC, f"{PAYLOADS_TOPIC}: {payloads} not applied: {exc}")
            return
        if changed or self.payloads.carried:
            how = "applied" if changed else "in the model already"
            self._node.get_logger().info(f"payloads {how}: {self.payloads.describe()}, robot "
                                         f"{self.payloads.clm.mass_kg:.3f} kg")


__all__ = ["PAYLOADS_TOPIC", "payloads_msg", "payloads_from_msg", "PayloadFollower"]
