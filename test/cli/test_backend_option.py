"""``demo --backend ros2_control --joint-space ...``: accepted where it applies, refused (one line,
exit 2, nothing run) where it does not (integration: the CLI as a subprocess)."""

from __future__ import annotations

import pytest

from kangaroo_wbc_tools.cli import build_parser
from test.cli.conftest import run_cli


@pytest.mark.parametrize(("args", "names"), [
    (["demo", "--joint-space", "serial"], "--joint-space"),
    (["demo", "--backend", "native", "--joint-space", "actuator"], "--joint-space"),
    (["demo", "--backend", "ros2_control", "--rig", "one_leg"], "--backend ros2_control"),
    (["demo", "--backend", "ethercat"], "--backend"),
    (["demo", "--backend", "ros2_control", "--joint-space", "cartesian"], "--joint-space"),
])
def test_backend_options_refused_where_they_do_not_apply(args, names, workdir):
    proc = run_cli(*args, cwd=workdir, timeout=30.0)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in proc.stderr
    assert not any(workdir.iterdir())


@pytest.mark.parametrize("processes", ["one", "separate", "composed"])
def test_backend_options_parse_for_every_deployment(processes):
    args = build_parser().parse_args(["demo", "--processes", processes, "--backend", "ros2_control",
                                      "--joint-space", "serial"])
    assert (args.backend, args.joint_space) == ("ros2_control", "serial")
    from kangaroo_wbc_tools.cli.demo_cmd import _hardware

    assert _hardware(args) == {"interface": "ros2_control", "joint_space": "serial"}
