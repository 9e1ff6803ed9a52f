"""Baseline actuator-space PD controller with gravity compensation.

The simplest controller that keeps a simulated closed-chain robot where it is: it holds the
actuator positions ``theta_a`` at a target,

.. math::  \\bar\\tau = K_p (\\theta_a^{ref} - \\theta_a) + K_d (\\dot\\theta_a^{ref} - \\dot\\theta_a)
           + \\tau_{ff}

with an optional feed-forward ``tau_ff`` compensating gravity: the full-model generalised bias forces
mapped to the actuators through the closures (eq. (14)-(18) of the Kangaroo paper),

.. math::  \\tau_{ff} = g_a + J_m^T g_u ,\\qquad \\dot\\theta_u = J_m \\dot\\theta_a .

Two sources of ``tau_ff`` are provided: :meth:`ClosedChainSim.actuator_bias_forces` (MuJoCo's
``qfrc_bias`` through the equality Jacobian, i.e. ground truth), or
:func:`model_gravity_compensation` (``kangaroo_wbc.model`` on pinocchio, from the joint positions).
With a floating base both hold the base fixed, which is right for a robot on a crane or for a
mechanism whose base rests on the floor, not for a biped balancing on its feet (use the WBC there).

It is a reference for tests and demos, not the whole-body controller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from kangaroo_wbc.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from kangaroo_wbc.model import ClosedLoopModel
    from kangaroo_wbc.sim.simulator import ClosedChainSim


def _as_gain(value: float | Sequence[float] | np.ndarray, n: int, name: str) -> np.ndarray:
    g = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    if not np.all(np.isfinite(g)) or np.any(g < 0):
        raise InputError(f"{name} must be finite and >= 0, got {value!r}")
    return g


@dataclass
class BaselinePd:
    """Actuator-space PD with an optional feed-forward term.

    Args:
        kp: proportional gains [N/m] (or [N·m/rad]), scalar or one per actuator.
        kd: derivative gains [N·s/m] (or [N·m·s/rad]).
        n_actuators: number of actuators.
        force_limits: optional symmetric output limits [N]; the output is clipped to them.
    """

    kp: float | Sequence[float]
    kd: float | Sequence[float]
    n_actuators: int
    force_limits: Sequence[float] | np.ndarray | None = None

    def __post_init__(self) -> None:
        n = int(self.n_actuators)
        self._kp = _as_gain(self.kp, n, "kp")
        self._kd = _as_gain(self.kd, n, "kd")
        self._limits = None if self.force_limits is None else _as_gain(self.force_limits, n, "force_limits")

    def compute(self, theta_a: np.ndarray, theta_dot_a: np.ndarray, theta_ref: np.ndarray,
                theta_dot_ref: np.ndarray | None = None, tau_ff: np.ndarray | None = None) -> np.ndarray:
        """Actuator force command [N] (or [N·m]).

        Args:
            theta_a: actuator positions [m] (absolute: calibrated or ground truth).
            theta_dot_a: actuator velocities [m/s].
            theta_ref: target positions [m].
            theta_dot_ref: target velocities [m/s] (default 0).
            tau_ff: feed-forward forces [N], e.g. gravity compensation (default 0).

        Raises:
            InputError: wrong sizes or non-finite inputs.
        """
        n = len(self._kp)
        arrays = {"theta_a": theta_a, "theta_dot_a": theta_dot_a, "theta_ref": theta_ref,
                  "theta_dot_ref": np.zeros(n) if theta_dot_ref is None else theta_dot_ref,
                  "tau_ff": np.zeros(n) if tau_ff is None else tau_ff}
        vals = {}
        for k, v in arrays.items():
            a = np.asarray(v, dtype=float).reshape(-1)
            if a.shape != (n,) or not np.all(np.isfinite(a)):
                raise InputError(f"BaselinePd: {k} must be {n} finite values, got {v!r}")
            vals[k] = a
        tau = (self._kp * (vals["theta_ref"] - vals["theta_a"])
               + self._kd * (vals["theta_dot_ref"] - vals["theta_dot_a"]) + vals["tau_ff"])
        if self._limits is not None:
            tau = np.clip(tau, -self._limits, self._limits)
        return tau


def model_gravity_compensation(clm: ClosedLoopModel) -> Callable[[Mapping[str, float]], np.ndarray]:
    """Gravity feed-forward from the closed-linkage core: ``joint positions by name -> g_a + J_m^T g_u``.

    The joint positions (e.g. :meth:`ClosedChainSim.joint_positions_by_name`, or the state
    estimator's output) are placed by name into the model's reference configuration (joints not
    given keep it); a floating base stays at its reference pose (upright base).
    """
    from kangaroo_wbc.model.dynamics import gravity_actuated

    joints = [clm.model.joints[clm.model.getJointId(name)] for name in clm.joint_names]
    slots = [(name, jm.idx_q, jm.nq) for name, jm in zip(clm.joint_names, joints)]

    def compensate(joint_positions: Mapping[str, float]) -> np.ndarray:
        q = np.array(clm.q_ref, dtype=float)
        for name, iq, nq in slots:
            if name not in joint_positions:
                continue
            v = float(joint_positions[name])
            if nq == 1:
                q[iq] = v
            else:  # unbounded revolute stored as (cos, sin)
                q[iq:iq + 2] = (np.cos(v), np.sin(v))
        return gravity_actuated(clm, q)

    return compensate


def hold_position(sim: ClosedChainSim, pd: BaselinePd, theta_ref: np.ndarray, n_steps: int,
                  gravity: bool = True) -> None:
    """Run ``pd`` on the simulator's true actuator state for ``n_steps`` control periods."""
    for _ in range(int(n_steps)):
        ff = sim.actuator_bias_forces() if gravity else None
        sim.set_command(pd.compute(sim.actuator_positions(), sim.actuator_velocities(), theta_ref, tau_ff=ff))
        sim.step()
