"""Metrics of a closed-loop run (the JSON of ``kangaroo-wbc demo`` / ``evaluate estimation``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _pct(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) if x.size else float("nan")


def _rmse(x: np.ndarray) -> float:
    x = x[np.all(np.isfinite(x), axis=-1)] if x.ndim > 1 else x[np.isfinite(x)]
    return float(np.sqrt(np.mean(np.sum(x**2, axis=-1)))) if x.size else float("nan")


def unwrapped_yaw(quat_xyzw: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    """Heading [rad] of each orientation (rows ``x y z w``), unwrapped over the rows."""
    x, y, z, w = np.asarray(quat_xyzw, dtype=float).T
    return np.unwrap(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y**2 + z**2)))


def summarize(run) -> dict:
    """Metrics of a :class:`~kangaroo_wbc_tools.pipeline.closed_loop.ClosedLoopRun` after :meth:`run`.

    * ``com_rmse_m``: true CoM vs the controller's CoM reference, after the behaviour starts;
    * ``zmp_inside_support_ratio``: ticks whose *estimated* ZMP lies in the true support polygon
      (convex hull of the sole corners in contact), over ticks in contact with a valid estimate;
    * ``zmp_rmse_m``: estimated vs true ZMP (horizontal), ``fz_sum_over_mg``: estimated vertical
      force over m·g (mean over standing ticks off the crane);
    * estimation errors against the simulator's ground truth; timings from ``time.perf_counter``.
    """
    log, cfg = run.log, run.config
    t = log.array("t")
    crane = log.array("crane") > 0.5
    active = log.array("behaviour") > 0.5
    free = ~crane
    com_err = (log.array("com_true") - log.array("com_ref")).reshape(-1, 3)
    zmp_est, zmp_true = log.array("zmp_est").reshape(-1, 3), log.array("zmp_true").reshape(-1, 3)
    valid = (log.array("zmp_valid") > 0.5) & free & np.all(np.isfinite(zmp_true), axis=1)
    fz_est = log.array("fz_est").reshape(-1, len(run.soles)).sum(axis=1)
    released = run.release_time_s if run.release_time_s is not None else np.inf
    settled = free & (t > released + 0.3)
    # the true weight at each tick, with the payloads of the run (LoopConfig.payloads) attached by then
    # (the model's mass includes them unless they were unannounced); the estimate settles for 1 s
    # after each change
    payloads = [(tc, mass) for tc, _, mass, _ in getattr(run, "morphology_changes", []) if not isinstance(mass, str)]
    announced = not getattr(cfg, "payload_unannounced", False)
    mg = np.full(t.shape, (run.clm.mass_kg - (sum(m for _, m in payloads) if announced else 0.0)) * 9.81)
    weighed = settled.copy()
    for tc, mass in payloads:
        mg[t >= tc] += mass * 9.81
        weighed &= ~((t >= tc) & (t < tc + 1.0))
    wbc_ms, est_ms = log.array("wbc_ms"), log.array("est_ms")
    offsets_true = run.sim.sensors.encoder_offset[run.sim_to_model]
    cal = run.calibration
    offset_err = float(np.max(np.abs(cal.offsets - offsets_true))) if cal is not None else None
    base_err = (log.array("base_est") - log.array("base_true")).reshape(-1, 3)
    return {
        "behaviour": cfg.behaviour,
        "duration_s": round(float(t[-1] - t[0]) if t.size else 0.0, 4),
        "fell": bool(run.fell),
        "formulation": getattr(run.wbc, "formulation", "full"),
        "com_rmse_m": _rmse(com_err[active]) if active.any() else _rmse(com_err[settled]),
        "com_max_error_m": float(np.max(np.linalg.norm(com_err[settled], axis=1))) if settled.any() else None,
        "zmp_inside_support_ratio": float(np.mean(log.array("support_margin")[valid] >= -1e-9)) if valid.any() else 0.0,
        "zmp_rmse_m": _rmse((zmp_est - zmp_true)[valid][:, :2]) if valid.any() else None,
        "fz_sum_over_mg": float(np.mean(fz_est[weighed] / mg[weighed])) if weighed.any() else None,
        "qp_failures": int(run.qp_failures),
        "safe_mode_ticks": int(run.safe_mode_ticks),
        "wbc_ms_p50": round(_pct(wbc_ms, 50), 4),
        "wbc_ms_p99": round(_pct(wbc_ms, 99), 4),
        "estimator_ms_p50": round(_pct(est_ms, 50), 4),
        "estimator_ms_p99": round(_pct(est_ms, 99), 4),
        "calibration_iterations": int(cal.iterations) if cal is not None else None,
        "release_time_s": run.release_time_s,
        "calibration_offset_error_m": offset_err,
        "passive_position_rmse_rad": _rmse(log.array("passive_q_err")),
        "passive_velocity_rmse_rad_s": _rmse(log.array("passive_v_err")),
        "max_closure_error": float(np.max(log.array("closure_error"))) if t.size else None,
        "base_position_drift_m": float(np.linalg.norm(base_err[-1])) if t.size else None,
        "sim_time_s": round(float(run.sim.time), 4),
        "wall_time_s": round(run.wall_time_s, 3),
        "rtf": round(float(run.sim.time) / max(run.wall_time_s, 1e-9), 4),
        "pipelined": bool(run.config.pipelined),
        **walking(run),
        **jumping(run),
        **morphology(run, t, com_err, active),
        **payload_identification(run, t),
    }


def morphology(run, t: np.ndarray, com_err: np.ndarray, active: np.ndarray) -> dict:
    """Morphology metrics when the run changed the robot (``LoopConfig.faults``, ``payloads``), else
    ``{}``: ``faults`` (time [s], actuator, mode, controller update [ms] each), ``payloads`` (time,
    link, mass [kg], model update [ms]), ``morphology_change_ms`` (the longest update) and
    ``com_rmse_after_fault_m`` (CoM error after the first change)."""
    changes = getattr(run, "morphology_changes", [])
    if not changes:
        return {}
    after = active & (t >= changes[0][0])
    out = {"morphology_change_ms": round(max(c[3] for c in changes), 4),
           "com_rmse_after_fault_m": _rmse(com_err[after]) if after.any() else None}
    faults = [{"t_s": round(tc, 4), "actuator": n, "mode": m, "update_ms": round(ms, 4)}
              for tc, n, m, ms in changes if isinstance(m, str)]
    payloads = [{"t_s": round(tc, 4), "link": n, "mass_kg": m, "update_ms": round(ms, 4)}
                for tc, n, m, ms in changes if not isinstance(m, str)]
    return {**out, **({"faults": faults} if faults else {}), **({"payloads": payloads} if payloads else {})}


def payload_identification(run, t: np.ndarray) -> dict:
    """Payload identification metrics when the run identified (the wrench component's
    ``payload_identification``), else ``{}``: :func:`payload_summary` of the last confident
    estimate, the log's confident estimates (``payload_mass``, NaN when not confident) and the
    payloads the simulated robot carried unmodelled (those of an unannounced run, at the CoM of
    their links in the simulator's configuration logged nearest the estimate)."""
    wrench = getattr(run, "wrench", None)
    found = None if wrench is None else wrench.identified_payload
    if wrench is None or wrench.payload is None:
        return {}
    log = run.log
    changes = [(tc, link, mass) for tc, link, mass, _ in getattr(run, "morphology_changes", [])
               if not isinstance(mass, str)]
    unannounced = bool(getattr(run.config, "payload_unannounced", False))
    at = float(found.stamp_s) if found is not None else (float(t[-1]) if t.size else 0.0)
    q = log.array("q_true").reshape(t.size, -1)[int(np.argmin(np.abs(t - at)))] if t.size else None
    true_mass, true_com = unmodelled_payload(run.clm.model, q, changes if unannounced else [], at)
    mass = log.array("payload_mass")
    confident = np.isfinite(mass)
    active = log.array("behaviour") > 0.5
    ratio = float(np.mean(confident[active])) if active.any() else 0.0
    sampled = changes and mass.size == t.size
    return payload_summary(found, true_mass, true_com, t[confident] if sampled else t[:0],
                           mass[confident] if sampled else mass[:0], changes[-1][0] if sampled else None, ratio)


#: A confident estimate within this of the unmodelled mass counts as the identification [kg]
#: (``payload_identification_delay_s``).
PAYLOAD_FOUND_TOL_KG = 0.5


def payload_summary(found, true_mass_kg: float, true_com_xy_m: np.ndarray | None, confident_t: np.ndarray,
                    confident_mass_kg: np.ndarray, last_change_s: float | None, confident_ratio: float) -> dict:
    """The payload identification's summary keys (the one-process demo's and the node graph's):

    * ``payload_identified_kg``, ``payload_identified_com_xy_m`` (world, horizontal; None while the
      mass is too small for a CoM), ``payload_identified_std_kg``, ``payload_identified_at_s``: the
      last confident estimate ``found`` (a
      :class:`~kangaroo_wbc.estimation.payload_identification.PayloadEstimate`; None: never
      confident; a NaN std: not known);
    * ``payload_unmodelled_kg``: the truth, the mass the model was not told about (the payloads of
      an unannounced run, else 0), ``payload_unmodelled_com_xy_m`` its CoM at that time (the
      simulator's configuration; the identified one is in the estimator's world frame, which
      drifts by ``base_position_drift_m``); ``payload_mass_error_kg`` and
      ``payload_com_xy_error_m``: identified minus true;
    * ``payload_identification_delay_s`` (when ``last_change_s`` is given): from the last payload
      change to the first confident estimate (``confident_t`` [s], ``confident_mass_kg``) within
      :data:`PAYLOAD_FOUND_TOL_KG` of the unmodelled mass (None: none);
      ``payload_confident_ratio``: the share of the time after the behaviour starts with a
      confident estimate, as the caller sampled it.
    """
    out = {"payload_identified_kg": None if found is None else float(found.mass_kg),
           "payload_identified_com_xy_m": None, "payload_identified_std_kg": None,
           "payload_identified_at_s": None if found is None else round(float(found.stamp_s), 4),
           "payload_unmodelled_kg": true_mass_kg,
           "payload_unmodelled_com_xy_m": None if true_com_xy_m is None else true_com_xy_m.tolist(),
           "payload_mass_error_kg": None if found is None else float(found.mass_kg - true_mass_kg),
           "payload_com_xy_error_m": None}
    if found is not None:
        out["payload_identified_std_kg"] = float(found.mass_std_kg) if np.isfinite(found.mass_std_kg) else None
        com = np.asarray(found.com_xy_in_world_m, dtype=float)
        if np.all(np.isfinite(com)):
            out["payload_identified_com_xy_m"] = com.tolist()
            if true_com_xy_m is not None:
                out["payload_com_xy_error_m"] = float(np.linalg.norm(com - true_com_xy_m))
    out["payload_confident_ratio"] = confident_ratio
    if last_change_s is not None:
        t, mass = np.asarray(confident_t, dtype=float), np.asarray(confident_mass_kg, dtype=float)
        later = (t >= last_change_s) & (np.abs(mass - true_mass_kg) <= PAYLOAD_FOUND_TOL_KG)
        out["payload_identification_delay_s"] = (round(float(t[np.argmax(later)] - last_change_s), 4)
                                                 if later.any() else None)
    return out


def unmodelled_payload(model, q: np.ndarray | None, changes: list, at_s: float) -> tuple[float, np.ndarray | None]:
    """Mass [kg] of the payloads in ``changes`` (time [s], link, mass [kg]) applied by ``at_s`` and
    the horizontal world position [m] of their CoM (None without mass or configuration) in the
    configuration ``q`` of the pinocchio ``model`` (the simulator's at ``at_s``): each sits at the
    CoM of its link's body."""
    import pinocchio as pin

    applied = [(link, m) for tc, link, m in changes if tc <= at_s]
    total = float(sum(m for _, m in applied))
    if not applied or abs(total) < 1e-9 or q is None:
        return total, None
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    moment = np.zeros(3)
    for link, m in applied:
        j = model.frames[model.getFrameId(link)].parentJoint
        moment += m * data.oMi[j].act(model.inertias[j].lever)
    return total, (moment / total)[:2]


def walking(run) -> dict:
    """Walking metrics when the run's behaviour logged a walk trace (:meth:`Walk.trace`), else ``{}``.

    * ``distance_m``: horizontal distance of the true base from the walk's start to the end;
      ``yaw_change_rad``: its unwrapped heading change; ``mean_speed_mps``: distance over the
      time since the walk started;
    * ``speed_tracking_rmse_mps`` / ``yaw_rate_tracking_rmse_radps``: the true base velocity in its
      heading frame, averaged over one stride (two steps) as a walking speed is, vs the requested
      command averaged likewise; from one stride after the first step on;
    * ``footstep_error_m_mean`` / ``_max``: planned footstep (after step adjustment) vs where the
      true sole stands 0.1 s after touchdown; ``steps``: touchdowns;
    * ``dcm_rmse_m``: true DCM ``c + ċ/ω`` vs the plan's; ``zmp_margin_min_m`` / ``_median_m``:
      distance of the estimated ZMP inside the true support polygon (negative: outside).
    """
    from kangaroo_wbc.control.behaviours import Walk

    trace = _behaviour_trace(run, Walk)
    if trace is None:
        return {}
    behaviour, t_all, rows, t, walk = trace
    log = run.log
    q = log.array("q_true").reshape(t_all.size, -1)[rows]
    f = {name: walk[:, i] for i, name in enumerate(Walk.TRACE)}
    moving = f["phase"] > 0
    if not moving.any():
        return {"distance_m": 0.0, "yaw_change_rad": 0.0, "steps": 0}
    i0 = int(np.argmax(moving))
    yaw = unwrapped_yaw(q[:, 3:7])
    base = q[:, :2]
    gait = behaviour.gait
    dt = float(np.median(np.diff(t))) if t.size > 1 else run.dt
    n = max(int(round(2 * gait.step_s / dt)), 1)
    out = {"distance_m": float(np.linalg.norm(base[-1] - base[i0])), "yaw_change_rad": float(yaw[-1] - yaw[i0]),
           "mean_speed_mps": float(np.linalg.norm(base[-1] - base[i0]) / max(t[-1] - t[i0], 1e-9)),
           "steps": len(behaviour.touchdowns)}
    start = i0 + int(round(gait.start_double_support_s / dt)) + n
    if start < t.size:
        k = np.arange(start, t.size)
        d = (base[k] - base[k - n]) / (n * dt)
        heading = 0.5 * (yaw[k] + yaw[k - n])
        c, s = np.cos(heading), np.sin(heading)
        v = np.column_stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]])
        window = np.cumsum(np.vstack([np.zeros((1, 3)), walk[:, 3:6]]), axis=0)
        request = (window[k + 1] - window[k + 1 - n]) / n
        out["speed_tracking_rmse_mps"] = _rmse(v - request[:, :2])
        out["yaw_rate_tracking_rmse_radps"] = _rmse(((yaw[k] - yaw[k - n]) / (n * dt) - request[:, 2])[:, None])
    out.update(_footstep_errors(run, behaviour, t, q))
    com = log.array("com_true").reshape(t_all.size, 3)[rows]
    if t.size > 20:
        com_v = np.gradient(com[:, :2], t, axis=0)
        dcm = com[:, :2] + com_v / behaviour.omega
        out["dcm_rmse_m"] = _rmse((dcm - walk[:, 8:10])[i0:])
    margin = log.array("support_margin")[rows][i0:]
    valid = ((log.array("zmp_valid") > 0.5) & (log.array("crane") < 0.5))[rows][i0:] & np.isfinite(margin)
    if valid.any():
        out["zmp_margin_min_m"] = float(np.min(margin[valid]))
        out["zmp_margin_median_m"] = float(np.median(margin[valid]))
    return out


