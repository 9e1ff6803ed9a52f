"""Supervisor of the whole-body controller: behaviours, contact selection and the safe mode (no ROS).

One :meth:`WbcSupervisor.tick` per state sample returns a :class:`Command` that is always finite:

* ``mode = "control"``: the WBC's actuator forces (eq. (29)), clipped to the force limits;
* ``mode = "safe"``: damping ``tau = -d theta_dot_a`` (or zero force) with the reason, when the state
  is stale or non-finite, the QP is infeasible or the solver fails, the configuration is singular
  (or near it: ``J_lu`` ill-conditioned), or a limit is breached.

Stale / non-finite input, QP failures and singular configurations are *transient* (control resumes
with the next good sample); a breached limit (base tilt, actuator stroke) *latches* the safe mode
until :meth:`WbcSupervisor.reset` or a new behaviour is selected. When no state arrives at all, the
caller's watchdog calls :meth:`WbcSupervisor.stale`: the behaviour then restarts from the next good
state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.control.behaviours import Behaviour, BehaviourState, make_behaviour
from kangaroo_wbc.control.reference_governor import GovernorSettings, ReferenceGovernor
from kangaroo_wbc.control.wbc import FrameReference, WbcOutput, WbcReferences
from kangaroo_wbc.errors import InputError, KangarooWbcError, ModelError, NoSolutionFound
from kangaroo_wbc.model.compiled import all_finite, compiled, finite

#: A contact the behaviour has just planned (a touchdown) stays active this long [s] whatever the
#: sole forces say: it is unloaded until the controller loads it, and a measured-contact veto at
#: once kept the robot on one foot while the weight shift moved the CoM back between both (it fell
#: 65 ms after the shift ended). With the CoM still over the other foot the new sole is loaded
#: slowly: in the weight shift it passes the 60 N "in contact" threshold 0.7 s after touchdown.
TOUCHDOWN_GRACE_S = 1.0


@compiled
def _within_strokes(q, idx, lower, upper, margin):
    """Every actuator position ``q[idx]`` within its stroke, ``margin`` beyond it allowed (compiled)."""
    for k in range(idx.shape[0]):
        x = q[idx[k]]
        if x > upper[k] + margin or x < lower[k] - margin:
            return False
    return True


@dataclass
class SafetySettings:
    """Safe-mode thresholds.

    Attributes:
        max_state_age_s: state older than this is stale [s].
        fallback: ``"damp"`` (``tau = -d theta_dot``) or ``"zero"`` (zero force).
        damping_n_s_per_m: damping ``d`` of the fallback [N·s/m].
        max_tilt_rad: base tilt (angle between base z and world z) that latches the safe mode [rad].
        stroke_margin_m: actuator beyond its stroke limit by more than this latches the safe mode [m].
        qp_failure_hold_s: a QP failure within this long [s] of the last control command repeats that
            command (mode ``hold``, as an actuator holds its last command) instead of the fallback:
            an isolated failure at a hard contact switch, with the state a few milliseconds old in the
            real-time node graph, then costs no damping tick under the robot's weight (0: never).
    """

    max_state_age_s: float = 0.05
    fallback: str = "damp"
    damping_n_s_per_m: float = 200.0
    max_tilt_rad: float = 0.7
    stroke_margin_m: float = 0.005
    qp_failure_hold_s: float = 0.02

    def __post_init__(self) -> None:
        if not 0.0 <= self.qp_failure_hold_s <= 0.1:
            raise InputError(f"qp_failure_hold_s must lie in [0, 0.1] s, got {self.qp_failure_hold_s}")
        if self.fallback not in ("damp", "zero"):
            raise InputError(f"fallback must be 'damp' or 'zero', got {self.fallback!r}")


@dataclass
class Command:
    """Actuator command of one tick: forces [N] in ``clm.actuated_joint_names`` order, never NaN."""

    tau_a: np.ndarray
    mode: str
    reason: str = ""
    output: WbcOutput | None = None
    latched: bool = False


@dataclass
class SupervisorStats:
    ticks: int = 0
    safe_ticks: int = 0
    qp_failures: int = 0
    singular: int = 0
    stale: int = 0
    invalid: int = 0
    internal_errors: int = 0  # an exception from outside the package's hierarchy (a library's): safe mode
    iterations_max: int = 0


class WbcSupervisor:
    """Runs a behaviour on a controller and guards the output.

    Args:
        controller: a :class:`~kangaroo_wbc.control.wbc.WholeBodyController` or
            :class:`~kangaroo_wbc.control.reduced_wbc.ReducedWholeBodyController`.
        safety: :class:`SafetySettings`.
        behaviour_factory: ``name, **params -> Behaviour`` (default :func:`make_behaviour`).
        governor: bounds of the external references (:mod:`~kangaroo_wbc.control.reference_governor`).
    """

    def __init__(
        self,
        controller,
        safety: SafetySettings | None = None,
        behaviour_factory: Callable[..., Behaviour] = make_behaviour,
        governor: GovernorSettings | None = None,
    ) -> None:
        self.controller = controller
        self.safety = safety or SafetySettings()
        self._factory = behaviour_factory
        full = getattr(controller, "full", controller)
        self._full = full
        self.clm = full.clm
        self.limits = full.limits
        self.behaviour: Behaviour | None = None
        self._pending: tuple[str, dict] | None = ("stand", {})
        self._params: dict = {}  # the parameters of the running behaviour
        self._latched = ""
        self.stats = SupervisorStats()
        self.last: Command | None = None
        self._last_control: tuple[float, np.ndarray] | None = None  # (t [s], forces) of the last control tick
        #: the references given to the controller at the last control tick (replayed by benchmarks)
        self.last_references = None
        #: external references are bounded and rate-limited here (its ``bounded``: this tick's)
        self.governor = ReferenceGovernor(governor)
        self._contact = {c.name: c for c in full.contacts}
        self._planned_since: dict[str, float] = {}  # planned contact -> when it entered the plan [s]
        self._own_com: np.ndarray | None = None
        self._fault_anchor: np.ndarray | None = None  # the CoM reference when an actuator went out of action

    # ------------------------------------------------------------------ behaviours
    def select(self, name: str, **params) -> None:
        """Switch to behaviour ``name`` at the next good tick (started from the state then); clears a latch."""
        self._factory(name, **params)  # validate now (raises InputError on unknown names/params)
        self._pending = (name, dict(params))
        self._latched = ""
        self.governor.reset()

    def reset(self) -> None:
        """Leave a latched safe mode; the current behaviour restarts from the next state."""
        self._latched = ""
        if self.behaviour is not None:
            self._pending = (self.behaviour.name, self._params)

    @property
    def behaviour_name(self) -> str:
        return self._pending[0] if self._pending else (self.behaviour.name if self.behaviour else "")

    # ------------------------------------------------------------------ actuator modes
    @property
    def actuator_modes(self) -> dict[str, str]:
        """Each actuator's mode (``active``, ``locked``, ``limp``), by actuated-joint name."""
        return self._full.actuator_modes

    def set_actuator_mode(self, name: str, mode: str) -> str:
        """Put actuator ``name`` in ``mode`` from the next tick on
        (:meth:`WholeBodyController.set_actuator_mode`: the QP re-allocates in place); while an
        actuator is out of action the behaviour's CoM reference is governed about its value at the
        fault and the failed actuator is left out of the stroke hold (:meth:`tick`). Returns what
        was lost, in words (for the caller's event).

        Raises:
            InputError: unknown actuator or mode.
        """
        self._full.set_actuator_mode(name, mode)
        full, n = self._full, self.clm.n_a
        driven = int(full.driven.sum())
        what = {"locked": "its stroke is held: the lock carries its force, the QP keeps its acceleration at 0",
                "limp": "no force from it: the QP bounds its force to 0",
                "active": "driven again"}[mode]
        if full.all_driven:
            return f"{what}; all {n} actuators driven, the behaviour's own references"
        out = [a for a, m in full.actuator_modes.items() if m != "active"]
        return (f"{what}; {driven} of {n} actuators driven (out: {', '.join(out)}), the behaviour's CoM "
                f"reference governed about its value at the fault, posture weight "
                f"{full.settings.posture_weight_degraded:g}")

    # ------------------------------------------------------------------ tick
    def tick(
        self,
        t: float,
        q: np.ndarray,
        v: np.ndarray,
        measured_contacts: Iterable[str] | None = None,
        state_age_s: float = 0.0,
        com_reference: np.ndarray | None = None,
        foot_references: Mapping[str, FrameReference] | None = None,
    ) -> Command:
        """One control tick at time ``t`` [s]; never raises on bad state, never returns NaN.

        Args:
            q, v: closed configuration and velocity (as :meth:`WholeBodyController.step`).
            measured_contacts: soles measured in contact, or None (unknown: trust the behaviour).
            state_age_s: age of the state sample [s].
            com_reference: external CoM position overriding the behaviour's [m], or None.
            foot_references: external swing-sole poses by contact name.
        """
        self.stats.ticks += 1
        self.governor.bounded = {}
        v = np.asarray(v, dtype=float)
        q = np.asarray(q, dtype=float)
        if q.shape != (self.clm.model.nq,) or v.shape != (self.clm.model.nv,) or not all_finite(q, v):
            self.stats.invalid += 1
            return self._safe(v, "non-finite or mis-sized state")
        if not state_age_s <= self.safety.max_state_age_s:
            self.stats.stale += 1
            return self._safe(v, f"stale state ({state_age_s * 1e3:.1f} ms old)")
        if self._latched:
            return self._safe(v, self._latched, latched=True)
        breach = self._limit_breach(q)
        if breach:
            self._latched = breach
            return self._safe(v, breach, latched=True)
        try:
            if self._pending is not None:
                self._start_pending(t, q, v)
            pm = self._full.pm
            self.behaviour.observe(pm.com, pm.com_velocity, pm.q[self.clm.idx_q_a])
            ref = self.behaviour.references(t)
            self._merge(t, q, ref, measured_contacts, com_reference, foot_references)
            self.last_references = ref
            # the state's time: the CoM disturbance observer differentiates the CoM velocity over it
            out = self.controller.step(q, v, references=ref, stamp_s=t - state_age_s)
        except NoSolutionFound as exc:
            self.stats.qp_failures += 1
            status = str(getattr(exc.result, "status", ""))
            reason = f"{'QP infeasible' if 'infeasible' in status else 'QP solver failed'}: {exc}"
            last = self._last_control
            if last is not None and t - last[0] <= self.safety.qp_failure_hold_s:
                self.last = Command(tau_a=last[1].copy(), mode="hold", reason=reason)
                return self.last
            return self._safe(v, reason)
        except ModelError as exc:
            self.stats.singular += 1
            return self._safe(v, f"singular configuration: {exc}")
        except InputError as exc:
            self.stats.invalid += 1
            return self._safe(v, f"controller rejected the state: {exc}")
        except KangarooWbcError as exc:
            return self._safe(v, f"controller error: {exc}")
        except Exception as exc:  # noqa: BLE001 - a library's own exception must still end in a safe command
            self.stats.internal_errors += 1
            return self._safe(v, f"internal error ({type(exc).__name__}: {exc})")
        tau = np.clip(out.tau_a, self.limits.force_min, self.limits.force_max)
        if not self._full.all_driven:
            tau[~self._full.driven] = 0.0  # a locked or limp actuator: no motor force
        if not finite(tau):
            return self._safe(v, "non-finite actuator forces")
        self.stats.iterations_max = max(self.stats.iterations_max, out.qp.iterations)
        cmd = Command(tau_a=tau, mode="control", output=out)
        self.last = cmd
        self._last_control = (t, tau)
        return cmd

    def stale(self, silent_s: float) -> Command:
        """Safe mode because no state arrived for ``silent_s`` [s] (called by a watchdog between
        ticks): zero force (there is no velocity to damp), and the behaviour and the task references
        restart from the next good state (the robot may have moved, or the hardware restarted)."""
        self.stats.stale += 1
        if self.behaviour is not None and self._pending is None:
            self._pending = (self.behaviour.name, self._params)
        self._full.reset_references()
        return self._safe(np.zeros(self.clm.model.nv), f"stale state (no state for {silent_s * 1e3:.0f} ms)")

    def _start_pending(self, t: float, q: np.ndarray, v: np.ndarray) -> None:
        name, params = self._pending
        if self.behaviour is None or not self._full.references_initialised:
            self.controller.step(q, v)  # initialise the references at the current state
        behaviour = self._factory(name, **params)
        behaviour.start(t, BehaviourState.from_controller(self._full))
        self.behaviour, self._params = behaviour, params
        self._planned_since = {}  # a new plan
        self._pending = None

    def _merge(
        self,
        t: float,
        q: np.ndarray,
        ref: WbcReferences,
        measured: Iterable[str] | None,
        com: np.ndarray | None,
        feet: Mapping[str, FrameReference] | None,
    ) -> None:
        if ref.active_contacts is not None:
            # when each planned contact entered the plan: a sole just planned to touch down carries
            # no load until the controller gives it some, so sensing cannot veto it at once
            # (the contacts of a behaviour's first plan are not touchdowns: no grace for them)
            first = not self._planned_since
            self._planned_since = {c: self._planned_since.get(c, -np.inf if first else t)
                                   for c in ref.active_contacts}
        if ref.active_contacts is not None and measured is not None and self.behaviour.measured_contact_veto:
            measured = set(measured)
            kept = tuple(c for c in ref.active_contacts
                         if c in measured or t - self._planned_since[c] < TOUCHDOWN_GRACE_S)
            ref.active_contacts = kept or ref.active_contacts  # never zero contacts from sensing alone
        governor = self.governor
        if ref.com_position is not None:
            self._own_com = np.asarray(ref.com_position, dtype=float)
        own_com = self._own_com
        if not self._full.all_driven and com is None and own_com is not None:
            # An actuator is out of action: the mechanism reaches less, and what it reaches lies about
            # the pose it was in (a locked ankle keeps the roll it had). The behaviour's CoM reference
            # is governed as an external one (support polygon, stroke hold) about its value then.
            if self._fault_anchor is None:
                self._fault_anchor = own_com.copy()
            com, own_com = own_com, self._fault_anchor
        elif self._fault_anchor is not None and self._full.all_driven:
            self._fault_anchor = None  # every actuator driven again: a later fault anchors anew
        if com is None and feet is None and governor.idle:
            return  # the behaviour's own references: nothing to govern
        support = self.support_points(ref.active_contacts)
        if own_com is not None:
            governed = governor.com(t, own_com, com, support[:, :2], self._nearest_stroke_end(q))
            if governed is not None:
                ref.com_position, ref.com_velocity = governed
                ref.com_acceleration = np.zeros(3)
        floor_z = float(support[:, 2].min())
        for name in sorted(set(feet or ()) | set(governor.feet)):
            if name not in self._contact:
                continue
            own = ref.foot_poses.get(name)
            if own is None:
                R, p = self._full.pm.placement(self._contact[name].frame)
                own = FrameReference(position=p.copy(), rotation=R.copy())
            external = (feet or {}).get(name)
            position = governor.foot(name, t, own.position, None if external is None else external.position,
                                     floor_z)
            if position is not None:
                rotation = own.rotation if external is None else governor.foot_rotation(
                    name, own.rotation, external.rotation)
                ref.foot_poses = {**ref.foot_poses, name: FrameReference(position=position, rotation=rotation)}

    def _nearest_stroke_end(self, q: np.ndarray) -> tuple[str, float]:
        """The actuator nearest to an end of its stroke and its distance to it [m]."""
        theta = q[self.clm.idx_q_a]
        margin = np.minimum(theta - self.limits.position_min, self.limits.position_max - theta)
        if not self._full.all_driven:
            margin[~self._full.driven] = np.inf  # a locked or limp actuator is not driven to its ends
        i = int(np.argmin(margin))
        return self.clm.actuated_joint_names[i], float(margin[i])

    def support_points(self, active: Iterable[str] | None) -> np.ndarray:
        """``(N, 3)`` world corner points [m] of the soles in contact (every sole when unknown)."""
        names = [n for n in (active or self._contact) if n in self._contact] or list(self._contact)
        points = []
        for name in names:
            spec = self._contact[name]
            R, p = self._full.pm.placement(spec.frame)
            points.append(spec.corners @ R.T + p)
        return np.vstack(points)

    def _limit_breach(self, q: np.ndarray) -> str:
        clm, s, lim = self.clm, self.safety, self.limits
        if clm.floating_base:
            x, y, z, w = (float(c) for c in q[3:7])
            cos_tilt = 1.0 - 2.0 * (x * x + y * y) / (x * x + y * y + z * z + w * w)  # R[2, 2]
            if cos_tilt < math.cos(s.max_tilt_rad):
                return f"base tilt {math.degrees(math.acos(min(max(cos_tilt, -1.0), 1.0))):.0f} deg beyond limit"
        if _within_strokes(q, clm.idx_q_a, lim.position_min, lim.position_max, s.stroke_margin_m):
            return ""
        theta = q[clm.idx_q_a]
        over = (theta > lim.position_max + s.stroke_margin_m) | (theta < lim.position_min - s.stroke_margin_m)
        return f"actuator stroke limit breached: {[clm.actuated_joint_names[i] for i in np.flatnonzero(over)]}"

    def _safe(self, v: np.ndarray, reason: str, latched: bool = False) -> Command:
        self.stats.safe_ticks += 1
        self._full.com_observer.restart()  # this command, not the controller's plan, acts
        tau = np.zeros(self.clm.n_a)
        if self.safety.fallback == "damp" and v.shape == (self.clm.model.nv,):
            theta_dot = v[self.clm.idx_v_a]
            if np.all(np.isfinite(theta_dot)):
                tau = np.clip(-self.safety.damping_n_s_per_m * theta_dot, self.limits.force_min, self.limits.force_max)
        cmd = Command(tau_a=tau, mode="safe", reason=reason, latched=latched)
        self.last = cmd
        return cmd


__all__ = ["WbcSupervisor", "SafetySettings", "Command", "SupervisorStats"]
