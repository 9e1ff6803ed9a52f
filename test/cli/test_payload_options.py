"""``kangaroo-wbc demo --payload-unannounced`` and ``--identify-payload``: refused where they do not
apply (one stderr line, exit 2, nothing written) and handed unchanged to the deployment chosen —
the one-process loop's :class:`~kangaroo_wbc_tools.pipeline.closed_loop.LoopConfig` or the node graph's
:func:`~kangaroo_wbc_tools.graph.processes.run_graph` (unit tests: the parser and ``main`` in-process, the
run replaced by a recorder; integration tests: the CLI as a subprocess)."""

from __future__ import annotations

import json

import pytest

from kangaroo_wbc_tools.cli import main
from test.cli.conftest import assert_rejected_in_one_line

REJECTED = [
    (["demo", "--payload-unannounced"], "--payload-unannounced needs --payload"),
    (["demo", "--processes", "separate", "--payload-unannounced"], "--payload-unannounced needs --payload"),
    (["demo", "--rig", "one_leg", "--identify-payload"], "--identify-payload"),
    (["demo", "--rig", "one_leg", "--processes", "composed", "--payload-unannounced"], "--payload-unannounced"),
]


@pytest.mark.parametrize(("args", "text"), REJECTED, ids=[" ".join(a) for a, _ in REJECTED])
def test_payload_option_rejected_in_one_line_exit_2(args, text, workdir):
    """Integration: the CLI as a subprocess in an empty folder: one stderr line, exit 2, nothing written."""
    assert_rejected_in_one_line(args, text, workdir)


@pytest.fixture
def recorded(monkeypatch):
    """Unit fixture: the one-process loop and the graph runner replaced by recorders of their
    arguments (``recorded["loop"]``: the LoopConfig; ``recorded["graph"]``: run_graph's keywords)."""
    from kangaroo_wbc_tools.graph import processes
    from kangaroo_wbc_tools.pipeline import closed_loop

    seen: dict = {}

    class Loop:
        def __init__(self, config, *args, **kwargs) -> None:
            seen["loop"] = config

        def run(self, *args, **kwargs) -> dict:
            return {"fell": False}

    def graph(**kwargs):
        seen["graph"] = kwargs
        return {"fell": False}

    monkeypatch.setattr(closed_loop, "ClosedLoopRun", Loop)
    monkeypatch.setattr(processes, "run_graph", graph)
    return seen


PAYLOAD = ["--payload", "6kg@torso@2"]
CASES = [  # (options, payload_unannounced, payload_identification)
    (PAYLOAD, False, None),
    ([*PAYLOAD, "--payload-unannounced"], True, None),
    ([*PAYLOAD, "--payload-unannounced", "--identify-payload"], True, True),
    (["--identify-payload"], False, True),
]


@pytest.mark.parametrize(("options", "unannounced", "identify"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_one_process_loop_gets_the_payload_options(options, unannounced, identify, recorded, tmp_path):
    code = main(["demo", *options, "--ideal-actuators", "--out", str(tmp_path / "out"), "--no-report", "--no-bag"])
    assert code == 0
    cfg = recorded["loop"]
    assert (cfg.payload_unannounced, cfg.payload_identification) == (unannounced, identify)
    assert cfg.payloads == (((6.0, "torso", 2.0),) if "--payload" in options else ())
    assert cfg.robot.ideal_actuators


@pytest.mark.parametrize("processes", ["separate", "composed"])
@pytest.mark.parametrize(("options", "unannounced", "identify"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_node_graph_gets_the_payload_options(processes, options, unannounced, identify, recorded, tmp_path, capsys):
    code = main(["demo", "--processes", processes, *options, "--ideal-actuators", "--no-report", "--json",
                 "--out", str(tmp_path / "out")])
    assert code == 0
    kw = recorded["graph"]
    assert kw["processes"] == processes and kw["ideal_actuators"] is True
    assert (kw["payload_unannounced"], kw["payload_identification"]) == (unannounced, identify)
    assert list(kw["payloads"]) == ([(6.0, "torso", 2.0)] if "--payload" in options else [])
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["fell"] is False
    assert not (tmp_path / "out").exists()
