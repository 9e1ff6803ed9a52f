"""Helpers shared by the CLI subcommands: JSON output, progress bars."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


def _default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    raise TypeError(f"not JSON serialisable: {type(obj)}")


def print_json(obj: dict) -> None:
    """Print ``obj`` as one JSON line (the last line of a measuring subcommand)."""
    print(json.dumps(obj, default=_default, sort_keys=False))


def add_json_flag(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")


def progress(iterable: Iterable[T], total: int | None = None, desc: str = "", enabled: bool = True) -> Iterator[T]:
    """A dependency-free progress bar on stderr (silent when stderr is not a terminal and disabled)."""
    items = list(iterable) if total is None else iterable
    n = len(items) if total is None else total  # type: ignore[arg-type]
    width = 30
    for i, item in enumerate(items):
        if enabled and n:
            done = int(width * (i + 1) / n)
            sys.stderr.write(f"\r{desc} [{'#' * done}{'.' * (width - done)}] {i + 1}/{n}")
            sys.stderr.flush()
        yield item
    if enabled and n:
        sys.stderr.write("\n")
        sys.stderr.flush()
