"""LinkPoses against pinocchio's forward kinematics of a model built straight from the URDF."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import ConfigError, InputError
from kangaroo_wbc.model.link_poses import LinkPoses, urdf_joints
from kangaroo_wbc.robots.kangaroo.files import kangaroo_files
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo


@pytest.fixture(scope="module")
def setup():
    path = kangaroo_files()[0]
    text = path.read_text()
    clm = load_kangaroo(floating_base=False)
    return text, clm, pin.buildModelFromUrdf(str(path))


def _se3(t) -> pin.SE3:
    x, y, z, w = t.quaternion_xyzw
    return pin.SE3(pin.Quaternion(w, x, y, z).matrix(), t.translation)


def test_every_urdf_joint_once_and_poses_match_the_urdf_tree(setup) -> None:
    text, clm, oracle = setup
    poses = LinkPoses(text, clm.model, clm.joint_names)
    joints = urdf_joints(text)
    assert poses.n_moving + poses.n_fixed == len(joints)
    assert sorted(poses.links()) == sorted(child for *_, child in joints)
    rng = np.random.default_rng(3)
    positions = rng.uniform(-0.5, 0.5, len(clm.joint_names))
    q = pin.neutral(oracle)
    for name, value in zip(clm.joint_names, positions, strict=True):
        q[oracle.joints[oracle.getJointId(name)].idx_q] = value
    data = oracle.createData()
    pin.framesForwardKinematics(oracle, data, q)
    for t in poses.moving(positions) + poses.fixed():
        expected = data.oMf[oracle.getFrameId(t.parent)].actInv(data.oMf[oracle.getFrameId(t.child)])
        assert np.allclose(_se3(t).homogeneous, expected.homogeneous, atol=1e-12), t.child
        assert abs(np.linalg.norm(t.quaternion_xyzw) - 1.0) < 1e-12


def test_bad_input_is_an_error(setup) -> None:
    text, clm, _ = setup
    poses = LinkPoses(text, clm.model, clm.joint_names)
    with pytest.raises(InputError, match="expected 76"):
        poses.moving(np.zeros(3))
    with pytest.raises(InputError, match="non-finite"):
        poses.moving(np.full(len(clm.joint_names), np.nan))
    with pytest.raises(ConfigError, match="not in the model"):
        LinkPoses(text, clm.model, ["no_such_joint"])
