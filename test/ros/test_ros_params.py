"""Unit tests of kangaroo_wbc.ros.params (in-process rclpy nodes) and of the config files."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from rcl_interfaces.msg import ParameterType  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from kangaroo_wbc.errors import ConfigError  # noqa: E402
from kangaroo_wbc.ros.params import (  # noqa: E402
    ParameterBinding,
    SharedFields,
    declare_parameters,
    parameter,
)

REPO = Path(__file__).resolve().parents[2]
CONFIG_NODES = ["sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller"]


def _three_values(v: list[float]) -> str | None:
    return None if len(v) == 3 else f"needs 3 values, got {len(v)}"


@dataclasses.dataclass
class DemoParams:
    rate_hz: float = parameter(1000.0, "Loop rate [Hz]", bounds=(1.0, 2000.0))
    cutoff_hz: float = parameter(50.0, "Filter cut-off [Hz]", bounds=(0.1, None))
    gain: float = parameter(2.0, "Unbounded gain [-]")
    iterations: int = parameter(10, "Solver iterations [-]", bounds=(1, 100))
    enabled: bool = parameter(True, "Enable the feature")
    frame: str = parameter("odom", "Fixed frame", read_only=True)
    offset_m: list[float] = parameter([0.0, 0.0, 0.1], "Offset [m]", check=_three_values)
    weights: tuple[float, ...] = parameter((1.0, 2.0), "Weights [-]")
    extra_frames: list[str] = parameter([], "Extra frames")

    def __post_init__(self) -> None:
        if self.cutoff_hz >= self.rate_hz / 2:
            raise ValueError(
                f"cutoff_hz={self.cutoff_hz} must be below rate_hz/2={self.rate_hz / 2}"
            )


def test_declares_defaults_with_descriptors(make_node) -> None:
    node = make_node("params_defaults")
    params = declare_parameters(node, DemoParams)
    assert params == DemoParams()
    assert params.weights == (1.0, 2.0) and params.extra_frames == []
    d = node.describe_parameter("rate_hz")
    assert d.type == ParameterType.PARAMETER_DOUBLE and d.description == "Loop rate [Hz]"
    assert (d.floating_point_range[0].from_value, d.floating_point_range[0].to_value) == (
        1.0,
        2000.0,
    )
    assert node.describe_parameter("iterations").integer_range[0].to_value == 100
    assert node.describe_parameter("cutoff_hz").floating_point_range[0].to_value > 1e300
    assert node.describe_parameter("frame").read_only
    assert node.describe_parameter("extra_frames").type == ParameterType.PARAMETER_STRING_ARRAY
    assert node.describe_parameter("offset_m").type == ParameterType.PARAMETER_DOUBLE_ARRAY


def test_overrides(make_node) -> None:
    overrides = [
        Parameter("rate_hz", value=500.0),
        Parameter("iterations", value=20),
        Parameter("extra_frames", value=["a", "b"]),
        Parameter("weights", value=[3.0]),
    ]
    node = make_node("params_overrides", parameter_overrides=overrides)
    params = declare_parameters(node, DemoParams)
    assert (params.rate_hz, params.iterations, params.extra_frames, params.weights) == (
        500.0,
        20,
        ["a", "b"],
        (3.0,),
    )


def test_instance_gives_defaults(make_node) -> None:
    node = make_node("params_instance")
    params = declare_parameters(node, DemoParams(rate_hz=400.0, cutoff_hz=10.0))
    assert params.rate_hz == 400.0 and params.cutoff_hz == 10.0


@pytest.mark.parametrize(
    ("override", "match"),
    [
        (
            Parameter("rate_hz", value=1000),
            r"'rate_hz' must be double \(write floating-point values",
        ),
        (Parameter("rate_hz", value=5000.0), "out of range"),
        (Parameter("iterations", value=0), "out of range"),
        (Parameter("offset_m", value=[1.0, 2.0]), "needs 3 values, got 2"),
        (Parameter("gain", value=math.nan), "gain.*non-finite"),
        (Parameter("cutoff_hz", value=600.0), "cutoff_hz=600.0 must be below"),
    ],
)
def test_bad_overrides_raise_config_error(make_node, override, match) -> None:
    node = make_node("params_bad", parameter_overrides=[override])
    with pytest.raises(ConfigError, match=match) as info:
        declare_parameters(node, DemoParams)
    assert "params_bad" in str(info.value)


def test_runtime_validation_and_update(make_node) -> None:
    node = make_node("params_runtime")
    changes = []
    binding = ParameterBinding(
        node,
        declare_parameters(node, DemoParams),
        on_change=lambda p, names: changes.append((p.rate_hz, names)),
    )

    def set_one(name, value):
        return node.set_parameters([Parameter(name, value=value)])[0]

    ok = set_one("rate_hz", 500.0)
    assert ok.successful
    assert binding.params.rate_hz == 500.0 and changes == [(500.0, {"rate_hz"})]
    assert not set_one("rate_hz", 5000.0).successful  # the descriptor range (rclpy) rejects it
    result = set_one("gain", math.inf)
    assert not result.successful and result.reason == "gain: non-finite value inf"
    result = set_one("offset_m", [1.0])
    assert not result.successful and "offset_m: needs 3 values" in result.reason
    result = set_one("cutoff_hz", 300.0)  # cross-field check of __post_init__ with rate_hz=500
    assert not result.successful and "must be below rate_hz/2=250.0" in result.reason
    assert not set_one("frame", "map").successful  # read-only
    assert binding.params.rate_hz == 500.0 and binding.params.cutoff_hz == 50.0
    assert set_one("use_sim_time", True).successful  # not ours: passes through
    assert len(changes) == 1


def test_validator_rejects_out_of_range_with_reason(make_node) -> None:
    """The set-parameters callback itself rejects out-of-range values (not only the descriptor)."""
    node = make_node("params_validator")
    binding = ParameterBinding(node, declare_parameters(node, DemoParams))
    result = binding.validate([Parameter("rate_hz", value=5000.0)])
    assert not result.successful
    assert result.reason == "rate_hz: 5000.0 outside [1.0, 2000.0] (Loop rate [Hz])"
    result = binding.validate([Parameter("iterations", value=101)])
    assert not result.successful and "outside [1, 100]" in result.reason
    result = binding.validate([Parameter("iterations", value=5.0)])
    assert not result.successful and "expected integer, got double" in result.reason
    assert binding.validate([Parameter("rate_hz", value=1500.0)]).successful


def test_unsupported_dataclasses(make_node) -> None:
    node = make_node("params_unsupported")

    @dataclasses.dataclass
    class NoDefault:
        x: float = dataclasses.field(metadata={})

    @dataclasses.dataclass
    class BadType:
        x: dict = parameter({}, "a dict")

    @dataclasses.dataclass
    class BadTuple:
        x: tuple[float, float] = parameter((1.0, 2.0), "pair")

    with pytest.raises(ConfigError, match="needs a default"):
        declare_parameters(node, NoDefault)
    with pytest.raises(ConfigError, match="no parameter equivalent"):
        declare_parameters(node, BadType)
    with pytest.raises(ConfigError, match=r"use tuple\[T, ...\]"):
        declare_parameters(node, BadTuple)
    with pytest.raises(ConfigError, match="not a dataclass"):
        declare_parameters(node, int)


def test_params_file_with_wildcard_and_namespace(make_node, tmp_path) -> None:
    """A YAML of the dataclass' parameters loads back through --params-file, in any namespace."""
    import yaml

    data = {"/**": {"ros__parameters": {"rate_hz": 250.0, "cutoff_hz": 20.0}}}
    path = tmp_path / "demo.yaml"
    path.write_text(yaml.safe_dump(data))
    node = make_node(
        "demo", namespace="/kangaroo", cli_args=["--ros-args", "--params-file", str(path)]
    )
    params = declare_parameters(node, DemoParams)
    assert params.rate_hz == 250.0 and params.cutoff_hz == 20.0


