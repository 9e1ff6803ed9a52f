"""Fixtures of the control tests (unit tests: no ROS, no simulator).

* ``u2ups_fb``: the 2-DOF U-2UPS platform of :mod:`test.model.mechanisms` on a floating base,
  standing on its ``sole`` frame (one contact).
* ``digit_fb``: the third-party Digit-like two-leg fixture on a floating base (12 actuators,
  6 six-dimensional loops) with ``right_sole``/``left_sole`` frames added at the feet, z up at the
  reference configuration (its own foot frames are arbitrarily rotated).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.control.contacts import ContactSpec
from kangaroo_wbc.control.wbc import ActuatorLimits
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.checks import random_closed_configuration
from test.model.conftest import third_party_paths
from test.model.mechanisms import u2ups

#: Tolerances (named, see STYLE): finite differences, solver KKT, exact identities.
FD_STEP = 1e-6
FD_TOL = 1e-5
KKT_TOL = 1e-3  # absolute, rows in [N] and [m/s²] of magnitude ~1e2 (OSQP eps_rel 1e-6)
EXACT_TOL = 1e-9


@pytest.fixture(scope="session")
def u2ups_fb(tmp_path_factory) -> ClosedLoopModel:
    urdf, yml = u2ups(tmp_path_factory.mktemp("u2ups"))
    return ClosedLoopModel.from_files(urdf, yml, floating_base=True)


def add_sole_frames(clm: ClosedLoopModel, feet: dict[str, str]) -> None:
    """Add frames named by ``feet`` keys at the feet (values), world-aligned at ``clm.q_ref``."""
    m = clm.model
    data = m.createData()
    pin.framesForwardKinematics(m, data, clm.q_ref)
    for sole, foot in feet.items():
        if m.existFrame(sole):
            continue
        f = m.frames[m.getFrameId(foot)]
        oMsole = pin.SE3(np.eye(3), data.oMf[m.getFrameId(foot)].translation.copy())
        placement = data.oMi[f.parentJoint].inverse() * oMsole
        m.addFrame(
            pin.Frame(sole, f.parentJoint, f.parentFrame, placement, pin.FrameType.OP_FRAME)
        )
    clm.data = m.createData()


@pytest.fixture(scope="session")
def digit_fb() -> ClosedLoopModel:
    urdf, yml = third_party_paths("digit_like_2legs")
    clm = ClosedLoopModel.from_files(urdf, yml, floating_base=True)
    add_sole_frames(clm, {"right_sole": "foot", "left_sole": "foot_left"})
    return clm


def digit_contacts(mu: float = 0.8) -> list[ContactSpec]:
    return [
        ContactSpec.rectangle("right", "right_sole", 0.16, 0.08, mu=mu),
        ContactSpec.rectangle("left", "left_sole", 0.16, 0.08, mu=mu),
    ]


def digit_limits(clm: ClosedLoopModel, force_max: float = 500.0) -> ActuatorLimits:
    """The fixture's URDF limits are placeholders (effort 1, zero stroke): use generous ones."""
    n = clm.n_a
    return ActuatorLimits(
        force_min=np.full(n, -force_max),
        force_max=np.full(n, force_max),
        position_min=np.full(n, -np.inf),
        position_max=np.full(n, np.inf),
        velocity_max=np.full(n, np.inf),
    )


