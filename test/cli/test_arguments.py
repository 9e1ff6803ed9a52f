"""Command-line arguments are checked when parsed: one line on stderr naming the option, exit 2,
nothing run and nothing written (unit tests: the parser in-process; integration tests: the CLI
as a subprocess)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pytest

from kangaroo_wbc_tools.cli import build_parser, common, main
from test.cli.conftest import REJECT_WITHIN_S, run_cli, run_cli_cpu

# (arguments, text the one stderr line must hold). "{file}" is a file, "{full}" a non-empty
# folder of another program, both made by the test.
REJECTED = [
    (["demo", "--duration", "0"], "--duration"),
    (["demo", "--duration", "-1"], "--duration"),
    (["demo", "--duration", "nan"], "--duration"),
    (["demo", "--duration", "inf"], "--duration"),
    (["demo", "--duration", "ten"], "--duration"),
    (["demo", "--seed", "-5"], "--seed"),
    (["demo", "--seed", "4294967296"], "--seed"),
    (["demo", "--bag-decimation", "0"], "--bag-decimation"),
    (["demo", "--no-bag", "--bag-decimation", "2"], "--bag-decimation"),
    (["demo", "--drop-ratio", "0.1"], "--drop-ratio"),
    (["demo", "--sim-mode", "realtime"], "--sim-mode"),
    (["demo", "--startup-timeout", "30"], "--startup-timeout"),
    (["demo", "--processes", "separate", "--duration", "-1"], "--duration"),
    (["demo", "--processes", "separate", "--drop-ratio", "1"], "--drop-ratio"),
    (["demo", "--processes", "separate", "--startup-timeout", "0"], "--startup-timeout"),
    (["demo", "--processes", "separate", "--pipelined"], "--pipelined"),
    (["demo", "--processes", "separate", "--bag-decimation", "2"], "--bag-decimation"),
    (["demo", "--processes", "composed", "--behaviour", "push"], "--behaviour push"),
    (["demo", "--behaviour", "weight_shift"], "single_support"),
    (["demo", "--behaviour", "push_recovery"], "'push'"),
    (["demo", "--behaviour", "run"], "--behaviour"),
    (["demo", "--behaviour", "walk", "--cmd-vel", "0.3,0"], "--cmd-vel"),
    (["demo", "--behaviour", "walk", "--cmd-vel", "nan,0,0"], "--cmd-vel"),
    (["demo", "--behaviour", "stand", "--cmd-vel", "0.1,0,0"], "--cmd-vel"),
    (["demo", "--behaviour", "walk", "--push", "40N"], "--push"),
    (["demo", "--fault", "lock:left_ankle@3"], "left_ankle_inner_actuator"),
    (["demo", "--processes", "separate", "--payload", "6kg@torsoo@4"], "unknown link 'torsoo'"),
    (["demo", "--behaviour", "walk", "--push", "5000N@1s"], "--push"),
    (["demo", "--processes", "separate", "--behaviour", "walk", "--push", "40N@1s"], "--push"),
    (["demo", "--out", "{file}"], "--out"),
    (["demo", "--out", "{file}/report"], "--out"),
    (["demo", "--out", "{full}"], "--out"),
    (["demo", "--out", "{full}", "--force"], "--force"),
    (["evaluate", "estimation", "--duration", "-3"], "--duration"),
    (["evaluate", "estimation", "--seed", "x"], "--seed"),
    (["soak", "--minutes", "-1"], "--minutes"),
    (["soak", "--minutes", "nan"], "--minutes"),
    (["soak", "--behaviour", "push_recovery"], "--behaviour"),
    (["soak", "--behaviour", "weight_shift"], "--behaviour"),
    (["soak", "--sim-mode", "lockstep"], "--sim-mode"),
    (["soak", "--processes", "separate", "--behaviour", "push"], "--behaviour push"),
    (["sim", "--duration", "-1"], "--duration"),
    (["sim", "--kp", "-1"], "--kp"),
    (["sim", "--ff-period-ms", "0"], "--ff-period-ms"),
    (["sim", "--plot", "{file}/sim.png"], "--plot"),
    (["sim", "--plot", "{dir}"], "--plot"),
    (["analyze", "--levels", "0"], "--levels"),
    (["analyze", "--out", "{full}"], "--out"),
    (["bench", "--iterations", "0"], "--iterations"),
    (["bench", "--peer-iterations", "-1"], "--peer-iterations"),
    (["model", "check", "{urdf}", "--seed", "-1"], "--seed"),
    (["demo", "--no-such-option"], "--no-such-option"),
]


def _fill(args: list[str], tmp: Path) -> list[str]:
    file = tmp / "a_file.txt"
    file.write_text("not a folder\n")
    full = tmp / "someone_elses"
    full.mkdir(exist_ok=True)
    (full / "notes.txt").write_text("keep me\n")
    urdf = Path(__file__).resolve().parents[2] / "urdf" / "kangaroo.urdf"
    return [a.format(file=file, full=full, dir=tmp, urdf=urdf) for a in args]


def _snapshot(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime for p in folder.rglob("*")}


@pytest.mark.parametrize(("args", "names"), REJECTED, ids=[" ".join(a) for a, _ in REJECTED])
def test_rejected_argument_is_one_line_exit_2_and_writes_nothing(args, names, tmp_path, workdir):
    """Integration: the CLI as a subprocess, in an empty working folder."""
    args = _fill(args, tmp_path)
    before = _snapshot(tmp_path)
    proc, cpu_s = run_cli_cpu(*args, cwd=workdir)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert cpu_s < REJECT_WITHIN_S, f"{cpu_s:.1f} s of CPU: something ran before the check"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and lines[0].startswith("kangaroo-wbc")
    assert names in lines[0], lines[0]
    assert proc.stdout == ""
    assert _snapshot(tmp_path) == before  # nothing created, changed or removed (reports/ neither)


@pytest.mark.parametrize("args", [["demo", "--duration", "-1", "--json"],
                                  ["demo", "--processes", "separate", "--duration", "-1", "--json"],
                                  ["soak", "--minutes", "0", "--json"],
                                  ["sim", "--duration", "nan", "--json"]])
def test_rejected_argument_with_json_ends_stdout_with_an_error_object(args, workdir):
    """Integration: with ``--json`` the last stdout line is ``{"ok": false, "error": ...}``."""
    proc = run_cli(*args, cwd=workdir, timeout=30.0)
    assert proc.returncode == 2
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["ok"] is False and result["error"] == proc.stderr.strip()
    assert not any(workdir.iterdir())


# ----------------------------------------------------------------------- argument types (unit)
@pytest.mark.parametrize(("parse", "good", "bad"), [
    (common.positive_float, {"1e-3": 1e-3, "10": 10.0}, ["0", "-1", "nan", "inf", "-inf", "x", ""]),
    (common.non_negative_float, {"0": 0.0, "2.5": 2.5}, ["-1e-9", "nan", "inf"]),
    (common.fraction, {"0": 0.0, "0.99": 0.99}, ["1", "-0.1", "nan"]),
    (common.positive_int, {"1": 1, "40": 40}, ["0", "-3", "1.5", "x"]),
    (common.seed, {"0": 0, str(common.SEED_MAX): common.SEED_MAX}, ["-1", str(common.SEED_MAX + 1)]),
    (common.velocity_command, {"0.3,0,0": (0.3, 0.0, 0.0), "-0.1,0.2,-0.5": (-0.1, 0.2, -0.5)},
     ["0.3", "0.3,0", "0.3,0,0,0", "a,b,c", "inf,0,0", ""]),
    (common.push_spec, {"40N@5s": (40.0, 5.0), "-40@5.5": (-40.0, 5.5), " 12.5 N @ 0 s ": (12.5, 0.0)},
     ["40N", "@5s", "40N@-1s", "1001N@1s", "40N@x"]),
    (common.fault_spec, {"lock:left_ankle_inner_actuator@3": ("locked", "left_ankle_inner_actuator", 3.0),
                         "limp:right_hip_yaw_actuator@0.5s": ("limp", "right_hip_yaw_actuator", 0.5)},
     ["lock:left_ankle_inner_actuator", "seize:x@1", "lock:@1", "limp:a@-1", "lock:a b@1"]),
    (common.payload_spec, {"6kg@torso@4": (6.0, "torso", 4.0), "-2.5@base_link@0.5s": (-2.5, "base_link", 0.5)},
     ["6kg@torso", "0kg@torso@1", "101kg@torso@1", "6kg@@1", "x@torso@1", "6kg@torso@-1"]),
])
def test_argument_types_accept_their_range_only(parse, good, bad):
    """Unit: every shared type returns the value in range and raises ArgumentTypeError outside."""
    for text, value in good.items():
        assert parse(text) == value
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)


def test_output_paths_are_checked_without_creating_anything(tmp_path):
    """Unit: a folder may be new (parents too), never a file or under one; a file name never a folder."""
    a_file = tmp_path / "f"
    a_file.write_text("")
    assert common.output_folder(str(tmp_path / "new" / "deeper")) == tmp_path / "new" / "deeper"
    assert common.output_file(str(tmp_path / "new" / "plot.png")) == tmp_path / "new" / "plot.png"
    for bad in (a_file, a_file / "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            common.output_folder(str(bad))
    for bad in (tmp_path, a_file / "x.png"):
        with pytest.raises(argparse.ArgumentTypeError):
            common.output_file(str(bad))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


# ----------------------------------------------------------------------- vocabulary and help (unit)
def test_one_behaviour_vocabulary_maps_onto_the_controllers_behaviours():
    """Unit: demo and soak take the same names, each naming a controller behaviour; the one-process
    loop knows every name as the CLI maps it."""
    from kangaroo_wbc.control.behaviours import BEHAVIOURS as CONTROLLER
    from kangaroo_wbc_tools.pipeline.closed_loop import BEHAVIOUR_ALIASES

    assert set(common.BEHAVIOURS.values()) == set(CONTROLLER)
    for name, controller_name in common.BEHAVIOURS.items():
        assert BEHAVIOUR_ALIASES.get(name, name) == controller_name
    parser = build_parser()
    for command in (["demo"], ["soak"]):
        for name in common.BEHAVIOURS:
            assert parser.parse_args([*command, "--behaviour", name]).behaviour == name


def _subparsers(parser: argparse.ArgumentParser, path=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _subparsers(sub, (*path, name))


def test_every_option_has_help_text():
    """Unit: no option of any subcommand without a help text."""
    missing = []
    for path, sub in _subparsers(build_parser()):
        for action in sub._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{' '.join(path)} {action.option_strings[0]}")
    assert not missing, missing


def test_every_numeric_option_is_typed_and_ranged():
    """Unit: no option takes a bare ``float`` or ``int`` (which accept nan, inf and negatives), nor
    a type without an upper bound: every numeric option's type has finite ``bounds``."""
    unbounded_types = (float, int, common.positive_float, common.non_negative_float, common.positive_int)
    bare, unbounded = [], []
    for path, sub in _subparsers(build_parser()):
        for a in sub._actions:
            if not a.option_strings or a.type is None:
                continue
            name = f"{' '.join(path)} {a.option_strings[0]}"
            if a.type in unbounded_types:
                bare.append(name)
            bounds = getattr(a.type, "bounds", None)
            if bounds is not None and not all(math.isfinite(b) for b in bounds):
                unbounded.append(name)
    assert not bare and not unbounded, (bare, unbounded)
    numeric = [f"{' '.join(p)} {a.option_strings[0]}" for p, sub in _subparsers(build_parser())
               for a in sub._actions if getattr(a.type, "bounds", None)]
    assert len(numeric) >= 15, numeric  # durations, minutes, timeouts, counts, gains, seeds


