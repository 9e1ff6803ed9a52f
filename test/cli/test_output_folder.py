"""``--out`` never mixes two runs: a non-empty folder is refused unless ``--force``, which first
clears an earlier run's folder (and only such a folder)."""

from __future__ import annotations

import json

import pytest

from kangaroo_wbc.cli.common import MARKER, UsageError, prepare_output_folder
from test.cli.conftest import run_cli


def test_new_and_empty_folders_are_taken_and_marked(tmp_path):
    """Unit: a new folder (parents included) and an empty one become output folders."""
    for folder in (tmp_path / "a" / "b", tmp_path / "empty"):
        if folder.name == "empty":
            folder.mkdir()
        assert prepare_output_folder(folder, force=False) == folder
        assert [p.name for p in folder.iterdir()] == [MARKER]


def test_non_empty_folder_is_refused_without_force_and_left_as_it_was(tmp_path):
    """Unit: the earlier run's files stay untouched."""
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(UsageError, match="not empty.*--force"):
        prepare_output_folder(tmp_path, force=False)
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_force_clears_an_earlier_run(tmp_path):
    """Unit: with the marker, everything of the earlier run goes (files, the bag folder)."""
    prepare_output_folder(tmp_path, force=False)
    (tmp_path / "bag").mkdir()
    (tmp_path / "bag" / "bag_0.mcap").write_bytes(b"x")
    (tmp_path / "report.md").write_text("old")
    (tmp_path / "extra.csv").write_text("old")
    prepare_output_folder(tmp_path, force=True)
    assert [p.name for p in tmp_path.iterdir()] == [MARKER]


def test_force_clears_a_folder_written_before_the_marker_existed(tmp_path):
    """Unit: a report folder of the earlier layout (summary, report, figures, bag) is recognised."""
    for name in ("summary.json", "report.md", "com_zmp.png"):
        (tmp_path / name).write_text("old")
    (tmp_path / "bag").mkdir()
    prepare_output_folder(tmp_path, force=True)
    assert [p.name for p in tmp_path.iterdir()] == [MARKER]


@pytest.mark.parametrize("files", [["notes.txt"], ["summary.json", "thesis.tex"], ["report.md", "src/"]])
def test_force_never_clears_a_folder_it_did_not_write(tmp_path, files):
    """Unit: a folder without the marker holding anything but reports, figures, JSON and a bag."""
    for name in files:
        (tmp_path / name.rstrip("/")).mkdir() if name.endswith("/") else (tmp_path / name).write_text("mine")
    with pytest.raises(UsageError, match="--force clears only"):
        prepare_output_folder(tmp_path, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(n.rstrip("/") for n in files)


def _demo(out, *extra, cwd):
    return run_cli("demo", "--duration", "0.3", "--out", str(out), "--json", "--bag-decimation", "20", *extra,
                   cwd=cwd, timeout=300.0)


@pytest.mark.integration
def test_demo_twice_into_one_folder_needs_force_and_then_holds_the_second_run_only(tmp_path, workdir):
    """Integration: as ``make demo`` twice (it passes --force): the second run refuses without
    --force, leaving the first run intact, and with --force replaces every artefact, bag included."""
    from rosbags.rosbag2 import Reader

    out = tmp_path / "demo"
    first = _demo(out, cwd=workdir)
    assert first.returncode == 0, first.stderr
    first_summary = json.loads((out / "summary.json").read_text())
    refused = _demo(out, cwd=workdir)
    assert refused.returncode == 2 and "--force" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert json.loads((out / "summary.json").read_text()) == first_summary
    (out / "stale.png").write_bytes(b"from an older report layout")
    second = _demo(out, "--force", "--seed", "7", cwd=workdir)
    assert second.returncode == 0, second.stderr
    summary = json.loads(second.stdout.splitlines()[-1])
    assert not (out / "stale.png").exists()
    assert json.loads((out / "summary.json").read_text())["wall_time_s"] == summary["wall_time_s"]
    with Reader(out / "bag") as reader:
        assert reader.message_count == summary["bag_messages"]
