"""Batched SO(3) maps in numpy: exp, log and the Jacobian of the log (shape (K, 3) / (K, 3, 3)).

They evaluate all loop closures of a model in a few array operations instead of one pinocchio
call per loop; the tests compare them with ``pin.exp3``, ``pin.log3`` and ``pin.Jlog3``.

.. math::

    \\log(R) = \\frac{\\theta}{2 \\sin\\theta} (R - R^T)^\\vee, \\quad
    \\cos\\theta = \\tfrac12(\\operatorname{tr} R - 1)

    J_{\\log}(r) = I + \\tfrac12 [r]_\\times
       + \\Big(\\frac{1}{\\theta^2} - \\frac{1 + \\cos\\theta}{2\\theta\\sin\\theta}\\Big) [r]_\\times^2

(``J_log`` is the right Jacobian: ``log(R exp(d)) ≈ log(R) + J_log(log R) d``.) Small angles use
Taylor expansions below ``SMALL_ANGLE``.
"""

from __future__ import annotations

import math

import numpy as np

from kangaroo_wbc.model.compiled import compiled

SMALL_ANGLE = 1e-4


def skew_batch(w: np.ndarray) -> np.ndarray:
    """``[w_k]x`` for ``w`` of shape (K, 3) → (K, 3, 3)."""
    out = np.zeros(w.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -w[..., 2], w[..., 1]
    out[..., 1, 0], out[..., 1, 2] = w[..., 2], -w[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -w[..., 1], w[..., 0]
    return out


def log3_batch(R: np.ndarray) -> np.ndarray:
    """Rotation vectors of rotation matrices ``R`` (K, 3, 3) → (K, 3), angle in [0, pi)."""
    tr = np.trace(R, axis1=-2, axis2=-1)
    cos = np.clip(0.5 * (tr - 1.0), -1.0, 1.0)
    theta = np.arccos(cos)
    vee = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], -1)
    small = theta < SMALL_ANGLE
    sin = np.sin(theta)
    factor = np.where(small, 0.5 + theta**2 / 12.0, theta / (2.0 * np.where(small, 1.0, sin)))
    out = factor[..., None] * vee
    near_pi = theta > np.pi - 1e-6
    if np.any(near_pi):  # rare for loop closures; fall back to the symmetric-part formula
        for k in np.flatnonzero(near_pi):
            B = 0.5 * (R[k] + np.eye(3))
            axis = np.sqrt(np.clip(np.diag(B), 0.0, None))
            i = int(np.argmax(axis))
            axis = B[i] / max(axis[i], 1e-12)
            axis /= np.linalg.norm(axis)
            out[k] = theta[k] * axis * (np.sign(axis @ vee[k]) or 1.0)
    return out


def exp3_batch(r: np.ndarray) -> np.ndarray:
    """Rotation matrices of rotation vectors ``r`` (K, 3) → (K, 3, 3) (Rodrigues)."""
    theta = np.linalg.norm(r, axis=-1)
    small = theta < SMALL_ANGLE
    th = np.where(small, 1.0, theta)
    a = np.where(small, 1.0 - theta**2 / 6.0, np.sin(th) / th)
    b = np.where(small, 0.5 - theta**2 / 24.0, (1.0 - np.cos(th)) / th**2)
    S = skew_batch(r)
    return np.eye(3) + a[..., None, None] * S + b[..., None, None] * (S @ S)


def jlog3_batch(r: np.ndarray) -> np.ndarray:
    """Right Jacobian of the log map at rotation vectors ``r`` (K, 3) → (K, 3, 3)."""
    theta = np.linalg.norm(r, axis=-1)
    small = theta < SMALL_ANGLE
    th = np.where(small, 1.0, theta)
    c = np.where(small, 1.0 / 12.0 + theta**2 / 720.0,
                 1.0 / th**2 - (1.0 + np.cos(th)) / (2.0 * th * np.sin(th)))
    S = skew_batch(r)
    return np.eye(3) + 0.5 * S + c[..., None, None] * (S @ S)


def quaternion_xyzw_from_matrix(R: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(x, y, z, w)`` of a rotation matrix, with Eigen's choice of sign.

    The same numbers as ``pin.Quaternion(R).coeffs()`` (Eigen's algorithm: ``w = √(1 + tr R)/2``
    when ``tr R > 0``, else from the largest diagonal entry), without the call: pinocchio's
    ``Quaternion`` constructor copies a row-major (C-ordered) ``R`` into a temporary it never
    frees (72 bytes per call, found by a soak), and every numpy product is C-ordered.
    """
    R = np.ascontiguousarray(R, dtype=float)  # one compiled signature
    if R.shape != (3, 3):
        raise ValueError(f"rotation matrix has shape {R.shape}, expected (3, 3)")
    q = np.empty(4)
    quaternion_xyzw_into(R, q)
    return q


@compiled
def quaternion_xyzw_into(R: np.ndarray, q: np.ndarray) -> None:
    """:func:`quaternion_xyzw_from_matrix` written into ``q`` (4,) (compiled; callable from kernels)."""
    t = R[0, 0] + R[1, 1] + R[2, 2]
    if t > 0.0:
        s = math.sqrt(t + 1.0)
        q[3] = 0.5 * s
        s = 0.5 / s
        q[0] = (R[2, 1] - R[1, 2]) * s
        q[1] = (R[0, 2] - R[2, 0]) * s
        q[2] = (R[1, 0] - R[0, 1]) * s
        return
    i = 0
    if R[1, 1] > R[0, 0]:
        i = 1
    if R[2, 2] > R[i, i]:
        i = 2
    j, k = (i + 1) % 3, (i + 2) % 3
    s = math.sqrt(R[i, i] - R[j, j] - R[k, k] + 1.0)
    q[i] = 0.5 * s
    s = 0.5 / s
    q[3] = (R[k, j] - R[j, k]) * s
    q[j] = (R[j, i] + R[i, j]) * s
    q[k] = (R[k, i] + R[i, k]) * s
