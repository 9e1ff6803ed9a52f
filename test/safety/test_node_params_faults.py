"""Configuration faults of the four real node executables: malformed parameter and model files at
start-up, and parameter changes out of range at run time.

Start-up (every node): a parameter file that is not valid YAML, one with a wrong-type value, one
with an unknown key, one with a value out of range; for the nodes that load the model (every node
but ``sim``, which has no model parameter), ``urdf_dir`` pointing to a folder without the model
files, to a truncated URDF, to a closure file that is not valid YAML and to one with a wrong-type
key. Expected: exit code 2 and a fatal line naming the file and the key (or the line).

Run time (every node, running): a ``SetParameters`` request from the test probe, as
``ros2 param set`` sends it, with a value out of range (and, for some nodes, failing a cross-field
check or a name check, or read-only): rejected with a reason naming the parameter and the bound,
the old value still in effect (``GetParameters``), the node still running and reporting; one
accepted in-range change per node. The table is in ``docs/safety.md``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from kangaroo_wbc.ros.node_base import EXIT_CONFIG_ERROR  # noqa: E402
from test.integration.ros_harness import REPO_ROOT, ros_environment  # noqa: E402,F401 - fixture
from test.safety.dds_faults import (  # noqa: E402
    START_TIMEOUT_S,
    Diagnostics,
    get_parameters,
    module_harness,  # noqa: F401 - fixture
    set_parameters,
)

pytestmark = [pytest.mark.ros, pytest.mark.integration, pytest.mark.slow]

NODES = ("sim", "state_estimator", "contact_wrench_estimator", "whole_body_controller")
MODEL_NODES = NODES[1:]
PARALLEL = 4  # start-up processes at a time (each exits within seconds)
EXIT_TIMEOUT_S = 120.0  # a failing start-up on a loaded machine (imports, model loading)

#: A value out of range for ``rate_hz`` at start-up, per node (ranges in the nodes' dataclasses).
RATE_OUT_OF_RANGE = {
    "sim": (1.0, "Min: 10.0"),
    "state_estimator": (0.5, "Min: 1.0"),
    "contact_wrench_estimator": (0.5, "Min: 1.0"),
    "whole_body_controller": (0.5, "Min: 1.0"),
}


def _params_file(path: Path, body: str) -> Path:
    path.write_text("/**:\n  ros__parameters:\n" + body)
    return path


def _model_dir(
    root: Path, name: str, urdf: str | None = None, closures: str | None = None
) -> Path:
    """A copy of the package's model files with one of them replaced (None: no files at all)."""
    d = root / name
    d.mkdir()
    if urdf is None and closures is None:
        return d
    shutil.copy(REPO_ROOT / "urdf" / "kangaroo.urdf", d / "kangaroo.urdf")
    shutil.copy(REPO_ROOT / "urdf" / "kangaroo_closures.yaml", d / "kangaroo_closures.yaml")
    if urdf is not None:
        (d / "kangaroo.urdf").write_text(urdf)
    if closures is not None:
        (d / "kangaroo_closures.yaml").write_text(closures)
    return d


