"""Bad model files through ``kangaroo-wbc model info|check``: every failure is exit 2 with one JSON error
line, the dependency parsers' own output captured into the message (unit tests: the CLI in-process,
file-descriptor output captured with ``capfd``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kangaroo_wbc.model.sources import captured_output, parser_messages
from kangaroo_wbc_tools.cli import main
from test.model import linkages

BINARY = bytes(range(256)) * 4


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("model_files")
    linkages.rssr(d)
    return d


def _run(capfd, *args: str) -> tuple[int, dict, str]:
    code = main(["model", *args, "--json"])
    out, err = capfd.readouterr()
    lines = out.strip().splitlines()
    assert len(lines) == 1, out  # nothing but the JSON line on stdout
    return code, json.loads(lines[0]), err


def _refused(capfd, *args: str) -> str:
    code, obj, err = _run(capfd, *args)
    assert code == 2 and obj["ok"] is False
    assert len(err.strip().splitlines()) == 1, err  # one line on stderr: ours
    return obj["error"]


def test_binary_closure_file(folder, tmp_path, capfd):
    yml = tmp_path / "closures.yaml"
    yml.write_bytes(BINARY)
    error = _refused(capfd, "check", str(folder / "rssr.urdf"), "--closures", str(yml))
    assert "closure file is not UTF-8 text" in error and str(yml) in error


def test_binary_reference_pose(folder, tmp_path, capfd):
    pose = tmp_path / "pose.yaml"
    pose.write_bytes(BINARY[128:])
    error = _refused(capfd, "info", str(folder / "rssr.urdf"), "--closures", str(folder / "rssr_closures.yaml"),
                     "--reference", str(pose))
    assert "reference pose file is not UTF-8 text" in error


@pytest.mark.parametrize("content, expected", [
    (BINARY, "not UTF-8 text"),
    (b"", "not well-formed XML"),
    (b'<robot name="r"><link name="a">', "not well-formed XML: no element found: line 1"),
    (b'<model name="r"/>', "root element is <model>"),
])
def test_unreadable_model_file(folder, tmp_path, capfd, content, expected):
    path = tmp_path / "robot.urdf"
    path.write_bytes(content)
    error = _refused(capfd, "info", str(path), "--closures", str(folder / "rssr_closures.yaml"))
    assert expected in error


def test_urdf_parser_output_is_in_the_message_not_printed(folder, tmp_path, capfd):
    """urdfdom prints ``Error: ... at line N in joint.cpp`` on stderr: it becomes the message."""
    text = (folder / "rssr.urdf").read_text()
    start = text.index("<limit")
    path = tmp_path / "no_limits.urdf"
    path.write_text(text[:start] + text[text.index("/>", start) + 2:])
    error = _refused(capfd, "check", str(path), "--closures", str(folder / "rssr_closures.yaml"))
    assert "pinocchio could not parse the URDF" in error and "does not specify limits" in error
    assert ".cpp" not in error


def test_a_folder_is_not_a_model(folder, capfd):
    closures = str(folder / "rssr_closures.yaml")
    assert "is a folder, not a file" in _refused(capfd, "info", str(folder), "--closures", closures)


def test_captured_output_takes_the_file_descriptors(capfd):
    with captured_output() as out:
        os.write(2, b"Error:   Joint [j] is broken\n         at line 7 in /src/joint.cpp\n")
        os.write(1, b"Warning: more\n")
    assert capfd.readouterr() == ("", "")
    assert parser_messages(out.text) == ["Joint [j] is broken", "more"]
