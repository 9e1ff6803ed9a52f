"""Kangaroo presets of the robot-agnostic simulator (:mod:`kangaroo_wbc.sim`): sole boxes from the
corner frames, MJCF export, factory. They live with the robot, so that ``sim`` never imports ``robots``.

.. code-block:: python

    from kangaroo_wbc.robots.kangaroo.sim import make_kangaroo_sim

    sim = make_kangaroo_sim(floating_base=True, seed=0)   # standing on the floor, loops closed
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kangaroo_wbc.errors import ConfigError
from kangaroo_wbc.robots.kangaroo.files import kangaroo_files
from kangaroo_wbc.sim.mjcf_export import UrdfTree, export_mjcf, parse_urdf
from kangaroo_wbc.sim.simulator import ClosedChainSim

#: Sole frames of the Kangaroo model.
KANGAROO_SOLES: tuple[str, str] = ("left_sole", "right_sole")
#: Sole size used when the URDF has no corner frames: (length_x, width_y) [m].
DEFAULT_SOLE_SIZE_M: tuple[float, float] = (0.20, 0.10)


def _pose_in_ancestor(tree: UrdfTree, link: str, ancestor: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Pose ``(p [m], R)`` of ``link`` in ``ancestor`` when only fixed joints separate them, else None."""
    by_child = tree.joint_by_child
    p, R = np.zeros(3), np.eye(3)
    while link != ancestor:
        j = by_child.get(link)
        if j is None or j.type != "fixed":
            return None
        p = j.xyz + j.R @ p
        R = j.R @ R
        link = j.parent
    return p, R


def sole_boxes_from_corners(
    urdf_path: str | Path,
    soles: tuple[str, ...] = KANGAROO_SOLES,
    default_size_m: tuple[float, float] = DEFAULT_SOLE_SIZE_M,
) -> dict[str, tuple[float, float, float, float]]:
    """Sole boxes ``(length_x, width_y, center_x, center_y)`` [m] spanned by each sole's corner frames.

    Corner frames are links whose name starts with the sole name and contains ``corner``, rigidly
    attached to the sole (fixed joints only). A sole without corners gets ``default_size_m``
    centred on the sole frame.
    """
    tree = parse_urdf(urdf_path)
    out = {}
    for sole in soles:
        if sole not in tree.links:
            raise ConfigError(f"{urdf_path}: sole frame {sole!r} not found")
        pts = []
        for name in tree.links:
            if name.startswith(sole) and "corner" in name:
                p = _pose_in_common_body(tree, name, sole)
                if p is not None:
                    pts.append(p)
        if len(pts) >= 3:
            P = np.array(pts)
            lo, hi = P.min(axis=0), P.max(axis=0)
            size, center = hi - lo, 0.5 * (hi + lo)
            out[sole] = (float(size[0]), float(size[1]), float(center[0]), float(center[1]))
        else:
            out[sole] = (default_size_m[0], default_size_m[1], 0.0, 0.0)
    return out


def _pose_in_common_body(tree: UrdfTree, corner: str, sole: str) -> np.ndarray | None:
    """Corner position in the sole frame, both rigidly attached to the same link."""
    by_child = tree.joint_by_child
    # walk up from the sole over fixed joints to its rigid body, then express both there
    body = sole
    while body in by_child and by_child[body].type == "fixed":
        body = by_child[body].parent
    corner_pose = _pose_in_ancestor(tree, corner, body)
    if corner_pose is None:
        return None
    sole_pose = _pose_in_ancestor(tree, sole, body)
    assert sole_pose is not None  # body was reached from the sole over fixed joints only
    p, R = sole_pose
    return R.T @ (corner_pose[0] - p)


def export_kangaroo_mjcf(
    urdf_path: str | Path | None = None,
    closures_path: str | Path | None = None,
    *,
    floating_base: bool = True,
    **kwargs: Any,
) -> str:
    """MJCF of the Kangaroo model with its sole boxes (``kwargs`` go to :func:`export_mjcf`)."""
    if urdf_path is None or closures_path is None:
        urdf_path, closures_path = kangaroo_files()
    kwargs.setdefault("soles", sole_boxes_from_corners(urdf_path))
    kwargs.setdefault("model_name", "kangaroo")
    kwargs.setdefault("visual_collisions", True)
    return export_mjcf(urdf_path, closures_path, floating_base=floating_base, **kwargs)


def make_kangaroo_sim(
    *,
    floating_base: bool = True,
    mjcf: str | Path | None = None,
    export_options: dict[str, Any] | None = None,
    **sim_kwargs: Any,
) -> ClosedChainSim:
    """The Kangaroo simulator: standing on the floor (``floating_base``) or hanging on a crane.

    Args:
        floating_base: free base on the floor, or root link welded in the air.
        mjcf: an existing MJCF (text or path); default: exported from the URDF and closures now.
        export_options: extra :func:`export_mjcf` options.
        sim_kwargs: :class:`ClosedChainSim` options (``seed``, ``substeps``, ``sensor_config`` ...).
    """
    if mjcf is None:
        mjcf = export_kangaroo_mjcf(floating_base=floating_base, **(export_options or {}))
    return ClosedChainSim(mjcf, **sim_kwargs)