def _startup_cases(root: Path) -> dict[tuple[str, str], tuple[dict, list[str]]]:
    """``{(node, case): (start_node keyword arguments, fragments the output must contain)}``."""
    syntax = _params_file(root / "syntax.yaml", "    rate_hz: [1000.0\n    seed: 1\n")
    wrong_type = _params_file(root / "wrong_type.yaml", "    rate_hz: 1000\n")
    unknown = _params_file(root / "unknown.yaml", "    rate_hzz: 1000.0\n")
    urdf_text = (REPO_ROOT / "urdf" / "kangaroo.urdf").read_text()
    closures_text = (REPO_ROOT / "urdf" / "kangaroo_closures.yaml").read_text()
    missing = _model_dir(root, "missing")
    truncated = _model_dir(root, "truncated_urdf", urdf=urdf_text[: len(urdf_text) // 3])
    bad_yaml = _model_dir(
        root,
        "bad_yaml",
        closures=closures_text.replace("actuated_joints:", "actuated_joints: [", 1),
    )
    bad_key = _model_dir(
        root, "bad_key", closures=closures_text.replace("closures:", "closures: 5\nunused:", 1)
    )
    cases: dict[tuple[str, str], tuple[dict, list[str]]] = {}
    for node in NODES:
        value, bound = RATE_OUT_OF_RANGE[node]
        out_of_range = _params_file(root / f"range_{node}.yaml", f"    rate_hz: {value!r}\n")
        cases[(node, "yaml syntax error")] = ({"params_file": syntax}, [str(syntax), "near line"])
        cases[(node, "wrong-type value")] = (
            {"params_file": wrong_type},
            [str(wrong_type), "'rate_hz' must be double"],
        )
        cases[(node, "unknown key")] = (
            {"params_file": unknown},
            [str(unknown), "unknown parameter(s) 'rate_hzz' (did you mean 'rate_hz'?)"],
        )
        cases[(node, "out of range")] = (
            {"params_file": out_of_range},
            [str(out_of_range), "rate_hz out of range", bound],
        )
        cases[(node, "unknown rig")] = (
            {"params": {"rig": "two_legs"}},
            ["rig", "empty or one of ['one_leg']"],
        )
    for node in MODEL_NODES:
        cases[(node, "model files missing")] = (
            {"params": {"urdf_dir": str(missing)}},
            ["parameter 'urdf_dir'", f"{missing}/kangaroo.urdf", "not found"],
        )
        cases[(node, "truncated URDF")] = (
            {"params": {"urdf_dir": str(truncated)}},
            ["parameter 'urdf_dir'", f"{truncated}/kangaroo.urdf", "not well-formed XML"],
        )
        cases[(node, "closures not YAML")] = (
            {"params": {"urdf_dir": str(bad_yaml)}},
            [f"{bad_yaml}/kangaroo_closures.yaml", "not valid YAML", ", line "],
        )
        cases[(node, "closures wrong-type key")] = (
            {"params": {"urdf_dir": str(bad_key)}},
            [f"{bad_key}/kangaroo_closures.yaml", "closures", "expected a list"],
        )
    return cases


@pytest.fixture(scope="module")
def startup_failures(module_harness, tmp_path_factory):
    """Every start-up case run once, ``PARALLEL`` processes at a time: ``{case: (process, exit code,
    fragments)}`` (integration)."""
    cases = _startup_cases(tmp_path_factory.mktemp("bad_configuration"))
    results = {}
    items = list(cases.items())
    for i in range(0, len(items), PARALLEL):
        batch = [
            (key, module_harness.start_node(key[0], **kwargs), fragments)
            for key, (kwargs, fragments) in items[i : i + PARALLEL]
        ]
        for key, proc, fragments in batch:
            proc.stopping = True  # expected to exit: not a process death for the harness' checks
            results[key] = (proc, proc.wait_exit(EXIT_TIMEOUT_S), fragments)
    return results


STARTUP_CASES = [
    (node, case)
    for node in NODES
    for case in ("yaml syntax error", "wrong-type value", "unknown key", "out of range", "unknown rig")
]
STARTUP_CASES += [
    (node, case)
    for node in MODEL_NODES
    for case in (
        "model files missing",
        "truncated URDF",
        "closures not YAML",
        "closures wrong-type key",
    )
]


@pytest.mark.parametrize(("node", "case"), STARTUP_CASES)
def test_bad_configuration_at_startup_exits_with_code_2_naming_it(startup_failures, node, case):
    proc, code, fragments = startup_failures[(node, case)]
    output = proc.output()
    assert code == EXIT_CONFIG_ERROR, proc.describe()
    assert "configuration error" in output, proc.describe()
    missing = [f for f in fragments if f not in output]
    assert not missing, f"{missing} not in the output:\n{proc.describe()}"
    assert "Traceback" not in output, proc.describe()


# ------------------------------------------------------------------------------------ run time

#: Per node: the status it reports, rejected changes ``(values, fragments of the reason)`` and one
#: accepted change.
RUNTIME = {
    "sim": (
        "sim: simulation",
        [
            ({"watchdog_timeout_s": 20.0}, ["watchdog_timeout_s", "out of range", "Max: 10.0"]),
            ({"rate_hz": 500.0}, ["read-only", "rate_hz"]),
        ],
        {"watchdog_timeout_s": 0.1},
    ),
    "state_estimator": (
        "state_estimator: estimator",
        [
            ({"alpha": 2e4}, ["alpha", "out of range", "Max: 10000.0"]),
            (
                {"contact_force_off_n": 100.0},
                ["contact_force_off_n must be below contact_force_on_n"],
            ),
        ],
        {"closure_error_warn": 0.002},
    ),
    "contact_wrench_estimator": (
        "contact_wrench_estimator: wrench",
        [
            ({"marker_rate_hz": 5000.0}, ["marker_rate_hz", "out of range", "Max: 1000.0"]),
            ({"min_normal_force_n": -1.0}, ["min_normal_force_n", "out of range", "Min: 0.001"]),
        ],
        {"marker_rate_hz": 10.0},
    ),
    "whole_body_controller": (
        "whole_body_controller: wbc",
        [
            ({"com_kp": 1e5}, ["com_kp", "out of range", "Max: 10000.0"]),
            ({"behaviour": "moonwalk"}, ["behaviour", "unknown behaviour"]),
        ],
        {"com_kp": 150.0},
    ),
}


@pytest.fixture(scope="module")
def running_nodes(module_harness):
    """The four nodes running with their defaults (the simulator in lockstep: it waits for commands)."""
    h = module_harness
    procs = {
        node: h.start_node(node, params={"lockstep": True} if node == "sim" else None)
        for node in NODES
    }
    for node in NODES:
        get_parameters(h, node, "rate_hz")  # the parameter services answer: the node is built
    yield procs
    for proc in procs.values():
        assert proc.is_running(), proc.describe()
        assert h.stop(proc) == 0, proc.describe()


@pytest.mark.parametrize("node", NODES)
def test_out_of_range_change_at_run_time_is_rejected_with_the_reason(
    module_harness, running_nodes, node
):
    h, proc = module_harness, running_nodes[node]
    status, rejected, accepted = RUNTIME[node]
    diag = Diagnostics(h)
    for values, fragments in rejected:
        before = get_parameters(h, node, *values)
        result = set_parameters(h, node, **values)
        assert not result.successful, (values, result.reason)
        missing = [f for f in fragments if f not in result.reason]
        assert not missing, (values, result.reason)
        assert get_parameters(h, node, *values) == before, values
    assert proc.is_running(), proc.describe()
    diag.mark()
    diag.wait(status, (0, 1, 2), timeout_s=START_TIMEOUT_S)  # still reporting after the rejections
    result = set_parameters(h, node, **accepted)
    assert result.successful, (accepted, result.reason)
    assert get_parameters(h, node, *accepted) == list(accepted.values())
    assert proc.is_running(), proc.describe()
