"""The bench's peer environment (kangaroo_wbc_tools.bench.peer_env) with fake interpreters: found,
created on first use, updated, refused, offline; and the peer block of the report built from a
fake peer worker (agreement next to the speed ratio). No venv is created, nothing is downloaded."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc_tools.bench import peer_env, peers, runner
from kangaroo_wbc_tools.bench.workload import reachable_trajectory

DATA = Path(__file__).resolve().parents[1] / "data"

PIN3 = {"python": "3.11.7", "missing": [], "pinocchio": "3.9.0", "contact_cholesky": True, "toolbox_version": "1.2.0"}
PIN4 = {"python": "3.11.7", "missing": [], "pinocchio": "4.1.0", "contact_cholesky": False, "toolbox_version": "1.2.0"}

# A fake interpreter: `-c CODE` prints the probe answer of $FAKE_DIR/probe.json; `-m pip ...` logs
# its arguments to $FAKE_DIR/pip.log and exits with $FAKE_DIR/pip_rc (pip's offline message if not
# 0); `-m venv DIR` makes DIR/bin/python a copy of this script; `-m <worker>` prints answer.json.
FAKE_PYTHON = '''#!{python}
import json, os, shutil, sys
from pathlib import Path
d = Path({fake_dir!r})
args = sys.argv[1:]
if args[:1] == ["-c"]:
    print(d.joinpath("probe.json").read_text())
elif args[:2] == ["-m", "pip"]:
    with open(d / "pip.log", "a") as fh:
        fh.write(" ".join(args[2:]) + "\\n")
    rc = int(d.joinpath("pip_rc").read_text()) if d.joinpath("pip_rc").exists() else 0
    if rc:
        print("ERROR: No matching distribution found for toolbox-parallel-robots==1.2.0", file=sys.stderr)
    sys.exit(rc)
elif args[:2] == ["-m", "venv"]:
    venv = Path(args[2])
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = fake\\n")
    shutil.copy(__file__, venv / "bin" / "python")
elif args[:2] == ["-m", "kangaroo_wbc_tools.bench.peer_worker"]:
    sys.stdin.read()
    print("progress printed by the toolbox")
    print(d.joinpath("answer.json").read_text())
else:
    sys.exit(3)
'''


@pytest.fixture
def fake(tmp_path: Path):
    """A fake base interpreter (tmp/base/python) and the folder that steers it (tmp/fake)."""
    fake_dir = tmp_path / "fake"
    fake_dir.mkdir()
    (fake_dir / "probe.json").write_text(json.dumps(PIN3))
    base = tmp_path / "base" / "python"
    base.parent.mkdir()
    base.write_text(FAKE_PYTHON.format(python=sys.executable, fake_dir=str(fake_dir)))
    base.chmod(base.stat().st_mode | stat.S_IXUSR)
    return base, fake_dir


def _pip_calls(fake_dir: Path) -> list[str]:
    log = fake_dir / "pip.log"
    return log.read_text().splitlines() if log.exists() else []


def test_default_location_is_the_user_cache_or_the_variable(monkeypatch, tmp_path):
    monkeypatch.delenv(peer_env.VENV_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert peer_env.default_venv() == tmp_path / "cache" / "kangaroo_wbc" / "peer-venv"
    monkeypatch.setenv(peer_env.VENV_ENV, str(tmp_path / "elsewhere"))
    assert peer_env.default_venv() == tmp_path / "elsewhere"
    # outside the repository's tree either way by default
    monkeypatch.delenv(peer_env.VENV_ENV)
    assert peer_env.REQUIREMENTS.parent not in peer_env.default_venv().parents


def test_pinned_requirements_name_pinocchio_3_and_the_toolbox():
    pins = dict(ln.split("==") for ln in peer_env.REQUIREMENTS.read_text().splitlines()
                if ln.strip() and not ln.startswith("#"))
    assert pins["pin"].startswith("3.")
    assert "toolbox-parallel-robots" in pins and "casadi" in pins and "scipy" in pins


def test_missing_environment_without_setup_creates_nothing(fake, tmp_path):
    base, fake_dir = fake
    venv = tmp_path / "peer-venv"
    env = peer_env.ensure(venv, setup=False, base=str(base), log=lambda m: pytest.fail(m))
    assert env.python is None and env.state == "missing"
    assert "make peer-env" in env.reason
    assert not venv.exists() and not _pip_calls(fake_dir)


def test_first_use_creates_it_with_a_progress_line_then_finds_it(fake, tmp_path):
    base, fake_dir = fake
    venv = tmp_path / "cache" / "peer-venv"
    lines: list[str] = []
    env = peer_env.ensure(venv, setup=True, base=str(base), log=lines.append)
    assert env.state == "created", env
    assert env.python == str(venv / "bin" / "python")
    assert env.pinocchio == "3.9.0" and env.toolbox_version == "1.2.0" and env.setup_s is not None
    assert any(ln.startswith("peer environment: creating") and "--no-peer-setup" in ln for ln in lines), lines
    calls = _pip_calls(fake_dir)
    assert len(calls) == 1 and f"-r {peer_env.REQUIREMENTS}" in calls[0] and "--only-binary=:all:" in calls[0]
    assert (venv / peer_env.STAMP_NAME).read_text().strip() == peer_env.requirements_hash()
    # the next run finds it: no pip, no line
    again = peer_env.ensure(venv, setup=True, base=str(base), log=lambda m: pytest.fail(m))
    assert again.state == "ready" and again.python == env.python and len(_pip_calls(fake_dir)) == 1


def test_changed_requirements_update_it(fake, tmp_path):
    base, fake_dir = fake
    venv = tmp_path / "peer-venv"
    peer_env.ensure(venv, base=str(base), log=lambda m: None)
    (venv / peer_env.STAMP_NAME).write_text("older\n")
    assert "older" in peer_env.find(venv).reason  # usable, flagged
    env = peer_env.ensure(venv, base=str(base), log=lambda m: None)
    assert env.state == "updated" and env.python and len(_pip_calls(fake_dir)) == 2


def test_offline_setup_fails_with_a_reason_never_an_exception(fake, tmp_path):
    base, fake_dir = fake
    (fake_dir / "pip_rc").write_text("1")
    venv = tmp_path / "peer-venv"
    lines: list[str] = []
    env = peer_env.ensure(venv, base=str(base), log=lines.append)
    assert env.python is None and env.state == "failed"
    assert "offline?" in env.reason and "No matching distribution" in env.reason
    assert not (venv / peer_env.STAMP_NAME).exists()
    assert any("failed" in ln for ln in lines)
    # back online: the half-made venv is completed
    (fake_dir / "pip_rc").write_text("0")
    assert peer_env.ensure(venv, base=str(base), log=lambda m: None).python is not None


def test_an_interpreter_without_pinocchio_3_is_not_used(fake, tmp_path):
    base, fake_dir = fake
    (fake_dir / "probe.json").write_text(json.dumps(PIN4))
    env = peer_env.ensure(tmp_path / "peer-venv", base=str(base), log=lambda m: None)
    assert env.python is None and "pinocchio 4.1.0" in env.reason and "pinocchio 3" in env.reason


def test_a_folder_that_is_not_a_venv_is_left_alone(fake, tmp_path):
    base, _ = fake
    folder = tmp_path / "not-a-venv"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    env = peer_env.ensure(folder, base=str(base), log=lambda m: None)
    assert env.python is None and "not a virtual environment" in env.reason
    assert (folder / "keep.txt").read_text() == "mine" and not (folder / "bin").exists()


def test_bench_uses_the_peer_environment_unless_peer_python_is_given(fake, tmp_path, monkeypatch):
    base, _ = fake
    monkeypatch.setenv(peer_env.VENV_ENV, str(tmp_path / "peer-venv"))
    cfg = runner.BenchConfig(peer_setup=False)
    pythons, entry, missing = runner.peer_interpreters(cfg)
    assert entry["state"] == "missing" and missing and "pinocchio-3 peer environment missing" in missing[0]
    assert all(label != "peer venv (pinocchio 3)" for _, label in pythons)
    peer_env.ensure(tmp_path / "peer-venv", base=str(base), log=lambda m: None)
    pythons, entry, missing = runner.peer_interpreters(cfg)
    assert (str(tmp_path / "peer-venv" / "bin" / "python"), "peer venv (pinocchio 3)") in pythons and not missing
    cfg = runner.BenchConfig(peer_pythons=[str(base)])
    pythons, entry, missing = runner.peer_interpreters(cfg)
    assert (str(base), "--peer-python") in pythons and entry["state"].startswith("not used")


# ------------------------------------------------------------------------ the report's peer block


def _four_bar_input(n: int) -> peers.PeerModelInput:
    clm = ClosedLoopModel.from_files(DATA / "four_bar.urdf", DATA / "four_bar_closures.yaml", floating_base=False)
    traj, states = reachable_trajectory(clm, n)
    return peers.PeerModelInput(name="four_bar", clm=clm, urdf="", closures="", theta_a=traj.theta_a,
                                q0=clm.q_ref.copy(), ours_q=states, ours_fk_median_ms=0.01)


def _answer(inp: peers.PeerModelInput, warmup: int, proximal_offset: float) -> dict:
    """The worker's answer: the proximal solution is ours moved by ``proximal_offset`` along the
    crank; SLSQP's is 1 mm off along the whole tree (open loops)."""
    m = inp.clm.model
    crank = np.zeros(m.nv)
    crank[m.joints[m.getJointId("crank_joint")].idx_v] = proximal_offset
    qs = inp.ours_q[warmup:]
    return {"info": {"pinocchio": "3.9.0", "python": "3.11.7", "toolbox_version": "1.2.0"},
            "models": {"four_bar": {
                "proximal": {"times_s": [1e-4] * len(qs), "freeze_times_s": [1e-4] * len(qs),
                             "q": [pin.integrate(m, q, crank).tolist() for q in qs], "iterations_mean": 3.0},
                "slsqp": {"times_s": [1e-3] * len(qs), "q": [(q + 1e-3).tolist() for q in qs]},
                "casadi": {"unavailable": "pinocchio 3.9.0 was built without casadi bindings"}}}}


