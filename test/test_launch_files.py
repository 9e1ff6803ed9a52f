"""Launch files, RViz config and the whole stack under launch_testing.

Plain tests (always run, no ROS needed): the launch files compile, declare the documented
arguments (read from the AST), start exactly the node executables of setup.py, and reference files
that exist; the RViz config shows the contract topics.

Introspection tests (need ``launch``, ``launch_ros`` and the package in an ament prefix, e.g. a
colcon workspace or ``scripts/launch_tools.sh``): evaluate the launch description for each backend,
deployment and set of installed optional packages without starting processes, and check which
processes would start, with which parameters and arguments.

Integration test (needs ``launch_testing`` as well): launches the stack with the simulator, waits
for the contract topics (``ReadyToTest``, ``WaitForTopics``) and checks every process exits with 0
after shutdown (``assertExitCodes``). What the launched robot does is checked by
``test/launch/test_kangaroo_wbc_launch.py``. Each of them is skipped, with the reason, where its
tools are not installed.
"""

from __future__ import annotations

import ast
import dataclasses
import os
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

STACK_ARGUMENTS = {"backend", "deployment", "sim_mode", "behaviour", "cmd_vel", "rviz", "namespace",
                   "use_sim_time", "rig", "rig_leg", "interface", "joint_space"}
#: Node executables of the stack's core (a core process exiting shuts the launch down).
CORE = {"sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller"}
GAZEBO_ARGUMENTS = {"world", "spawn_z", "joint_space", "hardware_map"}


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
    assert args["backend"]["choices"] == ["sim", "ros2_control", "gazebo", "hardware"]
    assert args["backend"]["default_value"] == "sim"
    assert args["deployment"]["choices"] == ["separate", "composed"]
    assert args["deployment"]["default_value"] == "composed"  # the one that keeps up on 2 cores (issue #40)
    assert args["sim_mode"]["choices"] == ["realtime", "lockstep"]
    assert args["sim_mode"]["default_value"] == "realtime"
    assert args["behaviour"]["default_value"] == "stand"
    assert args["cmd_vel"]["default_value"] == ""
    assert args["rviz"]["choices"] == ["true", "false"]
    assert args["rviz"]["default_value"] == "false"
    assert args["namespace"]["default_value"] == ""
    assert args["use_sim_time"]["default_value"] == "auto"  # true unless backend is hardware
    assert args["use_sim_time"]["choices"] == ["auto", "true", "false"]
    assert all(info.get("description") for info in args.values())


def test_interface_choices_are_the_nodes() -> None:
    """interface and joint_space offer what the nodes' parameters accept (auto: the backend's)."""
    from kangaroo_wbc.components.ros2_control.settings import INTERFACES
    from kangaroo_wbc.model.hardware_map import JOINT_SPACES

    args = declared_arguments(STACK)
    assert args["interface"]["choices"] == ["auto", *INTERFACES]
    assert args["interface"]["default_value"] == "auto"
    assert args["joint_space"]["choices"] == list(JOINT_SPACES)
    assert args["joint_space"]["default_value"] == JOINT_SPACES[0]


def test_rig_choices_are_the_benches() -> None:
    from kangaroo_wbc.robots.kangaroo.rig import RIGS

    args = declared_arguments(STACK)
    assert args["rig"]["choices"] == ["", *RIGS] and args["rig"]["default_value"] == ""
    assert args["rig_leg"]["choices"] == ["left", "right"] and args["rig_leg"]["default_value"] == "left"


def test_behaviour_choices_are_the_controllers() -> None:
    from kangaroo_wbc.control.behaviours import BEHAVIOURS

    assert declared_arguments(STACK)["behaviour"]["choices"] == list(BEHAVIOURS)


# --------------------------------------------------------------------------------------------
# documentation drift: docs/interface.md, README.md and the launch file's docstring


INTERFACE_DOC = REPO / "docs" / "interface.md"
README = REPO / "README.md"
#: A documented value that stands for the empty string.
EMPTY_WORD = "empty"


