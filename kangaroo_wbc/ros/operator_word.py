"""The operator's word to the controller over parameters (``docs/morphology.md``): the actuators out
of action (``locked_actuators``, ``limp_actuators``) and the payloads the robot carries (``payloads``).

A change is checked when it is set (an unknown actuator or link is refused with the valid ones),
kept, and applied by :meth:`OperatorWord.apply_pending` in the thread that runs the controller, before
its next tick's model update; what is in effect goes out on the latched ``actuators/modes`` (one
KeyValue per actuator) and ``model/payloads`` (one per link), which the estimators apply: the change
is made once and reaches every node.
"""

from __future__ import annotations

import time
from typing import Any

from diagnostic_msgs.msg import DiagnosticStatus

from kangaroo_wbc.components.controller_params import MODE_PARAMETERS, parse_payload_parameter
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.payloads import model_payloads
from kangaroo_wbc.ros import qos
from kangaroo_wbc.ros.diagnostics import actuator_modes_msg
from kangaroo_wbc.ros.node_support import add_parameter_check, unknown_names
from kangaroo_wbc.ros.payloads import PAYLOADS_TOPIC, payloads_msg


class OperatorWord:
    """The actuator-mode and payload parameters of ``node`` for its controller ``component``
    (module docstring); the values in effect at start-up are applied at once."""

    def __init__(self, node: Any, component: Any, clm: Any, params: Any) -> None:
        self._node, self._component, self._clm = node, component, clm
        add_parameter_check(node, list(MODE_PARAMETERS),
                            lambda name, value: unknown_names(value, clm.actuated_joint_names, "actuator"))
        self._payloads = model_payloads(clm)
        add_parameter_check(node, ["payloads"], lambda name, value: self._check_payloads(value))
        self._pub_modes = node.create_publisher(DiagnosticStatus, "actuators/modes", qos.LATCHED)
        self._pub_payloads = node.create_publisher(DiagnosticStatus, PAYLOADS_TOPIC, qos.LATCHED)
        self._modes_version = -1  # the component's modes_version last published
        self._pending_modes: dict[str, str] | None = None
        self._pending_payloads: dict[str, float] | None = None
        self.on_parameters(params, set(MODE_PARAMETERS) | {"payloads"})
        self.apply_pending()

    def on_parameters(self, params: Any, changed: set[str]) -> None:
        """Keep the changed modes and payloads for :meth:`apply_pending` (checked already)."""
        if changed & MODE_PARAMETERS.keys():
            modes = dict.fromkeys(self._clm.actuated_joint_names, "active")
            for key, mode in MODE_PARAMETERS.items():
                modes.update(dict.fromkeys(getattr(params, key), mode))
            self._pending_modes = modes
        if "payloads" in changed:
            self._pending_payloads = parse_payload_parameter(params.payloads)

    def apply_pending(self) -> None:
        """Apply what is not applied yet (the controller's thread, before a tick's model update)."""
        if self._pending_modes is not None:
            modes, self._pending_modes = self._pending_modes, None
            for name, mode in modes.items():
                try:
                    self._component.set_actuator_mode(name, mode)
                except InputError as exc:  # the parameter check let it through: say so, keep the rest
                    self._node.get_logger().error(f"actuator mode {name} {mode} not applied: {exc}")
            self.publish_modes()
        if self._pending_payloads is not None:
            self._apply_payloads()

    def publish_modes(self) -> None:
        """``actuators/modes`` (latched) when the component's modes changed since the last one (the
        operator's word, or the fault detector's declaration)."""
        c = self._component
        if c.modes_version == self._modes_version:
            return
        self._modes_version = c.modes_version
        causes = c.actuator_mode_causes
        text = "; ".join(f"{n} {c.actuator_modes[n]} ({why})" for n, why in causes.items()) or "all actuators active"
        self._pub_modes.publish(actuator_modes_msg(c.actuator_modes, text))
        self._node.log_events(c)

    def _check_payloads(self, value: Any) -> str | None:
        try:
            return self._payloads.check(parse_payload_parameter(value))
        except InputError as exc:
            return str(exc)

    def _apply_payloads(self) -> None:
        payloads, self._pending_payloads = self._pending_payloads, None
        t0 = time.perf_counter()
        try:
            changed = self._payloads.set(payloads or {})
        except InputError as exc:  # the parameter check let it through: say so, keep the model
            self._node.get_logger().error(f"payloads {payloads} not applied: {exc}")
            return
        ms = 1e3 * (time.perf_counter() - t0)
        text, mass = self._payloads.describe(), self._clm.mass_kg
        if changed:
            self._node.get_logger().warning(f"payloads: {text}, robot {mass:.2f} kg (model updated in {ms:.3f} ms)")
        self._pub_payloads.publish(payloads_msg(self._payloads.carried, f"{text} (operator); robot {mass:.3f} kg"))


__all__ = ["OperatorWord"]
