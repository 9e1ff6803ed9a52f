"""Progress display on stderr, built on tqdm: a live bar on a terminal, at most one plain line every
:data:`LINE_INTERVAL_S` otherwise, or nothing.

Loops take a display as a parameter (``progress(iterable, total=, desc=)`` or ``progress.bar(...)``);
the command line builds one (:class:`Progress`) and hands it to the library, so that the library
never imports the CLI.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")

#: Without a terminal on stderr: at most one progress line per this many seconds.
LINE_INTERVAL_S = 5.0
#: On a terminal: the bar's refresh period [s].
BAR_INTERVAL_S = 0.2


class _LineStream:
    """tqdm's output when stderr is no terminal: each refresh becomes one plain line (no ``\\r``)."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        for part in re.split(r"[\r\n]", text):
            part = part.strip()
            if part:
                self.stream.write(part + "\n")

    def flush(self) -> None:
        self.stream.flush()


class _NoBar:
    n = 0.0

    def update(self, n: float = 1) -> None:
        self.n += n

    def close(self) -> None:
        pass


class Progress:
    """Progress display on stderr, built on tqdm.

    ``mode``: ``"bar"`` (a live bar, for a terminal), ``"lines"`` (one line at most every
    :data:`LINE_INTERVAL_S`) or ``"off"``. Call it like ``tqdm`` on an iterable
    (``progress(items, total=, desc=)``, the protocol the pipeline's loops take), or use
    :meth:`bar` for a quantity updated by hand (``bar.update(delta)``, ``bar.close()``).
    """

    def __init__(self, mode: str = "off", stream=None) -> None:
        if mode not in ("bar", "lines", "off"):
            raise ValueError(f"mode must be bar, lines or off, got {mode!r}")
        self.mode = mode
        self.stream = stream if stream is not None else sys.stderr

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Progress:
        """The mode ``--progress`` and ``--json`` ask for, given whether stderr is a terminal."""
        choice = getattr(args, "progress", "auto")
        if choice == "off" or (choice == "auto" and getattr(args, "json", False)):
            return cls("off")
        try:
            tty = sys.stderr.isatty()
        except (AttributeError, ValueError):
            tty = False
        return cls("bar" if tty else "lines")

    def _tqdm(self, iterable, total, desc: str, unit: str, numbers: str):
        from tqdm import tqdm

        class _Bar(tqdm):
            monitor_interval = 0  # no monitor thread

        if self.mode == "bar":
            return _Bar(iterable, total=total, desc=desc, unit=unit, file=self.stream, mininterval=BAR_INTERVAL_S,
                        dynamic_ncols=True, leave=True,
                        bar_format="{l_bar}{bar}| " + numbers + " [{elapsed}<{remaining}]")
        return _Bar(iterable, total=total, desc=desc, unit=unit, file=_LineStream(self.stream),
                    mininterval=LINE_INTERVAL_S, maxinterval=float("inf"), ascii=True, leave=True,
                    bar_format="{desc}: {percentage:3.0f}% " + numbers + " [{elapsed}<{remaining}]")

    def __call__(self, iterable: Iterable[T], total: int | None = None, desc: str = "") -> Iterable[T]:
        if self.mode == "off":
            return iterable
        return self._tqdm(iterable, total, desc, "it", "{n_fmt}/{total_fmt}")

    def count(self, iterable: Iterable[T], desc: str = "", unit: str = "it") -> Iterable[T]:
        """``iterable`` counted as it goes, its length unknown (``writing bag: 12000 messages``)."""
        if self.mode == "off":
            return iterable
        from tqdm import tqdm

        class _Counter(tqdm):
            monitor_interval = 0  # no monitor thread

        lines = self.mode == "lines"
        return _Counter(iterable, desc=desc, unit=unit, file=_LineStream(self.stream) if lines else self.stream,
                        mininterval=LINE_INTERVAL_S if lines else BAR_INTERVAL_S,
                        maxinterval=float("inf") if lines else 10.0, ascii=lines, leave=True,
                        bar_format="{desc}: {n_fmt} " + unit + " [{elapsed}]")

    def note(self, text: str) -> None:
        """One line (``writing figures``) unless the display is off."""
        if self.mode != "off":
            print(text, file=self.stream, flush=True)

    def bar(self, total: float, desc: str = "", unit: str = "s"):
        """A bar over ``total`` (e.g. seconds) advanced with ``update(delta)``; ``close()`` at the end."""
        if self.mode == "off":
            return _NoBar()
        numbers = "{n_fmt}/{total_fmt} {unit}" if isinstance(total, int) else "{n:.1f}/{total:.1f} {unit}"
        return self._tqdm(None, total, desc, unit, numbers)
