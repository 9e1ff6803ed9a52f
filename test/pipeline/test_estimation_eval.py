"""``evaluate estimation``'s variants (integration test: a short closed-loop run in the simulator):
the variants run beside the loop on its samples, the loop's own estimator among them agrees with
it, and the table carries every variant."""

from __future__ import annotations

import pytest

from kangaroo_wbc_tools.pipeline.estimation_eval import (
    DEFAULT_VARIANT,
    VARIANTS,
    evaluate_estimation,
    table_markdown,
)

pytestmark = pytest.mark.integration

#: The shadow of the loop's estimator sees the same samples, one tick later released at most.
LOOP_AGREEMENT = 1e-3  # relative, on the mean vertical force


@pytest.fixture(scope="module")
def result() -> dict:
    """A 1.5 s run with realistic actuators (integration data)."""
    return evaluate_estimation(duration_s=1.5, actuators=("realistic",))


def test_every_variant_is_in_the_table(result) -> None:
    rows = result["table"]
    assert [r["estimator"] for r in rows] == list(VARIANTS)
    assert [r["estimator"] for r in rows if r["in_the_loop"]] == [DEFAULT_VARIANT]
    assert all(r["fz_sum_over_mg"] is not None and r["zmp_rmse_m"] is not None for r in rows)
    assert len(table_markdown(rows).splitlines()) == 2 + len(VARIANTS)


def test_the_loops_estimator_agrees_with_its_shadow(result) -> None:
    loop = next(r for r in result["table"] if r["in_the_loop"])
    assert loop["fz_sum_over_mg"] == pytest.approx(result["fz_sum_over_mg"], rel=LOOP_AGREEMENT)
    assert result["fz_sum_over_mg"] == pytest.approx(1.0, abs=0.03)


def test_paper_figures_on_the_same_run(result) -> None:
    paper = next(r for r in result["table"] if r["estimator"] == "paper")
    assert result["paper_zmp_rmse_m"] == paper["zmp_rmse_m"]
    assert result["paper_fz_sum_over_mg"] == paper["fz_sum_over_mg"]
    # the base rows fix the total: the paper's actuated rows alone do worse on the ZMP
    assert result["zmp_rmse_m"] < result["paper_zmp_rmse_m"]
