"""Reading a user's model files safely: text checks, a dependency parser's own output captured, and
parsers that could crash run in a child process.

A model file comes from anywhere; whatever it holds, loading it ends in a model or in one
:class:`~kangaroo_wbc.errors.ModelError` / :class:`~kangaroo_wbc.errors.ConfigError` whose message
names the file and says what is wrong:

* :func:`read_text`: a missing path, a folder, unreadable or binary content (not UTF-8 text) is an
  error naming the file and the byte offset, never a ``UnicodeDecodeError``.
* :func:`captured_output`: what a C++ parser prints on the process's stdout/stderr (urdfdom's
  ``Error: ... at line N in model.cpp``) is captured at the file-descriptor level and handed back,
  so that the error message carries it (:func:`parser_messages`) instead of lines printed before
  ours.
* :func:`compile_mjcf`: MuJoCo's compiler runs in a child Python process that writes the compiled
  model (MJB); a crash there (a signal) or a hang is an error of the file, never a signal exit of
  the caller.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kangaroo_wbc.errors import ModelError

#: How long the child compiling an MJCF file may run [s].
MJCF_COMPILE_TIMEOUT_S = 120.0


def read_text(path: str | Path, what: str, error: type[Exception] = ModelError) -> str:
    """The text of a UTF-8 file (``what``: "URDF", "closure file", ... for the messages).

    Raises:
        ``error``: no such file, a folder, unreadable, or not UTF-8 text (the first bad byte's offset).
    """
    p = Path(path)
    if not p.exists():
        raise error(f"{p}: {what} not found")
    if not p.is_file():
        raise error(f"{p}: {what} is not a file")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise error(f"{p}: cannot read the {what}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{p}: the {what} is not UTF-8 text (binary content at byte {exc.start})") from None
    if "\x00" in text:
        raise error(f"{p}: the {what} is not text (a NUL byte at offset {text.index(chr(0))})")
    return text


@dataclass
class CapturedOutput:
    """What was written on the process's stdout and stderr inside :func:`captured_output`."""

    text: str = ""


@contextmanager
def captured_output() -> Iterator[CapturedOutput]:
    """Capture file descriptors 1 and 2 (C/C++ code's ``printf``/``std::cerr`` included) inside the
    block; the text is in the yielded object after it."""
    out = CapturedOutput()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, ValueError):
            pass
    saved = []
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        try:
            for fd in (1, 2):
                saved.append((fd, os.dup(fd)))
                os.dup2(tmp.fileno(), fd)
        except OSError:  # no such descriptor (an embedding application): capture nothing
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)
            saved = []
        try:
            yield out
        finally:
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)
            tmp.seek(0)
            out.text = tmp.read().decode("utf-8", errors="replace")


#: urdfdom's location suffix (``at line 607 in /…/joint.cpp``) and its ``Error:``/``Warning:`` prefixes.
_LOCATION = re.compile(r"^\s*at line \d+ in \S+\s*$")
_PREFIX = re.compile(r"^\s*(Error|Warning|Info|Debug):\s*")


def parser_messages(text: str) -> list[str]:
    """The messages of a parser's captured output, one per entry, without source-file locations."""
    lines = []
    for line in text.splitlines():
        if not line.strip() or _LOCATION.match(line):
            continue
        lines.append(" ".join(_PREFIX.sub("", line).split()))
    return list(dict.fromkeys(lines))


_MJCF_CHILD = """
import sys
try:
    import mujoco
    model = mujoco.MjModel.from_xml_path(sys.argv[1])
except Exception as exc:
    sys.stderr.write(" ".join(str(exc).split()))
    sys.exit(3)
mujoco.mj_saveModel(model, sys.argv[2], None)
"""


def compile_mjcf(path: str | Path, timeout_s: float = MJCF_COMPILE_TIMEOUT_S) -> Any:
    """``mujoco.MjModel`` of an MJCF file, compiled by MuJoCo in a child process (guarded).

    Raises:
        ModelError: MuJoCo refuses the file (its message), the compiler crashed (the signal named) or
            did not finish in ``timeout_s``.
    """
    import mujoco

    p = Path(path)
    with tempfile.TemporaryDirectory(prefix="kwbc_mjcf_") as tmp:
        mjb = Path(tmp) / "model.mjb"
        try:
            proc = subprocess.run([sys.executable, "-c", _MJCF_CHILD, str(p.resolve()), str(mjb)],
                                  capture_output=True, text=True, timeout=timeout_s, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise ModelError(f"{p}: MuJoCo's MJCF compiler did not finish in {timeout_s:g} s") from None
        if proc.returncode < 0:
            try:
                name = signal.Signals(-proc.returncode).name
            except ValueError:
                name = f"signal {-proc.returncode}"
            raise ModelError(f"{p}: MuJoCo's MJCF compiler crashed on this file ({name}); the file was not loaded")
        if proc.returncode != 0 or not mjb.is_file():
            detail = " ".join(proc.stderr.split()) or f"exit code {proc.returncode}"
            raise ModelError(f"{p}: MuJoCo could not compile the MJCF: {detail}")
        try:
            return mujoco.MjModel.from_binary_path(str(mjb))
        except ValueError as exc:
            raise ModelError(f"{p}: MuJoCo could not read back the compiled model: {exc}") from None


__all__ = ["CapturedOutput", "MJCF_COMPILE_TIMEOUT_S", "captured_output", "compile_mjcf", "parser_messages",
           "read_text"]
