"""Causal low-pass filters for per-sample (1 kHz) estimation.

The Kangaroo paper filters the estimated contact wrenches with a second-order Butterworth low-pass
at 5 Hz (Section VI-B). :class:`ButterworthFilter` designs the filter with
``scipy.signal.butter(..., output="sos")`` (bilinear transform, cutoff pre-warped, so the -3 dB
point is exactly ``cutoff_hz``) and runs it sample by sample, vectorised over channels, as a
cascade of biquads in transposed direct form II:

.. math::

    y_k = b_0 x_k + z_{1,k}, \\qquad
    z_{1,k+1} = b_1 x_k - a_1 y_k + z_{2,k}, \\qquad
    z_{2,k+1} = b_2 x_k - a_2 y_k

(``a_0 = 1``). This is the recursion of ``scipy.signal.sosfilt``; a compiled loop
(:func:`sos_step`) avoids its per-call overhead for one sample. :meth:`ButterworthFilter.reset`
sets the state to the steady state of a constant input (``sosfilt_zi``), so the output starts at
the first sample without a transient.
"""

from __future__ import annotations

import numpy as np
import scipy.signal

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.model.compiled import compiled


@compiled
def sos_step(coef, z, x, y):
    """One sample of the biquad cascade (transposed direct form II, module docstring): ``coef``
    (n_sections, 5) rows ``(b0, b1, b2, a1, a2)``, state ``z`` (n_sections, 2, n_channels) updated in
    place, input ``x`` and output ``y`` (n_channels)."""
    n = x.shape[0]
    u = x.copy()
    for k in range(coef.shape[0]):
        b0, b1, b2, a1, a2 = coef[k, 0], coef[k, 1], coef[k, 2], coef[k, 3], coef[k, 4]
        for i in range(n):
            yi = u[i] * b0 + z[k, 0, i]
            z[k, 0, i] = u[i] * b1 - yi * a1 + z[k, 1, i]
            z[k, 1, i] = u[i] * b2 - yi * a2
            y[i] = yi
            u[i] = yi  # input of the next section


class ButterworthFilter:
    """Causal Butterworth low-pass, stateful, one sample (a vector of channels) at a time.

    Args:
        cutoff_hz: -3 dB frequency [Hz] (paper: 5 Hz); must be below ``sample_rate_hz / 2``.
        sample_rate_hz: sampling rate [Hz] (1 kHz on Kangaroo).
        n_channels: number of independent channels filtered in parallel.
        order: filter order (paper: 2).
    """

    def __init__(self, cutoff_hz: float = 5.0, sample_rate_hz: float = 1000.0, n_channels: int = 1,
                 order: int = 2) -> None:
        if not (sample_rate_hz > 0 and 0 < cutoff_hz < 0.5 * sample_rate_hz):
            raise InputError(f"ButterworthFilter: need 0 < cutoff_hz ({cutoff_hz}) < sample_rate_hz / 2 "
                             f"({sample_rate_hz} / 2)")
        if order < 1 or n_channels < 1:
            raise InputError(f"ButterworthFilter: order ({order}) and n_channels ({n_channels}) must be >= 1")
        self.n_channels = int(n_channels)
        self.sos = scipy.signal.butter(order, cutoff_hz, btype="low", fs=sample_rate_hz, output="sos")
        self._zi_unit = scipy.signal.sosfilt_zi(self.sos)  # (n_sections, 2) for a unit step
        self._coef = np.ascontiguousarray([[s[0], s[1], s[2], s[4], s[5]] for s in self.sos], dtype=float)
        self._z = np.zeros((len(self.sos), 2, self.n_channels))
        self._y = np.zeros(self.n_channels)
        sos_step(self._coef, self._z.copy(), self._y.copy(), self._y.copy())  # compile (or load) now
        self.initialized = False

    def reset(self, x0: np.ndarray | float | None = None) -> None:
        """Steady state at the constant input ``x0`` (zero state when None)."""
        if x0 is None:
            self._z[:] = 0.0
            self.initialized = False
            return
        x0 = np.broadcast_to(np.asarray(x0, dtype=float), (self.n_channels,))
        self._z[:] = self._zi_unit[:, :, None] * x0[None, None, :]
        self._y[:] = x0
        self.initialized = True

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Filter one sample (shape ``(n_channels,)``); returns an internal buffer (copy to keep).

        The first sample after construction or ``reset(None)`` initialises the state to its
        steady state (output = input).
        """
        x = np.ascontiguousarray(x, dtype=float)
        if x.shape != (self.n_channels,):
            raise InputError(f"ButterworthFilter: sample has shape {x.shape}, expected ({self.n_channels},)")
        if not self.initialized:
            self.reset(x)
            return self._y
        sos_step(self._coef, self._z, x, self._y)
        return self._y


__all__ = ["ButterworthFilter", "sos_step"]
