"""``kangaroo-wbc model info|check``: counts and self-consistency of any closed-loop model;
``kangaroo-wbc model generate|ros2-control``: the Kangaroo's model files and ros2_control files,
generated from its parameter file (:mod:`kangaroo_wbc.robots.kangaroo`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from kangaroo_wbc.progress import Progress
from kangaroo_wbc_tools.cli.common import (
    UsageError,
    add_json_flag,
    add_progress_flag,
    input_file,
    output_file,
    output_folder,
    print_json,
    seed,
)


def model_file(text: str):
    """A model file: a readable regular file (else what the path is) holding UTF-8 XML with a
    ``<robot>`` (URDF), ``<mujoco>`` (MJCF) or ``<sdf>`` (SDF) root; otherwise the model layer's
    message says what the file is (:func:`~kangaroo_wbc.model.importers.model_format`)."""
    from kangaroo_wbc.errors import ModelError
    from kangaroo_wbc.model.importers import model_format

    path = input_file(text)
    try:
        model_format(path)
    except ModelError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return path


def _load(args: argparse.Namespace):
    """The model of the command's files. Whatever the files hold, a failure to load them is a
    :class:`~kangaroo_wbc.errors.ModelError` naming the file (exit 2), never an internal error."""
    from kangaroo_wbc.errors import KangarooWbcError, ModelError
    from kangaroo_wbc.model import ClosedLoopModel

    try:
        return ClosedLoopModel.from_files(args.urdf, args.closures, floating_base=args.floating_base,
                                          reference=args.reference, actuated=args.actuated, held=args.hold or ())
    except KangarooWbcError:
        raise
    except (ArithmeticError, AttributeError, LookupError, OSError, RecursionError, RuntimeError, TypeError,
            ValueError) as exc:  # a reader met content it did not foresee: still the file's error
        raise ModelError(f"{args.urdf}: could not load the model: {type(exc).__name__}: {exc}") from exc


def _info(args: argparse.Namespace) -> int:
    clm = _load(args)
    info = clm.info(locked_actuators=args.lock or ())
    if not args.json:
        print(f"model        {info['source']}")
        print(f"joints       {info['n_joints']} ({info['n_actuated']} actuated, {info['n_passive']} passive DOF"
              f"{', locked: ' + str(info['locked_joints']) if info['locked_joints'] else ''})")
        if info["locked_actuators"]:
            print(f"locked       {info['locked_actuators']}: {info['n_dof']} degrees of freedom left")
        print(f"constraints  {info['n_constraints']} independent of {info['n_constraints_declared']} declared")
        print(f"mass         {info['mass_kg']:.3f} kg")
        print(f"reference    closure residual {info['reference_closure_residual']:.3g}"
              f"{' (assembled: every joint moved)' if info['reference_assembled'] else ''}")
        for c in info["couplings"]:
            lead = " + ".join(f"{k:g}*{j}" for j, k in c["leaders"].items()) or "const"
            print(f"coupling     {c['name']}: {' + '.join(f'{k:g}*{j}' for j, k in c['followers'].items())} "
                  f"= p({lead}), a = {c['polynomial']} ({c['source']})")
        for joint, role in info["joint_roles"].items():
            print(f"{'role':<13}{joint}: {role['role']} ({role['why']})")
        for w in info["warnings"]:
            print(f"warning      {w}")
        for r in info["free_rotations"]:
            print(f"free rotation {r['joint']}: {r['free_directions']} direction(s), inertia "
                  f"{r['inertia_about_axes_kg_m2']} kg·m², {r['resolution']}")
        print(f"{'sub-mechanism':<28}{'actuated':>9}{'passive':>9}{'rows':>6}")
        for name, s in info["submechanisms"].items():
            print(f"{name:<28}{s['n_actuated']:>9}{s['n_passive']:>9}{s['n_constraints']:>6}")
    else:
        print_json(info)
    return 0


def _check(args: argparse.Namespace) -> int:
    from kangaroo_wbc.model.checks import run_checks

    clm = _load(args)
    report = {**run_checks(clm, seed=args.seed).as_dict(), "warnings": list(clm.warnings)}
    if not args.json:
        for k, v in report.items():
            print(f"{k:<24}{v}")
    else:
        print_json(report)
    return 0 if report["ok"] else 1


def source_root(what: str) -> Path:
    """The package root the generated files belong to: the source tree the package runs from (the
    generators' ``ROOT``). An installed package has none (its files are installed copies): then the
    folder ``what`` must be named (exit 2)."""
    import kangaroo_wbc

    root = Path(kangaroo_wbc.__file__).resolve().parents[1]
    if not (root / "package.xml").is_file() or not (root / "urdf").is_dir():
        raise UsageError(f"argument {what}: the package does not run from its source tree ({root}); name the "
                         "folder to write into")
    return root


def _report_files(paths: list[Path], args: argparse.Namespace) -> None:
    if args.json:
        print_json({"ok": True, "files": [str(p) for p in paths]})
    else:
        for path in paths:
            print(path)


def _generate(args: argparse.Namespace) -> int:
    from kangaroo_wbc.robots.kangaroo.files import generate
    from kangaroo_wbc.robots.kangaroo.params import load_params

    out = args.dir
    prm = load_params(args.params)
    Progress.from_args(args).note(f"generating the Kangaroo model files from {prm.source} into {out}")
    paths = generate(out, prm, cage=args.cage, mjcf=False if args.no_mjcf else None)
    _report_files(list(paths.values()), args)
    return 0


def _ros2_control(args: argparse.Namespace) -> int:
    from kangaroo_wbc.robots.kangaroo.params import load_params
    from kangaroo_wbc.robots.kangaroo.ros2_control import write, write_hardware_urdf

    prm = load_params(args.params)
    display = Progress.from_args(args)
    if args.hardware_plugin:
        display.note(f"generating the ros2_control URDF for {args.hardware_plugin} into {args.out}")
        paths = [write_hardware_urdf(args.out, args.hardware_plugin, prm, joint_space=args.joint_space or "actuator",
                                     hardware_map=args.hardware_map)]
    else:
        display.note(f"generating the ros2_control files from {prm.source} under {args.root}")
        paths = write(args.root, prm)
    _report_files(paths, args)
    return 0


def _validate_generate(args: argparse.Namespace) -> None:
    if args.dir is None:
        args.dir = source_root("DIR") / "urdf"


def _validate_ros2_control(args: argparse.Namespace) -> None:
    if args.hardware_plugin is None:
        given = [o for o, v in (("--out", args.out), ("--joint-space", args.joint_space),
                                ("--hardware-map", args.hardware_map)) if v is not None]
        if given:
            raise UsageError(f"argument {given[0]}: applies with --hardware-plugin only")
        if args.root is None:
            args.root = source_root("ROOT")
        return
    if not args.hardware_plugin.strip():
        raise UsageError("argument --hardware-plugin: expected a plugin name such as "
                         "gz_ros2_control/GazeboSimSystem, got an empty one")
    if args.out is None:
        raise UsageError("argument --hardware-plugin: needs --out FILE (the URDF to write)")
    if args.root is not None:
        raise UsageError("argument ROOT: not with --hardware-plugin (it writes --out alone)")
    if args.out.parent != Path(""):
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"argument --out: {args.out}: {exc.strerror or exc}") from None


def _register_generators(msub: argparse._SubParsersAction) -> None:
    g = msub.add_parser("generate", help="the Kangaroo's model files from its parameter file (URDF, closures, "
                                         "SDF, serial URDF, MJCF)",
                        description="Generate kangaroo.urdf, kangaroo_closures.yaml, kangaroo.sdf, "
                                    "kangaroo_serial.urdf and kangaroo.xml (MJCF) from the parameter file "
                                    "(urdf/README.md), replacing the files of the same names in DIR.")
    g.add_argument("dir", type=output_folder, nargs="?", default=None, metavar="DIR",
                   help="folder of the files (default: the source tree's urdf/)")
    g.add_argument("--params", type=input_file, default=None, metavar="FILE",
                   help="parameter file (default: the packaged kangaroo_wbc/robots/kangaroo/params.yaml)")
    g.add_argument("--cage", action="store_true", help="include the torso protection cage (+6 kg)")
    g.add_argument("--no-mjcf", action="store_true", help="do not write kangaroo.xml")
    add_json_flag(g)
    add_progress_flag(g)
    g.set_defaults(func=_generate, validate=_validate_generate)
    r = msub.add_parser("ros2-control", help="the Kangaroo's ros2_control files: hardware map, controllers, "
                                             "URDF and Gazebo SDF",
                        description="Generate config/hardware_map.yaml, config/ros2_controllers[_serial].yaml, "
                                    "urdf/kangaroo_ros2_control[_serial].urdf and urdf/kangaroo_gz[_serial].sdf "
                                    "under ROOT from the parameter file (docs/ros2_control.md); with "
                                    "--hardware-plugin, only a URDF for another hardware plugin, to --out.")
    r.add_argument("root", type=output_folder, nargs="?", default=None, metavar="ROOT",
                   help="package root the files are written under (default: the source tree)")
    r.add_argument("--params", type=input_file, default=None, metavar="FILE",
                   help="parameter file (default: the packaged kangaroo_wbc/robots/kangaroo/params.yaml)")
    r.add_argument("--hardware-plugin", default=None, metavar="PLUGIN",
                   help="write only a URDF with this hardware plugin (the robot's own driver) to --out "
                        "(default: gz_ros2_control/GazeboSimSystem in every file)")
    r.add_argument("--joint-space", choices=("actuator", "serial"), default=None,
                   help="with --hardware-plugin: the joint space of the block (default actuator)")
    r.add_argument("--hardware-map", type=input_file, default=None, metavar="FILE",
                   help="with --hardware-plugin: an override of the generated hardware map (merged key by key)")
    r.add_argument("--out", type=output_file, default=None, metavar="FILE",
                   help="with --hardware-plugin: the URDF file to write")
    add_json_flag(r)
    add_progress_flag(r)
    r.set_defaults(func=_ros2_control, validate=_validate_ros2_control)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model", help="inspect and check a closed-loop model (URDF + closures); generate the "
                                     "Kangaroo's files")
    msub = p.add_subparsers(dest="model_command", metavar="ACTION")
    msub.required = True
    for name, func, helptext in (("info", _info, "counts, rank, mass, sub-mechanisms"),
                                 ("check", _check, "closure FK, J_l vs finite differences, power balance")):
        sp = msub.add_parser(name, help=helptext)
        sp.add_argument("urdf", type=model_file, help="URDF spanning tree (or MJCF .xml with equality/connect)")
        sp.add_argument("--closures", type=input_file, default=None,
                        help="closure YAML (native or extended-URDF format)")
        sp.add_argument("--floating-base", action="store_true", help="add a free-flyer root joint")
        sp.add_argument("--seed", type=seed, default=0, help="seed of the random configuration (default 0)")
        sp.add_argument("--reference", type=input_file, default=None, metavar="FILE",
                        help="pose the loops are closed from (YAML or JSON: joint name -> value; default: "
                             "the neutral pose, assembled by moving every joint if it does not close)")
        sp.add_argument("--actuated", action="append", default=None, metavar="JOINT",
                        help="JOINT is actuated (repeatable; replaces the file's actuated joints)")
        sp.add_argument("--hold", action="append", default=None, metavar="JOINT",
                        help="hold JOINT at its reference value: a spring taken as rigid, a lock (repeatable; "
                             "adds to the closure file's held_joints)")
        if name == "info":
            sp.add_argument("--lock", action="append", default=None, metavar="ACTUATOR",
                            help="count ACTUATOR as locked (held at its position); repeatable")
        add_json_flag(sp)
        sp.set_defaults(func=func)
    _register_generators(msub)