def longest_run(flags: np.ndarray) -> tuple[int, int]:
    """``(start, length)`` of the longest run of true samples in ``flags`` ((0, 0) without one)."""
    flags = np.asarray(flags, dtype=bool)
    edges = np.flatnonzero(np.diff(np.r_[0, flags.astype(int), 0]))  # starts and ends of the runs
    if not edges.size:
        return 0, 0
    k = int(np.argmax(edges[1::2] - edges[::2]))
    return int(edges[2 * k]), int(edges[2 * k + 1] - edges[2 * k])


def flight_metrics(airborne: np.ndarray, base_z: np.ndarray, dt: float, z0: float) -> dict:
    """A jump's flight from samples every ``dt`` [s] from the push (or the behaviour's start) on:
    ``flight_time_s``, the longest run of samples with both soles off the ground (``airborne``), and
    ``apex_height_gain_m``, the highest base (``base_z`` [m]) above ``z0`` (the base at the jump's
    start). One definition for the one-process loop and the node graph (which samples every 10 ms)."""
    _, longest = longest_run(airborne)
    return {"flight_time_s": round(longest * dt, 4),
            "apex_height_gain_m": float(np.max(base_z) - z0) if len(base_z) else None}


def pitch_momentum(model, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Whole-body angular momentum about the CoM about the world's y axis [N·m·s] (pinocchio's
    centroidal momentum) of each configuration ``q`` (N, nq) and velocity ``v`` (N, nv)."""
    import pinocchio as pin

    data = model.createData()
    return np.array([pin.computeCentroidalMomentum(model, data, qi, vi).angular[1] for qi, vi in zip(q, v)])


def jumping(run) -> dict:
    """Jump metrics when the run's behaviour is a :class:`~kangaroo_wbc.control.behaviours.Jump`, else ``{}``.

    From the simulator's ground truth: ``flight_time_s`` (longest interval with both soles off the
    ground), ``apex_height_gain_m`` (highest base from the push on, above the base at the jump's
    start), ``takeoff_ankle_stroke_change_m`` (largest change of an ankle actuator's stroke from the
    start of the push to lift-off), ``liftoff_pitch_momentum_nms`` (the whole-body angular momentum
    about the CoM, world y, one tick into the longest flight, which keeps it: :func:`pitch_momentum`),
    ``peak_actuator_force_ratio`` (largest commanded force over its limit, from the push on),
    ``landing_peak_force_over_mg`` (largest total normal force after touchdown over m·g);
    ``jump_completed``: the behaviour reached ``done``.
    """
    from kangaroo_wbc.control.behaviours import Jump

    trace = _behaviour_trace(run, Jump)
    if trace is None:
        return {}
    _, t_all, rows, t, plan = trace
    log = run.log
    phase = plan[:, 0].astype(int)
    push = int(np.argmax(phase >= Jump.PHASES.index("push"))) if np.any(phase >= Jump.PHASES.index("push")) else None
    if push is None:
        return {"jump_completed": False}
    q = log.array("q_true").reshape(t_all.size, -1)[rows]
    airborne = ~np.any(log.array("contact_true").reshape(t_all.size, -1)[rows] > 0.5, axis=1)
    airborne[:push] = False
    dt = float(np.median(np.diff(t))) if t.size > 1 else run.dt
    liftoff = int(np.argmax(airborne)) if airborne.any() else None
    flight = flight_metrics(airborne[push:], q[push:, 2], dt, float(q[0, 2]))
    start, longest = longest_run(airborne)  # the flight the flight time measures
    clm = run.clm
    theta = q[:, clm.idx_q_a]
    ankles = [i for i, n in enumerate(clm.actuated_joint_names) if "ankle" in n]
    end = liftoff if liftoff is not None else int(np.argmax(phase > Jump.PHASES.index("push")))
    stroke = (float(np.max(np.abs(theta[push:end + 1, ankles] - theta[push, ankles]))) if ankles and end > push
              else None)
    tau = log.array("tau").reshape(t_all.size, -1)[rows][push:]
    limit = np.asarray(run.wbc.limits.force_max, dtype=float)
    fz = log.array("fz_true").reshape(t_all.size, -1)[rows].sum(axis=1)
    after = start + longest if longest else push  # the touchdown ending the longest flight
    momentum = None
    if longest > 2:  # one tick into the (longest) flight
        v = log.array("v_true").reshape(t_all.size, -1)[rows]
        momentum = float(pitch_momentum(clm.model, q[start + 1:start + 2], v[start + 1:start + 2])[0])
    return {"jump_completed": bool(phase[-1] == Jump.PHASES.index("done")), **flight,
            "liftoff_pitch_momentum_nms": momentum,
            "takeoff_ankle_stroke_change_m": stroke,
            "peak_actuator_force_ratio": float(np.max(np.abs(tau) / limit)) if tau.size else None,
            "landing_peak_force_over_mg": float(np.max(fz[after:]) / (run.clm.mass_kg * 9.81))
            if after < fz.size else None}


def _behaviour_trace(run, cls) -> tuple | None:
    """The logged trace of the run's behaviour if it is a ``cls`` (None otherwise, or without a
    trace): the behaviour, the log's times, the rows it ran (``behaviour`` flag), their times and
    its trace there (``cls.TRACE`` columns)."""
    behaviour = run.control.supervisor.behaviour
    plan = run.log.array("plan")
    if plan.size == 0 or not isinstance(behaviour, cls):
        return None
    t_all = run.log.array("t")
    rows = run.log.array("behaviour") > 0.5
    return behaviour, t_all, rows, t_all[rows], plan.reshape(t_all.size, len(cls.TRACE))[rows]


def _footstep_errors(run, behaviour, t: np.ndarray, q: np.ndarray) -> dict:
    """Planned footsteps vs the true soles 0.1 s after each touchdown (:func:`walking`)."""
    import pinocchio as pin

    model = run.clm.model
    data = model.createData()
    frames = {c.name: c.frame for c in run.wbc.contacts}
    errors = []
    for tau, step, _ in behaviour.touchdowns:
        i = int(np.searchsorted(t, behaviour.t0 + tau + 0.1))
        if i >= t.size:
            continue
        pin.framesForwardKinematics(model, data, q[i])
        sole = data.oMf[model.getFrameId(frames[step.side])].translation
        errors.append(float(np.linalg.norm(sole[:2] - step.xy)))
    if not errors:
        return {}
    return {"footstep_error_m_mean": float(np.mean(errors)), "footstep_error_m_max": float(np.max(errors))}


def summarize_rig(run) -> dict:
    """Metrics of a :class:`~kangaroo_wbc_tools.pipeline.rig.RigRun` (the one-leg test bench) after its run:
    :func:`rig_metrics` on its log (the sole's true position in the true pelvis frame against its
    reference in the estimated pelvis frame; the plate's and the estimator's world vertical forces),
    and the run's own figures (QP failures, loop time, calibration, passive state, base drift).
    ``fell``: None (meaningless on a rig: the pelvis is clamped).
    """
    log, cfg = run.log, run.config
    t = log.array("t")
    behaviour = run.behaviour
    press_target = float(getattr(behaviour, "press_force_n", float("nan"))) if behaviour is not None else None
    bench = rig_metrics(
        t, np.array(log.rows.get("phase", []), dtype=object),
        log.array("sole_true_in_base").reshape(-1, 3), log.array("sole_ref_in_base").reshape(-1, 3),
        np.array(log.rows.get("sole_rot_true_in_base", [])).reshape(-1, 3, 3),
        log.array("plate_force_world").reshape(-1, 3)[:, 2], log.array("force_est_world").reshape(-1, 3)[:, 2],
        dt=run.dt, press_target_n=press_target,
        force_ramp_s=None if behaviour is None else behaviour.force_ramp_s, press_settle_s=cfg.press_settle_s)
    cal = run.calibration
    offsets_true = run.sim.sensors.encoder_offset[run.sim_to_model]
    loop_ms = log.array("loop_ms")
    return {
        "rig": cfg.rig,
        "leg": cfg.leg,
        "behaviour": "rig",
        "duration_s": round(float(t[-1] - t[0]) if t.size else 0.0, 4),
        "fell": None,
        "n_actuated": int(run.clm.n_a),
        "n_joints": len(run.clm.joint_names),
        **bench,
        "qp_failures": int(run.qp_failures),
        "safe_mode_ticks": int(run.safe_mode_ticks),
        "loop_ms_p50": round(_pct(loop_ms, 50), 4),
        "loop_ms_p99": round(_pct(loop_ms, 99), 4),
        "calibration_offset_error_m": float(np.max(np.abs(cal.offsets - offsets_true))) if cal is not None else None,
        "passive_position_rmse_rad": _rmse(log.array("passive_q_err")),
        "base_position_drift_m": (float(np.linalg.norm(log.array("base_est").reshape(-1, 3)[-1]
                                                       - log.array("base_est").reshape(-1, 3)[0])) if t.size else None),
        "sim_time_s": round(float(run.sim.time), 4),
        "wall_time_s": round(float(run.wall_time_s), 3),
    }


def rig_metrics(t: np.ndarray, phase: np.ndarray, sole_true_in_base: np.ndarray, sole_ref_in_base: np.ndarray,
                sole_rot_true_in_base: np.ndarray, plate_force_n: np.ndarray, force_est_n: np.ndarray, *,
                dt: float, press_target_n: float | None, force_ramp_s: float | None,
                press_settle_s: float) -> dict:
    """The one-leg bench's tracking and press metrics over samples of period ``dt`` [s] (the
    one-process bench's ticks, or the node graph's 10 ms grid of its topics); NaN marks what a
    sample lacks.

    * ``circle_s``: samples in the ``circle`` phase times ``dt`` [s]; ``foot_rmse_m``, over the
      circle's samples with both positions, the sole's true position against its reference, in the
      pelvis frame [m] (``foot_max_error_m`` the largest); ``foot_orientation_rmse_rad`` the sole's
      true rotation against its rotation at the first of those samples (level) [rad];
    * ``press_hold_s``: samples of the hold (the ``press`` phase from ``force_ramp_s +
      press_settle_s`` after its first sample) times ``dt`` [s]; ``press_force_n``: the plate's
      normal force averaged over the hold [N]; ``press_force_error_n`` against ``press_target_n``,
      ``press_force_std_n``;
    * ``wrench_estimate_force_n``: the contact-wrench estimator's normal force (from the motor
      torques) over the hold's samples that have both forces, ``wrench_estimate_error_n`` minus the
      plate's, ``wrench_estimate_rmse_n`` per sample [N].

    Args:
        t: sample times [s], shape (n,).
        phase: the bench behaviour's phase at each sample (``circle``, ``approach``, ``press``, ...).
        sole_true_in_base, sole_ref_in_base: the sole's true and reference positions in the pelvis
            frame [m], shape (n, 3).
        sole_rot_true_in_base: the sole's true rotation in the pelvis frame, shape (n, 3, 3).
        plate_force_n, force_est_n: the plate's and the estimator's normal force [N], shape (n,).
        dt: the sample period [s].
        press_target_n: the behaviour's press force [N] (None: unknown).
        force_ramp_s, press_settle_s: the press's force ramp [s] (None: no hold) and the settling
            time after it [s].
    """
    t, phase = np.asarray(t, dtype=float), np.asarray(phase, dtype=object)
    err = np.asarray(sole_true_in_base, dtype=float) - np.asarray(sole_ref_in_base, dtype=float)
    rot = np.asarray(sole_rot_true_in_base, dtype=float)
    fz_true, fz_est = np.asarray(plate_force_n, dtype=float), np.asarray(force_est_n, dtype=float)
    circle = phase == "circle"
    tracked = circle & np.all(np.isfinite(err), axis=1) if err.size else circle
    press = phase == "press"
    hold = np.zeros(t.shape, dtype=bool)
    if press.any() and force_ramp_s is not None:
        hold = press & (t >= t[np.argmax(press)] + force_ramp_s + press_settle_s)
    plated = hold & np.isfinite(fz_true)
    paired = plated & np.isfinite(fz_est)

    def angle(R: np.ndarray) -> float:
        return float(np.arccos(np.clip(0.5 * (np.trace(R) - 1.0), -1.0, 1.0)))

    out: dict = {"circle_s": round(float(np.sum(circle) * dt), 4),
                 "foot_rmse_m": None, "foot_max_error_m": None, "foot_orientation_rmse_rad": None}
    if tracked.any():
        R0 = rot[np.argmax(tracked)]
        out.update(foot_rmse_m=_rmse(err[tracked]),
                   foot_max_error_m=float(np.max(np.linalg.norm(err[tracked], axis=1))),
                   foot_orientation_rmse_rad=float(np.sqrt(np.mean([angle(R0.T @ R) ** 2 for R in rot[tracked]]))))
    press_force = float(np.mean(fz_true[plated])) if plated.any() else None
    out.update({
        "press_hold_s": round(float(np.sum(hold) * dt), 4),
        "press_force_target_n": press_target_n,
        "press_force_n": press_force,
        "press_force_error_n": (None if press_force is None or press_target_n is None
                                else press_force - press_target_n),
        "press_force_std_n": float(np.std(fz_true[plated])) if plated.any() else None,
        "wrench_estimate_force_n": float(np.mean(fz_est[paired])) if paired.any() else None,
        "wrench_estimate_error_n": float(np.mean(fz_est[paired] - fz_true[paired])) if paired.any() else None,
        "wrench_estimate_rmse_n": _rmse((fz_est[paired] - fz_true[paired])[:, None]) if paired.any() else None,
    })
    return out
