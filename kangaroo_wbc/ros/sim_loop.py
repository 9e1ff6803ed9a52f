"""The ``sim`` node's simulation loop, in a thread of its own: its pacing against the wall clock and
the controller's commands (``docs/sim.md``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kangaroo_wbc.ros.publication import publication_thread

#: Realtime pacing: a loop late by up to this [s] catches up (simulated time keeps to the wall
#: clock on average); later than that it restarts its schedule (an overrun, in the diagnostics).
MAX_CATCH_UP_S = 0.02
#: Realtime: when the controller's last command arrived more than half the watchdog's timeout ago
#: (simulated time), the loop waits for the next one, up to this long [s, wall clock], rather than
#: simulate on without it: a controller process that the host starves for a moment (a busy
#: machine, a burst of DDS discovery when graph introspection starts a participant) does not trip
#: the watchdog; one that stays silent longer does, as before.
CONTROLLER_WAIT_S = 0.5


class SimLoop:
    """The loop of the simulated ``robot`` (a :class:`~kangaroo_wbc.components.simulated_robot.SimulatedRobot`)
    for ``host``, the node: its ``params`` (read each tick), ``throttled``, ``tick_count``,
    ``report_events(events)`` and ``publish_samples()`` (the current state out; returns the samples)."""

    def __init__(self, host: Any, robot: Any) -> None:
        self._host, self._robot = host, robot
        #: ``fn(*samples)`` called with each tick's samples (composed deployment)
        self.listeners: list[Callable[..., Any]] = []
        #: counts for the diagnostics (``max_gap_s`` is reset by the reader)
        self.stats = {"overruns": 0, "lockstep_timeouts": 0, "dropped_commands": 0, "max_gap_s": 0.0,
                      "controller_waits": 0}
        self.last_timeout = -float("inf")  # wall time of the last lockstep timeout
        #: lockstep: stamp of the latest published sample (a command answering it lets the loop step)
        self.awaited_stamp_s = 0.0
        self.running = True
        self._answered = threading.Event()
        self._last_arrival_s: float | None = None  # simulated time of the last command received
        self._arrived = threading.Event()  # a command arrived (realtime: the loop may wait for one)
        self._gave_up_waiting = False  # realtime: waited CONTROLLER_WAIT_S in vain since the last command

    def command_arrived(self, stamp_s: float) -> None:
        """A command answering the sample of ``stamp_s`` [s] reached the robot."""
        self._last_arrival_s, self._gave_up_waiting = self._robot.time, False
        self._arrived.set()
        self.answer(stamp_s)

    def answer(self, stamp_s: float) -> None:
        """Lockstep: a command stamped with the latest sample (or unstamped) lets the loop step."""
        if stamp_s <= 0.0 or stamp_s >= self.awaited_stamp_s - 1e-7:
            self._answered.set()

    def stop(self) -> None:
        """Ends the loop after the current tick (a lockstep wait returns at once)."""
        self.running = False
        self._answered.set()

    def run(self) -> None:
        """Until :meth:`stop`. Lockstep once the controller is ready: publish, wait for the answer, step.
        Otherwise (realtime, free-running, lockstep before ready) pipelined: MuJoCo steps in its
        worker thread while the in-process listeners (composed deployment) compute the next command
        from the samples just published, which drives the step after (the one-tick delay of separate
        processes); then paced to the wall clock."""
        host, robot, stats = self._host, self._robot, self.stats
        period = robot.period_s
        sender = publication_thread()  # this thread's messages leave where it waits (flush)
        if sender is not None:
            sender.defer_wakeups()
        flush = sender.flush if sender is not None else (lambda: None)
        next_t = last = time.perf_counter()
        samples = host.publish_samples()
        while self.running:
            p = host.params
            now = time.perf_counter()
            stats["max_gap_s"], last = max(stats["max_gap_s"], now - last), now
            if p.lockstep and robot.controller_ready:
                self._notify(samples)
                flush()
                if not self._answered.wait(p.lockstep_timeout_s):
                    stats["lockstep_timeouts"] += 1
                    self.last_timeout = time.monotonic()
                    host.throttled.warning("lockstep_timeout", f"lockstep: no command answered the sample of "
                                           f"t = {robot.time:.3f} s within {p.lockstep_timeout_s * 1e3:.0f} ms: "
                                           "stepping with the last one")
                host.report_events(robot.step())
                next_t = time.perf_counter()
            else:
                if p.realtime and not p.lockstep and not self.listeners and self._wait_for_controller():
                    next_t = time.perf_counter()  # the schedule restarts: no burst of steps after
                host.report_events(robot.start_step())
                try:
                    self._notify(samples)
                finally:
                    flush()
                    host.report_events(robot.finish_step())
                if p.realtime or p.lockstep:  # paced; a late tick is caught up by the next ones,
                    next_t += period         # later than MAX_CATCH_UP_S the schedule restarts from now
                    now = time.perf_counter()
                    flush()
                    if now < next_t:
                        time.sleep(next_t - now)
                    elif now - next_t > MAX_CATCH_UP_S:
                        stats["overruns"] += 1
                        next_t = now
            self.awaited_stamp_s = robot.time
            self._answered.clear()
            samples = host.publish_samples()
            host.tick_count += 1
            if not self.listeners:  # separate processes: the samples leave now (composed: with
                flush()             # the chain's messages, while MuJoCo steps)

    def _wait_for_controller(self) -> bool:
        """Realtime, controller ready, in its own process: while its last command is older than
        half the watchdog's timeout (simulated time), wait for the next one, up to
        :data:`CONTROLLER_WAIT_S` (wall clock) per silence. Returns True if it waited."""
        robot = self._robot
        if not robot.controller_ready or self._last_arrival_s is None or self._gave_up_waiting:
            return False
        limit = 0.5 * robot.config.watchdog_timeout_s
        if robot.time - self._last_arrival_s <= limit:
            return False
        self.stats["controller_waits"] += 1
        deadline = time.monotonic() + CONTROLLER_WAIT_S
        while self.running and robot.time - self._last_arrival_s > limit:
            left = deadline - time.monotonic()
            if left <= 0.0:
                self._gave_up_waiting = True  # the watchdog's turn
                break
            self._arrived.clear()
            if robot.time - self._last_arrival_s > limit:
                self._arrived.wait(min(left, 0.01))
        return True

    def _notify(self, samples: tuple) -> None:
        for fn in self.listeners:
            fn(*samples)


__all__ = ["SimLoop", "MAX_CATCH_UP_S", "CONTROLLER_WAIT_S"]
