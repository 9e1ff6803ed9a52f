"""Compiled KKT solve of a predicted active set, accepted only when it is the optimum.

``min ½xᵀHx + cᵀx  s.t.  l_g ≤ C_g x ≤ u_g,  l_b ≤ x ≤ u_b`` (equalities as ``l = u``). The active
set is given per row as a *side*: ``0`` equality (``l = u``), ``+1`` at the upper bound, ``-1`` at
the lower bound, ``2`` inactive; separately for the general rows ``C_g`` and for the box.

:func:`solve_active_set` fixes the variables whose box side is active, solves the KKT system of
the remaining ones with the active general rows

.. math::

    \\begin{bmatrix} H_{ff} & C_{af}^T \\\\ C_{af} & -\\delta I \\end{bmatrix}
    \\begin{bmatrix} x_f \\\\ y_a \\end{bmatrix} =
    \\begin{bmatrix} -c_f - H_{fx} x_x \\\\ d_a - C_{ax} x_x \\end{bmatrix}

(``delta`` keeps the matrix non-singular when active rows are linearly dependent, e.g. a corner
force at the apex of its friction pyramid; it moves those rows by ``delta·y``), recovers the box
multipliers from stationarity and checks every KKT condition: stationarity, primal feasibility
of every row (``primal_tol·(1 + |bound|)``), multiplier signs (``dual_tol``; OSQP's convention,
``y > 0`` on upper bounds). When a check fails the set is corrected (violated rows added,
wrong-sign rows dropped) and solved again, at most ``max_corrections`` times. Rows whose
coefficients on the free variables are all zero are only checked (they cannot be active
constraints of the reduced problem).

:func:`solve_stacked` is the per-tick entry point: it takes a problem in the
:class:`~kangaroo_wbc.control.qp.QpProblem` layout as its nine arrays (the caller's, possibly new
every tick: a buffer object built per call would cost more than the arguments) and one
:data:`KktWork` buffer object owned by the solver (stacked rows and bounds, the predicted and the
trial active set, the solution, the settings), and calls :func:`solve_active_set` on it.
"""

from __future__ import annotations

import functools

import numpy as np

from kangaroo_wbc.model.cholesky import cholesky_in_place
from kangaroo_wbc.model.compiled import buffers, compiled

INFINITY = 1e30  # OSQP's infinity: bounds beyond it are absent

#: Return codes of :func:`solve_active_set` other than the number of corrections used.
NOT_OPTIMAL, SINGULAR = -1, -2
#: Return code of :func:`solve_stacked`: a lower bound above its upper bound, or a NaN bound (nothing solved).
BAD_BOUNDS = -3

#: The work of one problem shape (``n`` variables, ``m_g`` general rows), owned by the solver:
#: ``Cg`` (m_g, n) the general rows; ``l``, ``u`` (m_g + n) their bounds, then the box's;
#: ``predicted_g`` (m_g), ``predicted_b`` (n) int8 the predicted sides (kept across ticks: updated
#: by :func:`solve_stacked` when it succeeds); ``side_g``, ``side_b`` the sides being solved (in/out
#: of :func:`solve_active_set`); ``x`` (n), ``y`` (m_g + n) the solution ``x``, ``[y_g, y_b]``;
#: ``settings`` (4,) ``[max_corrections, primal_tol, dual_tol, delta]``.
KktWork = buffers("KktWork", ("Cg", "l", "u", "predicted_g", "predicted_b", "side_g", "side_b", "x", "y",
                              "settings"))


def kkt_work(n: int, m_g: int, max_corrections: int, primal_tol: float, dual_tol: float, delta: float):
    """A :data:`KktWork` for problems of ``n`` variables and ``m_g`` general rows (every side inactive)
    and its arrays by name (read them there: a field read through the buffer object is slow)."""
    arrays = dict(Cg=np.zeros((m_g, n)), l=np.zeros(m_g + n), u=np.zeros(m_g + n),
                  predicted_g=np.full(m_g, 2, dtype=np.int8), predicted_b=np.full(n, 2, dtype=np.int8),
                  side_g=np.full(m_g, 2, dtype=np.int8), side_b=np.full(n, 2, dtype=np.int8), x=np.zeros(n),
                  y=np.zeros(m_g + n), settings=np.array([max_corrections, primal_tol, dual_tol, delta], dtype=float))
    return KktWork.make(**arrays), arrays


