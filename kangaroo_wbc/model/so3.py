"""SO(3) maps: the log and its Jacobian (compiled), and the quaternion of a rotation matrix.

:func:`log3_into` / :func:`log3` and :func:`jlog3_into` are the package's one compiled SO(3) log
and its Jacobian, called by the closure kernels, the fused task kernels and the simulator. The
tests compare them with ``pin.log3`` and ``pin.Jlog3``.

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
