"""Peer comparison in the same run: toolbox-parallel-robots on the same models and inputs.

The peer runs in child processes (:mod:`kangaroo_wbc_tools.bench.peer_worker`) under an interpreter
whose pinocchio the toolbox was written for (pinocchio 3: its proximal solver uses
``ContactCholeskyDecomposition``): the bench's own peer environment
(:mod:`kangaroo_wbc_tools.bench.peer_env`) or those given with ``--peer-python``; also under this
interpreter when the toolbox is installed here. Both sides get the same actuator samples; the
parent compares the closed configurations with ours.

``fk_speedup`` is the peer's median time over ours at equal or stricter tolerance on our side
(ours: ``|e_l|_inf <= 1e-12``; the proximal peer: ``eps = 1e-12``; SLSQP: ``acc = 1e-6``). Next to
it, per model and method, the agreement of the solutions: ``frame_placement_max_diff_m`` (every
frame origin, over every sample) and ``frames_agree`` (within :data:`FRAME_AGREEMENT_M`);
``agreement`` sums it up per model for the peer's preferred valid method, with its speed ratio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc_tools.bench.timing import stats_ms
from kangaroo_wbc_tools.bench.workload import REPO_ROOT

#: Preference order of the peer's FK methods for the headline speedup (valid results first).
METHOD_ORDER = ("proximal", "casadi", "slsqp")

#: A peer configuration counts as closed when our closure error at it is below this [m, rad].
VALID_RESIDUAL = 1e-6

#: Frame placements of a peer configuration agree with ours when every frame origin is within this [m].
FRAME_AGREEMENT_M = 1e-9


def frame_placement_difference(model: pin.Model, q_ours: np.ndarray, q_peer: np.ndarray) -> tuple[float, float]:
    """Largest distance between frame origins [m] and largest rotation angle between frame
    orientations [rad], over every frame of ``model``, at two configurations."""
    d_ours, d_peer = model.createData(), model.createData()
    pin.framesForwardKinematics(model, d_ours, q_ours)
    pin.framesForwardKinematics(model, d_peer, q_peer)
    dp, dr = 0.0, 0.0
    for a, b in zip(d_ours.oMf, d_peer.oMf):
        dp = max(dp, float(np.linalg.norm(a.translation - b.translation)))
        dr = max(dr, float(np.linalg.norm(pin.log3(a.rotation.T @ b.rotation))))
    return dp, dr


@dataclass
class PeerModelInput:
    """What the peer gets for one model: the samples and our results to compare with."""

    name: str
    clm: ClosedLoopModel
    urdf: str
    closures: str
    theta_a: np.ndarray  # (n, n_a), warm-up samples first
    q0: np.ndarray
    ours_q: list[np.ndarray]  # our closed configurations for the same samples
    ours_fk_median_ms: float
    ours_jacobian_median_ms: float | None = None


def run_worker(python: str, request: dict, timeout_s: float) -> dict:
    """Run the peer worker under ``python``; its last stdout line is the JSON answer."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.run([python, "-m", "kangaroo_wbc_tools.bench.peer_worker"], input=json.dumps(request),
                              capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if not lines:
        tail = proc.stderr.strip().splitlines()[-3:]
        return {"error": f"peer worker exited with {proc.returncode} and no answer: {' | '.join(tail)}"}
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": f"peer worker answer is not JSON: {lines[-1][:200]}"}


def _compare_fk(inp: PeerModelInput, res: dict, warmup: int) -> dict:
    m = inp.clm.model
    keep_v = np.sort(np.concatenate([inp.clm.idx_v_a, inp.clm.idx_v_u]))
    diffs, residuals, drifts, frame_p, frame_r = [], [], [], [], []
    for k, q_list in enumerate(res["q"]):
        q = np.asarray(q_list, dtype=float)
        qn = pin.normalize(m, q)
        drifts.append(float(np.max(np.abs(q - qn))))
        residuals.append(float(np.max(np.abs(inp.clm.closure_error(qn)))) if inp.clm.n_c else 0.0)
        diffs.append(float(np.max(np.abs(pin.difference(m, inp.ours_q[warmup + k], qn)[keep_v]))))
        fp, fr = frame_placement_difference(m, inp.ours_q[warmup + k], qn)
        frame_p.append(fp)
        frame_r.append(fr)
    t = stats_ms(res["times_s"])
    out = {"median_ms": t.as_dict()["median"], "p99_ms": t.as_dict()["p99"], "n": t.n,
           "tolerance": res.get("tolerance"),
           "speedup_vs_ours": float(f"{t.median / inp.ours_fk_median_ms:.3g}"),
           "max_diff_vs_ours": float(f"{max(diffs):.3g}"),
           # every frame's placement at the peer's solution against ours, next to the speed ratio
           "frame_placement_max_diff_m": float(f"{max(frame_p):.3g}"),
           "frame_orientation_max_diff_rad": float(f"{max(frame_r):.3g}"),
           "frames_agree": bool(max(frame_p) <= FRAME_AGREEMENT_M),
           "closure_residual_max": float(f"{max(residuals):.3g}"),
           "valid": bool(max(residuals) <= VALID_RESIDUAL)}
    if max(drifts) > 1e-9:
        out["quaternion_norm_drift_max"] = float(f"{max(drifts):.3g}")
    if "freeze_times_s" in res:
        tf = stats_ms(np.asarray(res["freeze_times_s"]) + np.asarray(res["times_s"]))
        out["with_freeze_median_ms"] = tf.as_dict()["median"]
        out["iterations_mean"] = res.get("iterations_mean")
    if res.get("solver_messages"):
        out["solver_messages"] = res["solver_messages"]
    return out


