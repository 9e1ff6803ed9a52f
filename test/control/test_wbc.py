"""Unit tests of the whole-body controller (eq. (27)-(29) on the projected dynamics of App. B).

The commanded actuator forces are re-verified with an independent computation: pinocchio's RNEA
on the spanning tree with the solved accelerations and contact wrenches, the closure forces from the
passive rows (eq. (28)) and the actuated rows (eq. (29)).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.control.contacts import ContactSpec
from kangaroo_wbc.control.wbc import (
    ActuatorLimits,
    WbcReferences,
    WbcSettings,
    WholeBodyController,
)
from kangaroo_wbc.errors import InputError, NoSolutionFound
from kangaroo_wbc.model import projected_dynamics
from test.control.conftest import KKT_TOL, assert_kkt, digit_contacts, digit_limits, random_state

FRAMES = ["right_sole", "left_sole"]


def _wbc(clm, **kw) -> WholeBodyController:
    return WholeBodyController(clm, digit_contacts(), WbcSettings(base_frame="torso", compute_lambda=True, **kw),
                               digit_limits(clm))


@pytest.mark.parametrize("active", [("right", "left"), ("left",)])
@pytest.mark.parametrize("seed", [0, 1])
def test_actuator_forces_equal_eq_29_by_independent_inverse_dynamics(digit_fb, active, seed):
    clm = digit_fb
    wbc = _wbc(clm)
    q, nu, v = random_state(clm, seed, speed=0.2)
    out = wbc.step(q, v, active_contacts=active)
    assert_kkt(out.qp)
    # Reference projected dynamics (core) at the same state.
    pd = projected_dynamics(clm, q, v, FRAMES, 6)
    wrench = np.concatenate([out.wrenches["right"], out.wrenches["left"]])
    np.testing.assert_allclose(out.tau_a, pd.actuated_forces(out.nu_dot, wrench), atol=1e-8)
    # Independent: RNEA on the tree, closure forces from the passive rows, actuated rows.
    v_dot = pd.T @ out.nu_dot + pd.k
    tau_tree = pin.rnea(clm.model, clm.model.createData(), q, v, v_dot) - pd.J_c_full.T @ wrench
    J_l = clm.constraint_jacobian(q)
    J_lu, J_la = clm.split(J_l)
    lam = np.linalg.solve(J_lu.T, tau_tree[clm.idx_v_u])  # eq. (28)
    tau_a = tau_tree[clm.idx_v_a] - J_la.T @ lam  # eq. (29)
    np.testing.assert_allclose(out.tau_a, tau_a, atol=1e-7 * max(1.0, np.abs(tau_a).max()))
    np.testing.assert_allclose(out.lam, lam, atol=1e-7 * max(1.0, np.abs(lam).max()))
    # Floating-base rows (eq. (26a)/(62)) balanced to the solver tolerance; passive rows exactly by lambda.
    assert np.max(np.abs(tau_tree[clm.idx_v_base])) < KKT_TOL
    # Stance soles do not accelerate (eq. (25b)).
    for name, frame in (("right", "right_sole"), ("left", "left_sole")):
        if name in active:
            acc = wbc.pm.jacobian(frame) @ out.nu_dot + wbc.pm.drift(frame)
            assert np.max(np.abs(acc)) < KKT_TOL


def test_standing_still_holds_the_weight(digit_fb):
    """At rest with the CoM inside the (large) soles every task holds at zero acceleration."""
    clm = digit_fb
    big = [ContactSpec.rectangle("right", "right_sole", 0.6, 0.2), ContactSpec.rectangle("left", "left_sole", 0.6, 0.2)]
    wbc = WholeBodyController(clm, big, WbcSettings(base_frame="torso"), digit_limits(clm))
    q = clm.q_ref.copy()
    v = np.zeros(clm.model.nv)
    out = wbc.step(q, v)
    total = out.wrenches["right"][:3] + out.wrenches["left"][:3]
    np.testing.assert_allclose(total, [0.0, 0.0, clm.mass_kg * 9.81], atol=1e-2 * clm.mass_kg)
    assert np.max(np.abs(out.nu_dot)) < 1e-2
    assert set(out.timing) >= {"model", "build", "solve", "total"} and out.timing["total"] > 0


def test_swing_foot_follows_its_reference_in_single_support(digit_fb):
    clm = digit_fb
    wbc = _wbc(clm)
    q, v = clm.q_ref.copy(), np.zeros(clm.model.nv)
    wbc.step(q, v)
    R, p = wbc.pm.placement("left_sole")
    from kangaroo_wbc.control.wbc import FrameReference

    target = p + np.array([0.0, 0.0, 0.02])
    out = wbc.step(q, v, references=WbcReferences(active_contacts=("right",),
                                                  foot_poses={"left": FrameReference(target, R)}))
    acc = wbc.pm.jacobian("left_sole") @ out.nu_dot + wbc.pm.drift("left_sole")
    assert acc[2] > 0.5 * wbc.settings.foot_kp * 0.02  # accelerates upward toward the target
    np.testing.assert_allclose(out.forces["left"], 0.0)


def test_non_finite_state_raises_input_error(u2ups_fb):
    wbc = WholeBodyController(u2ups_fb, [ContactSpec.rectangle("sole", "sole", 0.2, 0.1)],
                              WbcSettings(base_frame="base"))
    q = u2ups_fb.q_ref.copy()
    v = np.zeros(u2ups_fb.model.nv)
    v[0] = np.inf
    with pytest.raises(InputError):
        wbc.step(q, v)
    q[0] = np.nan
    with pytest.raises(InputError):
        wbc.step(q, np.zeros_like(v))
    with pytest.raises(InputError):
        wbc.step(u2ups_fb.q_ref, np.zeros_like(v), active_contacts=("no_such_contact",))
    for horizon in (float("nan"), 0.0, -0.01):  # a behaviour's stroke-limit horizon
        with pytest.raises(InputError, match="stroke_horizon_s"):
            wbc.step(u2ups_fb.q_ref, np.zeros_like(v), references=WbcReferences(stroke_horizon_s=horizon))


def test_unsupportable_weight_raises_no_solution_found(digit_fb):
    clm = digit_fb
    n = clm.n_a
    weak = ActuatorLimits(np.full(n, -1e-3), np.full(n, 1e-3), np.full(n, -np.inf), np.full(n, np.inf),
                          np.full(n, np.inf))
    # Every corner must push with at least 1 kN: the base then accelerates up at ~400 m/s², which the
    # stationary feet, the 1e-3 N·m actuators and the acceleration bounds cannot all allow.
    pushing = [ContactSpec.rectangle(n, f, 0.16, 0.08, normal_force_min_n=1000.0) for n, f in
               (("right", "right_sole"), ("left", "left_sole"))]
    wbc = WholeBodyController(clm, pushing, WbcSettings(base_frame="torso"), weak)
    with pytest.raises(NoSolutionFound) as info:
        wbc.step(clm.q_ref, np.zeros(clm.model.nv))
    assert info.value.problem is not None


def test_core_does_not_import_rclpy():
    code = ("import sys, kangaroo_wbc.control.wbc, kangaroo_wbc.control.reduced_wbc, "
            "kangaroo_wbc.control.behaviours; assert 'rclpy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("active", [("left", "right"), ("right",)])
def test_kangaroo_corner_forces_through_the_core_point_contacts(kangaroo_fb, active):
    """Kangaroo: eq. (29) with the corner forces applied at the URDF corner frames (3D point contacts
    of the core), independent of the controller's wrench map."""
    from test.control.sim_harness import CORNERS, kangaroo_contacts

    clm = kangaroo_fb
    wbc = WholeBodyController(clm, kangaroo_contacts(clm.model), WbcSettings(base_frame="base_link"))
    q, nu, v = random_state(clm, 3, spread=0.05, speed=0.1)
    out = wbc.step(q, v, active_contacts=active)
    assert_kkt(out.qp)
    frames = [f"{side}_sole_corner_{c}" for side in ("left", "right") for c in CORNERS]
    pd = projected_dynamics(clm, q, v, frames, 3)
    f = np.concatenate([out.forces["left"].reshape(-1), out.forces["right"].reshape(-1)])
    np.testing.assert_allclose(out.tau_a, pd.actuated_forces(out.nu_dot, f),
                               atol=1e-7 * max(1, np.abs(out.tau_a).max()))
    assert np.max(np.abs(pd.base_residual(out.nu_dot, f))) < KKT_TOL