@pytest.mark.parametrize("node_name", CONFIG_NODES)
def test_config_files_load(make_node, node_name) -> None:
    """config/<node>.yaml parses with rcl and sets rate_hz as a double, in a pushed namespace."""
    path = REPO / "config" / f"{node_name}.yaml"
    node = make_node(
        node_name, namespace="/kangaroo", cli_args=["--ros-args", "--params-file", str(path)]
    )

    @dataclasses.dataclass
    class RateOnly:
        rate_hz: float = parameter(1.0, "rate [Hz]", bounds=(1.0, 10000.0))

    assert declare_parameters(node, RateOnly).rate_hz == 1000.0


@pytest.mark.parametrize("node_name", CONFIG_NODES)
def test_config_files_set_exactly_the_declared_parameters(node_name) -> None:
    """config/<node>.yaml sets every parameter of the node's dataclass to its default and nothing
    else (a key the node does not declare stops it at start-up)."""
    import importlib

    import yaml

    module, cls = {
        "sim": ("sim_node", "SimParams"),
        "state_estimator": ("state_estimator_node", "StateEstimatorParams"),
        "contact_wrench_estimator": ("contact_wrench_node", "ContactWrenchParams"),
        "whole_body_controller": ("whole_body_controller_node", "WholeBodyControllerParams"),
    }[node_name]
    params_cls = getattr(importlib.import_module(f"kangaroo_wbc.nodes.{module}"), cls)
    values = yaml.safe_load((REPO / "config" / f"{node_name}.yaml").read_text())[f"/**/{node_name}"][
        "ros__parameters"
    ]
    defaults = params_cls()
    assert set(values) == {f.name for f in dataclasses.fields(params_cls)}
    for name, value in values.items():
        assert value == getattr(defaults, name), name


