"""``kangaroo-wbc demo`` and ``kangaroo-wbc evaluate estimation``: the closed loop in simulation.

``--processes one`` (default) chains the components in this process and writes, into ``--out``,
the report (``report.md``, figures, ``summary.json``) and a ROS 2 bag (``bag/``).
``--processes separate|composed`` runs the node graph over DDS and writes ``summary.json`` and the
nodes' logs (``logs/``); it records no bag (``ros2 bag record`` does, on the live topics). Every
option either applies to the deployment chosen or is refused before anything runs.

SIGINT / SIGTERM stop the run at the next tick boundary; what ran so far is reported and written
(``"interrupted": true``) and the exit code is 130 / 143.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import cast

from kangaroo_wbc.progress import Progress
from kangaroo_wbc_tools.cli.common import (
    BEHAVIOURS,
    MAX_DURATION_S,
    MAX_STARTUP_TIMEOUT_S,
    TICK_S,
    Interrupted,
    StopSignals,
    UsageError,
    add_behaviour_option,
    add_json_flag,
    add_out_options,
    add_plot_option,
    add_progress_flag,
    duration,
    fail,
    fault_spec,
    fraction,
    make_plot_folder,
    number_in,
    payload_spec,
    prepare_output_folder,
    print_result,
    push_spec,
    seed,
    startup_timeout,
    velocity_command,
    write_json,
)

DEFAULT_OUT = "reports/demo"
DEFAULT_SIM_MODE = "lockstep"
DEFAULT_STARTUP_TIMEOUT_S = 120.0
DEFAULT_BAG_DECIMATION = 1
#: A bag of one tick in a million (one message every 17 min of simulated time) records nothing of use.
MAX_BAG_DECIMATION = 1_000_000

#: Options of one deployment only: (dest, flag, deployments that take it).
_GRAPH = ("separate", "composed")
_ONLY = (("sim_mode", "--sim-mode", _GRAPH), ("drop_ratio", "--drop-ratio", _GRAPH),
         ("startup_timeout", "--startup-timeout", _GRAPH), ("pipelined", "--pipelined", ("one",)),
         ("bag_decimation", "--bag-decimation", ("one",)), ("push", "--push", ("one",)))
#: the walk's command when --cmd-vel is not given [m/s, m/s, rad/s]
DEFAULT_CMD_VEL = (0.3, 0.0, 0.0)


def rig_name(text: str) -> str:
    """A test-bench configuration of ``--rig`` (:data:`~kangaroo_wbc.robots.kangaroo.rig.RIGS`)."""
    from kangaroo_wbc.robots.kangaroo.rig import RIGS

    if text not in RIGS:
        raise argparse.ArgumentTypeError(f"unknown rig {text!r} (choose from {', '.join(RIGS)})")
    return text


#: Options the test bench (``--rig``) does not take: (dest, flag, value that means "not given").
_NOT_ON_RIG = (("cmd_vel", "--cmd-vel", None), ("push", "--push", None), ("fault", "--fault", None),
               ("payload", "--payload", None), ("payload_unannounced", "--payload-unannounced", False),
               ("identify_payload", "--identify-payload", False), ("pipelined", "--pipelined", False),
               ("bag_decimation", "--bag-decimation", None))


def _validate_rig(args: argparse.Namespace) -> None:
    """``--rig``: the bench, with its own behaviour (any deployment)."""
    if args.behaviour != "stand":
        raise UsageError("kangaroo-wbc demo: error: --behaviour with --rig: the bench runs its own behaviour "
                         "(the sole circles in the air, then presses the force plate)")
    for dest, flag, absent in _NOT_ON_RIG:
        if getattr(args, dest, absent) not in (absent, None):
            raise UsageError(f"kangaroo-wbc demo: error: {flag} does not apply to --rig")


def _body_masses() -> dict[str, float]:
    """Every link of the Kangaroo's URDF with the mass [kg] of the rigid body it belongs to (links
    joined by fixed joints are one body, as in the model and the simulator); read as XML: no model
    is built before the run."""
    import xml.etree.ElementTree as ET

    from kangaroo_wbc.robots.kangaroo.files import kangaroo_files

    root = ET.parse(str(kangaroo_files()[0])).getroot()
    mass = {}
    for link in root.findall("link"):
        m = link.find("inertial/mass")
        mass[str(link.get("name"))] = float(m.get("value", 0.0)) if m is not None else 0.0
    parent = {}  # child link -> parent link across a fixed joint
    for joint in root.findall("joint"):
        if joint.get("type") == "fixed":
            # a URDF joint has a child and a parent element
            child, par = cast(ET.Element, joint.find("child")), cast(ET.Element, joint.find("parent"))
            parent[str(child.get("link"))] = str(par.get("link"))

    def body(link: str) -> str:
        while link in parent:
            link = parent[link]
        return link

    totals: dict[str, float] = {}
    for name, kg in mass.items():
        totals[body(name)] = totals.get(body(name), 0.0) + kg
    return {link: totals[body(link)] for link in mass}


def _check_faults(faults: list[tuple[str, str, float]]) -> None:
    """Known actuators, each named once (lock and limp of one actuator: which one should win?)."""
    from kangaroo_wbc.errors import suggest
    from kangaroo_wbc.robots.kangaroo.generator import actuated_joints

    names = actuated_joints("left") + actuated_joints("right")
    seen: dict[str, str] = {}
    for mode, name, at in faults:
        if name not in names:
            raise UsageError(f"kangaroo-wbc demo: error: --fault: unknown actuator {name!r}." + suggest(name, names))
        if name in seen:
            raise UsageError(f"kangaroo-wbc demo: error: --fault: actuator {name!r} given twice ({seen[name]} and "
                             f"{mode} at {at:g} s): one fault per actuator")
        seen[name] = f"{mode} at {at:g} s"


def _check_payloads(payloads: list[tuple[float, str, float]]) -> None:
    """Known links, and no removal leaving a body without mass at any time."""
    from kangaroo_wbc.components.simulated_robot import payload_link
    from kangaroo_wbc.errors import suggest

    masses = _body_masses()
    carried: dict[str, float] = {}
    for mass, name, at in sorted(payloads, key=lambda p: p[2]):
        link = payload_link(name)
        if link not in masses:
            raise UsageError(f"kangaroo-wbc demo: error: --payload: unknown link {name!r} (torso: base_link)."
                             + suggest(name, list(masses)))
        carried[link] = carried.get(link, 0.0) + mass
        if masses[link] + carried[link] <= 0.0:
            raise UsageError(f"kangaroo-wbc demo: error: --payload {mass:g}kg@{name}@{at:g}: the body of {link!r} "
                             f"weighs {masses[link]:.3f} kg; removing {-carried[link]:g} kg leaves it without mass")


def _cmd_vel_record(args: argparse.Namespace) -> dict:
    """The walk's command as asked and as the walk applies it (clipped to the gait's limits: a
    warning on stderr); empty for the other behaviours."""
    if args.behaviour != "walk":
        return {}
    from kangaroo_wbc.control.behaviours import GaitSettings

    asked = tuple(float(v) for v in (args.cmd_vel or DEFAULT_CMD_VEL))
    g = GaitSettings()
    limits = (g.max_forward_mps, g.max_lateral_mps, g.max_yaw_rate_radps)
    applied = tuple(min(max(v, -lim), lim) for v, lim in zip(asked, limits))
    if applied != asked:
        print(f"kangaroo-wbc demo: warning: --cmd-vel {','.join(f'{v:g}' for v in asked)} is beyond the walk's "
              f"limits (|vx| <= {limits[0]:g} m/s, |vy| <= {limits[1]:g} m/s, |wz| <= {limits[2]:g} rad/s): the "
              f"walk runs at {','.join(f'{v:g}' for v in applied)}", file=sys.stderr, flush=True)
    return {"cmd_vel": list(asked), "cmd_vel_applied": list(applied), "cmd_vel_clipped": applied != asked}


def _writes(args: argparse.Namespace) -> bool:
    """Whether the run writes into ``--out``."""
    if getattr(args, "rig", None) is not None:  # the bench: summary.json only
        return not args.no_report
    return not args.no_report or (args.processes == "one" and not args.no_bag)


def _validate_demo(args: argparse.Namespace) -> None:
    """Option combinations and the output folder, before anything runs."""
    if getattr(args, "rig", None) is not None:
        _validate_rig(args)
    for dest, flag, deployments in _ONLY:
        value = getattr(args, dest)
        if value not in (None, False) and args.processes not in deployments:
            raise UsageError(f"kangaroo-wbc demo: error: {flag} applies to --processes {'|'.join(deployments)} "
                             f"only, not {args.processes}")
    if getattr(args, "joint_space", None) is not None and getattr(args, "backend", None) != "ros2_control":
        raise UsageError("kangaroo-wbc demo: error: --joint-space applies to --backend ros2_control only")
    if getattr(args, "backend", None) == "ros2_control" and getattr(args, "rig", None) is not None:
        raise UsageError("kangaroo-wbc demo: error: --backend ros2_control drives the robot, not a --rig")
    if args.cmd_vel is not None and args.behaviour != "walk":
        raise UsageError(f"kangaroo-wbc demo: error: --cmd-vel applies to --behaviour walk only, not {args.behaviour}")
    if args.no_bag and args.bag_decimation is not None:
        raise UsageError("kangaroo-wbc demo: error: --bag-decimation with --no-bag: there is no bag")
    if args.processes in _GRAPH and args.behaviour == "push":
        raise UsageError("kangaroo-wbc demo: error: --behaviour push needs --processes one (the push is applied "
                         "by the one-process loop; the sim node applies none)")
    if getattr(args, "fault", None):
        _check_faults(args.fault)
    if getattr(args, "payload_unannounced", False) and not getattr(args, "payload", None):
        raise UsageError("kangaroo-wbc demo: error: --payload-unannounced needs --payload (the payloads the "
                         "model is not told about)")
    if getattr(args, "payload", None):
        _check_payloads(args.payload)
    if _writes(args):
        prepare_output_folder(args.out, args.force)


def _loop(args: argparse.Namespace, behaviour: str, stop: StopSignals):
    from kangaroo_wbc.components.simulated_robot import SimulatedRobotConfig
    from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    robot = SimulatedRobotConfig(ideal_actuators=bool(getattr(args, "ideal_actuators", False)))
    push = getattr(args, "push", None)
    extra = {} if push is None else {"push": True, "push_force_n": push[0], "push_delay_s": push[1]}
    extra["faults"] = tuple(getattr(args, "fault", None) or ())
    extra["payloads"] = tuple(getattr(args, "payload", None) or ())
    extra.update(_payload_options(args))
    run = ClosedLoopRun(LoopConfig(behaviour=behaviour, duration_s=args.duration, seed=args.seed,
                                   pipelined=bool(getattr(args, "pipelined", False)), robot=robot,
                                   behaviour_options=_behaviour_options(args), **_hardware(args), **extra))
    summary = run.run(progress=Progress.from_args(args), stop=stop)
    summary["requested_duration_s"] = args.duration
    summary.update(_hardware(args))
    return summary, run


def _hardware(args: argparse.Namespace) -> dict:
    """``interface`` and ``joint_space`` of the run (``--backend``, ``--joint-space``), the names of
    :class:`~kangaroo_wbc_tools.pipeline.closed_loop.LoopConfig` and
    :func:`~kangaroo_wbc_tools.graph.processes.run_graph`."""
    return {"interface": getattr(args, "backend", None) or "native",
            "joint_space": getattr(args, "joint_space", None) or "actuator"}


def _payload_options(args: argparse.Namespace) -> dict:
    """``payload_unannounced`` and ``payload_identification`` (None: on with payloads) of the run,
    the names of :class:`~kangaroo_wbc_tools.pipeline.closed_loop.LoopConfig` and
    :func:`~kangaroo_wbc_tools.graph.processes.run_graph` alike."""
    return {"payload_unannounced": bool(getattr(args, "payload_unannounced", False)),
            "payload_identification": True if getattr(args, "identify_payload", False) else None}


def _behaviour_options(args: argparse.Namespace) -> dict:
    """The behaviour's parameters from the command line (the walk's command)."""
    if args.behaviour == "walk":
        return {"cmd_vel": getattr(args, "cmd_vel", None) or DEFAULT_CMD_VEL}
    return {}


def _demo_graph(args: argparse.Namespace) -> int:
    from kangaroo_wbc_tools.graph.processes import GraphStartError, run_graph

    out = args.out if _writes(args) else None
    cmd_vel = _cmd_vel_record(args)
    with StopSignals(phase="start-up") as stop:
        try:
            summary = run_graph(processes=args.processes, duration_s=args.duration,
                                behaviour=BEHAVIOURS[args.behaviour], sim_mode=args.sim_mode or DEFAULT_SIM_MODE,
                                drop_ratio=args.drop_ratio or 0.0, seed=args.seed,
                                startup_timeout_s=args.startup_timeout or DEFAULT_STARTUP_TIMEOUT_S,
                                progress=Progress.from_args(args), stop=stop,
                                log_dir=None if out is None else out / "logs",
                                controller_params={k: list(v) for k, v in _behaviour_options(args).items()},
                                faults=tuple(args.fault or ()), payloads=tuple(args.payload or ()),
                                rig=args.rig or "", ideal_actuators=bool(args.ideal_actuators),
                                when_ready=lambda: setattr(stop, "phase", "run"), **_hardware(args),
                                **_payload_options(args))
        except (GraphStartError, Interrupted) as exc:
            what = (f"interrupted ({signal.Signals(cast(int, stop.signum)).name}) before the controller was ready"
                    if stop.interrupted else str(exc))
            fail(f"kangaroo-wbc demo: error: {what}", args.json)
            if out is not None:  # what there is: the graph never became ready
                stop.phase = "writing summary"
                write_json(out / "summary.json", stop.record({
                    "ok": False, "ready": False, "error": what, "processes": args.processes,
                    "behaviour": args.behaviour, "seed": args.seed,
                    "exit_codes": getattr(exc, "exit_codes", {}), "logs": str(out / "logs")}))
            return stop.exit_code or 1
        stop.phase = "writing summary"
        summary["behaviour"] = "rig" if args.rig else args.behaviour  # the command line's name (BEHAVIOURS[...] ran)
        summary["seed"] = args.seed
        summary["ready"] = True
        summary.update(cmd_vel)
        summary.update(_hardware(args))
        stop.record(summary)
        if out is not None:
            write_json(out / "summary.json", summary)
            summary["report_files"] = ["summary.json", "logs"]
    print_result(summary, args.json)
    if stop.interrupted:
        assert stop.exit_code is not None  # interrupted: an exit code
        return stop.exit_code
    if args.rig is not None:  # the bench cannot fall (its pelvis is clamped)
        return 0
    return 1 if summary.get("fell") is not False else 0


def _demo_rig(args: argparse.Namespace) -> int:
    """``--rig``: the bench in one process (:mod:`kangaroo_wbc_tools.pipeline.rig`); ``summary.json`` in ``--out``."""
    from kangaroo_wbc_tools.pipeline.rig import RigConfig, RigRun

    with StopSignals() as stop:
        run = RigRun(RigConfig(rig=args.rig, duration_s=args.duration, seed=args.seed,
                               ideal_actuators=bool(args.ideal_actuators)))
        summary = run.run(progress=Progress.from_args(args), stop=stop)
        summary.update(requested_duration_s=args.duration, seed=args.seed)
        stop.phase = "writing summary"
        stop.record(summary)
        if not args.no_report:
            write_json(args.out / "summary.json", summary)
            summary["report_files"] = ["summary.json"]
    print_result(summary, args.json)
    return cast(int, stop.exit_code) if stop.interrupted else 0  # interrupted: an exit code


def _demo(args: argparse.Namespace) -> int:
    if args.processes in _GRAPH:
        return _demo_graph(args)
    if args.rig is not None:
        return _demo_rig(args)
    out = args.out
    progress = Progress.from_args(args)
    cmd_vel = _cmd_vel_record(args)
    with StopSignals() as stop:
        summary, run = _loop(args, args.behaviour, stop)
        summary.update(cmd_vel)
        if not args.no_report:  # an interrupted run too: the report covers the ticks run
            from kangaroo_wbc_tools.pipeline.report import write_report

            stop.phase = "writing figures"
            progress.note(f"writing figures and the report into {out}")
            summary["report_files"] = write_report(out, run, summary)
        if not args.no_bag:
            from kangaroo_wbc_tools.pipeline.bag import write_run_bag

            stop.phase = "writing bag"
            counts = write_run_bag(out / "bag", run, decimation=args.bag_decimation or DEFAULT_BAG_DECIMATION,
                                   progress=progress)
            summary["bag"] = str(out / "bag")
            summary["bag_messages"] = sum(counts.values())
            summary["bag_complete"] = counts.complete  # False: a signal ended the writing early
        stop.phase = "writing summary"
        stop.record(summary)
        if not args.no_report:  # the final word: what the report's summary.json could not know yet
            write_json(out / "summary.json", summary)
    print_result(summary, args.json)
    if stop.interrupted:
        assert stop.exit_code is not None  # interrupted: an exit code
        return stop.exit_code
    return 1 if summary["fell"] else 0


def _evaluate(args: argparse.Namespace) -> int:
    """Realistic then ideal actuators (``--ideal-actuators``: ideal only); the estimator variants'
    table (``kangaroo_wbc_tools.pipeline.estimation_eval``)."""
    from kangaroo_wbc_tools.pipeline.estimation_eval import (
        evaluate_estimation,
        plot_table,
        table_markdown,
    )

    kinds = ("ideal",) if args.ideal_actuators else ("realistic", "ideal")
    with StopSignals() as stop:
        result = evaluate_estimation(args.duration, args.seed, progress=Progress.from_args(args), stop=stop,
                                     actuators=kinds)
        if args.plot is not None:
            stop.phase = "writing figures"
            plot_table(result["table"], args.plot)
            result["plot"] = str(args.plot)
        stop.record(result)
    if args.json:
        print_result(result, True)
    else:
        print_result({k: v for k, v in result.items() if k != "table"}, False)
        print(table_markdown(result["table"]))
    return stop.exit_code or 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="closed-loop demo in the MuJoCo simulator (estimators + WBC in the loop)",
                       description=__doc__.split("\n\n", 1)[1])
    add_behaviour_option(p)
    p.add_argument("--cmd-vel", type=velocity_command, default=None, metavar="VX,VY,WZ",
                   help="walk: velocity command [m/s, m/s, rad/s], x forward, y left (default "
                        f"{','.join(f'{v:g}' for v in DEFAULT_CMD_VEL)}); the node takes it as its cmd_vel parameter")
    p.add_argument("--push", type=push_spec, default=None, metavar="FORCE@T",
                   help="one: push the pelvis sideways (world +y) with FORCE [N] for 0.1 s, T [s] after the "
                        "behaviour starts, e.g. 40N@5s (the push behaviour: 50N@1s by default)")
    p.add_argument("--fault", type=fault_spec, action="append", default=None, metavar="MODE:ACTUATOR@T",
                   help="lock (seized screw, brake) or limp (failed driver) an actuator T [s] after the "
                        "behaviour starts, e.g. lock:left_ankle_inner_actuator@3; repeatable; separate/composed: "
                        "the sim node's faults parameter, then the controller's locked_actuators/limp_actuators "
                        "parameters as an operator would set them (docs/morphology.md)")
    p.add_argument("--payload", type=payload_spec, action="append", default=None, metavar="MASS@LINK@T",
                   help="attach a point mass at LINK's centre of mass T [s] after the behaviour starts "
                        "(torso: the base link; negative: remove), e.g. 6kg@torso@4; repeatable; separate/composed: "
                        "the sim node's payloads parameter, then the controller's payloads parameter as an "
                        "operator would set it (docs/morphology.md)")
    p.add_argument("--payload-unannounced", action="store_true",
                   help="the --payload masses go on the simulated robot only: the model is not told (separate/"
                        "composed: the controller's payloads parameter is not set); the payload identification "
                        "finds them (docs/estimation.md)")
    p.add_argument("--identify-payload", action="store_true",
                   help="identify an unmodelled payload while the robot stands still, even without --payload "
                        "(default: on with --payload); separate/composed: the wrench estimator's "
                        "payload_identification parameter, the estimate on payload/identified (docs/estimation.md)")
    p.add_argument("--rig", type=rig_name, default=None, metavar="NAME",
                   help="a test bench instead of the free robot: one_leg (one leg, the pelvis clamped, a force "
                        "plate under the foot: the sole circles in the air, then presses the plate with 200 N; "
                        "docs/morphology.md); summary.json only (separate/composed: every node's rig parameter, "
                        "and the nodes' logs)")
    p.add_argument("--duration", type=duration, default=10.0, metavar="S",
                   help=f"simulated time after boot [s], {TICK_S:g} to {MAX_DURATION_S:g} (separate/composed realtime: "
                        "wall time) (default 10)")
    p.add_argument("--seed", type=seed, default=0, help="simulator seed: sensor noise, encoder offsets (default 0)")
    add_out_options(p, DEFAULT_OUT, "result folder: report, figures, summary.json and bag (separate/composed: "
                                    "summary.json and the nodes' logs)")
    p.add_argument("--processes", default="one", choices=["one", "separate", "composed"],
                   help="one: the components chained in this process, no ROS (report, bag); separate: the four "
                        "node processes over DDS; composed: the composed executable (one process, contract topics "
                        "published) (default one)")
    p.add_argument("--backend", default=None, choices=["native", "ros2_control"],
                   help="the hardware interface between the simulator and the nodes: native (the package's topic "
                        "contract) or ros2_control (the simulator as joint_state_broadcaster, imu_sensor_broadcaster "
                        "and the leg effort controllers; one: converted in-process through the same boundary; "
                        "docs/ros2_control.md) (default native)")
    p.add_argument("--joint-space", default=None, choices=["actuator", "serial"],
                   help="--backend ros2_control: the joints the hardware exposes, actuator (the 12 actuators) or "
                        "serial (six serial-equivalent joints per leg, PAL's names) (default actuator)")
    p.add_argument("--sim-mode", default=None, choices=["lockstep", "realtime"],
                   help="separate/composed: lockstep (once the controller is ready, one 1 ms step per command; "
                        "--duration is simulated time) or realtime (the simulator follows the wall clock) "
                        f"(default {DEFAULT_SIM_MODE})")
    p.add_argument("--drop-ratio", type=fraction, default=None, metavar="X",
                   help="separate/composed: the simulator drops this fraction of the commands, 0 <= X < 1 "
                        "(default 0)")
    p.add_argument("--startup-timeout", type=startup_timeout, default=None, metavar="S",
                   help=f"separate/composed: wall time [s] for the controller to become ready, > 0 and <= "
                        f"{MAX_STARTUP_TIMEOUT_S:g} "
                        f"(default {DEFAULT_STARTUP_TIMEOUT_S:g})")
    p.add_argument("--pipelined", action="store_true",
                   help="one: the simulator steps in a worker thread alongside the estimators and the "
                        "controller, each command driving the step after (the node graph's one-tick delay); "
                        "default: lockstep, each command drives the very next step")
    p.add_argument("--ideal-actuators", action="store_true",
                   help="ideal ball screws (the commanded force acts as is, the motor torque is its eq. (47) "
                        "inverse; the wrench estimator and the fault detector then use eq. (47) alone; separate/"
                        "composed: the sim node's ideal_actuators parameter); default: the simulated drives and "
                        "screws (docs/sim.md)")
    p.add_argument("--no-report", action="store_true",
                   help="write no report (one: figures, report.md, summary.json; separate/composed: summary.json "
                        "and logs)")
    p.add_argument("--no-bag", action="store_true",
                   help="write no bag (separate/composed never write one: record the topics with ros2 bag record)")
    p.add_argument("--bag-decimation", type=number_in(1, MAX_BAG_DECIMATION, kind=int), default=None, metavar="N",
                   help=f"one: record every N-th tick in the bag, 1 <= N <= {MAX_BAG_DECIMATION} "
                        f"(default {DEFAULT_BAG_DECIMATION})")
    add_json_flag(p)
    add_progress_flag(p)
    p.set_defaults(func=_demo, validate=_validate_demo)

    e = sub.add_parser("evaluate", help="evaluate a component against the simulator's ground truth")
    esub = e.add_subparsers(dest="what", metavar="WHAT")
    esub.required = True
    ee = esub.add_parser("estimation", help="calibration, passive state, wrench/ZMP, base drift (stand + sway)")
    ee.add_argument("--duration", type=duration, default=10.0, metavar="S",
                    help=f"simulated time after boot [s], {TICK_S:g} to {MAX_DURATION_S:g} (default 10)")
    ee.add_argument("--seed", type=seed, default=0, help="simulator seed (default 0)")
    ee.add_argument("--ideal-actuators", action="store_true",
                    help="the ideal-actuator run only (default: realistic, then ideal actuators)")
    add_plot_option(ee, "bar chart of the estimator variants' table")
    add_json_flag(ee)
    add_progress_flag(ee)
    ee.set_defaults(func=_evaluate, validate=make_plot_folder)