@pytest.mark.parametrize("offset, agree", [(0.0, True), (1e-7, False)])
def test_peer_block_reports_agreement_next_to_the_speed_ratio(fake, offset, agree):
    base, fake_dir = fake
    warmup = 1
    inp = _four_bar_input(5)
    (fake_dir / "answer.json").write_text(json.dumps(_answer(inp, warmup, offset)))
    block = peers.compare_with_peer([inp], [(str(base), "peer venv (pinocchio 3)")], warmup, timeout_s=60)
    assert block["runs"][0]["interpreter"] == "peer venv (pinocchio 3)" and "error" not in block["runs"][0]
    proximal = block["fk"]["four_bar"]["proximal (pinocchio 3.9.0)"]
    assert proximal["valid"] and proximal["frames_agree"] is agree
    assert block["fk"]["four_bar"]["casadi (pinocchio 3.9.0)"] == {
        "unavailable": "pinocchio 3.9.0 was built without casadi bindings"}
    a = block["agreement"]["models"]["four_bar"]
    assert a["method"] == "proximal (pinocchio 3.9.0)" and a["compared"]
    assert a["frames_agree"] is agree and (a["frame_placement_max_diff_m"] <= peers.FRAME_AGREEMENT_M) is agree
    assert a["speedup_vs_ours"] == pytest.approx(10.0) and a["n"] == 4
    assert block["frames_agree"] is agree and block["agreement"]["tolerance_m"] == peers.FRAME_AGREEMENT_M
    assert block["fk_speedup"] == pytest.approx(10.0)
    assert block["status"] == "ok"  # an unavailable method is no failure