@dataclasses.dataclass
class _CoreConfig:
    rate_hz: float = 100.0
    gain: float = 1.0
    margin_m: float = 0.1
    frames: tuple[str, ...] = ("a",)
    internal: int = 3


@dataclasses.dataclass
class _NodeParams:
    rate_hz: float = parameter(_CoreConfig.rate_hz, "rate [Hz]")
    gain: float = parameter(7.0, "a gain of something else [-]")
    core_gain: float = parameter(_CoreConfig.gain, "the core's gain [-]")
    core_margin: float = parameter(_CoreConfig.margin_m, "margin [m]")
    frames: list[str] = parameter(["a"], "frames")


def test_shared_fields_copy_by_field_name() -> None:
    """Unit: a prefix selects the parameters of a part, ``names`` renames, the rest is the core's."""
    whole = SharedFields(_CoreConfig)
    part = SharedFields(_CoreConfig, "core_", {"margin_m": "core_margin", "rate_hz": "rate_hz"})
    assert whole.pairs(_NodeParams) == {f: f for f in ("rate_hz", "gain", "frames")}
    assert part.pairs(_NodeParams) == {"rate_hz": "rate_hz", "gain": "core_gain", "margin_m": "core_margin"}
    p = _NodeParams(rate_hz=50.0, frames=["b", "c"])
    assert whole.build(p) == _CoreConfig(rate_hz=50.0, gain=7.0, frames=("b", "c"))  # lists -> tuples
    assert part.build(p, internal=4) == _CoreConfig(rate_hz=50.0, internal=4)
    assert part.build(p, base=_CoreConfig(internal=5, gain=0.0)) == _CoreConfig(rate_hz=50.0, internal=5)
    with pytest.raises(ConfigError, match="no parameter"):
        SharedFields(_CoreConfig, names={"gain": "gain_typo"}).pairs(_NodeParams)
