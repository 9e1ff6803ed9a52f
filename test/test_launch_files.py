"""Launch files, RViz config and the whole stack under launch_testing.

Plain tests (always run, no ROS needed): the launch files compile, declare the documented
arguments (read from the AST), start exactly the node executables of setup.py, and reference files
that exist; the RViz config shows the contract topics.

Introspection test (needs ``launch`` and ``launch_ros``): evaluates the launch description for
each backend without starting processes.

Integration test (needs ``launch_testing`` and the package installed in an ament prefix, e.g. a
colcon workspace): launches the stack with the simulator, waits for the contract topics
(``ReadyToTest``, ``WaitForTopics``) and checks every process exits with 0 after shutdown
(``assertExitCodes``). Where launch_testing is not installed it is skipped with the reason.
"""

from __future__ import annotations

import ast
import py_compile
import types
from pathlib import Path

import pytest
import yaml

from test.integration.ros_harness import ros_environment  # noqa: F401 - fixture

REPO = Path(__file__).resolve().parents[1]
LAUNCH = REPO / "launch"
STACK = LAUNCH / "kangaroo_wbc.launch.py"
GAZEBO = LAUNCH / "gazebo.launch.py"
RVIZ = REPO / "config" / "kangaroo.rviz"
PACKAGE = "kangaroo_wbc"

STACK_ARGUMENTS = {"backend", "rviz", "namespace", "use_sim_time"}
GAZEBO_ARGUMENTS = {"world", "spawn_z"}


