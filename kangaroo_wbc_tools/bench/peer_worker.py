"""Peer side of the benchmark: Gepetto's ``toolbox-parallel-robots`` on our models.

Runs in a child process (``python -m kangaroo_wbc_tools.bench.peer_worker``), possibly under another
interpreter whose pinocchio the toolbox was written for (``kangaroo-wbc bench --peer-python``).
It reads one JSON request on stdin and prints one JSON answer on stdout; it imports only
:mod:`kangaroo_wbc.model` from this package, numpy, pinocchio and the toolbox.

Model: the toolbox works on a pinocchio spanning tree plus ``pin.RigidConstraintModel`` loop
constraints (3D or 6D, ``LOCAL``) between the parent joints of the two closure frames; its own
loader (``example-parallel-robots``) builds exactly that from the extended-URDF YAML. We build the
same objects from our :class:`~kangaroo_wbc.model.ClosedLoopModel` (same tree, same joint
substitutions), so both sides solve the same mechanism. Closures declaring other direction
subsets than ``xyz`` or all six cannot be expressed that way; such a model is reported as
unsupported.

Methods (each skipped with a reason where the toolbox or pinocchio cannot run it):

* ``slsqp`` — ``closedLoopForwardKinematicsScipy``, the FK its dispatcher uses without pinocchio's
  casadi bindings (SLSQP, default ``acc=1e-6``), warm-started from its previous solution;
* ``proximal`` — ``freezeJoints`` (actuators locked at ``theta_a``) then ``closedLoopMountProximal``
  (pinocchio's proximal KKT solver, ``eps=1e-12``): FK at the same tolerance as ours;
* ``casadi`` — ``closedLoopForwardKinematicsCasadi`` (IPOPT), only if ``pinocchio.casadi`` exists;
* ``jacobian`` — ``computeClosedLoopFrameJacobian``: ``dq/dq_mot`` from the constraint Jacobians.

Compatibility shims (no algorithm is changed): the package ``__init__`` imports modules that need
``pinocchio.casadi`` unconditionally, so the needed submodules are imported without it; their
``mergeq`` tests ``isinstance(model, pin.casadi.Model)``, so the toolbox's ``actuation`` module sees
a pinocchio namespace with a placeholder ``casadi.Model``; the warm start is passed as an array
whose ``== []`` test is false (numpy >= 2 raises on that comparison); the actuation data needed by
the Jacobian function is built directly (``ActuationData`` assumes a free-flyer).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import sys
import time
import traceback
import types
from typing import Any

import numpy as np
import pinocchio as pin

PKG = "toolbox_parallel_robots"


class Unavailable(RuntimeError):
    """A method this pinocchio cannot run (reported as ``unavailable``, not as a failure)."""


class _WarmStart(np.ndarray):
    """An array whose comparison with a list is ``False`` (the toolbox tests ``q_prec == []``)."""

    def __eq__(self, other):
        if isinstance(other, list):
            return False
        return np.ndarray.__eq__(self, other)

    __hash__ = None


class _PinocchioView(types.ModuleType):
    """pinocchio, plus a placeholder ``casadi.Model`` when pinocchio has no casadi bindings."""

    casadi: Any  # the placeholder, set when pinocchio has no casadi bindings

    def __getattr__(self, name):
        return getattr(pin, name)


def _import_toolbox() -> tuple[dict, dict]:
    """Import the toolbox submodules without running the package ``__init__``."""
    info: dict = {"pinocchio": pin.__version__, "python": sys.version.split()[0]}
    try:
        from importlib import metadata

        info["toolbox_version"] = metadata.version("toolbox-parallel-robots")
    except Exception:  # noqa: BLE001 - version lookup only
        info["toolbox_version"] = None
    spec = importlib.util.find_spec(PKG)
    if spec is None:
        raise ImportError("toolbox-parallel-robots is not installed (pip install toolbox-parallel-robots casadi)")
    try:
        from pinocchio import casadi as _  # noqa: F401

        info["pinocchio_casadi"] = True
    except ImportError:
        info["pinocchio_casadi"] = False
    if PKG not in sys.modules:
        pkg = types.ModuleType(PKG)
        pkg.__path__ = list(spec.submodule_search_locations or [])
        sys.modules[PKG] = pkg
    mods: dict[str, Any] = {}  # modules, given attributes below
    for name in ("actuation", "actuation_model", "constraints", "forward_kinematics", "mounting",
                 "freeze_joints", "jacobian"):
        mods[name] = importlib.import_module(f"{PKG}.{name}")
    if not info["pinocchio_casadi"]:
        view = _PinocchioView("pinocchio")
        view.casadi = types.SimpleNamespace(Model=type("NoCasadiModel", (), {}))
        mods["actuation"].pin = view
    try:
        import casadi

        info["casadi"] = getattr(casadi, "__version__", "unknown")
    except ImportError:
        info["casadi"] = None
    return mods, info


def _quiet(fn, *args, **kwargs):
    """Call a toolbox function with its progress prints sent to a buffer (returned too)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        out = fn(*args, **kwargs)
    return out, buf.getvalue()