def random_state(
    clm: ClosedLoopModel, seed: int, spread: float = 0.1, speed: float = 0.3
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A closed configuration with a random base pose, and a random independent velocity ``nu``.

    Returns ``(q, nu, v)`` with ``v`` the closure-consistent full velocity.
    """
    rng = np.random.default_rng(seed)
    q = random_closed_configuration(clm, rng, spread=spread)
    q[:3] = rng.normal(0.0, 0.1, 3)
    q[3:7] = pin.Quaternion(pin.exp3(rng.normal(0.0, 0.2, 3))).coeffs()
    nu = rng.normal(0.0, speed, clm.n_b + clm.n_a)
    v = clm.complete_velocity(q, nu[clm.n_b :], nu[: clm.n_b])
    return q, nu, v


def closed_neighbour(clm: ClosedLoopModel, q: np.ndarray, v: np.ndarray, eps: float) -> np.ndarray:
    """Configuration reached after ``eps`` [s] along ``v``, projected back onto the closures."""
    q_guess = pin.integrate(clm.model, q, eps * v)
    q_new, info = clm.closure_fk(q_guess[clm.idx_q_a], q_guess, tol=1e-13, max_iter=50)
    assert info.converged
    return q_new


__all__ = [
    "FD_STEP",
    "FD_TOL",
    "KKT_TOL",
    "EXACT_TOL",
    "add_sole_frames",
    "digit_contacts",
    "digit_limits",
    "random_state",
    "closed_neighbour",
    "Path",
]


KANGAROO_DIR = Path(__file__).resolve().parents[2] / "urdf"


@pytest.fixture(scope="session")
def kangaroo_fb() -> ClosedLoopModel:
    """The generated Kangaroo model (76 joints, 24 loops incl. universal-joint cuts); skipped if absent."""
    urdf, closures = KANGAROO_DIR / "kangaroo.urdf", KANGAROO_DIR / "kangaroo_closures.yaml"
    if not (urdf.is_file() and closures.is_file()):
        pytest.skip("urdf/kangaroo.urdf not generated")
    return ClosedLoopModel.from_files(urdf, closures, floating_base=True)


def assert_kkt(sol, tol: float = 1e-4) -> None:
    """KKT residuals of a QP solution below ``tol`` relative to the problem's scale (OSQP's own
    termination criterion is relative: eps_abs + eps_rel * scale)."""
    p, kkt = sol.problem, sol.kkt()
    finite = [np.abs(a[np.isfinite(a)]) for a in (p.b, p.h, p.h_lower)]
    primal_scale = max([1.0] + [float(a.max()) for a in finite if a.size])
    dual_scale = max(
        1.0, float(np.abs(p.c).max(initial=0.0)), float(np.abs(p.H @ sol.x).max(initial=0.0))
    )
    assert kkt.primal <= tol * primal_scale, (kkt, primal_scale)
    assert kkt.dual <= tol * dual_scale, (kkt, dual_scale)
    assert kkt.complementarity <= tol * primal_scale * dual_scale, kkt


def ankle_dead_point_configuration(
    clm: ClosedLoopModel, ankle_m: float, side: str = "left"
) -> np.ndarray:
    """Kangaroo closed configuration near the lower-rod dead point of one ankle (urdf/README.md,
    "Ankle window: knee-dependent limits"): the standing pose with that leg fully compressed
    (``leg_length`` at the end of its stroke, 0.15 m) and both ankle actuators at ``ankle_m``. At
    that knee the dead point (singular ``J_l,u``) is at about 0.005 m of common ankle stroke, inside
    the stroke box but past the lower rods' limits (the reachable set ends 10° before it: the
    controller never goes there; a wrong estimate or a disturbance can); reached by continuation
    along the actuators (closure FK stays on the branch)."""
    from kangaroo_wbc.robots.kangaroo.robot import standing_configuration

    q = standing_configuration(clm)
    theta = q[clm.idx_q_a].copy()
    col = {
        k: clm.actuated_joint_names.index(f"{side}_{k}_actuator")
        for k in ("leg_length", "ankle_inner", "ankle_outer")
    }
    for s in np.linspace(theta[col["leg_length"]], 0.15, 20):
        theta[col["leg_length"]] = s
        q, _ = clm.closure_fk(theta, q)
    for a in np.linspace(theta[col["ankle_inner"]], ankle_m, 25):
        theta[col["ankle_inner"]] = theta[col["ankle_outer"]] = a
        q, _ = clm.closure_fk(theta, q)
    return q
