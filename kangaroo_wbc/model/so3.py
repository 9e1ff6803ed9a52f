"""SO(3) maps: exp, log and the Jacobian of the log, per matrix (compiled) and batched.

:func:`log3_into` / :func:`log3` and :func:`jlog3_into` are the package's one compiled SO(3) log
and its Jacobian, called by the closure kernels, the fused task kernels and the simulator;
:func:`log3_batch` and :func:`jlog3_batch` apply them to stacks (shape (K, 3) / (K, 3, 3)), and
:func:`exp3_batch` / :func:`skew_batch` evaluate all loop closures of a model in a few array
operations instead of one pinocchio call per loop. The tests compare them with ``pin.exp3``,
``pin.log3`` and ``pin.Jlog3``.

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


@compiled
def log3_into(R, w):
    """``w = log3(R)`` [rad] written into ``w`` (3,), the rotation vector ``θ a`` with ``θ`` in
    [0, π] as pinocchio's ``log3`` (tested against it, including near 0 and near π); returns ``θ``.

    The package's one implementation of the SO(3) log (compiled; callable from kernels). The angle
    comes from ``atan2(sin θ, cos θ)``, well conditioned at every angle (``acos`` is not near 0
    and π).
    """
    c = 0.5 * (R[0, 0] + R[1, 1] + R[2, 2] - 1.0)
    s0, s1, s2 = R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]  # 2 sin(θ) a
    sin_th = 0.5 * math.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    th = math.atan2(sin_th, c)
    if th < SMALL_ANGLE:  # series of θ / (2 sin θ)
        k = 0.5 * (1.0 + th * th / 6.0)
        w[0], w[1], w[2] = k * s0, k * s1, k * s2
    elif math.pi - th < 1e-3:
        # R = c I + sin(θ) [a]x + (1 - c) a aᵀ: the axis from the symmetric part (its largest
        # diagonal entry), its sign from the skew part (sin θ > 0 below π)
        d = 1.0 - min(1.0, max(-1.0, c))
        m = 0
        if R[1, 1] > R[m, m]:
            m = 1
        if R[2, 2] > R[m, m]:
            m = 2
        am = math.sqrt(max((R[m, m] - c) / d, 0.0))
        for i in range(3):
            w[i] = am if i == m else (R[i, m] + R[m, i]) / (2.0 * d * am)
        sign = -th if w[0] * s0 + w[1] * s1 + w[2] * s2 < 0.0 else th
        for i in range(3):
            w[i] *= sign
    else:
        k = th / (2.0 * sin_th)
        w[0], w[1], w[2] = k * s0, k * s1, k * s2
    return th


@compiled
def log3(R):
    """Rotation vector [rad] of a rotation matrix ``R`` (3, 3), as pinocchio's ``log3``
    (:func:`log3_into` into a new array; compiled)."""
    out = np.empty(3)
    log3_into(R, out)
    return out


@compiled
def orientation_error(R_ref, R):
    """``log3(R_ref R^T)`` [rad]: the rotation taking ``R`` to ``R_ref``, in world axes (the
    orientation error of the frame tasks; compiled)."""
    M = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            M[i, j] = R_ref[i, 0] * R[j, 0] + R_ref[i, 1] * R[j, 1] + R_ref[i, 2] * R[j, 2]
    return log3(M)



@compiled
def jlog3_into(w, th, J):
    """Right Jacobian of the log map (pinocchio's ``Jlog3``) at the rotation vector ``w`` of angle
    ``th = |w|`` (as :func:`log3_into` returns it), written into ``J`` (3, 3) (compiled)."""
    if th < SMALL_ANGLE:
        b = 1.0 / 12.0 + th * th / 720.0
    else:
        b = 1.0 / (th * th) - (1.0 + math.cos(th)) / (2.0 * th * math.sin(th))
    S = np.empty((3, 3))
    S[0, 0], S[0, 1], S[0, 2] = 0.0, -w[2], w[1]
    S[1, 0], S[1, 1], S[1, 2] = w[2], 0.0, -w[0]
    S[2, 0], S[2, 1], S[2, 2] = -w[1], w[0], 0.0
    for i in range(3):
        for j in range(3):
            s2 = 0.0
            for k in range(3):
                s2 += S[i, k] * S[k, j]
            J[i, j] = (1.0 if i == j else 0.0) + 0.5 * S[i, j] + b * s2


@compiled
def _log3_rows(R, out):
    for k in range(R.shape[0]):
        log3_into(R[k], out[k])


@compiled
def _jlog3_rows(r, out):
    for k in range(r.shape[0]):
        th = math.sqrt(r[k, 0] * r[k, 0] + r[k, 1] * r[k, 1] + r[k, 2] * r[k, 2])
        jlog3_into(r[k], th, out[k])


def log3_batch(R: np.ndarray) -> np.ndarray:
    """Rotation vectors of rotation matrices ``R`` (..., 3, 3) → (..., 3), :func:`log3_into` per matrix."""
    R = np.ascontiguousarray(R, dtype=float)
    out = np.empty(R.shape[:-1])
    _log3_rows(R.reshape(-1, 3, 3), out.reshape(-1, 3))
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
    """Right Jacobian of the log map at rotation vectors ``r`` (..., 3) → (..., 3, 3), :func:`jlog3_into` per vector."""
    r = np.ascontiguousarray(r, dtype=float)
    out = np.empty(r.shape + (3,))
    _jlog3_rows(r.reshape(-1, 3), out.reshape(-1, 3, 3))
    return out


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
