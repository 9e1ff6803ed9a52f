"""One assembly, one configuration (issue #36).

The nodes, launched with the shipped ``config/*.yaml``, and the one-process loop (``demo``, ``soak``,
``bench``, ``evaluate``) build the same chain: every setting of every part equal, field by field.
A run-time parameter change (the set-parameters service, as ``ros2 param set`` calls it) becomes the
controller's baseline: a behaviour's override and an actuator-mode change return to it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from kangaroo_wbc.components.assembly import ChainSettings, contact_specs  # noqa: E402
from kangaroo_wbc.control.wbc import WbcReferences  # noqa: E402
from test.control.conftest import KANGAROO_DIR  # noqa: E402
from test.integration.ros_harness import ros_environment  # noqa: E402,F401 - fixture

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config"

pytestmark = [pytest.mark.ros, pytest.mark.integration,
              pytest.mark.skipif(not (KANGAROO_DIR / "kangaroo.urdf").is_file(), reason="Kangaroo not generated")]


def _contacts(controller) -> list[tuple]:
    """What the QP knows of each contact: name, frame, friction, normal-force bounds, corners."""
    full = getattr(controller, "full", controller)
    return [(c.name, c.frame, c.mu, c.normal_force_min_n, np.round(np.asarray(c.corners), 12).tolist())
            for c in full.contacts]


def _chain_settings(estimation, wrench, control) -> dict:
    """Every setting the built components hold, as comparable values."""
    controller = control.supervisor.controller
    full = getattr(controller, "full", controller)
    return {
        "estimation": estimation.config,
        "wrench": (wrench.settings, wrench.estimator.config, wrench.estimator.transmission.screw_lead_m.tolist()),
        "wbc": full.settings,
        "min_pivot_ratio": full.pm.min_pivot_ratio,
        "contacts": _contacts(controller),
        "safety": control.supervisor.safety,
        "control": control.settings,
        "behaviour": control.behaviour_name,
        "startup": control.startup_behaviour,
        "formulation": type(controller).__name__,
    }


@pytest.fixture(scope="module")
def launched_nodes(ros_environment):
    """The three chain nodes in this process, their parameters from the shipped files as the launch
    file gives them (``--params-file config/<node>.yaml``)."""
    import rclpy

    from kangaroo_wbc.nodes.contact_wrench_node import ContactWrenchNode
    from kangaroo_wbc.nodes.state_estimator_node import StateEstimatorNode
    from kangaroo_wbc.nodes.whole_body_controller_node import WholeBodyControllerNode

    args = ["--ros-args"]
    for name in ("state_estimator", "contact_wrench_estimator", "whole_body_controller"):
        args += ["--params-file", str(CONFIG / f"{name}.yaml")]
    rclpy.init(args=args, domain_id=ros_environment.domain_id)
    nodes = (StateEstimatorNode(), ContactWrenchNode(), WholeBodyControllerNode())
    try:
        yield nodes
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()


def test_the_loop_runs_the_launch_configuration(launched_nodes) -> None:
    """demo/soak/bench/evaluate's chain equals the launched nodes' chain, field by field: friction,
    pivot ratio, contact names, behaviour parameters included (the four drifts of issue #36)."""
    from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    estimator, wrench, controller = launched_nodes
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=0.01))
    assert run.settings == ChainSettings(estimator.params, wrench.params, controller.params)
    nodes = _chain_settings(estimator.component, wrench.component, controller.component)
    loop = _chain_settings(run.estimation, run.wrench, run.control)
    for key in nodes:
        assert loop[key] == nodes[key], f"{key}: loop {loop[key]!r} != nodes {nodes[key]!r}"
    # the drifts once seen, by name
    assert {c[2] for c in loop["contacts"]} == {0.8}
    assert loop["min_pivot_ratio"] == 1e-3
    assert [c[0] for c in loop["contacts"]] == ["left_sole", "right_sole"]


