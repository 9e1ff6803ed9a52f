"""Whole-body controller on the projected closed-chain dynamics (Kangaroo paper eq. (27)-(29), App. B).

One weighted QP per tick over the decision vector (documented in :mod:`kangaroo_wbc.control.contacts`)

.. math::

    x = [\\dot v_{base},\\; \\ddot\\theta_a,\\; f_{1,1} \\dots f_{K,P}]

.. math::

    \\min_x \\sum_t \\tfrac12 \\| J_t T \\dot\\nu - r_t \\|^2_{W_t}
        + \\tfrac{\\epsilon}{2} \\|\\dot\\nu\\|^2 + \\tfrac{\\gamma}{2} \\|f\\|^2
    \\quad \\text{s.t.} \\quad
    \\begin{cases}
      M_{p,b} \\dot\\nu + h_{p,b} = (J_{c} T)_b^T W f & \\text{eq. (62), floating base} \\\\
      J_{c} T \\dot\\nu + \\dot J_c v + J_c k = 0 & \\text{eq. (25b)/(65), stance soles} \\\\
      |t^T f_i| \\le \\tilde\\mu\\, n^T f_i,\\; f_{min} \\le n^T f_i \\le f_{max} & \\text{friction cones} \\\\
      \\tau_{min} \\le \\tau_a(x) \\le \\tau_{max} & \\text{eq. (69), actuator forces} \\\\
      \\ddot\\theta_{min} \\le \\ddot\\theta_a \\le \\ddot\\theta_{max} & \\text{stroke limits} \\\\
      \\ddot\\theta_{u,min} \\le J_m \\ddot\\theta_a + k_u \\le \\ddot\\theta_{u,max} & \\text{passive joints}
    \\end{cases}

then the actuator forces (eq. (29)/(69)) ``tau_a = M_{p,a} nu_dot + h_{p,a} - (J_c T)_a^T W f`` and,
optionally, the closure forces ``lambda`` (eq. (28)). The closure constraint (25c) is satisfied by
construction: ``v = T nu`` and ``v_dot = T nu_dot + k``.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from kangaroo_wbc.control.com_disturbance import ComDisturbanceObserver
from kangaroo_wbc.control.constraints import (
    ActuatorForceLimits,
    ActuatorStrokeLimits,
    Constraint,
    ContactForceBox,
    FloatingBaseDynamics,
    FrictionCones,
    PassiveJointLimits,
    StationaryContacts,
)
from kangaroo_wbc.control.constraints.base import NO_CONTACT
from kangaroo_wbc.control.contacts import ContactSpec, ContactTerms, DecisionLayout, wrench_map
from kangaroo_wbc.control.qp import OsqpSettings, QpProblem, QpSolution
from kangaroo_wbc.control.qp_solvers import DEFAULT_SOLVER, make_solver
from kangaroo_wbc.control.tasks import (
    AngularMomentumTask,
    ComTask,
    FramePoseTask,
    OrientationTask,
    PostureTask,
    Task,
)
from kangaroo_wbc.errors import FrameNotFound, InputError, NoSolutionFound, suggest
from kangaroo_wbc.model import ClosedLoopModel
from kangaroo_wbc.model.compiled import compiled
from kangaroo_wbc.model.projected_model import ProjectedModel


@dataclass
class ActuatorLimits:
    """Actuator limits [N, m, m/s] (or [N·m, rad, rad/s] for revolute actuators)."""

    force_min: np.ndarray
    force_max: np.ndarray
    position_min: np.ndarray
    position_max: np.ndarray
    velocity_max: np.ndarray

    @classmethod
    def from_model(cls, clm: ClosedLoopModel) -> ActuatorLimits:
        """Limits from the URDF: ``effort`` (max axial force), ``lower``/``upper`` stroke, ``velocity``."""
        m = clm.model
        effort = np.asarray(m.effortLimit)[clm.idx_v_a].astype(float)
        effort = np.where(effort > 0, effort, np.inf)
        vel = np.asarray(m.velocityLimit)[clm.idx_v_a].astype(float)
        vel = np.where(vel > 0, vel, np.inf)
        lo = np.asarray(m.lowerPositionLimit)[clm.idx_q_a].astype(float)
        hi = np.asarray(m.upperPositionLimit)[clm.idx_q_a].astype(float)
        bad = ~(np.isfinite(lo) & np.isfinite(hi) & (hi > lo))
        lo, hi = np.where(bad, -np.inf, lo), np.where(bad, np.inf, hi)
        return cls(force_min=-effort, force_max=effort, position_min=lo, position_max=hi, velocity_max=vel)


@dataclass
class WbcSettings:
    """Weights [1/(task unit)²], gains [1/s², 1/s] and limits of :class:`WholeBodyController`."""

    base_frame: str = "base_link"
    com_weight: float = 10.0
    com_kp: float = 100.0
    com_kd: float = 20.0
    #: CoM disturbance observer (:mod:`kangaroo_wbc.control.com_disturbance`): cutoff [Hz] of its
    #: low-pass (0: no compensation) and bound [m/s²] of each axis of its estimate. It runs when
    #: :meth:`WholeBodyController.step` gets the state's time (the supervisor gives it).
    com_disturbance_cutoff_hz: float = 3.0
    com_disturbance_max_m_s2: float = 0.5
    base_weight: float = 1.0
    base_kp: float = 100.0
    base_kd: float = 20.0
    foot_weight: float = 10.0
    foot_kp: float = 300.0
    foot_kd: float = 35.0
    posture_weight: float = 1e-2
    #: the posture weight while an actuator is locked or limp (:meth:`WholeBodyController.set_actuator_mode`):
    #: the lost degree of freedom leaves the CoM and base tasks in conflict, and a weak posture lets the
    #: solution drift along that conflict into the other actuators' stroke ends
    posture_weight_degraded: float = 1.0
    posture_kp: float = 50.0
    posture_kd: float = 14.0
    angular_momentum_weight: float = 1e-2
    angular_momentum_kd: float = 5.0
    acceleration_regularisation: float = 1e-6  # epsilon of eq. (27)
    force_regularisation: float = 1e-6  # gamma of eq. (27)
    contact_velocity_gain: float = 0.0  # [1/s]
    inner_pyramid: bool = True
    enforce_force_limits: bool = True
    stroke_horizon_s: float = 0.05
    acceleration_max: float = 500.0  # [m/s²] on theta_ddot_a
    #: passive-joint limits (:mod:`~kangaroo_wbc.control.constraints.passive_joint_limits`): the margin
    #: [rad] kept inside each URDF limit, the rows (joints constrained at once; 0: none) and the
    #: distance [rad/s²] of the last solution to a joint's acceleration bound below which it gets a
    #: row; horizon: the stroke limits'
    passive_limit_margin_rad: float = 0.02
    passive_limit_rows: int = 6
    passive_limit_activation_rad_s2: float = 50.0
    compute_lambda: bool = False
    #: ``J_lu`` pivot ratio below which ``step`` raises ModelError (near-singular configuration,
    #: :attr:`ProjectedModel.min_pivot_ratio`); 0 rejects only an exactly singular ``J_lu``.
    min_jlu_pivot_ratio: float = 0.0
    #: the actuators' rotor inertia reflected through their screws, ``J_r (2 pi / L)^2``, in the
    #: dynamics (the model's armature on the actuated DOFs, from the closure file's ``actuators``
    #: entries): the forces ``tau_a`` then include the inertia feed-forward ``m_r theta_ddot_a``
    rotor_inertia: bool = True
    osqp: OsqpSettings = field(default_factory=OsqpSettings)
    #: the QP solver by name (:mod:`kangaroo_wbc.control.qp_solvers`: ``active_set``, ``osqp``, ``daqp``,
    #: ``proxsuite``); tolerances and limits from :attr:`osqp`
    qp_solver: str = DEFAULT_SOLVER
    #: the solver for a QP :attr:`qp_solver` fails on (None: none), e.g. OSQP's iteration limit at a
    #: hard contact switch of a walk (:class:`~kangaroo_wbc.control.qp_solvers.FallbackSolver`)
    qp_fallback_solver: str | None = "daqp"


#: The :class:`WbcSettings` that :meth:`WholeBodyController.configure` changes at run time.
RUNTIME_SETTINGS = frozenset({
    "com_weight", "com_kp", "com_kd", "com_disturbance_cutoff_hz", "com_disturbance_max_m_s2",
    "base_weight", "base_kp", "base_kd", "foot_weight", "foot_kp", "foot_kd",
    "posture_weight", "posture_weight_degraded", "posture_kp", "posture_kd",
    "angular_momentum_weight", "angular_momentum_kd", "min_jlu_pivot_ratio"})


@dataclass
class FrameReference:
    """Pose reference of a frame (swing foot) [m, rad, m/s, rad/s, m/s², rad/s²], world axes."""

    position: np.ndarray
    rotation: np.ndarray | None = None
    twist: np.ndarray | None = None
    acceleration: np.ndarray | None = None


@dataclass
class WbcReferences:
    """References for one tick; ``None`` keeps the previous value (initialised to "hold")."""

    active_contacts: tuple[str, ...] | None = None
    com_position: np.ndarray | None = None
    com_velocity: np.ndarray | None = None
    com_acceleration: np.ndarray | None = None
    base_rotation: np.ndarray | None = None
    base_angular_velocity: np.ndarray | None = None
    base_angular_acceleration: np.ndarray | None = None
    foot_poses: dict[str, FrameReference] = field(default_factory=dict)
    posture: np.ndarray | None = None
    #: the stroke-limit horizon [s] of this tick (None: the settings'): a fast push (a jump's) may
    #: extend the legs at speed closer to their stroke end
    stroke_horizon_s: float | None = None
    #: contact name → the normal force [N] it pushes with while active, each of its P corners ``F / P``
    #: (:meth:`ContactSpec.prescribe_normal_force`; None: its bounds again; kept until changed)
    contact_normal_force: dict[str, float | None] = field(default_factory=dict)
    #: task name → the weight of all its rows this tick (``com``, ``base_orientation``, ``posture``,
    #: ``angular_momentum``, ``foot_<contact>``); a task not named gets its own weight back (the
    #: settings', or the posture weight of :meth:`WholeBodyController.set_actuator_mode`), e.g. a
    #: jump's flight holds the legs' posture with the CoM and sole tasks off
    task_weights: dict[str, float] = field(default_factory=dict)
    #: task name → its ``(kp, kd)`` this tick [1/s², 1/s]; a task not named gets its own gains back
    #: (those it had before its first override), e.g. a jump's flight stops the legs' extension fast
    task_gains: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class WbcOutput:
    """Result of one :meth:`WholeBodyController.step`.

    Attributes:
        tau_a: actuator forces (eq. (29)/(69)) [N] (n_a,), in ``clm.actuated_joint_names`` order.
        nu_dot: ``[v_dot_base, theta_ddot_a]`` solution.
        forces: corner forces per contact (P, 3) [N], world axes.
        wrenches: contact wrench at each sole origin (6,) [N, N·m], world axes.
        lam: closure forces (eq. (28)) or None.
        qp: the QP solution (status, iterations, KKT residuals via ``qp.kkt()``).
        timing: seconds per phase: ``model``, ``build``, ``solve``, ``total``.
        active_contacts: contacts treated as stance this tick.
    """

    tau_a: np.ndarray
    nu_dot: np.ndarray
    forces: dict[str, np.ndarray]
    wrenches: dict[str, np.ndarray]
    lam: np.ndarray | None
    qp: QpSolution
    timing: dict[str, float]
    active_contacts: tuple[str, ...]


class WholeBodyController:
    """Weighted-QP whole-body controller on the projected dynamics (see module docstring).

    Args:
        clm: closed-loop model with a floating base.
        contacts: candidate contacts (soles); each gets a swing pose task used when it is inactive.
        settings: :class:`WbcSettings`.
        limits: actuator limits (default: from the URDF).
        q_nominal: configuration used to fix the QP sparsity pattern (default: ``clm.q_ref``).
    """

    def __init__(self, clm: ClosedLoopModel, contacts: Sequence[ContactSpec], settings: WbcSettings | None = None,
                 limits: ActuatorLimits | None = None, q_nominal: np.ndarray | None = None) -> None:
        if not clm.floating_base:
            raise InputError("the whole-body controller needs a floating-base model")
        self.clm = clm
        self.settings = s = settings or WbcSettings()
        names = [c.name for c in contacts]
        if len(set(names)) != len(names):
            raise InputError(f"duplicated contact names {names}")
        if not clm.model.existFrame(s.base_frame):
            raise FrameNotFound(f"unknown base frame {s.base_frame!r}."
                                + suggest(s.base_frame, [f.name for f in clm.model.frames]))
        self.contacts = tuple(contacts)
        if s.rotor_inertia:
            _set_rotor_inertia(clm)
        self.layout = L = DecisionLayout(clm.n_b, clm.n_a, self.contacts)
        self.pm = ProjectedModel(clm, [s.base_frame] + [c.frame for c in contacts])
        self.pm.min_pivot_ratio = s.min_jlu_pivot_ratio
        self.limits = limits or ActuatorLimits.from_model(clm)
        # Tasks.
        self.com_task = ComTask(s.com_weight, s.com_kp, s.com_kd)
        self.com_observer = ComDisturbanceObserver(s.com_disturbance_cutoff_hz, s.com_disturbance_max_m_s2)
        self.base_task = OrientationTask(s.base_frame, s.base_weight, s.base_kp, s.base_kd)
        self.posture_task = PostureTask(clm.n_b, clm.n_a, clm.idx_q_a, s.posture_weight, s.posture_kp, s.posture_kd)
        self.momentum_task = AngularMomentumTask(s.angular_momentum_weight, s.angular_momentum_kd)
        self.foot_tasks = {c.name: FramePoseTask(c.frame, s.foot_weight, s.foot_kp, s.foot_kd, name=f"foot_{c.name}")
                           for c in contacts}
        self.tasks: list[Task] = [self.com_task, self.base_task, self.posture_task, self.momentum_task,
                                  *self.foot_tasks.values()]
        #: each task's own weight (what :attr:`WbcReferences.task_weights` overrides for a tick)
        self._task_weights = {t.name: t.weight.copy() for t in self.tasks}
        self._weights_overridden: frozenset[str] = frozenset()
        #: the gains ``(kp, kd)`` of the tasks whose gains :attr:`WbcReferences.task_gains` overrides
        self._own_gains: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # Constraints.
        self.equalities: list[Constraint] = [FloatingBaseDynamics(L), StationaryContacts(L, s.contact_velocity_gain)]
        self.inequalities: list[Constraint] = [FrictionCones(L, s.inner_pyramid)]
        self._force_limits = ActuatorForceLimits(L, self.limits.force_min.copy(), self.limits.force_max.copy())
        if s.enforce_force_limits:
            self.inequalities.append(self._force_limits)
        self._stroke_limits = ActuatorStrokeLimits(L, clm.idx_q_a, self.limits.position_min,
                                                   self.limits.position_max, self.limits.velocity_max,
                                                   s.stroke_horizon_s, s.acceleration_max)
        self._acceleration_max = self._stroke_limits.acceleration_max.copy()
        self._modes = ["active"] * clm.n_a
        #: per actuator: True while it is driven (not locked or limp); the commanded force of the others is 0
        self.driven = np.ones(clm.n_a, dtype=bool)
        self.all_driven = True  # every actuator driven (read each tick: no array test)
        self.boxes: list[Constraint] = [ContactForceBox(L), self._stroke_limits]
        self.passive_limits = PassiveJointLimits(L, clm.passive_joint_limits(s.passive_limit_margin_rad),
                                                 self._stroke_limits, s.passive_limit_rows,
                                                 s.passive_limit_activation_rad_s2)
        if self.passive_limits.n_slots:
            self.inequalities.append(self.passive_limits)
        # Preallocated problem data.
        n = L.n
        m_eq = sum(c.n_rows() for c in self.equalities)
        m_in = sum(c.n_rows() for c in self.inequalities)
        self._H0 = np.diag(np.concatenate([np.full(L.n_nu, s.acceleration_regularisation),
                                           np.full(L.n_f, s.force_regularisation)]))
        self.problem = p = QpProblem(H=self._H0.copy(), c=np.zeros(n), A=np.zeros((m_eq, n)), b=np.zeros(m_eq),
                                     G=np.zeros((m_in, n)), h=np.full(m_in, np.inf), h_lower=np.full(m_in, -np.inf),
                                     lb=np.full(n, -np.inf), ub=np.full(n, np.inf))
        # per constraint list: the (M, lo, hi) views of its rows in the problem (box: the full lb, ub)
        self._eq_views = [(p.A[rows], p.b[rows], p.b[rows]) for rows in self._row_slices(self.equalities)]
        self._in_views = [(p.G[rows], p.h_lower[rows], p.h[rows]) for rows in self._row_slices(self.inequalities)]
        # corner-force maps of the contacts, filled each tick (the compiled output pass reads them all)
        self._W = {c.name: np.zeros((6, 3 * c.n_points)) for c in contacts}
        self._Ws = tuple(self._W.values()) or NO_CONTACT
        # the compiled output pass (actuator forces, wrenches, corner forces): contacts' frame rows and
        # force columns, and their active flags
        self._output_index = (np.array([self.pm.frame_index(c.frame) for c in contacts], dtype=np.int64),
                              np.array([L.force_slice(c.name).start for c in contacts], dtype=np.int64),
                              np.zeros(len(contacts), dtype=np.bool_))
        # per contact: its row in the projected model's frame rotations, and in its frame Jacobians, drifts, twists
        self._contact_slots = [(2 * self.pm.n_closures + int(u), int(u)) for u in self._output_index[0]]
        rows = sum(t.dim for t in self.tasks)
        self._task_rows = (np.zeros((rows, L.n_nu)), np.zeros(rows), np.zeros(rows))  # stacked (J, r, w)
        _task_normal_equations(*self._task_rows, rows, self._H0, self._H0.copy(),
                               np.zeros(n))  # compile (or load) now, not in a tick
        _actuator_forces(np.zeros(n), L.n_b, np.zeros((L.n_nu, L.n_nu)), np.zeros(L.n_nu),
                         np.zeros((len(self.pm.frame_names), 6, L.n_nu)), self._output_index, self._Ws,
                         (np.empty(L.n_a), np.empty((len(contacts), 6)), np.empty(n)))
        self._initialised = False
        self._active: tuple[str, ...] = tuple(names)
        self.solver = make_solver(s.qp_solver, s.osqp, structure=self._structure(q_nominal),
                                  fallback=s.qp_fallback_solver)
        self.last_output: WbcOutput | None = None

    @staticmethod
    def _row_slices(constraints: Sequence[Constraint]) -> list[slice]:
        ends = itertools.accumulate(c.n_rows() for c in constraints)
        return [slice(end - c.n_rows(), end) for c, end in zip(constraints, ends)]

    def _structure(self, q_nominal: np.ndarray | None) -> QpProblem:
        """Sparsity pattern: the problem at ``q_nominal`` with every contact and task active."""
        q = self.clm.q_ref if q_nominal is None else np.asarray(q_nominal, dtype=float)
        rng = np.random.default_rng(0)
        self.pm.update(q, 1e-3 * rng.standard_normal(self.layout.n_nu))
        self._init_references()
        terms = self.contact_terms(tuple(self.layout.contact_names))
        self._fill(terms, all_tasks=True)
        for con, (M, _, _) in zip(self.inequalities, self._in_views):
            con.mark_pattern(M)
        p = self.problem
        structure = QpProblem(H=p.H + np.eye(p.n), c=p.c.copy(), A=p.A.copy(), b=p.b.copy(), G=p.G.copy(),
                              h=p.h.copy(), h_lower=p.h_lower.copy(), lb=p.lb.copy(), ub=p.ub.copy())
        structure.H[self.layout.nu, self.layout.nu] = 1.0  # the nu block is dense in general
        self._initialised = False
        return structure

    # ------------------------------------------------------------------ morphology
    @property
    def actuator_modes(self) -> dict[str, str]:
        """Each actuator's mode (``active``, ``locked``, ``limp``), by actuated-joint name."""
        return dict(zip(self.clm.actuated_joint_names, self._modes))

    def set_actuator_mode(self, name: str, mode: str) -> None:
        """Re-allocate around actuator ``name`` from the next :meth:`step` on, in place (the QP's
        structure, the model and the other rows are untouched):

        - ``locked`` (a seized screw, a brake): ``theta_ddot_a`` of that actuator bounded to 0 (its
          stroke box) and its force row unbounded — the lock carries whatever the dynamics ask;
        - ``limp`` (a failed driver): its force row bounded to ``[0, 0]``;
        - ``active``: the limits of construction.

        Raises:
            InputError: unknown actuator or mode, or ``limp`` without the force-limit rows
                (``WbcSettings.enforce_force_limits`` False).
        """
        names = self.clm.actuated_joint_names
        if name not in names:
            raise InputError(f"unknown actuator {name!r}." + suggest(name, names))
        if mode not in ("active", "locked", "limp"):
            raise InputError(f"unknown actuator mode {mode!r}; modes are ['active', 'locked', 'limp']")
        if mode == "limp" and not self.settings.enforce_force_limits:
            raise InputError("a limp actuator needs the force-limit rows (WbcSettings.enforce_force_limits)")
        i = names.index(name)
        lo, hi = self._force_limits.force_min, self._force_limits.force_max
        lo[i], hi[i] = {"active": (self.limits.force_min[i], self.limits.force_max[i]),
                        "locked": (-np.inf, np.inf), "limp": (0.0, 0.0)}[mode]
        self._stroke_limits.acceleration_max[i] = 0.0 if mode == "locked" else self._acceleration_max[i]
        self._modes[i] = mode
        self.driven[i] = mode == "active"
        self.all_driven = bool(self.driven.all())
        s = self.settings
        weight = self._task_weights[self.posture_task.name]
        weight[:] = s.posture_weight if self.all_driven else s.posture_weight_degraded
        if self.posture_task.name not in self._weights_overridden:
            self.posture_task.weight = weight

    def configure(self, settings: WbcSettings) -> None:
        """Change the run-time settings (:data:`RUNTIME_SETTINGS`: task gains and weights, the CoM
        disturbance observer, the singularity threshold) from the next :meth:`step` on. The gains and
        weights become each task's own: a behaviour's override (:attr:`WbcReferences.task_weights`,
        :attr:`WbcReferences.task_gains`) returns to them, and so does an actuator-mode change.

        Raises:
            InputError: a change of any other setting (the QP's structure is fixed at construction).
        """
        changed = [f.name for f in fields(WbcSettings)
                   if f.name not in RUNTIME_SETTINGS and getattr(settings, f.name) != getattr(self.settings, f.name)]
        if changed:
            raise InputError(f"WbcSettings {changed} cannot change at run time")
        s = self.settings = settings
        degraded = not self.all_driven
        own = {self.com_task: (s.com_weight, s.com_kp, s.com_kd),
               self.base_task: (s.base_weight, s.base_kp, s.base_kd),
               self.posture_task: (s.posture_weight_degraded if degraded else s.posture_weight, s.posture_kp,
                                   s.posture_kd),
               self.momentum_task: (s.angular_momentum_weight, 0.0, s.angular_momentum_kd),
               **{t: (s.foot_weight, s.foot_kp, s.foot_kd) for t in self.foot_tasks.values()}}
        for task, (weight, kp, kd) in own.items():
            self._task_weights[task.name][:] = weight
            if task.name not in self._weights_overridden:
                task.weight = self._task_weights[task.name]
            if task.name in self._own_gains:  # overridden this tick: its own gains come back later
                kp0, kd0 = self._own_gains[task.name]
                kp0[:], kd0[:] = kp, kd
            else:
                task.kp, task.kd = kp, kd
        self.com_observer.configure(s.com_disturbance_cutoff_hz, s.com_disturbance_max_m_s2)
        self.pm.min_pivot_ratio = s.min_jlu_pivot_ratio

    @property
    def stroke_limits(self) -> ActuatorStrokeLimits:
        """The actuator stroke limits (their damper on ``theta_ddot_a``, a locked actuator's zero box)."""
        return self._stroke_limits

    @property
    def force_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The actuator force bounds in effect [N]: :attr:`limits` with the actuator modes applied
        (:meth:`set_actuator_mode`: a limp actuator's are 0, a locked one's unbounded)."""
        return self._force_limits.force_min, self._force_limits.force_max

    def active_limits(self, x: np.ndarray | None = None) -> dict[str, list[str]]:
        """The limits binding ``x`` (default: the last solution), ``"<joint> lower|upper"`` by
        constraint name (``actuator_stroke_limits``, ``passive_joint_limits``): the joint brakes
        toward, or rests at, that limit (its margin included); empty lists before the first step.
        ``x`` is in this controller's decision layout and solves the rows the constraints last wrote
        (the reduced controller writes them for its assembled ``nu_dot``)."""
        if x is None:
            x = None if self.last_output is None else self.last_output.qp.x
        names = self.clm.actuated_joint_names
        stroke = [] if x is None else [f"{names[i]} {side}" for i, side in self._stroke_limits.active(x)]
        passive = [] if x is None else [f"{n} {side}" for n, side in self.passive_limits.active(x)]
        return {self._stroke_limits.name: stroke, self.passive_limits.name: passive}

    # ------------------------------------------------------------------ references
    @property
    def active_contacts(self) -> tuple[str, ...]:
        """The contacts of the last tick (those given at construction before the first)."""
        return self._active

    @property
    def references_initialised(self) -> bool:
        """Whether the task references were taken from a state since construction or the last
        :meth:`reset_references` (by :meth:`step` or :meth:`ensure_references`)."""
        return self._initialised

    def ensure_references(self) -> None:
        """Take every task reference from the current state of the projected model if that has not
        been done since construction or :meth:`reset_references` (what the first :meth:`step` does)."""
        if not self._initialised:
            self._init_references()

    def _init_references(self) -> None:
        pm = self.pm
        self.com_task.set_reference(pm.com)
        R, _ = pm.placement(self.settings.base_frame)
        self.base_task.set_reference(R)
        self.posture_task.set_reference(pm.q[self.clm.idx_q_a])
        self.momentum_task.set_reference()
        for task in self.foot_tasks.values():
            task.set_reference_from_current(pm)
        self._initialised = True

    def reset_references(self) -> None:
        """Take every task reference from the state of the next :meth:`step`, as the first step does;
        the CoM disturbance estimate restarts from zero (the robot may have been restarted)."""
        self._initialised = False
        self.com_observer.reset()
        self.com_task.disturbance = self.com_observer.estimate

    def set_references(self, ref: WbcReferences) -> None:
        """Apply the non-``None`` fields of ``ref`` to the tasks."""
        if ref.com_position is not None:
            self.com_task.set_reference(ref.com_position, ref.com_velocity, ref.com_acceleration)
        if ref.base_rotation is not None:
            self.base_task.set_reference(ref.base_rotation, ref.base_angular_velocity, ref.base_angular_acceleration)
        if ref.posture is not None:
            self.posture_task.set_reference(ref.posture)
        horizon = ref.stroke_horizon_s
        if horizon is not None and not (math.isfinite(horizon) and horizon > 0):
            raise InputError(f"stroke_horizon_s must be positive and finite, got {horizon}")
        self._stroke_limits.horizon_s = self.settings.stroke_horizon_s if horizon is None else float(horizon)
        for name, fr in ref.foot_poses.items():
            if name not in self.foot_tasks:
                raise InputError(f"foot reference for unknown contact {name!r}; contacts are {list(self.foot_tasks)}")
            self.foot_tasks[name].set_reference(fr.position, fr.rotation, fr.twist, fr.acceleration)
        if ref.task_weights or self._weights_overridden:
            self._override_task_weights(ref.task_weights)
        if ref.task_gains or self._own_gains:
            self._override_task_gains(ref.task_gains)
        for name, force in ref.contact_normal_force.items():
            if name not in self.foot_tasks:
                raise InputError(f"normal force for unknown contact {name!r}; contacts are {list(self.foot_tasks)}")
            self.contacts[self.layout.contact_names.index(name)].prescribe_normal_force(force)

    def _override_task_weights(self, weights: Mapping[str, float]) -> None:
        """This tick's task weights (:attr:`WbcReferences.task_weights`); the others their own."""
        tasks = {t.name: t for t in self.tasks}
        unknown = set(weights) - set(tasks)
        if unknown:
            raise InputError(f"task weights for unknown tasks {sorted(unknown)}; tasks are {sorted(tasks)}")
        for name in self._weights_overridden - set(weights):
            tasks[name].weight = self._task_weights[name]
        for name, weight in weights.items():
            tasks[name].weight = weight  # checked: finite, non-negative
        self._weights_overridden = frozenset(weights)

    def _override_task_gains(self, gains: Mapping[str, tuple[float, float]]) -> None:
        """This tick's task gains (:attr:`WbcReferences.task_gains`); the others their own."""
        tasks = {t.name: t for t in self.tasks}
        unknown = set(gains) - set(tasks)
        if unknown:
            raise InputError(f"task gains for unknown tasks {sorted(unknown)}; tasks are {sorted(tasks)}")
        for name, pair in gains.items():
            if len(pair) != 2 or not all(isinstance(g, (int, float)) and math.isfinite(g) and g >= 0 for g in pair):
                raise InputError(f"task gains of {name!r} must be two finite numbers >= 0 (kp, kd), got {pair!r}")
        for name in set(self._own_gains) - set(gains):
            tasks[name].kp, tasks[name].kd = self._own_gains.pop(name)
        for name, (kp, kd) in gains.items():
            task = tasks[name]
            self._own_gains.setdefault(name, (task.kp.copy(), task.kd.copy()))
            task.kp, task.kd = kp, kd

    # ------------------------------------------------------------------ per tick
    def switch_contacts(self, active: tuple[str, ...], references: WbcReferences | None = None) -> None:
        """Make ``active`` the contacts of this tick: a sole that lifts off holds its current pose
        unless ``references`` gives it one (call after :meth:`set_references`).

        Raises:
            InputError: unknown contact names.
        """
        unknown = set(active) - set(self.layout.contact_names)
        if unknown:
            raise InputError(f"unknown contacts {sorted(unknown)}; contacts are {list(self.layout.contact_names)}")
        for name in self.layout.contact_names:  # a sole that lifts off holds its pose by default
            if name in self._active and name not in active and (references is None
                                                                   or name not in references.foot_poses):
                self.foot_tasks[name].set_reference_from_current(self.pm)
        self._active = active

    def contact_terms(self, active: tuple[str, ...]) -> dict[str, ContactTerms]:
        """Per contact name: its :class:`ContactTerms` (sole rotation, Jacobian, drift, twist, wrench
        map) at the current state of the projected model, flagged active if it is in ``active``."""
        pm, out = self.pm, {}
        # pm.placement / jacobian / drift / twist, without their name look-ups
        R_all, J_all, drift, twist = pm.frame_rotations, pm.frame_jacobians_T, pm.frame_drifts, pm.frame_twists
        for c, (s, u) in zip(self.contacts, self._contact_slots):
            R = R_all[s]
            out[c.name] = ContactTerms(spec=c, active=c.name in active, R=R, J=J_all[u], drift=drift[u],
                                       twist=twist[u], W=wrench_map(R, c.corners, self._W[c.name]))
        return out

    def _fill(self, terms: Mapping[str, ContactTerms], all_tasks: bool = False) -> None:
        """The QP's cost and constraint rows of this tick: every enabled task's rows stacked by its
        :meth:`~kangaroo_wbc.control.tasks.base.Task.fill`, then ``H = H0 + J^T W J`` and
        ``c = -J^T W r`` (nu block) in one compiled pass; every constraint's :meth:`Constraint.fill`."""
        p, pm = self.problem, self.pm
        for name, task in self.foot_tasks.items():
            task.enabled = all_tasks or not terms[name].active
        rows, k = self._task_rows, 0
        for task in self.tasks:
            if task.enabled:
                if k + task.dim > rows[1].shape[0]:  # tasks added after construction
                    rows = self._grow_task_buffers(k + task.dim)
                k = task.fill(pm, rows, k)
        _task_normal_equations(rows[0], rows[1], rows[2], k, self._H0, p.H, p.c)
        for con, (M, lo, hi) in zip(self.equalities, self._eq_views):
            con.fill(M, lo, hi, pm, terms)
        for con, (M, lo, hi) in zip(self.inequalities, self._in_views):
            con.fill(M, lo, hi, pm, terms)
        for con in self.boxes:
            con.fill(None, p.lb, p.ub, pm, terms)

    def _grow_task_buffers(self, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Stacked-task buffers ``(J, r, w)`` with room for ``rows`` rows (contents kept)."""
        old = self._task_rows
        self._task_rows = (np.zeros((rows, self.layout.n_nu)), np.zeros(rows), np.zeros(rows))
        for new, prev in zip(self._task_rows, old):
            new[:prev.shape[0]] = prev
        return self._task_rows

    def _nu(self, v: np.ndarray) -> np.ndarray:
        clm = self.clm
        v = np.asarray(v, dtype=float)
        if v.shape != (clm.model.nv,):
            raise InputError(f"velocity has shape {v.shape}, expected ({clm.model.nv},)")
        return np.concatenate([v[clm.idx_v_base], v[clm.idx_v_a]])

    def update_model(self, q: np.ndarray, v: np.ndarray) -> None:
        """The full-model update of a tick (:attr:`pm` at ``q``, ``v``) ahead of :meth:`step`.

        Other users in the same process can read it before the step (the contact-wrench estimator,
        :meth:`ContactWrenchEstimator.update_model` with ``projected=wbc.pm``); a :meth:`step` at
        the same ``q`` and ``v`` then skips its own update. Raises as :meth:`step`.
        """
        self.pm.update(q, self._nu(v))

    def step(self, q: np.ndarray, v: np.ndarray, active_contacts: Iterable[str] | None = None,
             references: WbcReferences | None = None, stamp_s: float | None = None) -> WbcOutput:
        """One control tick.

        Args:
            q: closed configuration (nq,) (base position [m] and quaternion, joints [m, rad]).
            v: generalized velocity (nv,); only the base twist (pinocchio free-flyer convention) and
                the actuator velocities are used, the passive ones are recomputed (``v = T nu``).
            active_contacts: names of the soles in contact (default: the references', else all).
            references: task references (``None`` fields keep the previous value).
            stamp_s: time of the state [s]: the CoM disturbance observer takes a sample between
                consecutive stamped steps (None: its estimate is held, :meth:`observe_com`).

        Returns:
            :class:`WbcOutput` with the actuator forces ``tau_a`` [N].

        Raises:
            InputError: non-finite or mis-sized state, unknown contact names.
            NoSolutionFound: the QP has no usable solution (the caller picks the fallback).
            ModelError: singular or ill-conditioned closure Jacobian (``min_jlu_pivot_ratio``).
        """
        t0 = time.perf_counter()
        nu = self._nu(v)
        if not self.pm.is_current(q, nu):
            self.pm.update(q, nu)
        self.ensure_references()
        if references is not None:
            self.set_references(references)
            if references.active_contacts is not None and active_contacts is None:
                active_contacts = references.active_contacts
        active = self._active if active_contacts is None else tuple(active_contacts)
        self.switch_contacts(active, references)
        self.observe_com(stamp_s)
        t1 = time.perf_counter()
        terms = self.contact_terms(active)
        self._fill(terms)
        t2 = time.perf_counter()
        # The data derive from the validated state; a numerical failure shows in the solution.
        sol = self.solver.solve(self.problem, validate=False)
        self.passive_limits.observe(sol.x)
        t3 = time.perf_counter()
        out = self._output(sol, terms, active)
        self.plan_com(stamp_s, out.nu_dot)
        t4 = time.perf_counter()
        out.timing = {"model": t1 - t0, "build": t2 - t1, "solve": t3 - t2, "output": t4 - t3, "total": t4 - t0}
        self.last_output = out
        return out

    def observe_com(self, stamp_s: float | None) -> None:
        """The CoM disturbance observer's sample at the state of time ``stamp_s`` [s] (the model
        updated at that state) into the CoM task's :attr:`~ComTask.disturbance`; None: held."""
        if stamp_s is not None:
            self.com_task.disturbance = self.com_observer.update(stamp_s, self.pm.com_velocity)

    def plan_com(self, stamp_s: float | None, nu_dot: np.ndarray) -> None:
        """The CoM acceleration the solution ``nu_dot`` of the state of ``stamp_s`` plans, for the
        observer's next sample: ``J_com nu_dot + com_drift`` [m/s²]."""
        if stamp_s is not None:
            pm = self.pm
            self.com_observer.planned(pm.J_com @ nu_dot + pm.com_drift)

    def _output(self, sol: QpSolution, terms: Mapping[str, ContactTerms], active: tuple[str, ...]) -> WbcOutput:
        L, pm, index = self.layout, self.pm, self._output_index
        x = sol.x
        nu_dot = x[L.nu].copy()
        act = index[2]
        for i, c in enumerate(self.contacts):
            act[i] = terms[c.name].active
        tau, wrench_all, force_x = np.empty(L.n_a), np.empty((len(self.contacts), 6)), np.empty(L.n)
        if not _actuator_forces(x, L.n_b, pm.M_p, pm.h_p, pm.frame_jacobians_T, index, self._Ws,
                                (tau, wrench_all, force_x)):
            raise NoSolutionFound("non-finite actuator forces from the QP solution", problem=self.problem, result=sol)
        lam = None
        if self.settings.compute_lambda:
            gen_force = sum((pm.full_jacobian(c.frame).T @ w for c, w in zip(self.contacts, wrench_all)),
                            np.zeros(pm.nv))
            lam = pm.lagrange_multipliers(nu_dot, gen_force)
        forces = {name: force_x[L.force_slice(name)].reshape(-1, 3) for name in L.contact_names}
        return WbcOutput(tau_a=tau, nu_dot=nu_dot, forces=forces, wrenches=dict(zip(L.contact_names, wrench_all)),
                         lam=lam, qp=sol, timing={}, active_contacts=active)


@compiled
def _actuator_forces(x, n_b, M_p, h_p, Jf_T, index, Ws, out):
    """Actuator forces of a QP solution ``x`` (eq. (29)/(69)): ``tau = (M_p nu_dot + h_p - sum_c J_c^T W_c
    f_c)_a``, with ``wrenches[c] = W_c f_c`` and the corner forces ``f_c`` in ``forces`` (at their places
    in ``x``; zero for swing soles: ADMM iterates meet bounds only to the solver tolerance), ``out = (tau,
    wrenches, forces)``. ``index = (fidx, col, active)``: contact ``c`` is frame ``fidx[c]`` of ``Jf_T``,
    its forces start at ``x[col[c]]``, ``W_c = Ws[c]``. Returns False if a force is not finite."""
    tau, wrenches, forces = out
    fidx, col, active = index
    n_nu = M_p.shape[0]
    n_a = n_nu - n_b
    for i in range(n_a):
        r = n_b + i
        s = h_p[r]
        for j in range(n_nu):
            s += M_p[r, j] * x[j]
        tau[i] = s
    for c in range(fidx.shape[0]):
        W, c0 = Ws[c], col[c]
        k = W.shape[1]
        for j in range(k):
            forces[c0 + j] = x[c0 + j] if active[c] else 0.0
        for r in range(6):
            s = 0.0
            if active[c]:
                for j in range(k):
                    s += W[r, j] * x[c0 + j]
            wrenches[c, r] = s
        J = Jf_T[fidx[c]]
        for i in range(n_a):
            s = 0.0
            for r in range(6):
                s += J[r, n_b + i] * wrenches[c, r]
            tau[i] -= s
    for i in range(n_a):
        if not np.isfinite(tau[i]):
            return False
    return True


@compiled
def _task_normal_equations(J, r, w, m, H0, H, c):
    """``H = H0``, ``c = 0``, then on the first ``n = J.shape[1]`` rows/columns ``H += J^T W J`` and
    ``c = -J^T W r`` over the first ``m`` stacked task rows (``W = diag(w)``; ``H0`` symmetric)."""
    N, n = H.shape[0], J.shape[1]
    for i in range(N):
        c[i] = 0.0
        for j in range(N):
            H[i, j] = H0[i, j]
    for i in range(n):
        s = 0.0
        for k in range(m):
            s += w[k] * J[k, i] * r[k]
        c[i] = -s
        for j in range(i, n):
            s = 0.0
            for k in range(m):
                s += w[k] * J[k, i] * J[k, j]
            H[i, j] += s
            if j != i:
                H[j, i] += s



def _set_rotor_inertia(clm: ClosedLoopModel) -> None:
    """The model's armature on the actuated DOFs: the reflected rotor inertia of the ball screws
    (:class:`~kangaroo_wbc.model.ball_screw.BallScrewActuators`; 0 where the closure file gives no
    rotor). pinocchio's ``crba`` adds it to the mass matrix: it is part of the robot's dynamics, so
    every user of the model sees it (the closure kinematics and the estimators do not use ``M``)."""
    from kangaroo_wbc.model.ball_screw import BallScrewActuators

    screws = BallScrewActuators.from_model(clm, default_screw_lead_m=1.0, default_screw_efficiency=1.0)
    armature = np.array(clm.model.armature, dtype=float)
    armature[clm.idx_v_a] = screws.reflected_inertia_kg
    clm.model.armature = armature

__all__ = ["WholeBodyController", "WbcSettings", "WbcReferences", "WbcOutput", "FrameReference", "ActuatorLimits"]
