"""Ball-screw actuator model: motor torque ↔ axial force, with losses and rotor inertia.

One implementation, used by the simulator's actuators (:mod:`kangaroo_wbc.sim.actuator`) and
sensors (:mod:`kangaroo_wbc.sim.sensors`, through :func:`paper_gain`), by the contact-wrench
estimator (:mod:`kangaroo_wbc.estimation.contact_wrench`, eq. (47)), by the estimators'
compensations (:mod:`kangaroo_wbc.estimation.actuator_force`) and by the command path (the drive's
force → motor-torque conversion). Robot-agnostic; the Kangaroo's numbers come from
its parameter file through the closure file's ``actuators`` entries (:meth:`BallScrewActuators.from_entries`).

**Ideal screw** (eq. (47) of the Kangaroo paper): ``tau_bar = tau_m 2 pi eta / L``, the gain
:func:`paper_gain` (:meth:`BallScrewActuators.paper_force`; its inverse divides by the gain).

**Driving and back-driving.** A ball screw transmits power ``P_m = tau_m omega_m`` (motor side,
``omega_m = 2 pi x_dot / L``) into ``F x_dot`` with efficiency ``eta`` when the motor drives the load
and ``P_m = eta' F x_dot`` when the load drives the motor (``eta' < eta``). Writing
``y = tau_m 2 pi / L`` (the motor torque as an axial force) and ``s = tanh(x_dot / v_s)`` the
smooth direction of motion,

.. math::

    F_{screw} = \\eta_m\\, y - \\Delta\\, |y|\\, s,
    \\qquad \\eta_m = \\tfrac12 (\\eta + 1/\\eta'),\\quad \\Delta = \\tfrac12 (1/\\eta' - \\eta)

which gives ``F = eta y`` when driving (``y`` and ``x_dot`` of one sign, ``|x_dot| >> v_s``) and
``F = y / eta'`` when back-driven. The switch is a load-dependent Coulomb friction of magnitude
``Δ |y|``; at standstill the screw sits mid-band (``eta_m``), where a real screw holds any force in
``[eta y, y / eta']`` (static friction).

**Bearings and seals**: Coulomb plus viscous friction with a smooth stiction zone of width ``v_s``,
``F_f = F_c s + b x_dot``. **Rotor inertia** reflected through the screw, ``m_r = J_r (2 pi / L)^2``
[kg], is carried by the actuator: the force on the linkage is

.. math::  F = \\eta_m y - (\\Delta |y| + F_c)\\, s - b\\, \\dot x - m_r\\, \\ddot x
           \\qquad (:meth:`BallScrewActuators.force_from_torque`)

and :meth:`BallScrewActuators.torque_from_force` is its exact inverse. The power balance
``y x_dot = F x_dot + m_r x_ddot x_dot + P_loss`` holds with a loss ``P_loss >= 0`` outside the
stiction zone.

Revolute actuators (``is_linear`` False) pass torques through unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.errors import ConfigError, InputError, suggest
from kangaroo_wbc.model.compiled import compiled

#: Entries of a closure file's ``actuators`` mapping read here, with their defaults (the ideal screw:
#: no losses beyond ``eta``, no inertia). Keys marked (sim) describe the simulated hardware only.
ENTRY_DEFAULTS: dict[str, float] = {
    "screw_lead_m": math.nan,  # [m] (NaN: the caller's default)
    "screw_efficiency": math.nan,  # [-] eta, driving (NaN: the caller's default)
    "back_drive_efficiency": math.nan,  # [-] eta' (NaN: no switch, eq. (47) both ways)
    "rotor_inertia_kgm2": 0.0,  # [kg·m²]
    "coulomb_friction_n": 0.0,  # [N]
    "viscous_friction_n_s_per_m": 0.0,  # [N·s/m]
    "stiction_velocity_m_s": 1e-3,  # [m/s]
    "max_force_n": math.inf,  # [N] gives the motor torque limit
    "torque_constant_error": 0.0,  # (sim) [-] half-width of the per-boot k_t error
    "current_noise_std_nm": 0.0,  # (sim) [N·m] motor torque noise of the current sensor
    "current_bias_std_nm": 0.0,  # (sim) [N·m] per-boot current-sensor bias
    "current_bandwidth_hz": math.inf,  # (sim) [Hz] current loop
    "encoder_counts_per_rev": 0.0,  # (sim) motor encoder counts per revolution (0: not quantised)
}


def paper_gain(is_linear: np.ndarray, screw_lead_m: np.ndarray, screw_efficiency: np.ndarray) -> np.ndarray:
    """Eq. (47): the motor torque → axial force gain ``2 pi eta / L`` [N/(N·m)] per actuator, evaluated
    as ``(2 pi / L) eta``; 1 for revolute actuators (``is_linear`` False), whose effort is already
    the joint torque. Inputs broadcast to one entry per actuator."""
    lin = np.asarray(is_linear, dtype=bool)
    k = np.where(lin, 2.0 * math.pi / np.where(lin, screw_lead_m, 1.0), 1.0)
    return np.where(lin, k * np.asarray(screw_efficiency, dtype=float), 1.0)


def reflected_inertia(rotor_inertia_kgm2: np.ndarray | float, screw_lead_m: np.ndarray | float) -> np.ndarray:
    """A rotor inertia [kg·m²] reflected through the screw, ``m_r = J_r (2 pi / L)^2`` [kg]."""
    k = 2.0 * math.pi / np.asarray(screw_lead_m, dtype=float)
    return rotor_inertia_kgm2 * k * k


#: Columns of :attr:`BallScrewActuators.params` (one row per actuator), read by the compiled model.
_LIN, _K, _ETA_M, _DELTA, _PAPER, _FC, _B, _VS, _MR = range(9)


@compiled
def screw_force(p, tau, v, a, switch, friction):
    """:meth:`BallScrewActuators.force_from_torque` of one actuator (``p``: its row of
    :attr:`BallScrewActuators.params`; ``a``: acceleration, 0 for no inertia term)."""
    if p[_LIN] == 0.0:
        return tau
    s = np.tanh(v / p[_VS])
    y = p[_K] * tau
    f = p[_ETA_M] * y - p[_DELTA] * abs(y) * s if switch else p[_PAPER] * tau
    if friction:
        f -= p[_FC] * s + p[_B] * v
    return f - p[_MR] * a


@compiled
def screw_torque(p, force, v, a, switch, friction):
    """:meth:`BallScrewActuators.torque_from_force` of one actuator (exact inverse of
    :func:`screw_force`)."""
    if p[_LIN] == 0.0:
        return force
    s = np.tanh(v / p[_VS])
    S = force + (p[_FC] * s + p[_B] * v if friction else 0.0) + p[_MR] * a
    if not switch:
        return S / p[_PAPER]
    sign = 1.0 if S > 0.0 else (-1.0 if S < 0.0 else 0.0)
    return S / (p[_ETA_M] - p[_DELTA] * s * sign) / p[_K]


@compiled
def screw_split(p, motor_torque_nm):
    """A motor torque as a simulator applies it to a ball screw: the force before the losses
    ``eta_m y`` and the dry losses ``F_c + Delta |y|`` (the driving/back-driving switch is a
    load-dependent Coulomb friction); a revolute actuator's torque passes, without dry losses."""
    if p[_LIN] == 0.0:
        return motor_torque_nm, 0.0
    y = p[_K] * motor_torque_nm
    return p[_ETA_M] * y, p[_FC] + p[_DELTA] * abs(y)


