"""Parameters of the ``state_estimator`` node (``config/state_estimator.yaml``), without ROS.

The node declares them (:mod:`kangaroo_wbc.ros.params`); the one-process loop reads the same YAML
file; both build the component from them through :mod:`kangaroo_wbc.components.assembly`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kangaroo_wbc.components.parameters import (
    SharedFields,
    parameter,
    rig_leg_parameter,
    rig_parameter,
    sim_clock_parameter,
    urdf_dir_parameter,
)
from kangaroo_wbc.components.ros2_control.settings import (
    hardware_map_parameter,
    interface_parameter,
    joint_space_parameter,
    ros2_controllers_parameter,
)
from kangaroo_wbc.components.state_estimation import StateEstimationConfig
from kangaroo_wbc.estimation.calibration import CalibrationConfig
from kangaroo_wbc.estimation.encoder_sanity import EncoderSanityConfig
from kangaroo_wbc.estimation.floating_base import FloatingBaseConfig

_D = StateEstimationConfig()  # the defaults are the component's (and its parts')


@dataclass
class StateEstimatorParams:
    """Parameters of the ``state_estimator`` node (``config/state_estimator.yaml``)."""

    rate_hz: float = parameter(
        _D.rate_hz, "Nominal rate of actuators/state [Hz] (dt when stamps are unusable)",
        bounds=(1.0, 10000.0), read_only=True)
    urdf_dir: str = urdf_dir_parameter()
    alpha: float = parameter(
        _D.alpha, "Closure-error gain alpha of eq. (38) [1/s], at most rate_hz", bounds=(0.0, 1e4))
    beta: float = parameter(
        _D.beta, "Actuated-position gain beta of eq. (38) [1/s], at most rate_hz",
        bounds=(0.0, 1e4))
    calibration_samples: int = parameter(
        _D.calibration_samples, "Still samples averaged by the start-up calibration",
        bounds=(1, 100000), read_only=True)
    calibration_max_velocity_m_s: float = parameter(
        _D.calibration.max_velocity, "Largest actuator speed while calibrating [m/s]",
        bounds=(0.0, None))
    calibration_max_drift_m: float = parameter(
        _D.calibration.max_position_drift, "Largest mean-position drift over the window [m]",
        bounds=(0.0, None))
    calibration_limit_margin: float = parameter(
        _D.calibration.limit_margin,
        "A calibrated actuator position or passive encoder reading beyond the position limits "
        "by more than this fails the calibration [m, rad]", bounds=(0.0, None), read_only=True)
    encoder_jump_speed_factor: float = parameter(
        _D.encoder_sanity.jump_speed_factor,
        "A reading implying more than this times the actuator's speed limit is a jump: sample "
        "skipped [-]", bounds=(1.0, 100.0), read_only=True)
    encoder_position_tolerance_m: float = parameter(
        _D.encoder_sanity.position_tolerance, "Noise allowance of the jump check [m]",
        bounds=(0.0, 0.1), read_only=True)
    encoder_max_rejected_samples: int = parameter(
        _D.encoder_sanity.max_rejected_samples,
        "Jumped samples in a row that make the jump persistent (recalibration)", bounds=(1, 1000),
        read_only=True)
    encoder_freeze_samples: int = parameter(
        _D.encoder_sanity.freeze_samples,
        "Bit-identical samples in a row, while the reported velocity moves, that make a reading "
        "frozen (recalibration)", bounds=(2, 100000), read_only=True)
    encoder_freeze_min_travel_m: float = parameter(
        _D.encoder_sanity.freeze_min_travel,
        "Travel the reported velocity must integrate to over those samples [m]",
        bounds=(0.0, None), read_only=True)
    imu_error_after_s: float = parameter(
        _D.imu_error_after_s,
        "imu/data silent for longer than this, relative to actuators/state, is an ERROR (a WARN "
        "from max_input_age_s) [s]", bounds=(0.0, None))
    sole_frames: list[str] = parameter(
        list(_D.sole_frames), "Contact frames (URDF)", read_only=True)
    imu_frame: str = parameter(_D.imu_frame, "IMU frame (URDF, on the base link)", read_only=True)
    odom_frame: str = parameter("odom", "World frame of the odometry")
    base_frame: str = parameter("base_link", "Floating-base frame (URDF root link)")
    contact_force_on_n: float = parameter(
        _D.contact_force_on_n, "Normal force above which a sole enters contact [N]",
        bounds=(0.0, None))
    contact_force_off_n: float = parameter(
        _D.contact_force_off_n, "Normal force below which a sole leaves contact [N]",
        bounds=(0.0, None))
    contact_timeout_s: float = parameter(
        _D.contact_timeout_s,
        "Without a fresh contact/<sole>/wrench every sole counts as in contact [s]",
        bounds=(0.0, None))
    max_input_age_s: float = parameter(
        _D.max_input_age_s,
        "IMU / encoder samples older than this, relative to the actuator sample, are stale [s]",
        bounds=(0.0, None))
    input_timeout_s: float = parameter(
        _D.input_timeout_s,
        "No actuators/state for longer than this (steady clock) is an ERROR (inputs stale) [s]",
        bounds=(0.01, 60.0))
    clock_restart_samples: int = parameter(
        _D.clock_restart_samples,
        "Out-of-order actuators/state samples in a row taken as a restarted clock (hardware or "
        "simulator restart: recalibration) instead of skipped", bounds=(2, 100000), read_only=True)
    accel_noise_std: float = parameter(
        _D.floating_base.accel_noise_std, "Process noise of the base acceleration [m/s^2]",
        bounds=(1e-6, None))
    leg_velocity_std: float = parameter(
        _D.floating_base.leg_velocity_std, "Leg-odometry velocity noise [m/s]",
        bounds=(1e-6, None))
    foot_position_std: float = parameter(
        _D.floating_base.foot_position_std, "Anchored-foot position noise [m]",
        bounds=(1e-6, None))
    use_accelerometer: bool = parameter(
        _D.floating_base.use_accelerometer, "Predict the base velocity with the accelerometer")
    snap_to_ground: bool = parameter(
        _D.floating_base.ground_height_m is not None,
        "Anchor soles touching down at ground_height_m (flat ground)")
    ground_height_m: float = parameter(
        _D.floating_base.ground_height_m or 0.0, "Height of the flat ground in odom [m]")
    publish_tf: bool = parameter(True, "Broadcast TF odom -> base_link")
    tf_rate_hz: float = parameter(
        100.0,
        "Largest rate of TF odom -> base_link [Hz] (stamp-based; the odometry keeps the sample "
        "rate)", bounds=(1.0, 10000.0))
    held_until_ready: bool = parameter(
        _D.held_until_ready,
        "The robot hangs on the crane (zero-velocity updates of the base) after each "
        "calibration until wbc/ready is true (the start-up handshake); false: always standing",
        read_only=True)
    closure_error_warn: float = parameter(
        _D.closure_error_warn, "Closure error reported as WARN above this [m, rad]",
        bounds=(0.0, None))
    rig: str = rig_parameter()
    rig_leg: str = rig_leg_parameter()
    sim_clock: str = sim_clock_parameter()
    interface: str = interface_parameter()
    joint_space: str = joint_space_parameter()
    hardware_map: str = hardware_map_parameter()
    ros2_controllers: str = ros2_controllers_parameter()

    def __post_init__(self) -> None:
        if self.interface == "ros2_control" and self.rig:
            raise ValueError("interface ros2_control drives the robot, not a rig (rig must be empty)")
        if self.alpha > self.rate_hz or self.beta > self.rate_hz:
            raise ValueError("alpha and beta must not exceed rate_hz (alpha dt, beta dt <= 1)")
        if self.contact_force_off_n >= self.contact_force_on_n:
            raise ValueError("contact_force_off_n must be below contact_force_on_n (hysteresis)")
        if self.imu_error_after_s < self.max_input_age_s:
            raise ValueError("imu_error_after_s must not be below max_input_age_s (WARN before ERROR)")


#: The parameters that are fields of the component's configuration and of its parts' (the
#: component's under the same names; its parts' under a prefix, some renamed with their unit).
SHARED_FIELDS = (
    SharedFields(StateEstimationConfig),
    SharedFields(CalibrationConfig, "calibration_", {"max_velocity": "calibration_max_velocity_m_s",
                                                     "max_position_drift": "calibration_max_drift_m"}),
    SharedFields(EncoderSanityConfig, "encoder_", {"position_tolerance": "encoder_position_tolerance_m",
                                                   "freeze_min_travel": "encoder_freeze_min_travel_m"}),
    SharedFields(FloatingBaseConfig),
)


def component_config(p: StateEstimatorParams) -> StateEstimationConfig:
    """The component's settings from the node's parameters."""
    state, calibration, encoders, base = SHARED_FIELDS
    return state.build(
        p, calibration=calibration.build(p), encoder_sanity=encoders.build(p, nominal_dt_s=1.0 / p.rate_hz),
        floating_base=base.build(p, ground_height_m=p.ground_height_m if p.snap_to_ground else None))