def test_one_tick_is_the_loops_control_period():
    """Unit: the shortest run the CLI takes is one tick of the simulated robot."""
    from kangaroo_wbc.components.simulated_robot import SimulatedRobotConfig

    assert common.TICK_S == pytest.approx(1.0 / SimulatedRobotConfig().rate_hz)


# The cases of issue #38 and their kin, read in-process (cheap): (arguments, text the line must hold).
# "{file}" is a file, "{dir}" a folder, "{long}" a name longer than NAME_MAX, "{deep}" a path longer
# than PATH_MAX, all made by the test.
REJECTED_IN_PROCESS = [
    (["demo", "--duration", "1e-300"], "--duration"),  # fewer than one tick
    (["demo", "--duration", "0.0009"], "--duration"),
    (["demo", "--duration", "1e9"], "--duration"),
    (["evaluate", "estimation", "--duration", "1e-9"], "--duration"),
    (["soak", "--minutes", "1e-9"], "--minutes"),
    (["soak", "--minutes", "1e9"], "--minutes"),  # once: 437 TiB asked of the allocator
    (["soak", "--startup-timeout", "1e9", "--processes", "separate"], "--startup-timeout"),
    (["demo", "--processes", "separate", "--startup-timeout", "1e9"], "--startup-timeout"),
    (["demo", "--bag-decimation", "10000000"], "--bag-decimation"),
    (["bench", "--iterations", "1e20"], "--iterations"),
    (["bench", "--iterations", "100000000000000000000"], "--iterations"),
    (["bench", "--peer-iterations", "100000000"], "--peer-iterations"),
    (["analyze", "--levels", "1e20"], "--levels"),
    (["analyze", "--levels", "100"], "--levels"),
    (["sim", "--duration", "1e-9"], "--duration"),
    (["sim", "--kp", "1e300"], "--kp"),
    (["sim", "--kd", "1e300"], "--kd"),
    (["sim", "--ff-period-ms", "1e-6"], "--ff-period-ms"),
    (["demo", "--out", "{long}"], "--out"),
    (["demo", "--out", "{deep}"], "--out"),
    (["analyze", "--out", "{long}"], "--out"),
    (["sim", "--plot", "{long}.png"], "--plot"),
    (["evaluate", "estimation", "--plot", "{deep}.png"], "--plot"),
    (["bench", "--kangaroo-dir", "/nonexistent"], "--kangaroo-dir"),
    (["bench", "--kangaroo-dir", "{dir}"], "kangaroo.urdf"),  # a folder without the model
    (["bench", "--fixtures", "{file}"], "--fixtures"),
    (["bench", "--fixtures", "/nonexistent"], "--fixtures"),
    (["bench", "--peer-python", "/nonexistent"], "--peer-python"),
    (["bench", "--peer-python", "{file}"], "not an executable"),
    (["analyze", "--urdf-dir", "/nonexistent"], "--urdf-dir"),
    (["demo", "--fault", "lock:left_ankle_inner_actuator@1", "--fault", "limp:left_ankle_inner_actuator@2"],
     "given twice"),
    (["demo", "--payload=-100kg@left_sole@0.5"], "leaves it without mass"),
    (["demo", "--payload", "-3kg@torso@1", "--payload", "-0.9kg@left_sole@2"], "left_sole"),
    (["demo", "--behavior", "walk"], "did you mean --behaviour"),
    (["soak", "--minuts", "1"], "did you mean --minutes"),
    (["soak", "--cmd-vel", "0.1,0,0"], "--cmd-vel"),  # soak takes none
    (["model", "info", "/dev/null"], "character device"),
    (["model", "info", "{dir}"], "is a folder"),
    (["model", "info", "{file}"], "not well-formed XML"),
    (["model", "info", "{xml}"], "the root element is <foo>"),
    (["model", "info", "{empty}"], "not well-formed XML"),
    (["model", "info", "{urdf}", "--closures", "/nonexistent.yaml"], "--closures"),
    (["model", "check", "{urdf}", "--reference", "{dir}"], "--reference"),
]