@compiled
def _screw_map(params, x, v, a, switch, friction, inverse, out):
    """``out = screw_force`` (or ``screw_torque`` with ``inverse``) over flat arrays whose index
    runs over the actuators fastest (``i % n_actuators``)."""
    n = params.shape[0]
    for i in range(out.shape[0]):
        p = params[i % n]
        if inverse:
            out[i] = screw_torque(p, x[i], v[i], a[i], switch, friction)
        else:
            out[i] = screw_force(p, x[i], v[i], a[i], switch, friction)


@dataclass
class BallScrewActuators:
    """Per-actuator ball-screw parameters (arrays of one entry per actuator) and the model above.

    Attributes:
        names: actuator names (order of every array).
        is_linear: True for ball-screw (prismatic) actuators.
        screw_lead_m: lead ``L`` [m].
        efficiency: ``eta`` when driving [-].
        back_drive_efficiency: ``eta'`` when back-driven [-] (``<= eta``; NaN: no switch, ``F = eta y``
            both ways as in eq. (47)).
        rotor_inertia_kgm2: ``J_r`` [kg·m²].
        coulomb_friction_n: ``F_c`` [N].
        viscous_friction_n_s_per_m: ``b`` [N·s/m].
        stiction_velocity_m_s: ``v_s`` [m/s], width of the smooth stiction zone.
        max_force_n: largest axial force when driving [N] (the motor torque limit is
            ``max_force_n L / (2 pi eta)``).
        extra: the simulated-hardware entries (``torque_constant_error`` ...), arrays.
    """

    names: list[str]
    is_linear: np.ndarray
    screw_lead_m: np.ndarray
    efficiency: np.ndarray
    back_drive_efficiency: np.ndarray
    rotor_inertia_kgm2: np.ndarray
    coulomb_friction_n: np.ndarray
    viscous_friction_n_s_per_m: np.ndarray
    stiction_velocity_m_s: np.ndarray
    max_force_n: np.ndarray
    extra: dict[str, np.ndarray] | None = None

    def __post_init__(self) -> None:
        n = len(self.names)
        for key in ("is_linear", "screw_lead_m", "efficiency", "back_drive_efficiency", "rotor_inertia_kgm2",
                    "coulomb_friction_n", "viscous_friction_n_s_per_m", "stiction_velocity_m_s", "max_force_n"):
            arr = np.asarray(getattr(self, key), dtype=bool if key == "is_linear" else float)
            arr = np.broadcast_to(arr, (n,)).copy()
            setattr(self, key, arr)
        lin = self.is_linear
        eta, eta_b = self.efficiency, self.back_drive_efficiency
        bad = (~(self.screw_lead_m > 0) | ~((eta > 0) & (eta <= 1))
               | ~(np.isnan(eta_b) | ((eta_b > 0) & (eta_b <= eta))) | ~(self.rotor_inertia_kgm2 >= 0)
               | ~(self.coulomb_friction_n >= 0)
               | ~(self.viscous_friction_n_s_per_m >= 0) | ~(self.stiction_velocity_m_s > 0) | ~(self.max_force_n > 0))
        if np.any(bad & lin):
            names = [m for m, b in zip(self.names, bad & lin) if b]
            raise InputError(f"BallScrewActuators: invalid parameters for {names}"
                             " (need L > 0, 0 < eta' <= eta <= 1, J_r, F_c, b >= 0, v_s > 0, max force > 0)")
        self.extra = {k: np.broadcast_to(np.asarray(v, dtype=float), (n,)).copy()
                      for k, v in (self.extra or {}).items()}
        k = np.where(lin, 2.0 * math.pi / np.where(lin, self.screw_lead_m, 1.0), 1.0)
        #: ``2 pi / L`` [1/m] (1 for revolute actuators): motor torque → force before losses
        self.torque_to_force = k
        #: mean efficiency ``eta_m`` and half the switch ``Delta`` (module docstring)
        switch = lin & ~np.isnan(eta_b)
        eta_b = np.where(switch, eta_b, 1.0)
        self.mean_efficiency = np.where(switch, 0.5 * (eta + 1.0 / eta_b), np.where(lin, eta, 1.0))
        self.efficiency_switch = np.where(switch, 0.5 * (1.0 / eta_b - eta), 0.0)
        #: ``m_r = J_r (2 pi / L)^2`` [kg]
        self.reflected_inertia_kg = np.where(lin, reflected_inertia(self.rotor_inertia_kgm2,
                                                                    np.where(lin, self.screw_lead_m, 1.0)),
                                             self.rotor_inertia_kgm2)
        #: motor torque limit [N·m]: the driving force limit through the ideal screw
        self.max_motor_torque_nm = np.where(lin, self.max_force_n / (k * np.where(lin, eta, 1.0)), self.max_force_n)
        #: eq. (47)'s gain ``2 pi eta / L`` [N/(N·m)] (1 for revolute actuators), :func:`paper_gain`
        self.paper_gain = paper_gain(lin, self.screw_lead_m, eta)
        #: the per-actuator parameters of the compiled model, one row each (columns ``_LIN`` ...)
        self.params = np.ascontiguousarray(np.column_stack([
            lin.astype(float), k, self.mean_efficiency, self.efficiency_switch, self.paper_gain,
            self.coulomb_friction_n, self.viscous_friction_n_s_per_m, self.stiction_velocity_m_s,
            self.reflected_inertia_kg]))
        self._no_acceleration = np.zeros(len(self.names))  # read-only zeros: "no inertia term"

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_entries(cls, names: Sequence[str], is_linear: Sequence[bool] | np.ndarray,
                     entries: Mapping[str, Mapping[str, float]], *, default_screw_lead_m: float,
                     default_screw_efficiency: float, source: str = "actuators") -> BallScrewActuators:
        """From per-actuator mappings (a closure file's ``actuators`` section): keys of
        :data:`ENTRY_DEFAULTS`; a missing key takes its default (an ideal screw)."""
        names = list(names)
        cols = {k: np.full(len(names), v) for k, v in ENTRY_DEFAULTS.items()}
        for name, entry in entries.items():
            if name not in names:
                raise ConfigError(f"{source}: unknown actuator {name!r}")
            i = names.index(name)
            for k in ENTRY_DEFAULTS:
                if entry.get(k) is not None:
                    try:
                        cols[k][i] = float(entry[k])
                    except (TypeError, ValueError):
                        raise ConfigError(f"{source}: {name}.{k}: not a number: {entry[k]!r}") from None
        lead = np.where(np.isnan(cols["screw_lead_m"]), default_screw_lead_m, cols["screw_lead_m"])
        eta = np.where(np.isnan(cols["screw_efficiency"]), default_screw_efficiency, cols["screw_efficiency"])
        eta_b = cols["back_drive_efficiency"]
        extra = {k: cols[k] for k in ("torque_constant_error", "current_noise_std_nm", "current_bias_std_nm",
                                      "current_bandwidth_hz", "encoder_counts_per_rev")}
        try:
            return cls(names, np.asarray(is_linear, bool), lead, eta, eta_b, cols["rotor_inertia_kgm2"],
                       cols["coulomb_friction_n"], cols["viscous_friction_n_s_per_m"], cols["stiction_velocity_m_s"],
                       cols["max_force_n"], extra)
        except InputError as exc:
            raise ConfigError(f"{source}: {exc}") from None

    @classmethod
    def from_model(cls, clm, *, default_screw_lead_m: float, default_screw_efficiency: float,
                   overrides: Mapping[str, Mapping[str, float]] | None = None) -> BallScrewActuators:
        """From a :class:`~kangaroo_wbc.model.ClosedLoopModel`'s closure file (``actuators``
        entries), ``overrides`` (actuator name → entries) on top; prismatic actuated joints are
        ball screws."""
        m = clm.model
        names = list(clm.actuated_joint_names)
        prismatic = ("JointModelPX", "JointModelPY", "JointModelPZ", "JointModelPrismaticUnaligned")
        linear = [m.joints[m.getJointId(n)].shortname() in prismatic for n in names]
        entries: dict[str, dict] = {}
        cf = clm.closure_file
        for table, where in ((cf.actuators or {}, cf.source), (overrides or {}, "overrides")):
            for name, entry in table.items():
                if name not in names:
                    raise ConfigError(f"{where}: actuators: unknown actuator {name!r}." + suggest(name, names))
                if not isinstance(entry, Mapping):
                    raise ConfigError(f"{where}: actuators.{name}: expected a mapping, got {entry!r}")
                entries.setdefault(name, {}).update(entry)
        return cls.from_entries(names, linear, entries, default_screw_lead_m=default_screw_lead_m,
                                default_screw_efficiency=default_screw_efficiency,
                                source=f"{clm.closure_file.source}: actuators")

    # ------------------------------------------------------------------ the model
    def paper_force(self, motor_torque_nm: np.ndarray) -> np.ndarray:
        """Eq. (47): ``tau_bar = tau_m 2 pi eta / L`` [N] (torques of revolute actuators pass)."""
        return self.paper_gain * motor_torque_nm

    def friction_force(self, velocity_m_s: np.ndarray, motor_torque_nm: np.ndarray | None = None) -> np.ndarray:
        """Losses as a force opposing the motion [N]: ``(Delta |y| + F_c) s + b x_dot``; the
        ``Delta |y|`` term (the driving/back-driving switch) only with the motor torque given."""
        v = np.asarray(velocity_m_s, dtype=float)
        mu = self.coulomb_friction_n
        if motor_torque_nm is not None:
            mu = mu + self.efficiency_switch * np.abs(self.torque_to_force * motor_torque_nm)
        s = np.tanh(v / self.stiction_velocity_m_s)
        return np.where(self.is_linear, mu * s + self.viscous_friction_n_s_per_m * v, 0.0)

    def _map(self, x, v, a, switch: bool, friction: bool, inverse: bool) -> np.ndarray:
        """The compiled model over inputs that broadcast to ``(..., n_actuators)`` (``a`` None: no
        inertia term, the kernel reads zeros)."""
        n = self.params.shape[0]
        x = np.asarray(x, dtype=float)
        v = np.asarray(v, dtype=float)
        a = self._no_acceleration if a is None else np.asarray(a, dtype=float)
        if x.shape == v.shape == a.shape == (n,):  # the per-tick case
            out = np.empty(n)
            _screw_map(self.params, x, v, a, switch, friction, inverse, out)
            return out
        shape = np.broadcast_shapes(x.shape, v.shape, a.shape, (n,))
        flat = [np.ascontiguousarray(np.broadcast_to(z, shape)).reshape(-1) for z in (x, v, a)]
        out = np.empty(flat[0].shape[0])
        _screw_map(self.params, flat[0], flat[1], flat[2], switch, friction, inverse, out)
        return out.reshape(shape)

    def force_from_torque(self, motor_torque_nm: np.ndarray, velocity_m_s: np.ndarray,
                          acceleration_m_s2: np.ndarray | None = None, *, switch: bool = True,
                          friction: bool = True) -> np.ndarray:
        """Axial force on the linkage [N] from the motor torque [N·m] (module docstring; compiled,
        :func:`screw_force` per actuator). Inputs broadcast to ``(..., n_actuators)``.

        Args:
            motor_torque_nm: electromagnetic motor torque ``tau_m``.
            velocity_m_s: actuator velocity ``x_dot``.
            acceleration_m_s2: actuator acceleration ``x_ddot`` (None: no inertia term).
            switch: the driving/back-driving efficiency (False: ``eta`` throughout, eq. (47)).
            friction: Coulomb and viscous friction.
        """
        return self._map(motor_torque_nm, velocity_m_s, acceleration_m_s2, switch, friction, False)

    def torque_from_force(self, force_n: np.ndarray, velocity_m_s: np.ndarray,
                          acceleration_m_s2: np.ndarray | None = None, *, switch: bool = True,
                          friction: bool = True) -> np.ndarray:
        """Exact inverse of :meth:`force_from_torque`: the motor torque [N·m] that puts ``force_n``
        [N] on the linkage at this velocity (and acceleration). With ``S`` the force the screw must
        deliver, ``y = S / (eta_m - Delta s sign(S))`` (``sign(y) = sign(S)``, both denominators
        positive since ``eta_m - Delta = eta``). Compiled: :func:`screw_torque` per actuator."""
        return self._map(force_n, velocity_m_s, acceleration_m_s2, switch, friction, True)

    def encoder_step(self) -> np.ndarray:
        """Position quantum of the motor encoder [m] (or [rad]); 0 where not quantised."""
        counts = (self.extra or {}).get("encoder_counts_per_rev", np.zeros(len(self.names)))
        per_rev = np.where(self.is_linear, self.screw_lead_m, 2.0 * math.pi)
        return np.where(counts > 0, per_rev / np.where(counts > 0, counts, 1.0), 0.0)


__all__ = ["BallScrewActuators", "ENTRY_DEFAULTS", "paper_gain", "reflected_inertia"]
