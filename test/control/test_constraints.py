"""Unit tests of the constraints: row semantics, satisfaction by the solved WBC problems, and each
constraint's compiled fill against the readable numpy form of its rows (the oracles below)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.control.constraints import (
    ActuatorForceLimits,
    ActuatorStrokeLimits,
    ContactForceBox,
    FloatingBaseDynamics,
    FrictionCones,
    StationaryContacts,
)
from kangaroo_wbc.control.contacts import ContactSpec, DecisionLayout, wrench_map
from kangaroo_wbc.control.wbc import WbcReferences, WbcSettings, WholeBodyController
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model import projected_dynamics
from test.control.conftest import KKT_TOL, assert_kkt, digit_contacts, digit_limits, random_state

FORCE_TOL = 1e-3  # [N] solver tolerance on force rows


def _digit_wbc(clm, **kw):
    return WholeBodyController(clm, digit_contacts(), WbcSettings(base_frame="torso", **kw), digit_limits(clm))


def test_wrench_map_moments():
    R = np.eye(3)
    corners = np.array([[0.1, 0.05, 0.0], [-0.1, -0.05, 0.0]])
    W = wrench_map(R, corners)
    f = np.array([0.0, 0.0, 10.0, 0.0, 0.0, 30.0])
    np.testing.assert_allclose(W @ f, [0, 0, 40, 0.05 * 10 - 0.05 * 30, -(0.1 * 10 - 0.1 * 30), 0])


def test_wrench_map_agrees_with_the_cross_products():
    """Column block i of W is [I; [R r_i]x]: W f = (sum f_i, sum (R r_i) x f_i), rotated sole; every
    entry of a given output buffer is written."""
    rng = np.random.default_rng(3)
    R = pin.rpy.rpyToMatrix(*rng.uniform(-0.5, 0.5, 3))
    corners = rng.uniform(-0.1, 0.1, (4, 3))
    f = rng.standard_normal((4, 3))
    expected = np.concatenate([f.sum(axis=0), sum(np.cross(R @ r, fi) for r, fi in zip(corners, f))])
    np.testing.assert_allclose(wrench_map(R, corners) @ f.ravel(), expected, rtol=0, atol=1e-14)
    W = wrench_map(R, corners, np.full((6, 12), np.nan))
    np.testing.assert_allclose(W @ f.ravel(), expected, rtol=0, atol=1e-14)
    for i, r in enumerate(corners):
        np.testing.assert_array_equal(W[:3, 3 * i:3 * i + 3], np.eye(3))
        np.testing.assert_allclose(W[3:, 3 * i:3 * i + 3], pin.skew(R @ r), rtol=0, atol=1e-15)


def test_corner_contact_spec_validation(digit_fb):
    with pytest.raises(InputError):
        ContactSpec("x", "right_sole", np.zeros((4, 2)))
    with pytest.raises(InputError):
        ContactSpec.rectangle("x", "right_sole", 0.1, 0.1, mu=0.0)


@pytest.mark.parametrize("active", [("right", "left"), ("right",)])
def test_solution_forces_inside_cones_and_cop_inside_sole(digit_fb, active):
    clm = digit_fb
    wbc = _digit_wbc(clm)
    q, nu, v = random_state(clm, 7, speed=0.1)
    out = wbc.step(q, v, active_contacts=active)
    assert_kkt(out.qp)
    for c in wbc.contacts:
        f = out.forces[c.name]
        if c.name not in active:
            np.testing.assert_allclose(f, 0.0, atol=1e-9)
            continue
        R, p = wbc.pm.placement(c.frame)
        local = f @ R  # forces in the sole frame
        mu = c.mu / np.sqrt(2.0)
        assert np.all(local[:, 2] >= -FORCE_TOL)
        assert np.all(np.abs(local[:, :2]) <= mu * local[:, 2:3] + FORCE_TOL)
        # CoP of the sole wrench (sole frame) inside the corner rectangle.
        w = out.wrenches[c.name]
        f_loc, m_loc = R.T @ w[:3], R.T @ w[3:]
        cop = np.array([-m_loc[1] / f_loc[2], m_loc[0] / f_loc[2]])
        lo, hi = c.corners[:, :2].min(axis=0), c.corners[:, :2].max(axis=0)
        assert np.all(cop >= lo - 1e-6) and np.all(cop <= hi + 1e-6)


def test_floating_base_rows_are_eq_62(digit_fb):
    clm = digit_fb
    wbc = _digit_wbc(clm)
    q, nu, v = random_state(clm, 8)
    out = wbc.step(q, v)
    terms = wbc.contact_terms(out.active_contacts)
    M, lo, _ = FloatingBaseDynamics(wbc.layout).rows(wbc.pm, terms)
    pd = projected_dynamics(clm, q, v, ["right_sole", "left_sole"], 6)
    wrench = np.concatenate([out.wrenches["right"], out.wrenches["left"]])
    x = out.qp.x
    np.testing.assert_allclose(M @ x - lo, pd.base_residual(out.nu_dot, wrench), atol=1e-8)
    assert np.max(np.abs(M @ x - lo)) < KKT_TOL * 10


def test_friction_rows_relaxed_for_inactive_contact(digit_fb):
    clm = digit_fb
    wbc = _digit_wbc(clm)
    q, nu, v = random_state(clm, 1)
    wbc.pm.update(q, nu)
    terms = wbc.contact_terms(("right",))
    M, lo, hi = FrictionCones(wbc.layout).rows(wbc.pm, terms)
    n_right = 5 * 4
    assert np.all(lo[4:n_right:5] == 0.0) and np.all(np.isinf(hi[n_right + 4::5]))


def test_stroke_limit_bounds_keep_the_actuator_in_range():
    layout = DecisionLayout(6, 2)
    con = ActuatorStrokeLimits(layout, np.array([7, 8]), np.array([-0.05, -0.05]), np.array([0.05, 0.05]),
                               np.array([0.5, 0.5]), horizon_s=0.05, acceleration_max=1e4)
    theta = np.array([0.045, -0.049])
    theta_dot = np.array([0.2, -0.3])
    lo, hi = con.bounds(theta, theta_dot)
    assert np.all(lo <= hi)
    dt = con.horizon_s
    for a in (lo, hi):
        end = theta + theta_dot * dt + 0.5 * a * dt**2
        assert np.all(end <= 0.05 + 1e-12) and np.all(end >= -0.05 - 1e-12)
    # Already beyond the limit and moving outward: the bound brakes (pushes back inside).
    lo, hi = con.bounds(np.array([0.06, 0.0]), np.array([0.4, 0.0]))
    assert hi[0] < 0.0
    # Speed limit: at the speed limit the actuator may not accelerate further.
    lo, hi = con.bounds(np.array([0.0, 0.0]), np.array([0.5, -0.5]))
    assert hi[0] <= 1e-12 and lo[1] >= -1e-12


def test_stroke_limit_bounds_equal_the_closed_form_elementwise():
    """The compiled bounds equal the formulas of the module docstring, conflicts included."""
    rng = np.random.default_rng(0)
    n = 200
    layout = DecisionLayout(6, n)
    pmin, pmax = -0.05 * np.ones(n), 0.05 * np.ones(n)
    vmax = np.where(rng.random(n) < 0.2, 0.0, 0.5)  # 0: no speed limit
    con = ActuatorStrokeLimits(layout, np.arange(n), pmin, pmax, vmax, horizon_s=0.05, acceleration_max=30.0)
    theta, theta_dot = rng.uniform(-0.07, 0.07, n), rng.uniform(-1.0, 1.0, n)
    dt = 0.05
    vm = np.where(vmax > 0, vmax, np.inf)
    lo_p, hi_p = 2 * (pmin - theta - theta_dot * dt) / dt**2, 2 * (pmax - theta - theta_dot * dt) / dt**2
    lo, hi = np.maximum(lo_p, (-vm - theta_dot) / dt), np.minimum(hi_p, (vm - theta_dot) / dt)
    bad = lo > hi
    pinned = np.minimum(np.maximum(0.5 * (lo + hi), lo_p), hi_p)
    lo, hi = np.clip(np.where(bad, pinned, lo), -30, 30), np.clip(np.where(bad, pinned, hi), -30, 30)
    assert bad.any() and (np.abs(hi) == 30).any() and (np.abs(lo) == 30).any()  # conflicts and the clamp
    got_lo, got_hi = con.bounds(theta, theta_dot)
    np.testing.assert_array_equal(got_lo, lo)
    np.testing.assert_array_equal(got_hi, hi)


def test_stroke_limits_reject_mis_sized_limits_and_states():
    layout = DecisionLayout(6, 2)
    with pytest.raises(InputError, match="position_max has shape"):
        ActuatorStrokeLimits(layout, np.array([7, 8]), np.array([-0.05, -0.05]), np.array([0.05]))
    con = ActuatorStrokeLimits(layout, np.array([7, 8]), np.array([-0.05, -0.05]), np.array([0.05, 0.05]))
    with pytest.raises(InputError, match="expected"):
        con.bounds(np.zeros(3), np.zeros(3))


def test_actuator_force_limits_are_respected(digit_fb):
    clm = digit_fb
    q, nu, v = random_state(clm, 3, speed=0.0)
    free = WholeBodyController(clm, digit_contacts(), WbcSettings(base_frame="torso"), digit_limits(clm, 1e4))
    ref = WbcReferences(com_position=None)
    out_free = free.step(q, v, references=ref)
    peak = np.max(np.abs(out_free.tau_a))
    limit = 0.8 * peak
    limited = WholeBodyController(clm, digit_contacts(), WbcSettings(base_frame="torso"), digit_limits(clm, limit))
    out = limited.step(q, v)
    assert np.max(np.abs(out.tau_a)) <= limit + 1e-3 * limit


# ------------------------------------------------------------------ numpy oracles of the compiled fills
def _dynamics_rows_oracle(L, pm, terms, rows):
    """``[M_p | -(J_c^T W_c) ...]`` on the given rows of the projected dynamics, and ``h_p`` of them."""
    M = np.zeros((rows.stop - rows.start, L.n))
    M[:, L.nu] = pm.M_p[rows]
    for c in L.contacts:
        t = terms[c.name]
        M[:, L.force_slice(c.name)] = -(t.J.T @ t.W)[rows]
    return M, pm.h_p[rows]


def _floating_base_oracle(con, pm, terms):
    M, h = _dynamics_rows_oracle(con.layout, pm, terms, slice(0, con.layout.n_b))
    return M, -h, -h


def _stationary_oracle(con, pm, terms):
    L = con.layout
    M, b = np.zeros((6 * len(L.contacts), L.n)), np.zeros(6 * len(L.contacts))
    for i, c in enumerate(L.contacts):
        t = terms[c.name]
        if t.active:
            M[6 * i:6 * i + 6, L.nu] = t.J
            b[6 * i:6 * i + 6] = -t.drift - con.velocity_gain * t.twist
    return M, b, b


def _friction_oracle(con, pm, terms):
    L = con.layout
    m = con.n_rows()
    M, lo, hi = np.zeros((m, L.n)), np.full(m, -np.inf), np.zeros(m)
    row = 0
    for c in L.contacts:
        mu = c.mu / np.sqrt(2.0) if con.inner_pyramid else c.mu
        cone = np.array([[1.0, 0.0, -mu], [-1.0, 0.0, -mu], [0.0, 1.0, -mu], [0.0, -1.0, -mu], [0.0, 0.0, 1.0]])
        t, col = terms[c.name], L.force_slice(c.name).start
        for k in range(c.n_points):
            M[row:row + 5, col + 3 * k:col + 3 * k + 3] = cone @ t.R.T
            lo[row + 4], hi[row + 4] = (c.normal_force_min_n, c.normal_force_max_n) if t.active else (-np.inf, np.inf)
            row += 5
    return M, lo, hi


def _force_limits_oracle(con, pm, terms):
    M, h = _dynamics_rows_oracle(con.layout, pm, terms, con.layout.actuated)
    return M, con.force_min - h, con.force_max - h


def _force_box_oracle(con, pm, terms):
    L = con.layout
    lo, hi = np.full(L.n, -np.inf), np.full(L.n, np.inf)
    for c in L.contacts:
        if not terms[c.name].active:
            lo[L.force_slice(c.name)] = hi[L.force_slice(c.name)] = 0.0
    return None, lo, hi


def _stroke_oracle(con, pm, terms):
    """The closed form of the module docstring, conflicts and the acceleration clamp included."""
    L, dt = con.layout, con.horizon_s
    theta, theta_dot = pm.q[con.idx_q_a], pm.nu[L.actuated]
    lo_p = 2 * (con.position_min - theta - theta_dot * dt) / dt**2
    hi_p = 2 * (con.position_max - theta - theta_dot * dt) / dt**2
    lo = np.maximum(lo_p, (-con.velocity_max - theta_dot) / dt)
    hi = np.minimum(hi_p, (con.velocity_max - theta_dot) / dt)
    pinned = np.minimum(np.maximum(0.5 * (lo + hi), lo_p), hi_p)
    lo, hi = np.where(lo > hi, pinned, lo), np.where(lo > hi, pinned, hi)
    a = con.acceleration_max
    lb, ub = np.full(L.n, -np.inf), np.full(L.n, np.inf)
    lb[L.actuated], ub[L.actuated] = np.clip(lo, -a, a), np.clip(hi, -a, a)
    return None, lb, ub


ORACLES = {"floating_base_dynamics": _floating_base_oracle, "stationary_contacts": _stationary_oracle,
           "friction_cones": _friction_oracle, "actuator_force_limits": _force_limits_oracle,
           "contact_force_box": _force_box_oracle, "actuator_stroke_limits": _stroke_oracle}


def _stroke_limited(clm):
    limits = digit_limits(clm)
    limits.position_min, limits.position_max = np.full(clm.n_a, -0.3), np.full(clm.n_a, 0.3)
    limits.velocity_max = np.full(clm.n_a, 2.0)
    return limits


@pytest.mark.parametrize("options", [{}, {"contact_velocity_gain": 2.0, "enforce_force_limits": False},
                                     {"three_corners": True}])
def test_compiled_constraint_fills_write_the_rows_of_their_numpy_form(digit_fb, options):
    """Every constraint's compiled fill == the readable numpy form of its rows, standalone
    (:meth:`Constraint.rows`) and in the controller's problem, in double and single support, with
    the normal-force bound changed at run time, stroke limits that bind, and soles of different
    corner counts (one buffer each)."""
    clm = digit_fb
    options = dict(options)
    contacts = digit_contacts()
    if options.pop("three_corners", False):
        contacts[1] = ContactSpec("left", "left_sole", contacts[1].corners[:3], mu=0.8)
    wbc = WholeBodyController(clm, contacts, WbcSettings(base_frame="torso", **options), _stroke_limited(clm))
    p, L = wbc.problem, wbc.layout
    swing = 0
    for seed, active in ((0, ("right", "left")), (1, ("left",)), (2, ("right",)), (3, ("right", "left"))):
        q, _, v = random_state(clm, seed, speed=0.3)
        wbc.contacts[0].set_normal_force_min(5.0 * seed)
        wbc.step(q, v, active_contacts=active)
        terms = wbc.contact_terms(active)
        expected = {}
        for con in (*wbc.equalities, *wbc.inequalities, *wbc.boxes):
            M, lo, hi = ORACLES[con.name](con, wbc.pm, terms)
            got = con.rows(wbc.pm, terms)
            for a, b, what in zip(got, (M, lo, hi), ("M", "lo", "hi")):
                if b is not None:
                    np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-12, err_msg=f"{con.name} {what}")
            expected[con.name] = (M, lo, hi)
        eq = [expected[c.name] for c in wbc.equalities]
        ineq = [expected[c.name] for c in wbc.inequalities]
        np.testing.assert_allclose(p.A, np.vstack([e[0] for e in eq]), rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(p.b, np.concatenate([e[1] for e in eq]), rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(p.G, np.vstack([e[0] for e in ineq]), rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(p.h_lower, np.concatenate([e[1] for e in ineq]), rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(p.h, np.concatenate([e[2] for e in ineq]), rtol=1e-13, atol=1e-12)
        box, stroke = expected["contact_force_box"], expected["actuator_stroke_limits"]
        np.testing.assert_allclose(p.lb, np.where(np.isinf(stroke[1]), box[1], stroke[1]), rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(p.ub, np.where(np.isinf(stroke[2]), box[2], stroke[2]), rtol=1e-13, atol=1e-12)
        swing += bool(np.isinf(p.h).any() and (p.lb[L.forces] == 0.0).any())
        assert np.isfinite(p.lb[L.actuated]).all() and (np.abs(p.lb[L.actuated]) < wbc.settings.acceleration_max).any()
    assert swing == 2  # the swing-sole rows were exercised


def test_constraints_of_a_layout_without_contacts(digit_fb):
    """Without contacts the dynamics rows are the projected model's alone and the contact rows empty."""
    clm = digit_fb
    wbc = _digit_wbc(clm)
    q, nu, _ = random_state(clm, 4)
    wbc.pm.update(q, nu)
    L = DecisionLayout(clm.n_b, clm.n_a)
    for con in (FloatingBaseDynamics(L), ActuatorForceLimits(L, -np.ones(clm.n_a), np.ones(clm.n_a)),
                StationaryContacts(L), FrictionCones(L), ContactForceBox(L)):
        M, lo, hi = con.rows(wbc.pm, {})
        eM, elo, ehi = ORACLES[con.name](con, wbc.pm, {})
        for a, b in ((M, eM), (lo, elo), (hi, ehi)):
            if b is not None and con.kind != "eq":
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-12)
        if con.kind == "eq":
            np.testing.assert_allclose(M, eM, rtol=1e-13, atol=1e-12)
            np.testing.assert_allclose(lo, elo, rtol=1e-13, atol=1e-12)
