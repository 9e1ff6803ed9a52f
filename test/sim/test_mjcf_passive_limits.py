"""Unit tests: the committed MJCF carries the passive joints' URDF limits as MuJoCo joint ranges, and the
standing pose is inside every one of them with room for the controller's margin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kangaroo_wbc.control.wbc import WbcSettings

URDF_DIR = Path(__file__).resolve().parents[2] / "urdf"
#: a limit written as text with 9 decimals [rad]
TEXT_TOL = 1e-8


@pytest.fixture(scope="module")
def models():
    mujoco = pytest.importorskip("mujoco")
    from kangaroo_wbc.model import ClosedLoopModel

    paths = [URDF_DIR / n for n in ("kangaroo.urdf", "kangaroo_closures.yaml", "kangaroo.xml")]
    if not all(p.is_file() for p in paths):
        pytest.skip("urdf/kangaroo.* not generated")
    clm = ClosedLoopModel.from_files(paths[0], paths[1], floating_base=True)
    return clm, mujoco.MjModel.from_xml_path(str(paths[2])), mujoco


def test_every_limited_passive_joint_is_a_limited_mujoco_joint_with_the_urdf_range(models):
    clm, mj, mujoco = models
    limits = clm.passive_joint_limits()
    assert len(limits.names) == clm.n_u  # every passive joint of the Kangaroo has a URDF limit
    for name, lo, hi in zip(limits.names, limits.lower, limits.upper):
        j = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, name)
        assert j >= 0, name
        assert mj.jnt_limited[j], name
        np.testing.assert_allclose(mj.jnt_range[j], [lo, hi], atol=TEXT_TOL, err_msg=name)


def test_the_standing_pose_is_inside_every_passive_range_with_the_controller_margin(models):
    """The closed standing configuration keeps every passive joint at least the controller's margin
    (WbcSettings.passive_limit_margin_rad) away from its range: the controller starts with no
    passive-limit row binding, and MuJoCo's limit never acts at rest."""
    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    clm, _, _ = models
    margin = WbcSettings().passive_limit_margin_rad
    limits = clm.passive_joint_limits(margin)
    theta_u = standing_configuration(clm)[limits.idx_q]
    inside = (theta_u >= limits.lower) & (theta_u <= limits.upper)
    assert inside.all(), [n for n, ok in zip(limits.names, inside) if not ok]
