"""Closed-loop harness: the WBC driving the MuJoCo simulator (integration-test helper).

The state given to the controller emulates the estimator's output: base pose and twist from the
simulator's ground truth, passive joints from closure FK on the actuator positions (warm-started),
actuator velocities as measured. Nothing here is used by the library.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pinocchio as pin

from kangaroo_wbc.control.behaviours import Behaviour, BehaviourState
from kangaroo_wbc.control.contacts import ContactSpec
from kangaroo_wbc.control.wbc import WbcSettings, WholeBodyController
from kangaroo_wbc.model import ClosedLoopModel

ROOT = Path(__file__).resolve().parents[2]
CORNERS = ("fl", "fr", "rl", "rr")


def kangaroo_paths() -> tuple[Path, Path, Path] | None:
    """``(urdf, closures, mjcf)`` of the generated Kangaroo model in ``urdf/``, or None."""
    d = ROOT / "urdf"
    paths = (d / "kangaroo.urdf", d / "kangaroo_closures.yaml", d / "kangaroo.xml")
    return paths if all(p.is_file() for p in paths) else None


def kangaroo_contacts(model: pin.Model, mu: float = 0.8) -> list[ContactSpec]:
    return [ContactSpec.from_corner_frames(model, side, f"{side}_sole", [f"{side}_sole_corner_{c}" for c in CORNERS],
                                           mu=mu) for side in ("left", "right")]


@dataclass
class ClosedLoop:
    """WBC + simulator at the simulator's control period."""

    clm: ClosedLoopModel
    sim: object
    wbc: WholeBodyController
    log: list = field(default_factory=list)

    @classmethod
    def kangaroo(cls, settings: WbcSettings | None = None, seed: int = 0, reduced: bool = False) -> ClosedLoop:
        from kangaroo_wbc.sim.simulator import ClosedChainSim

        paths = kangaroo_paths()
        assert paths is not None, "generated Kangaroo model not found in urdf/"
        urdf, closures, mjcf = paths
        clm = ClosedLoopModel.from_files(urdf, closures, floating_base=True)
        from kangaroo_wbc.robots.kangaroo.robot import standing_actuator_positions

        # ideal actuators: these tests measure the controller against an idealised plant and state
        # (the ball-screw drives are measured by `kangaroo-wbc demo` and test/sim/test_sim_actuator.py)
        sim = ClosedChainSim(str(mjcf), seed=seed, initial_actuator_positions=standing_actuator_positions(),
                             ideal_actuators=True)
        settings = settings or WbcSettings(base_frame="base_link")
        if reduced:
            from kangaroo_wbc.control.reduced_wbc import ReducedWholeBodyController

            wbc = ReducedWholeBodyController(clm, kangaroo_contacts(clm.model), settings)
        else:
            wbc = WholeBodyController(clm, kangaroo_contacts(clm.model), settings)
        return cls(clm, sim, wbc)

    @property
    def full(self) -> WholeBodyController:
        """The full controller (the reduced one delegates to it and shares its model and tasks)."""
        return getattr(self.wbc, "full", self.wbc)

    def __post_init__(self) -> None:
        m = self.clm.model
        gt = self.sim.ground_truth()
        self._q_idx = np.array([m.joints[m.getJointId(n)].idx_q for n in gt.joint_names])
        self._v_idx = np.array([m.joints[m.getJointId(n)].idx_v for n in gt.joint_names])
        self._act = np.array([self.clm.actuated_joint_names.index(n) for n in self.sim.actuator_names])
        self._q_prev: np.ndarray | None = None

    def state(self) -> tuple[np.ndarray, np.ndarray]:
        """``(q, v)`` for the controller (closed configuration, closure-consistent velocity)."""
        m, clm = self.clm.model, self.clm
        gt = self.sim.ground_truth()
        q, v = np.zeros(m.nq), np.zeros(m.nv)
        q[:3], q[3:7] = gt.base_position_in_world, gt.base_orientation_xyzw
        q[self._q_idx] = gt.joint_positions
        v[self._v_idx] = gt.joint_velocities
        x, y, z, w = gt.base_orientation_xyzw
        R = pin.Quaternion(w, x, y, z).toRotationMatrix()
        v[:3], v[3:6] = R.T @ gt.base_linear_velocity_in_world, gt.base_angular_velocity_in_base
        guess = q if self._q_prev is None else np.concatenate([q[:7], self._q_prev[7:]])
        qc, _ = clm.closure_fk(q[clm.idx_q_a], q_guess=guess, tol=1e-11, max_iter=20, raise_on_failure=False)
        qc[:7] = q[:7]
        self._q_prev = qc
        return qc, v

    def run(self, behaviour: Behaviour | None, duration_s: float,
            disturbance: Callable[[float], np.ndarray | None] | None = None, body: str = "base_link") -> np.ndarray:
        """Run for ``duration_s``; returns the log rows
        ``[t, com(3), com_ref(3), wbc_time, n_contacts, swing_sole_error]``.

        ``disturbance(t)`` may return a world force (3,) [N] applied at ``body``'s origin.
        """
        sim, wbc, full = self.sim, self.wbc, self.full
        import mujoco

        bid = mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_BODY, body)
        started = False
        rows = []
        for _ in range(int(round(duration_s / sim.timestep))):
            q, v = self.state()
            t = sim.time
            if behaviour is not None and not started:
                wbc.step(q, v)  # first tick: initialise the references at the current state
                behaviour.start(t, BehaviourState.from_controller(full))
                started = True
            ref = behaviour.references(t) if behaviour is not None else None
            out = wbc.step(q, v, references=ref)
            sim.set_command(out.tau_a[self._act])
            if disturbance is not None:
                f = disturbance(t)
                sim.data.xfrc_applied[bid, :3] = 0.0 if f is None else f
            sim.step()
            swing = [c.name for c in full.contacts if c.name not in out.active_contacts]
            pm = full.pm
            feet = [full.foot_tasks[n] for n in swing]
            foot_err = max((float(np.linalg.norm(f.position - pm.placement(f.frame)[1])) for f in feet), default=0.0)
            rows.append([t, *full.pm.com, *full.com_task.position, out.timing["total"], len(out.active_contacts),
                         foot_err])
        self.log = np.array(rows)
        return self.log
