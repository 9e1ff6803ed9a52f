"""What the node-graph runner measures from the topics it observed: the CoM error, the base motion,
a jump's flight, the bench's circle and press, the weight on the soles, the payload identification
(the one-process loop's definitions, :mod:`kangaroo_wbc_tools.pipeline.metrics`, on the graph's samples)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kangaroo_wbc_tools.pipeline.metrics import unwrapped_yaw

#: The weight is measured from this long after the release [s], and not for this long after a
#: payload [s] (the one-process demo's windows); gravity [m/s^2].
SETTLE_S = 0.3
PAYLOAD_SETTLE_S = 1.0
GRAVITY_M_S2 = 9.81

#: CoM tracking is measured from this long after the first CoM target (the controller's default
#: behaviour_delay_s: the behaviour starts then), as the one-process demo measures it from the start.
COM_FROM_S = 1.0


def com_rmse(truth: dict, targets: list, clm, payloads: Sequence[tuple[float, str, float]] = ()) -> float | None:
    """RMS distance [m] between the true CoM (pinocchio on the simulator's ground truth) and the
    controller's CoM target (``wbc/com_target``, interpolated to the ground truth's stamps), from
    ``COM_FROM_S`` after the first target; None without pairs. ``clm``: the robot's model as loaded;
    ``payloads``: ``(simulated time [s], link, mass [kg])`` of the point masses the simulator attached
    (at the link's centre of mass), in the true CoM from that time on."""
    import pinocchio as pin

    if not targets or not truth:
        return None
    t_target = np.array([t for t, _ in targets])
    xyz = np.array([p for _, p in targets])
    m = clm.model
    data = m.createData()
    errors = []
    for stamp_ns, (pose, joints) in sorted(truth.items()):
        t = stamp_ns * 1e-9
        if pose is None or joints is None or not t_target[0] + COM_FROM_S <= t <= t_target[-1]:
            continue
        q = true_configuration(m, pose, joints)
        target = [np.interp(t, t_target, xyz[:, k]) for k in range(3)]  # targets come at 50 Hz
        com, mass = pin.centerOfMass(m, data, q) * clm.mass_kg, clm.mass_kg  # kinematics in data
        for at, link, extra in payloads:
            if t >= at:
                j = m.frames[m.getFrameId(link)].parentJoint
                com, mass = com + extra * data.oMi[j].act(m.inertias[j].lever), mass + extra
        errors.append(com / mass - target)
    return round(float(np.sqrt(np.mean(np.sum(np.square(errors), axis=1)))), 6) if errors else None


def true_configuration(model, pose, joints: tuple[list, list]) -> np.ndarray:
    """The pinocchio configuration of the free-floating ``model`` from the simulator's ground truth:
    the base ``pose`` (``sim/ground_truth/base_odometry``) and ``joints`` (names, positions)."""
    import pinocchio as pin

    q = pin.neutral(model)
    q[:3] = pose.position.x, pose.position.y, pose.position.z
    o = pose.orientation
    q[3:7] = o.x, o.y, o.z, o.w
    for name, value in zip(*joints):
        if model.existJointName(name):
            q[model.joints[model.getJointId(name)].idx_q] = value
    return q


def payload_metrics(identified: list, statuses: list, truth: dict, model, unmodelled: list,
                     last_change_s: float | None, started_s: float | None) -> dict:
    """The one-process demo's payload identification keys
    (:func:`~kangaroo_wbc_tools.pipeline.metrics.payload_summary`) from the topics: the last
    ``payload/identified`` message (``identified``: stamp [s], mass [kg], CoM x, y [m]) is the last
    confident estimate, its standard deviation the last confident ``payload`` status's
    (``statuses``: stamp [s], confident, std [kg]); ``payload_confident_ratio`` is the share of the
    ``payload`` statuses from ``started_s`` (the behaviour's start) on that were confident (sampled
    at the diagnostics' rate); the truth: the ``unmodelled`` payloads (simulated time [s], link, mass
    [kg]) at the CoM of their links in the ground truth nearest the estimate; the delay from
    ``last_change_s``, the last payload's simulated time (announced or not; None: no payload)."""
    from kangaroo_wbc.estimation.payload_identification import PayloadEstimate
    from kangaroo_wbc_tools.pipeline.metrics import payload_summary, unmodelled_payload

    found = None
    if identified:
        stamp, mass, x, y = identified[-1]
        stds = [std for _, ok, std in statuses if ok]
        found = PayloadEstimate(stamp_s=stamp, confident=True, mass_kg=mass, mass_std_kg=stds[-1] if stds else math.nan,
                                com_xy_in_world_m=np.array([x, y]))
    poses = sorted((k, v) for k, v in truth.items() if v[0] is not None and v[1] is not None)
    at = found.stamp_s if found is not None else (poses[-1][0] * 1e-9 if poses else 0.0)
    q = None
    if poses:
        _, (pose, joints) = min(poses, key=lambda kv: abs(kv[0] * 1e-9 - at))
        q = true_configuration(model, pose, joints)
    true_mass, true_com = unmodelled_payload(model, q, unmodelled, at)
    after = [ok for t, ok, _ in statuses if started_s is not None and t >= started_s]
    ratio = float(np.mean(after)) if after else 0.0
    t = np.array([s for s, *_ in identified])
    mass = np.array([m for _, m, *_ in identified])
    return payload_summary(found, true_mass, true_com, t, mass, last_change_s, ratio)


def base_motion(truth: dict) -> dict:
    """``distance_m``: horizontal distance of the true base from the first ground truth after the
    behaviour started to the last; ``yaw_change_rad``: its unwrapped heading change ({} without poses)."""
    poses = [pose for _, (pose, _) in sorted(truth.items()) if pose is not None]
    if len(poses) < 2:
        return {}
    xy = np.array([(p.position.x, p.position.y) for p in poses])
    yaw = unwrapped_yaw([(p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w) for p in poses])
    return {"distance_m": round(float(np.linalg.norm(xy[-1] - xy[0])), 4),
            "yaw_change_rad": round(float(yaw[-1] - yaw[0]), 4)}


#: A sole carries weight when its true normal force exceeds this [N] (the simulator's contact force
#: is exactly zero in the air).
AIRBORNE_FZ_N = 0.5


def jump_metrics(truth: dict, truth_fz: dict[int, list[float]], started_s: float | None) -> dict:
    """The jump's ``flight_time_s`` and ``apex_height_gain_m`` from the ground truth (every
    ``RIG_GRID_MS``: base pose, both soles' normal forces) from the behaviour's start on, by the
    one-process loop's definition (:func:`~kangaroo_wbc_tools.pipeline.metrics.flight_metrics`)."""
    from kangaroo_wbc_tools.pipeline.metrics import flight_metrics

    if started_s is None:
        return {}
    first = int(round(started_s * 1e9))
    rows = [(truth[k][0].position.z, fz) for k, fz in sorted(truth_fz.items())
            if k >= first and k in truth and truth[k][0] is not None and np.all(np.isfinite(fz))]
    if len(rows) < 2:
        return {}
    z = np.array([r[0] for r in rows])
    airborne = np.array([all(f <= AIRBORNE_FZ_N for f in r[1]) for r in rows])
    return flight_metrics(airborne, z, RIG_GRID_MS * 1e-3, float(z[0]))


def median(values: list[float]) -> float | None:
    """Median of the finite values (a period without samples reports NaN), or None."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return round(float(np.median(v)), 4) if v.size else None


#: The grid of the bench's metrics in the graph [ms]: the stamps every 10th millisecond, where the
#: runner records the plate and the wrench estimates and the simulator its ground truth (decimation 10).
RIG_GRID_MS = 10


def rig_metrics(rig: tuple[str, str], ready_s: float | None, truth: dict, targets: list, plate: list,
                 fz: dict[int, list[float]], soles: list[str]) -> dict:
    """The bench's metrics from the topics (module docstring): the samples on the 10 ms grid
    (``truth``'s, ``plate``'s and ``fz``'s stamps) into
    :func:`~kangaroo_wbc_tools.pipeline.metrics.rig_metrics`, the one-process bench's definitions; the
    behaviour's phases from its timings after ready (the controller's behaviour options are the
    defaults)."""
    import pinocchio as pin

    from kangaroo_wbc.control.behaviours import RigCircleAndPress
    from kangaroo_wbc.robots.kangaroo.rig import load_one_leg
    from kangaroo_wbc.robots.kangaroo.robot import SOLES
    from kangaroo_wbc_tools.pipeline.metrics import rig_metrics
    from kangaroo_wbc_tools.pipeline.rig import RigConfig

    name, leg = rig
    clm = load_one_leg(leg)
    m = clm.model
    behaviour = RigCircleAndPress()
    out = {"rig": name, "leg": leg, "behaviour": "rig", "n_actuated": int(clm.n_a), "n_joints": len(clm.joint_names),
           "press_force_target_n": behaviour.press_force_n}
    if ready_s is None:
        return out
    grid_ms = sorted({round(k * 1e-6) for k in truth} | {round(t * 1e3) for t, _ in plate} | set(fz))
    grid_ms = [k for k in grid_ms if k % RIG_GRID_MS == 0]
    t = np.array(grid_ms, dtype=float) * 1e-3
    at = {k: i for i, k in enumerate(grid_ms)}
    n = t.size
    phase = np.full(n, "wait", dtype=object)
    phase[t >= ready_s] = "approach"
    phase[(t >= ready_s) & (t <= ready_s + behaviour.circle_s)] = "circle"
    phase[t >= ready_s + behaviour.press_starts_s] = "press"
    sole_true, sole_ref = np.full((n, 3), np.nan), np.full((n, 3), np.nan)
    rot = np.full((n, 3, 3), np.nan)
    plate_fz, est_fz = np.full(n, np.nan), np.full(n, np.nan)
    data, base_id, sole_id = m.createData(), m.getFrameId("base_link"), m.getFrameId(SOLES[leg])
    for stamp_ns, (_, joints) in truth.items():
        i = at.get(round(stamp_ns * 1e-6))
        if joints is None or i is None:
            continue
        q = pin.neutral(m)
        for joint, value in zip(*joints):
            if m.existJointName(joint):
                q[m.joints[m.getJointId(joint)].idx_q] = value
        pin.framesForwardKinematics(m, data, q)
        sole = data.oMf[base_id].actInv(data.oMf[sole_id])
        sole_true[i], rot[i] = sole.translation, sole.rotation
    t_target = np.array([s for s, _ in targets])
    if t_target.size >= 2:  # rig/sole_target comes at the ground truth's rate, between its stamps
        xyz = np.array([p for _, p in targets]).reshape(-1, 3)
        within = (t >= t_target[0]) & (t <= t_target[-1])
        sole_ref[within] = np.column_stack([np.interp(t[within], t_target, xyz[:, k]) for k in range(3)])
    for s, f in plate:
        i = at.get(round(s * 1e3))
        if i is not None:
            plate_fz[i] = f
    column = soles.index(f"contact/{SOLES[leg]}/wrench")
    for k, forces in fz.items():
        if k in at:
            est_fz[at[k]] = forces[column]
    return {**out, **rig_metrics(t, phase, sole_true, sole_ref, rot, plate_fz, est_fz, dt=RIG_GRID_MS * 1e-3,
                                 press_target_n=behaviour.press_force_n, force_ramp_s=behaviour.force_ramp_s,
                                 press_settle_s=RigConfig().press_settle_s)}


def weighed(fz: dict[int, list[float]], release_s: float | None, payload_log: list[dict],
             model_mass_kg: float) -> dict:
    """``fz_sum_over_mg`` (and each payload's ``fz_sum_over_mg_after``) from the sole normal forces
    ``fz`` (stamp [ms] → per sole [N]) against the weight with the payloads attached by then (module
    docstring); {} without forces."""
    if release_s is None or not fz:
        return {}
    stamps = np.array(sorted(fz)) * 1e-3
    total = np.array([sum(fz[k]) for k in sorted(fz)])
    mass = np.full(stamps.shape, model_mass_kg)
    weighed = (stamps > release_s + SETTLE_S) & np.isfinite(total)
    changes = sorted((release_s + e["after_ready_s"], e) for e in payload_log)
    for tc, e in changes:
        mass[stamps >= tc] += e["mass_kg"]
        weighed &= ~((stamps >= tc) & (stamps < tc + PAYLOAD_SETTLE_S))
    ratio = total / (mass * GRAVITY_M_S2)
    for i, (tc, e) in enumerate(changes):
        end = changes[i + 1][0] if i + 1 < len(changes) else np.inf
        after = weighed & (stamps >= tc + PAYLOAD_SETTLE_S) & (stamps < end)
        e["fz_sum_over_mg_after"] = round(float(np.mean(ratio[after])), 5) if after.any() else None
    return {"fz_sum_over_mg": round(float(np.mean(ratio[weighed])), 5) if weighed.any() else None,
            "robot_mass_kg": round(float(mass[-1]), 4)}


__all__ = ["SETTLE_S", "PAYLOAD_SETTLE_S", "COM_FROM_S", "AIRBORNE_FZ_N", "RIG_GRID_MS", "com_rmse",
           "true_configuration", "payload_metrics", "base_motion", "jump_metrics", "median", "rig_metrics", "weighed"]
