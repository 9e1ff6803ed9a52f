"""``--out`` never mixes two runs: a non-empty folder is refused unless ``--force``, which first
removes an earlier run's artefacts, and only when every entry of the folder is listed in the
manifest that run wrote."""

from __future__ import annotations

import json

import pytest

from kangaroo_wbc_tools.cli.common import (
    MANIFEST,
    UsageError,
    prepare_output_folder,
    seal_output_folder,
)
from test.cli.conftest import run_cli


def _write(folder, names) -> None:
    """Files (``a/b.txt``) and folders (``a/``) under ``folder``."""
    for name in names:
        path = folder / name.rstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir() if name.endswith("/") else path.write_text("x")


def _run_into(folder, names) -> None:
    """An earlier run: the folder taken, ``names`` written, the manifest sealed."""
    prepare_output_folder(folder, force=False)
    _write(folder, names)
    assert seal_output_folder(folder)


def _tree(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_new_and_empty_folders_are_taken_with_an_empty_manifest(tmp_path):
    """Unit: a new folder (parents included) and an empty one become output folders."""
    for folder in (tmp_path / "a" / "b", tmp_path / "empty"):
        if folder.name == "empty":
            folder.mkdir()
        assert prepare_output_folder(folder, force=False) == folder
        assert [p.name for p in folder.iterdir()] == [MANIFEST]
        manifest = json.loads((folder / MANIFEST).read_text())
        assert manifest["entries"] == [] and manifest["complete"] is False


def test_sealing_lists_every_entry_once_and_only_for_the_run_that_took_the_folder(tmp_path):
    """Unit: the manifest lists files and folders at any depth; a second seal changes nothing; a
    folder this process did not take is never sealed."""
    _run_into(tmp_path / "out", ["report.md", "bag/", "bag/bag_0.mcap", "logs/sim.log"])
    manifest = json.loads((tmp_path / "out" / MANIFEST).read_text())
    assert manifest["complete"] is True
    assert manifest["entries"] == ["bag", "bag/bag_0.mcap", "logs", "logs/sim.log", "report.md"]
    assert not seal_output_folder(tmp_path / "out")
    other = tmp_path / "other"
    _write(other, ["notes.txt"])
    (other / MANIFEST).write_text(json.dumps({"complete": False, "entries": [], "run": "someone"}))
    assert not seal_output_folder(other) and not seal_output_folder(tmp_path / "missing")


def test_non_empty_folder_is_refused_without_force_and_left_as_it_was(tmp_path):
    """Unit: the earlier run's files stay untouched."""
    (tmp_path / "summary.json").write_text("{}")
    with pytest.raises(UsageError, match="not empty.*--force"):
        prepare_output_folder(tmp_path, force=False)
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_force_clears_an_earlier_run(tmp_path):
    """Unit: every entry listed: everything of the earlier run goes (files, the bag folder)."""
    _run_into(tmp_path, ["bag/bag_0.mcap", "report.md", "extra.csv"])
    prepare_output_folder(tmp_path, force=True)
    assert _tree(tmp_path) == [MANIFEST]


# (what the earlier run wrote, what a user added afterwards or None: no manifest at all, the entry named)
FOREIGN = [
    (None, ["summary.json", "notes.txt", "com_zmp.png", "bag/", "bag/bag_0.mcap"], "bag"),  # the case
    (None, ["summary.json", "report.md"], "report.md"),  # a report of an earlier layout: not provably ours
    (["report.md"], ["notes.txt"], "notes.txt"),
    (["report.md", "bag/bag_0.mcap"], ["bag/my_notes.txt"], "bag/my_notes.txt"),  # deep inside
    (["summary.json"], ["src/"], "src"),
]


@pytest.mark.parametrize(("ran", "added", "named"), FOREIGN, ids=[" ".join(f[1]) for f in FOREIGN])
def test_force_never_removes_what_the_earlier_run_did_not_write(tmp_path, ran, added, named):
    """Unit: an entry missing from the manifest (or no manifest) refuses --force, naming the entry;
    nothing is deleted."""
    if ran is not None:
        _run_into(tmp_path, ran)
    _write(tmp_path, added)
    before = _tree(tmp_path)
    with pytest.raises(UsageError, match="--force removes only") as info:
        prepare_output_folder(tmp_path, force=True)
    assert repr(str(tmp_path / named)) in str(info.value), str(info.value)
    assert _tree(tmp_path) == before


def test_force_refuses_the_folder_of_a_run_that_did_not_finish(tmp_path):
    """Unit: a run killed before it sealed its manifest (SIGKILL): what it wrote is not listed,
    --force refuses and says why."""
    prepare_output_folder(tmp_path, force=False)
    _write(tmp_path, ["report.md"])
    with pytest.raises(UsageError, match="did not finish"):
        prepare_output_folder(tmp_path, force=True)
    assert (tmp_path / "report.md").exists()


def test_force_from_the_command_line_names_the_foreign_file_and_deletes_nothing(tmp_path, workdir):
    """Integration: ``demo --out legacy --force`` on a folder holding a user's own summary.json,
    notes, figure and bag: exit 2 naming a file, one stderr line, before anything runs."""
    legacy = tmp_path / "legacy"
    _write(legacy, ["summary.json", "notes.txt", "figure.png", "bag/", "bag/bag_0.mcap"])
    before = _tree(legacy)
    proc = run_cli("demo", "--out", str(legacy), "--force", cwd=workdir, timeout=60.0)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "--force removes only" in proc.stderr and str(legacy / "bag") in proc.stderr
    assert _tree(legacy) == before


def _demo(out, *extra, cwd):
    return run_cli("demo", "--duration", "0.3", "--out", str(out), "--json", "--bag-decimation", "20", *extra,
                   cwd=cwd, timeout=300.0)


@pytest.mark.integration
def test_demo_twice_into_one_folder_needs_force_and_then_holds_the_second_run_only(tmp_path, workdir):
    """Integration: as ``make demo`` twice (it passes --force): the second run refuses without
    --force, leaving the first run intact, and with --force replaces every artefact, bag included
    (the first run's manifest lists them all)."""
    from rosbags.rosbag2 import Reader

    out = tmp_path / "demo"
    first = _demo(out, cwd=workdir)
    assert first.returncode == 0, first.stderr
    first_summary = json.loads((out / "summary.json").read_text())
    refused = _demo(out, cwd=workdir)
    assert refused.returncode == 2 and "--force" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert json.loads((out / "summary.json").read_text()) == first_summary
    second = _demo(out, "--force", "--seed", "7", cwd=workdir)
    assert second.returncode == 0, second.stderr
    summary = json.loads(second.stdout.splitlines()[-1])
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["complete"] and {"summary.json", "report.md", "bag"} <= set(manifest["entries"])
    assert json.loads((out / "summary.json").read_text())["wall_time_s"] == summary["wall_time_s"]
    with Reader(out / "bag") as reader:
        assert reader.message_count == summary["bag_messages"]
