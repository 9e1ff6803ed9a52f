"""Contact wrenches, centres of pressure and ZMP (Kangaroo paper, Section VI-B, eq. (43)-(47)).

**Actuator forces** from the measured motor torques, eq. (47): ``tau_bar = tau_m 2 pi eta / L``
with the screw lead ``L`` [m] and efficiency ``eta`` per actuator
(:meth:`~kangaroo_wbc.model.ball_screw.BallScrewActuators.paper_force`).

**Wrenches.** Sign convention of the model (:mod:`kangaroo_wbc.model.dynamics`):
``M v_dot + h = S_a^T tau_a + J_l^T lambda + sum_i J_{c,i}^T f_i`` with ``f_i`` the wrench the
ground applies *on the robot*. The projected dynamics (App. B) with ``nu = [v_base, theta_dot_a]``,
``v = T nu`` and zero velocity and acceleration keep only gravity, ``T^T g = [0; tau_a] + (J_c T)^T f``.
Its actuated rows are the paper's eq. (44)-(46), since the actuated rows of ``T`` are the identity
and its passive rows ``J_m``:

.. math::

    \\underbrace{g_a + J_m^T g_u}_{g_{p,a}} - \\bar\\tau
      = \\underbrace{(J_{c,a} + J_{c,u} J_m)^T}_{J_{c,m}^T} f
    \\quad\\Longrightarrow\\quad
    f = (J_{c,m}^T)^{\\dagger} (g_{p,a} - \\bar\\tau)

The paper's ``F`` (eq. (46)) is the wrench the robot applies on the ground, ``F = -f``; here ``f``
(ground reaction, ``f_z > 0`` when standing) is reported. With a floating base ``g`` depends on
the base orientation, taken from the estimated configuration. Each sole contributes a 6D wrench in
its own frame (``LOCAL`` Jacobian: force then torque about the sole origin). ``J_m^T`` is never
formed: ``J_m^T x = -J_la^T J_lu^{-T} x``, so one LU solve of ``J_lu^T`` with ``1 + 6 c`` right-hand
sides gives both ``g_{p,a}`` and ``J_{c,m}^T``. Optional velocity terms (``include_velocity_terms``)
replace ``g_{p,a}`` by the actuated rows of the projected bias ``T^T (h + M k)`` (slow path through
:func:`projected_dynamics`).

**Floating base: the base rows.** The paper solves the actuated rows only. With a floating base the
projected dynamics has six more rows, the unactuated base rows (the robot's Newton-Euler equations:
the ground wrenches carry the weight and change the momentum),

.. math::

    J_{c,b}^T f = g_b + \\dot h_b,

with ``J_{c,b}`` the base columns of the sole Jacobians, ``g_b`` the base rows of the generalised
gravity (both in the base frame, moments about the base origin) and ``dh_b`` the rate of change
of the robot's spatial momentum, moved to the base frame:
``dh_b = [R^T dl; R^T (dk_O - p_b x dl)]`` with ``l = m c_dot`` and ``k_O = c x l + k_G`` about the
world origin (``pinocchio.computeCentroidalMomentum`` at the estimated ``(q, v)``, differenced
over one tick; omitted without ``v`` or with ``momentum_rate=False``). They matter on Kangaroo:
near the stretched-knee standing pose ``J_{c,m}^T`` is ill-conditioned (condition number 1e3-1e5),
because a force along a straight leg loads no actuator, so the actuated rows alone amplify
motor-torque noise and unmodelled dynamics into errors of hundreds of newtons in ``f_z``. The
stacked system (condition number ~30) is solved in the weighted least-squares sense,

.. math::

    \\min_f \\|J_{c,m}^T f - (g_{p,a} - \\bar\\tau)\\|^2 + w_b^2 \\|J_{c,b}^T f - (g_b + \\dot h_b)\\|^2,

through its normal equations (one 6c x 6c LU solve). The total wrench, hence the ZMP, then comes
from the weight and the momentum rate (well conditioned); the actuators decide how it splits
between the soles. ``base_row_weight = 0`` restores the paper's actuated rows only.

**Filter.** The paper low-passes the estimated wrenches (2nd-order Butterworth, 5 Hz). The noise
comes from the measurements, not from the model terms evaluated at the estimated configuration
(``g_{p,a}``, ``g_b``, the Jacobians are smooth functions of an accurate ``q``), and on a moving
robot filtering those only delays the static load transfer (the ZMP of a 0.6 Hz sway lagged by
~5 mm). So the same filter runs on the measured inputs, the actuator forces ``tau_bar`` and the
momentum rate ``dh_b``, and the filtered wrenches solve the equations above with the filtered
inputs and the current model terms. For a still configuration this equals filtering the wrenches
(the map is linear); ``wrench_sole_in_sole_raw`` is the unfiltered solution.

**Locked and limp actuators** (:meth:`ContactWrenchEstimator.set_actuator_mode`, issue #25). A
locked actuator ``k`` (seized screw, brake) carries whatever force the lock must: ``tau_bar_k`` is
an unknown, so row ``k`` of eq. (46), row ``k`` of ``J_c,m^T`` and of ``g_p,a - tau_bar``, leaves
the system: the normal equations become ``N = A_r^T A_r + w_b^2 J_c,b^T J_c,b`` over the kept rows
``A_r`` (11 of 12 on Kangaroo) and column ``k`` of the map ``P`` is zero; with two soles and the
base rows, 11 + 6 equations still determine the 12 unknowns. The lock's force is then read off the
removed row, ``tau_k = g_p,a,k - (J_c,m^T f)_k``. Without base rows (``base_row_weight = 0``) the
11 actuated rows under-determine the two soles' 12 unknowns: the minimum-norm least-squares
solution. A limp actuator (failed driver) exerts no motor force: its row stays with
``tau_bar_k = 0`` whatever its current sensor reads. Nothing in the model terms changes (``J_c,m``,
``g_p,a``, ``J_c,b`` are those of the same closed chain: the locked joint is still a joint of the
model, its encoder still reads); only the gain of eq. (47) (0 where not driven) and the row
indices are rebuilt at the change, and ``P`` re-factorised once — each tick factorises it anyway.

**CoP** of a sole wrench ``(f, tau)`` about the sole origin, in the sole frame (z normal):
``p = (-tau_y / f_z, tau_x / f_z, 0)``. **ZMP** of the summed wrench ``(F, T)`` about the world
origin, on the horizontal plane at height ``h`` (force-weighted sole height):
``p_x = (h F_x - T_y) / F_z``, ``p_y = (T_x + h F_y) / F_z``. Both are undefined (flagged
invalid, NaN) when the normal force is below ``min_normal_force_n``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin

from kangaroo_wbc.errors import EstimationError, FrameNotFound, InputError, suggest
from kangaroo_wbc.estimation.filters import ButterworthFilter
from kangaroo_wbc.model.ball_screw import BallScrewActuators
from kangaroo_wbc.model.cholesky import cholesky_in_place
from kangaroo_wbc.model.closed_loop_model import ClosedLoopModel, support_mask
from kangaroo_wbc.model.closure_kernel import frame_placements, local_frame_jacobians
from kangaroo_wbc.model.closure_kinematics import ClosureKinematics, lu_solve
from kangaroo_wbc.model.compiled import all_finite, buffers, compiled
from kangaroo_wbc.model.dynamics import projected_dynamics

if TYPE_CHECKING:
    from kangaroo_wbc.model.projected_model import ProjectedModel

#: Run-time modes of an actuator (:meth:`ContactWrenchEstimator.set_actuator_mode`), as in the
#: simulator and the whole-body controller: driven; ``locked`` (its force carried by the lock, an
#: unknown); ``limp`` (a failed driver: its force zero).
ACTUATOR_MODES = ("active", "locked", "limp")

#: Paper values (Section VI-B): ball-screw efficiency, lead of the hip/ankle actuators.
PAPER_SCREW_EFFICIENCY = 0.95
PAPER_LEAD_HIP_ANKLE_M = 0.05


def paper_screws(clm: ClosedLoopModel, default_screw_lead_m: float = PAPER_LEAD_HIP_ANKLE_M,
                 default_screw_efficiency: float = PAPER_SCREW_EFFICIENCY,
                 overrides: Mapping[str, Mapping[str, float]] | None = None) -> BallScrewActuators:
    """The actuators' ball screws: the closure file's ``actuators`` entries, ``overrides`` (actuator
    name → ``{"screw_lead_m": ..., "screw_efficiency": ...}``) on top, the paper's lead and
    efficiency where neither gives one (:meth:`BallScrewActuators.from_model`)."""
    return BallScrewActuators.from_model(clm, default_screw_lead_m=default_screw_lead_m,
                                         default_screw_efficiency=default_screw_efficiency, overrides=overrides)


@dataclass
class ContactWrenchConfig:
    """Parameters of :class:`ContactWrenchEstimator`.

    Attributes:
        cutoff_hz: Butterworth cutoff [Hz] (paper: 5 Hz).
        sample_rate_hz: update rate [Hz] (1 kHz).
        filter_order: Butterworth order (paper: 2).
        filter_enabled: low-pass the measured inputs (actuator forces, momentum rate) before
            solving for the wrenches that CoP/ZMP use (module docstring, "Filter").
        min_normal_force_n: CoP/ZMP are defined above this normal force [N].
        include_velocity_terms: add Coriolis/centrifugal and closure-bias terms to the actuated
            rows (slow).
        rcond: relative singular-value cut-off of the pseudo-inverse when ``J_c,m`` is not square.
        base_row_weight: floating base only: weight ``w_b`` of the base rows (Newton-Euler of the
            whole robot) against the actuated rows [-] (both in N and N·m); 0: actuated rows only
            (the paper's eq. (46)). 10 trusts the weight and momentum for the total wrench and
            leaves the split between the soles to the actuators.
        momentum_rate: add the rate of change of the robot's momentum to the base rows (needs the
            velocity ``v`` in :meth:`ContactWrenchEstimator.update`); otherwise quasi-static.
    """

    cutoff_hz: float = 5.0
    sample_rate_hz: float = 1000.0
    filter_order: int = 2
    filter_enabled: bool = True
    min_normal_force_n: float = 10.0
    include_velocity_terms: bool = False
    rcond: float = 1e-8
    base_row_weight: float = 10.0
    momentum_rate: bool = True

    def __post_init__(self) -> None:
        if not self.min_normal_force_n > 0:
            raise InputError(f"ContactWrenchConfig.min_normal_force_n must be > 0 [N], got {self.min_normal_force_n}")
        if not (np.isfinite(self.base_row_weight) and self.base_row_weight >= 0):
            raise InputError(f"ContactWrenchConfig.base_row_weight must be finite and >= 0, got {self.base_row_weight}")


@dataclass
class ContactWrenchEstimate:
    """Output of :meth:`ContactWrenchEstimator.update` (buffers reused between calls).

    Attributes:
        sole_frames: the soles, order of every per-sole array.
        actuator_force: actuator forces used [N] (or [N·m]): 0 for a limp actuator; for a locked
            one the lock's force read off its removed row of eq. (46) (module docstring).
        wrench_sole_in_sole_raw: unfiltered ground wrench on each sole, ``[f; tau]`` about the
            sole origin in the sole frame, (c, 6) [N, N·m].
        wrench_sole_in_sole: filtered estimate (what CoP/ZMP use), (c, 6).
        wrench_sole_in_world: filtered, rotated to world axes (still about the sole origin), (c, 6).
        cop_sole_in_sole: CoP in the sole frame (c, 3) [m], NaN where invalid.
        cop_in_world: CoP in the world frame (c, 3) [m], NaN where invalid.
        cop_valid: normal force above the threshold, (c,).
        zmp_in_world: ZMP [m], NaN if invalid; zmp_valid.
        total_force_in_world: sum of the filtered sole forces [N].
        residual: ``||J_cm^T f - (g_pa - tau_bar)||`` [N] of the actuated rows (0 when they
            alone determine ``f``; with base rows, what the least-squares compromise leaves).
        base_residual: ``||J_cb^T f - (g_b + dh_b)||`` [N, N·m] of the base rows (0 without them).
    """

    sole_frames: list[str]
    actuator_force: np.ndarray
    wrench_sole_in_sole_raw: np.ndarray
    wrench_sole_in_sole: np.ndarray
    wrench_sole_in_world: np.ndarray
    cop_sole_in_sole: np.ndarray
    cop_in_world: np.ndarray
    cop_valid: np.ndarray
    zmp_in_world: np.ndarray
    zmp_valid: bool = False
    total_force_in_world: np.ndarray = field(default_factory=lambda: np.zeros(3))
    residual: float = 0.0
    base_residual: float = 0.0


class ContactWrenchEstimator:
    """Contact wrenches from actuator forces, eq. (43)-(47), plus CoPs and ZMP.

    Args:
        clm: the closed-loop model (floating or fixed base).
        sole_frames: contact frames (z axis = sole normal, origin on the sole surface).
        transmission: the actuators' ball screws, motor torque → force by eq. (47)
            (:attr:`~kangaroo_wbc.model.ball_screw.BallScrewActuators.paper_gain`; default:
            :func:`paper_screws`).
        config: filter and threshold parameters.
    """

    def __init__(self, clm: ClosedLoopModel, sole_frames: Sequence[str],
                 transmission: BallScrewActuators | None = None,
                 config: ContactWrenchConfig | None = None) -> None:
        self.clm = clm
        self.model = clm.model
        self.config = cfg = config or ContactWrenchConfig()
        self.sole_frames = list(sole_frames)
        if not self.sole_frames:
            raise InputError("ContactWrenchEstimator: at least one sole frame is required")
        names = [f.name for f in self.model.frames]
        self.frame_ids = []
        for s in self.sole_frames:
            if not self.model.existFrame(s):
                raise FrameNotFound(f"unknown sole frame {s!r}." + suggest(s, names))
            self.frame_ids.append(int(self.model.getFrameId(s)))
        self.transmission = transmission or paper_screws(clm)
        if self.transmission.names != list(clm.actuated_joint_names):
            raise InputError("ContactWrenchEstimator: transmission actuators differ from the model's")
        self.kin = ClosureKinematics(clm)
        self.data = self.kin.data  # own pinocchio data, updated at every call
        c = len(self.sole_frames)
        self.n_soles = c
        nv, n_u, n_a = self.model.nv, clm.n_u, clm.n_a
        self._Jc = np.zeros((6 * c, nv))
        self._rhs = np.zeros((n_u, 1 + 6 * c))
        #: per sole, 1 on the velocity columns of the joints that support it (compiled Jacobians)
        self._sole_support = support_mask(self.model, self.frame_ids)
        # compile (or load) now, not in a tick; data.J is column-major
        local_frame_jacobians(np.zeros((6, nv), order="F"), np.zeros((c, 3, 3)), np.zeros((c, 3)),
                              self._sole_support, np.zeros((6 * c, nv)))
        self._square = n_a == 6 * c
        self.base_rows = bool(clm.floating_base and cfg.base_row_weight > 0)
        n_rhs = n_a + (6 if self.base_rows else 0)
        #: Butterworth on the measured inputs: actuator forces, then (base rows) the momentum rate
        self.filter = ButterworthFilter(cfg.cutoff_hz, cfg.sample_rate_hz, n_rhs, cfg.filter_order)
        self._filter_in = np.zeros(n_rhs)
        self._B = np.zeros((n_rhs, 2))  # [b_a; b_b] stacked: raw and filtered columns
        self._P = np.zeros((6 * c, n_rhs))
        self._eye_a = np.eye(n_a)
        #: per actuator: True while driven (``active``); the force of the others is not measured
        self.driven = np.ones(n_a, dtype=bool)
        self._modes = ["active"] * n_a
        self._rows = np.arange(n_a, dtype=np.int64)  # actuated rows of eq. (46) kept (not locked)
        self._locked = np.zeros(0, dtype=np.int64)  # locked rows: their force from the solution
        self._gain = self.transmission.paper_gain.copy()  # eq. (47), 0 where not driven
        self._force_scale = np.ones(n_a)  # 1 where driven, 0 else
        self._degraded = False  # an actuator not driven: the tick's one check of the modes
        #: duration of the last :meth:`set_actuator_mode` [ms]
        self.mode_change_ms = 0.0
        #: sole placements (rotation, translation) at the last model update
        self._sole_R, self._sole_p = np.zeros((c, 3, 3)), np.zeros((c, 3))
        self._F = np.zeros((6 * c, 2))  # wrenches from the factored map: raw, filtered
        self._res = np.zeros(2)  # residuals of the actuated and base rows
        self._empty = np.zeros(0)
        # the last projected model: its frames checked, the soles' rows in _sole_rows, _sole_users
        self._pm: ProjectedModel | None = None
        self._sole_rows = np.zeros(c, dtype=np.int64)  # the soles' rows of its placements
        self._sole_users = np.zeros(c, dtype=np.int64)  # the soles' rows of its frame Jacobians
        # sole placements from the closure kernel's joint placements (parent joint, fixed placement)
        frames = [self.model.frames[fid] for fid in self.frame_ids]
        self._sole_joint = np.array([f.parentJoint for f in frames], dtype=np.int64)
        self._sole_fR = np.array([f.placement.rotation for f in frames]).reshape(-1, 3, 3)
        self._sole_fp = np.array([f.placement.translation for f in frames]).reshape(-1, 3)
        self._solver_ready = False
        self._model_ready = False
        self.estimate = est = ContactWrenchEstimate(
            sole_frames=list(self.sole_frames), actuator_force=np.zeros(n_a),
            wrench_sole_in_sole_raw=np.zeros((c, 6)), wrench_sole_in_sole=np.zeros((c, 6)),
            wrench_sole_in_world=np.zeros((c, 6)), cop_sole_in_sole=np.full((c, 3), np.nan),
            cop_in_world=np.full((c, 3), np.nan), cop_valid=np.zeros(c, dtype=bool),
            zmp_in_world=np.full(3, np.nan))
        self.J_cm_T = np.zeros((n_a, 6 * c))  # last J_c,m^T, for diagnostics and tests
        self.g_pa = np.zeros(n_a)  # last g_a + J_m^T g_u [N]
        self.J_cb_T = np.zeros((6, 6 * c))  # last base rows J_c,b^T (base frame)
        self.g_base = np.zeros(6)  # last base rows of the generalised gravity [N, N·m]
        self.momentum_rate_in_base = np.zeros(6)  # last dh_b [N, N·m]
        self._h_world = np.zeros(6)  # spatial momentum about the world origin, world axes
        self._h_valid = False
        #: the arrays of :func:`_projected_sole_terms` (:data:`SoleTermBuffers`)
        self._sole_terms = SoleTermBuffers.make(
            rows=self._sole_rows, users=self._sole_users, idx_a=clm.idx_v_a, idx_u=clm.idx_v_u, sole_R=self._sole_R,
            sole_p=self._sole_p, J_cm_T=self.J_cm_T, J_cb_T=self.J_cb_T, g_pa=self.g_pa, n_b=clm.n_b,
            base_rows=self.base_rows)
        # compile (or load) the kernels now, not in a tick: on zero inputs, which leave the zero or NaN
        # buffers as they are (pinocchio's rotation layout is in the momentum kernel's signature)
        for R in (pin.SE3.Identity().rotation, np.eye(3)):  # pinocchio's and the closure kernel's
            _momentum_rate_kernel(np.zeros(3), np.zeros(3), np.zeros(3), R, np.zeros(3), np.zeros(6), False, 1.0,
                                  np.zeros(6))
        frame_placements(np.zeros((1, 3, 3)), np.zeros((1, 3)), np.zeros(1, dtype=np.int64), np.zeros((1, 3, 3)),
                         np.zeros((1, 3)), np.zeros((1, 3, 3)), np.zeros((1, 3)))
        _projected_sole_terms(self._sole_terms, np.zeros((1, 3, 3)), np.zeros((1, 3)),
                              np.zeros((1, 6, clm.n_b + n_a)), np.zeros(nv), np.zeros((n_u, n_a)))
        if self.base_rows:
            _normal_equations_map(np.eye(n_a, 6 * c), self._rows, np.eye(6, 6 * c), 1.0, self._P.copy())
        _wrench_rhs(self.g_pa, est.actuator_force, self.g_base, self.momentum_rate_in_base,
                    self._filter_in if cfg.filter_enabled else self._empty, self.base_rows, cfg.filter_enabled,
                    self._B)
        _wrench_from_map(self._P, self._B, 2, self.J_cm_T, self.J_cb_T, self.base_rows, self._F, self._res)
        _locked_rows(self.J_cm_T, self._rows, self._locked, self.g_pa, self._B, self._F, self.base_rows,
                     est.actuator_force, self._res)
        _cop_zmp(est.wrench_sole_in_sole, self._sole_R, self._sole_p, 1.0, est.wrench_sole_in_world, est.cop_valid,
                 est.cop_sole_in_sole, est.cop_in_world, est.total_force_in_world, est.zmp_in_world)

    def reset_filter(self) -> None:
        """Forget the filter state (the next sample initialises it) and the momentum history."""
        self.filter.reset(None)
        self._h_valid = False

    # ------------------------------------------------------------------ core of eq. (46)
    def _model_terms(self, q: np.ndarray, v: np.ndarray | None, kinematics: ClosureKinematics | None) -> None:
        """``J_c,m^T``, ``g_p,a`` and, with base rows, ``J_c,b^T``, ``g_b`` and the momentum rate."""
        clm, m = self.clm, self.model
        kin = self.kin if kinematics is None else kinematics
        if kinematics is None:
            kin.update(q)
        self.data = data = kin.data
        _, _, J_la = kin.evaluate()
        Jc = self._Jc
        if kin.kernel is not None:  # its joint placements are those of q after evaluate()
            frame_placements(kin.kernel.oR, kin.kernel.op, self._sole_joint, self._sole_fR, self._sole_fp,
                             self._sole_R, self._sole_p)
        else:
            for i, fid in enumerate(self.frame_ids):
                oMs = data.oMf[fid]
                self._sole_R[i], self._sole_p[i] = oMs.rotation, oMs.translation
        # compiled, from data.J (same numbers as pinocchio's LOCAL frame Jacobians, tested)
        local_frame_jacobians(data.J, self._sole_R, self._sole_p, self._sole_support, Jc)
        g = pin.computeGeneralizedGravity(m, data, q)
        blu = kin.factorised_block_lu() if clm.n_u else None
        if blu is not None:
            # compiled: J_c,m^T = (J_c,a + J_c,u J_m)^T and g_a + J_m^T g_u by one transposed block
            # solve and products over the nonzeros of J_la (same numbers as below, tested)
            blu.project_through(Jc, g, clm.idx_v_u, clm.idx_v_a, J_la, self.J_cm_T, self.g_pa)
        else:
            self.J_cm_T[:] = Jc[:, clm.idx_v_a].T
            self.g_pa[:] = g[clm.idx_v_a]
            if clm.n_u:  # J_m^T x = -J_la^T J_lu^{-T} x
                rhs = self._rhs
                rhs[:, 0] = g[clm.idx_v_u]
                rhs[:, 1:] = Jc[:, clm.idx_v_u].T
                Y = kin.solve(rhs, transpose=True)
                if Y is None:
                    raise EstimationError("J_lu is singular: the configuration is at a kinematic singularity")
                self.g_pa -= J_la.T @ Y[:, 0]
                self.J_cm_T -= J_la.T @ Y[:, 1:]
        if self.config.include_velocity_terms and v is not None:
            pd = projected_dynamics(clm, q, v, self.sole_frames, 6, pin.LOCAL)
            self.g_pa[:] = pd.h[pd.actuated_rows]
        if self.base_rows:
            self.J_cb_T[:] = Jc[:, :6].T
        self._base_terms(q, v, g, kin)

    def _model_terms_projected(self, q: np.ndarray, v: np.ndarray | None, pm: ProjectedModel) -> None:
        """:meth:`_model_terms` from a :class:`ProjectedModel` already updated at ``q``: its sole
        Jacobians ``J_c T`` (rotated to the sole frames), ``J_m``, centroidal momentum and, with
        velocity terms, ``h_p``; only the generalised gravity is computed here."""
        g = pin.computeGeneralizedGravity(self.model, self.kin.data, q)
        # one compiled pass (same numbers as the estimator's own update, tested)
        _projected_sole_terms(self._sole_terms, pm.frame_rotations, pm.frame_positions, pm.frame_jacobians_T, g,
                              pm.J_m)
        if self.config.include_velocity_terms and v is not None:
            self.g_pa[:] = pm.h_p[self.clm.n_b:]
        self._base_terms(q, v, g, pm)

    def _base_terms(self, q: np.ndarray, v: np.ndarray | None, g: np.ndarray,
                    source: ClosureKinematics | ProjectedModel) -> None:
        """The base rows' gravity ``g_b`` and momentum rate ``dh_b``, and the factored map. The
        momentum comes from the projected model ``source``, or is computed here at ``(q, v)`` with the
        base placement from the closure kinematics ``source`` (its compiled closure pass when it has one)."""
        if self.base_rows:
            self.g_base[:] = g[:6]
            if self.config.momentum_rate and v is not None:
                if isinstance(source, ClosureKinematics):
                    data = self.data
                    pin.computeCentroidalMomentum(self.model, data, q, v)
                    linear, angular, com = data.hg.linear, data.hg.angular, data.com[0]
                    if source.kernel is not None:
                        R, p = source.kernel.oR[1], source.kernel.op[1]
                    else:
                        R, p = data.oMi[1].rotation, data.oMi[1].translation
                else:
                    linear, angular, com, (R, p) = source.h_G[:3], source.h_G[3:], source.com, source.base_placement()
                _momentum_rate_kernel(linear, angular, com, R, p, self._h_world, self._h_valid,
                                      float(self.config.sample_rate_hz), self.momentum_rate_in_base)
                self._h_valid = True
            else:
                self.momentum_rate_in_base[:] = 0.0
                self._h_valid = False
        self._solver_ready = self._factor()

    def _factor(self) -> bool:
        """The linear map from right-hand sides to wrenches, ``f = P [b_a; b_b]`` (model part).

        With base rows, ``P = N^{-1} [A^T, w^2 J_b^T]`` (normal equations, ``N = A^T A + w^2 J_b^T J_b``,
        by Cholesky, ``A`` the rows of ``J_c,m^T`` kept: not those of locked actuators, whose columns
        of ``P`` are zero); else ``P = A^{-1}`` for a square ``A = J_c,m^T`` with every row kept.
        False when this is singular or a lock leaves the actuated rows alone under-determined (the
        estimation step then falls back to least squares).
        """
        if self.base_rows:
            # N is symmetric positive definite unless the contact Jacobians lose rank: Cholesky
            # (compiled, 12 x 12); where it fails the estimation step solves with LU or least squares
            return _normal_equations_map(self.J_cm_T, self._rows, self.J_cb_T, self.config.base_row_weight ** 2,
                                         self._P)
        X = lu_solve(self.J_cm_T, self._eye_a) if self._square and self._locked.size == 0 else None
        if X is None or not np.isfinite(X).all():
            return False
        self._P[:] = X
        return True

    def _solve(self, B_a: np.ndarray, B_b: np.ndarray | None) -> np.ndarray:
        """Wrenches for the right-hand-side columns ``B_a`` (actuated rows) and ``B_b`` (base rows)
        when the factored map is not available (:meth:`_factor` failed: near a singular contact
        Jacobian): weighted least squares with base rows, else eq. (46) in the least-squares sense;
        one column per wanted solution. The rows of locked actuators leave ``A`` and ``B_a``, and
        their forces come from the solution (:meth:`set_actuator_mode`)."""
        cfg, est = self.config, self.estimate
        A = self.J_cm_T
        if self._locked.size:
            A, B_a = A[self._rows], B_a[self._rows]
        est.base_residual = 0.0
        if B_b is None:
            F = np.linalg.lstsq(A, B_a, rcond=cfg.rcond)[0]
        else:
            J_b, w, w2 = self.J_cb_T, cfg.base_row_weight, cfg.base_row_weight ** 2
            F = lu_solve(A.T @ A + w2 * (J_b.T @ J_b), A.T @ B_a + w2 * (J_b.T @ B_b))
            if F is None or not np.isfinite(F).all():
                F = np.linalg.lstsq(np.vstack([A, w * J_b]), np.vstack([B_a, w * B_b]), rcond=cfg.rcond)[0]
            est.base_residual = float(np.linalg.norm(J_b @ F[:, 0] - B_b[:, 0]))
        est.residual = float(np.linalg.norm(A @ F[:, 0] - B_a[:, 0]))
        if self._locked.size:  # the locks' forces, eq. (46)'s removed rows: g_p,a - J_c,m^T f
            lk = self._locked
            est.actuator_force[lk] = self.g_pa[lk] - self.J_cm_T[lk] @ F[:, 0]
        return F

    # ------------------------------------------------------------------ morphology
    @property
    def actuator_modes(self) -> dict[str, str]:
        """Each actuator's mode (:data:`ACTUATOR_MODES`), by actuated-joint name."""
        return dict(zip(self.clm.actuated_joint_names, self._modes))

    def set_actuator_mode(self, name: str, mode: str) -> None:
        """Estimate with actuator ``name`` driven (``active``), ``locked`` or ``limp`` from the next
        estimate on (module docstring, "Locked and limp actuators").

        - ``locked`` (a seized screw, a brake): its force is carried by the lock and is an unknown.
          Row ``k`` of eq. (46) (row ``k`` of ``J_c,m^T`` and of ``g_p,a - tau_bar``) leaves the
          least squares: the wrenches come from the other actuated rows and the base rows, and the
          lock's force is then read off the removed row, ``tau_k = g_p,a,k - (J_c,m^T f)_k``, into
          ``estimate.actuator_force[k]``.
        - ``limp`` (a failed driver): its force is known to be zero. Row ``k`` stays with
          ``tau_bar_k = 0``; the measured motor torque is ignored (the driver no longer sets the
          current; what its sensor reads is not the screw's force).
        - ``active``: the measured force again.

        The per-actuator gain of eq. (47) (0 where not driven), the kept rows and the locked rows
        are rebuilt here once; the map ``P`` of the last model update is re-factorised at once (the
        next tick's update re-factorises it anyway). The tick looks at the modes once (one flag):
        while every actuator is driven it runs as it did before modes existed.
        The time taken is :attr:`mode_change_ms`.

        Raises:
            InputError: unknown actuator or mode (the message lists the valid ones).
        """
        names = list(self.clm.actuated_joint_names)
        if name not in names:
            raise InputError(f"unknown actuator {name!r}." + suggest(name, names))
        if mode not in ACTUATOR_MODES:
            raise InputError(f"unknown actuator mode {mode!r}; modes are {list(ACTUATOR_MODES)}")
        t0 = time.perf_counter()
        self._modes[names.index(name)] = mode
        modes = np.array(self._modes)
        self.driven[:] = modes == "active"
        self._rows = np.flatnonzero(modes != "locked").astype(np.int64)
        self._locked = np.flatnonzero(modes == "locked").astype(np.int64)
        self._force_scale[:] = self.driven
        np.multiply(self.transmission.paper_gain, self._force_scale, out=self._gain)
        self._degraded = not self.driven.all()
        if self._model_ready:
            self._solver_ready = self._factor()
        self.mode_change_ms = 1e3 * (time.perf_counter() - t0)

    # ------------------------------------------------------------------ public
    def update(self, q: np.ndarray, motor_torque: np.ndarray | None = None,
               actuator_force: np.ndarray | None = None, v: np.ndarray | None = None,
               kinematics: ClosureKinematics | None = None,
               projected: ProjectedModel | None = None) -> ContactWrenchEstimate:
        """One estimation tick: :meth:`update_model` then :meth:`estimate_wrenches`.

        Args:
            q: estimated configuration (base orientation included for a floating base).
            motor_torque: measured motor torques ``tau_m`` [N·m] (eq. (47) converts them), or
            actuator_force: actuator forces ``tau_bar`` directly [N] (one of the two).
            v: estimated velocity (base twist included): the momentum rate of the base rows and
                the optional velocity terms; None: quasi-static. With ``momentum_rate`` call
                once per tick at ``sample_rate_hz`` (the rate is a one-tick difference), and
                :meth:`reset_filter` after a gap.
            kinematics: a :class:`ClosureKinematics` of the same model already updated at ``q``
                (the passive-state estimator's full-model update), reused instead of a new one.
            projected: a :class:`~kangaroo_wbc.model.projected_model.ProjectedModel` of the same
                model already updated at ``q`` (e.g. the whole-body controller's, when both run in
                one process): its closure and contact terms are reused, only the generalised
                gravity is computed (the momentum rate uses its velocity ``T nu``).

        Returns:
            The estimate (internal buffers, overwritten at the next call).

        Raises:
            EstimationError: non-finite or wrongly sized input, singular configuration.
        """
        self.update_model(q, v, kinematics, projected)
        return self.estimate_wrenches(motor_torque=motor_torque, actuator_force=actuator_force)

    def update_model(self, q: np.ndarray, v: np.ndarray | None = None,
                     kinematics: ClosureKinematics | None = None,
                     projected: ProjectedModel | None = None) -> None:
        """Model part of a tick at the estimated state (eq. (44)-(45)): ``J_c,m^T``, ``g_p,a``, the
        base rows and the map from measurements to wrenches. Arguments as in :meth:`update`.

        This is the "full-model update" the paper counts with the state estimator; the wrench
        estimation proper is :meth:`estimate_wrenches`.
        """
        q = np.ascontiguousarray(q, dtype=float)
        if q.shape != (self.model.nq,) or not all_finite(q, self._empty):
            raise EstimationError(f"configuration must be finite with shape ({self.model.nq},), got {q.shape}")
        if v is not None:
            v = np.ascontiguousarray(v, dtype=float)
            if v.shape != (self.model.nv,) or not all_finite(v, self._empty):
                raise EstimationError(f"velocity must be finite with shape ({self.model.nv},), got {v.shape}")
        if kinematics is not None and kinematics.model is not self.model:
            raise InputError("update_model: the kinematics belong to another model")
        if projected is not None:
            if kinematics is not None:
                raise InputError("update_model: give kinematics or projected, not both")
            if projected.model is not self.model:
                raise InputError("update_model: the projected model belongs to another model")
            if self._pm is not projected:  # its frames are fixed at construction: check and index once
                missing = [s for s in self.sole_frames if s not in projected.frame_names]
                if missing:
                    raise InputError(f"update_model: sole frames {missing} not registered in the projected model "
                                     f"(it has {projected.frame_names})")
                self._sole_users[:] = [projected.frame_index(s) for s in self.sole_frames]
                self._sole_rows[:] = 2 * projected.n_closures + self._sole_users
                self._pm = projected
            if not projected.is_current(q):
                raise InputError("update_model: the projected model was not updated at this configuration")
        self._model_ready = False
        if projected is not None:
            self._model_terms_projected(q, v, projected)
        else:
            self._model_terms(q, v, kinematics)
        self._model_ready = True

    def estimate_wrenches(self, motor_torque: np.ndarray | None = None,
                          actuator_force: np.ndarray | None = None) -> ContactWrenchEstimate:
        """Wrench estimation proper, eq. (46)-(47): actuator forces, filter, wrenches, CoPs, ZMP,
        with the model terms of the last :meth:`update_model`.

        Raises:
            EstimationError: non-finite or wrongly sized efforts, or no model update yet.
        """
        if not self._model_ready:
            raise EstimationError("estimate_wrenches: call update_model (or update) first")
        clm, est = self.clm, self.estimate
        n_a = clm.n_a
        if (motor_torque is None) == (actuator_force is None):
            raise InputError("give exactly one of motor_torque and actuator_force")
        x = np.ascontiguousarray(motor_torque if actuator_force is None else actuator_force, dtype=float)
        if x.shape != (n_a,) or not all_finite(x, self._empty):
            raise EstimationError(f"actuator efforts must be finite with shape ({n_a},), got {x.shape}")
        tau_bar = est.actuator_force
        if motor_torque is None:
            tau_bar[:] = x
            if self._degraded:  # 0 where not driven (set_actuator_mode)
                tau_bar *= self._force_scale
        else:  # eq. (47): BallScrewActuators.paper_force, with a gain of 0 where not driven
            np.multiply(self._gain, x, out=tau_bar)
        c = self.n_soles
        filt = self.config.filter_enabled
        cols = 2 if filt else 1
        y = self._empty
        if filt:  # the measured inputs, not the configuration-dependent model terms
            u = self._filter_in
            u[:n_a] = tau_bar
            if self.base_rows:
                u[n_a:] = self.momentum_rate_in_base
            y = self.filter(u)
        # right-hand sides [b_a; b_b], raw and filtered columns (compiled)
        _wrench_rhs(self.g_pa, tau_bar, self.g_base, self.momentum_rate_in_base, y, self.base_rows, filt, self._B)
        if self._solver_ready:
            F, res = self._F, self._res
            _wrench_from_map(self._P, self._B, cols, self.J_cm_T, self.J_cb_T, self.base_rows, F, res)
            if self._degraded:  # the locks' forces, the residual of the kept rows
                _locked_rows(self.J_cm_T, self._rows, self._locked, self.g_pa, self._B, F, self.base_rows, tau_bar,
                             res)
            est.residual, est.base_residual = float(res[0]), float(res[1])
        else:
            F = self._solve(self._B[:n_a, :cols], self._B[n_a:, :cols] if self.base_rows else None)
        est.wrench_sole_in_sole_raw[:] = F[:, 0].reshape(c, 6)
        est.wrench_sole_in_sole[:] = F[:, cols - 1].reshape(c, 6)
        # CoPs and ZMP (module docstring) at the sole placements of the last model update
        est.zmp_valid = bool(_cop_zmp(est.wrench_sole_in_sole, self._sole_R, self._sole_p,
                                      self.config.min_normal_force_n, est.wrench_sole_in_world, est.cop_valid,
                                      est.cop_sole_in_sole, est.cop_in_world, est.total_force_in_world,
                                      est.zmp_in_world))
        return est


