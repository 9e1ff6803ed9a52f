"""Unit tests: one source per parameter default (issue #26).

A node parameter that is a field of a core configuration dataclass takes its default from it
(``SHARED_FIELDS`` of each node module, :class:`~kangaroo_wbc.ros.params.SharedFields`), and
``config/<node>.yaml`` lists every parameter of the node with its default. No rclpy context: only
the dataclasses and the YAML files are read.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

import yaml  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

#: YAML section ``/**/<node>`` -> (module, parameter dataclass).
NODES = {
    "sim": ("kangaroo_wbc.components.sim_params", "SimParams"),
    "state_estimator": ("kangaroo_wbc.components.estimator_params", "StateEstimatorParams"),
    "contact_wrench_estimator": ("kangaroo_wbc.components.wrench_params", "ContactWrenchParams"),
    "whole_body_controller": ("kangaroo_wbc.components.controller_params", "WholeBodyControllerParams"),
    "link_tf": ("kangaroo_wbc.nodes.link_tf_node", "LinkTfParams"),
}

#: YAML values that deliberately differ from the node's default: (node, parameter) -> reason.
#: None today: every file is the node's defaults, written out.
YAML_DIFFERS_FROM_DEFAULT: dict[tuple[str, str], str] = {}

#: Node defaults that deliberately differ from the core configuration's:
#: (node, configuration class, field) -> reason.
NODE_DIFFERS_FROM_CORE: dict[tuple[str, str, str], str] = {
    ("whole_body_controller", "WbcSettings", "min_jlu_pivot_ratio"): (
        "the node goes to the safe mode near a singular J_l,u (pivot ratio 1e-3); the library "
        "controller's 0 only rejects an exactly singular one (tests and tools drive it anywhere)"
    ),
    ("whole_body_controller", "Squat", "cycles"): (
        "the robot keeps squatting until told otherwise; the library behaviour's default is a short run"
    ),
    ("whole_body_controller", "LateralSway", "cycles"): "the same as the squat's",
    ("whole_body_controller", "WeightShift", "stance"): (
        "the node names the stance sole by its frame (the controller's contact names)"
    ),
}


def _module(node: str) -> Any:
    return importlib.import_module(NODES[node][0])


def _params_cls(node: str) -> type:
    return getattr(_module(node), NODES[node][1])


def _yaml_values(node: str) -> dict[str, Any]:
    doc = yaml.safe_load((REPO / "config" / f"{node}.yaml").read_text())
    assert list(doc) == [f"/**/{node}"], f"config/{node}.yaml: one section /**/{node}"
    return doc[f"/**/{node}"]["ros__parameters"]


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type (a list parameter matches a tuple field)."""
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return list(a) == list(b)
    return type(a) is type(b) and a == b


def _links(node: str) -> list[tuple[Any, str, str]]:
    """``(SharedFields, field, parameter)`` of every parameter shared with a core configuration."""
    params_cls = _params_cls(node)
    return [
        (link, f, p)
        for link in getattr(_module(node), "SHARED_FIELDS", ())
        for f, p in link.pairs(params_cls).items()
    ]


#: Files of config/ that are not a node's parameters: the ros2_control backend's (docs/ros2_control.md).
NOT_NODE_FILES = {"hardware_map", "ros2_controllers", "ros2_controllers_serial"}


def test_every_config_file_is_a_known_node() -> None:
    files = sorted(path.stem for path in (REPO / "config").glob("*.yaml"))
    assert sorted(set(files) - NOT_NODE_FILES) == sorted(NODES)


@pytest.mark.parametrize("node", sorted(NODES))
def test_yaml_lists_the_parameters_with_their_defaults(node: str) -> None:
    """Every key is a parameter of the node, every parameter is in the file, and each value is
    the default (type included: 1000 for a double stops the node) unless listed as different."""
    values, params_cls = _yaml_values(node), _params_cls(node)
    declared = {f.name for f in dataclasses.fields(params_cls)}
    assert set(values) - declared == set(), f"config/{node}.yaml: keys the node does not declare"
    assert declared - set(values) == set(), f"config/{node}.yaml: parameters missing"
    defaults = params_cls()
    for name, value in values.items():
        same = _same(value, getattr(defaults, name))
        if (node, name) in YAML_DIFFERS_FROM_DEFAULT:
            assert not same, (
                f"{node}.{name} equals its default now: drop it from YAML_DIFFERS_FROM_DEFAULT"
            )
        else:
            assert same, (
                f"config/{node}.yaml: {name} = {value!r}, default {getattr(defaults, name)!r}"
            )


