"""Boot and hand-over on ros2_control: no effort command before the whole-body controller is ready.

At boot the robot is held by something else than the whole-body controller: on the robot and in
Gazebo the position controllers (``leg_<side>_position_controller``, active at boot, the effort
controllers loaded inactive: ``config/ros2_controllers*.yaml``); in the simulator the crane and the
driver's hold PD. Meanwhile the state estimator calibrates the relative encoders from the
broadcaster's joint states and the controller computes its commands, but :class:`CommandGate`
lets none of them out until the controller first says it is ready (``wbc/ready``: calibrated state,
``ready_ticks`` ticks in control). From then on every command goes out, safe-mode ones included:
the effort controllers (switched in by the controller manager at the controller's request,
:class:`SwitchRequester`, ``docs/ros2_control.md``) then hold the last one until the next. A
command therefore never reaches an uncalibrated robot, and the effort controllers' topics carry
nothing stale at the switch.

The switch itself (``controller_manager_msgs/srv/SwitchController``, semantics of ros2_control's
``controller_manager.cpp``, Kilted):

* :class:`HandOverPlan`: from the controller manager's file, the effort controllers to activate and
  the position controllers holding the legs (each effort controller's ``fallback_controllers``) to
  deactivate, in one STRICT request.
* :class:`SwitchRequester`: the controller's side: one request at the first ready, its answer or
  its timeout; until the answer the commands go out (the inactive effort controllers drop them and
  reset their buffer on activation); after a refusal or a timeout they are withheld (ERROR): the
  position controllers, still active, keep holding the robot.
* :class:`ControllerManagerModel`: the simulator's stand-in of the controller manager's lifecycle
  bookkeeping (active / inactive controllers, the switch's checks per strictness).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kangaroo_wbc.components.samples import Level, Status
from kangaroo_wbc.errors import ConfigError

#: ``SwitchController.Request`` strictness constants.
BEST_EFFORT, STRICT, AUTO, FORCE_AUTO = 1, 2, 3, 4


class CommandGate:
    """Withholds the effort commands until the controller's first ready (module docstring)."""

    def __init__(self) -> None:
        #: stamp [s] of the first command let out (None: still withholding)
        self.opened_at_s: float | None = None
        self.withheld = 0

    @property
    def open(self) -> bool:
        return self.opened_at_s is not None

    def admit(self, ready: bool, stamp_s: float) -> bool:
        """Whether the command of this tick (``ready``: the controller's state after it) goes out."""
        if self.opened_at_s is None and ready:
            self.opened_at_s = float(stamp_s)
        if self.opened_at_s is None:
            self.withheld += 1
            return False
        return True

    def status(self) -> Status:
        """The ``hand_over`` diagnostic status."""
        values = {"withheld_commands": self.withheld,
                  "handed_over_at_s": self.opened_at_s if self.opened_at_s is not None else float("nan")}
        if self.open:
            return Status("hand_over", Level.OK, "effort commands out since the controller was ready", values)
        return Status("hand_over", Level.OK, "holding: no effort command before the controller is ready", values)


@dataclass(frozen=True)
class HandOverPlan:
    """The controllers of the hand-over: ``controllers`` (every one of the controller manager's file,
    name → type), ``effort`` (activated), ``hold`` (deactivated: the effort controllers'
    ``fallback_controllers``, the position controllers holding the legs at boot)."""

    controllers: dict[str, str]
    effort: tuple[str, ...]
    hold: tuple[str, ...]
    source: str = "<memory>"

    @classmethod
    def from_file(cls, path: str | Path, effort: Sequence[str]) -> HandOverPlan:
        """The plan of the controller manager's file ``path``; ``effort``: its effort controllers
        (:class:`~kangaroo_wbc.components.ros2_control.boundary.Ros2ControlConfig` finds them).

        Raises:
            ConfigError: an effort controller that is not in the file's controller manager section.
        """
        from kangaroo_wbc.model.hardware_map import read_document

        doc, src = read_document(path), str(path)
        node = doc.get("controller_manager") or doc.get("/**/controller_manager") or {}
        cm = node.get("ros__parameters", {}) if isinstance(node, dict) else {}
        controllers = {}
        for name, entry in cm.items():
            if isinstance(entry, dict) and "type" in entry:
                controllers[str(name)] = str(entry["type"])
        missing = [c for c in effort if c not in controllers]
        if missing:
            raise ConfigError(f"{src}: controller_manager: no controllers {missing} (the effort controllers)")
        hold: list[str] = []
        for c in effort:
            own = doc.get(c) or doc.get(f"/**/{c}") or {}
            own = own.get("ros__parameters", {}) if isinstance(own, dict) else {}
            fallbacks = cm[c].get("fallback_controllers", own.get("fallback_controllers", []))
            if not isinstance(fallbacks, list):
                raise ConfigError(f"{src}: {c}.fallback_controllers: expected a list, got {fallbacks!r}")
            hold += [str(f) for f in fallbacks if str(f) not in hold]
        return cls(controllers, tuple(effort), tuple(hold), src)

    def boot_states(self) -> dict[str, str]:
        """What the launch leaves at boot: every controller active but the effort ones (inactive)."""
        return {c: "inactive" if c in self.effort else "active" for c in self.controllers}


