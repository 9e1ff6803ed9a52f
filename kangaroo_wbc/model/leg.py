"""Names that describe one leg of a closed-chain biped (robot-agnostic data).

A robot package fills one :class:`LegSpec` per leg (for Kangaroo:
:func:`kangaroo_wbc.robots.kangaroo.robot.leg_spec`); the mechanism analysis reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LegSpec:
    """Names that describe one leg of a closed-chain biped."""

    side: str
    actuators: dict[str, list[str]]  # sub-mechanism → actuated joints (e.g. "knee": [...])
    hip_outputs: list[str]  # passive joints (roll, pitch) of the hip
    ankle_outputs: list[str]  # passive joints (roll, pitch) of the ankle
    knee_actuator: str
    sole_frame: str
    base_frame: str = "base_link"
    max_force_n: dict[str, float] = field(default_factory=dict)

    @property
    def all_actuators(self) -> list[str]:
        return [a for acts in self.actuators.values() for a in acts]
