"""Property test of the whole-body controller library on arbitrary finite states (seeded sampling).

States are drawn within and slightly beyond the model's ranges (actuator strokes and speeds +20 %,
base tilt up to ~35 deg, base velocities up to 2 m/s and 3 rad/s). For every sample,
:meth:`WholeBodyController.step` either returns finite actuator forces within the force limits
(to the QP tolerance) or raises a :class:`~kangaroo_wbc.errors.KangarooWbcError` — what the node's
supervisor turns into the safe mode — and :meth:`WbcSupervisor.tick` always returns finite forces
strictly within the limits.
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.control.contacts import ContactSpec
from kangaroo_wbc.control.supervisor import SafetySettings, WbcSupervisor
from kangaroo_wbc.control.wbc import WbcSettings, WholeBodyController
from kangaroo_wbc.errors import KangarooWbcError
from kangaroo_wbc.robots.kangaroo.robot import SOLES, load_kangaroo, standing_configuration

SEED = 20240611
TIME_BUDGET_S = 8.0  # sampling stops after this (the test stays under 10 s of sampling)
MIN_SAMPLES = 5
BEYOND = 1.2  # sample up to 20 % beyond the ranges
FORCE_TOL_REL = 1e-3  # QP (ADMM) tolerance on the force-limit rows, relative to the limit


@pytest.fixture(scope="module")
def kangaroo():
    clm = load_kangaroo(floating_base=True)
    contacts = [ContactSpec.from_corner_frames(clm.model, side, SOLES[side],
                                               [f"{SOLES[side]}_corner_{c}" for c in ("fl", "fr", "rl", "rr")])
                for side in ("left", "right")]
    return clm, contacts


def _sample_state(rng, clm, q0, limits):
    """A state around the standing pose; the spread is drawn from small to beyond the ranges."""
    k = rng.choice([0.02, 0.1, 0.3, 1.0])  # fraction of the ranges (x BEYOND)
    q, v = q0.copy(), np.zeros(clm.model.nv)
    lo, hi = limits.position_min, limits.position_max
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    q[clm.idx_q_a] = q0[clm.idx_q_a] + k * (mid - q0[clm.idx_q_a]) + k * BEYOND * half * rng.uniform(-1.0, 1.0, clm.n_a)
    q[:3] += k * rng.uniform([-0.2, -0.2, -0.15], [0.2, 0.2, 0.1])
    axis = rng.normal(size=3)
    R = pin.exp3(axis / np.linalg.norm(axis) * k * rng.uniform(0.0, 0.6))
    q[3:7] = pin.Quaternion(R).coeffs()  # x y z w, as pinocchio's free flyer
    vmax = np.where(np.isfinite(limits.velocity_max), limits.velocity_max, 1.0)
    v[clm.idx_v_a] = k * BEYOND * vmax * rng.uniform(-1.0, 1.0, clm.n_a)
    v[:3] = k * rng.uniform(-2.0, 2.0, 3)
    v[3:6] = k * rng.uniform(-3.0, 3.0, 3)
    return q, v


def test_wbc_output_finite_within_limits_or_kangaroo_error(kangaroo):
    clm, contacts = kangaroo
    wbc = WholeBodyController(clm, contacts, WbcSettings(base_frame="base_link"))
    sup = WbcSupervisor(WholeBodyController(clm, contacts, WbcSettings(base_frame="base_link")),
                        SafetySettings(max_tilt_rad=3.2, stroke_margin_m=1.0))  # no latch: exercise the QP
    lim = wbc.limits
    q0 = standing_configuration(clm)
    wbc.step(q0, np.zeros(clm.model.nv))  # initialise the references at the standing pose
    rng = np.random.default_rng(SEED)
    outcomes = {"ok": 0, "error": 0}
    t_end = time.perf_counter() + TIME_BUDGET_S
    n = 0
    while n < MIN_SAMPLES or time.perf_counter() < t_end:
        q, v = _sample_state(rng, clm, q0, lim)
        try:
            out = wbc.step(q, v)
        except KangarooWbcError:
            outcomes["error"] += 1
        else:
            outcomes["ok"] += 1
            tau = out.tau_a
            assert np.all(np.isfinite(tau)), (n, tau)
            tol = FORCE_TOL_REL * np.abs(lim.force_max)
            assert np.all(tau <= lim.force_max + tol) and np.all(tau >= lim.force_min - tol), (n, tau)
        cmd = sup.tick(0.001 * n, q, v)
        assert np.all(np.isfinite(cmd.tau_a))
        assert np.all(cmd.tau_a <= lim.force_max) and np.all(cmd.tau_a >= lim.force_min)
        n += 1
    assert n >= MIN_SAMPLES
    assert outcomes["ok"] > 0, outcomes  # the property is not vacuous
    print(f"{n} samples: {outcomes}")
