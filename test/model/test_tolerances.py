"""Scale-aware tolerances: rank decisions relative to the closure Jacobian's singular values, and a
reference that closes only to the file's rounding accepted with a warning (unit tests on
``test/data/rounded_four_bar.urdf``, a four-bar written to five decimals)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from kangaroo_wbc.errors import ModelError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.checks import run_checks
from kangaroo_wbc.model.closed_loop_model import ASSEMBLY_TOL, RANK_RTOL, select_independent_rows
from kangaroo_wbc.model.importers import coordinate_rounding, load_model, number_rounding
from kangaroo_wbc_tools.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
URDF, CLOSURES = DATA / "rounded_four_bar.urdf", DATA / "rounded_four_bar_closures.yaml"


@pytest.mark.parametrize("token, level", [
    ("0.25", 0.0), ("0.135", 0.0), ("-1.5708", 5e-5), ("0.28017", 5e-6), ("0.250000", 5e-7),
    ("1.570796327", 5e-10), ("2.5e-3", 0.0), ("1.23456e-2", 5e-8), ("abc", 0.0), ("", 0.0),
])
def test_number_rounding(token, level):
    assert number_rounding(token) == pytest.approx(level, rel=1e-12)


def test_coordinate_rounding_reads_placements_not_masses():
    root = ET.fromstring('<robot><link><inertial><mass value="1.234567"/></inertial></link>'
                         '<joint><origin xyz="0.12345 0 0" rpy="0 0 1.0471976"/><axis xyz="0 0 1"/></joint></robot>')
    assert coordinate_rounding(root) == pytest.approx(5e-6)
    mjcf = ET.fromstring('<mujoco><worldbody><body euler="0 0 57.29578"/></worldbody></mujoco>')
    assert coordinate_rounding(mjcf) == pytest.approx(5e-6 * np.pi / 180.0)  # MJCF angles in degrees


def test_rounded_model_is_accepted_with_a_warning_and_both_figures():
    clm = ClosedLoopModel.from_files(URDF, CLOSURES)
    info = clm.info()
    assert info["coordinate_rounding"] == pytest.approx(5e-6)
    # the residual: above the machine-precision tolerance, within the file's
    assert ASSEMBLY_TOL < info["reference_closure_residual"] <= info["closure_tolerance"]
    assert any("close to" in w and "rounding" in w for w in info["warnings"])
    # the rank: the out-of-plane direction is above the absolute tolerance of a precise file, below
    # the file's own; the kept ones far above it
    margin = info["rank_margin"]
    assert RANK_RTOL < margin["largest_dropped"] < info["rank_tolerance"] < margin["smallest_kept"]
    assert info["n_constraints"] == 2 and info["n_passive"] == 2
    for seed in (0, 1):
        assert run_checks(clm, seed=seed).ok


def test_the_same_model_at_machine_precision_tolerances_is_refused():
    loaded = load_model(URDF, CLOSURES)
    with pytest.raises(ModelError, match="do not close at the reference pose"):
        ClosedLoopModel(loaded.model, loaded.closure_file, rounding=0.0)


def test_rank_is_decided_on_singular_values():
    """Rows ``[1, 0]``, ``[0, 1e-6]``, ``[1, 1e-6]``: rank 2 at a 1e-7 tolerance, 1 at 1e-5 (the small
    direction is then dropped: one of the two rows that carry the large one is kept)."""
    J = np.array([[1.0, 0.0], [0.0, 1e-6], [1.0, 1e-6]])
    assert len(select_independent_rows(J, 1e-7)) == 2
    kept = select_independent_rows(J, 1e-5)
    assert len(kept) == 1 and kept[0] in (0, 2)
    # scale-free: the same decision for the Jacobian in millimetres
    assert len(select_independent_rows(1e3 * J, 1e-5)) == 1


def test_cli_json_has_the_figures(capsys):
    assert main(["model", "info", str(URDF), "--closures", str(CLOSURES), "--json"]) == 0
    obj = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for key in ("reference_closure_residual", "closure_tolerance", "coordinate_rounding", "rank_tolerance",
                "rank_margin", "warnings"):
        assert key in obj
