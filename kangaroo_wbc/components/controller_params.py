"""Parameters of the ``whole_body_controller`` node (``config/whole_body_controller.yaml``), without ROS.

The node declares them (:mod:`kangaroo_wbc.ros.params`); the one-process loop reads the same YAML
file (:func:`~kangaroo_wbc.components.parameters.params_from_yaml`); both build the controller from
them through :mod:`kangaroo_wbc.components.assembly`. Defaults shared with a core configuration
come from it (:class:`~kangaroo_wbc.components.parameters.SharedFields`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kangaroo_wbc.components.control import ControlSettings
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
from kangaroo_wbc.control.behaviours import (
    BEHAVIOURS,
    GaitSettings,
    LateralSway,
    Squat,
    WeightShift,
)
from kangaroo_wbc.control.fault_detector import FaultDetectorSettings
from kangaroo_wbc.control.qp_solvers import SOLVERS
from kangaroo_wbc.control.supervisor import SafetySettings
from kangaroo_wbc.control.wbc import WbcSettings

_W, _S, _C, _G, _F = WbcSettings(), SafetySettings(), ControlSettings(), GaitSettings(), FaultDetectorSettings()
_SQUAT, _SWAY, _SHIFT = Squat(), LateralSway(), WeightShift()
#: The parameters of the actuator modes (the operator's word).
MODE_PARAMETERS = {"locked_actuators": "locked", "limp_actuators": "limp"}


def _check_behaviour(name: str) -> str | None:
    return None if name in BEHAVIOURS else f"unknown behaviour; known: {sorted(BEHAVIOURS)}"


@dataclass
class WholeBodyControllerParams:
    """Parameters of the ``whole_body_controller`` node (``config/whole_body_controller.yaml``)."""

    rate_hz: float = parameter(
        1000.0, "Nominal rate of joint_states [Hz] (stroke-limit horizon floor)",
        bounds=(1.0, 10000.0), read_only=True)
    urdf_dir: str = urdf_dir_parameter()
    sole_frames: list[str] = parameter(
        list(_C.sole_frames), "Contact frames (URDF)", read_only=True)
    corner_suffixes: list[str] = parameter(
        ["_corner_fl", "_corner_fr", "_corner_rl", "_corner_rr"],
        "Corner frames are <sole><suffix>; if absent, a sole_length_m x sole_width_m rectangle "
        "is used", read_only=True)
    sole_length_m: float = parameter(
        0.2, "Sole length when there are no corner frames [m]", bounds=(0.01, 1.0), read_only=True)
    sole_width_m: float = parameter(
        0.1, "Sole width when there are no corner frames [m]", bounds=(0.01, 1.0), read_only=True)
    base_frame: str = parameter(
        _W.base_frame, "Floating-base frame (orientation task)", read_only=True)
    formulation: str = parameter(
        "full", "QP formulation: full (one QP) or reduced (centroidal two-stage)", read_only=True,
        check=lambda s: None if s in ("full", "reduced") else "full or reduced")
    qp_solver: str = parameter(
        _W.qp_solver, "QP solver: " + ", ".join(SOLVERS) + " (docs/performance.md, QP solvers)",
        read_only=True, check=lambda s: None if s in SOLVERS else " or ".join(SOLVERS))
    friction_coefficient: float = parameter(
        0.8, "Coulomb friction coefficient [-]", bounds=(0.05, 2.0), read_only=True)
    min_normal_force_n: float = parameter(
        0.0, "Minimum normal force per sole corner in contact [N] (a value the robot cannot press "
        "makes the QP infeasible: safe mode)", bounds=(0.0, 1000.0))
    com_kp: float = parameter(_W.com_kp, "CoM task stiffness [1/s^2]", bounds=(0.0, 10000.0))
    com_kd: float = parameter(_W.com_kd, "CoM task damping [1/s]", bounds=(0.0, 1000.0))
    com_weight: float = parameter(_W.com_weight, "CoM task weight [-]", bounds=(0.0, 1e6))
    com_disturbance_cutoff_hz: float = parameter(
        _W.com_disturbance_cutoff_hz,
        "CoM disturbance observer: low-pass cutoff [Hz] of the unmodelled CoM acceleration it "
        "subtracts from the CoM task (the drives' force errors); 0 turns it off",
        bounds=(0.0, 50.0))
    com_disturbance_max_m_s2: float = parameter(
        _W.com_disturbance_max_m_s2,
        "CoM disturbance observer: bound of each axis of its estimate [m/s^2] (a push beyond it "
        "is left to the CoM task's PD)", bounds=(0.0, 10.0))
    base_kp: float = parameter(
        _W.base_kp, "Base orientation stiffness [1/s^2]", bounds=(0.0, 10000.0))
    base_kd: float = parameter(_W.base_kd, "Base orientation damping [1/s]", bounds=(0.0, 1000.0))
    base_weight: float = parameter(
        _W.base_weight, "Base orientation weight [-]", bounds=(0.0, 1e6))
    foot_kp: float = parameter(_W.foot_kp, "Swing sole stiffness [1/s^2]", bounds=(0.0, 10000.0))
    foot_kd: float = parameter(_W.foot_kd, "Swing sole damping [1/s]", bounds=(0.0, 1000.0))
    foot_weight: float = parameter(_W.foot_weight, "Swing sole weight [-]", bounds=(0.0, 1e6))
    posture_weight: float = parameter(
        _W.posture_weight, "Actuator posture weight [-]", bounds=(0.0, 1e6))
    angular_momentum_kd: float = parameter(
        _W.angular_momentum_kd, "Angular momentum damping [1/s]", bounds=(0.0, 1000.0))
    angular_momentum_weight: float = parameter(
        _W.angular_momentum_weight, "Angular momentum weight [-]", bounds=(0.0, 1e6))
    stroke_horizon_s: float = parameter(
        _W.stroke_horizon_s, "Horizon of the stroke-limit acceleration bounds [s]",
        bounds=(1e-3, 1.0), read_only=True)
    behaviour: str = parameter(
        "stand", "Running behaviour: stand, squat, sway, weight_shift, push_recovery, walk",
        check=_check_behaviour)
    behaviour_delay_s: float = parameter(
        _C.behaviour_delay_s,
        "The start-up behaviour begins this long after the controller is ready; it stands "
        "meanwhile (and leaves the crane) [s]", bounds=(0.0, 60.0), read_only=True)
    squat_depth_m: float = parameter(_SQUAT.depth_m, "Squat CoM depth [m]", bounds=(0.0, 0.3))
    squat_period_s: float = parameter(_SQUAT.period_s, "Squat period [s]", bounds=(0.5, 60.0))
    sway_ratio: float = parameter(
        _SWAY.ratio, "Sway amplitude / half distance between the soles [-]", bounds=(0.0, 0.95))
    sway_period_s: float = parameter(_SWAY.period_s, "Sway period [s]", bounds=(0.5, 60.0))
    behaviour_cycles: int = parameter(1000, "Squat / sway cycles", bounds=(1, 1000000))
    stance_sole: str = parameter("left_sole", "Stance sole of weight_shift")
    lift_height_m: float = parameter(
        _SHIFT.lift_height_m, "Swing sole lift of weight_shift [m]", bounds=(0.0, 0.3))
    cmd_vel: list[float] = parameter(
        [0.0, 0.0, 0.0],
        "walk: velocity command [vx m/s, vy m/s, wz rad/s] until the cmd_vel topic gives one",
        check=lambda v: None if len(v) == 3 and all(math.isfinite(x) for x in v) else "three finite numbers")
    cmd_vel_timeout_s: float = parameter(
        _C.cmd_vel_timeout_s, "walk: a cmd_vel older than this stops the walk (it stands) [s]",
        bounds=(0.01, 60.0))
    walk_single_support_s: float = parameter(
        _G.single_support_s, "walk: single support [s]", bounds=(0.2, 2.0))
    walk_double_support_s: float = parameter(
        _G.double_support_s, "walk: double support [s]", bounds=(0.05, 2.0))
    walk_step_height_m: float = parameter(
        _G.step_height_m, "walk: swing sole lift [m]", bounds=(0.0, 0.2))
    walk_max_forward_mps: float = parameter(
        _G.max_forward_mps, "walk: cmd_vel x limit [m/s]", bounds=(0.01, 1.0))
    walk_max_lateral_mps: float = parameter(
        _G.max_lateral_mps, "walk: cmd_vel y limit [m/s]", bounds=(0.01, 0.5))
    walk_max_yaw_rate_radps: float = parameter(
        _G.max_yaw_rate_radps, "walk: cmd_vel yaw-rate limit [rad/s]", bounds=(0.01, 1.5))
    use_measured_contacts: bool = parameter(
        _C.use_measured_contacts,
        "Drop behaviour contacts that contact/<sole>/wrench says are unloaded")
    contact_force_on_n: float = parameter(
        _C.contact_force_on_n, "A sole counts as in contact above this normal force [N]",
        bounds=(0.0, None))
    contact_force_off_n: float = parameter(
        _C.contact_force_off_n, "... and out of contact below this one [N]", bounds=(0.0, None))
    max_state_age_s: float = parameter(
        _C.max_state_age_s, "State older than this (node clock) triggers the safe mode [s]",
        bounds=(0.0, None))
    state_timeout_s: float = parameter(
        0.5, "No joint_states for longer than this (steady clock; simulated while use_sim_time): safe mode "
        "(stale state), the behaviour restarts from the next state [s]", bounds=(0.01, 60.0))
    # the node's choice: WbcSettings' 0 stops only at an exactly singular J_l,u
    min_jlu_pivot_ratio: float = parameter(
        1e-3,
        "J_l,u LU pivot ratio (about 1/cond) below which the configuration counts as singular: "
        "safe mode [-]", bounds=(0.0, 1.0))
    odometry_max_lag_s: float = parameter(
        0.02, "Odometry older than joint_states by more than this is stale [s]",
        bounds=(0.0, None))
    reference_timeout_s: float = parameter(
        _C.reference_timeout_s, "External references expire after this [s]", bounds=(0.0, None))
    safe_mode: str = parameter(
        _S.fallback, "Fallback: damp (tau = -d theta_dot) or zero",
        check=lambda s: None if s in ("damp", "zero") else "damp or zero")
    damping_n_s_per_m: float = parameter(
        _S.damping_n_s_per_m, "Damping of the safe mode [N.s/m]", bounds=(0.0, 1e5))
    max_tilt_rad: float = parameter(
        _S.max_tilt_rad, "Base tilt that latches the safe mode [rad]", bounds=(0.0, 3.2))
    qp_failure_hold_s: float = parameter(
        _S.qp_failure_hold_s,
        "A QP failure within this long of the last control command repeats that command [s]",
        bounds=(0.0, 0.1))
    timing_rate_hz: float = parameter(
        50.0, "Largest rate of wbc/timing [Hz] (stamp-based)", bounds=(0.1, 10000.0))
    publish_command_array: bool = parameter(
        False, "Also publish actuators/command_array (ros2_control mirror)", read_only=True)
    odom_frame: str = parameter("odom", "World frame of the references")
    locked_actuators: list[str] = parameter(
        [], "Actuators locked (seized screw, brake, driver holding position): the QP keeps their stroke "
        "still and the lock carries their force (ros2 param set; docs/morphology.md)")
    limp_actuators: list[str] = parameter(
        [], "Actuators limp (failed driver): the QP bounds their force to 0 (ros2 param set)")
    payloads: list[str] = parameter(
        [], "Payloads the robot carries beyond its model, LINK:MASS_KG (e.g. base_link:6.0; torso is "
        "base_link; negative: mass removed), point masses at the link's centre of mass (ros2 param set; "
        "docs/morphology.md)")
    fault_detection: bool = parameter(
        _C.fault_detection, "Watch actuators/state: an actuator whose motor torque does not follow its "
        "command is an ERROR naming it", read_only=True)
    fault_declare: bool = parameter(
        _C.fault_declare, "Declare such an actuator limp (false: the ERROR only)")
    fault_window_s: float = parameter(
        _F.window_s, "Fault detector: disagreement without a break this long is a fault [s]",
        bounds=(0.001, 10.0))
    fault_force_tolerance_n: float = parameter(
        _F.force_tolerance_n, "Fault detector: force residual allowed at zero command [N]",
        bounds=(0.1, 1e5))
    fault_force_tolerance_ratio: float = parameter(
        _F.force_tolerance_ratio, "Fault detector: ... plus this fraction of the commanded force [-]",
        bounds=(0.0, 10.0))
    fault_drive_model: bool = parameter(
        _F.drive_model, "Fault detector: the torque sensor reads the drive's model (efficiency, friction; "
        "false: eq. (47) alone, for the sim node's ideal_actuators)", read_only=True)
    fault_command_max_age_s: float = parameter(
        _F.command_max_age_s, "Fault detector: a command older than the actuator sample by more than this "
        "drove nothing the sample shows (the drives' watchdog): no evidence [s]", bounds=(0.001, 10.0))
    fault_holdoff_s: float = parameter(
        _F.holdoff_s, "Fault detector: no evidence this long after commands stopped (the drives leave their "
        "watchdog's damping) [s]", bounds=(0.0, 60.0))
    rig: str = rig_parameter()
    rig_leg: str = rig_leg_parameter()
    sim_clock: str = sim_clock_parameter()
    interface: str = interface_parameter()
    joint_space: str = joint_space_parameter()
    hardware_map: str = hardware_map_parameter()
    ros2_controllers: str = ros2_controllers_parameter()
    switch_controllers: bool = parameter(
        True, "ros2_control: at the first ready, call <controller_manager>/switch_controller (STRICT) to activate "
        "the effort controllers and deactivate their fallback_controllers (the position controllers holding the "
        "legs); false: the operator switches (docs/ros2_control.md)", read_only=True)
    controller_manager: str = parameter(
        "controller_manager", "ros2_control: the controller manager's node name (relative: in this node's "
        "namespace)", read_only=True)
    switch_timeout_s: float = parameter(
        5.0, "ros2_control: the switch fails (ERROR, effort commands withheld) without an answer in this long "
        "[s, steady clock]", bounds=(0.1, 60.0), read_only=True)

    def __post_init__(self) -> None:
        if self.interface == "ros2_control" and self.rig:
            raise ValueError("interface ros2_control drives the robot, not a rig (rig must be empty)")
        if self.contact_force_off_n > self.contact_force_on_n:
            raise ValueError("contact_force_off_n must not exceed contact_force_on_n")
        both = sorted(set(self.locked_actuators) & set(self.limp_actuators))
        if both:
            raise ValueError(f"actuators both locked and limp: {both}")


# The parameters that are fields of the controller's, the supervisor's and the component's
# configurations (same names; the supervisor's fallback is the parameter safe_mode).
WBC = SharedFields(WbcSettings)
SAFETY = SharedFields(SafetySettings, names={"fallback": "safe_mode"})
CONTROL = SharedFields(ControlSettings)
GAIT = SharedFields(GaitSettings, prefix="walk_")
FAULTS = SharedFields(FaultDetectorSettings, prefix="fault_")


def control_settings(p: WholeBodyControllerParams) -> ControlSettings:
    """The component's settings, its fault detector's included."""
    return CONTROL.build(p, fault_detector=FAULTS.build(p))


def wbc_settings(p: WholeBodyControllerParams) -> WbcSettings:
    """The controller's settings (the stroke-limit horizon at least one sample)."""
    return WBC.build(p, stroke_horizon_s=max(p.stroke_horizon_s, 1.0 / p.rate_hz))


