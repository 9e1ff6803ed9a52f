"""Position and speed limits of the passive joints, read from the model (the URDF's ``<limit>``).

The whole-body controller keeps the passive joints inside them
(:mod:`kangaroo_wbc.control.constraints.passive_joint_limits`): through ``J_m`` (eq. (7)) a passive
joint's position is a function of the actuators, so its limits constrain the actuated motion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import InputError

#: A position limit at or beyond this magnitude counts as absent (URDF/MJCF importers' "unbounded").
UNBOUNDED_LIMIT = 1e10


class PassiveLimits(NamedTuple):
    """The 1-DOF passive joints with a finite position limit (:func:`passive_joint_limits`).

    ``lower``/``upper`` [rad or m] are the model's limits moved inwards by the margin (``-inf``/``inf``
    for a missing side); ``velocity`` [rad/s or m/s] the speed limit (``inf`` where the model has none).
    """

    names: list[str]
    #: configuration and velocity index of each joint (pinocchio ``idx_q``, ``idx_v``)
    idx_q: np.ndarray
    idx_v: np.ndarray
    #: row of each joint in the passive velocities ``theta_dot_u`` (``idx_v_u``), i.e. in ``J_m``
    row_u: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray


def passive_joint_limits(model: pin.Model, passive_joint_names: Sequence[str], idx_v_u: np.ndarray,
                         margin: float | np.ndarray = 0.0) -> PassiveLimits:
    """The passive 1-DOF joints with a finite position limit, their limits moved inwards by ``margin``
    [rad or m] (a scalar or one value per passive joint of ``passive_joint_names``), read from
    the model's ``lowerPositionLimit``/``upperPositionLimit`` and ``velocityLimit``. A side at or
    beyond :data:`UNBOUNDED_LIMIT` is absent; a joint without a finite side, multi-DOF joints and
    limits that leave no room (``lower + margin >= upper - margin``) are not listed.

    Raises:
        InputError: a negative or non-finite margin, or one of the wrong size.
    """
    m = model
    names_u = list(passive_joint_names)
    margins = np.broadcast_to(np.asarray(margin, dtype=float), (len(names_u),)) if np.ndim(margin) == 0 \
        else np.asarray(margin, dtype=float)
    if margins.shape != (len(names_u),) or not np.all(np.isfinite(margins) & (margins >= 0.0)):
        raise InputError(f"passive-joint limit margin must be >= 0 and finite, a scalar or "
                         f"({len(names_u)},) values, got {margin!r}")
    row = {int(i): k for k, i in enumerate(idx_v_u)}
    out: tuple[list, ...] = ([], [], [], [], [], [], [])
    for name, mg in zip(names_u, margins):
        jm = m.joints[m.getJointId(name)]
        if jm.nq != 1 or jm.nv != 1:
            continue
        lo, hi = float(m.lowerPositionLimit[jm.idx_q]), float(m.upperPositionLimit[jm.idx_q])
        lo = lo + mg if math.isfinite(lo) and abs(lo) < UNBOUNDED_LIMIT else -math.inf
        hi = hi - mg if math.isfinite(hi) and abs(hi) < UNBOUNDED_LIMIT else math.inf
        if not (lo < hi) or (math.isinf(lo) and math.isinf(hi)):
            continue
        vel = float(m.velocityLimit[jm.idx_v])
        for lst, val in zip(out, (name, jm.idx_q, jm.idx_v, row[jm.idx_v], lo, hi,
                                  vel if vel > 0.0 and math.isfinite(vel) else math.inf)):
            lst.append(val)
    names, *index, lo_a, hi_a, vel_a = out
    iq, iv, ru = (np.array(x, dtype=np.int64) for x in index)
    return PassiveLimits(names, iq, iv, ru, np.array(lo_a, dtype=float), np.array(hi_a, dtype=float),
                         np.array(vel_a, dtype=float))


__all__ = ["PassiveLimits", "UNBOUNDED_LIMIT", "passive_joint_limits"]
