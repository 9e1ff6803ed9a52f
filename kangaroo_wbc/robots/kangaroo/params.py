"""Parameters of the Kangaroo model generator (``params.yaml``), with validation.

Every number of the generated model comes from this file; see its header for the sources (paper
Table II, the paper's text, PAL's public description, our own choices). Malformed files raise
:class:`~kangaroo_wbc.errors.ConfigError` naming the file and the key.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from kangaroo_wbc.errors import ConfigError

#: The parameter file shipped with the package.
DEFAULT_PARAMS = Path(__file__).with_name("params.yaml")

#: Actuator keys (per leg) in the order of the actuated joints.
ACTUATORS = ("hip_yaw", "hip_inner", "hip_outer", "leg_length", "ankle_inner", "ankle_outer")

#: Keys of the ``actuator_dynamics`` section (see :mod:`kangaroo_wbc.model.ball_screw`).
ACTUATOR_DYNAMICS = ("back_drive_efficiency", "rotor_inertia_kgm2", "coulomb_friction_n",
                     "viscous_friction_n_s_per_m", "stiction_velocity_m_s", "torque_constant_error",
                     "current_noise_std_nm", "current_bias_std_nm", "current_bandwidth_hz",
                     "encoder_counts_per_rev")

#: Output (serial) joint keys per leg, in the order of the chain: hip yaw, roll, pitch, knee, ankle
#: roll (axis on the tibia), ankle pitch (axis on the ankle cross).
OUTPUTS = ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle_roll", "ankle_pitch")


#: Overrides of ``params.yaml`` (for :meth:`KangarooParams.with_overrides`) giving the squat force of
#: the paper's Fig. 15: a knee linkage with three non-linear stages (unequal relay arms, arms and
#: rods out of level) that turns the knee fast near the straight leg, the standing stroke at knee
#: 18 deg, and the ankle chains spread to keep the ankle roll at +-27 deg [T2] at that knee. Not the
#: committed design: see urdf/README.md, "Design notes: squat force (Fig. 15)".
FIG15_OVERRIDES: dict[str, Any] = {
    "knee.tibia_lever_m": 0.0650, "knee.mid_range_deg": 78.5, "knee.pushrod_length_m": 0.0629,
    "knee.pushrod_angle_deg": -40.0, "knee.rocker2_output_arm_m": 0.0303, "knee.rocker2_arm_deg": -55.8,
    "knee.rocker2_relay_arm_m": 0.0544, "knee.relay_length_m": 0.05, "knee.rocker1_relay_arm_m": 0.0599,
    "knee.rocker1_relay_arm_deg": 134.7, "knee.rocker1_actuator_arm_m": 0.0936, "knee.rocker1_arm_deg": -8.0,
    "knee.actuator_length_m": 0.1901, "knee.actuator_angle_deg": -22.0, "standing_pose_m.leg_length": 0.0070,
    "ankle.chain_lateral_m": 0.0575,
    "passive_limits_deg.knee_rocker1": [-10.0, 120.0], "passive_limits_deg.knee_relay": [-10.0, 85.0],
    "passive_limits_deg.knee_rocker2": [-10.0, 225.0], "passive_limits_deg.knee_pushrod": [-85.0, 10.0],
}


class KangarooParams:
    """Validated view of ``params.yaml``.

    Args:
        data: the parsed YAML mapping.
        source: file name used in error messages.
    """

    def __init__(self, data: dict[str, Any], source: str = "<memory>") -> None:
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping at the top level")
        self.data = data
        self.source = source
        self._validate()

    # ------------------------------------------------------------------ access
    def raw(self, key: str) -> Any:
        """Value at a dotted ``key`` (e.g. ``"leg.femur_length_m"``)."""
        node: Any = self.data
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise ConfigError(f"{self.source}: key '{key}': missing")
            node = node[part]
        return node

    def num(self, key: str, positive: bool = False) -> float:
        """A finite number at ``key`` (strictly positive if ``positive``)."""
        v = self.raw(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
            raise ConfigError(f"{self.source}: key '{key}': expected a finite number, got {v!r}")
        if positive and v <= 0.0:
            raise ConfigError(f"{self.source}: key '{key}': expected a positive number, got {v!r}")
        return float(v)

    def vec(self, key: str, n: int) -> np.ndarray:
        """A list of ``n`` finite numbers at ``key``."""
        v = self.raw(key)
        if not isinstance(v, list) or len(v) != n:
            raise ConfigError(f"{self.source}: key '{key}': expected a list of {n} numbers, got {v!r}")
        out = np.array([float(x) for x in v])
        if not np.all(np.isfinite(out)):
            raise ConfigError(f"{self.source}: key '{key}': non-finite value in {v!r}")
        return out

    def deg_range(self, key: str) -> tuple[float, float]:
        """A ``[min, max]`` range in [deg] at ``key``, returned in [rad]."""
        lo, hi = self.vec(key, 2)
        if lo > hi:
            raise ConfigError(f"{self.source}: key '{key}': min {lo} > max {hi}")
        return float(np.radians(lo)), float(np.radians(hi))

    def mass(self, body: str) -> float:
        return self.num(f"masses_kg.{body}", positive=True)

    def actuator(self, key: str) -> dict[str, Any]:
        """Stroke [m], max force [N], max velocity [m/s], screw lead [m] and efficiency of one actuator."""
        base = f"actuators.{key}"
        stroke = self.vec(f"{base}.stroke_m", 2)
        if stroke[0] >= stroke[1]:
            raise ConfigError(f"{self.source}: key '{base}.stroke_m': min must be below max, got {stroke}")
        screw = self.raw(f"{base}.screw")
        model = self.raw("screw_model")
        lead = self.num(f"screw_models.{model}.{screw}.lead_m", positive=True)
        eta = self.num(f"screw_models.{model}.{screw}.efficiency", positive=True)
        if eta > 1.0:
            raise ConfigError(f"{self.source}: key 'screw_models.{model}.{screw}.efficiency': must be <= 1")
        return {
            "stroke_m": [float(stroke[0]), float(stroke[1])],
            "max_force_n": self.num(f"{base}.max_force_n", positive=True),
            "max_velocity_m_s": self.num(f"{base}.max_velocity_m_s", positive=True),
            "screw_lead_m": lead,
            "screw_efficiency": eta,
            **self.actuator_dynamics(eta),
        }

    def actuator_dynamics(self, efficiency: float) -> dict[str, float]:
        """The ``actuator_dynamics`` entries (losses, rotor inertia, drive and sensor figures), or
        none if the file has no such section (an ideal screw)."""
        if self.data.get("actuator_dynamics") is None:
            return {}
        out = {k: self.num(f"actuator_dynamics.{k}") for k in ACTUATOR_DYNAMICS}
        for k, v in out.items():
            if not v >= 0:
                raise ConfigError(f"{self.source}: key 'actuator_dynamics.{k}': must be >= 0, got {v}")
        if not 0 < out["back_drive_efficiency"] <= efficiency:
            raise ConfigError(f"{self.source}: key 'actuator_dynamics.back_drive_efficiency': must be in "
                              f"(0, {efficiency}] (the driving efficiency), got {out['back_drive_efficiency']}")
        if not out["stiction_velocity_m_s"] > 0:
            raise ConfigError(f"{self.source}: key 'actuator_dynamics.stiction_velocity_m_s': must be > 0")
        return out

    def standing_actuators(self) -> dict[str, float]:
        """Standing-pose actuator positions [m] per actuator key."""
        return {k: self.num(f"standing_pose_m.{k}") for k in ACTUATORS}

    def with_overrides(self, overrides: dict[str, Any]) -> KangarooParams:
        """A copy with dotted keys replaced, e.g. ``{"screw_model": "pal"}``."""
        data = copy.deepcopy(self.data)
        for key, value in overrides.items():
            node = data
            parts = key.split(".")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        return KangarooParams(data, self.source + " (overridden)")

    # ------------------------------------------------------------------ validation
    def _validate_mass_distribution(self) -> None:
        """Box sizes positive; each segment box inside its segment (``com_fraction`` ± half the
        ``length_fraction`` within [0, 1])."""
        key = "mass_distribution"
        for k in ("hip_yaw_link_size_m",):
            if not np.all(self.vec(f"{key}.{k}", 3) > 0.0):
                raise ConfigError(f"{self.source}: key '{key}.{k}': sizes must be positive")
        self.num(f"{key}.foot_plate_height_m", positive=True)
        for seg in ("femur", "tibia"):
            f = self.num(f"{key}.{seg}.com_fraction")
            lf = self.num(f"{key}.{seg}.length_fraction", positive=True)
            if not np.all(self.vec(f"{key}.{seg}.section_m", 2) > 0.0):
                raise ConfigError(f"{self.source}: key '{key}.{seg}.section_m': sizes must be positive")
            if f - 0.5 * lf < -1e-12 or f + 0.5 * lf > 1.0 + 1e-12:
                raise ConfigError(f"{self.source}: key '{key}.{seg}': a box of length_fraction {lf} centred at "
                                  f"com_fraction {f} leaves the segment (needs {0.5 * lf} <= com_fraction <= "
                                  f"{1.0 - 0.5 * lf})")

    def _validate(self) -> None:
        for key in ("pelvis.mass_kg", "leg.femur_length_m", "leg.tibia_length_m", "leg.hip_yaw_to_pitch_m",
                    "leg.sole_length_m", "leg.sole_width_m", "cage.mass_kg"):
            self.num(key, positive=True)
        model = self.raw("screw_model")
        models = self.raw("screw_models")
        if model not in models:
            raise ConfigError(f"{self.source}: key 'screw_model': {model!r} is not one of {sorted(models)}")
        for k in ACTUATORS:
            act = self.actuator(k)
            s = self.num(f"standing_pose_m.{k}")
            if not act["stroke_m"][0] <= s <= act["stroke_m"][1]:
                raise ConfigError(f"{self.source}: key 'standing_pose_m.{k}': {s} outside the stroke {act['stroke_m']}")
        self._validate_mass_distribution()
        for k in OUTPUTS:
            self.deg_range(f"output_limits_deg.{k}")
        for k in self.raw("passive_limits_deg"):
            self.deg_range(f"passive_limits_deg.{k}")
        for key, valid in (("absolute_actuators", ACTUATORS), ("absolute_encoders", OUTPUTS)):
            names = self.raw(key)
            if not isinstance(names, list) or any(n not in valid for n in names):
                raise ConfigError(f"{self.source}: key '{key}': expected names from {list(valid)}, got {names!r}")


def load_params(path: str | Path | None = None) -> KangarooParams:
    """Read and validate a parameter file (default: the packaged ``params.yaml``)."""
    p = Path(path) if path is not None else DEFAULT_PARAMS
    try:
        text = p.read_text()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read parameter file: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: invalid YAML: {exc}") from exc
    return KangarooParams(data, str(p))
