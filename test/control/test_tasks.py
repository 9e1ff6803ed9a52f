"""Unit tests of the tasks: Jacobians and drifts against finite differences on the closed manifold.

For each task quantity ``x(q)``: ``J nu = dx/dt`` (central differences along a closed path through
``q`` with velocity ``v = T nu``), and ``drift = d/dt (J(q) nu)`` at constant ``nu`` (which is
``Jdot v + J k`` since ``v_dot = T_dot nu = k``). The cost ``(H, c)`` must equal the weighted squared
residual up to a constant.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.control.tasks import (
    AngularMomentumTask,
    ComTask,
    FramePoseTask,
    OrientationTask,
    PostureTask,
)
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.projected_model import ProjectedModel
from test.control.conftest import FD_TOL, closed_neighbour, random_state

EPS = 1e-5  # [s] finite-difference step along the motion


def _tasks(clm):
    return {
        "com": (ComTask(kp=0.0, kd=0.0), lambda pm: pm.com.copy()),
        "orientation": (OrientationTask("base_link" if clm.model.existFrame("base_link") else "torso", kp=0.0,
                                        kd=0.0), None),
        "foot": (FramePoseTask("right_sole", kp=0.0, kd=0.0), None),
        "posture": (PostureTask(clm.n_b, clm.n_a, clm.idx_q_a, kp=0.0, kd=0.0), lambda pm: pm.q[clm.idx_q_a].copy()),
        "momentum": (AngularMomentumTask(kd=0.0), None),
    }


def _position(name, task, fn, pm):
    if fn is not None:
        return fn(pm)
    if name == "orientation":
        return pm.placement(task.frame)[0].copy()
    if name == "foot":
        R, p = pm.placement(task.frame)
        return R.copy(), p.copy()
    return None


def _velocity_fd(name, x_plus, x_minus):
    if name == "orientation":
        return pin.log3(x_plus @ x_minus.T) / (2 * EPS)
    if name == "foot":
        (Rp, pp), (Rm, pm_) = x_plus, x_minus
        return np.concatenate([(pp - pm_) / (2 * EPS), pin.log3(Rp @ Rm.T) / (2 * EPS)])
    return (x_plus - x_minus) / (2 * EPS)


@pytest.mark.parametrize("name", ["com", "orientation", "foot", "posture", "momentum"])
def test_task_jacobian_and_drift_against_finite_differences(name, digit_fb):
    clm = digit_fb
    task, fn = _tasks(clm)[name]
    frames = ["right_sole", "torso"]
    pm = ProjectedModel(clm, frames)
    q, nu, v = random_state(clm, 11)
    pm.update(q, nu)
    J, r = task.jacobian_and_target(pm)
    drift = -r  # zero gains and references: r = -drift
    x0 = _position(name, task, fn, pm)
    q_p, q_m = closed_neighbour(clm, q, v, EPS), closed_neighbour(clm, q, v, -EPS)
    pm.update(q_p, nu)
    x_p, Jnu_p = _position(name, task, fn, pm), task.jacobian_and_target(pm)[0] @ nu
    pm.update(q_m, nu)
    x_m, Jnu_m = _position(name, task, fn, pm), task.jacobian_and_target(pm)[0] @ nu
    if name == "momentum":
        pm.update(q, nu)
        np.testing.assert_allclose(J @ nu, pm.h_G[3:], atol=1e-10)  # J nu is the angular momentum
    else:
        assert x0 is not None
        np.testing.assert_allclose(J @ nu, _velocity_fd(name, x_p, x_m), atol=FD_TOL)
    drift_fd = (Jnu_p - Jnu_m) / (2 * EPS)
    np.testing.assert_allclose(drift, drift_fd, atol=FD_TOL * max(1.0, np.abs(drift).max()))


def test_cost_is_weighted_squared_residual(digit_fb):
    pm = ProjectedModel(digit_fb, ["right_sole"])
    q, nu, _ = random_state(digit_fb, 2)
    pm.update(q, nu)
    task = FramePoseTask("right_sole", weight=[1, 2, 3, 4, 5, 6], kp=10.0, kd=3.0)
    task.set_reference(pm.placement("right_sole")[1] + 0.01)
    n = pm.n_nu + 12
    H, c = task.cost(pm, n)
    J, r = task.jacobian_and_target(pm)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.normal(size=n)
        res = J @ x[:pm.n_nu] - r
        lhs = 0.5 * x @ H @ x + c @ x
        rhs = 0.5 * res @ (task.weight * res) - 0.5 * r @ (task.weight * r)
        assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-10)
    assert np.all(H[pm.n_nu:] == 0.0) and np.all(c[pm.n_nu:] == 0.0)


def test_pd_targets_point_toward_the_reference(u2ups_fb):
    pm = ProjectedModel(u2ups_fb, ["sole"])
    q, nu, _ = random_state(u2ups_fb, 0, speed=0.0)
    pm.update(q, np.zeros_like(nu))
    task = ComTask(kp=100.0, kd=0.0)
    task.set_reference(pm.com + np.array([0.01, 0.0, 0.0]))
    _, r = task.jacobian_and_target(pm)
    np.testing.assert_allclose(r + pm.com_drift, [1.0, 0.0, 0.0], atol=1e-12)


def test_negative_gain_rejected():
    with pytest.raises(InputError):
        ComTask(kp=-1.0)


def test_references_and_gains_are_checked_on_assignment():
    """A reference of the wrong size or with a NaN is refused with the task's name; gains assigned
    later become float arrays of the task's size (the compiled pass reads them as such)."""
    task = ComTask()
    with pytest.raises(InputError, match="com: position"):
        task.set_reference([0.1, 0.2])
    with pytest.raises(InputError, match="com: velocity"):
        task.velocity = [0.0, np.nan, 0.0]
    with pytest.raises(InputError, match="not numeric"):
        task.acceleration = ["a", "b", "c"]
    ref = np.array([0.1, 0.2, 0.3])
    task.position = ref
    ref[0] = 5.0  # a copy was kept
    assert task.position[0] == 0.1
    task.kp = 7.0
    assert task.kp.shape == (3,) and task.kp.dtype == float and np.all(task.kp == 7.0)
    with pytest.raises(InputError):
        task.kd = -1.0
    posture = PostureTask(6, 4, np.arange(4))
    with pytest.raises(InputError, match="posture: position"):
        posture.set_reference(np.zeros(5))
    with pytest.raises(InputError, match="rotation"):
        OrientationTask("torso").set_reference(np.eye(2))


