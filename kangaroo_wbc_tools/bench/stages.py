"""Pipeline-stage benchmarks on the Kangaroo model: estimator, contact wrench, WBC, pipeline, sim.

Each stage imports its package lazily; a stage that cannot run (model not generated, package or
API missing, construction error) reports ``None`` with the reason, so that the report always has
every key. Inputs follow the same smooth actuator trajectory as the core benchmarks, with the
floating base held at the reference pose (standing).
"""

from __future__ import annotations

import functools
import gc
import time
import traceback

import numpy as np

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc_tools.bench.timing import time_calls
from kangaroo_wbc_tools.bench.workload import ModelSpec, reachable_trajectory

#: Longest crane boot (calibration, ready handshake, release) before the timed closed-loop ticks [s].
BOOT_LIMIT_S = 10.0

KEYS = ("estimator_step_ms", "wrench_step_ms", "wrench_node_update_ms", "wbc_step_ms_double", "wbc_step_ms_single",
        "pipeline_ms", "sim_rtf_all_nodes", "sim_rtf_all_nodes_lockstep")
SOLES = ("left_sole", "right_sole")


def _why(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _wbc_tick(wbc, states: list[np.ndarray], vs: list[np.ndarray], refs: list, active: tuple[str, ...], k: int):
    return wbc.step(states[k], vs[k], active_contacts=active, references=refs[k])


def _closed_loop_rtf(duration: float, pipelined: bool) -> tuple[float, str, dict, list]:
    """Real-time factor of the composed closed loop (sway after the crane boot, no ground-truth
    metrics): ``(rtf, note, stage medians [ms], the controller's inputs per tick)``."""
    from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

    run = ClosedLoopRun(LoopConfig(behaviour="sway", duration_s=duration, seed=0, pipelined=pipelined))
    run.log.enabled = False  # no ground-truth metrics: only what the nodes do
    run.start()
    boot_limit = int(round(BOOT_LIMIT_S / run.dt))
    for _ in range(boot_limit):  # the crane boot (calibration, ready handshake, release): not timed
        run.tick()
        if run.release_time_s is not None and run.last_inputs is not None:
            break
    else:
        run.finish()
        raise RuntimeError(f"the crane did not release the robot within {BOOT_LIMIT_S:g} s of simulated time")
    n = int(round(duration / run.dt))
    walls = np.empty(n)
    stages: dict[str, list[float]] = {}
    recorded: list = []
    gc.collect()
    gc.freeze()  # what every node does after start-up, as time_calls does for the other stages
    try:
        for k in range(n):
            w0 = time.perf_counter()
            info = run.tick()
            walls[k] = time.perf_counter() - w0
            for name, ms in info["stages_ms"].items():
                stages.setdefault(name, []).append(ms)
            if run.last_state is not None and run.last_inputs is not None:  # a tick with an estimate
                recorded.append((run.last_state[0].copy(), run.last_state[1].copy(), run.last_state[2]))
            if run.fell:
                break
    finally:
        run.finish()
        gc.unfreeze()
    tick_s = walls[:k + 1]
    rtf = round(float(run.dt * tick_s.size / tick_s.sum()), 4)
    how = ("the simulator steps in a worker thread alongside the nodes, each command drives the step after "
           "(the node graph's one-tick transport delay); simulator_step: the wait for it"
           if pipelined else "lockstep, one thread: each command drives the very next step")
    note = (f"simulated / wall time of the composed closed loop ({tick_s.size} ticks of sway after the crane boot): "
            f"MuJoCo step + sensors + passive state + floating base + contact wrench + WBC at 1 kHz, one process, "
            f"{how}; no ground-truth metrics; tick median {1e3 * float(np.median(tick_s)):.3f} ms (fell: {run.fell})")
    return rtf, note, {name: round(float(np.median(v)), 4) for name, v in stages.items()}, recorded


def run_stages(kangaroo: tuple[ModelSpec, ClosedLoopModel] | None, iterations: int, warmup: int,
               rate_hz: float, quick: bool = False) -> dict:
    """``{key: (value or None, reason)}`` for :data:`KEYS`, plus ``"detail"`` (notes per stage)."""
    out: dict = {"detail": {}}
    if kangaroo is None:
        for k in KEYS:
            out[k] = (None, "needs the Kangaroo model (kangaroo.urdf + kangaroo_closures.yaml)")
        return out
    spec, _ = kangaroo
    try:
        clm = ClosedLoopModel.from_files(spec.urdf, spec.closures, floating_base=True)
        traj, states = reachable_trajectory(clm, iterations + warmup, rate_hz)
        vs = [clm.complete_velocity(q, vd, np.zeros(6)) for q, vd in zip(states, traj.theta_dot_a)]
    except Exception as exc:  # noqa: BLE001 - reported as the reason of every stage
        for k in KEYS:
            out[k] = (None, f"floating-base Kangaroo model: {_why(exc)}")
        return out
    ticks = list(range(len(states)))
    objects: dict = {}

    # --- estimator (the paper's 0.38 ms case): passive state (eq. (35)-(40)), full-model update and
    # the model terms of the wrench estimator (eq. (44)-(45): J_c,m^T and the gravity torques)
    try:
        from kangaroo_wbc.estimation.contact_wrench import ContactWrenchEstimator
        from kangaroo_wbc.estimation.passive_state import PassiveStateEstimator
        from kangaroo_wbc.model import gravity_actuated

        est = PassiveStateEstimator(clm, q0=states[0])
        cwe = ContactWrenchEstimator(clm, list(SOLES))
        g = gravity_actuated(clm, states[0])
        forces = [g * (1.0 + 0.05 * np.sin(2 * np.pi * k / rate_hz)) for k in ticks]

        def estimator_tick(k: int) -> None:
            est.update(traj.theta_a[k], traj.theta_dot_a[k], 1.0 / rate_hz)
            cwe.update_model(est.q, est.v, kinematics=est.kin)

        t, _ = time_calls(estimator_tick, ticks, warmup, keep_outputs=False)
        out["estimator_step_ms"] = (t.as_dict(), "")
        out["detail"]["estimator_step_ms"] = ("PassiveStateEstimator.update + ContactWrenchEstimator.update_model "
                                              "(passive state, full-model update, gravity/contact-Jacobian terms)")
        objects["estimator"] = (est, cwe, forces)
    except Exception as exc:  # noqa: BLE001
        out["estimator_step_ms"] = (None, f"kangaroo_wbc.estimation: {_why(exc)}")

    # --- contact wrench estimation proper (eq. (46)-(47), filter, CoP/ZMP) on the model terms above
    if "estimator" in objects:
        try:
            t, _ = time_calls(lambda k: cwe.estimate_wrenches(actuator_force=forces[k]), ticks, warmup,
                              keep_outputs=False)
            out["wrench_step_ms"] = (t.as_dict(), "")
            out["detail"]["wrench_step_ms"] = "ContactWrenchEstimator.estimate_wrenches (eq. 46-47, filter, CoP, ZMP)"
            cwe_alone = ContactWrenchEstimator(clm, list(SOLES))
            t, _ = time_calls(lambda k: cwe_alone.update(states[k], actuator_force=forces[k], v=vs[k]), ticks,
                              warmup, keep_outputs=False)
            out["wrench_node_update_ms"] = (t.as_dict(), "")
            out["detail"]["wrench_node_update_ms"] = ("ContactWrenchEstimator.update with its own full-model update "
                                                      "(what the separate wrench node runs per tick)")
            objects["wrench"] = True
        except Exception as exc:  # noqa: BLE001
            out["wrench_step_ms"] = (None, f"kangaroo_wbc.estimation.contact_wrench: {_why(exc)}")
    else:
        out["wrench_step_ms"] = (None, "needs the estimator stage (model terms)")

    # --- the closed loop in one process (sway): its real-time factor, and the states and references
    # the controller really gets, replayed below (realistic, changing WBC inputs)
    recorded: list = []
    duration = max(0.3, (iterations + warmup) / rate_hz)
    for key, pipelined in (("sim_rtf_all_nodes_lockstep", False), ("sim_rtf_all_nodes", True)):
        try:
            rtf, note, stage_ms, states_seen = _closed_loop_rtf(duration, pipelined)
            out[key] = (rtf, "")
            out["detail"][key] = note
            out["detail"]["sim_rtf_stage_median_ms" + ("" if pipelined else "_lockstep")] = stage_ms
            if not pipelined:
                recorded = states_seen
        except Exception as exc:  # noqa: BLE001
            out[key] = (None, f"closed loop: {_why(exc)}")

    # --- whole-body controller, double and single support
    try:
        from kangaroo_wbc.components.assembly import ChainSettings, build_control

        if len(recorded) >= len(ticks):
            w_q, w_v, w_refs = ([r[i] for r in recorded[:len(ticks)]] for i in range(3))
            out["detail"]["wbc_step_ms_double"] = ("WholeBodyController.step on the states and references recorded "
                                                   "from the closed loop (sway), one tick each")
        else:  # no closed loop: the actuator trajectory (feet move: harder QPs than a standing robot)
            w_q, w_v, w_refs = states, vs, [None] * len(states)
            out["detail"]["wbc_step_ms_double"] = "WholeBodyController.step on the actuator trajectory"
        objects["wbc_inputs"] = (w_q, w_v, w_refs)
        # the controller the node builds from the shipped config/whole_body_controller.yaml
        wbc = build_control(clm, ChainSettings.load().controller).supervisor.controller
        both = tuple(wbc.layout.contact_names)
        for key, active in (("wbc_step_ms_double", both), ("wbc_step_ms_single", both[:1])):
            try:
                wbc.step(w_q[0], w_v[0], active_contacts=active)  # the new contact set's first solve
                t, _ = time_calls(functools.partial(_wbc_tick, wbc, w_q, w_v, w_refs, active), ticks, warmup,
                                  keep_outputs=False)
                out[key] = (t.as_dict(), "")
            except Exception as exc:  # noqa: BLE001
                out[key] = (None, f"WholeBodyController.step: {_why(exc)}")
        objects["wbc"] = wbc
    except Exception as exc:  # noqa: BLE001
        for key in ("wbc_step_ms_double", "wbc_step_ms_single"):
            out[key] = (None, f"kangaroo_wbc.control: {_why(exc)}")

    # --- pipeline: estimator + wrench + WBC (double support) in one tick
    if {"estimator", "wrench", "wbc"} <= set(objects) and out["wbc_step_ms_double"][0] is not None:
        (est, cwe, forces), wbc = objects["estimator"], objects["wbc"]
        w_q, w_v, w_refs = objects["wbc_inputs"]
        est.reset(states[0])

        def tick(k: int):
            est.update(traj.theta_a[k], traj.theta_dot_a[k], 1.0 / rate_hz)
            # one full-model update shared by the wrench estimator and the controller, as in the
            # composed loop (ClosedLoopRun.tick)
            wbc.update_model(w_q[k], w_v[k])
            cwe.update_model(w_q[k], w_v[k], projected=wbc.pm)
            cwe.estimate_wrenches(actuator_force=forces[k])
            return wbc.step(w_q[k], w_v[k], active_contacts=tuple(wbc.layout.contact_names), references=w_refs[k])

        try:
            t, _ = time_calls(tick, ticks, warmup, keep_outputs=False)
            out["pipeline_ms"] = (t.as_dict(), "")
            out["detail"]["pipeline_ms"] = ("passive-state estimator (actuator trajectory) + one full-model update at "
                                            "the closed-loop state shared by the contact-wrench estimator and the WBC "
                                            "(double support), one process, no ROS")
        except Exception as exc:  # noqa: BLE001
            out["pipeline_ms"] = (None, f"pipeline tick: {_why(exc)}")
    else:
        missing = [k for k in ("estimator_step_ms", "wrench_step_ms", "wbc_step_ms_double") if out[k][0] is None]
        out["pipeline_ms"] = (None, f"needs every stage; missing: {missing}")

    return out