def test_peer_block_without_the_pinocchio_3_peer_says_why(tmp_path):
    inp = _four_bar_input(3)
    block = peers.compare_with_peer([inp], [], 1, notes=["pinocchio-3 peer environment missing: offline"])
    assert block["status"] == "unavailable: pinocchio-3 peer environment missing: offline"
    assert block["frames_agree"] is None and block["fk_speedup"] is None
    assert block["agreement"]["models"]["four_bar"] == {"compared": False, "reason": "no peer run answered"}
    json.dumps(block)  # the report stays JSON



# ------------------------------------------------------------------------ what the worker imports


def _third_party_imports(paths: list[Path]) -> set[str]:
    """Top-level modules outside the standard library and this package imported by ``paths``."""
    import ast

    out = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                     else [])
            out |= {n.split(".")[0] for n in names}
    return {n for n in out if n not in sys.stdlib_module_names
            and n not in ("kangaroo_wbc", "kangaroo_wbc_tools", "__future__")}


def test_peer_requirements_hold_what_the_worker_imports():
    """Unit test: every distribution behind a third-party import of the peer worker and of
    kangaroo_wbc.model (which it imports) is pinned in requirements-peer.txt (numba was missing:
    every model failed with ModuleNotFoundError in the peer environment)."""
    from importlib import metadata

    tools = Path(peer_env.__file__).resolve().parents[1]
    runtime = tools.parent / "kangaroo_wbc"
    sources = [tools / "bench" / "peer_worker.py", *sorted((runtime / "model").rglob("*.py"))]
    modules = _third_party_imports(sources) - {"toolbox_parallel_robots", "casadi"}  # the peer's own
    assert {"numpy", "pinocchio", "numba"} <= modules
    # pinocchio's wheel (cmeel) installs it where packages_distributions does not look
    owners = {"pinocchio": ["pin"], **metadata.packages_distributions()}
    pinned = {ln.split("==")[0].strip().lower() for ln in peer_env.REQUIREMENTS.read_text().splitlines()
              if "==" in ln and not ln.lstrip().startswith("#")}
    missing = {m: owners.get(m) for m in modules if not {d.lower() for d in owners.get(m, [])} & pinned}
    assert not missing, f"requirements-peer.txt lacks the distribution of {missing}"
    project = {ln.split("==")[0].strip().lower(): ln.split("==")[1].strip()
               for ln in (peer_env.REPO_ROOT / "requirements.txt").read_text().splitlines() if "==" in ln}
    for line in peer_env.REQUIREMENTS.read_text().splitlines():
        if line.startswith(("numba==", "llvmlite==")):  # the project's compiled kernels: its pins
            name, version = line.split("==")
            assert project[name] == version.strip(), line


