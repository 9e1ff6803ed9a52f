"""The simulated ros2_control system and the nodes' boundary chained in one process.

What the node graph does over the topics with ``interface: ros2_control``, without them: the
simulator's broadcasters (:meth:`SimulatedRos2ControlSystem.broadcast`) → the state estimator's
boundary (:meth:`Ros2ControlBoundary.state`, :meth:`~Ros2ControlBoundary.imu`) → the chain → the
controller's boundary (:meth:`~Ros2ControlBoundary.commands`, behind the hand-over
:class:`~kangaroo_wbc.components.ros2_control.hand_over.CommandGate`) → the effort controllers
(:meth:`SimulatedRos2ControlSystem.on_command`). The one-process loop and the composed deployment
call it, so all three deployments convert through the same functions.
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.components.ros2_control.boundary import Ros2ControlBoundary
from kangaroo_wbc.components.ros2_control.hand_over import CommandGate
from kangaroo_wbc.components.ros2_control.system import BroadcastState, SimulatedRos2ControlSystem
from kangaroo_wbc.components.samples import (
    ActuatorCommand,
    ActuatorSample,
    EncoderSample,
    Event,
    ImuSample,
)


class Ros2ControlLink:
    """The broadcasters' messages to the chain's samples and its forces to the controllers' data.

    Args:
        boundary: the nodes' boundary.
        system: the simulated system (None: the caller owns it, e.g. the hosted ``sim`` node).
    """

    def __init__(self, boundary: Ros2ControlBoundary, system: SimulatedRos2ControlSystem | None = None) -> None:
        self.boundary, self.system = boundary, system
        self.gate = CommandGate()
        #: the system's events not yet taken (:meth:`drain_events`)
        self.events: list[Event] = []

    def native(self, state: BroadcastState) -> tuple[ActuatorSample, EncoderSample, ImuSample | None]:
        """One broadcast as the state estimator's samples (model order), through the boundary.

        Raises:
            BoundaryInputError: the boundary refuses it.
        """
        s = self.boundary.state(state.names, state.position, state.velocity, state.effort, state.stamp_s)
        imu = state.imu
        if imu is not None:
            imu = self.boundary.imu(state.imu_frame_id, imu.orientation_xyzw, imu.angular_velocity,
                                    imu.linear_acceleration, imu.stamp_s)
        return s.actuators, s.encoders, imu

    def controller_data(self, force_n: np.ndarray, q: np.ndarray | None, ready: bool,
                        stamp_s: float) -> dict[str, np.ndarray] | None:
        """The controller's forces [N] (model order, computed at ``q``) as each effort controller's
        data; None while the hand-over gate withholds them (``ready``: the controller's)."""
        if not self.gate.admit(ready, stamp_s):
            return None
        if self.gate.opened_at_s == stamp_s and self.system is not None:  # the switch, in-process
            self._switch()
        return self.boundary.commands(force_n, q)

    def _switch(self) -> None:
        """The hand-over's one STRICT switch on the owned system's controller manager (a direct
        call where the nodes call ``switch_controller``); a refusal is an ERROR event."""
        from kangaroo_wbc.components.ros2_control.hand_over import STRICT
        from kangaroo_wbc.components.samples import Level

        assert self.system is not None
        plan = self.system.plan
        ok, message = self.system.switch(plan.effort, plan.hold, STRICT)
        if not ok:
            self.events.append(Event(Level.ERROR, "controller_switch", f"switch to the effort controllers "
                                     f"refused: {message}"))

    def step_samples(self, act: ActuatorSample, enc: EncoderSample, imu: ImuSample | None,
                     encoder_offset: np.ndarray | None = None) -> tuple:
        """The simulator's samples (its order) through its broadcasters and the boundary."""
        assert self.system is not None
        return self.native(self.system.broadcast(act, enc, imu, encoder_offset))

    def command(self, force_n: np.ndarray, q: np.ndarray | None, ready: bool, stamp_s: float
                ) -> ActuatorCommand | None:
        """The controller's forces through the boundary and the simulated effort controllers: the
        simulator's command (its order, stamped ``stamp_s``), or None (withheld, or not complete)."""
        assert self.system is not None
        data = self.controller_data(force_n, q, ready, stamp_s)
        out = None
        for controller, values in (data or {}).items():
            cmd, events = self.system.on_command(controller, values, stamp_s)
            self.events += events
            out = cmd or out
        return out

    def drain_events(self) -> list[Event]:
        out, self.events = self.events, []
        return out


__all__ = ["Ros2ControlLink"]
