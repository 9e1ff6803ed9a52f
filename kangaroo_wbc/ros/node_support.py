"""What the nodes share: their model from the ``urdf_dir`` / ``rig`` parameters, joint indices, the
sole-wrench subscriptions and parameter checks that only a running node can make."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def load_model(urdf_dir: str, floating_base: bool = True) -> Any:
    """The Kangaroo closed-loop model from ``urdf_dir`` (empty: the source tree or installed share).

    Raises:
        ConfigError: the files are missing or malformed (the message names the parameter and the file).
    """
    from pathlib import Path

    from kangaroo_wbc.errors import ConfigError, KangarooWbcError
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    try:
        return load_kangaroo(floating_base=floating_base, urdf_dir=Path(urdf_dir) if urdf_dir else None)
    except (KangarooWbcError, OSError) as exc:
        raise ConfigError(f"parameter 'urdf_dir' ({urdf_dir or 'package urdf/'}): {exc}") from exc


def load_node_model(urdf_dir: str, rig: str = "", rig_leg: str = "left") -> Any:
    """The model a node runs on: the robot's (:func:`load_model`) or, on a bench (``rig``), the
    bench's derived from the same files (:func:`~kangaroo_wbc.robots.kangaroo.rig.load_one_leg`).

    Raises:
        ConfigError: the files are missing or malformed.
    """
    if not rig:
        return load_model(urdf_dir)
    from pathlib import Path

    from kangaroo_wbc.errors import ConfigError, KangarooWbcError
    from kangaroo_wbc.robots.kangaroo.rig import load_one_leg

    try:
        return load_one_leg(rig_leg, Path(urdf_dir) if urdf_dir else None)
    except (KangarooWbcError, OSError) as exc:
        where = urdf_dir or "package urdf/"
        raise ConfigError(f"rig {rig!r} ({rig_leg} leg) from 'urdf_dir' ({where}): {exc}") from exc


def joint_indices(model: Any, names: Sequence[str]) -> tuple[Any, Any]:
    """``(idx_q, idx_v)``: where the 1-DOF joints ``names`` sit in pinocchio's ``q`` and ``v``."""
    import numpy as np

    joints = [model.joints[model.getJointId(n)] for n in names]
    return np.array([j.idx_q for j in joints]), np.array([j.idx_v for j in joints])


def subscribe_sole_wrenches(node: Any, sole_frames: Sequence[str]) -> None:
    """``contact/<sole>/wrench`` → ``node.component.on_sole_force(i, normal force [N], stamp [s])``."""
    from geometry_msgs.msg import WrenchStamped

    from kangaroo_wbc.ros import qos
    from kangaroo_wbc.ros.conversions import wrench_stamped_to_arrays

    def on_wrench(i: int, msg: WrenchStamped | bytes) -> None:
        wrench, _, stamp_s = wrench_stamped_to_arrays(msg)
        node.component.on_sole_force(i, float(wrench[2]), stamp_s)

    for i, sole in enumerate(sole_frames):  # read from the serialised form (1 kHz)
        node.create_stamped_subscription(WrenchStamped, f"contact/{sole}/wrench",
                                         lambda msg, i=i: on_wrench(i, msg), qos.SENSOR_LATEST)


def add_parameter_check(node: Any, names: Sequence[str], check: Any) -> None:
    """Check parameters ``names`` of ``node`` against what only the running node knows (e.g. its
    model's actuator names): ``check(name, value) -> None | reason``. A set-parameters request that
    fails is rejected with ``"<name>: <reason>"`` (what ``ros2 param set`` prints), never a
    traceback; the values in effect now are checked at once.

    Raises:
        ConfigError: a value in effect at start-up fails (parameter file or ``-p``).
    """
    from rcl_interfaces.msg import SetParametersResult

    from kangaroo_wbc.errors import ConfigError

    for name in names:
        reason = check(name, node.get_parameter(name).value)
        if reason:
            raise ConfigError(f"node {node.get_name()!r}: parameter {name!r}: {reason}")

    def validate(parameters: Any) -> Any:
        for p in parameters:
            reason = check(p.name, p.value) if p.name in names else None
            if reason:
                return SetParametersResult(successful=False, reason=f"{p.name}: {reason}")
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(validate)


def unknown_names(values: Sequence[str], valid: Sequence[str], what: str) -> str | None:
    """None if every value is one of ``valid``, else the reason naming the first unknown one."""
    from kangaroo_wbc.errors import suggest

    unknown = [v for v in values or () if v not in valid]
    return f"unknown {what} {unknown[0]!r}." + suggest(unknown[0], list(valid)) if unknown else None


__all__ = ["load_model", "load_node_model", "joint_indices", "subscribe_sole_wrenches", "add_parameter_check",
           "unknown_names"]


#: With a simulated clock, a state silent this long [s] on the steady clock is stale whatever the
#: simulated time says (the simulator stopped; a loaded machine stalls it well below this).
STALLED_CLOCK_S = 2.0


def state_silence_s(now: tuple[float, float | None], last: tuple[float, float | None], timeout_s: float) -> float:
    """How long [s] no state has come, for a state watchdog: ``now`` and ``last`` (the latest
    state's) are ``(steady clock, simulated clock or None)`` [s]. On the steady clock; while both
    have a simulated time, on the simulated clock (a simulation stalled by a busy machine is not a
    lost state), unless the steady clock has gone ``max(timeout_s, STALLED_CLOCK_S)`` without a
    state (the simulator itself stopped)."""
    (wall, sim), (wall_0, sim_0) = now, last
    silent = wall - wall_0
    if sim is None or sim_0 is None or silent > max(timeout_s, STALLED_CLOCK_S):
        return silent
    return sim - sim_0