def _compare_jacobian(inp: PeerModelInput, res: dict, states: list[np.ndarray], warmup: int) -> dict:
    clm = inp.clm
    t = stats_ms(res["times_s"])
    order = np.argsort(clm.idx_v_a)  # the toolbox orders motors by velocity index
    rows = np.sort(np.concatenate([clm.idx_v_a, clm.idx_v_u]))
    diffs = []
    for k, dq in enumerate(res.get("dq_dqmot", [])):
        q = states[warmup + k]
        T = np.zeros((clm.model.nv, clm.n_a))
        T[clm.idx_v_a, np.arange(clm.n_a)] = 1.0
        T[clm.idx_v_u] = clm.mapping_jacobian(q)
        diffs.append(float(np.max(np.abs(np.asarray(dq)[rows] - T[:, order][rows]))))
    out = {"median_ms": t.as_dict()["median"], "p99_ms": t.as_dict()["p99"], "n": t.n,
           "what": "computeClosedLoopFrameJacobian: constraint Jacobians, pinv(J_free) J_mot, frame Jacobian"}
    if inp.ours_jacobian_median_ms:
        out["ours_mapping_jacobian_median_ms"] = inp.ours_jacobian_median_ms
        out["speedup_vs_ours"] = float(f"{t.median / inp.ours_jacobian_median_ms:.3g}")
    if diffs:
        out["max_diff_dq_dqmot_vs_ours"] = float(f"{max(diffs):.3g}")
    if clm.locked_joint_names:
        out["note"] = (f"not comparable: our model locks the idle joints {clm.locked_joint_names}; the toolbox's "
                       "pseudo-inverse lets them move (minimum-norm passive velocities)")
    return out


def compare_with_peer(inputs: list[PeerModelInput], pythons: Sequence[str | tuple[str, str]], warmup: int,
                      timeout_s: float = 900.0, notes: list[str] | None = None) -> dict:
    """Run the peer under each interpreter and build the ``peer`` block of the report.

    ``pythons``: interpreters, or ``(interpreter, label)`` pairs (the label names it in the report).
    ``notes``: what is already known to be missing (say, the pinocchio-3 environment), put in front
    of the status.
    """
    block: dict = {"name": "toolbox-parallel-robots", "runs": [], "fk": {}, "jacobian": {}, "fk_speedup": None}
    request = {"warmup": warmup, "models": [
        {"name": i.name, "urdf": i.urdf, "closures": i.closures, "theta_a": i.theta_a.tolist(),
         "q0": i.q0.tolist(), "states": [q.tolist() for q in i.ours_q]} for i in inputs]}
    problems: list[str] = list(notes or [])
    for entry in pythons:
        python, label = entry if isinstance(entry, tuple) else (
            entry, "this interpreter" if entry == sys.executable else "--peer-python")
        answer = run_worker(python, request, timeout_s)
        run: dict = {"interpreter": label, "executable": python}
        block["runs"].append(run)
        if "error" in answer:
            run["error"] = answer["error"]
            problems.append(f"{label}: {answer['error']}")
            continue
        run.update(answer["info"])
        block.setdefault("version", answer["info"].get("toolbox_version"))
        for inp in inputs:
            res = answer["models"].get(inp.name, {})
            if "error" in res or "unsupported" in res:  # not loaded / not expressible by the peer
                key = "error" if "error" in res else "unsupported"
                block["fk"].setdefault(inp.name, {})[key] = res[key]
                continue
            for method in ("slsqp", "proximal", "casadi"):
                r = res.get(method)
                if r is None:
                    continue
                key = f"{method} (pinocchio {answer['info']['pinocchio']})"
                if "error" in r or "unavailable" in r:
                    block["fk"].setdefault(inp.name, {})[key] = {k: r[k] for k in ("error", "unavailable") if k in r}
                else:
                    block["fk"].setdefault(inp.name, {})[key] = _compare_fk(inp, r, warmup)
            r = res.get("jacobian")
            if r is not None:
                key = f"pinocchio {answer['info']['pinocchio']}"
                block["jacobian"].setdefault(inp.name, {})[key] = (
                    {"error": r["error"]} if "error" in r else _compare_jacobian(inp, r, inp.ours_q, warmup))
    _headline(block, [i.name for i in inputs])
    block["agreement"] = agreement(block, [i.name for i in inputs])
    block["frames_agree"] = block["agreement"]["all_compared_agree"]
    block["status"] = peer_status(block, [i.name for i in inputs], problems)
    return block