class ControllerManagerModel:
    """The controller manager's switch bookkeeping (Kilted ``controller_manager.cpp``), no hardware:

    * strictness 0 → BEST_EFFORT (the manager's ``defaults.switch_controller.strictness`` default);
      AUTO and FORCE_AUTO → BEST_EFFORT (not implemented there either);
    * an unknown name: STRICT refuses the whole request; BEST_EFFORT skips it (refused when no name
      of that list is known);
    * activating an active controller not also deactivated, deactivating an inactive one: STRICT
      refuses the whole request, BEST_EFFORT skips it;
    * nothing left to do: ok (``no controllers need to be activated or deactivated``);
    * otherwise every deactivation and activation at once (one update).

    Not modelled: command-interface conflicts, chained controllers, ``activate_asap`` (no
    hardware to wait for), the ``timeout``, unconfigured controllers.
    """

    def __init__(self, states: dict[str, str]) -> None:
        #: name → "active" | "inactive"
        self.states = dict(states)
        self.switches = 0
        self.refusals = 0
        self.last_message = ""

    def active(self, name: str) -> bool:
        return self.states.get(name) == "active"

    def switch(self, activate: Sequence[str], deactivate: Sequence[str], strictness: int
               ) -> tuple[bool, str, list[str]]:
        """One request: ``(ok, message, newly active controllers)``."""
        ok, message, started = self._switch(list(activate), list(deactivate), int(strictness))
        if ok:
            self.switches += message == ""  # something switched ("" from the manager then)
        else:
            self.refusals += 1
        self.last_message = message
        return ok, message, started

    def _switch(self, activate: list[str], deactivate: list[str], strictness: int
                ) -> tuple[bool, str, list[str]]:
        if strictness not in (STRICT, BEST_EFFORT):
            strictness = BEST_EFFORT
        strict = strictness == STRICT
        for action, names in (("activate", activate), ("deactivate", deactivate)):
            unknown = [n for n in names if n not in self.states]
            if unknown and (strict or len(unknown) == len(names)):
                return False, (f"Could not {action} controller with name '{unknown[0]}' because no controller "
                               f"with this name exists"), []
            names[:] = [n for n in names if n in self.states]
        problems = [f"Controller with name '{n}' is already active." for n in activate
                    if self.active(n) and n not in deactivate]
        problems += [f"Controller with name '{n}' can not be deactivated since it is not active."
                     for n in deactivate if not self.active(n)]
        if problems and strict:
            return False, problems[0], []
        activate = [n for n in activate if not self.active(n) or n in deactivate]
        deactivate = [n for n in deactivate if self.active(n)]
        if not activate and not deactivate:
            return True, "After checking the controllers, no controllers need to be activated or deactivated.", []
        for n in deactivate:
            self.states[n] = "inactive"
        for n in activate:
            self.states[n] = "active"
        return True, "", activate

    def listing(self) -> list[tuple[str, str]]:
        """``(name, state)`` of every controller (``list_controllers``)."""
        return list(self.states.items())


class SwitchRequester:
    """The whole-body controller's side of the switch (module docstring). The ROS adapter sends
    :meth:`request` when :meth:`due` and reports :meth:`answer` or :meth:`expired`."""

    def __init__(self, plan: HandOverPlan, timeout_s: float) -> None:
        self.plan, self.timeout_s = plan, float(timeout_s)
        #: idle → pending (sent at ``sent_at_s``) → done | failed
        self.state = "idle"
        self.sent_at_s = float("nan")
        self.message = ""

    def request(self) -> tuple[list[str], list[str], int]:
        """``(activate_controllers, deactivate_controllers, strictness)`` of the one request."""
        return list(self.plan.effort), list(self.plan.hold), STRICT

    def due(self, ready: bool) -> bool:
        """Whether to send the request now (the first ready)."""
        return ready and self.state == "idle"

    def sent(self, now_s: float) -> None:
        self.state, self.sent_at_s = "pending", float(now_s)

    def answer(self, ok: bool, message: str) -> None:
        self.state, self.message = ("done" if ok else "failed"), str(message)

    def expired(self, now_s: float, service_ready: bool) -> bool:
        """A pending request past its timeout fails (returns True when it just did)."""
        if self.state != "pending" or now_s - self.sent_at_s < self.timeout_s:
            return False
        where = "no answer" if service_ready else "the service is not offered"
        self.answer(False, f"{where} within {self.timeout_s:g} s")
        return True

    @property
    def withholds(self) -> bool:
        """The commands are withheld for good (the switch failed: the position controllers hold)."""
        return self.state == "failed"

    def status(self) -> Status:
        """The ``controller_switch`` diagnostic status."""
        act, deact, _ = self.request()
        values = {"state": self.state, "activate": ", ".join(act), "deactivate": ", ".join(deact),
                  "message": self.message}
        if self.state == "failed":
            return Status("controller_switch", Level.ERROR, f"switch to the effort controllers failed: "
                          f"{self.message}; effort commands withheld, the position controllers hold", values)
        text = {"idle": "waiting for the controller's first ready", "pending": "switch requested",
                "done": "effort controllers active"}[self.state]
        return Status("controller_switch", Level.OK, text, values)


__all__ = ["BEST_EFFORT", "STRICT", "AUTO", "FORCE_AUTO", "CommandGate", "ControllerManagerModel", "HandOverPlan",
           "SwitchRequester"]
