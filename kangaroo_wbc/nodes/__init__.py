"""ROS 2 nodes of kangaroo_wbc: thin adapters around the library (one file per node)."""

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


def joint_indices(model: Any, names: Sequence[str]) -> tuple[Any, Any]:
    """``(idx_q, idx_v)``: where the 1-DOF joints ``names`` sit in pinocchio's ``q`` and ``v``."""
    import numpy as np

    joints = [model.joints[model.getJointId(n)] for n in names]
    return np.array([j.idx_q for j in joints]), np.array([j.idx_v for j in joints])


def subscribe_sole_wrenches(node: Any, sole_frames: Sequence[str]) -> None:
    """``contact/<sole>/wrench`` → ``node.component.on_sole_force(i, normal force [N], stamp [s])``."""
    from geometry_msgs.msg import WrenchStamped

    from kangaroo_wbc.ros import qos
    from kangaroo_wbc.ros.conversions import time_msg_to_seconds

    def on_wrench(i: int, msg: WrenchStamped) -> None:
        node.component.on_sole_force(i, msg.wrench.force.z, time_msg_to_seconds(msg.header.stamp))

    for i, sole in enumerate(sole_frames):
        node.create_subscription(WrenchStamped, f"contact/{sole}/wrench",
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


# ---------------------------------------------------------------------------------------- payloads
#: The latched topic on which the controller publishes the payloads its model carries.
PAYLOADS_TOPIC = "model/payloads"


def payload_links(clm: Any) -> list[str]:
    """The links of ``clm`` a payload may go on (pinocchio's body frames: the URDF links, which are
    the simulator's bodies)."""
    import pinocchio as pin

    return [f.name for f in clm.model.frames if f.type == pin.FrameType.BODY]


def parse_payload_parameter(values: Sequence[str]) -> dict[str, float]:
    """The ``payloads`` parameter (``["LINK:MASS_KG", ...]``, e.g. ``["base_link:6.0"]``; ``torso`` is
    ``base_link``, a ``kg`` suffix is allowed) → ``{link: mass [kg]}``. Links are not checked here
    (:meth:`ModelPayloads.check`).

    Raises:
        InputError: an entry not of that form, a mass not finite or beyond ``MAX_PAYLOAD_KG`` in
            size, or a link given twice.
    """
    import math
    import re

    from kangaroo_wbc.components.simulated_robot import MAX_PAYLOAD_KG, payload_link
    from kangaroo_wbc.errors import InputError

    out: dict[str, float] = {}
    for text in values or ():
        link, colon, mass_text = str(text).partition(":")
        link, mass_text = link.strip(), mass_text.strip().removesuffix("kg").strip()
        if not (colon and re.fullmatch(r"[A-Za-z0-9_]+", link)):
            raise InputError(f"{text!r}: expected LINK:MASS_KG such as base_link:6.0")
        try:
            mass = float(mass_text)
        except ValueError:
            raise InputError(f"{text!r}: the mass {mass_text!r} is not a number [kg]") from None
        if not (math.isfinite(mass) and abs(mass) <= MAX_PAYLOAD_KG):
            raise InputError(f"{text!r}: the mass must be finite and at most {MAX_PAYLOAD_KG:g} kg in size")
        link = payload_link(link)
        if link in out:
            raise InputError(f"{text!r}: link {link!r} given twice")
        out[link] = mass
    return out


class ModelPayloads:
    """The payloads a closed-loop model carries, set as a whole: :meth:`set` makes each body's mass its
    mass as loaded plus the payloads on it, through
    :meth:`~kangaroo_wbc.model.ClosedLoopModel.add_payload` (the difference only, so setting what the
    model already carries changes nothing). One object per model (:func:`model_payloads`): nodes that
    share a model (the composed deployment) share it, and a change is applied once.
    """

    def __init__(self, clm: Any) -> None:
        self.clm = clm
        m = clm.model
        self._links = payload_links(clm)
        self._body = {name: m.frames[m.getFrameId(name)].parentJoint for name in self._links}
        #: each body's mass as loaded [kg], by joint index
        self._nominal = {j: float(m.inertias[j].mass) for j in set(self._body.values())}
        self.carried: dict[str, float] = {}  # link -> mass [kg]

    def check(self, payloads: dict[str, float]) -> str | None:
        """None if :meth:`set` accepts ``payloads``, else the reason (naming the valid links)."""
        from kangaroo_wbc.errors import suggest

        for link in payloads:
            if link not in self._body:
                return f"unknown link {link!r}." + suggest(link, self._links)
        for j, mass in self._targets(payloads).items():
            if not mass > 0.0:
                links = [n for n in payloads if self._body[n] == j]
                return f"payloads on {links} leave the body without mass ({self._nominal[j]:.3f} kg as loaded)"
        return None

    def _targets(self, payloads: dict[str, float]) -> dict[int, float]:
        targets = dict(self._nominal)
        for link, mass in payloads.items():
            targets[self._body[link]] += mass
        return targets

    def set(self, payloads: dict[str, float]) -> bool:
        """Make the model carry ``payloads`` (``{link: mass [kg]}``, nothing else); returns whether a
        mass changed.

        Raises:
            InputError: :meth:`check` refuses them (nothing changes).
        """
        from kangaroo_wbc.errors import InputError

        reason = self.check(payloads)
        if reason:
            raise InputError(reason)
        m, changed = self.clm.model, False
        link_of = {j: link for link, j in self._body.items()}
        for j, mass in self._targets(payloads).items():
            delta = mass - float(m.inertias[j].mass)
            if abs(delta) > 1e-9:
                self.clm.add_payload(link_of[j], delta)
                changed = True
        self.carried = {k: float(v) for k, v in payloads.items() if v != 0.0}
        return changed

    def describe(self) -> str:
        """``"base_link +6 kg"``-like text of the payloads carried, or ``"no payload"``."""
        return ", ".join(f"{k} {v:+g} kg" for k, v in self.carried.items()) or "no payload"


_MODEL_PAYLOADS: Any = None  # weakref.WeakKeyDictionary: model -> ModelPayloads


def model_payloads(clm: Any) -> ModelPayloads:
    """The :class:`ModelPayloads` of ``clm`` (one per model in the process; created on first use,
    so before any payload: the masses as loaded)."""
    global _MODEL_PAYLOADS
    import weakref

    if _MODEL_PAYLOADS is None:
        _MODEL_PAYLOADS = weakref.WeakKeyDictionary()
    if clm not in _MODEL_PAYLOADS:
        _MODEL_PAYLOADS[clm] = ModelPayloads(clm)
    return _MODEL_PAYLOADS[clm]


def payloads_msg(payloads: dict[str, float], message: str) -> Any:
    """``model/payloads``: one KeyValue per link (name → mass [kg] carried); level OK (a payload is no
    fault); ``message`` says what changed."""
    from kangaroo_wbc.components.samples import Level
    from kangaroo_wbc.ros.diagnostics import HARDWARE_ID, make_status

    return make_status("model payloads", Level.OK, message, {k: f"{v:g}" for k, v in payloads.items()},
                       hardware_id=HARDWARE_ID)


def payloads_from_msg(msg: Any) -> dict[str, float]:
    """The payloads of a ``model/payloads`` message by link [kg].

    Raises:
        InputError: a value that is not a finite number.
    """
    import math

    from kangaroo_wbc.errors import InputError

    out = {}
    for kv in msg.values:
        try:
            out[kv.key] = float(kv.value)
        except ValueError:
            out[kv.key] = math.nan
        if not math.isfinite(out[kv.key]):
            raise InputError(f"model/payloads: {kv.key}: {kv.value!r} is not a mass [kg]")
    return out


class PayloadFollower:
    """A node's model follows the controller's ``model/payloads`` (latched): the message is kept by
    the subscription and applied by :meth:`apply` in the thread that runs the node's component,
    before its next sample. With a model shared with the controller (composed) the masses are
    already set and nothing changes (:class:`ModelPayloads`)."""

    def __init__(self, node: Any, clm: Any) -> None:
        from diagnostic_msgs.msg import DiagnosticStatus

        from kangaroo_wbc.ros import qos

        self._node = node
        self.payloads = model_payloads(clm)
        self._pending: dict[str, float] | None = None
        node.create_subscription(DiagnosticStatus, PAYLOADS_TOPIC, self._on_msg, qos.LATCHED)

    def _on_msg(self, msg: Any) -> None:
        from kangaroo_wbc.errors import InputError

        try:
            self._pending = payloads_from_msg(msg)
        except InputError as exc:
            self._node.throttled.warning(PAYLOADS_TOPIC, f"{PAYLOADS_TOPIC} skipped: {exc}")

    def apply(self) -> None:
        """Set the model to the payloads last received (no-op when none is pending)."""
        if self._pending is None:
            return
        from kangaroo_wbc.errors import InputError

        payloads, self._pending = self._pending, None
        try:
            changed = self.payloads.set(payloads)
        except InputError as exc:
            self._node.throttled.warning(PAYLOADS_TOPIC, f"{PAYLOADS_TOPIC}: {payloads} not applied: {exc}")
            return
        if changed or self.payloads.carried:
            how = "applied" if changed else "in the model already"
            self._node.get_logger().info(f"payloads {how}: {self.payloads.describe()}, robot "
                                         f"{self.payloads.clm.mass_kg:.3f} kg")


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