def test_frame_pose_target_compiled_equals_the_formula(digit_fb):
    """The swing-sole target of the compiled pass == a_ref + kp e + kd (V_ref - V) - drift with
    e = [p_ref - p; pinocchio's log3(R_ref Rᵀ)]."""
    pm = ProjectedModel(digit_fb, ["right_sole"])
    task = FramePoseTask("right_sole", kp=[100, 110, 120, 130, 140, 150], kd=[10, 11, 12, 13, 14, 15])
    for seed in (0, 1):
        q, nu, _ = random_state(digit_fb, seed, speed=0.5)
        pm.update(q, nu)
        R, p = pm.placement("right_sole")
        task.set_reference(p + [0.01, -0.02, 0.03], pin.exp3(np.array([0.1, -0.2, 0.3 + seed])) @ R,
                           [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [1.0, -1.0, 0.5, 0.0, 0.2, -0.3])
        J, r = task.jacobian_and_target(pm)
        e = np.concatenate([task.position - p, pin.log3(task.rotation @ R.T)])
        expected = task.acceleration + task.kp * e + task.kd * (task.twist - pm.twist("right_sole"))
        np.testing.assert_allclose(r, expected - pm.drift("right_sole"), rtol=1e-12, atol=1e-10)
        np.testing.assert_array_equal(J, pm.jacobian("right_sole"))
        assert np.abs(e[3:]).max() > 0.1  # a real rotation error
