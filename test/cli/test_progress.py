"""The one progress display (tqdm): a bar on a terminal, sparse plain lines otherwise, nothing
with ``--json`` unless asked."""

from __future__ import annotations

import argparse
import io
import time

import pytest

from kangaroo_wbc import progress
from kangaroo_wbc.progress import Progress
from test.cli.conftest import run_cli


def test_lines_mode_writes_whole_lines_at_most_every_interval(monkeypatch):
    """Unit: 1.5 s of updates with a 0.5 s interval: a first and a last line and at most three
    between, each ending in a newline, no carriage return."""
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.5)
    stream = io.StringIO()
    t0 = time.monotonic()
    for _ in Progress("lines", stream)(range(150), total=150, desc="demo"):
        time.sleep(0.01)
    elapsed = time.monotonic() - t0
    text = stream.getvalue()
    lines = text.splitlines()
    assert "\r" not in text and text.endswith("\n")
    assert 2 <= len(lines) <= 2 + int(elapsed / 0.5) + 1, lines
    assert lines[0].startswith("demo:") and "150/150" in lines[-1]


def test_manual_bar_reports_the_quantity(monkeypatch):
    """Unit: a bar over seconds updated by hand ends at its total."""
    stream = io.StringIO()
    bar = Progress("lines", stream).bar(2.0, desc="graph", unit="s")
    for _ in range(4):
        bar.update(0.5)
    bar.close()
    assert "2.0/2.0 s" in stream.getvalue().splitlines()[-1]


def test_bar_mode_draws_a_live_bar():
    """Unit: on a terminal the bar redraws in place (carriage returns)."""
    stream = io.StringIO()
    for _ in Progress("bar", stream)(range(3), total=3, desc="x"):
        pass
    assert "\r" in stream.getvalue() and "3/3" in stream.getvalue()


def test_off_writes_nothing_and_keeps_the_iterable():
    items = [1, 2, 3]
    assert Progress("off")(items, total=3) is items
    bar = Progress("off").bar(1.0)
    bar.update(0.5)
    bar.close()


@pytest.mark.parametrize(("progress", "json_flag", "tty", "mode"), [
    ("auto", False, True, "bar"), ("auto", False, False, "lines"), ("auto", True, True, "off"),
    ("on", True, False, "lines"), ("on", True, True, "bar"), ("off", False, True, "off"),
])
def test_mode_follows_the_options_and_the_terminal(monkeypatch, progress, json_flag, tty, mode):
    monkeypatch.setattr("sys.stderr.isatty", lambda: tty, raising=False)
    args = argparse.Namespace(progress=progress, json=json_flag)
    assert Progress.from_args(args).mode == mode


@pytest.mark.integration
def test_sim_without_a_terminal_writes_a_few_plain_lines_and_nothing_with_json(workdir):
    """Integration: ``sim`` with stderr in a file (subprocess pipe): whole lines, no ``\\r``, a few
    hundred bytes; with ``--json`` an empty stderr."""
    plain = run_cli("sim", "--duration", "1", cwd=workdir, timeout=300.0)
    assert plain.returncode == 0, plain.stderr
    assert "\r" not in plain.stderr and 1 <= len(plain.stderr.splitlines()) <= 4, plain.stderr
    assert len(plain.stderr) < 1000
    quiet = run_cli("sim", "--duration", "0.5", "--json", cwd=workdir, timeout=300.0)
    assert quiet.returncode == 0 and quiet.stderr == ""
    asked = run_cli("sim", "--duration", "0.5", "--json", "--progress", "on", cwd=workdir, timeout=300.0)
    assert asked.returncode == 0 and "sim:" in asked.stderr and "\r" not in asked.stderr


def test_no_hand_written_progress_bars_remain():
    """Unit: no carriage-return writes in the package outside the progress helper."""
    from pathlib import Path

    import kangaroo_wbc

    root = Path(kangaroo_wbc.__file__).parent
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if p.name != "progress.py" and '"\\r' in p.read_text()]
    assert not offenders, offenders


def test_notes_and_counts_say_what_is_being_written(monkeypatch):
    """Unit: while results are written the display says so: a note line, and a count of the bag's
    messages (no total known) as whole lines without a terminal; nothing when off."""
    monkeypatch.setattr(progress, "LINE_INTERVAL_S", 0.0)
    stream = io.StringIO()
    shown = Progress("lines", stream)
    shown.note("writing figures and the report into out/")
    assert list(shown.count(iter(range(1234)), desc="writing bag", unit="messages")) == list(range(1234))
    lines = stream.getvalue().splitlines()
    assert lines[0] == "writing figures and the report into out/"
    assert lines[-1].startswith("writing bag: 1234 messages") and "\r" not in stream.getvalue()
    items = iter(range(3))
    assert Progress("off").count(items) is items
    off = io.StringIO()
    Progress("off", off).note("x")
    assert off.getvalue() == ""
