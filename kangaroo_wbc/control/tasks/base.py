"""Base class of the acceleration-level tasks of the whole-body QP.

A task asks ``J nu_dot = r`` with ``J`` (m, n_nu) a projected task Jacobian (``J_t T``, eq. (65))
and ``r = a_des - drift`` the desired task acceleration minus the task acceleration at
``nu_dot = 0`` (``Jdot_t v + J_t k``). Its cost on the decision vector ``x`` (see
:mod:`kangaroo_wbc.control.contacts`) is the weighted least-squares residual

.. math::

    \\tfrac12 \\| J \\dot\\nu - r \\|^2_{W} = \\tfrac12 x^T H x + c^T x + \\text{const}, \\qquad
    H_{\\nu\\nu} = J^T W J, \\quad c_\\nu = -J^T W r

with ``W = diag(weight)``; the force block of ``H`` and ``c`` is zero.

Each task writes its rows with one compiled kernel (:meth:`Task.fill`), called by the controller
for every enabled task into its stacked buffers ``rows = (J, r, w)`` and by
:meth:`Task.jacobian_and_target` into fresh ones. The kernels take their inputs grouped: the
projected model's terms (:func:`frame_terms` for a frame task), the task's references as a tuple,
its gains ``(kp, kd, weight)`` and the output rows.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.compiled import all_finite
from kangaroo_wbc.model.projected_model import ProjectedModel

_EMPTY = np.zeros(0)


class _Checked:
    """A task attribute stored as the array its :meth:`_check` returns for what is assigned.

    The checked value goes into the instance's ``__dict__`` under the attribute's own name and the
    descriptor has no ``__get__``: reading it is a plain attribute read (the controller reads a few
    dozen per tick), assigning it always goes through the check."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.name] = self._check(obj, value)

    def _check(self, obj, value) -> np.ndarray:
        raise NotImplementedError


class Reference(_Checked):
    """A task reference attribute: always a finite float array of its shape (a copy of what is
    assigned), else :class:`InputError` naming the task and the attribute. ``shape``: a tuple, or
    the name of an ``int`` attribute of the task (a vector of that size)."""

    def __init__(self, shape: tuple[int, ...] | str) -> None:
        self.shape = shape

    def _check(self, obj, value) -> np.ndarray:
        shape = (getattr(obj, self.shape),) if isinstance(self.shape, str) else self.shape
        if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == shape:
            arr = value.copy()  # the per-tick case: cheap checks only
        else:
            try:
                arr = np.array(value, dtype=float)
            except (TypeError, ValueError) as exc:
                raise InputError(f"{obj.name}: {self.name} is not numeric: {value!r}") from exc
        if arr.shape != shape or not all_finite(arr.reshape(-1), _EMPTY):
            raise InputError(f"{obj.name}: {self.name} must be finite with shape {shape}, got {arr.shape}")
        return arr


class Gain(_Checked):
    """A task weight or gain attribute: always a finite, non-negative float array of the task's
    dimension (a scalar is broadcast), checked as at construction whatever is assigned later: the
    compiled task fills read them as such."""

    def _check(self, obj, value) -> np.ndarray:
        g = np.broadcast_to(np.asarray(value, dtype=float), (obj.dim,)).copy()
        if not np.all(np.isfinite(g)) or np.any(g < 0):
            raise InputError(f"{obj.name}: {self.name} must be finite and non-negative, got {value}")
        return g


def frame_terms(pm: ProjectedModel) -> tuple[np.ndarray, ...]:
    """The projected model's frame arrays as one kernel argument: ``(rotations, positions,
    jacobians_T, drifts, twists)`` (:attr:`ProjectedModel.frame_rotations` ...); a frame's rows are
    :meth:`Task.frame_rows`."""
    return pm.frame_rotations, pm.frame_positions, pm.frame_jacobians_T, pm.frame_drifts, pm.frame_twists


class Task(ABC):
    """An acceleration-level task ``J nu_dot = r`` with a weight (scalar or per row).

    Args:
        name: task name (for references, logs and timing).
        weight: weight of the squared residual (scalar or per row) [1/(task unit)²].
        kp: proportional gain [1/s²]; kd: derivative gain [1/s].
    """

    dim: int = 0
    frame: str = ""
    weight = Gain()
    kp = Gain()
    kd = Gain()

    def __init__(self, name: str, weight: float | np.ndarray = 1.0, kp: float | np.ndarray = 0.0,
                 kd: float | np.ndarray = 0.0) -> None:
        self.name = name
        self.enabled = True
        self.weight = weight
        self.kp = kp
        self.kd = kd
        self._frame_rows: tuple = (None, "", 0, 0)  # (projected model, frame, Jacobian row, rotation row)

    def gains(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(kp, kd, weight)``, one argument of the task's kernel."""
        return self.kp, self.kd, self.weight

    def frame_rows(self, pm: ProjectedModel) -> tuple[int, int]:
        """``(u, s)``: the row of :attr:`frame` in ``pm``'s frame Jacobians, drifts and twists, and in
        its rotations and positions (looked up once per model and frame)."""
        cache = self._frame_rows
        if cache[0] is not pm or cache[1] != self.frame:
            u = pm.frame_index(self.frame)
            cache = self._frame_rows = (pm, self.frame, u, 2 * pm.n_closures + u)
        return cache[2], cache[3]

    @abstractmethod
    def fill(self, pm: ProjectedModel, rows: tuple[np.ndarray, np.ndarray, np.ndarray], k: int) -> int:
        """Write the task's rows from row ``k`` of ``rows = (J, r, w)`` (``J``: (m, n_nu)): the projected
        task Jacobian, ``r = a_des - drift`` and the weights; returns ``k + dim``. The caller makes
        room for ``dim`` rows (the kernel does not check)."""

    def jacobian_and_target(self, pm: ProjectedModel) -> tuple[np.ndarray, np.ndarray]:
        """``(J, r)``: projected task Jacobian (dim, n_nu) and ``r = a_des - drift`` (dim,)."""
        J, r, w = np.empty((self.dim, pm.n_nu)), np.empty(self.dim), np.empty(self.dim)
        self.fill(pm, (J, r, w), 0)
        return J, r


__all__ = ["Gain", "Reference", "Task", "frame_terms"]
