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
    later become float arrays of the task's size (the compiled fills read them as such)."""
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


# ------------------------------------------------------------------ numpy oracles of the compiled fills
def _com_oracle(t, pm):
    a_des = t.acceleration + t.kp * (t.position - pm.com) + t.kd * (t.velocity - pm.com_velocity) - t.disturbance
    return pm.J_com, a_des - pm.com_drift


def _orientation_oracle(t, pm):
    R, _ = pm.placement(t.frame)
    w = pm.twist(t.frame)[3:]
    a_des = t.angular_acceleration + t.kp * pin.log3(t.rotation @ R.T) + t.kd * (t.angular_velocity - w)
    return pm.jacobian(t.frame)[3:], a_des - pm.drift(t.frame)[3:]


def _pose_oracle(t, pm):
    R, p = pm.placement(t.frame)
    e = np.concatenate([t.position - p, pin.log3(t.rotation @ R.T)])
    a_des = t.acceleration + t.kp * e + t.kd * (t.twist - pm.twist(t.frame))
    return pm.jacobian(t.frame), a_des - pm.drift(t.frame)


def _posture_oracle(t, pm):
    J = np.zeros((t.n_a, t.n_b + t.n_a))
    J[:, t.n_b:] = np.eye(t.n_a)
    theta, theta_dot = pm.q[t.idx_q_a], pm.nu[t.n_b:]
    return J, t.acceleration + t.kp * (t.position - theta) + t.kd * (t.velocity - theta_dot)


def _momentum_oracle(t, pm):
    return pm.A_G[3:], t.rate + t.kd * (t.momentum - pm.h_G[3:]) - pm.A_G_drift[3:]


@pytest.mark.parametrize("frame", ["torso", "foot"])
def test_compiled_task_fills_write_the_rows_of_their_numpy_form(digit_fb, frame):
    """Each task's compiled fill == the readable numpy form of its rows (pinocchio's ``log3``), with
    references away from the state, per-axis gains and a CoM disturbance estimate, at an offset in
    a stacked buffer whose other rows it leaves alone; the orientation task on the root (zero angular
    drift) and on a foot link (drift and twist of a moving frame)."""
    clm = digit_fb
    pm = ProjectedModel(clm, [frame, "right_sole"])
    tasks = [(ComTask(kp=[100, 110, 120], kd=[10, 11, 12]), _com_oracle),
             (OrientationTask(frame, kp=[50, 60, 70], kd=[5, 6, 7]), _orientation_oracle),
             (FramePoseTask("right_sole", kp=[100, 110, 120, 130, 140, 150], kd=[10, 11, 12, 13, 14, 15]),
              _pose_oracle),
             (PostureTask(clm.n_b, clm.n_a, clm.idx_q_a, weight=np.linspace(0.1, 1.0, clm.n_a)), _posture_oracle),
             (AngularMomentumTask(kd=[3, 4, 5]), _momentum_oracle)]
    for seed in (0, 1):
        q, nu, _ = random_state(clm, seed, speed=0.5)
        pm.update(q, nu)
        com, o, pose, posture, momentum = (t for t, _ in tasks)
        com.set_reference(pm.com + [0.01, -0.02, 0.005], [0.01, -0.02, 0.0], [0.1, 0.0, -0.1])
        com.disturbance = np.array([0.05, -0.1, 0.2]) * (seed + 1)
        R, p = pm.placement(frame)
        o.set_reference(pin.exp3(np.array([0.05, -0.1, 0.2 + seed])) @ R, [0.1, 0.0, 0.2], [0.0, 0.3, 0.0])
        R, p = pm.placement("right_sole")
        pose.set_reference(p + [0.01, -0.02, 0.03], pin.exp3(np.array([0.1, -0.2, 0.3 + seed])) @ R,
                           [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [1.0, -1.0, 0.5, 0.0, 0.2, -0.3])
        posture.set_reference(q[clm.idx_q_a] + 0.01 * (seed + 1), np.full(clm.n_a, 0.1), np.full(clm.n_a, -0.2))
        momentum.set_reference([0.1, 0.2, -0.1], [0.0, 0.05, 0.0])
        for task, oracle in tasks:
            J_exp, r_exp = oracle(task, pm)
            k, m = 2, task.dim + 4
            rows = (np.full((m, pm.n_nu), np.nan), np.full(m, np.nan), np.full(m, np.nan))
            assert task.fill(pm, rows, k) == k + task.dim
            J, r, w = (a[k:k + task.dim] for a in rows)
            np.testing.assert_array_equal(J, J_exp, err_msg=task.name)
            np.testing.assert_allclose(r, r_exp, rtol=1e-12, atol=1e-10, err_msg=task.name)
            np.testing.assert_array_equal(w, task.weight, err_msg=task.name)
            for a in rows:  # the rows outside the task's are left alone
                assert np.isnan(a[:k]).all() and np.isnan(a[k + task.dim:]).all()
            np.testing.assert_array_equal(task.jacobian_and_target(pm)[1], r)
            assert np.abs(r_exp).max() > 0.1  # nontrivial targets
        e = np.concatenate([pose.position - p, pin.log3(pose.rotation @ R.T)])
        assert np.abs(e[3:]).max() > 0.1  # a real rotation error
