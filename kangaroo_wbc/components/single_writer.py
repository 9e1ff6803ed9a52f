"""One writer per command topic: while a command topic has two writers, neither is applied (no ROS).

A command topic (``actuators/command``, an effort controller's ``commands``) has one writer, the
controller. The ``frame_id`` tag names the controller, but any process on the network can copy it:
the tag stops a *mistaken* second source (another tool, a test publisher left running), not one that
imitates the controller. What the tag cannot show, the graph can: the publishers of the topic.
:class:`SingleWriterGuard` is told, with every command message, how many publishers the latest
graph check found (the adapter's ``writer_count``); while there are more than one, every message is
refused: neither the controller's nor the intruder's command is applied, the last valid command
stays until the receiver's watchdog expires and the drives damp (the watchdog's safe state). When
the extra writer is gone, the remaining one's commands are applied again. ``docs/safety.md`` says
what the tag, this guard and SROS2 each prevent.
"""

from __future__ import annotations

from collections.abc import Sequence

from kangaroo_wbc.components.samples import Level, Status


class SingleWriterGuard:
    """Writers of one command topic (module docstring).

    Args:
        topic: the topic's name (messages and statuses).
        name: the status's name.
    """

    def __init__(self, topic: str, name: str = "command writers") -> None:
        self.topic, self.name = topic, name
        self.writers = 0  # publishers at the last message
        self.others: list[str] = []
        #: the most writers seen at once, and the messages refused since the start
        self.writers_max = 0
        self.refused = 0

    def admit(self, writers: int, others: Sequence[str] = ()) -> str | None:
        """A command message while the graph shows ``writers`` publishers (``others``: the ones not
        expected): None if it may be applied, else why not."""
        self.writers, self.others = int(writers), list(others)
        self.writers_max = max(self.writers_max, self.writers)
        if self.writers <= 1:
            return None
        self.refused += 1
        named = f" (other publishers than the command source: {', '.join(self.others)})" if self.others else ""
        return f"{self.writers} writers on {self.topic}{named}: applying neither (the watchdog damps)"

    def status(self) -> Status:
        """``command writers``: ERROR while more than one writer is seen."""
        values = {"topic": self.topic, "writers": self.writers, "writers_max": self.writers_max,
                  "refused": self.refused, "others": ", ".join(self.others) or "none"}
        if self.writers > 1:
            return Status(self.name, Level.ERROR, f"{self.writers} writers on {self.topic}"
                          f"{' (' + ', '.join(self.others) + ')' if self.others else ''}: commands refused, "
                          "the watchdog damps", values)
        return Status(self.name, Level.OK, f"one writer on {self.topic}" if self.writers else
                      f"no writer on {self.topic} seen", values)


__all__ = ["SingleWriterGuard"]
