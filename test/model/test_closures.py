"""Unit tests of the closure-file loaders and of every validation error path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kangaroo_wbc.errors import ConfigError, FrameNotFound, JointNotFound, ModelError
from kangaroo_wbc.model import ClosedLoopModel, load_closure_file
from kangaroo_wbc.model.closures import DIRECTIONS
from test.model.conftest import third_party_paths


def _write(tmp_path: Path, doc) -> Path:
    p = tmp_path / "closures.yaml"
    p.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return p


def _doc(mechanism_dir: Path, name: str) -> dict:
    return yaml.safe_load((mechanism_dir / f"{name}_closures.yaml").read_text())


def test_native_file_round_trip(mechanism_dir):
    cf = load_closure_file(mechanism_dir / "u2ups_closures.yaml")
    assert cf.actuated_joints == ["left_actuator", "right_actuator"]
    assert [c.directions for c in cf.closures] == [("x", "y", "z")] * 2


def test_extended_urdf_format_detected():
    urdf, yml = third_party_paths("5bar_linkage")
    cf = load_closure_file(yml)
    assert cf.actuated_joints == ["mot1", "mot2"]
    assert cf.closures[0].directions == ("x", "y", "z", "rx", "ry", "rz")


def test_redundant_rows_of_planar_6d_closure_are_removed():
    """A 6D closure on a planar loop keeps 3 independent rows (x, y, rz)."""
    urdf, yml = third_party_paths("5bar_linkage")
    clm = ClosedLoopModel.from_files(urdf, yml)
    assert clm.n_c_declared == 6
    assert clm.constraint_rank == 3
    assert sorted(clm.closures[0].rows.tolist()) == [0, 1, 5]
    assert clm.n_u == clm.n_c  # the idle half-joint of the cut is locked
    assert len(clm.locked_joint_names) == 1


@pytest.mark.parametrize("mutate, error, pattern", [
    (lambda d: d["closures"][0].update(frame_a="nope"), FrameNotFound, "unknown frame 'nope'.*Valid names"),
    (lambda d: d.update(actuated_joints=["slider_typo"]), JointNotFound, "Did you mean.*slider"),
    (lambda d: d["closures"][0].update(directions=["x", "w"]), ConfigError, r"unknown direction.*\['w'\]"),
    (lambda d: d["closures"][0].update(directions=["x"]), ModelError,
     "not square.*1 independent constraint rows vs 2 passive joints.*rrpr: 1 independent rows of 1 declared"),
    (lambda d: d.pop("actuated_joints"), ConfigError, "'actuated_joints': missing"),
    (lambda d: d["closures"][0].pop("frame_u"), ConfigError, r"closures\[0\]\.frame_u': missing"),
    (lambda d: d.update(format="other/2"), ConfigError, "unsupported format"),
    (lambda d: d.update(actuated_joints=["slider", "slider"]), ModelError, "duplicated"),
    (lambda d: d.update(actuated_joints=[]), ModelError, "not square"),
    (lambda d: d.update(absolute_encoders=["ghost"]), JointNotFound, "absolute_encoders.*ghost"),
])
def test_validation_errors_name_file_key_and_valid_values(tmp_path, mechanism_dir, mutate, error, pattern):
    doc = _doc(mechanism_dir, "rrpr")
    mutate(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(error, match=pattern) as info:
        ClosedLoopModel.from_files(mechanism_dir / "rrpr.urdf", path)
    if error is not ModelError or "not square" in pattern:
        assert str(path) in str(info.value)


def test_malformed_yaml_names_the_file(tmp_path, mechanism_dir):
    path = _write(tmp_path, "closures: [unclosed\n")
    with pytest.raises(ConfigError, match=f"{path}.*not valid YAML"):
        load_closure_file(path)


def test_top_level_must_be_mapping(tmp_path):
    with pytest.raises(ConfigError, match="mapping at the top level"):
        load_closure_file(_write(tmp_path, "- a\n- b\n"))


def test_missing_files(tmp_path, mechanism_dir):
    with pytest.raises(ConfigError, match="not found"):
        load_closure_file(tmp_path / "absent.yaml")
    with pytest.raises(ModelError, match="URDF file not found"):
        ClosedLoopModel.from_files(tmp_path / "absent.urdf", mechanism_dir / "rrpr_closures.yaml")


def test_extended_format_errors(tmp_path):
    with pytest.raises(ConfigError, match="'type'.*one per closed_loop"):
        load_closure_file(_write(tmp_path, {"closed_loop": [["a", "b"]], "type": ["6d", "3d"], "name_mot": []}))
    with pytest.raises(ConfigError, match=r"type\[0\].*expected one of \['3d', '6d', 'fixed', 'weld'\]"):
        load_closure_file(_write(tmp_path, {"closed_loop": [["a", "b"]], "type": ["4d"], "name_mot": []}))
    with pytest.raises(ConfigError, match="name_mot"):
        load_closure_file(_write(tmp_path, {"closed_loop": [["a", "b"]], "type": ["6d"]}))


def test_extended_format_closure_types(tmp_path):
    """``3d`` constrains positions; ``6d`` and ``FIXED`` (a weld, any case) the full placement."""
    doc = {"closed_loop": [["a", "b"]] * 4, "type": ["3D", "6d", "FIXED", "fixed"], "name_mot": []}
    cf = load_closure_file(_write(tmp_path, doc))
    assert [c.directions for c in cf.closures] == [DIRECTIONS[:3]] + [DIRECTIONS] * 3
