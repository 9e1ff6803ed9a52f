"""Boot and hand-over on ros2_control: no effort command before the whole-body controller is ready.

At boot the robot is held by something else than the whole-body controller: on the robot and in
Gazebo the position controllers (``leg_<side>_position_controller``, active at boot, the effort
controllers loaded inactive: ``config/ros2_controllers*.yaml``); in the simulator the crane and the
driver's hold PD. Meanwhile the state estimator calibrates the relative encoders from the
broadcaster's joint states and the controller computes its commands, but :class:`CommandGate`
lets none of them out until the controller first says it is ready (``wbc/ready``: calibrated state,
``ready_ticks`` ticks in control). From then on every command goes out, safe-mode ones included:
the effort controllers (switched in by the controller manager at ``wbc/ready``, see
``docs/ros2_control.md``) then hold the last one until the next. A command therefore never reaches
an uncalibrated robot, and the effort controllers' topics carry nothing stale at the switch.
"""

from __future__ import annotations

from kangaroo_wbc.components.samples import Level, Status


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


__all__ = ["CommandGate"]