def _run_fk(solve, mods, clm, cms, thetas, q0, warmup, tolerance: str) -> dict:
    """The toolbox's closed-loop FK ``solve`` (its SciPy or CasADi one) at every sample, warm-started
    from its previous solution; the solver's distinct exit messages are kept (SLSQP prints them)."""
    act = mods["actuation_model"].ActuationModel(clm.model, clm.actuated_joint_names)
    data = clm.model.createData()
    cds = [cm.createData() for cm in cms]
    q_prec = np.asarray(q0, dtype=float)
    times, qs, notes = [], [], set()
    for k, theta in enumerate(thetas):
        t0 = time.perf_counter()
        q, out = _quiet(solve, clm.model, data, cms, cds, act, np.asarray(theta, dtype=float),
                        q_prec.view(_WarmStart))
        dt = time.perf_counter() - t0
        q_prec = np.asarray(q, dtype=float)
        if "Exit mode" in out:
            notes.add(out.strip().splitlines()[0].strip())
        if k >= warmup:
            times.append(dt)
            qs.append(q_prec.tolist())
    return {"times_s": times, "q": qs, "solver_messages": sorted(notes)[:5], "tolerance": tolerance}


def _run_proximal(mods, clm, thetas, q0, warmup):
    if not hasattr(pin, "ContactCholeskyDecomposition"):
        raise Unavailable(f"pinocchio {pin.__version__} has no ContactCholeskyDecomposition (renamed in "
                          "pinocchio 4); the toolbox's proximal solver needs pinocchio 3 (the bench's peer "
                          "environment, or --peer-python)")
    from kangaroo_wbc.model.dynamics import rigid_constraint_models as loops

    mnt, fj = mods["mounting"], mods["freeze_joints"]
    m = clm.model
    act = mods["actuation_model"].ActuationModel(m, clm.actuated_joint_names)
    lock = [int(m.getJointId(n)) for n in clm.actuated_joint_names]
    keep = np.concatenate([np.arange(m.joints[j].idx_q, m.joints[j].idx_q + m.joints[j].nq)
                           for j in range(1, m.njoints) if j not in lock]).astype(int)
    q_prec = np.asarray(q0, dtype=float).copy()
    t_freeze, t_mount, qs, iters = [], [], [], []
    for k, theta in enumerate(thetas):
        q_ref = q_prec.copy()
        q_ref[clm.idx_q_a] = theta
        t0 = time.perf_counter()
        (rm, rcms, _, _, _), _ = _quiet(fj.freezeJoints, m, loops(clm, skip_added=True), act, pin.GeometryModel(),
                                        pin.GeometryModel(), lock, q_ref)
        rd = rm.createData()
        rcds = [cm.createData() for cm in rcms]
        t1 = time.perf_counter()
        qr, out = _quiet(mnt.closedLoopMountProximal, rm, rd, rcms, rcds, q_ref[keep])
        t2 = time.perf_counter()
        q_prec = q_ref.copy()
        q_prec[keep] = qr
        if k >= warmup:
            t_freeze.append(t1 - t0)
            t_mount.append(t2 - t1)
            qs.append(q_prec.tolist())
            iters.append(out.count("constraint_value"))
    return {"times_s": t_mount, "freeze_times_s": t_freeze, "q": qs, "iterations_mean": float(np.mean(iters)),
            "tolerance": "proximal eps=1e-12 (default), primal and dual"}