#: Each behaviour's fields that are node parameters (the others keep the behaviour's defaults). The
#: node's ``behaviour_cycles`` (one for squat and sway) is the one default that differs from the
#: behaviours' own: the robot keeps its behaviour until told otherwise.
BEHAVIOUR_FIELDS = {
    "squat": SharedFields(Squat, names={"depth_m": "squat_depth_m", "period_s": "squat_period_s",
                                        "cycles": "behaviour_cycles"}),
    "sway": SharedFields(LateralSway, names={"ratio": "sway_ratio", "period_s": "sway_period_s",
                                             "cycles": "behaviour_cycles"}),
    "weight_shift": SharedFields(WeightShift, names={"stance": "stance_sole", "lift_height_m": "lift_height_m"}),
}
#: Every core configuration the parameters feed (the drift test checks their defaults agree).
SHARED_FIELDS = (WBC, SAFETY, CONTROL, GAIT, FAULTS, *BEHAVIOUR_FIELDS.values())
#: Parameters of the behaviours (besides the gait's): a change restarts the behaviour.
BEHAVIOUR_PARAMETERS = frozenset({"behaviour", "cmd_vel"} | {p for f in BEHAVIOUR_FIELDS.values()
                                                             for p in f.pairs(WholeBodyControllerParams).values()}
                                 | set(GAIT.pairs(WholeBodyControllerParams).values()))


