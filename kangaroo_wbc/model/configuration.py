"""Configurations and velocity supports of a pinocchio spanning tree (pure functions).

* :func:`check_vector`: an input vector checked for size and finiteness (a clear error, never NaN);
* :func:`configuration_from_pose`: a configuration from a pose file (joint name -> value);
* :func:`support_mask`: the velocity indices that move each frame.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml

from kangaroo_wbc.errors import ConfigError, InputError, JointNotFound, suggest
from kangaroo_wbc.model.sources import read_text


def check_vector(x: np.ndarray, n: int, what: str) -> np.ndarray:
    """Return ``x`` as a float array after checking that it has shape ``(n,)`` and is finite.

    Raises:
        InputError: wrong shape or non-finite values (the message names ``what``).
    """
    x = np.asarray(x, dtype=float)
    if x.shape != (n,):
        raise InputError(f"{what} has shape {x.shape}, expected ({n},)")
    if not np.all(np.isfinite(x)):
        raise InputError(f"{what} contains non-finite values")
    return x


def configuration_from_pose(model: pin.Model, pose: str | Path | dict, base: np.ndarray | None = None) -> np.ndarray:
    """A configuration of ``model`` from a pose: joint name -> value, other joints at ``base`` (default:
    neutral).

    ``pose`` is a mapping or a YAML/JSON file holding one (optionally under a ``joints`` key). A
    1-DOF joint takes a number [rad or m]; a multi-DOF joint a list of its ``nq`` configuration
    coordinates in pinocchio's order (a ball joint: quaternion ``x, y, z, w``).

    Raises:
        ConfigError: unreadable file, non-numeric or wrongly sized value (file and key named).
        JointNotFound: a joint the model does not have (the valid names listed).
    """
    source = "<reference pose>"
    if not isinstance(pose, dict):
        path = Path(pose)
        source = str(path)
        text = read_text(path, "reference pose file", ConfigError)
        try:
            pose = yaml.safe_load(text)  # JSON is YAML too
        except (yaml.YAMLError, ValueError, RecursionError) as exc:
            raise ConfigError(f"{path}: not valid YAML or JSON: {exc}") from exc
        if isinstance(pose, dict) and isinstance(pose.get("joints"), dict):
            pose = pose["joints"]
        if not isinstance(pose, dict):
            raise ConfigError(f"{path}: expected a mapping joint name -> value, got {type(pose).__name__}")
    q = pin.neutral(model) if base is None else np.array(base, dtype=float)
    names = list(model.names)[1:]
    for name, value in pose.items():
        name = str(name)
        if name not in names:
            raise JointNotFound(f"{source}: unknown joint {name!r}." + suggest(name, names))
        jm = model.joints[model.getJointId(name)]
        try:
            x = np.atleast_1d(np.asarray(value, dtype=float))
        except (TypeError, ValueError):
            raise ConfigError(f"{source}: key {name!r}: expected a number or a list of numbers, "
                              f"got {value!r}") from None
        if x.shape != (jm.nq,) or not np.all(np.isfinite(x)):
            raise ConfigError(f"{source}: key {name!r}: expected {jm.nq} finite value(s) (the joint's "
                              f"configuration coordinates), got {value!r}")
        if jm.shortname() in ("JointModelSpherical", "JointModelFreeFlyer"):
            x[-4:] /= np.linalg.norm(x[-4:])
        q[jm.idx_q:jm.idx_q + jm.nq] = x
    return q


def support_mask(model: pin.Model, frame_ids) -> np.ndarray:
    """(len(frame_ids), nv): 1 on the velocity indices that move each frame (its support), else 0."""
    mask = np.zeros((len(frame_ids), model.nv))
    for k, fid in enumerate(frame_ids):
        for j in model.supports[int(model.frames[int(fid)].parentJoint)][1:]:
            mask[k, model.joints[j].idx_v:model.joints[j].idx_v + model.joints[j].nv] = 1.0
    return mask


__all__ = ["check_vector", "configuration_from_pose", "support_mask"]
