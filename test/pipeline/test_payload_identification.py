"""Integration test: online payload identification in the one-process closed loop (MuJoCo).

The robot stands; 6 kg go on the torso 2 s after the behaviour starts, on the simulated robot only
(``payload_unannounced``) or on the model too. The wrench component weighs the robot while it
stands still (``kangaroo_wbc/estimation/payload_identification.py``); the truth is the simulator's.
Ideal actuators: with the simulated ball-screw drives the screws' friction band at standstill hides
part of a load put on at rest (docs/estimation.md, "Payload identification").
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.components.simulated_robot import SimulatedRobotConfig
from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

PAYLOAD = (6.0, "torso", 2.0)  # [kg], link, [s] after the behaviour starts
MASS_TOL_KG = 0.5  # unannounced: the identified mass against the payload's
COM_TOL_M = 0.02  # its horizontal CoM against the payload's (the base link's CoM, simulator's frame)
ANNOUNCED_TOL_KG = 0.3  # the model told: nothing unmodelled


def run_stand(unannounced: bool, duration_s: float = 8.0) -> tuple[ClosedLoopRun, dict]:
    """The run and its summary; the masses the simulator and the model gained are in the summary
    (``sim_gain_kg``, ``model_gain_kg``)."""
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=duration_s, payloads=(PAYLOAD,),
                                   payload_unannounced=unannounced, robot=SimulatedRobotConfig(ideal_actuators=True)))
    sim0, model0 = run.sim.total_mass_kg, run.clm.mass_kg
    s = run.run()
    assert s["release_time_s"] is not None, "the robot never left the crane (calibration did not complete)"
    return run, {**s, "sim_gain_kg": run.sim.total_mass_kg - sim0, "model_gain_kg": run.clm.mass_kg - model0}


def confident_masses(run: ClosedLoopRun) -> tuple[np.ndarray, np.ndarray]:
    """Times [s] and masses [kg] of the ticks with a confident estimate."""
    t, m = run.log.array("t"), run.log.array("payload_mass")
    ok = np.isfinite(m)
    return t[ok], m[ok]


def test_an_unannounced_torso_payload_is_identified():
    run, s = run_stand(unannounced=True)
    assert not s["fell"] and s["qp_failures"] == 0
    assert s["sim_gain_kg"] == pytest.approx(PAYLOAD[0]) and s["model_gain_kg"] == 0.0  # the model was not told
    assert s["payload_unmodelled_kg"] == PAYLOAD[0]
    assert abs(s["payload_mass_error_kg"]) < MASS_TOL_KG, s
    assert s["payload_com_xy_error_m"] < COM_TOL_M, s
    assert s["payload_identification_delay_s"] is not None
    # every confident estimate is the robot as it was then: none before the payload, the payload after
    t, m = confident_masses(run)
    t_on = s["payloads"][0]["t_s"]
    assert np.all(np.abs(m[t < t_on]) < ANNOUNCED_TOL_KG)
    late = t > t_on + s["payload_identification_delay_s"]
    assert late.any() and np.all(np.abs(m[late] - PAYLOAD[0]) < MASS_TOL_KG)


def test_an_announced_payload_reads_zero():
    run, s = run_stand(unannounced=False)
    assert not s["fell"]
    assert s["model_gain_kg"] == pytest.approx(PAYLOAD[0])
    assert s["payload_unmodelled_kg"] == 0.0
    assert s["payload_identified_kg"] is not None and abs(s["payload_identified_kg"]) < ANNOUNCED_TOL_KG, s
    assert s["payload_identified_com_xy_m"] is None  # no CoM of nothing
    t, m = confident_masses(run)
    assert t.size and np.all(np.abs(m) < ANNOUNCED_TOL_KG)


def test_no_identification_during_a_sway():
    """The sway never stands still: nothing is reported while it runs."""
    run = ClosedLoopRun(LoopConfig(behaviour="sway", duration_s=6.0, payload_identification=True,
                                   robot=SimulatedRobotConfig(ideal_actuators=True)))
    s = run.run()
    assert s["release_time_s"] is not None, "the robot never left the crane (calibration did not complete)"
    assert not s["fell"]
    assert s["payload_confident_ratio"] == 0.0
    assert s["payload_identified_kg"] is None
    assert run.wrench.payload.blocks_total < 50  # at most the moments before the sway's ramp