def test_the_loop_starts_the_behaviours_with_the_node_parameters(launched_nodes) -> None:
    """A behaviour started by the loop gets the parameters the node gives it (squat: 1000 cycles)."""
    from kangaroo_wbc.components.controller_params import behaviour_options
    from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    _, _, controller = launched_nodes
    for name in ("squat", "sway", "weight_shift", "walk"):
        run = ClosedLoopRun(LoopConfig(behaviour=name, duration_s=0.01))
        p = dataclasses.replace(controller.params, behaviour=name)
        assert run.control.startup_behaviour == (name, behaviour_options(p, name))
    assert behaviour_options(controller.params, "squat")["cycles"] == 1000


def test_settings_load_refuses_bad_overrides() -> None:
    from kangaroo_wbc.errors import ConfigError

    with pytest.raises(ConfigError, match="friction_coefficient"):
        ChainSettings.load(overrides={"whole_body_controller": {"friction_coefficient": -1.0}})
    with pytest.raises(ConfigError, match="unknown parameters"):
        ChainSettings.load(overrides={"whole_body_controller": {"friction": 0.5}})
    with pytest.raises(ConfigError, match="unknown nodes"):
        ChainSettings.load(overrides={"whole_body_control": {}})
    with pytest.raises(ConfigError, match="decimal point"):
        ChainSettings.load(overrides={"whole_body_controller": {"com_weight": 10}})


def test_contact_specs_follow_the_parameters() -> None:
    from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo

    p = dataclasses.replace(ChainSettings.load().controller, friction_coefficient=0.5)
    specs = contact_specs(load_kangaroo(), p)
    assert [(c.name, c.mu) for c in specs] == [("left_sole", 0.5), ("right_sole", 0.5)]


def _set_over_service(node, **values) -> None:
    """``ros2 param set`` as it is done: the node's set_parameters service, from another node."""
    import rclpy
    from rcl_interfaces.srv import SetParameters
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter

    client_node = rclpy.create_node("param_client")
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    executor.add_node(client_node)
    try:
        client = client_node.create_client(SetParameters, f"/{node.get_name()}/set_parameters")
        assert client.wait_for_service(timeout_sec=30.0), "set_parameters service not found"
        request = SetParameters.Request(parameters=[Parameter(k, value=v).to_parameter_msg()
                                                    for k, v in values.items()])
        future = client.call_async(request)
        executor.spin_until_future_complete(future, timeout_sec=30.0)
        assert future.done(), "set_parameters timed out"
        assert all(r.successful for r in future.result().results), future.result().results
    finally:
        executor.remove_node(node)
        executor.remove_node(client_node)
        client_node.destroy_node()


def test_parameter_changes_survive_overrides_and_actuator_modes(launched_nodes) -> None:
    """com_weight, com_kp and posture_weight set at run time stay in force after a behaviour's
    one-tick override (a jump's flight) and after an actuator is locked and freed again."""
    _, _, node = launched_nodes
    full = node.component.supervisor.controller
    full = getattr(full, "full", full)
    _set_over_service(node, com_weight=33.0, com_kp=150.0, posture_weight=0.5)
    assert np.all(full.com_task.weight == 33.0) and np.all(full.com_task.kp == 150.0)
    assert np.all(full.posture_task.weight == 0.5)
    # a behaviour overrides the weights and gains for a tick, then names none: the baselines return
    full.set_references(WbcReferences(task_weights={"com": 0.0, "posture": 5.0}, task_gains={"com": (1.0, 1.0)}))
    assert np.all(full.com_task.weight == 0.0) and np.all(full.com_task.kp == 1.0)
    _set_over_service(node, com_weight=34.0)  # changed while overridden: the new baseline
    assert np.all(full.com_task.weight == 0.0)
    full.set_references(WbcReferences())
    assert np.all(full.com_task.weight == 34.0) and np.all(full.com_task.kp == 150.0)
    assert np.all(full.posture_task.weight == 0.5)
    # an actuator locked (degraded posture weight) and freed again: the operator's posture weight
    name = full.clm.actuated_joint_names[0]
    node.component.set_actuator_mode(name, "locked")
    assert np.all(full.posture_task.weight == full.settings.posture_weight_degraded)
    node.component.set_actuator_mode(name, "active")
    assert np.all(full.posture_task.weight == 0.5)
    assert node.get_parameter("posture_weight").value == 0.5