def peer_status(block: dict, model_order: list[str], problems: list[str]) -> str:
    """``unavailable: ...`` when the peer gave no headline ``fk_speedup`` (no interpreter ran it,
    the worker could not load the models — a peer environment without what the worker imports —, or
    no model it can express), with the reasons; ``partial: ...`` when it did but something failed
    (a model it could not load, a method's error, a missing interpreter); else ``ok``. A model the
    peer cannot express (``unsupported``) is said in ``agreement``, not counted as a failure."""
    if not any("error" not in r for r in block["runs"]):
        return "unavailable: " + "; ".join(problems or ["no peer interpreter"])
    fk = {m: block["fk"].get(m, {}) for m in model_order}
    unloaded = {m: d["error"] for m, d in fk.items() if isinstance(d.get("error"), str)}
    failed = [f"{m}/{k}" for m, d in fk.items() for k, v in d.items() if isinstance(v, dict) and "error" in v]
    notes = problems + [f"{m}: the peer worker cannot load it: {e}" for m, e in unloaded.items()]
    notes += [f"failed: {', '.join(failed)}"] if failed else []
    if block.get("fk_speedup") is None:
        unsupported = [f"{m}: the peer cannot express it: {d['unsupported']}" for m, d in fk.items()
                       if isinstance(d.get("unsupported"), str)]
        reason = block.get("fk_speedup_reason") or "no fk_speedup"
        return "unavailable: " + "; ".join(notes + unsupported + [reason])
    return "ok" if not notes else "partial: " + "; ".join(notes)


def _best_fk(entries: dict) -> tuple[str, dict] | None:
    """The peer's preferred FK result for one model: the first valid method of :data:`METHOD_ORDER`."""
    for method in METHOD_ORDER:
        for key, v in entries.items():
            if key.startswith(method) and isinstance(v, dict) and v.get("valid"):
                return key, v
    return None


def agreement(block: dict, model_order: list[str]) -> dict:
    """Per model, the frame-placement agreement of the peer's preferred valid FK method with ours,
    next to its speed ratio; ``all_compared_agree`` over the models the peer could load (``None``
    when it compared none)."""
    models: dict = {}
    for name in model_order:
        entries = block["fk"].get(name)
        if entries is None:
            models[name] = {"compared": False, "reason": "no peer run answered"}
        elif isinstance(entries.get("error"), str):
            models[name] = {"compared": False, "reason": f"the peer cannot load it: {entries['error']}"}
        elif isinstance(entries.get("unsupported"), str):
            models[name] = {"compared": False, "reason": f"the peer cannot express it: {entries['unsupported']}"}
        elif (best := _best_fk(entries)) is None:
            models[name] = {"compared": True, "frames_agree": False,
                            "reason": "no peer FK method returned closed configurations (see peer.fk)"}
        else:
            key, v = best
            models[name] = {"compared": True, "method": key, "frames_agree": v["frames_agree"],
                            "frame_placement_max_diff_m": v["frame_placement_max_diff_m"],
                            "speedup_vs_ours": v["speedup_vs_ours"], "n": v["n"]}
    compared = [m for m in models.values() if m["compared"]]
    return {"tolerance_m": FRAME_AGREEMENT_M, "models": models,
            "all_compared_agree": all(m["frames_agree"] for m in compared) if compared else None}


def _headline(block: dict, model_order: list[str]) -> None:
    """``fk_speedup``: the first model (Kangaroo, else the digit-like legs) and the best valid method."""
    for name in model_order:
        best = _best_fk(block["fk"].get(name, {}))
        if best is not None:
            key, v = best
            block["fk_speedup"] = v["speedup_vs_ours"]
            block["fk_speedup_model"] = name
            block["fk_speedup_method"] = key
            return
    block["fk_speedup_reason"] = "no peer FK method returned closed configurations (see peer.fk)"