@pytest.mark.parametrize(("args", "text"), REJECTED_IN_PROCESS, ids=[" ".join(a) for a, _ in REJECTED_IN_PROCESS])
def test_absurd_values_and_bad_paths_are_refused_when_parsed(args, text, tmp_path, monkeypatch, capsys):
    """Unit: ``main`` in-process: exit 2, one stderr line naming the option or the fault, nothing
    written in the working folder."""
    (tmp_path / "a_file.txt").write_text("not a folder, not XML\n")
    (tmp_path / "foo.xml").write_text("<foo/>\n")
    (tmp_path / "empty.urdf").write_text("")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    urdf = Path(__file__).resolve().parents[2] / "urdf" / "kangaroo.urdf"
    fill = {"file": tmp_path / "a_file.txt", "dir": tmp_path, "xml": tmp_path / "foo.xml",
            "empty": tmp_path / "empty.urdf", "urdf": urdf, "long": "x" * 300,
            "deep": "/".join(["d" * 200] * 25)}
    assert main([a.format(**fill) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("kangaroo-wbc") and text in err, err
    assert not any(cwd.iterdir())


# Documented negative values: taken as values, not options (argparse took only plain numbers).
NEGATIVE_VALUES = [
    (["demo", "--behaviour", "walk", "--cmd-vel", "-0.1,0,0"], "cmd_vel", (-0.1, 0.0, 0.0)),
    (["demo", "--behaviour", "walk", "--cmd-vel", "-.1,-0.05,-0.2"], "cmd_vel", (-0.1, -0.05, -0.2)),
    (["demo", "--push", "-40N@1s"], "push", (-40.0, 1.0)),
    (["demo", "--payload", "-2kg@torso@1"], "payload", [(-2.0, "torso", 1.0)]),
    (["sim", "--duration", "0.5"], "duration", 0.5),
]


@pytest.mark.parametrize(("args", "dest", "value"), NEGATIVE_VALUES, ids=[" ".join(a) for a, _, _ in NEGATIVE_VALUES])
def test_negative_values_are_values(args, dest, value):
    """Unit: ``--cmd-vel -0.1,0,0``, ``--push -40N@1s``, ``--payload -2kg@torso@1`` parse."""
    assert getattr(build_parser().parse_args(args), dest) == value


def test_version_and_soak_help_without_cmd_vel(capsys):
    """Unit: ``--version`` prints the package's version; ``soak --help`` offers no ``--cmd-vel``
    (soak refuses it)."""
    from kangaroo_wbc import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"kangaroo-wbc {__version__}"
    with pytest.raises(SystemExit):
        main(["soak", "--help"])
    assert "--cmd-vel" not in capsys.readouterr().out


def test_in_process_main_reports_a_rejection_as_exit_2(capsys):
    """Unit: ``main`` returns 2 (no SystemExit) with one stderr line."""
    assert main(["demo", "--duration", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--duration" in err
    assert math.isfinite(common.positive_float("1"))