# --------------------------------------------------------------------------------------------
# AST helpers


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _module_constants(tree: ast.Module) -> dict[str, object]:
    """Module-level ``NAME = <literal>`` assignments."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def _calls(tree: ast.Module, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call)
            and ((isinstance(n.func, ast.Name) and n.func.id == name)
                 or (isinstance(n.func, ast.Attribute) and n.func.attr == name))]


def _value(node: ast.AST, constants: dict[str, object]) -> object:
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return ast.literal_eval(node)


def declared_arguments(path: Path) -> dict[str, dict[str, object]]:
    """``{name: {"default_value": ..., "choices": ...}}`` of every DeclareLaunchArgument (literals
    only; a substitution default is reported as ``"<substitution>"``)."""
    tree = _tree(path)
    constants = _module_constants(tree)
    out = {}
    for call in _calls(tree, "DeclareLaunchArgument"):
        name = _value(call.args[0], constants)
        info: dict[str, object] = {}
        for kw in call.keywords:
            try:
                info[kw.arg] = _value(kw.value, constants)
            except ValueError:
                info[kw.arg] = "<substitution>"
        out[name] = info
    return out


def setup_node_executables() -> set[str]:
    tree = _tree(REPO / "setup.py")
    return set(_module_constants(tree)["NODES"])


# --------------------------------------------------------------------------------------------
# plain tests


@pytest.mark.parametrize("path", sorted(LAUNCH.glob("*.launch.py")), ids=lambda p: p.name)
def test_launch_files_compile(path: Path, tmp_path: Path) -> None:
    py_compile.compile(str(path), cfile=str(tmp_path / "out.pyc"), doraise=True)
    assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description"
               for n in _tree(path).body)


def test_stack_arguments() -> None:
    args = declared_arguments(STACK)
    assert set(args) == STACK_ARGUMENTS
    assert args["backend"]["choices"] == ["sim", "gazebo", "hardware"]
    assert args["backend"]["default_value"] == "sim"
    assert args["rviz"]["choices"] == ["true", "false"]
    assert args["namespace"]["default_value"] == ""
    assert args["use_sim_time"]["default_value"] == "<substitution>"  # depends on backend
    assert all(info.get("description") for info in args.values())


def test_gazebo_arguments() -> None:
    args = declared_arguments(GAZEBO)
    assert set(args) == GAZEBO_ARGUMENTS
    assert "UNTESTED" in ast.get_docstring(_tree(GAZEBO))


def test_stack_starts_the_package_nodes() -> None:
    """sim (backend sim) + the pipeline = exactly the node executables of setup.py."""
    tree = _tree(STACK)
    constants = _module_constants(tree)
    started = set(constants["PIPELINE"])
    started |= {_value(c.args[0], constants) for c in _calls(tree, "kangaroo_wbc_node")
                if c.args and isinstance(c.args[0], ast.Constant)}
    assert started == setup_node_executables()
    assert constants["PACKAGE"] == PACKAGE


def test_referenced_files_exist() -> None:
    for node in setup_node_executables():
        config = yaml.safe_load((REPO / "config" / f"{node}.yaml").read_text())
        assert config["/**"]["ros__parameters"]["rate_hz"] == 1000.0
    text = STACK.read_text() + GAZEBO.read_text()
    for name in ("kangaroo.urdf", "kangaroo.sdf", "kangaroo.rviz", "gazebo.launch.py"):
        assert f"'{name}'" in text
    assert RVIZ.is_file()


def test_rviz_config_shows_the_contract() -> None:
    config = yaml.safe_load(RVIZ.read_text())
    manager = config["Visualization Manager"]
    assert manager["Global Options"]["Fixed Frame"] == "odom"

    def flatten(displays):
        for d in displays:
            yield d
            yield from flatten(d.get("Displays", []))

    displays = list(flatten(manager["Displays"]))
    by_class: dict[str, list[dict]] = {}
    for d in displays:
        by_class.setdefault(d["Class"], []).append(d)
    models = {d["Description Topic"]["Value"]: d for d in by_class["rviz_default_plugins/RobotModel"]}
    assert set(models) == {"robot_description", "ground_truth/robot_description"}
    assert models["ground_truth/robot_description"]["TF Prefix"] == "ground_truth"
    assert "rviz_default_plugins/TF" in by_class
    wrenches = {d["Topic"]["Value"] for d in by_class["rviz_default_plugins/Wrench"]}
    assert wrenches == {"contact/left_sole/wrench", "contact/right_sole/wrench"}
    assert by_class["rviz_default_plugins/MarkerArray"][0]["Topic"]["Value"] == "contact/markers"
    assert by_class["rviz_default_plugins/PointStamped"][0]["Topic"]["Value"] == "zmp"
    # relative names only, so that a launch namespace applies
    assert all(not d["Topic"]["Value"].startswith("/") for d in displays if "Topic" in d)


# --------------------------------------------------------------------------------------------
# introspection (launch + launch_ros, no processes)


def _evaluate_stack(arguments: dict[str, str]) -> list[tuple[str, str, str, str]]:
    """(package, executable, node name, namespace) of the nodes the stack would start."""
    from launch.actions import IncludeLaunchDescription
    from launch.launch_context import LaunchContext
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch_ros.actions import Node

    context = LaunchContext()
    context.launch_configurations.update(arguments)
    description = PythonLaunchDescriptionSource(str(STACK)).get_launch_description(context)
    nodes: list[tuple[str, str, str, str]] = []

    def walk(entities) -> None:
        for entity in entities:
            condition = getattr(entity, "condition", None)
            if condition is not None and not condition.evaluate(context):
                continue
            if isinstance(entity, Node):
                entity._perform_substitutions(context)
                nodes.append((entity.node_package, entity.node_executable, entity.node_name,
                              entity.expanded_node_namespace))
            elif isinstance(entity, IncludeLaunchDescription):
                nodes.append(("<include>", "", "", ""))
            else:
                walk(entity.visit(context) or [])

    walk(description.entities)
    return nodes


@pytest.mark.parametrize(
    ("backend", "expected_sim", "expected_ghost", "expected_include"),
    [("sim", True, True, False), ("hardware", False, False, False), ("gazebo", False, False, True)],
)
def test_stack_introspection(backend, expected_sim, expected_ghost, expected_include) -> None:
    pytest.importorskip("launch_ros", reason="launch_ros is not installed (pip ROS wheels)")
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        get_package_share_directory(PACKAGE)
    except PackageNotFoundError:
        pytest.skip(f"{PACKAGE} is not installed in an ament prefix (colcon build)")
    nodes = _evaluate_stack({"backend": backend, "rviz": "false", "namespace": "kangaroo"})
    names = {name for _, _, name, _ in nodes}
    assert ("/kangaroo/sim" in names) == expected_sim
    assert ("/kangaroo/ground_truth_state_publisher" in names) == expected_ghost
    assert (("<include>", "", "", "") in nodes) == expected_include
    assert {"/kangaroo/state_estimator", "/kangaroo/contact_wrench_estimator",
            "/kangaroo/whole_body_controller", "/kangaroo/robot_state_publisher"} <= names
    assert "/kangaroo/rviz2" not in names


# --------------------------------------------------------------------------------------------
# launch_testing: the whole stack with the simulator


#: Topics that must flow once the stack is up (backend sim), with their message types.
STACK_TOPICS = [
    ("actuators/state", "sensor_msgs.msg", "JointState"),
    ("imu/data", "sensor_msgs.msg", "Imu"),
    ("joint_states", "sensor_msgs.msg", "JointState"),
    ("estimation/base_odometry", "nav_msgs.msg", "Odometry"),
    ("contact/left_sole/wrench", "geometry_msgs.msg", "WrenchStamped"),
    ("contact/right_sole/wrench", "geometry_msgs.msg", "WrenchStamped"),
    ("actuators/command", "sensor_msgs.msg", "JointState"),
]


def stack_launch_test_module(launch_file: str, timeout_s: float = 60.0) -> types.ModuleType:
    """A launch_testing test module (built at run time so that pytest does not collect its
    TestCases where launch_testing is missing): the stack with ``backend:=sim rviz:=false``."""
    import importlib
    import unittest

    import launch_testing.actions
    import launch_testing.asserts
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description import LaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch_testing_ros import WaitForTopics

    topics = [("/" + name, getattr(importlib.import_module(module), cls))
              for name, module, cls in STACK_TOPICS]

    def generate_test_description():
        stack = IncludeLaunchDescription(
            PythonLaunchDescriptionSource(launch_file),
            launch_arguments={"backend": "sim", "rviz": "false"}.items())
        return LaunchDescription([stack, launch_testing.actions.ReadyToTest()])

    class TestStackTopics(unittest.TestCase):
        def test_contract_topics_flow(self):
            with WaitForTopics(topics, timeout=timeout_s) as wait:
                self.assertEqual(wait.topics_not_received(), set())

    @launch_testing.post_shutdown_test()
    class TestStackShutdown(unittest.TestCase):
        def test_exit_codes(self, proc_info):
            launch_testing.asserts.assertExitCodes(proc_info)

    module = types.ModuleType("kangaroo_wbc_stack_launch_test")
    module.generate_test_description = generate_test_description
    module.TestStackTopics = TestStackTopics
    module.TestStackShutdown = TestStackShutdown
    return module


def test_stack_with_launch_testing(ros_environment) -> None:
    """backend sim: every contract topic flows; every process exits with 0 after shutdown."""
    pytest.importorskip("launch_testing", reason="launch_testing is not installed (pip ROS wheels); "
                        "run in a ROS 2 installation after colcon build")
    pytest.importorskip("launch_testing_ros", reason="launch_testing_ros is not installed")
    pytest.importorskip("launch_ros", reason="launch_ros is not installed")
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    from launch_testing.loader import LoadTestsFromPythonModule
    from launch_testing_ros import LaunchTestRunner

    try:
        share = Path(get_package_share_directory(PACKAGE))
        get_package_share_directory("robot_state_publisher")
    except PackageNotFoundError as exc:
        pytest.skip(f"not installed in an ament prefix: {exc}")
    module = stack_launch_test_module(str(share / "launch" / STACK.name))
    runner = LaunchTestRunner(test_runs=LoadTestsFromPythonModule(module, name=module.__name__))
    runner.validate()
    results = runner.run()
    problems = [f"{case}: {error}" for result in results.values()
                for case, error in getattr(result, "errors", []) + getattr(result, "failures", [])]
    assert all(result.wasSuccessful() for result in results.values()), "\n".join(problems)

