"""``kangaroo-wbc model info|check``: counts and self-consistency of any closed-loop model."""

from __future__ import annotations

import argparse

from kangaroo_wbc_tools.cli.common import add_json_flag, input_file, print_json, seed


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


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model", help="inspect and check a closed-loop model (URDF + closures)")
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
