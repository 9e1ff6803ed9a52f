"""Unit test of the peer comparison's frame-placement agreement (no peer needed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin

from kangaroo_wbc_tools.bench.peers import frame_placement_difference

FOUR_BAR = Path(__file__).resolve().parents[1] / "data" / "four_bar.urdf"


def test_frame_placement_difference_is_the_largest_frame_displacement():
    model = pin.buildModelFromUrdf(str(FOUR_BAR))
    q = pin.neutral(model)
    assert max(frame_placement_difference(model, q, q)) < 1e-15
    # turning the crank by delta moves each frame on it by 2 r sin(delta / 2), r its distance to
    # the crank's axis, and turns it by delta; frames off the crank's subtree stay
    delta = 1e-3
    dq = np.zeros(model.nv)
    dq[model.joints[model.getJointId("crank_joint")].idx_v] = delta
    q2 = pin.integrate(model, q, dq)
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    crank = model.getJointId("crank_joint")
    moved = [f for f in range(model.nframes) if crank in model.supports[model.frames[f].parentJoint]]
    oMc = data.oMi[crank]
    J = pin.computeJointJacobian(model, data, q, crank)  # in the joint frame: its axis in the angular part
    axis = oMc.rotation @ J[3:, model.joints[crank].idx_v]
    radius = max(np.linalg.norm(np.cross(axis, data.oMf[f].translation - oMc.translation)) for f in moved)
    dp, dr = frame_placement_difference(model, q, q2)
    assert abs(dp - 2 * radius * np.sin(delta / 2)) < 1e-15
    assert abs(dr - delta) < 1e-12
    np.testing.assert_allclose(frame_placement_difference(model, q2, q), (dp, dr), rtol=1e-12)
