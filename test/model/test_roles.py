"""Unit tests of the role choices' building blocks (``kangaroo_wbc.model.roles``) on small bases."""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.model.roles import alternatives, greedy_span, motion_basis


def test_motion_basis_is_the_null_space():
    A = np.array([[1.0, -1.0, 0.0]])  # q0 = q1, q2 free
    N = motion_basis(A, 1e-9)
    assert N.shape == (3, 2)
    np.testing.assert_allclose(A @ N, 0.0, atol=1e-15)
    np.testing.assert_allclose(N.T @ N, np.eye(2), atol=1e-15)


def test_greedy_span_follows_the_order_and_skips_dependent_rows():
    N = motion_basis(np.array([[1.0, -1.0, 0.0]]), 1e-9)
    assert greedy_span(N, [0, 1, 2]) == [0, 2]  # row 1 moves with row 0: skipped
    assert greedy_span(N, [1, 0, 2]) == [1, 2]  # the order decides among valid choices
    assert greedy_span(N, [2]) == [2]  # order exhausted before the basis is spanned


def test_alternatives_are_the_other_valid_choices():
    N = motion_basis(np.array([[1.0, -1.0, 0.0]]), 1e-9)
    assert alternatives(N, [0, 2], [0, 1, 2]) == [1]
    N = motion_basis(np.array([[0.0, 0.0, 1.0]]), 1e-9)  # q0, q1 free, q2 fixed: no other choice
    assert alternatives(N, [0, 1], [0, 1, 2]) == []