def test_update_model_ahead_of_the_step_is_reused_and_stale_updates_are_not(digit_fb):
    """update_model(q, v) + step(q, v) == step(q, v) alone; a step at another state updates again."""
    clm = digit_fb
    a, b = _wbc(clm), _wbc(clm)
    updates = []
    model_update = b.pm.update
    b.pm.update = lambda *args, **kwargs: (updates.append(1), model_update(*args, **kwargs))[1]
    for seed in (0, 1, 2):
        q, nu, v = random_state(clm, seed, speed=0.2)
        out_a = a.step(q, v, active_contacts=("right", "left"))
        b.update_model(q, v)
        assert b.pm.is_current(q)
        n = len(updates)
        assert n == seed + 1  # update_model updated it
        out_b = b.step(q, v, active_contacts=("right", "left"))
        np.testing.assert_array_equal(out_b.tau_a, out_a.tau_a)
        assert len(updates) == n  # the update was not repeated
    # an update at one state, a step at another: the step must not use the stale model
    q1, _, v1 = random_state(clm, 5, speed=0.2)
    q2, _, v2 = random_state(clm, 6, speed=0.2)
    ref = _wbc(clm).step(q2, v2, active_contacts=("right",))
    b = _wbc(clm)
    b.update_model(q1, v1)
    out = b.step(q2, v2, active_contacts=("right",))
    np.testing.assert_array_equal(out.tau_a, ref.tau_a)
    assert b.pm.is_current(q2) and not b.pm.is_current(q1)
    # an update that fails leaves no model that a step could reuse
    bad = q2.copy()
    bad[-1] = np.nan
    with pytest.raises(InputError):
        b.update_model(bad, v2)
    assert b.pm.is_current(q2)  # rejected before anything changed