def test_probe_finds_a_missing_worker_dependency(tmp_path):
    """Integration test (runs the probe's code): an interpreter where numba does not import is
    refused with the module of the worker that needs it, before any bench runs the worker."""
    import subprocess

    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "numba.py").write_text("raise ModuleNotFoundError(\"No module named 'numba'\", name='numba')\n")
    env = {**peer_env._clean_env(), "PYTHONPATH": f"{shadow}:{peer_env.REPO_ROOT}"}
    proc = subprocess.run([sys.executable, "-c", peer_env.PROBE_CODE, *peer_env.WORKER_IMPORTS],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    worker = [m for m in answer["missing"] if "for the peer worker" in m]
    assert worker and all("numba" in m for m in worker), answer["missing"]
    env["PYTHONPATH"] = str(peer_env.REPO_ROOT)  # this venv has numba: nothing of the worker missing
    proc = subprocess.run([sys.executable, "-c", peer_env.PROBE_CODE, *peer_env.WORKER_IMPORTS],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not [m for m in answer["missing"] if "for the peer worker" in m], answer["missing"]


def test_a_peer_that_cannot_load_the_models_is_unavailable(fake):
    """The worker answers but loads no model (ModuleNotFoundError: the peer environment lacks what
    it imports): the status says so, never ``ok`` with ``fk_speedup: null``."""
    base, fake_dir = fake
    inp = _four_bar_input(3)
    answer = {"info": {"pinocchio": "3.9.0", "python": "3.11.7", "toolbox_version": "1.2.0"},
              "models": {"four_bar": {"error": "ModuleNotFoundError: No module named 'numba'"}}}
    (fake_dir / "answer.json").write_text(json.dumps(answer))
    block = peers.compare_with_peer([inp], [(str(base), "peer venv (pinocchio 3)")], 1, timeout_s=60)
    assert block["fk_speedup"] is None
    assert block["status"].startswith("unavailable: ") and "numba" in block["status"], block["status"]


def test_a_model_the_peer_cannot_express_is_no_failure(fake):
    """One model the toolbox cannot express (say, a closure on x and y only) next to one it ran:
    ``ok`` with the headline from the other, the agreement says why the first was not compared."""
    base, fake_dir = fake
    warmup = 1
    inp = _four_bar_input(5)
    other = peers.PeerModelInput(**{**inp.__dict__, "name": "two_dof_closure"})
    answer = _answer(inp, warmup, 0.0)
    answer["models"]["two_dof_closure"] = {"unsupported": "closure 'c' constrains ['x', 'y']"}
    (fake_dir / "answer.json").write_text(json.dumps(answer))
    block = peers.compare_with_peer([other, inp], [(str(base), "peer venv (pinocchio 3)")], warmup, timeout_s=60)
    assert block["status"] == "ok" and block["fk_speedup"] == pytest.approx(10.0)
    assert block["agreement"]["models"]["two_dof_closure"] == {
        "compared": False, "reason": "the peer cannot express it: closure 'c' constrains ['x', 'y']"}
    alone = peers.compare_with_peer([other], [(str(base), "peer venv (pinocchio 3)")], warmup, timeout_s=60)
    assert alone["status"].startswith("unavailable: ") and "cannot express" in alone["status"]
