"""Reduced whole-body control: swing chains compressed to their centroidal motion, two QPs in sequence.

Ahn et al., "Efficient Computation of Whole-Body Control Utilizing Simplified Whole-Body Dynamics
via Centroidal Dynamics" (the *centroidal paper*), applied on top of the closure-projected dynamics
of the Kangaroo paper (App. B). In projected coordinates ``nu = [v_base, theta_dot_a]`` the chains are
the base (*virtual chain*, ``vc``), the actuators of the legs in contact (*constraint chain*, ``cc``)
and those of the swing legs (*unconstrained chain*, ``uc``). The swing chain is compressed to the
6D average spatial velocity of its bodies, in the base frame (eq. (8)-(10)):

.. math::

    v_{G,uc} = J_{G,uc} \\dot\\theta_{uc}, \\qquad J_{G,uc} = I_{G,uc}^{-1} M_{G,uc}, \\qquad
    \\dot q_r = J_r \\nu, \\quad J_r = \\begin{bmatrix} S_{vc} \\\\ S_{cc} \\\\ J_{G,uc} S_{uc} \\end{bmatrix}
    \\quad \\text{(eq. (11)-(13))}

with ``M_{G,uc}`` the momentum of the swing-leg bodies about their own CoM (columns ``uc`` of the
centroidal momentum matrix shifted from the robot CoM to the leg CoM) and ``I_{G,uc}`` their
composite spatial inertia. The reduced dynamics (eq. (14a)-(15)):

.. math::

    M_r = (J_r M_p^{-1} J_r^T)^{-1}, \\quad h_r = M_r (J_r M_p^{-1} h_p - \\dot J_r \\nu), \\quad
    \\bar J_r = M_p^{-1} J_r^T M_r, \\quad J_{c,r} = J_c[:, vc \\cup cc]

**LQP 1** (Table 2) over ``[q_ddot_r, f]``: base rows of (14), stance contacts, friction cones,
``cc`` actuator-force limits and stroke bounds; tasks in reduced space ``J_t \\bar J_r`` (eq. (22)):
CoM, base orientation, angular momentum, ``cc`` posture. **LQP 2** over ``theta_ddot_uc``: the
centroidal-acceleration constraint (30) ``J_G θ̈_uc + J̇_G θ̇_uc = ẍ_G*`` as a heavily weighted task
(weighted lexicographic method), the swing-sole pose task (eq. (23)), ``uc`` posture,
actuator-force limits (eq. (69) rows of ``uc``) and stroke bounds. The actuator forces are then
eq. (29)/(69) with the assembled ``nu_dot`` and ``f``.

``J̇_G θ̇_uc`` is the backward difference of ``J_G`` over the last tick (first tick: zero).

**Limits and actuator modes** are the full controller's, split by chain: the stroke damper
(:attr:`WholeBodyController.stroke_limits`, a locked actuator's zero box) bounds the ``cc``
accelerations in LQP 1 and the ``uc`` ones in LQP 2; the force bounds in effect
(:attr:`WholeBodyController.force_bounds`: a limp actuator's are 0) bound eq. (14)'s ``cc`` rows in
LQP 1 and eq. (69)'s ``uc`` rows in LQP 2; each passive-joint limit row ``lo <= T_u nu_dot <= hi``
(:class:`~kangaroo_wbc.control.constraints.PassiveJointLimits`, eq. (7)/(10): a passive joint moves
with its own leg's actuators only) goes to the QP that owns its leg — LQP 1 over ``[v_base, cc]``
for a stance leg, LQP 2 over ``uc`` (the ``vc ∪ cc`` part of ``nu_dot`` then known) for a swing leg.
:meth:`ReducedWholeBodyController.active_limits` names the limits binding the assembled ``nu_dot``.

With Kangaroo's 6-actuator legs ``n_uc = 6``: ``J_r`` is square, the reduction is an exact change of
coordinates (no fewer variables: 6 + 6 + 6 + forces, as the full QP) and ``N_r = 0``. Setting
``swing_task_in_lqp1`` (the default in that case) then places the swing-sole task in LQP 1
(exact, since ``J_t N_r = 0``), leaving LQP 2 to resolve eq. (30). In double support there is no
unconstrained chain and the method is the full WBC (one QP).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import scipy.linalg

from kangaroo_wbc.control.constraints import (
    ContactForceBox,
    FloatingBaseDynamics,
    FrictionCones,
    StationaryContacts,
)
from kangaroo_wbc.control.contacts import ContactSpec, ContactTerms, DecisionLayout
from kangaroo_wbc.control.qp import OsqpSolver, QpProblem
from kangaroo_wbc.control.qp_solvers import make_solver
from kangaroo_wbc.control.wbc import (
    ActuatorLimits,
    WbcOutput,
    WbcReferences,
    WbcSettings,
    WholeBodyController,
)
from kangaroo_wbc.errors import InputError, NoSolutionFound
from kangaroo_wbc.model import ClosedLoopModel

STRUCTURAL_ZERO = 1e-10


@dataclass
class ReducedSettings:
    """Options of the reduced formulation.

    Attributes:
        centroid_weight: weight of eq. (30) in LQP 2 (weighted lexicographic method) [-].
        swing_task_in_lqp1: put the swing-sole task in LQP 1 (exact when ``n_uc = 6``); ``None``
            (default) does so exactly when ``n_uc = 6``, where LQP 2 has no redundancy left for it
            (the paper's placement then leaves the swing sole uncontrolled: measured 0.28 m drift
            during a 4 s single support on Kangaroo before the touchdown fails).
        control_period_s: tick period used for the backward difference of ``J_G`` [s].
    """

    centroid_weight: float = 1e4
    swing_task_in_lqp1: bool | None = None
    control_period_s: float = 1e-3


class ReducedWholeBodyController:
    """Two-stage reduced WBC (see module docstring); same inputs and output as the full controller.

    Double support (no swing chain) is delegated to the full :class:`WholeBodyController`.
    """

    def __init__(self, clm: ClosedLoopModel, contacts: Sequence[ContactSpec], settings: WbcSettings | None = None,
                 limits: ActuatorLimits | None = None, reduced: ReducedSettings | None = None,
                 q_nominal: np.ndarray | None = None) -> None:
        self.full = WholeBodyController(clm, contacts, settings, limits, q_nominal)
        self.reduced = reduced or ReducedSettings()
        self.clm, self.pm, self.layout = clm, self.full.pm, self.full.layout
        self.settings = self.full.settings
        self._chains = self._find_chains(q_nominal)
        # per swing set: LQP 1's layout, constraints and solver; LQP 2's solver
        self._lqp1: dict[tuple[str, ...], tuple[DecisionLayout, tuple, OsqpSolver]] = {}
        self._lqp2: dict[tuple[str, ...], OsqpSolver] = {}
        self._J_G_prev: dict[tuple[str, ...], np.ndarray] = {}
        # the passive-joint limit rows of a reduced tick (full layout's width: the constraint's
        # `active` then reads them against the assembled solution), their bounds, and the stroke box
        L, n_s = self.layout, self.full.passive_limits.n_slots
        self._P = np.zeros((n_s, L.n))
        self._P_lo, self._P_hi = np.full(n_s, -np.inf), np.full(n_s, np.inf)
        self._box_lo, self._box_hi = np.full(L.n, -np.inf), np.full(L.n, np.inf)
        #: the last reduced tick's ``nu_dot`` in the full layout (None: the last tick was the full QP's)
        self._x_reduced: np.ndarray | None = None

    # ------------------------------------------------------------------ chains
    def _find_chains(self, q_nominal: np.ndarray | None) -> dict[str, tuple[np.ndarray, list[int]]]:
        """Per contact: actuator indices (in ``theta_a``) of its leg and the tree roots of its bodies."""
        clm, pm, m = self.clm, self.pm, self.clm.model
        q = clm.q_ref if q_nominal is None else q_nominal
        pm.update(q, np.zeros(pm.n_nu))
        out = {}
        n_b = pm.n_b
        for c in self.full.contacts:
            J = pm.jacobian(c.frame)[:, n_b:]
            acts = np.flatnonzero(np.max(np.abs(J), axis=0) > STRUCTURAL_ZERO)
            # velocity indices moved by these actuators
            moving = set(np.flatnonzero((np.abs(pm.T[:, n_b + acts]) > STRUCTURAL_ZERO).any(axis=1)).tolist())
            roots = []
            for r in range(2, m.njoints):
                if m.parents[r] != 1:
                    continue
                dofs = {m.joints[j].idx_v + k for j in m.subtrees[r] for k in range(m.joints[j].nv)}
                if dofs & moving:
                    roots.append(r)
            out[c.name] = (acts, roots)
        for a, b in itertools.combinations(out, 2):
            if np.intersect1d(out[a][0], out[b][0]).size:
                raise InputError(f"contacts {a!r} and {b!r} share actuators: chains are not separable")
        return out

    # ------------------------------------------------------------------ step
    def step(self, q: np.ndarray, v: np.ndarray, active_contacts: Iterable[str] | None = None,
             references: WbcReferences | None = None, stamp_s: float | None = None) -> WbcOutput:
        """One tick; same contract as :meth:`WholeBodyController.step`."""
        full = self.full
        if references is not None and references.active_contacts is not None and active_contacts is None:
            active_contacts = references.active_contacts
        active = full.active_contacts if active_contacts is None else tuple(active_contacts)
        swing = tuple(c.name for c in full.contacts if c.name not in active)
        if not swing:
            self._x_reduced = None
            return full.step(q, v, active, references, stamp_s)
        return self._reduced_step(q, v, active, swing, references, stamp_s)

    def configure(self, settings: WbcSettings) -> None:
        """Run-time settings (:meth:`WholeBodyController.configure` of the full controller, whose
        tasks this one weighs)."""
        self.full.configure(settings)
        self.settings = self.full.settings

    def set_actuator_mode(self, name: str, mode: str) -> None:
        """The full controller's (:meth:`WholeBodyController.set_actuator_mode`): both QPs read its
        stroke box and force bounds every tick."""
        self.full.set_actuator_mode(name, mode)

    def active_limits(self) -> dict[str, list[str]]:
        """The stroke and passive-joint limits binding the last tick's solution
        (:meth:`WholeBodyController.active_limits`; a reduced tick's assembled ``nu_dot``)."""
        return self.full.active_limits(self._x_reduced)

    def _reduced_step(self, q, v, active, swing, references, stamp_s) -> WbcOutput:
        full, pm, L = self.full, self.pm, self.layout
        t0 = time.perf_counter()
        full.update_model(q, v)
        nu = pm.nu
        full.ensure_references()
        if references is not None:
            full.set_references(references)
        full.switch_contacts(active, references)
        full.observe_com(stamp_s)
        n_b, n_a, n_nu = pm.n_b, pm.n_a, pm.n_nu
        uc = np.concatenate([self._chains[s][0] for s in swing])
        cc = np.setdiff1d(np.arange(n_a), uc)
        n_uc, n_cc = uc.size, cc.size
        if n_uc < 6:
            raise InputError(f"the unconstrained chain has {n_uc} < 6 actuators: it cannot be compressed to 6D")
        cols_vc_cc = np.concatenate([np.arange(n_b), n_b + cc])
        cols_uc = n_b + uc
        n_r = n_b + n_cc + 6
        # --- centroidal compression of the swing chain (eq. (8)-(13)), base frame.
        data = pm.data
        R_b = pm.placement(self.settings.base_frame)[0]
        Y = pin.Inertia.Zero()
        for s in swing:
            for r in self._chains[s][1]:
                Y += data.oYcrb[r]
        m_uc, c_uc = Y.mass, Y.lever
        I_G = np.zeros((6, 6))
        I_G[:3, :3] = m_uc * np.eye(3)
        I_G[3:, 3:] = R_b.T @ Y.inertia @ R_b
        A = pm.A_G[:, cols_uc]
        M_G = np.empty((6, n_uc))
        M_G[:3] = R_b.T @ A[:3]
        M_G[3:] = R_b.T @ (A[3:] - pin.skew(c_uc - pm.com) @ A[:3])
        J_G = np.linalg.solve(I_G, M_G)
        prev = self._J_G_prev.get(swing)
        theta_dot_uc = nu[cols_uc]
        Jdot_G_v = np.zeros(6) if prev is None else (J_G - prev) @ theta_dot_uc / self.reduced.control_period_s
        self._J_G_prev = {swing: J_G}
        J_r = np.zeros((n_r, n_nu))
        J_r[:n_b + n_cc, cols_vc_cc] = np.eye(n_b + n_cc)
        J_r[n_b + n_cc:, cols_uc] = J_G
        Jdot_r_v = np.zeros(n_r)
        Jdot_r_v[n_b + n_cc:] = Jdot_G_v
        # --- reduced dynamics (eq. (14a)-(14e)).
        cho = scipy.linalg.cho_factor(pm.M_p, check_finite=False)
        MinvJrT = scipy.linalg.cho_solve(cho, J_r.T, check_finite=False)
        M_r = np.linalg.inv(J_r @ MinvJrT)
        M_r = 0.5 * (M_r + M_r.T)
        h_r = M_r @ (J_r @ scipy.linalg.cho_solve(cho, pm.h_p, check_finite=False) - Jdot_r_v)
        J_bar = MinvJrT @ M_r  # (n_nu, n_r), dynamically consistent inverse (eq. (14d))
        terms_full = full.contact_terms(active)
        terms_r = {}
        for name, t in terms_full.items():
            J = np.zeros((6, n_r))
            J[:, :n_b + n_cc] = t.J[:, cols_vc_cc]  # eq. (15)
            terms_r[name] = ContactTerms(t.spec, t.active, t.R, J, t.drift, t.twist, t.W)
        t1 = time.perf_counter()
        # --- LQP 1.
        swing_in_lqp1 = self.reduced.swing_task_in_lqp1
        if swing_in_lqp1 is None:
            swing_in_lqp1 = n_uc == 6
        box_lo, box_hi = self._box_lo, self._box_hi
        full.stroke_limits.fill(None, box_lo, box_hi, pm, terms_full)  # theta_ddot_a bounds
        stroke = (box_lo[n_b:n_b + n_a], box_hi[n_b:n_b + n_a])
        P, P_lo, P_hi = self._P, self._P_lo, self._P_hi
        plim = full.passive_limits
        if plim.n_slots:
            plim.fill(P, P_lo, P_hi, pm, terms_full)
        on_uc = np.abs(P[:, cols_uc]).max(axis=1, initial=0.0) > 0.0  # the swing legs' rows
        p1, L1, solver1 = self._lqp1_problem(swing, n_r, n_cc, cc, M_r, h_r, terms_r, J_bar, Jdot_r_v, stroke,
                                             swing_in_lqp1, P[:, cols_vc_cc], ~on_uc)
        sol1 = solver1.solve(p1)
        x1 = sol1.x
        q_ddot_r = x1[:n_r]
        forces = {c.name: (x1[L1.force_slice(c.name)] if terms_full[c.name].active else np.zeros(3 * c.n_points))
                  for c in full.contacts}
        t2 = time.perf_counter()
        # --- LQP 2.
        nu_dot = np.zeros(n_nu)
        nu_dot[cols_vc_cc] = q_ddot_r[:n_b + n_cc]
        x_G = q_ddot_r[n_b + n_cc:]
        p2, solver2 = self._lqp2_problem(swing, uc, cols_uc, nu_dot, x_G, J_G, Jdot_G_v, terms_full, forces, stroke,
                                         swing_in_lqp1, P[:, cols_uc], on_uc, P[:, cols_vc_cc] @ nu_dot[cols_vc_cc])
        sol2 = solver2.solve(p2)
        nu_dot[cols_uc] = sol2.x
        x = np.zeros(L.n)
        x[:n_nu] = nu_dot
        plim.observe(x)
        self._x_reduced = x
        full.plan_com(stamp_s, nu_dot)
        t3 = time.perf_counter()
        # --- eq. (29)/(69) with the assembled accelerations and forces.
        a = L.actuated
        tau = pm.M_p[a] @ nu_dot + pm.h_p[a]
        wrenches = {}
        for c in full.contacts:
            t = terms_full[c.name]
            w = t.W @ forces[c.name]
            tau -= t.J[:, a].T @ w
            wrenches[c.name] = w
        if not np.isfinite(tau).all():
            raise NoSolutionFound("non-finite actuator forces from the reduced QPs", problem=p2, result=sol2)
        t4 = time.perf_counter()
        timing = {"model": t1 - t0, "build": 0.0, "lqp1": t2 - t1, "lqp2": t3 - t2, "output": t4 - t3,
                  "solve": (t2 - t1) + (t3 - t2), "total": t4 - t0}
        out = WbcOutput(tau_a=tau, nu_dot=nu_dot, forces={k: f.reshape(-1, 3).copy() for k, f in forces.items()},
                        wrenches=wrenches, lam=None, qp=sol1, timing=timing, active_contacts=active)
        out.qp2 = sol2  # type: ignore[attr-defined]
        full.last_output = out
        return out

    # ------------------------------------------------------------------ LQP 1
    def _lqp1_problem(self, swing, n_r, n_cc, cc, M_r, h_r, terms_r, J_bar, Jdot_r_v, stroke, swing_in_lqp1,
                      P, mine):
        """LQP 1; ``P`` (slots × ``vc ∪ cc``) the passive-limit rows, ``mine`` the stance legs' slots."""
        full, pm, s = self.full, self.pm, self.settings
        if swing not in self._lqp1:
            L1 = DecisionLayout(pm.n_b, n_r - pm.n_b, full.contacts)
            constraints = (FloatingBaseDynamics(L1), StationaryContacts(L1, s.contact_velocity_gain),
                           FrictionCones(L1, s.inner_pyramid), ContactForceBox(L1))
            self._lqp1[swing] = (L1, constraints, make_solver(s.qp_solver, s.osqp))
        L1, (dyn, stat, cones, fbox), solver = self._lqp1[swing]
        n = L1.n
        view = SimpleNamespace(M_p=M_r, h_p=h_r)  # the projected model's dynamics in reduced coordinates
        H = np.diag(np.concatenate([np.full(n_r, s.acceleration_regularisation),
                                    np.full(n - n_r, s.force_regularisation)]))
        c = np.zeros(n)
        tasks = [full.com_task, full.base_task, full.momentum_task]
        if swing_in_lqp1:
            tasks += [full.foot_tasks[name] for name in swing]
        for task in tasks:  # eq. (22): J_t J_bar_r q_ddot_r = a_des - drift + J_t J_bar_r Jdot_r v
            J, r = task.jacobian_and_target(pm)
            Jr = J @ J_bar
            _accumulate(H, c, Jr, r + Jr @ Jdot_r_v, task.weight)
        # cc posture (rows of the posture task restricted to cc).
        _, rp = full.posture_task.jacobian_and_target(pm)
        Jpr = np.zeros((n_cc, n_r))
        Jpr[:, pm.n_b:pm.n_b + n_cc] = np.eye(n_cc)
        _accumulate(H, c, Jpr, rp[cc], full.posture_task.weight[cc])
        m_eq = dyn.n_rows() + stat.n_rows()
        A = np.zeros((m_eq, n))
        b = np.zeros(m_eq)
        dyn.fill(A[:dyn.n_rows()], b[:dyn.n_rows()], b[:dyn.n_rows()], view, terms_r)
        stat.fill(A[dyn.n_rows():], b[dyn.n_rows():], None, view, terms_r)
        m_c, n_s = cones.n_rows(), P.shape[0]
        G = np.zeros((m_c + n_cc + n_s, n))
        lo, hi = np.full(m_c + n_cc + n_s, -np.inf), np.full(m_c + n_cc + n_s, np.inf)
        cones.fill(G[:m_c], lo[:m_c], hi[:m_c], view, terms_r)
        r_p = slice(m_c + n_cc, m_c + n_cc + n_s)  # passive-joint limits of the stance legs
        G[r_p, :P.shape[1]] = P * mine[:, None]
        lo[r_p] = np.where(mine, self._P_lo, -np.inf)
        hi[r_p] = np.where(mine, self._P_hi, np.inf)
        # cc actuator forces from the cc rows of the reduced dynamics (14).
        r_cc = slice(pm.n_b, pm.n_b + n_cc)
        r_f = slice(m_c, m_c + n_cc)
        G[r_f, :n_r] = M_r[r_cc]
        for cs in full.contacts:
            t = terms_r[cs.name]
            G[r_f, L1.force_slice(cs.name)] = -(t.J[:, r_cc].T @ t.W)
        force_min, force_max = full.force_bounds
        lo[r_f] = force_min[cc] - h_r[r_cc]
        hi[r_f] = force_max[cc] - h_r[r_cc]
        lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
        fbox.fill(None, lb, ub, view, terms_r)
        lb[r_cc], ub[r_cc] = stroke[0][cc], stroke[1][cc]
        return QpProblem(H=H, c=c, A=A, b=b, G=G, h=hi, h_lower=lo, lb=lb, ub=ub), L1, solver

    # ------------------------------------------------------------------ LQP 2
    def _lqp2_problem(self, swing, uc, cols_uc, nu_dot, x_G, J_G, Jdot_G_v, terms_full, forces, stroke,
                      swing_in_lqp1, P, mine, P_known):
        """LQP 2; ``P`` (slots × ``uc``) the passive-limit rows, ``mine`` the swing legs' slots,
        ``P_known`` their ``vc ∪ cc`` part times LQP 1's accelerations."""
        full, pm, s = self.full, self.pm, self.settings
        if swing not in self._lqp2:
            self._lqp2[swing] = make_solver(s.qp_solver, s.osqp)
        n = uc.size
        # Weights divided by the centroid weight (same minimiser, residuals of order one).
        k = 1.0 / self.reduced.centroid_weight
        H = k * s.acceleration_regularisation * np.eye(n)
        c = np.zeros(n)
        # Eq. (30) as the top-priority (heavily weighted) task.
        _accumulate(H, c, J_G, x_G - Jdot_G_v, np.ones(6))
        if not swing_in_lqp1:  # eq. (23): swing-sole tasks in the unconstrained chain
            for name in swing:
                task = full.foot_tasks[name]
                J, r = task.jacobian_and_target(pm)
                _accumulate(H, c, J[:, cols_uc], r - J @ nu_dot, k * task.weight)
        _, rp = full.posture_task.jacobian_and_target(pm)
        _accumulate(H, c, np.eye(n), rp[uc], k * full.posture_task.weight[uc])
        # uc actuator forces, eq. (69) rows (the stance contacts do not load the swing chain).
        a_uc = pm.n_b + uc
        rest = pm.M_p[a_uc] @ nu_dot + pm.h_p[a_uc]
        for cs in full.contacts:
            t = terms_full[cs.name]
            rest = rest - t.J[:, a_uc].T @ (t.W @ forces[cs.name])
        force_min, force_max = full.force_bounds
        # rows: the uc actuator forces, then the swing legs' passive-joint limits
        G = np.vstack([pm.M_p[np.ix_(a_uc, cols_uc)], P * mine[:, None]])
        lo = np.concatenate([force_min[uc] - rest, np.where(mine, self._P_lo - P_known, -np.inf)])
        hi = np.concatenate([force_max[uc] - rest, np.where(mine, self._P_hi - P_known, np.inf)])
        return QpProblem(H=H, c=c, G=G, h=hi, h_lower=lo, lb=stroke[0][uc], ub=stroke[1][uc]), self._lqp2[swing]


def _accumulate(H: np.ndarray, c: np.ndarray, J: np.ndarray, r: np.ndarray, w: np.ndarray) -> None:
    """``H[:k, :k] += Jᵀ W J``, ``c[:k] -= Jᵀ W r`` for a task over the first ``k = J.shape[1]`` variables."""
    WJ = J * w[:, None]
    k = J.shape[1]
    H[:k, :k] += J.T @ WJ
    c[:k] -= WJ.T @ r


__all__ = ["ReducedWholeBodyController", "ReducedSettings"]
