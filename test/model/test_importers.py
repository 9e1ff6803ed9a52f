"""Unit tests of the importers: extended-URDF joint substitution and MJCF equality/connect."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.checks import run_checks
from test.model.conftest import third_party_paths

MJCF_FOUR_BAR = """<mujoco model="four_bar_mjcf">
  <worldbody>
    <body name="ground">
      <geom type="box" size="0.25 0.05 0.02" mass="3"/>
      <body name="crank" pos="0 0 0">
        <joint name="crank_joint" type="hinge" axis="0 0 1" range="-3 3"/>
        <geom type="capsule" fromto="0 0 0 0 0.15 0" size="0.01" mass="0.3"/>
        <body name="coupler" pos="0 0.15 0">
          <joint name="coupler_joint" type="hinge" axis="0 0 1"/>
          <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.01" mass="0.6"/>
        </body>
      </body>
      <body name="rocker" pos="0.4 0 0">
        <joint name="rocker_joint" type="hinge" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 0 0.15 0" size="0.01" mass="0.5"/>
      </body>
    </body>
  </worldbody>
  <equality>
    <connect name="coupler_rocker" body1="coupler" body2="rocker" anchor="0.4 0 0"/>
  </equality>
  <actuator>
    <motor name="crank_motor" joint="crank_joint"/>
  </actuator>
</mujoco>
"""


def test_mjcf_connect_becomes_closure(tmp_path):
    """A parallelogram four-bar in MJCF: connect → 3D closure, rows reduced to the planar two."""
    path = tmp_path / "four_bar.xml"
    path.write_text(MJCF_FOUR_BAR)
    clm = ClosedLoopModel.from_files(path, None)
    info = clm.info()
    assert info["n_actuated"] == 1 and info["n_passive"] == 2
    assert info["n_constraints_declared"] == 3 and info["constraint_rank"] == 2
    assert clm.actuated_joint_names == ["crank_joint"]
    report = run_checks(clm)
    assert report.ok, report
    # parallelogram: the coupler stays parallel to the ground, i.e. coupler angle = -crank angle
    q, _ = clm.closure_fk(np.array([0.3]))
    names = list(clm.model.names)
    qc = q[clm.model.joints[names.index("coupler_joint")].idx_q]
    assert abs(qc + 0.3) < 1e-9


def test_extended_urdf_spherical_and_universal_substitution():
    urdf, yml = third_party_paths("digit_like_2legs")
    clm = ClosedLoopModel.from_files(urdf, yml)
    kinds = {clm.model.names[j]: clm.model.joints[j].shortname() for j in range(1, clm.model.njoints)}
    assert kinds["spherical_free_hip"] == "JointModelSpherical"
    assert kinds["spherical_free_knee"] == "JointModelUniversal"
    assert clm.n_u == clm.n_c == 36 and clm.n_a == 12
    # the substitution keeps the geometry: frame placements at neutral are unchanged
    raw = pin.buildModelFromUrdf(str(urdf))
    d_raw = raw.createData()
    pin.framesForwardKinematics(raw, d_raw, pin.neutral(raw))
    pin.framesForwardKinematics(clm.model, clm.data, pin.neutral(clm.model))
    for name in ("closedloop1_A", "closedloop6_B", "foot_frame"):
        a = d_raw.oMf[raw.getFrameId(name)]
        b = clm.data.oMf[clm.model.getFrameId(name)]
        np.testing.assert_allclose(a.homogeneous, b.homogeneous, atol=1e-12)