def behaviour_options(p: WholeBodyControllerParams, name: str) -> dict:
    """Behaviour ``name``'s options from the parameters (what the node and the one-process loop start)."""
    if name == "walk":
        return dict(cmd_vel=tuple(p.cmd_vel), gait=GAIT.build(p))
    fields = BEHAVIOUR_FIELDS.get(name)
    return fields.values(p) if fields is not None else {}


def parse_payload_parameter(values: Sequence[str]) -> dict[str, float]:
    """The ``payloads`` parameter (``["LINK:MASS_KG", ...]``, e.g. ``["base_link:6.0"]``; ``torso`` is
    ``base_link``, a ``kg`` suffix is allowed) → ``{link: mass [kg]}``. Links are not checked here
    (:meth:`~kangaroo_wbc.model.payloads.ModelPayloads.check`).

    Raises:
        InputError: an entry not of that form, a mass not finite or beyond ``MAX_PAYLOAD_KG`` in
            size, or a link given twice.
    """
    import math
    import re

    from kangaroo_wbc.components.simulated_robot import MAX_PAYLOAD_KG, payload_link
    from kangaroo_wbc.errors import InputError

    out: dict[str, float] = {}
    for text in values or ():
        link, colon, mass_text = str(text).partition(":")
        link, mass_text = link.strip(), mass_text.strip().removesuffix("kg").strip()
        if not (colon and re.fullmatch(r"[A-Za-z0-9_]+", link)):
            raise InputError(f"{text!r}: expected LINK:MASS_KG such as base_link:6.0")
        try:
            mass = float(mass_text)
        except ValueError:
            raise InputError(f"{text!r}: the mass {mass_text!r} is not a number [kg]") from None
        if not (math.isfinite(mass) and abs(mass) <= MAX_PAYLOAD_KG):
            raise InputError(f"{text!r}: the mass must be finite and at most {MAX_PAYLOAD_KG:g} kg in size")
        link = payload_link(link)
        if link in out:
            raise InputError(f"{text!r}: link {link!r} given twice")
        out[link] = mass
    return out
