"""Benchmark workloads: the models and the smooth actuator trajectories they are driven along.

Inputs change on every call, as on the robot: a sum of sines per actuator sampled at
``rate_hz`` starting at the reference closed configuration, so that a warm-started solver sees
the increments of a 1 kHz control loop, never the same state twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kangaroo_wbc.errors import ClosureFkError, KangarooWbcError
from kangaroo_wbc.model import ClosedLoopModel

#: Repository root (``urdf/`` and ``test/data/`` live there in a source checkout).
REPO_ROOT = Path(__file__).resolve().parents[2]

#: Third-party closed-chain fixtures (extended-URDF convention): ``<dir>/<name>/robot.urdf|yaml``.
THIRD_PARTY_MODELS = ("digit_like_2legs", "5bar_linkage")

#: Environment variable naming the third-party fixture folder (default: ``../shared/fixtures/third_party``
#: next to the repository).
FIXTURES_ENV = "KANGAROO_WBC_FIXTURES"

#: Default amplitudes of the actuator trajectory: revolute [rad], prismatic (ball screw) [m].
AMPLITUDE_REVOLUTE_RAD = 0.05
AMPLITUDE_PRISMATIC_M = 0.004


@dataclass
class ModelSpec:
    """Where a benchmark model comes from."""

    name: str
    urdf: Path
    closures: Path
    kind: str  # "kangaroo" | "third_party" | "test_data"


@dataclass
class Trajectory:
    """Actuator positions [m or rad], velocities and accelerations, one row per sample."""

    theta_a: np.ndarray
    theta_dot_a: np.ndarray
    theta_ddot_a: np.ndarray
    rate_hz: float
    amplitude: np.ndarray
    frequency_hz: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return int(self.theta_a.shape[0])


def fixtures_dir(explicit: str | Path | None = None) -> Path | None:
    """The third-party fixture folder: ``explicit``, else ``$KANGAROO_WBC_FIXTURES``, else the
    ``shared/fixtures/third_party`` folder beside the repository; ``None`` when absent."""
    if explicit is not None:
        return Path(explicit) if Path(explicit).is_dir() else None
    for cand in (os.environ.get(FIXTURES_ENV), REPO_ROOT.parent / "shared" / "fixtures" / "third_party"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return None


def available_models(fixtures: str | Path | None = None,
                     kangaroo_dir: str | Path | None = None) -> tuple[list[ModelSpec], dict[str, str]]:
    """Benchmark models found on this checkout, and the reason for each one missing.

    The Kangaroo model is read from ``kangaroo_dir`` (default: the repository's ``urdf/``).
    """
    specs: list[ModelSpec] = []
    missing: dict[str, str] = {}
    folder_k = Path(kangaroo_dir) if kangaroo_dir is not None else REPO_ROOT / "urdf"
    urdf, closures = folder_k / "kangaroo.urdf", folder_k / "kangaroo_closures.yaml"
    if urdf.is_file() and closures.is_file():
        specs.append(ModelSpec("kangaroo", urdf, closures, "kangaroo"))
    else:
        missing["kangaroo"] = (f"kangaroo.urdf or kangaroo_closures.yaml not found in {folder_k.name}/ "
                               "(generate with: kangaroo-wbc model generate)")
    folder = fixtures_dir(fixtures)
    for name in THIRD_PARTY_MODELS:
        d = folder / name if folder else None
        if d is not None and (d / "robot.urdf").is_file() and (d / "robot.yaml").is_file():
            specs.append(ModelSpec(name, d / "robot.urdf", d / "robot.yaml", "third_party"))
        else:
            missing[name] = (f"third-party fixture folder not found (pass --fixtures or set {FIXTURES_ENV})"
                             if folder is None else f"{name} not in {folder.name}/")
    four_bar = REPO_ROOT / "test" / "data" / "four_bar.urdf"
    if not specs and four_bar.is_file():
        specs.append(ModelSpec("four_bar", four_bar, four_bar.with_name("four_bar_closures.yaml"), "test_data"))
    return specs, missing


def load_model(spec: ModelSpec) -> ClosedLoopModel:
    """Load a benchmark model (fixed base: the closures do not depend on the base)."""
    return ClosedLoopModel.from_files(spec.urdf, spec.closures, floating_base=False)


def _is_prismatic(clm: ClosedLoopModel, name: str) -> bool:
    short = clm.model.joints[clm.model.getJointId(name)].shortname()
    return "Prismatic" in short or short.startswith("JointModelP")


def actuator_trajectory(clm: ClosedLoopModel, n: int, rate_hz: float = 1000.0, scale: float = 1.0,
                        seed: int = 0) -> Trajectory:
    """Smooth actuator trajectory of ``n`` samples starting at the reference closed configuration.

    Actuator ``i`` follows ``A_i (sin(2 pi f_i t + phi_i) - sin(phi_i))`` around its reference value
    with ``f_i`` spread over 0.5–2 Hz and random phases; ``A_i`` is the default amplitude times
    ``scale``, kept within 20 % of the distance to the joint limits when the limits are finite.
    """
    m = clm.model
    rng = np.random.default_rng(seed)
    theta_ref = clm.actuator_positions(clm.q_ref)
    amp = np.array([AMPLITUDE_PRISMATIC_M if _is_prismatic(clm, n_) else AMPLITUDE_REVOLUTE_RAD
                    for n_ in clm.actuated_joint_names]) * scale
    lo, hi = m.lowerPositionLimit[clm.idx_q_a], m.upperPositionLimit[clm.idx_q_a]
    room = np.minimum(theta_ref - lo, hi - theta_ref)
    limited = np.isfinite(room) & (room > 0) & (hi - lo < 1e6)
    amp[limited] = np.minimum(amp[limited], 0.2 * room[limited])
    freq = np.linspace(0.5, 2.0, clm.n_a) if clm.n_a > 1 else np.array([1.0])
    phase = rng.uniform(0.0, 2.0 * np.pi, clm.n_a)
    t = np.arange(n)[:, None] / rate_hz
    w = 2.0 * np.pi * freq
    arg = w * t + phase
    theta = theta_ref + amp * (np.sin(arg) - np.sin(phase))
    return Trajectory(theta, amp * w * np.cos(arg), -amp * w**2 * np.sin(arg), rate_hz, amp, freq)


def closed_states(clm: ClosedLoopModel, traj: Trajectory) -> list[np.ndarray]:
    """Closed configurations along ``traj`` (closure FK warm-started sample to sample)."""
    q = clm.q_ref.copy()
    out = []
    for theta in traj.theta_a:
        q, _ = clm.closure_fk(theta, q_guess=q)
        out.append(q)
    return out


def reachable_trajectory(clm: ClosedLoopModel, n: int, rate_hz: float = 1000.0,
                         seed: int = 0) -> tuple[Trajectory, list[np.ndarray]]:
    """A trajectory whose every sample has a closed configuration (amplitude halved until so)."""
    scale = 1.0
    last_exc: KangarooWbcError | None = None
    for _ in range(5):
        traj = actuator_trajectory(clm, n, rate_hz, scale, seed)
        try:
            return traj, closed_states(clm, traj)
        except ClosureFkError as exc:
            last_exc = exc
            scale *= 0.5
    raise ClosureFkError(f"no reachable actuator trajectory around the reference configuration: {last_exc}")
