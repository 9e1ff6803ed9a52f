"""Unit tests of the block LU of J_lu (kangaroo_wbc.model.block_lu) against dense solves."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest


def test_block_structure_of_the_kangaroo_and_solves_equal_dense() -> None:
    from kangaroo_wbc.model.block_lu import BlockLU, block_structure
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm = load_kangaroo(floating_base=True)
    rng = np.random.default_rng(8)
    q = pin.integrate(clm.model, clm.q_ref, 0.05 * rng.standard_normal(clm.model.nv))
    J_lu = clm.error_and_jacobian(q)[1][:, clm.idx_v_u]
    blocks = block_structure(np.abs(J_lu) > 0)
    # hip yaw (2), hip pitch-roll (8), knee and ankle coupled (22), per leg
    assert sorted(len(r) for r, _ in blocks) == [2, 2, 8, 8, 22, 22]
    lu = BlockLU(blocks, J_lu.shape[0])
    assert lu.factor(J_lu)
    B = rng.standard_normal((J_lu.shape[0], 13))
    np.testing.assert_allclose(lu.solve(B), np.linalg.solve(J_lu, B), rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        lu.solve(B, transpose=True), np.linalg.solve(J_lu.T, B), rtol=0, atol=1e-9
    )
    np.testing.assert_allclose(
        lu.solve(B[:, 0]), np.linalg.solve(J_lu, B[:, 0]), rtol=0, atol=1e-9
    )


def test_pivoting_singular_and_coupled_cases() -> None:
    from kangaroo_wbc.model.block_lu import BlockLU, block_structure

    A = np.array([[0.0, 2.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 3.0]])  # needs a row swap
    blocks = block_structure(A != 0)
    assert len(blocks) == 2
    lu = BlockLU(blocks, 3)
    assert lu.factor(A)
    b = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(lu.solve(b), np.linalg.solve(A, b), atol=1e-14)
    np.testing.assert_allclose(lu.solve(b, transpose=True), np.linalg.solve(A.T, b), atol=1e-14)
    S = A.copy()
    S[2, 2] = 0.0
    assert not lu.factor(S)
    # read in place from a column slice of a wider matrix: the factors of the contiguous copy
    wide = np.hstack([A, np.full((3, 2), 7.0)])
    assert lu.factor(A)
    LU, piv = lu.LU.copy(), lu.piv.copy()
    assert lu.factor(wide[:, :3])
    np.testing.assert_array_equal(lu.LU, LU)
    np.testing.assert_array_equal(lu.piv, piv)
    for bad in (np.inf, np.nan):  # non-finite entries: no factorisation
        B = A.copy()
        B[1, 0] = bad
        assert not lu.factor(B) and not lu.ok
    with pytest.raises(RuntimeError):
        lu.solve(b)
    assert (
        block_structure(np.array([[1, 1], [0, 0]], dtype=bool)) is None
    )  # a component is not square


def test_pivot_ratios_per_block_match_the_dense_factors() -> None:
    """``pivot_ratios`` is ``min |u_kk| / max |u_kk|`` of each block's LU (as scipy's getrf)."""
    from scipy.linalg import lu

    from kangaroo_wbc.model.block_lu import BlockLU, block_structure

    near = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-6]])  # almost singular 2 x 2 block
    well = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    A = np.zeros((5, 5))
    A[:2, :2], A[2:, 2:] = near, well
    blocks = block_structure(A != 0)
    blu = BlockLU(blocks, 5)
    assert blu.factor(A)
    ratios = blu.pivot_ratios()
    for b, (rows, cols) in enumerate(blocks):
        u = np.abs(np.diag(lu(A[np.ix_(rows, cols)])[2]))
        assert ratios[b] == pytest.approx(u.min() / u.max(), rel=1e-12)
    assert min(ratios) < 1e-5 < max(ratios)
    worst, block = blu.worst_pivot()  # the per-tick check's one call: the smallest ratio and its block
    assert block == int(np.argmin(ratios)) and worst == ratios[block]
    A[:2, :2] = 2.0 * np.eye(2)  # now the second block is the worse one
    assert blu.factor(A)
    assert blu.worst_pivot() == (pytest.approx(min(blu.pivot_ratios())), 1)


def test_factor_and_map_gives_the_mapping_jacobian_from_the_closure_jacobian() -> None:
    """The fused pass reads J_lu and J_la out of J_l in place: J_m = -J_lu^{-1} J_la equals the
    dense solve, lands in T's passive rows, and the factors serve later solves; a singular block or
    a NaN is refused with T left untouched."""
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm = load_kangaroo(floating_base=True)
    rng = np.random.default_rng(3)
    q = pin.integrate(clm.model, clm.q_ref, 0.05 * rng.standard_normal(clm.model.nv))
    J_l = np.ascontiguousarray(clm.error_and_jacobian(q)[1])
    J_lu, J_la = J_l[:, clm.idx_v_u], J_l[:, clm.idx_v_a]
    lu = clm.jlu_block_lu()
    T = np.zeros((clm.model.nv, 18))
    J_m = lu.factor_and_map(J_l, clm.idx_v_u, clm.idx_v_a, T, 6)
    expected = -np.linalg.solve(J_lu, J_la)
    np.testing.assert_allclose(J_m, expected, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(T[clm.idx_v_u, 6:], J_m)
    assert not T[clm.idx_v_a].any() and not T[:, :6].any()
    b = rng.standard_normal(J_lu.shape[0])
    np.testing.assert_allclose(lu.solve(b), np.linalg.solve(J_lu, b), rtol=0, atol=1e-9)
    before = T.copy()
    singular = J_l.copy()
    singular[:, clm.idx_v_u[0]] = 0.0  # a passive joint that no loop sees
    assert lu.factor_and_map(singular, clm.idx_v_u, clm.idx_v_a, T, 6) is None and not lu.ok
    nan = J_l.copy()
    i, j = np.argwhere(J_lu != 0.0)[len(b)]  # an entry inside a block
    nan[i, clm.idx_v_u[j]] = np.nan
    assert lu.factor_and_map(nan, clm.idx_v_u, clm.idx_v_a, T, 6) is None
    np.testing.assert_array_equal(T, before)


def test_project_through_equals_the_dense_mapping_jacobian() -> None:
    """``project_through``: ``(G_a + G_u J_m)^T`` and ``g_a + J_m^T g_u`` with ``J_m = -J_lu^{-1} J_la``."""
    from kangaroo_wbc.model.block_lu import BlockLU, block_structure
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    clm = load_kangaroo(floating_base=True)
    rng = np.random.default_rng(11)
    q = pin.integrate(clm.model, clm.q_ref, 0.05 * rng.standard_normal(clm.model.nv))
    J_l = clm.error_and_jacobian(q)[1]
    J_lu, J_la = J_l[:, clm.idx_v_u], J_l[:, clm.idx_v_a]
    lu = BlockLU(block_structure(np.abs(J_lu) > 0), J_lu.shape[0])
    assert lu.factor(J_lu)
    J_m = -np.linalg.solve(J_lu, J_la)
    G, g = rng.standard_normal((12, clm.model.nv)), rng.standard_normal(clm.model.nv)
    idx_u, idx_a = (np.asarray(i, dtype=np.int64) for i in (clm.idx_v_u, clm.idx_v_a))
    GT_a, g_a = np.full((clm.n_a, 12), np.nan), np.full(clm.n_a, np.nan)
    both = np.hstack([J_lu, J_la])  # J_la as its users pass it: a column slice
    lu.project_through(G, g, idx_u, idx_a, both[:, J_lu.shape[1]:], GT_a, g_a)
    np.testing.assert_allclose(GT_a, (G[:, clm.idx_v_a] + G[:, clm.idx_v_u] @ J_m).T, rtol=0, atol=1e-9)
    np.testing.assert_allclose(g_a, g[clm.idx_v_a] + J_m.T @ g[clm.idx_v_u], rtol=0, atol=1e-9)
    assert not lu.factor(np.zeros_like(J_lu))
    with pytest.raises(RuntimeError, match="no valid factorisation"):
        lu.project_through(G, g, idx_u, idx_a, J_la, GT_a, g_a)
