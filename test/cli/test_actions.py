"""The actions of ``kangaroo-wbc`` commands that were ``python -m`` entry points: ``model generate``,
``model ros2-control``, ``analyze ankle-window``, ``bench qp-solvers``, ``bench peer-env``.

Unit tests: the parser in-process (the commands' own invocations unchanged, ``--help`` of every
action). Integration tests: the CLI as a subprocess (rejections in one line, exit 2; the generated
files equal the committed ones; the studies' JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kangaroo_wbc_tools.cli import build_parser, main
from kangaroo_wbc_tools.cli.common import OptionalActions
from test.cli.conftest import REPO, assert_rejected_in_one_line, run_cli

ACTIONS = [["model", "generate"], ["model", "ros2-control"], ["analyze", "ankle-window"],
           ["bench", "qp-solvers"], ["bench", "peer-env"]]

# (arguments, text the one stderr line must hold); "{file}" is a file made by the test.
REJECTED = [
    (["model", "generate", "{file}"], "DIR"),
    (["model", "generate", "--params", "no_such.yaml"], "--params"),
    (["model", "generate", "--cage", "--no-such-option"], "--no-such-option"),
    (["model", "ros2-control", "{file}"], "ROOT"),
    (["model", "ros2-control", "--out", "x.urdf"], "--out"),
    (["model", "ros2-control", "--joint-space", "serial"], "--joint-space"),
    (["model", "ros2-control", "--hardware-map", "{file}"], "--hardware-map"),
    (["model", "ros2-control", "--hardware-plugin", "my/System"], "--out"),
    (["model", "ros2-control", "--hardware-plugin", " ", "--out", "x.urdf"], "--hardware-plugin"),
    (["model", "ros2-control", "--hardware-plugin", "my/System", "--out", "x.urdf", "--joint-space", "joint"],
     "--joint-space"),
    (["model", "ros2-control", "--hardware-plugin", "my/System", "--out", "{file}/x.urdf"], "--out"),
    (["analyze", "ankle-window", "--pitch-window", "30", "-30"], "--pitch-window"),
    (["analyze", "ankle-window", "--pitch-window", "-100", "30"], "--pitch-window"),
    (["analyze", "ankle-window", "--pitch-window", "nan", "30"], "--pitch-window"),
    (["analyze", "ankle-window", "--pitch-window", "-30"], "--pitch-window"),
    (["analyze", "ankle-window", "--planar", "femur", "--margin", "45"], "--margin"),
    (["analyze", "ankle-window", "--planar", "femur", "--margin", "-1"], "--margin"),
    (["analyze", "ankle-window", "--margin", "10"], "--margin"),
    (["analyze", "ankle-window", "--search", "--generations", "0"], "--generations"),
    (["analyze", "ankle-window", "--generations", "5"], "--generations"),
    (["analyze", "ankle-window", "--planar", "tibia"], "--planar"),
    (["analyze", "ankle-window", "--seed", "-1"], "--seed"),
    (["analyze", "--levels", "2", "ankle-window"], "--levels"),
    (["analyze", "ankle-window", "--levels", "2"], "--levels"),
    (["bench", "qp-solvers", "--duration", "0.1"], "--duration"),
    (["bench", "qp-solvers", "--duration", "inf"], "--duration"),
    (["bench", "qp-solvers", "--duration", "11"], "--duration"),
    (["bench", "qp-solvers", "--behaviour", "weight_shift"], "single_support"),
    (["bench", "qp-solvers", "--seed", "x"], "--seed"),
    (["bench", "qp-solvers", "--quick"], "--quick"),
    (["bench", "--quick", "qp-solvers"], "--quick"),
    (["bench", "--iterations", "10", "peer-env"], "--iterations"),
    (["bench", "peer-env", "--venv", "{file}"], "--venv"),
    (["bench", "peer-solvers"], "qp-solvers"),
]


def _fill(args: list[str], tmp: Path) -> list[str]:
    file = tmp / "a_file.txt"
    file.write_text("not a folder\n")
    return [a.replace("{file}", str(file)) for a in args]


@pytest.mark.integration
@pytest.mark.parametrize(("args", "text"), REJECTED, ids=[" ".join(a) for a, _ in REJECTED])
def test_rejected_action_argument_is_one_line_exit_2_and_writes_nothing(args, text, tmp_path, workdir):
    assert_rejected_in_one_line(_fill(args, tmp_path), text, workdir)


@pytest.mark.parametrize("action", ACTIONS, ids=" ".join)
def test_every_action_has_help(action, capsys):
    """Unit: ``--help`` of each action prints its usage and exits 0; the command's help names it."""
    with pytest.raises(SystemExit) as exc:
        main([*action, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: kangaroo-wbc {' '.join(action)}") and "--json" in out, out
    with pytest.raises(SystemExit):
        main([action[0], "--help"])
    assert action[1] in capsys.readouterr().out


def test_the_commands_own_invocations_are_unchanged(tmp_path):
    """Unit: ``bench``, ``analyze`` and ``model info`` parse as before the actions existed: their own
    function, their own options, no action."""
    from kangaroo_wbc_tools.cli import analyze_cmd, bench_cmd, model_cmd

    parser = build_parser()
    bench = parser.parse_args(["bench", "--quick", "--json", "--iterations", "7"])
    assert bench.func is bench_cmd._run and bench.bench_command is None
    assert bench.quick and bench.json and bench.iterations == 7
    analyze = parser.parse_args(["analyze", "--levels", "2", "--out", str(tmp_path / "r")])
    assert analyze.func is analyze_cmd._analyze and analyze.validate is analyze_cmd._validate
    assert analyze.analyze_command is None and analyze.levels == 2
    info = parser.parse_args(["model", "info", str(REPO / "urdf" / "kangaroo.urdf"), "--json"])
    assert info.func is model_cmd._info and info.model_command == "info"
    # and each action runs its own function, without the command's output folder
    window = parser.parse_args(["analyze", "ankle-window"])
    assert window.func is analyze_cmd._ankle_window and window.out is None
    assert parser.parse_args(["bench", "qp-solvers"]).func is bench_cmd._qp_solvers
    assert parser.parse_args(["bench", "peer-env"]).func is bench_cmd._peer_env
    assert parser.parse_args(["model", "generate"]).func is model_cmd._generate
    assert parser.parse_args(["model", "ros2-control"]).func is model_cmd._ros2_control
    actions = [a for p in (parser._subparsers._group_actions[0].choices[c] for c in ("bench", "analyze"))
               for a in p._actions if isinstance(a, OptionalActions)]
    assert len(actions) == 2


def test_the_runtime_modules_have_no_python_m_entry_points():
    """Unit: the mains moved to the command line; none is left in the modules they came from."""
    for rel in ("kangaroo_wbc/robots/kangaroo/ros2_control.py", "kangaroo_wbc_tools/analysis/ankle_window.py",
                "kangaroo_wbc_tools/bench/peer_env.py", "kangaroo_wbc_tools/bench/qp_solvers.py"):
        text = (REPO / rel).read_text()
        assert "__main__" not in text and "argparse" not in text, rel
    assert not (REPO / "kangaroo_wbc" / "robots" / "kangaroo" / "__main__.py").exists()


def _last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.integration
@pytest.mark.slow
def test_model_generate_writes_the_committed_model_files(tmp_path, workdir):
    """``model generate DIR`` writes the committed ``urdf/`` files byte for byte (the drift test of
    test/robots/test_kangaroo_files.py, through the command line)."""
    proc = run_cli("model", "generate", str(tmp_path / "urdf"), "--json", cwd=workdir, timeout=180)
    assert proc.returncode == 0, proc.stderr
    files = [Path(p) for p in _last_json(proc.stdout)["files"]]
    assert {p.name for p in files} == {"kangaroo.urdf", "kangaroo_closures.yaml", "kangaroo.sdf",
                                       "kangaroo_serial.urdf", "kangaroo.xml"}
    for path in files:
        assert path.parent == tmp_path / "urdf"
        assert path.read_bytes() == (REPO / "urdf" / path.name).read_bytes(), path.name
    assert not any(workdir.iterdir())


@pytest.mark.integration
@pytest.mark.slow
def test_model_ros2_control_writes_the_committed_files_and_a_urdf_for_another_plugin(tmp_path, workdir):
    """``model ros2-control ROOT`` writes the committed config/ and urdf/ files byte for byte;
    ``--hardware-plugin P --out FILE`` writes one URDF with plugin P and nothing else."""
    proc = run_cli("model", "ros2-control", str(tmp_path / "root"), "--json", cwd=workdir, timeout=180)
    assert proc.returncode == 0, proc.stderr
    files = [Path(p) for p in _last_json(proc.stdout)["files"]]
    assert len(files) == 7
    for path in files:
        rel = path.relative_to(tmp_path / "root")
        assert path.read_bytes() == (REPO / rel).read_bytes(), rel
    out = tmp_path / "robot" / "kangaroo_robot.urdf"
    proc = run_cli("model", "ros2-control", "--hardware-plugin", "my_robot/System", "--joint-space", "serial",
                   "--out", str(out), cwd=workdir, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == str(out)
    text = out.read_text()
    assert "<plugin>my_robot/System</plugin>" in text and "GazeboSimSystem" not in text
    assert sorted(p.name for p in out.parent.iterdir()) == ["kangaroo_robot.urdf"]


@pytest.mark.integration
def test_ankle_window_prints_the_committed_stage_scan(workdir):
    """``analyze ankle-window --json``: the committed stage scanned over Table II's window, and a
    narrower window asked for is the one scanned."""
    from kangaroo_wbc_tools.analysis.ankle_window import TABLE_II_PITCH_DEG

    proc = run_cli("analyze", "ankle-window", "--json", cwd=workdir, timeout=180)
    assert proc.returncode == 0, proc.stderr
    scan = _last_json(proc.stdout)["committed"]
    assert tuple(scan["pitch_window_deg"]) == TABLE_II_PITCH_DEG
    assert scan["points"] > 0 and scan["failures"] == 0 and scan["smallest_singular_value_m"] > 0
    proc = run_cli("analyze", "ankle-window", "--pitch-window", "-10", "10", cwd=workdir, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "committed.pitch_window_deg" in proc.stdout and "(-10.0, 10.0)" in proc.stdout, proc.stdout
    assert not any(workdir.iterdir())


@pytest.mark.integration
def test_peer_env_check_reports_a_missing_environment_without_creating_it(tmp_path, workdir):
    """``bench peer-env --check``: exit 1 and the reason when the folder holds no environment,
    nothing created."""
    venv = tmp_path / "no-venv"
    proc = run_cli("bench", "peer-env", "--check", "--venv", str(venv), "--json", cwd=workdir)
    assert proc.returncode == 1, proc.stderr
    answer = _last_json(proc.stdout)
    assert answer["ok"] is False and answer["python"] is None and answer["state"] == "missing"
    assert str(venv) in answer["reason"]
    assert not venv.exists()


@pytest.mark.integration
@pytest.mark.slow
def test_qp_solvers_compares_every_solver_on_the_recorded_qps(workdir):
    """``bench qp-solvers --duration 0.5 --json``: every solver of the facade on the QPs recorded."""
    from kangaroo_wbc.control.qp_solvers import DEFAULT_SOLVER, SOLVERS

    proc = run_cli("bench", "qp-solvers", "--duration", "0.5", "--json", cwd=workdir, timeout=300)
    assert proc.returncode == 0, proc.stderr
    res = _last_json(proc.stdout)
    assert set(res["solvers"]) <= set(SOLVERS) and DEFAULT_SOLVER in res["solvers"]
    assert res["meta"]["qps"] > 0 and res["meta"]["duration_s"] == 0.5 and res["meta"]["behaviour"] == "sway"
    assert res["default"] == DEFAULT_SOLVER


def test_generated_files_default_to_the_source_tree_and_an_installed_package_must_name_the_folder(monkeypatch):
    """Unit: without DIR / ROOT the files go to the source tree the generators write (their ROOT);
    a package that does not run from a source tree refuses (exit 2, naming the argument)."""
    import kangaroo_wbc
    from kangaroo_wbc.robots.kangaroo.ros2_control import ROOT
    from kangaroo_wbc_tools.cli import common

    args = build_parser().parse_args(["model", "generate"])
    args.validate(args)
    assert args.dir == ROOT / "urdf"
    args = build_parser().parse_args(["model", "ros2-control"])
    args.validate(args)
    assert args.root == ROOT
    monkeypatch.setattr(kangaroo_wbc, "__file__", "/usr/lib/python3/site-packages/kangaroo_wbc/__init__.py")
    for action, name in ((["model", "generate"], "DIR"), (["model", "ros2-control"], "ROOT")):
        args = build_parser().parse_args(action)
        with pytest.raises(common.UsageError, match=f"argument {name}: the package does not run from its source"):
            args.validate(args)
