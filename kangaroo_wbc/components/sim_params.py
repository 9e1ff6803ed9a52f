"""Parameters of the ``sim`` node (``config/sim.yaml``), without ROS.

The node declares them (:mod:`kangaroo_wbc.ros.params`); the fields shared with
:class:`~kangaroo_wbc.components.simulated_robot.SimulatedRobotConfig` take their defaults from it
(:data:`SHARED_FIELDS`), and the ros2_control ones are those every hardware-facing node declares
(:mod:`kangaroo_wbc.components.ros2_control.settings`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kangaroo_wbc.components.parameters import (
    SharedFields,
    parameter,
    rig_leg_parameter,
    rig_parameter,
)
from kangaroo_wbc.components.ros2_control.settings import (
    hardware_map_parameter,
    interface_parameter,
    joint_space_parameter,
    ros2_controllers_parameter,
)
from kangaroo_wbc.components.simulated_robot import (
    SimulatedRobotConfig,
    parse_fault,
    parse_payload,
)
from kangaroo_wbc.errors import InputError

_D = SimulatedRobotConfig()  # the defaults are the component's


def check_faults(texts: list[str]) -> str | None:
    """None if every entry reads ``MODE:ACTUATOR@T`` (:func:`parse_fault`), else the reason."""
    try:
        for text in texts:
            parse_fault(text)
    except InputError as exc:
        return str(exc)
    return None


def check_payloads(texts: list[str]) -> str | None:
    """None if every entry reads ``MASS@LINK@T`` (:func:`parse_payload`), else the reason."""
    try:
        for text in texts:
            parse_payload(text)
    except InputError as exc:
        return str(exc)
    return None


@dataclass
class SimParams:
    """Parameters of the ``sim`` node (``config/sim.yaml``)."""

    rate_hz: float = parameter(_D.rate_hz, "Control rate: one step and one publication per tick [Hz]",
                               bounds=(10.0, 5000.0), read_only=True)
    floating_base: bool = parameter(_D.floating_base, "Free base on the floor, booted on the crane "
                                    "(false: base welded in the air)", read_only=True)
    seed: int = parameter(_D.seed, "Seed of encoder offsets, IMU biases, noise and dropped commands",
                          bounds=(0, 2**31 - 1), read_only=True)
    sensor_noise: bool = parameter(_D.sensor_noise, "Sensor noise and IMU biases on (encoder boot offsets "
                                   "always)", read_only=True)
    ideal_actuators: bool = parameter(_D.ideal_actuators, "Ideal actuators: forces act as commanded, motor "
                                      "torque = eq. (47) inverse (false: ball-screw drives, docs/sim.md)",
                                      read_only=True)
    realtime: bool = parameter(True, "Pace the loop to the wall clock (false: as fast as possible)")
    lockstep: bool = parameter(False, "Once the controller is ready, step once per command answering the "
                               "latest sample (paced to the wall clock before)", read_only=True)
    lockstep_timeout_s: float = parameter(0.05, "Lockstep: step with the last command after this long "
                                          "without an answer [s] (wall clock)", bounds=(0.001, 10.0))
    watchdog_timeout_s: float = parameter(_D.watchdog_timeout_s, "No valid command for longer than this (sim "
                                          "time) → hold PD on the crane, else zero force plus damping [s]",
                                          bounds=(0.001, 10.0))
    watchdog_damping_n_s_per_m: float = parameter(_D.watchdog_damping_n_s_per_m, "Watchdog damping d in "
                                                  "τ = −d·θ̇ [N·s/m]", bounds=(0.0, 2000.0))
    hold_kp_n_per_m: float = parameter(_D.hold_kp_n_per_m, "Hold PD on the raw encoders while on the crane "
                                       "[N/m]", bounds=(0.0, 1e7))
    hold_kd_n_s_per_m: float = parameter(_D.hold_kd_n_s_per_m, "Hold PD damping [N·s/m]", bounds=(0.0, 1e4))
    release_delay_s: float = parameter(_D.release_delay_s, "Crane released this long after wbc/ready [s] "
                                       "(sim time)", bounds=(0.0, 60.0))
    command_source: str = parameter("whole_body_controller", "Apply only actuators/command messages whose "
                                    "header.frame_id is this (the controller's node name; ros2_control: the only "
                                    "node publishing the effort controllers' commands); empty: any source")
    drop_ratio: float = parameter(0.0, "Fault injection: drop this fraction of the incoming commands at "
                                  "random (seeded)", bounds=(0.0, 0.99))
    controller: str = parameter(_D.controller, "Fallback after the release when no command is fresh: none "
                                "(damping) | pd (stand alone: counts as a ready controller)", read_only=True,
                                check=lambda v: None if v in ("none", "pd") else "must be one of ['none', 'pd']")
    pd_kp_n_per_m: float = parameter(_D.pd_kp_n_per_m, "Stiffness of the in-process PD [N/m]", bounds=(0.0, 1e7))
    pd_kd_n_s_per_m: float = parameter(_D.pd_kd_n_s_per_m, "Damping of the in-process PD [N·s/m]",
                                       bounds=(0.0, 2000.0))
    publish_ground_truth: bool = parameter(True, "Publish sim/ground_truth/* (to subscribed topics only)")
    ground_truth_decimation: int = parameter(10, "Publish the ground truth every N ticks", bounds=(1, 1000))
    tf_rate_hz: float = parameter(100.0, "Rate of TF odom → ground_truth/base_link [Hz] (0: off)",
                                  bounds=(0.0, 1000.0), read_only=True)
    faults: list[str] = parameter(list(_D.faults), "Actuator faults MODE:ACTUATOR@T (MODE lock, limp or "
                                  "active; T [s] of sim time after the crane's release), e.g. "
                                  "lock:left_ankle_inner_actuator@3; the controller is not told",
                                  check=check_faults)
    payloads: list[str] = parameter(list(_D.payloads), "Payloads MASS@LINK@T: a point mass [kg] attached at "
                                    "the link's centre of mass (torso: base_link; negative: removed), T [s] of "
                                    "sim time after the crane's release, e.g. 6kg@torso@4; the controller is "
                                    "not told", check=check_payloads)
    rig: str = rig_parameter()
    rig_leg: str = rig_leg_parameter()
    interface: str = interface_parameter()
    joint_space: str = joint_space_parameter()
    hardware_map: str = hardware_map_parameter()
    ros2_controllers: str = ros2_controllers_parameter()

    def __post_init__(self) -> None:
        if self.interface == "ros2_control" and self.rig:
            raise ValueError("interface ros2_control simulates the robot, not a rig (rig must be empty)")


#: The parameters that are fields of the component's configuration (same names).
SHARED_FIELDS = (SharedFields(SimulatedRobotConfig),)


def robot_config(p: SimParams, base: SimulatedRobotConfig | None = None) -> SimulatedRobotConfig:
    """The simulated robot's configuration of the node's parameters (``base``: the one in effect)."""
    return SHARED_FIELDS[0].build(p, base)


def check_names(name: str, value: list[str] | None, robot) -> str | None:
    """The ``faults`` or ``payloads`` parameter checked against the robot's actuators and links:
    None if every entry parses and names one, else the reason."""
    from kangaroo_wbc.components.simulated_robot import payload_link

    texts = list(value or ())
    if name == "faults":
        return check_faults(texts) or _unknown([parse_fault(t)[1] for t in texts], robot.actuator_names, "actuator")
    return check_payloads(texts) or _unknown([payload_link(parse_payload(t)[1]) for t in texts], robot.body_names,
                                             "link")


def _unknown(values: list[str], valid: list[str], what: str) -> str | None:
    from kangaroo_wbc.errors import suggest

    unknown = [v for v in values if v not in valid]
    return f"unknown {what} {unknown[0]!r}." + suggest(unknown[0], list(valid)) if unknown else None


__all__ = ["SimParams", "SHARED_FIELDS", "robot_config", "check_faults", "check_payloads", "check_names"]
