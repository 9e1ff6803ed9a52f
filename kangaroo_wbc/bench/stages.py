"""Pipeline-stage benchmarks on the Kangaroo model: estimator, contact wrench, WBC, pipeline, sim.

Each stage imports its package lazily; a stage that cannot run (model not generated, package or
API missing, construction error) reports ``None`` with the reason, so that the report always has
every key. Inputs follow the same smooth actuator trajectory as the core benchmarks, with the
floating base held at the reference pose (standing).
"""

from __future__ import annotations

import functools
import traceback

import numpy as np
import pinocchio as pin

from kangaroo_wbc.bench.timing import time_calls
from kangaroo_wbc.bench.workload import ModelSpec, reachable_trajectory
from kangaroo_wbc.model import ClosedLoopModel

KEYS = ("estimator_step_ms", "wrench_step_ms", "wbc_step_ms_double", "wbc_step_ms_single", "pipeline_ms",
        "sim_rtf_all_nodes")
SOLES = {"left": "left_sole", "right": "right_sole"}


def _why(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _corners(clm: ClosedLoopModel, q: np.ndarray, sole: str) -> np.ndarray:
    """Sole corner positions in the sole frame [m] (frames ``<sole>_corner_*``)."""
    m, d = clm.model, clm.model.createData()
    pin.framesForwardKinematics(m, d, q)
    oMs = d.oMf[m.getFrameId(sole)]
    names = [f.name for f in m.frames if f.name.startswith(sole + "_corner")]
    if not names:
        raise ValueError(f"no {sole}_corner_* frames in the model")
    return np.array([(oMs.inverse() * d.oMf[m.getFrameId(n)]).translation for n in names])


def _wbc_tick(wbc, states: list[np.ndarray], vs: list[np.ndarray], active: tuple[str, ...], k: int):
    return wbc.step(states[k], vs[k], active_contacts=active)


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

    # --- estimator: passive state (eq. (35)-(40)) with the full-model update
    try:
        from kangaroo_wbc.estimation.passive_state import PassiveStateEstimator

        est = PassiveStateEstimator(clm, q0=states[0])
        t, _ = time_calls(lambda k: est.update(traj.theta_a[k], traj.theta_dot_a[k], 1.0 / rate_hz), ticks, warmup)
        out["estimator_step_ms"] = (t.as_dict(), "")
        out["detail"]["estimator_step_ms"] = "PassiveStateEstimator.update (passive state + full-model update)"
        objects["estimator"] = est
    except Exception as exc:  # noqa: BLE001
        out["estimator_step_ms"] = (None, f"kangaroo_wbc.estimation: {_why(exc)}")

    # --- contact wrench estimator (eq. (43)-(47)), actuator forces given directly [N]
    try:
        from kangaroo_wbc.estimation.contact_wrench import ContactWrenchEstimator
        from kangaroo_wbc.model import gravity_actuated

        cwe = ContactWrenchEstimator(clm, list(SOLES.values()))
        g = gravity_actuated(clm, states[0])
        forces = [g * (1.0 + 0.05 * np.sin(2 * np.pi * k / rate_hz)) for k in ticks]
        t, _ = time_calls(lambda k: cwe.update(states[k], actuator_force=forces[k]), ticks, warmup)
        out["wrench_step_ms"] = (t.as_dict(), "")
        objects["wrench"] = (cwe, forces)
    except Exception as exc:  # noqa: BLE001
        out["wrench_step_ms"] = (None, f"kangaroo_wbc.estimation.contact_wrench: {_why(exc)}")

    # --- whole-body controller, double and single support
    try:
        from kangaroo_wbc.control.contacts import ContactSpec
        from kangaroo_wbc.control.wbc import WholeBodyController

        contacts = [ContactSpec(name, frame, _corners(clm, states[0], frame)) for name, frame in SOLES.items()]
        wbc = WholeBodyController(clm, contacts)
        for key, active in (("wbc_step_ms_double", ("left", "right")), ("wbc_step_ms_single", ("left",))):
            try:
                t, _ = time_calls(functools.partial(_wbc_tick, wbc, states, vs, active), ticks, warmup)
                out[key] = (t.as_dict(), "")
            except Exception as exc:  # noqa: BLE001
                out[key] = (None, f"WholeBodyController.step: {_why(exc)}")
        objects["wbc"] = wbc
    except Exception as exc:  # noqa: BLE001
        for key in ("wbc_step_ms_double", "wbc_step_ms_single"):
            out[key] = (None, f"kangaroo_wbc.control: {_why(exc)}")

    # --- pipeline: estimator + wrench + WBC (double support) in one tick
    if {"estimator", "wrench", "wbc"} <= set(objects) and out["wbc_step_ms_double"][0] is not None:
        est, (cwe, forces), wbc = objects["estimator"], objects["wrench"], objects["wbc"]
        est.reset(states[0])

        def tick(k: int):
            est.update(traj.theta_a[k], traj.theta_dot_a[k], 1.0 / rate_hz)
            q = est.q.copy()
            cwe.update(q, actuator_force=forces[k])
            return wbc.step(q, est.v.copy(), active_contacts=("left", "right"))

        try:
            t, _ = time_calls(tick, ticks, warmup)
            out["pipeline_ms"] = (t.as_dict(), "")
            out["detail"]["pipeline_ms"] = "estimator + contact wrench + WBC (double support), one process, no ROS"
        except Exception as exc:  # noqa: BLE001
            out["pipeline_ms"] = (None, f"pipeline tick: {_why(exc)}")
    else:
        missing = [k for k in ("estimator_step_ms", "wrench_step_ms", "wbc_step_ms_double") if out[k][0] is None]
        out["pipeline_ms"] = (None, f"needs every stage; missing: {missing}")

    out["sim_rtf_all_nodes"] = (None, "needs the simulator and the ROS nodes composed in one executor "
                                      "(kangaroo_wbc/nodes); not wired in this benchmark yet")
    return out
