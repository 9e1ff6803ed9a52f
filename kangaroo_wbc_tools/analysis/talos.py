"""TALOS lower body, the serial reference of Section V of the Kangaroo paper.

The TALOS URDF ships with the ``example-robot-data`` package (no Python module; files under the
``cmeel.prefix/share/example-robot-data/robots/talos_data/robots`` folder of site-packages). Only the
pelvis (``base_link``) and the two 6-joint legs are kept: the upper body is removed, not merged,
so that both robots are compared as lower bodies.
"""

from __future__ import annotations

import site
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import ModelError

TALOS_URDF = "talos_reduced.urdf"
#: TALOS leg joints per side, hip yaw → ankle roll (leg_<side>_1 … leg_<side>_6).
TALOS_LEG_JOINTS = [f"leg_{side}_{i}_joint" for side in ("left", "right") for i in range(1, 7)]
#: A nominal walking posture of TALOS (hip yaw, hip roll, hip pitch, knee, ankle pitch, ankle roll):
#: knees slightly bent, as in the paper's Fig. 17.
TALOS_NOMINAL_LEG = np.array([0.0, 0.0, -0.411354, 0.859395, -0.448041, -0.001708])


def find_talos_urdf() -> Path:
    """Locate the TALOS URDF of the installed ``example-robot-data`` package."""
    roots = [Path(p) for p in site.getsitepackages() + [site.getusersitepackages()]] + [Path(sys.prefix)]
    for root in roots:
        for cand in (root / "cmeel.prefix/share/example-robot-data/robots/talos_data/robots" / TALOS_URDF,
                     root / "share/example-robot-data/robots/talos_data/robots" / TALOS_URDF):
            if cand.is_file():
                return cand
    raise ModelError(f"{TALOS_URDF} not found: install the 'example-robot-data' package (PyPI)")


def subtree_model(model: pin.Model, keep_joints: list[str]) -> pin.Model:
    """A new model with only ``keep_joints`` (and their inertias); the other bodies are removed.

    Every kept joint's parent must be kept too (or be the universe). Frames attached to kept
    joints (or to the universe, e.g. the root link) are copied.
    """
    names = list(model.names)
    missing = [n for n in keep_joints if n not in names]
    if missing:
        raise ModelError(f"joints not in the model: {missing}")
    keep_ids = sorted(names.index(n) for n in keep_joints)
    new_id = {0: 0}
    new = pin.Model()
    new.name = model.name
    for j in keep_ids:
        parent = int(model.parents[j])
        if parent not in new_id:
            raise ModelError(f"joint {names[j]!r} kept without its parent {names[parent]!r}")
        jm = model.joints[j]
        sl_q = slice(jm.idx_q, jm.idx_q + jm.nq)
        sl_v = slice(jm.idx_v, jm.idx_v + jm.nv)
        nid = new.addJoint(new_id[parent], jm, model.jointPlacements[j], names[j], model.effortLimit[sl_v],
                           model.velocityLimit[sl_v], model.lowerPositionLimit[sl_q],
                           model.upperPositionLimit[sl_q])
        new.appendBodyToJoint(nid, model.inertias[j], pin.SE3.Identity())
        new_id[j] = nid
    # The root link's own inertia lives in the frames attached to the universe; keep its mass on
    # the universe (irrelevant for fixed-base quantities, kept for mass reporting).
    for f in list(model.frames)[1:]:
        pj = int(f.parentJoint)
        if pj in new_id and (pj != 0 or f.type == pin.FrameType.BODY):
            new.addFrame(pin.Frame(f.name, new_id[pj], 0, f.placement, f.type, f.inertia), False)
    return new


def talos_lower_body(urdf: Path | None = None) -> tuple[pin.Model, np.ndarray]:
    """Fixed-base TALOS legs and their nominal walking configuration."""
    full = pin.buildModelFromUrdf(str(urdf or find_talos_urdf()))
    legs = subtree_model(full, TALOS_LEG_JOINTS)
    q = np.concatenate([TALOS_NOMINAL_LEG, TALOS_NOMINAL_LEG])
    return legs, q