def documented_arguments() -> dict[str, list[str]]:
    """The argument table of docs/interface.md's "Launch files": ``{argument: [values, default
    first]}`` (``empty`` read as the empty string)."""
    text = INTERFACE_DOC.read_text()
    section = text[text.index("## Launch files"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`") or not line.startswith("|"):
            continue
        values = []
        for token in cells[1].split(", "):
            token = token.strip()
            values.append("" if token == EMPTY_WORD else token.strip("`"))
        rows[cells[0].strip("`")] = values
    return rows


def test_interface_doc_lists_every_launch_argument() -> None:
    """The table of docs/interface.md has every declared argument, its default first and, for an
    argument with choices, exactly the choices."""
    declared = declared_arguments(STACK)
    documented = documented_arguments()
    assert set(documented) == set(declared), (
        f"docs/interface.md: missing {sorted(set(declared) - set(documented))}, "
        f"unknown {sorted(set(documented) - set(declared))}")
    for name, info in declared.items():
        values = documented[name]
        assert values[0] == info["default_value"], f"{name}: documented default {values[0]!r}"
        if "choices" in info:
            assert sorted(values) == sorted(info["choices"]), f"{name}: documented {values}"


def test_documented_behaviours_are_the_controllers() -> None:
    """docs/interface.md and the launch file's docstring name every behaviour of the registry."""
    from kangaroo_wbc.control.behaviours import BEHAVIOURS

    assert documented_arguments()["behaviour"] == list(BEHAVIOURS)
    doc = ast.get_docstring(_tree(STACK))
    block = doc[doc.index("    behaviour "):doc.index("    cmd_vel ")]
    named = [w.strip(" ,.\n") for w in block.replace(" or ", ", ").split(",")]
    assert [b for b in BEHAVIOURS if b not in " ".join(named)] == [], block


def test_launch_docstring_describes_every_argument() -> None:
    """The launch file's docstring has an entry for each declared argument (and no other)."""
    doc = ast.get_docstring(_tree(STACK))
    block = doc[doc.index("Arguments:"):]
    block = block[:block.index("\n\n", len("Arguments:\n") + 1)]
    entries = {line.split()[0] for line in block.splitlines()[1:]
               if line.startswith("    ") and not line.startswith("     ")}
    assert entries == set(declared_arguments(STACK))


def _documented_launch_commands() -> list[tuple[str, dict[str, str]]]:
    """Every ``ros2 launch kangaroo_wbc kangaroo_wbc.launch.py a:=b ...`` of the docs and README:
    ``(where, {argument: value})``."""
    out = []
    for path in [README, *sorted((REPO / "docs").glob("*.md")), STACK]:
        for line in path.read_text().splitlines():
            if "ros2 launch kangaroo_wbc kangaroo_wbc.launch.py" not in line:
                continue
            # up to the end of an inline code span or a comment
            words = line.split("kangaroo_wbc.launch.py", 1)[1].split("`")[0].split("#")[0].split()
            args = dict(w.split(":=", 1) for w in words if ":=" in w)
            out.append((f"{path.name}: {line.strip()}", args))
    return out


def test_documented_launch_commands_use_declared_arguments() -> None:
    declared = declared_arguments(STACK)
    commands = _documented_launch_commands()
    assert len(commands) >= 5
    for where, args in commands:
        for name, value in args.items():
            assert name in declared, f"{where}: no argument {name!r}"
            choices = declared[name].get("choices")
            assert choices is None or value in choices, f"{where}: {name}:={value} not in {choices}"


def test_show_args_prints_no_python_objects(capsys) -> None:
    """``ros2 launch ... --show-args`` (ros2launch's printer, or the same ``describe()`` of each
    default where ros2launch is missing) prints text for every argument, never an object repr."""
    pytest.importorskip("launch_ros", reason="launch_ros is not installed (pip ROS wheels); "
                        "see docs/install.md, scripts/launch_tools.sh")
    from launch.launch_description_sources import get_launch_description_from_python_launch_file
    from launch.substitutions import TextSubstitution

    description = get_launch_description_from_python_launch_file(str(STACK))
    arguments = description.get_launch_arguments()
    assert {a.name for a in arguments} == set(declared_arguments(STACK))
    for argument in arguments:
        assert all(isinstance(t, TextSubstitution) for t in argument.default_value), argument.name
    try:
        from ros2launch.api import print_arguments_of_launch_description
    except ImportError:
        text = "\n".join(" + ".join(t.describe() for t in a.default_value) for a in arguments)
    else:
        print_arguments_of_launch_description(launch_description=description)
        text = capsys.readouterr().out
        assert all(f"'{a.name}':" in text for a in arguments)
    assert " object at 0x" not in text and "Substitution(" not in text, text


def test_core_nodes_shut_the_launch_down() -> None:
    """Every core node is built by ``core_node``, which gives it ``on_exit=Shutdown(...)``."""
    tree = _tree(STACK)
    (core_node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "core_node"]
    (node_call,) = _calls(core_node, "Node")
    on_exit = {kw.arg: kw.value for kw in node_call.keywords}["on_exit"]
    assert isinstance(on_exit, ast.Call) and on_exit.func.id == "Shutdown"
    others = [c for c in _calls(tree, "Node") if c is not node_call
              and any(kw.arg == "package" and isinstance(kw.value, ast.Name) and kw.value.id == "PACKAGE"
                      for kw in c.keywords)]
    assert others and all(  # the other kangaroo_wbc nodes are link_tf, not part of the core
        _value(kw.value, _module_constants(tree)) == "link_tf"
        for c in others for kw in c.keywords if kw.arg == "executable")


def test_gazebo_arguments() -> None:
    args = declared_arguments(GAZEBO)
    assert set(args) == GAZEBO_ARGUMENTS
    assert "UNTESTED" in ast.get_docstring(_tree(GAZEBO))


def test_stack_starts_the_package_nodes() -> None:
    """sim + the pipeline (separate), composed, and link_tf = exactly the executables of setup.py."""
    constants = _module_constants(_tree(STACK))
    started = {"sim", *constants["PIPELINE"], constants["COMPOSED"], constants["LINK_TF"]}
    assert started == setup_node_executables()
    assert {"sim", *constants["PIPELINE"]} == CORE
    assert constants["PACKAGE"] == PACKAGE


def test_referenced_files_exist() -> None:
    for node in CORE:
        config = yaml.safe_load((REPO / "config" / f"{node}.yaml").read_text())
        assert config[f"/**/{node}"]["ros__parameters"]["rate_hz"] == 1000.0
    config = yaml.safe_load((REPO / "config" / "link_tf.yaml").read_text())
    assert config["/**/link_tf"]["ros__parameters"]["rate_hz"] == 50.0
    text = STACK.read_text() + GAZEBO.read_text()
    for path in ("urdf/kangaroo.urdf", "config/kangaroo.rviz",
                 "launch/gazebo.launch.py", "config/{name}.yaml", "config/{LINK_TF}.yaml"):
        assert f"}}/{path}'" in text, path
        assert (REPO / path).is_file() or "{" in path
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
    assert [d["Topic"]["Value"] for d in by_class["rviz_default_plugins/MarkerArray"]] == ["contact/markers",
                                                                                          "wbc/footsteps"]
    assert by_class["rviz_default_plugins/PointStamped"][0]["Topic"]["Value"] == "zmp"
    # relative names only, so that a launch namespace applies
    assert all(not d["Topic"]["Value"].startswith("/") for d in displays if "Topic" in d)


# --------------------------------------------------------------------------------------------
# introspection (launch + launch_ros, no processes)


@dataclasses.dataclass
class Started:
    """A process the stack would start."""

    package: str
    executable: str
    name: str | None  # full node name, None when launch does not rename the node(s)
    namespace: str
    parameters: list  # parameter file paths, and dicts for inline parameters
    arguments: list[str]  # command-line arguments before --ros-args


def _node_parameters(node, context) -> list:
    """A node's parameters: file paths as strings, dicts and ``-p`` rules as ``{name: value}``."""
    from launch_ros.parameter_descriptions import Parameter
    from launch_ros.utilities import evaluate_parameters

    out = []
    for item in evaluate_parameters(context, node._Node__parameters or []):
        if isinstance(item, dict):
            out.append({k: v for k, v in item.items()})
        elif isinstance(item, Parameter):
            name, value = item.evaluate(context)
            out.append({name: list(value) if isinstance(value, tuple) else value})
        else:
            out.append(str(getattr(item, "param_file", item)))
    return out


def _evaluate_stack(arguments: dict[str, str]) -> list[Started]:
    """The processes the stack would start with ``arguments`` (no process is started)."""
    from launch.actions import ExecuteProcess, IncludeLaunchDescription, RegisterEventHandler
    from launch.launch_context import LaunchContext
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions
    from launch_ros.actions import Node

    context = LaunchContext()
    context.launch_configurations.update(arguments)
    description = PythonLaunchDescriptionSource(str(STACK)).get_launch_description(context)
    started: list[Started] = []

    def walk(entities) -> None:
        for entity in entities:
            condition = getattr(entity, "condition", None)
            if condition is not None and not condition.evaluate(context):
                continue
            if isinstance(entity, Node):
                entity._perform_substitutions(context)
                args = [perform_substitutions(context, normalize_to_list_of_substitutions(a))
                        for a in entity._Node__arguments or []]
                started.append(Started(
                    entity.node_package, entity.node_executable,
                    entity.node_name if entity._Node__node_name is not None else None,
                    entity.expanded_node_namespace, _node_parameters(entity, context), args))
            elif isinstance(entity, IncludeLaunchDescription):
                started.append(Started("<include>", "", None, "", [], []))
            elif isinstance(entity, ExecuteProcess):  # started, not a node: its command line
                entity.prepare(context)
                cmd = entity.process_description.final_cmd
                started.append(Started("<process>", " ".join(cmd), None, "", [], []))
            elif isinstance(entity, RegisterEventHandler):  # what starts later (not evaluated)
                continue
            else:
                walk(entity.visit(context) or [])

    walk(description.entities)
    return started


@pytest.fixture
def launch_env(tmp_path, monkeypatch):
    """launch_ros importable and kangaroo_wbc in an ament prefix (else skip). Returns a function
    ``installed(*packages)`` that makes fake optional packages visible to the ament index."""
    pytest.importorskip("launch_ros", reason="launch_ros is not installed (pip ROS wheels); "
                        "see docs/install.md, scripts/launch_tools.sh")
    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    try:
        get_package_share_directory(PACKAGE)
    except PackageNotFoundError:
        pytest.skip(f"{PACKAGE} is not installed in an ament prefix (colcon build or "
                    "scripts/launch_tools.sh)")
    # the kernel cache counts as built (test_cold_kernel_cache_builds_first: the other case)
    from kangaroo_wbc_tools.pipeline import compile_cache

    monkeypatch.setattr(compile_cache, "state", lambda *a: compile_cache.CacheState(True, tmp_path, "", 1.0))
    # the launch's log folder (where the composed process' parameter file goes) in this test's folder
    import launch.logging

    monkeypatch.setenv("ROS_LOG_DIR", str(tmp_path / "ros_log"))
    monkeypatch.setattr(launch.logging.launch_config, "_log_dir", None)
    for name in ("robot_state_publisher", "rviz2", "ros_gz_sim", "ros_gz_bridge"):
        try:
            get_package_share_directory(name)
        except PackageNotFoundError:
            continue
        pytest.skip(f"{name} is installed: these tests choose the optional packages themselves")

    def installed(*packages: str) -> None:
        index = tmp_path / "share" / "ament_index" / "resource_index" / "packages"
        index.mkdir(parents=True, exist_ok=True)
        for name in packages:
            (index / name).touch()
            (tmp_path / "share" / name).mkdir(exist_ok=True)
        monkeypatch.setenv("AMENT_PREFIX_PATH", f"{tmp_path}:{os.environ['AMENT_PREFIX_PATH']}")

    return installed


def _ours(started: list[Started]) -> list[Started]:
    return [s for s in started if s.package == PACKAGE]


def _log_dir() -> Path:
    import launch.logging

    return Path(launch.logging.launch_config.log_dir)


def _files(started: Started) -> list[str]:
    """The node's parameter files from the package (not the launch's own, in its log folder)."""
    return [Path(p).name for p in started.parameters if isinstance(p, str) and Path(p).parent != _log_dir()]


def _launch_parameters(started: Started) -> dict:
    """What a node gets from the launch arguments: its ``/**/<name>`` section of the launch's
    parameter file (in the launch's log folder) and its ``-p`` rules."""
    name = (started.name or "").rsplit("/", 1)[-1]
    out: dict = {}
    for p in started.parameters:
        if isinstance(p, dict):
            out.update(p)
        elif Path(p).parent == _log_dir():
            out.update(yaml.safe_load(Path(p).read_text()).get(f"/**/{name}", {}).get("ros__parameters", {}))
    return out


@pytest.mark.parametrize("deployment", ["separate", "composed"])
@pytest.mark.parametrize("rsp", [False, True], ids=["link_tf", "robot_state_publisher"])
def test_launch_writes_no_temporary_file(launch_env, deployment, rsp, tmp_path, monkeypatch) -> None:
    """Building every process of the stack (what ``ros2 launch`` does before starting them)
    writes nothing to the temporary folder: no parameter file is left behind after the launch."""
    import tempfile

    import launch.logging

    if rsp:
        launch_env("robot_state_publisher", "rviz2")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    for arguments in ({}, {"behaviour": "walk", "cmd_vel": "0.2,0,0.1", "rviz": "true"},
                      {"rig": "one_leg", "rig_leg": "right", "sim_mode": "lockstep", "namespace": "k"},
                      {"backend": "hardware"}):
        started = _evaluate_stack({"deployment": deployment, **arguments})
        assert _ours(started)
    assert sorted(p.name for p in scratch.iterdir()) == []
    # the composed process' per-node parameters are kept beside the launch's logs instead
    log_dir = Path(launch.logging.launch_config.log_dir)
    assert log_dir.is_relative_to(tmp_path / "ros_log")
    kept = sorted(p.name for p in log_dir.glob(f"{PACKAGE}_*"))
    assert len(kept) == 4, kept  # one per launch


@pytest.mark.parametrize("backend", ["sim", "ros2_control", "hardware"])
def test_separate_deployment(launch_env, backend) -> None:
    separate = {"backend": backend, "deployment": "separate"}
    started = _evaluate_stack({**separate, "namespace": "kangaroo", "behaviour": "sway", "sim_mode": "lockstep"})
    walking = _evaluate_stack({**separate, "behaviour": "walk", "cmd_vel": "0.3,0,0.1"})
    hardware = _hardware_overrides("ros2_control" if backend == "ros2_control" else "native", "actuator")
    wbc = next(s for s in _ours(walking) if s.executable == "whole_body_controller")
    assert _launch_parameters(wbc) == {"behaviour": "walk", "cmd_vel": [0.3, 0.0, 0.1],
                                       **hardware["whole_body_controller"]}
    core = [s for s in _ours(started) if s.executable in CORE]
    expected = (CORE if backend != "hardware" else CORE - {"sim"})
    assert sorted(s.executable for s in core) == sorted(expected)
    for s in core:
        assert s.name == f"/kangaroo/{s.executable}"
        assert _files(s) == [f"{s.executable}.yaml"]
        assert s.arguments == []
    inline = {s.executable: _launch_parameters(s) for s in core}
    for s in core:  # the package's file first, the launch's after it (it wins)
        assert Path(s.parameters[-1]).parent == _log_dir(), s.parameters
    assert inline["whole_body_controller"] == {"behaviour": "sway", **hardware["whole_body_controller"]}
    assert inline["state_estimator"] == hardware["state_estimator"]
    if backend != "hardware":
        assert inline["sim"] == {"lockstep": True, **hardware["sim"]}
    if backend == "ros2_control":
        return  # the bench is not a ros2_control system (test_interface_contradictions)
    benched = _evaluate_stack({**separate, "rig": "one_leg"})
    for s in _ours(benched):  # every node builds the bench
        assert {"rig": "one_leg", "rig_leg": "left"}.items() <= _launch_parameters(s).items(), s


def _hardware_overrides(interface: str, joint_space: str) -> dict:
    from kangaroo_wbc.components.ros2_control.settings import hardware_overrides

    return hardware_overrides(interface, joint_space)


@pytest.mark.parametrize("deployment", ["separate", "composed"])
@pytest.mark.parametrize(("backend", "interface"), [("ros2_control", "auto"), ("hardware", "ros2_control"),
                                                    ("gazebo", "auto")])
def test_ros2_control_interface(launch_env, deployment, backend, interface) -> None:
    """backend:=ros2_control (the simulator as that system), hardware with interface:=ros2_control
    and gazebo give sim, state_estimator and whole_body_controller the interface and joint space of
    the package's one mapping (the demo's and the graph runner's)."""
    launch_env("ros_gz_sim", "ros_gz_bridge")
    started = _evaluate_stack({"backend": backend, "interface": interface, "joint_space": "serial",
                               "deployment": deployment})
    hardware = _hardware_overrides("ros2_control", "serial")
    assert hardware["whole_body_controller"] == {"interface": "ros2_control", "joint_space": "serial"}
    ours = _ours(started)
    if deployment == "composed":
        (composed,) = [s for s in ours if s.executable == "composed"]
        assert composed.arguments[:2] == ["--backend", "sim" if backend == "ros2_control" else "hardware"]
        sections = yaml.safe_load(Path(composed.parameters[-1]).read_text())
        for name in ("state_estimator", "whole_body_controller") + (("sim",) if backend == "ros2_control" else ()):
            assert hardware[name].items() <= sections[f"/**/{name}"]["ros__parameters"].items(), name
    else:
        params = {s.executable: _launch_parameters(s) for s in ours if s.executable in CORE}
        assert ("sim" in params) == (backend == "ros2_control")
        for name, values in params.items():
            assert hardware.get(name, {}).items() <= values.items(), name
        assert "interface" not in params["contact_wrench_estimator"]
    includes = [s for s in started if s.package == "<include>"]
    assert len(includes) == (backend == "gazebo")


@pytest.mark.parametrize("arguments", [
    {"backend": "sim", "interface": "ros2_control"},
    {"backend": "ros2_control", "interface": "native"},
    {"backend": "gazebo", "interface": "native"},
    {"backend": "ros2_control", "rig": "one_leg"},
    {"backend": "hardware", "interface": "ros2_control", "rig": "one_leg"},
])
def test_interface_contradictions(launch_env, arguments) -> None:
    """An interface the backend cannot speak stops the launch with one error, before a process."""
    launch_env("ros_gz_sim", "ros_gz_bridge")
    with pytest.raises(RuntimeError, match="nothing was started"):
        _evaluate_stack(arguments)


NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten".split())}


@pytest.mark.parametrize("rsp", [False, True], ids=["link_tf", "robot_state_publisher"])
def test_readme_process_count(launch_env, rsp) -> None:
    """The README's "N processes" of ``backend:=sim`` is what the launch starts (by default, with or
    without robot_state_publisher)."""
    if rsp:
        launch_env("robot_state_publisher")
    counted = 0
    for where, args in _documented_launch_commands():
        if not where.startswith("README") or "processes" not in where:
            continue
        word = where.split("#", 1)[1].split("processes")[0].split()[-1]
        started = [s for s in _evaluate_stack(args) if s.package != "<include>"]
        assert len(started) == NUMBER_WORDS[word], (where, [s.executable for s in started])
        counted += 1
    assert counted, "README.md: no launch command says how many processes it starts"


@pytest.mark.parametrize("rsp", [False, True], ids=["link_tf hosted", "robot_state_publisher"])
@pytest.mark.parametrize(("backend", "hosted"), [("sim", "sim"), ("hardware", "hardware")])
def test_composed_deployment_is_one_process(launch_env, backend, hosted, rsp) -> None:
    if rsp:
        launch_env("robot_state_publisher")
    started = _evaluate_stack({"backend": backend, "deployment": "composed", "behaviour": "squat"})
    core = [s for s in _ours(started) if s.executable in CORE | {"composed"}]
    assert len(core) == 1, core
    (composed,) = core
    assert composed.executable == "composed"
    assert composed.name is None  # no __node remap: it would rename every hosted node
    assert composed.arguments == ["--backend", hosted] + ([] if rsp else ["--link-tf"])
    files = [p for p in composed.parameters if isinstance(p, str)]
    names = ["sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller"]
    if not rsp:
        names.append("link_tf")
    # the launch arguments: a file of per-node sections, last (it wins), in the launch's log folder
    assert [Path(p).name for p in files[:-1]] == [f"{n}.yaml" for n in names]
    assert Path(files[-1]).parent == _log_dir()
    overrides = yaml.safe_load(Path(files[-1]).read_text())
    assert overrides == {"/**/whole_body_controller": {"ros__parameters": {"behaviour": "squat"}},
                         "/**/sim": {"ros__parameters": {"lockstep": False}}}
    # link_tf is hosted in the composed process, not started beside it
    assert not [s for s in _ours(started) if s.executable == "link_tf"]
    assert [s.package for s in started if s.package == "robot_state_publisher"] == (
        ["robot_state_publisher"] * (2 if backend == "sim" else 1) if rsp else [])


def test_without_robot_state_publisher_link_tf_draws_the_links(launch_env) -> None:
    started = _evaluate_stack({"backend": "sim", "rviz": "true", "deployment": "separate"})
    link_tf = [s for s in _ours(started) if s.executable == "link_tf"]
    assert sorted(s.name for s in link_tf) == ["/ground_truth_link_tf", "/link_tf"]
    assert all(_files(s) == ["link_tf.yaml"] for s in link_tf)
    assert not [s for s in started if s.package in ("robot_state_publisher", "rviz2")]
    benched = {s.name: _launch_parameters(s) for s in _ours(_evaluate_stack(
        {"rig": "one_leg", "rig_leg": "right", "deployment": "separate"})) if s.executable == "link_tf"}
    assert benched == {"/link_tf": {"rig": "one_leg", "rig_leg": "right"},
                       "/ground_truth_link_tf": {"rig": "one_leg", "rig_leg": "right", "frame_prefix": "ground_truth/"}}


@pytest.mark.parametrize(
    ("backend", "expected_sim", "expected_ghost", "expected_include"),
    [("sim", True, True, False), ("ros2_control", True, True, False), ("hardware", False, False, False),
     ("gazebo", False, False, True)],
)
def test_stack_introspection(launch_env, backend, expected_sim, expected_ghost, expected_include) -> None:
    """With robot_state_publisher, rviz2 and ros_gz installed (deployment separate)."""
    launch_env("robot_state_publisher", "rviz2", "ros_gz_sim", "ros_gz_bridge")
    started = _evaluate_stack({"backend": backend, "rviz": "false", "namespace": "kangaroo",
                               "deployment": "separate"})
    names = {s.name for s in started}
    assert ("/kangaroo/sim" in names) == expected_sim
    assert ("/kangaroo/ground_truth_state_publisher" in names) == expected_ghost
    assert any(s.package == "<include>" for s in started) == expected_include
    assert {"/kangaroo/state_estimator", "/kangaroo/contact_wrench_estimator",
            "/kangaroo/whole_body_controller", "/kangaroo/robot_state_publisher"} <= names
    assert "/kangaroo/rviz2" not in names
    assert not [s for s in started if s.executable == "link_tf"]
    started = _evaluate_stack({"backend": backend, "rviz": "true"})
    assert "/rviz2" in {s.name for s in started}


@pytest.mark.parametrize("deployment", ["separate", "composed"])
def test_cold_kernel_cache_builds_first(launch_env, monkeypatch, tmp_path, deployment) -> None:
    """With numba's kernel cache not built, the launch logs why and how long, runs the cache build
    and starts the stack once that process has exited (with either exit code)."""
    import sys

    from launch.actions import ExecuteProcess, LogInfo, RegisterEventHandler
    from launch.events.process import ProcessExited

    from kangaroo_wbc_tools.pipeline import compile_cache

    cold = compile_cache.CacheState(False, tmp_path / "stamp", "none built for this install yet", 42.0)
    monkeypatch.setattr(compile_cache, "state", lambda *a: cold)
    first = _evaluate_stack({"deployment": deployment})
    assert [s.package for s in first] == ["<process>"], first  # nothing else before the build
    assert first[0].executable == f"{sys.executable} -m kangaroo_wbc_tools.pipeline.compile_cache --quiet"

    from launch.launch_context import LaunchContext
    from launch.launch_description_sources import PythonLaunchDescriptionSource

    context = LaunchContext()
    context.launch_configurations.update({"deployment": deployment})
    description = PythonLaunchDescriptionSource(str(STACK)).get_launch_description(context)
    entities = []
    for entity in description.entities:
        entities += entity.visit(context) or []
    log, build, handler = entities
    assert isinstance(log, LogInfo) and isinstance(build, ExecuteProcess)
    text = "".join(t.perform(context) for t in log.msg)
    assert "about 42 s" in text and "none built for this install yet" in text
    assert isinstance(handler, RegisterEventHandler)
    cmd = first[0].executable.split()
    for code in (0, 1):
        event = ProcessExited(returncode=code, action=build, name="compile_cache", cmd=cmd, cwd=None,
                              env=None, pid=1)
        started = handler.event_handler.handle(event, context)
        assert [type(a).__name__ for a in started] == ["GroupAction"], started


def test_missing_gazebo_starts_nothing(launch_env) -> None:
    """backend gazebo without ros_gz: one clear error before any process is built."""
    with pytest.raises(RuntimeError, match="ros_gz_sim, ros_gz_bridge"):
        _evaluate_stack({"backend": "gazebo"})


@pytest.mark.parametrize("text", ["0.3,0", "fast,0,0", "nan,0,0", "0.3,0,inf"])
def test_malformed_cmd_vel_starts_nothing(launch_env, text) -> None:
    """cmd_vel:= that is not three finite numbers: one clear error before any process is built."""
    with pytest.raises(RuntimeError, match="expected vx,vy,wz"):
        _evaluate_stack({"behaviour": "walk", "cmd_vel": text})


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
    except PackageNotFoundError as exc:
        pytest.skip(f"not installed in an ament prefix: {exc}")
    module = stack_launch_test_module(str(share / "launch" / STACK.name))
    runner = LaunchTestRunner(test_runs=LoadTestsFromPythonModule(module, name=module.__name__))
    runner.validate()
    results = runner.run()
    problems = [f"{case}: {error}" for result in results.values()
                for case, error in getattr(result, "errors", []) + getattr(result, "failures", [])]
    assert all(result.wasSuccessful() for result in results.values()), "\n".join(problems)

