"""Unit tests of the parts the closed-linkage model is assembled from: the assembled structure
(:mod:`kangaroo_wbc.model.structure`), the constraint rows (:mod:`kangaroo_wbc.model.constraint_rows`)
and the closure FK solver (:mod:`kangaroo_wbc.model.closure_fk`)."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.errors import ModelError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.closure_fk import newton
from kangaroo_wbc.model.importers import load_model
from kangaroo_wbc.model.structure import ClosedLoopStructure, split_joints
from test.model.conftest import third_party_paths

#: Closure residual of a closed configuration [m, rad] (Newton to 1e-12, then one evaluation).
CLOSED_TOL = 1e-10


def _five_bar():
    """The planar five-bar: a 6D cut of which 3 rows are independent, one idle half-joint held."""
    return load_model(*third_party_paths("5bar_linkage"))


def test_the_structure_closes_the_reference_and_leaves_a_square_passive_block():
    loaded = _five_bar()
    s = ClosedLoopStructure(loaded.model, loaded.closure_file, q_ref=loaded.q0, rounding=loaded.rounding)
    e, J = s.rows.error_and_jacobian(s.q_ref)
    assert np.max(np.abs(e)) < CLOSED_TOL
    J_lu = J[:, s.joints.idx_v_u]
    assert J_lu.shape[0] == J_lu.shape[1] == s.rows.n_c == 3
    assert np.linalg.matrix_rank(J_lu) == 3
    assert s.n_c_declared == 6 and s.constraint_rank == 3
    # the held joint is in neither index set, and the sets cover every other joint once
    held_v = [loaded.model.joints[loaded.model.getJointId(n)].idx_v for n in s.locked_joint_names]
    covered = np.concatenate([s.joints.idx_v_a, s.joints.idx_v_u, np.array(held_v, dtype=int)])
    assert sorted(covered.tolist()) == list(range(loaded.model.nv))


def test_the_model_holds_what_the_structure_settled():
    urdf, yml = third_party_paths("5bar_linkage")
    clm = ClosedLoopModel.from_files(urdf, yml)
    loaded = _five_bar()
    s = ClosedLoopStructure(loaded.model, loaded.closure_file, q_ref=loaded.q0, rounding=loaded.rounding)
    np.testing.assert_array_equal(clm.q_ref, s.q_ref)
    np.testing.assert_array_equal(clm.idx_v_u, s.joints.idx_v_u)
    assert clm.locked_joint_names == s.locked_joint_names
    assert [c.rows.tolist() for c in clm.closures] == [c.rows.tolist() for c in s.rows.closures]


def test_all_declared_rows_inside_the_block_the_kept_ones_after_it():
    urdf, yml = third_party_paths("5bar_linkage")
    clm = ClosedLoopModel.from_files(urdf, yml)
    rows = clm.constraint_rows
    kept = [c.rows.tolist() for c in rows.closures]
    with pytest.raises(RuntimeError):
        with rows.all_declared():
            assert rows.n_c == clm.n_c_declared == 6
            assert rows.error_and_jacobian(clm.q_ref)[1].shape == (6, clm.model.nv)
            raise RuntimeError("leave the block by an exception")
    assert [c.rows.tolist() for c in rows.closures] == kept
    assert rows.n_c == clm.n_c == 3
    assert clm.constraint_jacobian(clm.q_ref).shape == (3, clm.model.nv)


def test_closure_fk_follows_the_kernel_rebuilt_by_assembly():
    """assemble() evaluates every declared row (a new kernel, then one for the kept rows again):
    closure FK keeps converging with the compiled chord iteration on the new kernel."""
    urdf, yml = third_party_paths("5bar_linkage")
    clm = ClosedLoopModel.from_files(urdf, yml)
    theta = clm.actuator_positions(clm.q_ref) + 0.05
    q_before, _ = clm.closure_fk(theta, q_guess=clm.q_ref)
    kernel = clm.kernel
    q_asm, info = clm.assemble(clm.q_ref)
    assert info.converged and clm.kernel is not kernel
    q_after, _ = clm.closure_fk(theta, q_guess=clm.q_ref)
    np.testing.assert_allclose(q_after, q_before, atol=1e-12)
    q = clm.q_ref.copy()
    q[clm.idx_q_a] = theta
    chord = clm.closure_fk_solver.chord(q, 1e-12, 50)
    assert chord is not None and chord[1].converged
    assert np.max(np.abs(clm.closure_error(chord[0]))) < CLOSED_TOL


def test_newton_solves_the_unknowns_it_is_given_only():
    urdf, yml = third_party_paths("5bar_linkage")
    clm = ClosedLoopModel.from_files(urdf, yml)
    q0 = clm.q_ref.copy()
    q0[clm.idx_q_a] += 0.05
    q, info = newton(clm.model, clm.constraint_rows.error_and_jacobian, q0, clm.idx_v_u, 50, 1e-12)
    assert info.converged and np.max(np.abs(clm.closure_error(q))) <= 1e-12
    np.testing.assert_array_equal(q[clm.idx_q_a], q0[clm.idx_q_a])  # the actuators are held


def test_split_joints_refuses_a_multi_dof_actuator():
    loaded = load_model(*third_party_paths("digit_like_2legs"))
    m = loaded.model
    ball = next(n for n in list(m.names)[1:] if m.joints[m.getJointId(n)].nv == 3)
    with pytest.raises(ModelError, match=f"actuated joint '{ball}' must be 1-DOF"):
        split_joints(m, list(m.names)[1:], [ball], [], False, "robot.yaml")