@compiled
def solve_active_set(H, c, work):
    """See the module docstring: the problem ``H``, ``c`` with the general rows ``work.Cg``, bounds
    ``work.l``, ``work.u`` (general rows, then box), from the set ``work.side_g``/``work.side_b``,
    which is updated in place to the final set; ``work.x``, ``work.y`` (``[y_g, y_b]``) receive
    the solution. Returns the number of corrections used, or ``NOT_OPTIMAL`` / ``SINGULAR``."""
    Cg, side_g, side_b, x, y, settings = work.Cg, work.side_g, work.side_b, work.x, work.y, work.settings
    n, m = H.shape[0], Cg.shape[0]
    l, u = work.l, work.u
    lg, ug, lb, ub = l[:m], u[:m], l[m:], u[m:]
    y_g, y_b = y[:m], y[m:]
    max_corrections = int(settings[0])
    primal_tol, dual_tol, delta = settings[1], settings[2], settings[3]
    free = np.empty(n, dtype=np.int64)
    fixed = np.empty(n, dtype=np.int64)
    act = np.empty(m, dtype=np.int64)
    r = np.empty(n)
    z = np.empty(m)
    scale_c = 0.0
    for i in range(n):
        scale_c = max(scale_c, abs(c[i]))
    for i in range(m):  # rows with equal bounds are equalities, and only they
        if lg[i] == ug[i]:
            side_g[i] = 0
        elif side_g[i] == 0:
            side_g[i] = 2
    for j in range(n):
        if lb[j] == ub[j]:
            side_b[j] = 0
        elif side_b[j] == 0:
            side_b[j] = 2
    for it in range(max_corrections + 1):
        # sides on an infinite bound cannot be active
        for i in range(m):
            if (side_g[i] == 1 and ug[i] >= INFINITY) or (side_g[i] == -1 and lg[i] <= -INFINITY):
                side_g[i] = 2
        nf, nx = 0, 0
        for j in range(n):
            if (side_b[j] == 1 and ub[j] >= INFINITY) or (side_b[j] == -1 and lb[j] <= -INFINITY):
                side_b[j] = 2
            if side_b[j] == 2:
                free[nf] = j
                nf += 1
            else:
                fixed[nx] = j
                nx += 1
                x[j] = ub[j] if side_b[j] > 0 else lb[j]
        k = 0
        for i in range(m):
            if side_g[i] == 2:
                continue
            live = False
            for a in range(nf):
                if Cg[i, free[a]] != 0.0:
                    live = True
                    break
            if live:
                act[k] = i
                k += 1
        N = nf + k
        rhs = np.empty(N)
        for a in range(nf):
            ja = free[a]
            s = -c[ja]
            for b in range(nx):
                s -= H[ja, fixed[b]] * x[fixed[b]]
            rhs[a] = s
        for a in range(k):
            i = act[a]
            s = ug[i] if side_g[i] > 0 else lg[i]
            for b in range(nx):
                s -= Cg[i, fixed[b]] * x[fixed[b]]
            rhs[nf + a] = s
        sol = np.empty(N)
        if N > 0 and not _kkt_schur(H, Cg, free, nf, act, k, rhs, delta, sol):
            # H_ff not numerically positive definite: LU of the whole KKT matrix
            K = np.zeros((N, N))
            for a in range(nf):
                for b in range(nf):
                    K[a, b] = H[free[a], free[b]]
            for a in range(k):
                for b in range(nf):
                    K[nf + a, b] = Cg[act[a], free[b]]
                    K[b, nf + a] = Cg[act[a], free[b]]
                K[nf + a, nf + a] = -delta
            sol = np.linalg.solve(K, rhs)
        for a in range(N):
            if not np.isfinite(sol[a]):
                return SINGULAR
        for a in range(nf):
            x[free[a]] = sol[a]
        for i in range(m):
            y_g[i] = 0.0
        for a in range(k):
            y_g[act[a]] = sol[nf + a]
        # stationarity r = H x + c + Cg^T y_g (on the fixed variables: -y_box)
        scale_hx = 0.0
        for j in range(n):
            s = 0.0
            for b in range(n):
                s += H[j, b] * x[b]
            scale_hx = max(scale_hx, abs(s))
            s += c[j]
            for a in range(k):
                s += Cg[act[a], j] * sol[nf + a]
            r[j] = s
        tol_stat = 1e-9 * (1.0 + scale_c + scale_hx)
        for a in range(nf):
            if abs(r[free[a]]) > tol_stat:
                return SINGULAR
        for j in range(n):
            y_b[j] = -r[j] if side_b[j] != 2 else 0.0
        # primal feasibility and multiplier signs; corrections on the way
        ok = True
        for i in range(m):
            s = 0.0
            for j in range(n):
                s += Cg[i, j] * x[j]
            z[i] = s
        for i in range(m):
            above = z[i] - ug[i] > primal_tol * (1.0 + abs(ug[i]))
            below = lg[i] - z[i] > primal_tol * (1.0 + abs(lg[i]))
            if side_g[i] == 1 and y_g[i] < -dual_tol or side_g[i] == -1 and y_g[i] > dual_tol:
                side_g[i] = 2
                ok = False
            elif above or below:
                if side_g[i] != 2:  # an active row that does not hold: constant in x, or inconsistent
                    return NOT_OPTIMAL
                side_g[i] = 1 if above else -1
                ok = False
        for j in range(n):
            above = x[j] - ub[j] > primal_tol * (1.0 + abs(ub[j]))
            below = lb[j] - x[j] > primal_tol * (1.0 + abs(lb[j]))
            if side_b[j] == 1 and y_b[j] < -dual_tol or side_b[j] == -1 and y_b[j] > dual_tol:
                side_b[j] = 2
                ok = False
            elif above or below:
                side_b[j] = 1 if above else -1
                ok = False
        if ok:
            return it
    return NOT_OPTIMAL


