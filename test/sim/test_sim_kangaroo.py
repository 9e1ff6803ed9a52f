"""Kangaroo presets: sole boxes from corner frames (unit) and the robot standing (integration).

The integration tests skip until ``urdf/kangaroo.urdf`` and ``urdf/kangaroo_closures.yaml`` exist.
"""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.errors import ConfigError
from kangaroo_wbc.robots.kangaroo.files import kangaroo_files
from kangaroo_wbc.robots.kangaroo.sim import (
    KANGAROO_SOLES,
    export_kangaroo_mjcf,
    make_kangaroo_sim,
    sole_boxes_from_corners,
)
from kangaroo_wbc.sim.baseline_pd import BaselinePd
from test.sim.conftest import paths

CLOSURE_TOL_M = 1e-4  # [m]
WRENCH_SUM_RTOL = 0.02  # both soles together carry m*g within 2 % after 0.5 s of standing
#: stiff enough for the inverted pendulum on the ankles (k_ankle > m g h), stable at 1 kHz with the
#: reflected rotor inertia of the preset
KP, KD = 2e5, 300.0


def test_sole_box_from_corner_frames():
    boxes = sole_boxes_from_corners(paths("rrpr")[0], soles=("sole",))
    np.testing.assert_allclose(boxes["sole"], (0.3, 0.2, 0.0, 0.0), atol=1e-12)
    with pytest.raises(ConfigError):
        sole_boxes_from_corners(paths("rrpr")[0], soles=("left_sole",))


def _files():
    try:
        return kangaroo_files()
    except ConfigError:
        pytest.skip("urdf/kangaroo.urdf not generated yet")


def test_kangaroo_export_is_deterministic_and_complete():
    urdf, closures = _files()
    a = export_kangaroo_mjcf(urdf, closures, floating_base=True)
    assert a == export_kangaroo_mjcf(urdf, closures, floating_base=True)
    import mujoco

    m = mujoco.MjModel.from_xml_string(a)
    assert m.nu == 12
    for s in KANGAROO_SOLES:
        assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"{s}__box") >= 0


def test_kangaroo_stands_on_its_soles():
    _files()
    sim = make_kangaroo_sim(floating_base=True, seed=0)
    assert sim.last_closure_solve.converged
    pd = BaselinePd(KP, KD, sim.n_actuators, force_limits=sim.force_limits)
    theta0 = sim.actuator_positions()
    worst = 0.0
    for _ in range(500):
        sim.set_command(pd.compute(sim.actuator_positions(), sim.actuator_velocities(), theta0))
        sim.step()
        worst = max(worst, sim.closure_violation()[0])
    gt = sim.ground_truth()
    weight = sim.total_mass_kg * 9.81
    fz = sum(c.force_in_sole[2] for c in gt.contacts.values())
    assert fz == pytest.approx(weight, rel=WRENCH_SUM_RTOL)
    assert all(c.in_contact for c in gt.contacts.values())
    assert worst < CLOSURE_TOL_M
    # the encoders of the relative actuators carry a boot offset, the leg-length ones do not
    r = sim.read_sensors()
    offset = r.actuator_position - sim.actuator_positions()
    for name, off in zip(r.actuator_names, offset):
        if name in sim.sensors.absolute_actuators:
            assert abs(off) < 1e-4
