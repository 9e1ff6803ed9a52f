"""The controller's default constraint set filled in one compiled pass.

:class:`~kangaroo_wbc.control.wbc.WholeBodyController` builds floating-base dynamics, stationary
contacts, friction cones, actuator force limits, contact-force boxes and actuator stroke limits.
Filled constraint by constraint, that is some forty small numpy operations per tick; this kernel
writes the same rows (tested against the per-constraint :meth:`Constraint.fill`). The controller
uses it while its constraint lists hold exactly the objects it built, else the generic loop.
"""

from __future__ import annotations

import numpy as np

from kangaroo_wbc.control.constraints.actuator_stroke_limits import stroke_bounds
from kangaroo_wbc.model.compiled import compiled


@compiled
def fill_default_constraints(M_p, h_p, n_b, Jf, drift, twist, fidx, Rf, ridx, W, col, npts, active, velocity_gain,
                             cones, fn_min, fn_max, force_limits, force_min, force_max, q, idx_q_a, nu, pos_min,
                             pos_max, vel_max, acc_max, horizon, theta, theta_dot, A, b, G, h_lower, h, lb, ub):
    """Rows of the default constraints (see the module docstring), in the controller's row order.

    ``Jf`` (U, 6, n_nu), ``drift``, ``twist`` (U, 6): the projected model's frame terms; contact
    ``i`` is frame ``fidx[i]`` with rotation ``Rf[ridx[i]]``, corner-force map ``W[i]`` (6, 3 P_i,
    padded), force columns from ``col[i]``, ``npts[i]`` corners, ``active[i]``, friction pyramid
    rows ``cones[i]`` (5, 3) and normal-force bounds ``fn_min[i]``, ``fn_max[i]``.
    ``A``, ``b``: floating-base rows (n_b) then six rows per contact. ``G``, ``h_lower``, ``h``: five
    rows per corner, then (``force_limits``) one row per actuator. ``lb``, ``ub``: the decision
    vector's bounds (forces of swing soles pinned to zero, actuator accelerations from the stroke,
    speed and acceleration limits over ``horizon``). ``theta``, ``theta_dot``: work arrays (n_a,).
    """
    n_nu = M_p.shape[0]
    n_a = n_nu - n_b
    C = fidx.shape[0]
    # floating-base dynamics: M_p,b nu_dot - (J_c T)_b^T W f = -h_p,b
    for r in range(n_b):
        for j in range(n_nu):
            A[r, j] = M_p[r, j]
        b[r] = -h_p[r]
    row = n_b
    for i in range(C):
        J = Jf[fidx[i]]
        c0, m = col[i], 3 * npts[i]
        for r in range(n_nu):
            if r >= n_b and not force_limits:
                break
            for k in range(m):
                s = 0.0
                for d in range(6):
                    s += J[d, r] * W[i, d, k]
                if r < n_b:
                    A[r, c0 + k] = -s
                else:
                    G[G.shape[0] - n_a + r - n_b, c0 + k] = -s
        # stationary contact: J_c T nu_dot = -(Jdot v + J k) - K_v twist (zero rows for a swing sole)
        for d in range(6):
            if active[i]:
                for j in range(n_nu):
                    A[row + d, j] = J[d, j]
                b[row + d] = -drift[fidx[i], d] - velocity_gain * twist[fidx[i], d]
            else:
                for j in range(n_nu):
                    A[row + d, j] = 0.0
                b[row + d] = 0.0
        row += 6
    # friction pyramids and normal-force bounds, five rows per corner: cone R^T on the diagonal
    row = 0
    for i in range(C):
        R = Rf[ridx[i]]
        c0 = col[i]
        for p in range(npts[i]):
            for a in range(5):
                for k in range(3):
                    G[row + a, c0 + 3 * p + k] = (cones[i, a, 0] * R[k, 0] + cones[i, a, 1] * R[k, 1]
                                                  + cones[i, a, 2] * R[k, 2])
                h_lower[row + a] = -np.inf
                h[row + a] = 0.0
            if active[i]:
                h_lower[row + 4] = fn_min[i]
                h[row + 4] = fn_max[i]
            else:
                h[row + 4] = np.inf
            row += 5
        # contact-force box: free in contact, zero in swing
        for k in range(3 * npts[i]):
            if active[i]:
                lb[c0 + k] = -np.inf
                ub[c0 + k] = np.inf
            else:
                lb[c0 + k] = 0.0
                ub[c0 + k] = 0.0
    # actuator forces: tau_min <= M_p,a nu_dot + h_p,a - (J_c T)_a^T W f <= tau_max
    if force_limits:
        for r in range(n_a):
            for j in range(n_nu):
                G[row + r, j] = M_p[n_b + r, j]
            h_lower[row + r] = force_min[r] - h_p[n_b + r]
            h[row + r] = force_max[r] - h_p[n_b + r]
    # actuator stroke, speed and acceleration limits on theta_ddot_a
    for i in range(n_a):
        theta[i] = q[idx_q_a[i]]
        theta_dot[i] = nu[n_b + i]
    stroke_bounds(theta, theta_dot, pos_min, pos_max, vel_max, acc_max, horizon, horizon * horizon, lb[n_b:n_nu],
                   ub[n_b:n_nu])


__all__ = ["fill_default_constraints"]