@compiled
def _kkt_schur(H, Cg, free, nf, act, k, rhs, delta, sol):
    """The KKT system of :func:`solve_active_set` by its Schur complement: ``H_ff = L L^T``
    (Cholesky), ``Y = L^{-1} C_af^T``, ``(Y^T Y + delta I) y = Y^T L^{-1} f - d``,
    ``x_f = L^{-T} (L^{-1} f - Y y)`` (``f``, ``d``: the two parts of ``rhs``). The factor keeps the
    envelope of ``H_ff`` (row ``i`` starts at its first nonzero; no fill-in outside it), so the
    diagonal force block of the controller's Hessian costs nothing. False when ``H_ff`` is not
    numerically positive definite (a pivot below 1e-12 of its diagonal entry): the caller then
    factorises the whole KKT matrix."""
    L = np.zeros((nf, nf))
    first = np.empty(nf, dtype=np.int64)
    for i in range(nf):
        first[i] = i
        for j in range(i + 1):
            h = H[free[i], free[j]]
            L[i, j] = h
            if h != 0.0 and j < first[i]:
                first[i] = j
    for i in range(nf):  # row-wise Cholesky within the envelope
        fi = first[i]
        for j in range(fi, i + 1):
            s = L[i, j]
            for q in range(max(fi, first[j]), j):
                s -= L[i, q] * L[j, q]
            if j < i:
                L[i, j] = s / L[j, j]
            else:
                if not s > 1e-12 * H[free[i], free[i]]:
                    return False
                L[i, i] = np.sqrt(s)
    Y = np.empty((nf, k))  # forward substitution, one active row per column
    for a in range(k):
        row = act[a]
        for i in range(nf):
            s = Cg[row, free[i]]
            for q in range(first[i], i):
                s -= L[i, q] * Y[q, a]
            Y[i, a] = s / L[i, i]
    g = np.empty(nf)  # L^{-1} f
    for i in range(nf):
        s = rhs[i]
        for q in range(first[i], i):
            s -= L[i, q] * g[q]
        g[i] = s / L[i, i]
    S = np.empty((k, k))
    t = np.empty(k)
    for a in range(k):
        for b in range(a + 1):
            s = 0.0
            for i in range(nf):
                s += Y[i, a] * Y[i, b]
            S[a, b] = s
        S[a, a] += delta
        s = -rhs[nf + a]
        for i in range(nf):
            s += Y[i, a] * g[i]
        t[a] = s
    if not cholesky_in_place(S, k, 0.0):  # the Schur complement: positive definite for delta > 0
        return False
    for i in range(k):  # y = S^{-1} t
        s = t[i]
        for q in range(i):
            s -= S[i, q] * t[q]
        t[i] = s / S[i, i]
    for i in range(k - 1, -1, -1):
        s = t[i]
        for q in range(i + 1, k):
            s -= S[q, i] * t[q]
        t[i] = s / S[i, i]
    for i in range(nf):  # g - Y y
        s = g[i]
        for a in range(k):
            s -= Y[i, a] * t[a]
        g[i] = s
    for i in range(nf - 1, -1, -1):  # x_f = L^{-T} g, column-wise within the envelope
        xi = g[i] / L[i, i]
        sol[i] = xi
        for q in range(first[i], i):
            g[q] -= L[i, q] * xi
    for a in range(k):
        sol[nf + a] = t[a]
    return True