#: The estimator's arrays of :func:`_projected_sole_terms`, written in place (``rows``, ``users``:
#: the soles' rows in the projected model's placements and frame Jacobians).
SoleTermBuffers = buffers("SoleTermBuffers", ("rows", "users", "idx_a", "idx_u", "sole_R", "sole_p", "J_cm_T",
                                              "J_cb_T", "g_pa", "n_b", "base_rows"))


@compiled
def _projected_sole_terms(buf, R_all, p_all, Jf_T, g, J_m):
    """:meth:`ContactWrenchEstimator._model_terms_projected` (compiled): sole placements
    (``R_all[rows]``, ``p_all[rows]``), the sole-frame rows of ``J_c T`` (``Jf_T[users]``, world axes,
    turned by ``R^T``) into ``J_cm_T`` (actuated columns) and ``J_cb_T`` (base columns), and
    ``g_pa = g_a + J_m^T g_u``."""
    rows, users, idx_a, idx_u, n_b, base_rows = buf.rows, buf.users, buf.idx_a, buf.idx_u, buf.n_b, buf.base_rows
    sole_R, sole_p, J_cm_T, J_cb_T, g_pa = buf.sole_R, buf.sole_p, buf.J_cm_T, buf.J_cb_T, buf.g_pa
    n_nu = Jf_T.shape[2]
    for i in range(rows.shape[0]):
        s, u = rows[i], users[i]
        for a in range(3):
            sole_p[i, a] = p_all[s, a]
            for b in range(3):
                sole_R[i, a, b] = R_all[s, a, b]
        for blk in range(2):  # linear rows, angular rows
            for r in range(3):
                for j in range(n_nu):
                    x = (R_all[s, 0, r] * Jf_T[u, 3 * blk, j] + R_all[s, 1, r] * Jf_T[u, 3 * blk + 1, j]
                         + R_all[s, 2, r] * Jf_T[u, 3 * blk + 2, j])
                    if j >= n_b:
                        J_cm_T[j - n_b, 6 * i + 3 * blk + r] = x
                    elif base_rows:
                        J_cb_T[j, 6 * i + 3 * blk + r] = x
    for j in range(idx_a.shape[0]):
        x = g[idx_a[j]]
        for k in range(idx_u.shape[0]):
            x += J_m[k, j] * g[idx_u[k]]
        g_pa[j] = x