def _run_jacobian(mods, clm, cms, states, warmup):
    jac = mods["jacobian"]
    m = clm.model
    data = m.createData()
    cds = [cm.createData() for cm in cms]
    act = mods["actuation_model"].ActuationModel(m, clm.actuated_joint_names)
    nv, n_mot = m.nv, len(act.mot_ids_v)
    n_free = nv - n_mot
    sizes = [6 if cm.type == pin.ContactType.CONTACT_6D else 3 for cm in cms]
    nc = sum(sizes)
    ad = types.SimpleNamespace(
        Smot=np.zeros((nv, n_mot)), Sfree=np.zeros((nv, n_free)), Jmot=np.zeros((nc, n_mot)),
        Jfree=np.zeros((nc, n_free)), pinvJfree=np.zeros((n_free, nc)), dq=np.zeros((nv, n_mot)),
        dq_no=np.zeros((nv, n_mot)), LJ=[np.zeros((s, nv)) for s in sizes], constraints_sizes=sizes,
        Jf_closed=np.zeros((6, n_mot)))
    ad.Smot[act.mot_ids_v, np.arange(n_mot)] = 1.0
    ad.Sfree[act.free_ids_v, np.arange(n_free)] = 1.0
    act.dq_no = ad.dq_no  # the function reads dq_no from the actuation model
    fid = int(m.getFrameId(m.frames[clm.closures[0].frame_a_id].name))
    times: list[float] = []
    dqs: list[list] = []
    for k, q in enumerate(states):
        q = np.asarray(q, dtype=float)
        t0 = time.perf_counter()
        jac.computeClosedLoopFrameJacobian(m, data, cms, cds, act, ad, q, fid)
        dt = time.perf_counter() - t0
        if k >= warmup:
            times.append(dt)
            if len(dqs) < 5:
                dqs.append(ad.dq.tolist())
    return {"times_s": times, "dq_dqmot": dqs}


def run(request: dict) -> dict:
    """Run the requested peer methods on each model; see the module docstring."""
    from kangaroo_wbc.model import ClosedLoopModel
    from kangaroo_wbc.model.dynamics import rigid_constraint_models

    mods, info = _import_toolbox()
    answer: dict = {"info": info, "models": {}}
    warmup = int(request.get("warmup", 0))
    for spec in request["models"]:
        name = spec["name"]
        res: dict = {}
        answer["models"][name] = res
        try:
            clm = ClosedLoopModel.from_files(spec["urdf"], spec["closures"], floating_base=False)
        except Exception as exc:  # noqa: BLE001 - reported to the parent as the model's status
            res["error"] = f"{type(exc).__name__}: {exc}"
            continue
        try:
            cms = rigid_constraint_models(clm, skip_added=True)
        except ValueError as exc:  # closures the toolbox's constraint models cannot express
            res["unsupported"] = str(exc)
            continue
        res["joint_names"] = list(clm.model.names)
        thetas, q0 = spec["theta_a"], spec["q0"]
        for method in request.get("methods", ["slsqp", "proximal", "casadi", "jacobian"]):
            try:
                if method == "slsqp":
                    res[method] = _run_fk(mods["forward_kinematics"].closedLoopForwardKinematicsScipy, mods, clm,
                                          cms, thetas, q0, warmup, "SLSQP acc=1e-6 (default)")
                elif method == "proximal":
                    res[method] = _run_proximal(mods, clm, thetas, q0, warmup)
                elif method == "casadi":
                    if not info["pinocchio_casadi"]:
                        raise Unavailable(f"pinocchio {pin.__version__} was built without casadi bindings "
                                          "(pinocchio.casadi); PyPI's pin wheels have none")
                    res[method] = _run_fk(mods["forward_kinematics"].closedLoopForwardKinematicsCasadi, mods, clm,
                                          cms, thetas, q0, warmup, "IPOPT tol=1e-8 (default)")
                elif method == "jacobian":
                    res[method] = _run_jacobian(mods, clm, cms, spec["states"], warmup)
            except Unavailable as exc:
                res[method] = {"unavailable": str(exc)}
            except Exception as exc:  # noqa: BLE001 - one failing method must not hide the others
                res[method] = {"error": f"{type(exc).__name__}: {exc}",
                               "where": traceback.format_exc(limit=-2).strip().splitlines()[-3:]}
    return answer


def main() -> int:
    request = json.loads(sys.stdin.read())
    try:
        answer = run(request)
    except Exception as exc:  # noqa: BLE001 - the parent reports it as the peer status
        answer = {"error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
