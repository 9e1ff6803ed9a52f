"""The simulated robot's ankle force/torque sensors (``docs/ros2_control.md``, issue #37).

A sensor at frame ``S`` (a MuJoCo body of the foot, e.g. ``left_foot_link``) reads the wrench the
foot exerts on the leg through it: the foot's rigid group (the bodies welded to the sole site's
body, mass ``m_f``, CoM ``c``) carries MuJoCo's contact wrench on the sole and its weight, and
passes on their sum. About ``S``'s origin in ``S``'s axes:

.. math::

    f_S = R_Sᵀ (f_{gr} + m_f g), \\qquad
    τ_S = R_Sᵀ (τ_{gr}(p_C) + (p_C - p_S) × f_{gr} + (c - p_S) × m_f g)

with ``g = (0, 0, -g)``, ``[f_gr; τ_gr(p_C)]`` the floor's wrench on the sole about the sole
origin ``p_C`` (:meth:`~kangaroo_wbc.sim.simulator.ClosedChainSim.contact_wrenches`). Sign:
standing, ``f_S`` points up the leg (``+z`` of an upright sensor), ``f_z`` = the sole's normal
force minus the foot's weight. The foot's own acceleration is left out (a quasi-static sensor, as
the comparison in :mod:`kangaroo_wbc.components.ankle_ft` assumes).
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

from kangaroo_wbc.errors import ModelError


class SimulatedAnkleFt:
    """The ankle sensors of a simulator: ``{sensor frame: sole}`` pairs.

    Raises:
        ModelError: a sensor frame with no MuJoCo body, a sole the simulator does not know, or a
            sensor body outside its sole's foot.
    """

    def __init__(self, sim: Any, frames: dict[str, str]) -> None:
        m = sim.model
        self.sim = sim
        group = np.zeros(m.nbody, dtype=int)  # rigid group: nearest ancestor-or-self with a joint
        for b in range(1, m.nbody):
            group[b] = b if m.body_jntnum[b] else group[m.body_parentid[b]]
        self._bodies: dict[str, tuple[int, int, np.ndarray]] = {}
        for frame, sole in frames.items():
            bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, frame)
            if bid < 0:
                raise ModelError(f"ankle F/T frame {frame!r}: no such body in the MJCF")
            if sole not in sim.sole_names:
                raise ModelError(f"ankle F/T frame {frame!r}: unknown sole {sole!r} (soles: {sim.sole_names})")
            sid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SITE, sole)
            foot = group[m.site_bodyid[sid]]
            if group[bid] != foot:
                raise ModelError(f"ankle F/T frame {frame!r} is not on the foot of {sole!r}")
            members = np.flatnonzero(group == foot)
            self._bodies[frame] = (bid, sid, members)
        self.frames = dict(frames)

    def mass_below_kg(self, frame: str) -> float:
        """The foot's mass below the sensor at ``frame`` [kg]."""
        return float(np.sum(self.sim.model.body_mass[self._bodies[frame][2]]))

    def read(self) -> dict[str, np.ndarray]:
        """``{frame: [f_S; τ_S]}`` (6,) [N, N·m] now (module docstring)."""
        m, d = self.sim.model, self.sim.data
        g = np.asarray(m.opt.gravity, dtype=float)
        contacts = self.sim.contact_wrenches()
        out = {}
        for frame, sole in self.frames.items():
            bid, sid, members = self._bodies[frame]
            c = contacts[sole]
            R_c = d.site_xmat[sid].reshape(3, 3)
            p_c, p_s = d.site_xpos[sid], d.xpos[bid]
            R_s = d.xmat[bid].reshape(3, 3)
            f_gr = R_c @ c.force_in_sole
            tau = R_c @ c.torque_in_sole + np.cross(p_c - p_s, f_gr)
            masses = m.body_mass[members]
            mass = float(np.sum(masses))
            weight = mass * g
            if mass > 0.0:
                com = (masses[:, None] * d.xipos[members]).sum(axis=0) / mass
                tau = tau + np.cross(com - p_s, weight)
            out[frame] = np.concatenate([R_s.T @ (f_gr + weight), R_s.T @ tau])
        return out