@compiled
def _momentum_rate_kernel(linear, angular, com, R, p, h, valid, rate, out):
    """:meth:`ContactWrenchEstimator._momentum_rate_from` (compiled). ``h`` (6) holds the previous
    spatial momentum about the world origin, world axes, ``[l; c x l + k_G]``, and takes the new one;
    ``out = [R^T f; R^T (t - p x f)]`` with ``[f; t] = (h_new - h) rate`` (zero when not ``valid``)."""
    lx, ly, lz = linear[0], linear[1], linear[2]
    cx, cy, cz = com[0], com[1], com[2]
    hn = np.empty(6)
    hn[0], hn[1], hn[2] = lx, ly, lz
    hn[3] = cy * lz - cz * ly + angular[0]
    hn[4] = cz * lx - cx * lz + angular[1]
    hn[5] = cx * ly - cy * lx + angular[2]
    if valid:
        fx, fy, fz = (hn[0] - h[0]) * rate, (hn[1] - h[1]) * rate, (hn[2] - h[2]) * rate
        tx = (hn[3] - h[3]) * rate - (p[1] * fz - p[2] * fy)
        ty = (hn[4] - h[4]) * rate - (p[2] * fx - p[0] * fz)
        tz = (hn[5] - h[5]) * rate - (p[0] * fy - p[1] * fx)
        for j in range(3):
            out[j] = R[0, j] * fx + R[1, j] * fy + R[2, j] * fz
            out[3 + j] = R[0, j] * tx + R[1, j] * ty + R[2, j] * tz
    else:
        for j in range(6):
            out[j] = 0.0
    for j in range(6):
        h[j] = hn[j]