def test_task_rows_enter_the_hessian_as_j_transpose_w_j(digit_fb):
    """H = H0 + J^T W J and c = -J^T W r over the stacked enabled tasks (compiled accumulation),
    also with a task added after construction (the stacked-row buffers grow) and one switched off."""
    from kangaroo_wbc.control.tasks import PostureTask

    clm = digit_fb
    wbc = _wbc(clm)
    q, _, v = random_state(clm, 3, speed=0.2)
    extra = PostureTask(clm.n_b, clm.n_a, clm.idx_q_a, weight=0.5, kp=10.0, kd=3.0, name="extra_posture")
    extra.set_reference(q[clm.idx_q_a] + 0.01)
    for add in (False, True):
        if add:  # and a task switched off
            wbc.tasks.append(extra)
            wbc.momentum_task.enabled = False
        wbc.step(q, v, active_contacts=("right",))
        n = wbc.layout.n_nu
        rows = [(t.jacobian_and_target(wbc.pm), t.weight) for t in wbc.tasks if t.enabled]
        assert len(rows) == 5  # com, base, posture, momentum (then the extra task), swing foot
        H = sum(J.T @ (w[:, None] * J) for (J, _), w in rows)
        c = -sum(J.T @ (w * r) for (J, r), w in rows)
        p = wbc.problem
        np.testing.assert_allclose(p.H[:n, :n] - wbc._H0[:n, :n], H, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(p.c[:n], c, rtol=1e-12, atol=1e-9)
        np.testing.assert_array_equal(p.H[n:, :], wbc._H0[n:, :])
        np.testing.assert_array_equal(p.c[n:], 0.0)


def test_compiled_output_pass_equals_the_per_contact_products(digit_fb):
    """Actuator forces, sole wrenches and corner forces of the compiled output pass == the numpy
    products over the contacts (eq. (29)), in double and single support (swing sole: exactly zero)."""
    wbc = WholeBodyController(digit_fb, digit_contacts(), WbcSettings(base_frame="torso"), digit_limits(digit_fb))
    L, pm = wbc.layout, wbc.pm
    for seed, active in ((0, ("right", "left")), (1, ("left",)), (2, ("right",))):
        q, _, v = random_state(digit_fb, seed, speed=0.3)
        out = wbc.step(q, v, active_contacts=active)
        terms = wbc.contact_terms(active)
        x, a = out.qp.x, L.actuated
        tau = pm.M_p[a] @ x[L.nu] + pm.h_p[a]
        for name in L.contact_names:
            t = terms[name]
            f = x[L.force_slice(name)] if t.active else np.zeros(3 * t.spec.n_points)
            wrench = t.W @ f
            tau -= t.J[:, a].T @ wrench
            np.testing.assert_allclose(out.wrenches[name], wrench, rtol=1e-12, atol=1e-9)
            np.testing.assert_array_equal(out.forces[name], f.reshape(-1, 3))
        np.testing.assert_allclose(out.tau_a, tau, rtol=1e-12, atol=1e-9)
        for name in set(L.contact_names) - set(active):
            assert not out.wrenches[name].any() and not out.forces[name].any()
        assert np.abs(tau).max() > 1.0  # nontrivial forces


@pytest.mark.parametrize("seed", [0, 1])
def test_locked_and_limp_actuators_are_reallocated_in_place(digit_fb, seed):
    """A locked actuator does not accelerate (its force is free: the lock carries it); a limp one
    exerts no force; the other rows and the problem's shape stay; ``active`` restores the limits."""
    clm = digit_fb
    wbc = _wbc(clm)
    q, _, v = random_state(clm, seed, speed=0.2)
    names = clm.actuated_joint_names
    locked, limp = names[1], names[7]
    shape = (wbc.problem.A.shape, wbc.problem.G.shape)
    wbc.set_actuator_mode(locked, "locked")
    wbc.set_actuator_mode(limp, "limp")
    out = wbc.step(q, v)
    assert_kkt(out.qp)
    i, k = names.index(locked), names.index(limp)
    assert abs(out.nu_dot[clm.n_b + i]) < KKT_TOL
    assert abs(out.tau_a[k]) < KKT_TOL * max(1.0, np.abs(out.tau_a).max())
    assert (wbc.problem.A.shape, wbc.problem.G.shape) == shape
    assert wbc.actuator_modes[locked] == "locked" and not wbc.driven[i] and not wbc.driven[k]
    for name in (locked, limp):
        wbc.set_actuator_mode(name, "active")
    assert wbc.driven.all()
    np.testing.assert_array_equal(wbc.inequalities[-1].force_max, wbc.limits.force_max)
    with pytest.raises(InputError, match="unknown actuator"):
        wbc.set_actuator_mode("no_such_actuator", "locked")
    with pytest.raises(InputError, match="modes are"):
        wbc.set_actuator_mode(locked, "broken")


def test_task_weights_of_a_tick_override_and_then_restore_the_tasks_own(digit_fb):
    """``WbcReferences.task_weights`` sets a task's weight for the ticks that name it (a zero
    weight leaves the task out of the solution), the tasks not named get their own weight back,
    an actuator-mode change meanwhile sets the posture weight it is restored to, and an unknown
    task name is an InputError naming the tasks."""
    clm = digit_fb
    wbc = _wbc(clm)
    q, _, v = random_state(clm, 0, speed=0.2)
    s = wbc.settings
    off = {"com": 0.0, "base_orientation": 0.0, "posture": 5.0, "angular_momentum": 0.0}
    wbc.step(q, v, ("right",), WbcReferences(task_weights=off))
    assert np.all(wbc.com_task.weight == 0.0) and np.all(wbc.posture_task.weight == 5.0)
    wbc.step(q, v, ("right",), WbcReferences(task_weights={**off, "foot_left": 0.0}))
    assert np.all(wbc.foot_tasks["left"].weight == 0.0)
    wbc.set_actuator_mode(clm.actuated_joint_names[0], "locked")  # the posture weight to come back
    assert np.all(wbc.posture_task.weight == 5.0)  # overridden this tick still
    wbc.step(q, v, ("right",), WbcReferences())
    for task in (wbc.com_task, wbc.base_task, wbc.momentum_task, wbc.foot_tasks["left"]):
        assert np.any(task.weight > 0)
    np.testing.assert_array_equal(wbc.com_task.weight, s.com_weight)
    np.testing.assert_array_equal(wbc.posture_task.weight, s.posture_weight_degraded)
    with pytest.raises(InputError, match="unknown tasks.*tasks are"):
        wbc.step(q, v, ("right",), WbcReferences(task_weights={"knee": 1.0}))


def test_task_gains_of_a_tick_override_and_then_restore_the_tasks_own(digit_fb):
    """``WbcReferences.task_gains`` sets a task's ``(kp, kd)`` for the ticks that name it; a task
    no longer named gets back the gains it had before its first override; unknown tasks and gains
    that are not two finite non-negative numbers are InputErrors."""
    clm = digit_fb
    wbc = _wbc(clm)
    q, _, v = random_state(clm, 0, speed=0.2)
    own = wbc.posture_task.kp.copy(), wbc.posture_task.kd.copy()
    stiff = WbcReferences(task_gains={"posture": (1000.0, 60.0)})
    out = wbc.step(q, v, ("right",), stiff)
    assert np.all(wbc.posture_task.kp == 1000.0) and np.all(wbc.posture_task.kd == 60.0)
    assert np.all(np.isfinite(out.tau_a))
    wbc.step(q, v, ("right",), WbcReferences(task_gains={"posture": (2000.0, 80.0)}))  # a second override
    assert np.all(wbc.posture_task.kp == 2000.0)
    wbc.step(q, v, ("right",), WbcReferences())
    np.testing.assert_array_equal(wbc.posture_task.kp, own[0])
    np.testing.assert_array_equal(wbc.posture_task.kd, own[1])
    with pytest.raises(InputError, match="unknown tasks.*tasks are"):
        wbc.step(q, v, ("right",), WbcReferences(task_gains={"knee": (1.0, 1.0)}))
    for bad in ((1.0,), (float("nan"), 1.0), (-1.0, 1.0)):
        with pytest.raises(InputError, match="two finite numbers"):
            wbc.step(q, v, ("right",), WbcReferences(task_gains={"posture": bad}))