@pytest.mark.parametrize("node", sorted(NODES))
def test_shared_parameters_default_to_the_core_configuration(node: str) -> None:
    """A parameter that is a field of a core configuration has that field's default."""
    defaults = _params_cls(node)()
    for link, field, parameter in _links(node):
        core = getattr(link.config(), field)
        key = (node, link.config.__name__, field)
        if key in NODE_DIFFERS_FROM_CORE:
            assert not _same(getattr(defaults, parameter), core), (
                f"{key}: drop it from NODE_DIFFERS_FROM_CORE"
            )
        else:
            assert _same(getattr(defaults, parameter), core), (
                f"{node}.{parameter} = {getattr(defaults, parameter)!r}, "
                f"{link.config.__name__}.{field} = {core!r}"
            )


def test_every_exception_is_a_shared_field() -> None:
    shared = {
        (node, link.config.__name__, field) for node in NODES for link, field, _ in _links(node)
    }
    assert set(NODE_DIFFERS_FROM_CORE) <= shared


def test_the_shared_fields_are_those_of_the_components() -> None:
    """The links cover what the nodes hand to their components (a renamed field would drop out)."""
    shared = {node: {(link.config.__name__, f) for link, f, _ in _links(node)} for node in NODES}
    assert {f for c, f in shared["sim"] if c == "SimulatedRobotConfig"} >= {
        "rate_hz",
        "controller",
        "watchdog_timeout_s",
    }
    assert ("CalibrationConfig", "max_position_drift") in shared["state_estimator"]
    assert ("CalibrationConfig", "alpha") not in shared[
        "state_estimator"
    ]  # eq. (38)'s alpha is not the Newton step's
    assert ("EncoderSanityConfig", "freeze_min_travel") in shared["state_estimator"]
    assert ("FloatingBaseConfig", "accel_noise_std") in shared["state_estimator"]
    assert ("ContactWrenchConfig", "sample_rate_hz") in shared["contact_wrench_estimator"]
    assert ("ActuatorCompensation", "torque_bias") in shared["contact_wrench_estimator"]
    assert ("SafetySettings", "fallback") in shared["whole_body_controller"]
    assert ("ControlSettings", "behaviour_delay_s") in shared["whole_body_controller"]
    assert shared["link_tf"] == set()


def test_default_parameters_build_the_default_configurations() -> None:
    """The nodes' builders (copy by field name, plus the derived values) give the components'
    default configurations from the default parameters, but for the listed exceptions."""
    from kangaroo_wbc.components import controller_params as wbc
    from kangaroo_wbc.components import estimator_params as state_estimator_node
    from kangaroo_wbc.components import sim_params
    from kangaroo_wbc.components import wrench_params as cw
    from kangaroo_wbc.components.contact_wrench import ContactWrenchSettings
    from kangaroo_wbc.components.control import ControlSettings
    from kangaroo_wbc.components.simulated_robot import SimulatedRobotConfig
    from kangaroo_wbc.components.state_estimation import StateEstimationConfig
    from kangaroo_wbc.control.supervisor import SafetySettings
    from kangaroo_wbc.control.wbc import WbcSettings
    from kangaroo_wbc.estimation.actuator_force import ActuatorCompensation
    from kangaroo_wbc.estimation.contact_wrench import ContactWrenchConfig

    assert sim_params.robot_config(sim_params.SimParams()) == SimulatedRobotConfig()
    assert state_estimator_node.component_config(state_estimator_node.StateEstimatorParams()) == (
        StateEstimationConfig()
    )
    p = cw.ContactWrenchParams()
    assert (cw.ESTIMATOR.build(p), cw.SETTINGS.build(p), cw.compensation(p)) == (
        ContactWrenchConfig(),
        ContactWrenchSettings(),
        ActuatorCompensation(),
    )
    p = wbc.WholeBodyControllerParams()
    assert wbc.wbc_settings(p) == dataclasses.replace(
        WbcSettings(), min_jlu_pivot_ratio=p.min_jlu_pivot_ratio
    )
    assert wbc.CONTROL.build(p) == ControlSettings()
    assert wbc.SAFETY.build(p) == SafetySettings()


def test_changed_parameters_reach_the_configuration_by_name() -> None:
    from kangaroo_wbc.components import estimator_params as se

    p = dataclasses.replace(
        se.StateEstimatorParams(),
        rate_hz=500.0,
        alpha=2.0,
        beta=400.0,
        calibration_max_drift_m=1e-3,
        encoder_freeze_min_travel_m=1e-3,
        sole_frames=["a", "b"],
        snap_to_ground=False,
    )
    cfg = se.component_config(p)
    assert (cfg.rate_hz, cfg.alpha, cfg.beta, cfg.sole_frames) == (500.0, 2.0, 400.0, ("a", "b"))
    assert cfg.calibration.max_position_drift == 1e-3 and cfg.calibration.alpha == 1.0
    assert (
        cfg.encoder_sanity.freeze_min_travel == 1e-3
        and cfg.encoder_sanity.nominal_dt_s == 1.0 / 500.0
    )
    assert cfg.floating_base.ground_height_m is None