@compiled
def _normal_equations_map(A, rows, J_b, w2, P):
    """``P = N^{-1} [A_r^T, w2 J_b^T]`` with ``N = A_r^T A_r + w2 J_b^T J_b`` by Cholesky, ``A_r`` the
    rows ``rows`` of ``A`` (the other rows' columns of ``P`` are zero: those equations are left out);
    compiled: far below the cost of the numpy products and the LAPACK call's overhead at this size.
    False, with ``P`` untouched, if ``N`` is not numerically positive definite (a pivot below 1e-12
    of its diagonal entry) or the result is not finite."""
    n_a, n, n_b = A.shape[0], A.shape[1], J_b.shape[0]
    L = np.zeros((n, n))
    for i in range(n):  # N, lower triangle, into L
        for j in range(i + 1):
            s = 0.0
            for kk in range(rows.shape[0]):
                k = rows[kk]
                s += A[k, i] * A[k, j]
            sb = 0.0
            for k in range(n_b):
                sb += J_b[k, i] * J_b[k, j]
            L[i, j] = s + w2 * sb
    if not cholesky_in_place(L, n, 1e-12):  # a pivot lost to cancellation: rank-deficient (cond > ~1e12)
        return False
    X = np.zeros((n, n_a + n_b))
    y = np.empty(n)
    for cc in range(rows.shape[0] + n_b):
        c = rows[cc] if cc < rows.shape[0] else n_a + cc - rows.shape[0]
        for i in range(n):  # forward: L y = column c of [A^T, w2 J_b^T]
            s = A[c, i] if c < n_a else w2 * J_b[c - n_a, i]
            for k in range(i):
                s -= L[i, k] * y[k]
            y[i] = s / L[i, i]
        for i in range(n - 1, -1, -1):  # backward: L^T x = y
            s = y[i]
            for k in range(i + 1, n):
                s -= L[k, i] * X[k, c]
            X[i, c] = s / L[i, i]
            if not math.isfinite(X[i, c]):
                return False
    P[:, :] = X
    return True


