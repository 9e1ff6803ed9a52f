"""SDF input: loop joints become closures (``kangaroo_wbc.model.sdf``). Oracles: the package's own
Kangaroo written both ways (``urdf/kangaroo.sdf`` against ``urdf/kangaroo.urdf`` + its closure file) and
the circle intersection of a four-bar written as Gazebo users write SDF (``test/data/four_bar.sdf``).
Unit tests (no ROS, no simulator)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import ModelError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.checks import run_checks
from kangaroo_wbc_tools.cli import main

ROOT = Path(__file__).resolve().parents[2]
KANGAROO_SDF, KANGAROO_URDF = ROOT / "urdf" / "kangaroo.sdf", ROOT / "urdf" / "kangaroo.urdf"
KANGAROO_CLOSURES = ROOT / "urdf" / "kangaroo_closures.yaml"
FOUR_BAR = Path(__file__).resolve().parents[1] / "data" / "four_bar.sdf"
PLACEMENT_TOL = 1e-9  # [m], entrywise on rotations


def _link_poses(clm: ClosedLoopModel, q: np.ndarray, links: list[str]) -> np.ndarray:
    data = clm.model.createData()
    pin.framesForwardKinematics(clm.model, data, q)
    return np.array([data.oMf[clm.model.getFrameId(n, pin.FrameType.BODY)].homogeneous for n in links])


@pytest.fixture(scope="module")
def kangaroo_pair() -> tuple[ClosedLoopModel, ClosedLoopModel]:
    return (ClosedLoopModel.from_files(KANGAROO_SDF, None),
            ClosedLoopModel.from_files(KANGAROO_URDF, KANGAROO_CLOSURES))


def test_the_packages_sdf_reads_back_as_its_urdf_model(kangaroo_pair):
    sdf, urdf = kangaroo_pair
    assert sorted(sdf.actuated_joint_names) == sorted(urdf.actuated_joint_names)
    assert all(sdf.closure_file.actuated_why[n].startswith("SDF effort limit") for n in sdf.actuated_joint_names)
    a, b = sdf.info(), urdf.info()
    for key in ("n_dof", "n_actuated", "n_passive", "n_constraints", "locked_joints"):
        assert a[key] == b[key], key
    assert a["mass_kg"] == pytest.approx(b["mass_kg"], rel=1e-12)
    assert a["warnings"] == []


def test_kangaroo_sdf_closure_fk_places_every_link_as_the_urdf_model(kangaroo_pair):
    """The two files are written from one description, each rounded on its own (the URDF's rotations to
    about 5e-8): they agree to a few times their rounding."""
    sdf, urdf = kangaroo_pair
    tol = 10.0 * max(sdf.coordinate_rounding, urdf.coordinate_rounding)
    assert tol <= 1e-6
    links = [f.name for f in urdf.model.frames
             if f.type == pin.FrameType.BODY and sdf.model.existFrame(f.name, pin.FrameType.BODY)]
    assert len(links) > 50
    rng = np.random.default_rng(3)
    order = [sdf.actuated_joint_names.index(n) for n in urdf.actuated_joint_names]
    np.testing.assert_allclose(_link_poses(sdf, sdf.q_ref, links), _link_poses(urdf, urdf.q_ref, links), atol=tol)
    for _ in range(3):
        theta_u = urdf.q_ref[urdf.idx_q_a] + rng.uniform(-0.004, 0.004, urdf.n_a)  # [m] screw strokes
        theta_s = np.empty(sdf.n_a)
        theta_s[order] = theta_u
        q_u, _ = urdf.closure_fk(theta_u, urdf.q_ref)
        q_s, _ = sdf.closure_fk(theta_s, sdf.q_ref)
        np.testing.assert_allclose(_link_poses(sdf, q_s, links), _link_poses(urdf, q_u, links), atol=tol)


def test_gazebo_style_four_bar_against_the_circle_intersection():
    """Ground 0.22 m, crank 0.1 m, coupler 0.25 m, rocker 0.2 m in the x-z plane, axes along -y: the loop
    joint sits where the coupler's and the rocker's circles meet (the branch drawn in the file)."""
    clm = ClosedLoopModel.from_files(FOUR_BAR, None)
    assert clm.actuated_joint_names == ["crank_joint"] and clm.n_u == clm.n_c == 2
    assert any("names no actuator" in w for w in clm.warnings)  # effort on every joint: a choice
    data = clm.model.createData()
    g, c, k, r = 0.22, 0.1, 0.25, 0.2
    for theta in (0.6, 1.0, 1.5):
        q, info = clm.closure_fk(np.array([theta - 1.0]), clm.q_ref)  # the file is drawn at 1 rad
        assert info.converged
        C = np.array([c * math.cos(theta), c * math.sin(theta)])
        B = np.array([g, 0.0])
        d = float(np.linalg.norm(B - C))
        a = (k * k - r * r + d * d) / (2 * d)
        u = (B - C) / d
        D = C + a * u + math.sqrt(k * k - a * a) * np.array([-u[1], u[0]])
        pin.framesForwardKinematics(clm.model, data, q)
        p = data.oMf[clm.model.getFrameId("coupler_rocker_a")].translation
        np.testing.assert_allclose([p[0], p[2]], D, atol=PLACEMENT_TOL)
        assert abs(p[1]) <= PLACEMENT_TOL
    assert run_checks(clm).ok


def test_roles_of_an_sdf_named_by_a_closure_file_or_the_command_line(tmp_path, capsys):
    yml = tmp_path / "roles.yaml"
    yml.write_text("format: kangaroo_wbc/closures/1\nactuated_joints: [rocker_joint]\nclosures: []\n")
    clm = ClosedLoopModel.from_files(FOUR_BAR, yml)
    assert clm.actuated_joint_names == ["rocker_joint"] and not clm.warnings
    assert main(["model", "info", str(FOUR_BAR), "--actuated", "coupler_joint", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert obj["actuated_joints"] == ["coupler_joint"] and obj["warnings"] == []


@pytest.mark.parametrize("edit, pattern", [
    (lambda t: t.replace('name="coupler_rocker" type="revolute"', 'name="coupler_rocker" type="screw"'),
     "joint 'coupler_rocker': type 'screw' is not supported"),
    (lambda t: t.replace("<parent>crank</parent>", "<parent>crnak</parent>"),
     "joint 'coupler_joint': <parent> 'crnak' is not a link"),
    (lambda t: t.replace('<model name="four_bar_sdf">', '<model name="four_bar_sdf"><model name="inner"/>'),
     "nested <model> elements are not supported"),
    (lambda t: t.replace("<sdf version=\"1.6\">", "<sdf version=\"1.6\"><world name=\"w\"/>").replace(
        '<model name="four_bar_sdf">', '<model name="a"/><model name="four_bar_sdf">'), "expected one <model>"),
    (lambda t: t.replace("<pose>0 0 0 0 0 0</pose>", "<pose>0 0 zero 0 0 0</pose>", 1), "expected 6 numbers"),
])
def test_bad_sdf_is_refused_with_the_element_named(tmp_path, edit, pattern):
    path = tmp_path / "bad.sdf"
    path.write_text(edit(FOUR_BAR.read_text()))
    with pytest.raises(ModelError, match=pattern):
        ClosedLoopModel.from_files(path, None)