@compiled
def _clip_infinity(v):
    """``v`` clipped to ``±INFINITY`` (NaN stays NaN)."""
    if v < -INFINITY:
        return -INFINITY
    if v > INFINITY:
        return INFINITY
    return v


@compiled
def solve_stacked(H, c, A, b, G, h_lower, h, lb, ub, work):
    """The whole warm-started solve of a problem in the :class:`~kangaroo_wbc.control.qp.QpProblem`
    layout, one call: the stacked bounds ``l = [b, h_lower, lb]``, ``u = [b, h, ub]`` (into
    ``work.l``, ``work.u``; clipped to ``±INFINITY``), the stacked rows ``work.Cg = [A; G]``, then
    :func:`solve_active_set` from copies ``work.side_g``, ``work.side_b`` of the predicted sides
    ``work.predicted_g``, ``work.predicted_b`` (which receive the final set on success);
    ``work.x``, ``work.y`` receive ``x`` and ``[y_g, y_b]``.

    Returns ``(code, objective)``: ``code`` as :func:`solve_active_set`, or ``BAD_BOUNDS``
    (nothing solved: a lower bound above its upper bound, or NaN); ``objective = ½xᵀHx + cᵀx``.
    """
    Cg, l, u, x = work.Cg, work.l, work.u, work.x
    side_g, side_b, predicted_g, predicted_b = work.side_g, work.side_b, work.predicted_g, work.predicted_b
    n, m_eq, m_in = H.shape[0], A.shape[0], G.shape[0]
    m_g = m_eq + m_in
    for i in range(m_eq):
        l[i] = _clip_infinity(b[i])
        u[i] = l[i]
        for j in range(n):
            Cg[i, j] = A[i, j]
    for i in range(m_in):
        l[m_eq + i] = _clip_infinity(h_lower[i])
        u[m_eq + i] = _clip_infinity(h[i])
        for j in range(n):
            Cg[m_eq + i, j] = G[i, j]
    for j in range(n):
        l[m_g + j] = _clip_infinity(lb[j])
        u[m_g + j] = _clip_infinity(ub[j])
    for i in range(m_g + n):
        if not l[i] <= u[i]:  # crossed, or NaN
            return BAD_BOUNDS, 0.0
    side_g[:] = predicted_g
    side_b[:] = predicted_b
    code = solve_active_set(H, c, work)
    obj = 0.0
    if code >= 0:
        predicted_g[:] = side_g
        predicted_b[:] = side_b
        for i in range(n):
            hx = 0.0
            for j in range(n):
                hx += H[i, j] * x[j]
            obj += x[i] * (0.5 * hx + c[i])
    return code, obj


@functools.cache
def warm_up() -> None:
    """Compile (or load from the cache) now, not inside the first control tick (once per process)."""
    work, _ = kkt_work(2, 1, 1, 1e-7, 1e-7, 1e-10)
    solve_stacked(np.eye(2), np.array([1.0, -1.0]), np.zeros((0, 2)), np.zeros(0), np.array([[1.0, 1.0]]),
                  np.array([0.0]), np.array([1.0]), np.full(2, -np.inf), np.full(2, np.inf), work)


__all__ = ["KktWork", "kkt_work", "solve_active_set", "solve_stacked", "warm_up", "NOT_OPTIMAL", "SINGULAR",
           "BAD_BOUNDS"]