@compiled
def _wrench_rhs(g_pa, tau_bar, g_base, momentum_rate, y, base_rows, filtered, B):
    """``B[:, 0] = [g_p,a - tau_bar; g_b + dh_b]`` (eq. (46) with the base rows) and, with the filter,
    ``B[:, 1]`` from the filtered inputs ``y = [tau_bar; dh_b]``."""
    n_a = g_pa.shape[0]
    for i in range(n_a):
        B[i, 0] = g_pa[i] - tau_bar[i]
        if filtered:
            B[i, 1] = g_pa[i] - y[i]
    if base_rows:
        for i in range(6):
            B[n_a + i, 0] = g_base[i] + momentum_rate[i]
            if filtered:
                B[n_a + i, 1] = g_base[i] + y[n_a + i]


@compiled
def _locked_rows(A, rows, locked, g_pa, B, F, base_rows, tau, res):
    """With locked actuators (:meth:`ContactWrenchEstimator.set_actuator_mode`), after
    :func:`_wrench_from_map`: the forces of the ``locked`` rows (left out of the map) from the raw
    solution, ``tau[k] = g_pa[k] - A[k] f_0``, and the actuated rows' residual over the kept
    ``rows`` only (with base rows; the square system has none)."""
    n = A.shape[1]
    for kk in range(locked.shape[0]):
        k = locked[kk]
        s = g_pa[k]
        for q in range(n):
            s -= A[k, q] * F[q, 0]
        tau[k] = s
    if base_rows:
        r = 0.0
        for ii in range(rows.shape[0]):
            i = rows[ii]
            s = -B[i, 0]
            for q in range(n):
                s += A[i, q] * F[q, 0]
            r += s * s
        res[0] = math.sqrt(r)


