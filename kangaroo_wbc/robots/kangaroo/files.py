"""Generate every Kangaroo model file from the parameters (the committed ``urdf/`` folder).

``generate(out_dir)`` writes:

* ``kangaroo.urdf`` — the cut spanning tree (fixed root ``base_link``; loaders add the free flyer);
* ``kangaroo_closures.yaml`` — loop closures, actuators, encoders (``docs/closures_format.md``);
* ``kangaroo.sdf`` — SDF 1.7 with the loops closed by the cut joints (Gazebo Classic);
* ``kangaroo_serial.urdf`` — the serial twin (6 revolute joints per leg);
* ``kangaroo.xml`` — MJCF for the MuJoCo simulator, through
  :func:`kangaroo_wbc.robots.kangaroo.sim.export_kangaroo_mjcf` (skipped when the exporter is absent).

:func:`kangaroo_files` finds the generated ``kangaroo.urdf`` / ``kangaroo_closures.yaml`` at run time.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pinocchio as pin
import yaml

from kangaroo_wbc.errors import ConfigError
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.closures import parse_native
from kangaroo_wbc.robots.kangaroo.closures_writer import write_closures
from kangaroo_wbc.robots.kangaroo.generator import build
from kangaroo_wbc.robots.kangaroo.params import KangarooParams, load_params
from kangaroo_wbc.robots.kangaroo.sdf_writer import write_sdf
from kangaroo_wbc.robots.kangaroo.serial_twin import build_serial
from kangaroo_wbc.robots.kangaroo.urdf_writer import write_urdf

FILE_NAMES = {
    "urdf": "kangaroo.urdf",
    "closures": "kangaroo_closures.yaml",
    "sdf": "kangaroo.sdf",
    "serial_urdf": "kangaroo_serial.urdf",
    "mjcf": "kangaroo.xml",
}

HEADER = """\
Kangaroo lower body ({what}), GENERATED - do not edit.
Source: kangaroo_wbc/robots/kangaroo/params.yaml; regenerate with
  kangaroo-wbc model generate
Design and origin of the numbers: urdf/README.md. Mass {mass:.3f} kg{cage}.
"""


def kangaroo_files(urdf_dir: str | Path | None = None) -> tuple[Path, Path]:
    """``(kangaroo.urdf, kangaroo_closures.yaml)`` from ``urdf_dir`` if given (no fallback: a folder
    without them is a ConfigError naming the missing files), else from the source tree's ``urdf/`` or
    the installed share."""
    if urdf_dir is not None:
        urdf, closures = (Path(urdf_dir) / FILE_NAMES[k] for k in ("urdf", "closures"))
        missing = [str(f) for f in (urdf, closures) if not f.is_file()]
        if missing:
            raise ConfigError(f"model file(s) not found: {missing}")
        return urdf, closures
    candidates = [Path(__file__).resolve().parents[3] / "urdf"]
    try:  # installed ROS 2 package
        from ament_index_python.packages import get_package_share_directory

        candidates.append(Path(get_package_share_directory("kangaroo_wbc")) / "urdf")
    except Exception:  # noqa: BLE001 - not in a ROS environment, or the package is not installed
        pass
    for d in candidates:
        urdf, closures = d / "kangaroo.urdf", d / "kangaroo_closures.yaml"
        if urdf.is_file() and closures.is_file():
            return urdf, closures
    raise ConfigError(f"kangaroo.urdf / kangaroo_closures.yaml not found in {[str(c) for c in candidates]}")


def standing_configuration(clm: ClosedLoopModel, prm: KangarooParams) -> np.ndarray:
    """Closed configuration of ``clm`` at the standing-pose actuator positions of ``prm``."""
    pose = prm.standing_actuators()
    theta = np.array([pose[name.split("_", 1)[1].removesuffix("_actuator")] for name in clm.actuated_joint_names])
    q, _ = clm.closure_fk(theta, clm.q_ref)
    return q


def _load_from_texts(urdf: str, closures: str) -> ClosedLoopModel:
    model = pin.buildModelFromXML(urdf)
    return ClosedLoopModel(model, parse_native(yaml.safe_load(closures), "<generated>"), source="<generated>")


def _mjcf_exporter():
    """The Kangaroo MJCF export function, or None while the simulator package is not available."""
    try:
        from kangaroo_wbc.robots.kangaroo.sim import export_kangaroo_mjcf
    except ImportError:
        return None
    return export_kangaroo_mjcf


def generate_texts(params: KangarooParams | None = None, cage: bool = False, mjcf: bool | None = None
                   ) -> dict[str, str]:
    """Texts of every model file, keyed by :data:`FILE_NAMES` keys.

    Args:
        params: generator parameters (default: the packaged ``params.yaml``).
        cage: include the torso protection cage (+6 kg).
        mjcf: also export MJCF; ``None`` = when :mod:`kangaroo_wbc.robots.kangaroo.sim` is importable.
    """
    prm = params or load_params()
    desc = build(prm, cage=cage)
    cage_txt = ", with torso cage" if cage else ", without torso cage"
    texts = {
        "urdf": write_urdf(desc, HEADER.format(what="full closed-chain model, cut spanning tree",
                                               mass=desc.total_mass, cage=cage_txt)),
        "closures": write_closures(desc, HEADER.format(what="loop closures of kangaroo.urdf",
                                                       mass=desc.total_mass, cage=cage_txt)),
        "sdf": write_sdf(desc, HEADER.format(what="SDF 1.7, loops closed by the cut joints",
                                             mass=desc.total_mass, cage=cage_txt)),
    }
    clm = _load_from_texts(texts["urdf"], texts["closures"])
    serial = build_serial(desc, clm, standing_configuration(clm, prm))
    texts["serial_urdf"] = write_urdf(serial, HEADER.format(
        what="serial twin: 6 revolute joints per leg, inertias lumped at the standing pose",
        mass=serial.total_mass, cage=cage_txt))
    exporter = _mjcf_exporter() if mjcf is not False else None
    if mjcf and exporter is None:
        raise ImportError("MJCF requested but kangaroo_wbc.robots.kangaroo.sim.export_kangaroo_mjcf is not available")
    if exporter is not None:
        with tempfile.TemporaryDirectory() as tmp:
            u, c = Path(tmp) / FILE_NAMES["urdf"], Path(tmp) / FILE_NAMES["closures"]
            u.write_text(texts["urdf"])
            c.write_text(texts["closures"])
            texts["mjcf"] = exporter(u, c, floating_base=True)
    return texts


def generate(out_dir: str | Path, params: KangarooParams | None = None, cage: bool = False,
             mjcf: bool | None = None) -> dict[str, Path]:
    """Write every model file into ``out_dir``; returns the paths keyed like :data:`FILE_NAMES`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for key, text in generate_texts(params, cage=cage, mjcf=mjcf).items():
        paths[key] = out / FILE_NAMES[key]
        paths[key].write_text(text)
    return paths
