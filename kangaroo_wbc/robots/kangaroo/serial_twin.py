"""Serial twin of the Kangaroo: 6 revolute joints per leg, and the maps to and from the full model.

The twin keeps the full model's output chain — hip yaw → hip roll → hip pitch → knee → ankle roll →
ankle pitch, the same joint names, link frames, ``<side>_sole`` and corner frames — and drops the
actuators and linkages. Each serial link carries the composite inertia of the full-model bodies
that ride on its segment (actuators on the link that holds their pivot, the lower ankle rods on the
tibia), lumped at the standing pose: the twin is exact in kinematics and approximate in dynamics.

Maps (fixed or floating base):

* :meth:`SerialTwin.full_to_serial`: read the output joints of a full configuration;
* :meth:`SerialTwin.serial_to_full`: closure kinematics with the output joints as targets — solve
  ``e_l(q) = 0`` for the actuators and the non-output passive joints (Newton on
  ``[J_l,a  J_l,u']``, square because each leg has as many outputs as actuators).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ClosureFkError, ModelError
from kangaroo_wbc.model import ClosedLoopModel, ClosureFkInfo
from kangaroo_wbc.robots.kangaroo.description import Description, Inertial, Link
from kangaroo_wbc.robots.kangaroo.generator import SIDES, output_joints


def build_serial(desc: Description, clm: ClosedLoopModel, q_stand: np.ndarray) -> Description:
    """Serial twin description from the full ``desc`` and its closed standing configuration.

    Args:
        desc: the full description (its links carry their ``segment``).
        clm: the full model loaded from ``desc`` (fixed base).
        q_stand: a closed configuration of ``clm`` where the segment inertias are lumped.
    """
    m, d = clm.model, clm.data
    pin.forwardKinematics(m, d, q_stand)
    pin.updateFramePlacements(m, d)
    # serial segment -> the link that carries it
    seg_link = {"base": "base_link"} | {f"{s}_{seg}": f"{s}_{seg}_link" for s in SIDES for seg in
                                        ("hip_yaw", "hip_roll", "femur", "tibia", "ankle_cross", "foot")}
    keep = set(seg_link.values())

    def placement(link: str) -> pin.SE3:
        return d.oMf[m.getFrameId(link, pin.FrameType.BODY)]

    lumped: dict[str, pin.Inertia] = {name: pin.Inertia.Zero() for name in seg_link.values()}
    for link in desc.links:
        if link.inertial is None:
            continue
        target = seg_link.get(link.segment)
        if target is None:
            raise ModelError(f"link {link.name!r} has no serial segment (segment {link.segment!r})")
        inertia = pin.Inertia(link.inertial.mass, link.inertial.com, link.inertial.inertia)
        lumped[target] += (placement(target).actInv(placement(link.name))).act(inertia)

    # Frames kept: the serial links, and every massless frame rigidly attached to one of them.
    parent_of = {j.child: j for j in desc.joints}
    frames = []
    for link in desc.links:
        j = parent_of.get(link.name)
        if link.name in keep or j is None:
            continue
        if j.kind == "fixed" and j.parent in keep and "cut" not in link.name:
            frames.append(link.name)
    links = []
    for link in desc.links:
        if link.name in keep:
            I = lumped[link.name]
            links.append(Link(link.name, Inertial(float(I.mass), np.array(I.lever), np.array(I.inertia)),
                              list(link.visuals), list(link.collisions), link.segment))
        elif link.name in frames:
            links.append(Link(link.name))
    joints = [j for j in desc.joints if j.child in keep or j.child in frames]
    for j in joints:
        if j.parent not in keep:
            raise ModelError(f"serial twin: joint {j.name!r} hangs from dropped link {j.parent!r}")
    return Description(name=f"{desc.name}_serial", links=links, joints=joints)


class SerialTwin:
    """Maps between full closed-chain configurations and serial-twin configurations.

    Args:
        full: the full model (closures, actuators).
        serial: pinocchio model of the serial twin (same base type as ``full``).
    """

    def __init__(self, full: ClosedLoopModel, serial: pin.Model) -> None:
        self.full = full
        self.serial = serial
        self.serial_data = serial.createData()
        fm = full.model
        self.output_joint_names = [n for s in SIDES for n in output_joints(s)]
        missing = [n for n in self.output_joint_names if not fm.existJointName(n) or not serial.existJointName(n)]
        if missing:
            raise ModelError(f"serial twin: output joints {missing} missing in one of the models")
        if serial.nq != full.floating_base * 7 + len(self.output_joint_names):
            raise ModelError(f"serial twin: unexpected configuration size {serial.nq}")
        self.idx_q_out_full = np.array([fm.joints[fm.getJointId(n)].idx_q for n in self.output_joint_names])
        self.idx_v_out_full = np.array([fm.joints[fm.getJointId(n)].idx_v for n in self.output_joint_names])
        self.idx_q_out_serial = np.array([serial.joints[serial.getJointId(n)].idx_q
                                          for n in self.output_joint_names])
        out_v = set(self.idx_v_out_full.tolist())
        #: unknowns of serial_to_full: actuators + passive joints that are not outputs
        self.idx_v_unknown = np.array(sorted(set(full.idx_v_a.tolist())
                                             | {i for i in full.idx_v_u.tolist() if i not in out_v}))

    @classmethod
    def from_urdf(cls, full: ClosedLoopModel, serial_urdf_path: str | Path) -> SerialTwin:
        """The twin of ``full``, its serial model loaded from ``serial_urdf_path`` (same base type)."""
        root = (pin.JointModelFreeFlyer(),) if full.floating_base else ()
        return cls(full, pin.buildModelFromUrdf(str(serial_urdf_path), *root))

    def full_to_serial(self, q_full: np.ndarray) -> np.ndarray:
        """Serial configuration (base, then the 12 output joints [rad]) of a full configuration."""
        q_full = self.full.check_configuration(q_full)
        q = pin.neutral(self.serial)
        if self.full.floating_base:
            q[:7] = q_full[:7]
        q[self.idx_q_out_serial] = q_full[self.idx_q_out_full]
        return q

    def serial_to_full(self, q_serial: np.ndarray, q_guess: np.ndarray | None = None, tol: float = 1e-12,
                       max_iter: int = 50, max_step_rad: float = 0.15) -> tuple[np.ndarray, ClosureFkInfo]:
        """Closed full configuration whose output joints equal those of ``q_serial``.

        Newton on ``e_l(q) = 0`` over the actuators and the non-output passive joints, warm-started
        from ``q_guess`` (default: the full model's reference closed configuration). The outputs are
        moved from those of the guess to the targets in steps of at most ``max_step_rad`` [rad]
        (continuation), so that the solution stays on the assembly branch of the guess.

        Raises:
            ClosureFkError: no convergence (outputs outside the reachable set or singular).
        """
        q_serial = np.asarray(q_serial, float)
        if q_serial.shape != (self.serial.nq,):
            raise ModelError(f"serial configuration has shape {q_serial.shape}, expected ({self.serial.nq},)")
        q = np.array(q_guess if q_guess is not None else self.full.q_ref, float)
        if self.full.floating_base:
            q[:7] = q_serial[:7]
        start = q[self.idx_q_out_full].copy()
        target = q_serial[self.idx_q_out_serial]
        n_steps = max(1, int(np.ceil(np.max(np.abs(target - start), initial=0.0) / max_step_rad)))
        iterations = 0
        for k in range(1, n_steps + 1):
            q[self.idx_q_out_full] = start + (target - start) * (k / n_steps)
            q, info = self.full.newton(q, max_iter, tol, unknowns=self.idx_v_unknown)
            iterations += info.iterations
            if not info.converged:
                raise ClosureFkError(f"serial_to_full did not converge: residual {info.residual:.3e} after "
                                     f"{info.iterations} iterations (continuation step {k}/{n_steps})")
        return q, ClosureFkInfo(iterations, info.residual, True)