@compiled
def _wrench_from_map(P, B, cols, A, J_b, base_rows, F, res):
    """``F[:, :cols] = P B[:, :cols]`` (the factored least-squares map of
    :meth:`ContactWrenchEstimator._factor`) and the residuals of the raw column:
    ``res = (|A f_0 - b_a|, |J_b f_0 - b_b|)`` with base rows, zeros for the square system (solved
    exactly)."""
    n, m = P.shape[0], P.shape[1]
    for i in range(n):
        for j in range(cols):
            s = 0.0
            for q in range(m):
                s += P[i, q] * B[q, j]
            F[i, j] = s
    res[0] = res[1] = 0.0
    if base_rows:
        n_a = A.shape[0]
        r = 0.0
        for i in range(n_a):
            s = 0.0
            for q in range(n):
                s += A[i, q] * F[q, 0]
            s -= B[i, 0]
            r += s * s
        rb = 0.0
        for i in range(J_b.shape[0]):
            s = 0.0
            for q in range(n):
                s += J_b[i, q] * F[q, 0]
            s -= B[n_a + i, 0]
            rb += s * s
        res[0], res[1] = math.sqrt(r), math.sqrt(rb)


@compiled
def _cop_zmp(W, R, p, f_min, W_world, cop_valid, cop_sole, cop_world, total, zmp):
    """Per sole ``i`` (wrench ``W[i]`` in the sole frame, placement ``R[i]``, ``p[i]``): the wrench in
    world axes, the CoP (defined above the normal force ``f_min``); the total force and the ZMP on
    the plane at the force-weighted sole height. Returns whether the ZMP is defined."""
    Fx = Fy = Fz = Tx = Ty = 0.0
    h_num = h_den = 0.0
    for i in range(W.shape[0]):
        fx, fy, fz, tx, ty, tz = W[i, 0], W[i, 1], W[i, 2], W[i, 3], W[i, 4], W[i, 5]
        r = R[i]
        px, py, pz = p[i, 0], p[i, 1], p[i, 2]
        fwx = r[0, 0] * fx + r[0, 1] * fy + r[0, 2] * fz
        fwy = r[1, 0] * fx + r[1, 1] * fy + r[1, 2] * fz
        fwz = r[2, 0] * fx + r[2, 1] * fy + r[2, 2] * fz
        W_world[i, 0], W_world[i, 1], W_world[i, 2] = fwx, fwy, fwz
        twx = r[0, 0] * tx + r[0, 1] * ty + r[0, 2] * tz
        twy = r[1, 0] * tx + r[1, 1] * ty + r[1, 2] * tz
        W_world[i, 3], W_world[i, 4] = twx, twy
        W_world[i, 5] = r[2, 0] * tx + r[2, 1] * ty + r[2, 2] * tz
        Fx += fwx
        Fy += fwy
        Fz += fwz
        Tx += twx + py * fwz - pz * fwy  # moment about the world origin: tau + p x f
        Ty += twy + pz * fwx - px * fwz
        if fz > f_min:
            cx, cy = -ty / fz, tx / fz
            cop_valid[i] = True
            cop_sole[i, 0], cop_sole[i, 1], cop_sole[i, 2] = cx, cy, 0.0
            cop_world[i, 0] = r[0, 0] * cx + r[0, 1] * cy + px
            cop_world[i, 1] = r[1, 0] * cx + r[1, 1] * cy + py
            cop_world[i, 2] = r[2, 0] * cx + r[2, 1] * cy + pz
            if fwz > 0.0:
                h_num += fwz * pz
                h_den += fwz
        else:
            cop_valid[i] = False
            for j in range(3):
                cop_sole[i, j] = np.nan
                cop_world[i, j] = np.nan
    total[0], total[1], total[2] = Fx, Fy, Fz
    if Fz > f_min and h_den > 0.0:
        h = h_num / h_den
        zmp[0], zmp[1], zmp[2] = (h * Fx - Ty) / Fz, (Tx + h * Fy) / Fz, h
        return True
    zmp[0] = zmp[1] = zmp[2] = np.nan
    return False


__all__ = ["ContactWrenchConfig", "ContactWrenchEstimate", "ContactWrenchEstimator", "paper_screws",
           "PAPER_LEAD_HIP_ANKLE_M", "PAPER_SCREW_EFFICIENCY", "ACTUATOR_MODES"]
