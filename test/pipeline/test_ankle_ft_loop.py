"""Integration test: the simulator's ankle F/T sensors against the wrench estimator's sole wrenches
in the one-process loop (no ROS), standing and swaying.

Measured (seed 3, the comparison from 0.5 s after the release; the measured wrench through the
estimate's own 5 Hz Butterworth filter): standing (2.5 s) the two sensors' F_z sum to 336.1–337.0 N
against the weight minus the feet, 336.56 N; per sole the force difference is at most 7.0 N (95th
percentile 5.0 N, of ~176 N per sole), the CoP difference at most 6.9 mm (95th percentile 4.9 mm).
Swaying (6 s): at most 12.4 N (95th percentile 8.6 N) and 21 mm (9.5 mm). The tolerances are about
twice the worst of these: the estimator's quasi-static model (eq. (43)-(47)) against MuJoCo's
contact solver.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.components.ankle_ft import AnkleFtSensor
from kangaroo_wbc.components.samples import Level
from kangaroo_wbc.sim.ankle_ft import SimulatedAnkleFt
from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SENSORS = [AnkleFtSensor("leg_left_ft_sensor_broadcaster", "left_foot_link", "left_sole"),
           AnkleFtSensor("leg_right_ft_sensor_broadcaster", "right_foot_link", "right_sole")]
WEIGHT_TOL_N = 2.0
#: behaviour: (duration [s], force tolerance [N], CoP tolerance [m])
CASES = {"stand": (2.5, 15.0, 0.015), "sway": (6.0, 25.0, 0.04)}


@pytest.mark.parametrize("behaviour", list(CASES))
def test_sensors_agree_with_the_estimate(behaviour):
    duration, force_tol, cop_tol = CASES[behaviour]
    run = ClosedLoopRun(LoopConfig(behaviour=behaviour, duration_s=duration, seed=3))
    ft = SimulatedAnkleFt(run.sim, {s.frame_id: s.sole for s in SENSORS})
    cmp = run.wrench.attach_ankle_ft(SENSORS)
    sums, force_diff, cop_diff = [], [], []

    def on_tick(r: ClosedLoopRun) -> None:
        if r.release_time_s is None or r.sim.time < r.release_time_s + 0.5:
            return
        for res in cmp.results.values():
            force_diff.append(res["force_difference_n"])
            cop_diff.append(res["cop_difference_m"])
        reading = ft.read()
        sums.append(sum(reading[s.frame_id][2] for s in SENSORS))
        for s in SENSORS:
            cmp.on_wrench(s.broadcaster, s.frame_id, reading[s.frame_id][:3], reading[s.frame_id][3:], r.sim.time)

    summary = run.run(on_tick=on_tick)
    assert summary["fell"] is False and len(sums) > 100
    feet = sum(ft.mass_below_kg(s.frame_id) for s in SENSORS)
    assert feet == pytest.approx(sum(cmp.mass_below_kg(s.broadcaster) for s in SENSORS), rel=1e-6)  # both models
    if behaviour == "stand":  # static: the weight minus the feet below the sensors
        expected = (run.sim.total_mass_kg - feet) * 9.81
        assert np.max(np.abs(np.asarray(sums) - expected)) < WEIGHT_TOL_N
    assert np.nanmax(force_diff) < force_tol and np.nanmax(cop_diff) < cop_tol, (np.nanmax(force_diff),
                                                                                  np.nanmax(cop_diff))
    status = run.wrench.statuses()[-1]
    assert status.name == "ankle_ft" and status.level == Level.OK, status
