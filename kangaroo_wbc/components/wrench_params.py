"""Parameters of the ``contact_wrench_estimator`` node (``config/contact_wrench_estimator.yaml``), without ROS.

The node declares them (:mod:`kangaroo_wbc.ros.params`); the one-process loop reads the same YAML
file; both build the component from them through :mod:`kangaroo_wbc.components.assembly`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kangaroo_wbc.components.ankle_ft import AnkleFtSettings
from kangaroo_wbc.components.contact_wrench import ContactWrenchSettings
from kangaroo_wbc.components.parameters import (
    SharedFields,
    parameter,
    rig_leg_parameter,
    rig_parameter,
    sim_clock_parameter,
    urdf_dir_parameter,
)
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.estimation.actuator_force import ActuatorCompensation
from kangaroo_wbc.estimation.contact_wrench import (
    PAPER_LEAD_HIP_ANKLE_M,
    PAPER_SCREW_EFFICIENCY,
    ContactWrenchConfig,
)
from kangaroo_wbc.estimation.payload_identification import PayloadIdentificationConfig

_E, _S, _C = ContactWrenchConfig(), ContactWrenchSettings(), ActuatorCompensation()
_P = PayloadIdentificationConfig()
_F = AnkleFtSettings()


@dataclass
class ContactWrenchParams:
    """Parameters of the ``contact_wrench_estimator`` node (``config/contact_wrench_estimator.yaml``)."""

    rate_hz: float = parameter(_E.sample_rate_hz, "Rate of actuators/state, the filter's sampling rate "
                               "[Hz]", bounds=(1.0, 10000.0), read_only=True)
    urdf_dir: str = urdf_dir_parameter()
    sole_frames: list[str] = parameter(list(_S.sole_frames), "Contact frames (URDF)", read_only=True)
    odom_frame: str = parameter("odom", "World frame of the ZMP")
    cutoff_hz: float = parameter(_E.cutoff_hz, "Butterworth cutoff of the wrench filter [Hz]",
                                 bounds=(0.01, None), read_only=True)
    filter_order: int = parameter(_E.filter_order, "Butterworth order", bounds=(1, 8), read_only=True)
    min_normal_force_n: float = parameter(_E.min_normal_force_n, "CoP/ZMP published above this normal "
                                          "force [N]", bounds=(1e-3, None))
    include_velocity_terms: bool = parameter(_E.include_velocity_terms,
                                             "Add Coriolis/centrifugal terms (slow)")
    max_input_age_s: float = parameter(_S.max_input_age_s, "joint_states / odometry whose stamp differs "
                                       "from the actuator sample's by more than this are stale [s]",
                                       bounds=(0.0, None))
    clock_restart_samples: int = parameter(_S.clock_restart_samples, "Out-of-order samples in a row on one "
                                           "topic taken as a restarted clock (e.g. simulator reset) instead "
                                           "of skipped", bounds=(2, 100000), read_only=True)
    marker_rate_hz: float = parameter(10.0, "Rate of contact/markers [Hz] (0: off)", bounds=(0.0, 1000.0))
    marker_force_scale_m_per_n: float = parameter(0.001, "Arrow length per newton [m/N]", bounds=(0.0, None))
    default_screw_lead_m: float = parameter(PAPER_LEAD_HIP_ANKLE_M, "Screw lead of actuators the closure file "
                                            "does not describe [m]", bounds=(1e-6, None), read_only=True)
    default_screw_efficiency: float = parameter(PAPER_SCREW_EFFICIENCY, "Screw efficiency of the same [-]",
                                                bounds=(1e-3, 1.0), read_only=True)
    actuator_model: bool = parameter(_C.actuator_model, "Motor torque -> force through the ball-screw "
                                     "model: driving/back-driving efficiency and friction (false: eq. (47))",
                                     read_only=True)
    rotor_inertia_compensation: bool = parameter(_C.rotor_inertia, "Subtract the reflected rotor inertia "
                                                 "times the actuator acceleration", read_only=True)
    torque_bias_estimation: bool = parameter(_C.torque_bias, "Learn a per-actuator motor-torque offset "
                                             "while standing still on both soles", read_only=True)
    payload_identification: bool = parameter(_S.payload_identification, "Identify an unmodelled payload's "
                                             "mass and horizontal CoM while standing still; publish it on "
                                             "payload/identified (floating base only)", read_only=True)
    payload_block_samples: int = parameter(_P.block_samples, "Payload: samples averaged into one block (one "
                                           "eq. (46) solve)", bounds=(1, 100000), read_only=True)
    payload_window_s: float = parameter(_P.window_s, "Payload: the estimate averages the still blocks of the "
                                        "last this long [s]", bounds=(0.0, None), read_only=True)
    payload_min_still_s: float = parameter(_P.min_still_s, "Payload: still time the window needs before the "
                                           "estimate is confident [s] (<= payload_window_s)", bounds=(0.0, None),
                                           read_only=True)
    payload_settle_s: float = parameter(_P.settle_s, "Payload: still this long before samples count [s]",
                                        bounds=(0.0, None), read_only=True)
    payload_max_base_speed_m_s: float = parameter(_P.max_base_speed_m_s, "Payload still: base speed below "
                                                  "this [m/s]", bounds=(0.0, None), read_only=True)
    payload_max_base_rate_rad_s: float = parameter(_P.max_base_rate_rad_s, "Payload still: base angular speed "
                                                   "below this [rad/s]", bounds=(0.0, None), read_only=True)
    payload_max_actuator_speed_m_s: float = parameter(_P.max_actuator_speed_m_s, "Payload still: every actuator "
                                                      "slower than this [m/s]", bounds=(0.0, None), read_only=True)
    payload_max_com_acceleration_m_s2: float = parameter(_P.max_com_acceleration_m_s2, "Payload still: low-passed "
                                                         "linear momentum rate over the mass below this [m/s^2]",
                                                         bounds=(0.0, None), read_only=True)
    payload_max_angular_momentum_rate_nm: float = parameter(_P.max_angular_momentum_rate_nm, "Payload still: "
                                                            "low-passed angular momentum rate below this [N·m]",
                                                            bounds=(0.0, None), read_only=True)
    payload_momentum_filter_s: float = parameter(_P.momentum_filter_s, "Payload: time constant of that "
                                                 "low-pass [s]", bounds=(0.0, None), read_only=True)
    payload_min_sole_force_n: float = parameter(_P.min_sole_force_n, "Payload still: every sole's normal force "
                                                "above this [N]", bounds=(0.0, None), read_only=True)
    payload_max_mass_std_kg: float = parameter(_P.max_mass_std_kg, "Payload confident: spread of the window's "
                                               "block masses below this [kg]", bounds=(0.0, None), read_only=True)
    payload_max_mass_stderr_kg: float = parameter(_P.max_mass_stderr_kg, "Payload confident: their standard "
                                                  "error below this [kg]", bounds=(0.0, None), read_only=True)
    payload_max_mass_drift_kg: float = parameter(_P.max_mass_drift_kg, "Payload confident: mass drift across "
                                                 "the window below this [kg]", bounds=(0.0, None), read_only=True)
    payload_recent_s: float = parameter(_P.recent_s, "Payload: the newest part of the window compared with the "
                                        "rest [s]", bounds=(0.0, None), read_only=True)
    payload_max_horizontal_residual_n: float = parameter(_P.max_horizontal_residual_n, "Payload confident: mean "
                                                         "horizontal force balance below this [N]",
                                                         bounds=(0.0, None), read_only=True)
    payload_min_mass_for_com_kg: float = parameter(_P.min_mass_for_com_kg, "Payload: its CoM is given above "
                                                   "this mass [kg]", bounds=(0.0, None), read_only=True)
    ankle_ft_broadcasters: list[str] = parameter([], "Ankle F/T: the force_torque_sensor_broadcasters whose "
                                                 "~/wrench is compared with the estimate (names of "
                                                 "config/hardware_map.yaml's force_torque); empty: off",
                                                 read_only=True)
    ankle_ft_max_force_difference_n: float = parameter(_F.max_force_difference_n, "Ankle F/T: WARN when a "
                                                       "sole's measured and estimated forces differ by more [N]",
                                                       bounds=(0.0, None))
    ankle_ft_max_cop_difference_m: float = parameter(_F.max_cop_difference_m, "Ankle F/T: WARN when a sole's "
                                                     "measured and estimated CoPs differ by more [m]",
                                                     bounds=(0.0, None))
    ankle_ft_max_age_s: float = parameter(_F.max_age_s, "Ankle F/T: a sample further than this from the estimate's "
                                          "stamp is stale, not compared [s]", bounds=(0.0, None))
    rig: str = rig_parameter()
    rig_leg: str = rig_leg_parameter()
    sim_clock: str = sim_clock_parameter()

    def __post_init__(self) -> None:
        if self.cutoff_hz >= self.rate_hz / 2:
            raise ValueError("cutoff_hz must be below the Nyquist frequency rate_hz / 2")
        try:  # the identifier's own checks (strictly positive times and limits, min_still_s <= window_s)
            PAYLOAD.build(self)
        except InputError as exc:
            raise ValueError(f"payload_* parameters: {exc}") from None


# The parameters that are fields of the estimator's, the component's and the actuator model's
# configurations (same names, or renamed).
ESTIMATOR = SharedFields(ContactWrenchConfig, names={"sample_rate_hz": "rate_hz"})
SETTINGS = SharedFields(ContactWrenchSettings)
COMPENSATION = SharedFields(ActuatorCompensation, names={"rotor_inertia": "rotor_inertia_compensation",
                                                          "torque_bias": "torque_bias_estimation",
                                                          "sample_rate_hz": "rate_hz"})
PAYLOAD = SharedFields(PayloadIdentificationConfig, prefix="payload_")
ANKLE_FT = SharedFields(AnkleFtSettings, prefix="ankle_ft_", names={"min_normal_force_n": "min_normal_force_n"})
SHARED_FIELDS = (ESTIMATOR, SETTINGS, COMPENSATION, PAYLOAD, ANKLE_FT)


def compensation(p: ContactWrenchParams) -> ActuatorCompensation | None:
    """The actuator compensations the parameters switch on (None: eq. (47) alone)."""
    if not (p.actuator_model or p.rotor_inertia_compensation or p.torque_bias_estimation):
        return None
    return COMPENSATION.build(p)
