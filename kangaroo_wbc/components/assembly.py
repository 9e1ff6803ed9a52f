"""The one assembly of the node chain: built from one settings object, driven by one tick.

``sim`` → ``state_estimator`` → ``contact_wrench_estimator`` → ``whole_body_controller`` → ``sim``:
:func:`build_chain` builds :class:`~kangaroo_wbc.components.state_estimation.StateEstimation`,
:class:`~kangaroo_wbc.components.contact_wrench.ContactWrenchEstimation` and
:class:`~kangaroo_wbc.components.control.WholeBodyControl` (with its supervisor and QP) from a
:class:`ChainSettings`, which is the nodes' parameters read from the shipped ``config/*.yaml``
(:meth:`ChainSettings.load`, overrides on top). The separate nodes build their component with the
same functions (:func:`build_estimation`, :func:`build_wrench`, :func:`build_control`) from the
parameters they declared from the same files; the composed node, the one-process loop (``demo``,
``soak``, ``bench``, ``evaluate``) and the rig run :meth:`Chain.tick`. So what is measured is what
ships.

**One sample** (:meth:`Chain.tick`), in the order every deployment runs it (separate processes run
the same order over DDS, each node on the messages of the one before):

0. the ``wbc/ready`` handshake (:func:`apply_ready`: the crane lets go; on a test bench the
   estimator is never released, its pelvis stays clamped), the bench's force plate, the encoders and
   the IMU;
1. the state estimate of the actuator sample;
2. the fault detector: this sample against the command sent before it;
3. the controller updates its model at ``(q, v)`` (:meth:`WholeBodyControl.prepare`) when the
   estimate has a base;
4. the contact-wrench estimator takes the state and computes the sole wrenches, sharing that model
   update (the projected dynamics) instead of computing its own;
5. the normal sole forces go to the state estimator (contact detection of the floating base) and to
   the controller (measured contacts);
6. the controller computes the command.

A deployment that publishes (the composed node) gives :class:`ChainHooks`: its adapters' methods
that run the component's step and publish its result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kangaroo_wbc.components.ankle_ft import AnkleFtSensor
from kangaroo_wbc.components.contact_wrench import ContactWrenchEstimation
from kangaroo_wbc.components.control import WholeBodyControl
from kangaroo_wbc.components.controller_params import (
    SAFETY,
    WholeBodyControllerParams,
    behaviour_options,
    control_settings,
    wbc_settings,
)
from kangaroo_wbc.components.estimator_params import StateEstimatorParams, component_config
from kangaroo_wbc.components.parameters import params_from_yaml
from kangaroo_wbc.components.ros2_control.settings import hardware_overrides
from kangaroo_wbc.components.samples import ActuatorSample, EncoderSample, ImuSample
from kangaroo_wbc.components.state_estimation import StateEstimate, StateEstimation
from kangaroo_wbc.components.wrench_params import (
    ANKLE_FT,
    ESTIMATOR,
    PAYLOAD,
    SETTINGS,
    ContactWrenchParams,
    compensation,
)
from kangaroo_wbc.control.contacts import ContactSpec
from kangaroo_wbc.control.reduced_wbc import ReducedWholeBodyController
from kangaroo_wbc.control.supervisor import Command, WbcSupervisor
from kangaroo_wbc.control.wbc import WholeBodyController
from kangaroo_wbc.errors import ConfigError, InputError, KangarooWbcError, suggest
from kangaroo_wbc.estimation import paper_screws
from kangaroo_wbc.model import ClosedLoopModel

#: The chain's nodes and their parameter files (``config/<node>.yaml``).
NODE_FILES = {"state_estimator": "state_estimator.yaml",
              "contact_wrench_estimator": "contact_wrench_estimator.yaml",
              "whole_body_controller": "whole_body_controller.yaml"}


def package_config_dir() -> Path:
    """The package's ``config/`` folder: the source tree's, else the installed share's.

    Raises:
        ConfigError: neither holds the parameter files.
    """
    candidates = [Path(__file__).resolve().parents[2] / "config"]
    try:  # an installed ROS 2 package
        from ament_index_python.packages import get_package_share_directory

        candidates.append(Path(get_package_share_directory("kangaroo_wbc")) / "config")
    except Exception:  # noqa: BLE001 - not in a ROS environment, or the package is not installed
        pass
    for d in candidates:
        if all((d / f).is_file() for f in NODE_FILES.values()):
            return d
    raise ConfigError(f"the parameter files {sorted(NODE_FILES.values())} are not in {[str(c) for c in candidates]}")


@dataclass(frozen=True)
class ChainSettings:
    """The chain's settings: the three nodes' parameters (``config/<node>.yaml``)."""

    estimator: StateEstimatorParams
    wrench: ContactWrenchParams
    controller: WholeBodyControllerParams

    @classmethod
    def load(cls, config_dir: str | Path | None = None,
             overrides: Mapping[str, Mapping[str, Any]] | None = None) -> ChainSettings:
        """The settings the launched nodes run: ``config_dir`` (default: the package's) files, then
        ``overrides`` (``{node: {parameter: value}}``), each checked as at a node's start-up.

        Raises:
            ConfigError: a missing or malformed file, an unknown node or parameter, a bad value.
        """
        d = Path(config_dir) if config_dir is not None else package_config_dir()
        over = dict(overrides or {})
        unknown = sorted(set(over) - set(NODE_FILES))
        if unknown:
            raise ConfigError(f"overrides for unknown nodes {unknown}; nodes are {sorted(NODE_FILES)}")
        missing = [str(d / f) for f in NODE_FILES.values() if not (d / f).is_file()]
        if missing:
            raise ConfigError(f"parameter files not found: {missing}")

        def load(node: str, params_cls: type) -> Any:
            return params_from_yaml(params_cls, node, [d / NODE_FILES[node]], over.get(node))

        return cls(load("state_estimator", StateEstimatorParams), load("contact_wrench_estimator", ContactWrenchParams),
                   load("whole_body_controller", WholeBodyControllerParams))

    def replace(self, **overrides: Mapping[str, Any]) -> ChainSettings:
        """These settings with ``{parameter: value}`` overrides per part (``estimator``, ``wrench``,
        ``controller``), checked as :meth:`load` checks them."""
        from kangaroo_wbc.components.parameters import params_from_values

        parts = {k: getattr(self, k) for k in ("estimator", "wrench", "controller")}
        unknown = sorted(set(overrides) - set(parts))
        if unknown:
            raise ConfigError(f"unknown parts {unknown}; parts are {sorted(parts)}")
        for k, values in overrides.items():
            parts[k] = params_from_values(type(parts[k]), dict(values), f"{k} (overrides)", parts[k])
        return ChainSettings(**parts)

    @property
    def rig(self) -> str:
        """The test bench the chain runs on (empty: the robot on the floor)."""
        return self.controller.rig

    def check(self) -> None:
        """The parts agree on the bench and its leg (one model for the whole chain).

        Raises:
            ConfigError: they differ.
        """
        rigs = {(p.rig, p.rig_leg) for p in (self.estimator, self.wrench, self.controller)}
        if len(rigs) > 1:
            raise ConfigError(f"the chain's parameters name different benches (rig, rig_leg): {sorted(rigs)}")


def loop_overrides(behaviour: str | None = None, ideal_actuators: bool = False, payload_identification: bool = False,
                   rig: str = "", rig_leg: str = "left",
                   controller: Mapping[str, Any] | None = None, interface: str = "native",
                   joint_space: str = "actuator") -> dict[str, dict[str, Any]]:
    """A run's overrides of the shipped parameters, per node, as the one-process loop and the node
    graph runner give them: the start-up ``behaviour``; with ``ideal_actuators`` (the simulator's
    forces act as commanded) the wrench estimator and the fault detector use eq. (47) alone; the
    payload identification; a test bench for every node; the hardware ``interface`` (and
    ``joint_space``) of the nodes that touch the hardware; then ``controller``'s parameters."""
    wrench: dict[str, Any] = {"payload_identification": True} if payload_identification else {}
    wbc: dict[str, Any] = {} if behaviour is None else {"behaviour": behaviour}
    if ideal_actuators:
        wrench.update(actuator_model=False, rotor_inertia_compensation=False, torque_bias_estimation=False)
        wbc["fault_drive_model"] = False
    hardware = hardware_overrides(interface, joint_space)
    out = {"state_estimator": hardware["state_estimator"], "contact_wrench_estimator": wrench,
           "whole_body_controller": {**wbc, **hardware["whole_body_controller"], **(controller or {})}}
    if rig:
        for values in out.values():
            values.update(rig=rig, rig_leg=rig_leg)
    return out


# ---------------------------------------------------------------------------------------------- the parts
def rig_sole(leg: str) -> str:
    """The sole frame of the bench's leg ``leg``."""
    from kangaroo_wbc.robots.kangaroo.robot import SOLES

    return SOLES[leg]


def build_estimation(clm: ClosedLoopModel, p: StateEstimatorParams) -> StateEstimation:
    """The state estimator (on a bench: its one sole).

    Raises:
        ConfigError: the model does not fit the parameters.
    """
    config = component_config(p)
    if p.rig:
        config = replace(config, sole_frames=(rig_sole(p.rig_leg),))
    try:
        return StateEstimation(clm, config)
    except InputError as exc:
        raise ConfigError(f"state_estimator: {exc}") from exc


def build_wrench(clm: ClosedLoopModel, p: ContactWrenchParams) -> ContactWrenchEstimation:
    """The contact-wrench estimator with the closure file's screws (on a bench: the actuated rows
    only, ``base_row_weight = 0``, no momentum rate: the base rows hold the clamp's unknown wrench;
    the one sole).

    Raises:
        ConfigError: the model does not fit the parameters.
    """
    try:  # per-actuator leads and efficiencies: the closure file's actuators table
        transmission = paper_screws(clm, p.default_screw_lead_m, p.default_screw_efficiency)
        estimator, settings, payload = ESTIMATOR.build(p), SETTINGS.build(p), PAYLOAD.build(p)
        if p.rig:
            estimator = replace(estimator, base_row_weight=0.0, momentum_rate=False)
            settings = replace(settings, sole_frames=(rig_sole(p.rig_leg),))
            payload = None
        out = ContactWrenchEstimation(clm, transmission, estimator, settings, compensation(p), payload)
        if p.ankle_ft_broadcasters:
            out.attach_ankle_ft(ankle_ft_sensors(p.ankle_ft_broadcasters), ANKLE_FT.build(p))
        return out
    except InputError as exc:
        raise ConfigError(f"contact_wrench_estimator: {exc}") from exc


def ankle_ft_sensors(broadcasters: list[str]) -> list[AnkleFtSensor]:
    """The ankle F/T sensors named (``force_torque`` of the package's ``config/hardware_map.yaml``).

    Raises:
        ConfigError: a name the map does not list (the valid ones given).
    """
    from kangaroo_wbc.model.hardware_map import load_hardware_map

    known = {ft.broadcaster: ft for ft in load_hardware_map(package_config_dir() / "hardware_map.yaml").force_torque}
    out = []
    for name in broadcasters:
        if name not in known:
            raise ConfigError(f"contact_wrench_estimator: ankle_ft_broadcasters: unknown sensor {name!r}."
                              + suggest(name, list(known)))
        out.append(AnkleFtSensor(name, known[name].frame_id, known[name].sole))
    return out


def contact_specs(clm: ClosedLoopModel, p: WholeBodyControllerParams | None = None) -> list[ContactSpec]:
    """The controller's sole contacts: four corner point forces per sole where the corner frames exist,
    else a ``sole_length_m`` x ``sole_width_m`` rectangle; named after the sole frames.

    Raises:
        ConfigError: a sole frame the model does not have.
    """
    p = p or WholeBodyControllerParams()
    m, contacts = clm.model, []
    for sole in p.sole_frames:
        corners = [sole + s for s in p.corner_suffixes]
        kw: dict[str, Any] = dict(mu=p.friction_coefficient, normal_force_min_n=p.min_normal_force_n)
        try:
            if corners and all(m.existFrame(c) for c in corners):
                contacts.append(ContactSpec.from_corner_frames(m, sole, sole, corners, **kw))
            else:
                contacts.append(ContactSpec.rectangle(sole, sole, p.sole_length_m, p.sole_width_m, **kw))
        except KangarooWbcError as exc:
            raise ConfigError(f"whole_body_controller: sole {sole!r}: {exc}") from exc
    return contacts


def build_control(clm: ClosedLoopModel, p: WholeBodyControllerParams,
                  rig_options: Mapping[str, Any] | None = None) -> WholeBodyControl:
    """The controller: contacts on the soles, the QP (``formulation``), the supervisor and the
    component, its start-up behaviour selected (:func:`select_behaviour`). On a bench the rig's
    controller (the clamp as a fixture contact) running the ``rig`` behaviour (``rig_options`` over
    its defaults).

    Raises:
        ConfigError: the model, the contacts or the behaviour do not fit the parameters.
    """
    if p.rig:
        from kangaroo_wbc.components.rig import rig_control

        settings = control_settings(p)
        try:
            return rig_control(clm, rig_sole(p.rig_leg), p.rig_leg, wbc_settings=wbc_settings(p),
                               safety=SAFETY.build(p), control_settings=settings,
                               ideal_actuators=not settings.fault_detector.drive_model,
                               behaviour_options=dict(rig_options or {}))
        except KangarooWbcError as exc:
            raise ConfigError(f"whole_body_controller: rig {p.rig!r}: {exc}") from exc
    cls = ReducedWholeBodyController if p.formulation == "reduced" else WholeBodyController
    try:
        controller = cls(clm, contact_specs(clm, p), wbc_settings(p))
        control = WholeBodyControl(WbcSupervisor(controller, SAFETY.build(p)), control_settings(p))
    except KangarooWbcError as exc:
        raise ConfigError(f"whole_body_controller: {exc}") from exc
    try:
        select_behaviour(control, p, p.behaviour)
    except InputError as exc:
        raise ConfigError(f"whole_body_controller: behaviour {p.behaviour!r}: {exc}") from exc
    return control


def select_behaviour(control: WholeBodyControl, p: WholeBodyControllerParams, name: str,
                     **options: Any) -> str:
    """Start behaviour ``name`` with its parameters (``options`` over them); on a bench always its
    ``rig`` behaviour. Returns the name started.

    Raises:
        InputError: the options do not fit the behaviour.
    """
    if p.rig:
        from kangaroo_wbc.components.rig import rig_behaviour_options

        control.select("rig", **rig_behaviour_options(p.rig_leg, **options))
        return "rig"
    control.select(name, **{**behaviour_options(p, name), **options})
    return name


def configure_control(control: WholeBodyControl, p: WholeBodyControllerParams) -> None:
    """Run-time parameter changes: the one way a node's parameters reach the controller (gains and
    weights as the new baselines a behaviour's override returns to, the contacts' normal force, the
    singularity threshold, the supervisor's safety settings, the component's settings).

    Raises:
        InputError: a value the parts refuse (checked before anything changes).
    """
    settings = control_settings(p)
    if p.rig:
        from kangaroo_wbc.components.rig import rig_control_settings

        settings = rig_control_settings(rig_sole(p.rig_leg), settings, not settings.fault_detector.drive_model)
    wbc = wbc_settings(p)
    if p.rig:  # the bench's sole gains (components.rig.rig_control)
        from kangaroo_wbc.control.rig import RIG_FOOT_KD, RIG_FOOT_KP

        wbc = replace(wbc, foot_kp=RIG_FOOT_KP, foot_kd=RIG_FOOT_KD)
    control.configure(settings, wbc=wbc, safety=SAFETY.build(p), min_normal_force_n=p.min_normal_force_n)


def apply_ready(ready: bool, rig: bool, estimation: StateEstimation | None = None,
                wrench: ContactWrenchEstimation | None = None) -> None:
    """The ``wbc/ready`` handshake to the estimators: the crane lets go when the controller is
    ready (the wrench estimator's filter restarts when the controller takes over). On a bench the
    state estimator is never released: the pelvis stays clamped, its base estimate keeps the
    zero-velocity updates."""
    if estimation is not None and not rig:
        estimation.set_released(ready)
    if wrench is not None:
        wrench.set_released(ready)


@dataclass
class ChainHooks:
    """A deployment's adapters around the components' steps (default: the components alone).

    Attributes:
        before: called first (the operator's modes and payloads waiting to be applied).
        estimate: ``sample -> estimate or None`` (the state estimator's step, and its publication).
        wrench: ``(sample, projected model or None) -> output or None`` (step 4).
        control: ``(sample, estimate, prepared) -> Command`` (step 6).
    """

    before: Callable[[], None] | None = None
    estimate: Callable[[ActuatorSample], StateEstimate | None] | None = None
    wrench: Callable[[ActuatorSample, Any], Any] | None = None
    control: Callable[[ActuatorSample, StateEstimate, bool], Command] | None = None


@dataclass
class ChainStep:
    """One :meth:`Chain.tick`: the estimate, the wrench output and the command (None where the chain
    stopped: no estimate yet), with ``perf_counter`` marks at the start, after the estimate, after the
    controller's model update, after the wrenches and at the end."""

    estimate: StateEstimate | None
    wrench: Any
    command: Command | None
    marks: tuple[float, float, float, float, float]


class Chain:
    """The three components chained (module docstring). Built by :func:`build_chain`."""

    def __init__(self, estimation: StateEstimation, wrench: ContactWrenchEstimation, control: WholeBodyControl,
                 settings: ChainSettings) -> None:
        self.estimation, self.wrench, self.control, self.settings = estimation, wrench, control, settings
        self.rig = bool(settings.rig)
        self._model_mark = 0.0
        self._wrench_mark = 0.0

    # the components' own steps (events drained: a deployment that logs them gives its hooks)
    def _estimate(self, sample: ActuatorSample) -> StateEstimate | None:
        est = self.estimation.step(sample)
        self.estimation.drain_events()
        return est

    def _wrench(self, sample: ActuatorSample, projected: Any) -> Any:
        out = self.wrench.step(sample, projected=projected)
        self.wrench.drain_events()
        return out

    def _control(self, sample: ActuatorSample, est: StateEstimate, prepared: bool) -> Command:
        age = sample.stamp_s - est.stamp_s if est.base_valid else float("inf")
        cmd = self.control.step(sample.stamp_s, est.q, est.v, age)
        self.control.drain_events()
        return cmd

    def tick(self, sample: ActuatorSample, encoders: EncoderSample | None = None, imu: ImuSample | None = None,
             plate: tuple[float, float] | None = None, hooks: ChainHooks | None = None) -> ChainStep:
        """One actuator sample (model order) through the chain (module docstring, steps 0-6), with
        the passive encoders, the IMU and the bench's force plate ``(normal force [N], stamp [s])``
        read with it."""
        h = hooks or ChainHooks()
        t0 = time.perf_counter()
        control = self.control
        apply_ready(control.ready, self.rig, self.estimation, self.wrench)
        if plate is not None:
            control.on_plate_force(*plate)
        if encoders is not None:
            self.estimation.on_encoders(encoders)
        if imu is not None:
            self.estimation.on_imu(imu)
        if h.before is not None:
            h.before()
        est = (h.estimate or self._estimate)(sample)
        t1 = time.perf_counter()
        if est is None:
            return ChainStep(None, None, None, (t0, t1, t1, t1, t1))
        control.on_actuator_sample(sample)
        prepared = est.base_valid and control.prepare(est.q, est.v)
        t_model = time.perf_counter()
        self.wrench.on_state(est.q, est.v, est.stamp_s)
        out = (h.wrench or self._wrench)(sample, control.projected_model if prepared else None)
        if out is not None:
            for i, fz in enumerate(out.wrench_sole_in_sole[:, 2]):
                self.estimation.on_sole_force(i, float(fz), sample.stamp_s)
                control.on_sole_force(i, float(fz), sample.stamp_s)
        t_wrench = time.perf_counter()
        cmd = (h.control or self._control)(sample, est, prepared)
        return ChainStep(est, out, cmd, (t0, t1, t_model, t_wrench, time.perf_counter()))


def build_chain(clm: ClosedLoopModel, settings: ChainSettings,
                rig_options: Mapping[str, Any] | None = None) -> Chain:
    """The chain on ``clm`` (the robot's model, or the bench's) from ``settings``.

    Raises:
        ConfigError: the settings disagree on the bench, or a part refuses them.
    """
    settings.check()
    return Chain(build_estimation(clm, settings.estimator), build_wrench(clm, settings.wrench),
                 build_control(clm, settings.controller, rig_options), settings)


__all__ = ["ChainSettings", "Chain", "ChainHooks", "ChainStep", "build_chain", "build_estimation", "build_wrench",
           "build_control", "contact_specs", "select_behaviour", "configure_control", "apply_ready",
           "package_config_dir", "rig_sole", "NODE_FILES", "loop_overrides"]
