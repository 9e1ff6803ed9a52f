"""Pose of every URDF link in its parent link: what ``/tf`` and ``/tf_static`` carry.

robot_state_publisher's contract, computed with pinocchio: for every URDF joint, the transform of
its child link in its parent link. Fixed joints give constant transforms (``/tf_static``), the
others depend on the joint positions (``/tf``). The poses come from pinocchio's forward kinematics
of the spanning tree with a fixed base, which is the URDF's own tree:

.. math:: {}^{p}T_{c} = ({}^{0}T_{p})^{-1}\\,{}^{0}T_{c}

Used by the ``link_tf`` node (live, from ``joint_states``) and by the bag writer (recorded runs).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

from kangaroo_wbc.errors import ConfigError, InputError


def urdf_joints(urdf_text: str) -> list[tuple[str, str, str, str]]:
    """``(joint, type, parent link, child link)`` of every joint of a URDF document."""
    def attr(el: ET.Element, child: str | None, key: str) -> str:
        node = el if child is None else el.find(child)
        return "" if node is None else str(node.get(key, ""))

    return [(attr(j, None, "name"), attr(j, None, "type"), attr(j, "parent", "link"), attr(j, "child", "link"))
            for j in ET.fromstring(urdf_text).iter("joint")]


@dataclass(frozen=True)
class LinkTransform:
    """Pose of ``child`` in ``parent``: translation [m] and unit quaternion (x, y, z, w)."""

    parent: str
    child: str
    translation: np.ndarray
    quaternion_xyzw: np.ndarray


class LinkPoses:
    """Link-in-parent transforms of a URDF from joint positions.

    Args:
        urdf_text: the URDF document (its joints define the parent/child pairs).
        model: a fixed-base pinocchio model of the same URDF (every link a body frame).
        joint_names: the order of the positions given to :meth:`moving` (1-DOF joints, ``nq`` 1).

    Raises:
        ConfigError: a URDF link without a body frame in ``model``, or an unknown joint name.
    """

    def __init__(self, urdf_text: str, model: pin.Model, joint_names: Sequence[str]) -> None:
        self.model, self.data = model, model.createData()
        unknown_joints = [n for n in joint_names if not model.existJointName(n)]
        if unknown_joints:
            raise ConfigError(f"LinkPoses: joints not in the model: {unknown_joints}")
        self.joint_names = list(joint_names)
        self._idx_q = np.array([model.joints[model.getJointId(n)].idx_q for n in joint_names], dtype=int)
        self._q = pin.neutral(model)
        frame = {f.name: i for i, f in enumerate(model.frames) if f.type == pin.FrameType.BODY}
        joints = urdf_joints(urdf_text)
        unknown = sorted({link for *_, parent, child in joints for link in (parent, child)} - set(frame))
        if unknown:
            raise ConfigError(f"LinkPoses: URDF links without a pinocchio body frame: {unknown}")
        pairs = [(frame[parent], frame[child], parent, child, kind == "fixed") for _, kind, parent, child in joints]
        self._moving = [p[:4] for p in pairs if not p[4]]
        self._fixed = [p[:4] for p in pairs if p[4]]

    @property
    def n_moving(self) -> int:
        return len(self._moving)

    @property
    def n_fixed(self) -> int:
        return len(self._fixed)

    def links(self) -> list[str]:
        """Every child link (the frames that /tf and /tf_static carry)."""
        return [child for *_, child in self._moving + self._fixed]

    def fixed(self) -> list[LinkTransform]:
        """Transforms of the fixed joints (independent of the positions)."""
        return self._as_transforms(self._fixed, self._poses(self._fixed))

    def moving(self, positions: np.ndarray) -> list[LinkTransform]:
        """Transforms of the movable joints at ``positions`` (in :attr:`joint_names` order)."""
        return self._as_transforms(self._moving, self.moving_array(positions))

    def moving_array(self, positions: np.ndarray) -> np.ndarray:
        """``(n_moving, 7)``: translation [m] and quaternion (x, y, z, w) of each movable joint's
        child in its parent at ``positions``, in :meth:`moving`'s order.

        Raises:
            InputError: wrong size or a non-finite position.
        """
        positions = np.asarray(positions, dtype=float)
        if positions.shape != (len(self.joint_names),):
            raise InputError(f"LinkPoses: expected {len(self.joint_names)} positions, got shape {positions.shape}")
        if not np.all(np.isfinite(positions)):
            raise InputError("LinkPoses: non-finite joint position")
        self._q[self._idx_q] = positions
        return self._poses(self._moving)

    def moving_pairs(self) -> list[tuple[str, str]]:
        """``(parent, child)`` of each row of :meth:`moving_array`."""
        return [(parent, child) for *_, parent, child in self._moving]

    def _poses(self, pairs) -> np.ndarray:
        """``(n, 7)`` poses of ``pairs`` at :attr:`_q` (batched: one FK, numpy for the rest)."""
        out = np.empty((len(pairs), 7))
        if not pairs:
            return out
        pin.framesForwardKinematics(self.model, self.data, self._q)
        oMf = self.data.oMf
        parent = np.array([oMf[i].homogeneous for i, *_ in pairs])
        child = np.array([oMf[i].homogeneous for _, i, *_ in pairs])
        r_parent_t = parent[:, :3, :3].transpose(0, 2, 1)
        out[:, :3] = np.einsum("nij,nj->ni", r_parent_t, child[:, :3, 3] - parent[:, :3, 3])
        out[:, 3:] = Rotation.from_matrix(r_parent_t @ child[:, :3, :3]).as_quat()
        return out

    @staticmethod
    def _as_transforms(pairs, poses: np.ndarray) -> list[LinkTransform]:
        return [LinkTransform(parent, child, pose[:3].copy(), pose[3:].copy())
                for (*_, parent, child), pose in zip(pairs, poses, strict=True)]
