"""``kangaroo-wbc sim`` (integration): the CLI run in-process for about one second of the Kangaroo
standing on the floor under the baseline PD, checked for its JSON contract and its physics."""

from __future__ import annotations

import json

import pytest

from kangaroo_wbc.errors import ConfigError

CLOSURE_TOL_M = 1e-4  # [m] loops stay closed while driven
WEIGHT_RTOL = 0.02  # the soles carry m g within 2 % once settled
KEYS = {"fell", "max_closure_violation_m", "rtf", "ground_truth_fz_over_mg", "physics_rtf", "duration_s"}


@pytest.fixture(scope="module")
def kangaroo_files():
    """The generated Kangaroo files (integration data), or skip."""
    from kangaroo_wbc.robots.kangaroo.files import kangaroo_files

    try:
        return kangaroo_files()
    except ConfigError:
        pytest.skip("urdf/kangaroo.urdf not generated yet")


@pytest.mark.integration
def test_sim_cli_stands_with_the_pd(kangaroo_files, capsys, tmp_path) -> None:
    from kangaroo_wbc_tools.cli import main

    plot = tmp_path / "sim.png"
    assert main(["sim", "--duration", "1", "--controller", "pd", "--json", "--plot", str(plot)]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out.strip().splitlines()[-1])
    assert KEYS <= set(report)
    assert report["duration_s"] == pytest.approx(1.0)
    assert report["fell"] is False
    assert report["max_closure_violation_m"] < CLOSURE_TOL_M
    assert report["ground_truth_fz_over_mg"] == pytest.approx(1.0, rel=WEIGHT_RTOL)
    assert report["rtf"] > 0
    assert err == ""  # --json: no progress display (test/cli/test_progress.py covers it)
    assert plot.is_file() and plot.stat().st_size > 0


@pytest.mark.integration
def test_sim_cli_without_controller_falls(kangaroo_files) -> None:
    from kangaroo_wbc_tools.cli.sim_cmd import run_sim

    report, series = run_sim(1.0, controller="none")
    assert report["fell"] is True
    assert report["com_height_min_m"] < report["com_height_initial_m"]
    assert len(series["t"]) == len(series["com_height_m"]) > 0


def test_sim_cli_rejects_bad_arguments() -> None:
    from kangaroo_wbc_tools.cli import main

    assert main(["sim", "--duration", "-1", "--json"]) == 2
