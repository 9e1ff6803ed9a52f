"""MuJoCo closed-chain simulator and sensor models (no ROS imports).

* :func:`export_mjcf` turns a URDF spanning tree + closure file into MJCF;
* :class:`ClosedChainSim` steps it in lockstep and reports hardware-like sensors and ground truth;
* :class:`BaselinePd` is an actuator-space PD with gravity compensation for tests and demos;
* :mod:`kangaroo_wbc.robots.kangaroo.sim` holds the Kangaroo presets (``make_kangaroo_sim``).

See ``docs/sim.md``.
"""

from kangaroo_wbc.sim.baseline_pd import BaselinePd, hold_position, model_gravity_compensation
from kangaroo_wbc.sim.mjcf_export import classify_closure, export_mjcf, parse_urdf
from kangaroo_wbc.sim.sensors import (
    ImuReading,
    SensorConfig,
    SensorReadings,
    SensorSuite,
)
from kangaroo_wbc.sim.simulator import (
    ClosedChainSim,
    CommandReport,
    ContactWrench,
    GroundTruth,
    clamp_forces,
)

__all__ = [
    "BaselinePd", "hold_position", "model_gravity_compensation",
    "classify_closure", "export_mjcf", "parse_urdf",
    "ImuReading", "SensorConfig", "SensorReadings", "SensorSuite",
    "ClosedChainSim", "CommandReport", "ContactWrench", "GroundTruth", "clamp_forces",
]
