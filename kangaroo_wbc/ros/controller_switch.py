"""The controller manager's services over ROS: the whole-body controller's switch client and the
simulator's stand-in services.

* :class:`SwitchClient` (``whole_body_controller``, ``switch_controllers: true``): at the first
  ready, one ``controller_manager_msgs/srv/SwitchController`` request on
  ``<controller_manager>/switch_controller`` (the logic, the answer and the timeout:
  :class:`~kangaroo_wbc.components.ros2_control.hand_over.SwitchRequester`).
* :func:`offer_controller_manager` (``sim`` with ``interface: ros2_control``):
  ``controller_manager/switch_controller`` and ``controller_manager/list_controllers`` answered from
  the simulated system's :class:`~kangaroo_wbc.components.ros2_control.hand_over.ControllerManagerModel`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kangaroo_wbc.errors import ConfigError


def _srv() -> Any:
    """The ``controller_manager_msgs.srv`` module (ConfigError naming the fix when absent)."""
    try:
        from controller_manager_msgs import srv
    except ImportError as exc:
        raise ConfigError("controller_manager_msgs is not installed (make setup builds it: "
                          "scripts/build_interfaces.sh controller_manager_msgs); with the robot's ROS 2 "
                          "installation use its ros-<distro>-controller-manager-msgs") from exc
    return srv


class SwitchClient:
    """The hand-over's switch request (module docstring).

    Args:
        node: the controller node (its logger; a steady timer checks the timeout).
        requester: the logic.
        controller_manager: the controller manager's node name (relative: the node's namespace).
    """

    def __init__(self, node: Any, requester: Any, controller_manager: str) -> None:
        from rclpy.clock import Clock, ClockType

        srv = _srv()
        self.node, self.requester, self._srv = node, requester, srv
        self.service = f"{controller_manager.rstrip('/')}/switch_controller"
        self._client = node.create_client(srv.SwitchController, self.service)
        self._future: Any = None
        node.create_timer(0.05, self._check, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def on_ready(self, ready: bool) -> None:
        """The controller's ready of this tick: the request goes out at the first one."""
        if self.requester.due(ready):
            self.requester.sent(time.monotonic())
            self.node.get_logger().info(f"hand-over: calling {self.service}")
            self._send()

    def _send(self) -> None:
        if not self._client.service_is_ready():
            return  # the timer tries again until the timeout
        from builtin_interfaces.msg import Duration

        activate, deactivate, strictness = self.requester.request()
        timeout = self.requester.timeout_s
        req = self._srv.SwitchController.Request(
            activate_controllers=activate, deactivate_controllers=deactivate, strictness=strictness,
            activate_asap=False,  # the hardware is up: the switch happens at the manager's next update
            timeout=Duration(sec=int(timeout), nanosec=int((timeout % 1.0) * 1e9)))
        self._future = self._client.call_async(req)
        self._future.add_done_callback(self._done)

    def _done(self, future: Any) -> None:
        try:
            res = future.result()
            ok, message = bool(res.ok), str(res.message)
        except Exception as exc:  # noqa: BLE001 - a failed call is the switch's failure, never a crash
            ok, message = False, f"call failed: {exc!r}"
        if self.requester.state != "pending":
            return  # already timed out
        self.requester.answer(ok, message or ("switched" if ok else "refused"))
        self._report()

    def _check(self) -> None:
        r = self.requester
        if r.state != "pending":
            return
        if self._future is None:
            self._send()
        if r.expired(time.monotonic(), self._client.service_is_ready()):
            self._report()

    def _report(self) -> None:
        r, log = self.requester, self.node.get_logger()
        if r.state == "done":
            log.info(f"hand-over: {self.service}: effort controllers active")
        else:
            log.error(r.status().message)


def offer_controller_manager(node: Any, system: Any, switched: Callable[[], None], lock: Any) -> list[Any]:
    """The stand-in's ``controller_manager/switch_controller`` and ``controller_manager/list_controllers``
    on ``system`` (:class:`~kangaroo_wbc.components.ros2_control.system.SimulatedRos2ControlSystem`);
    ``switched()`` after every accepted switch, under ``lock``."""
    srv = _srv()
    from controller_manager_msgs.msg import ControllerState

    log = node.get_logger()

    def on_switch(request: Any, response: Any) -> Any:
        try:
            with lock:
                ok, message = system.switch(list(request.activate_controllers),
                                            list(request.deactivate_controllers), int(request.strictness))
            if ok:
                switched()
        except Exception as exc:  # noqa: BLE001 - an answer, never a dead executor
            ok, message = False, f"switch failed: {exc!r}"
        response.ok, response.message = ok, message
        text = (f"switch_controller: activate {list(request.activate_controllers)}, deactivate "
                f"{list(request.deactivate_controllers)}, strictness {request.strictness}: "
                f"{'ok' if ok else 'refused'}{': ' + message if message else ''}")
        if ok:
            log.info(text)
        else:
            log.error(text)
        return response

    def on_list(request: Any, response: Any) -> Any:
        types = system.plan.controllers
        response.controller = [ControllerState(name=name, state=state, type=types.get(name, ""))
                               for name, state in system.manager.listing()]
        return response

    return [node.create_service(srv.SwitchController, "controller_manager/switch_controller", on_switch),
            node.create_service(srv.ListControllers, "controller_manager/list_controllers", on_list)]


__all__ = ["SwitchClient", "offer_controller_manager"]
