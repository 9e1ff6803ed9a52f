"""Exception hierarchy of kangaroo_wbc.

Library code raises these (never bare solver or parser exceptions); nodes catch them and choose
the safe fallback (hold / damp / zero force).
"""

from __future__ import annotations

from typing import Any


class KangarooWbcError(Exception):
    """Base class of every error raised by kangaroo_wbc."""


class ConfigError(KangarooWbcError):
    """Malformed configuration or model file; the message names the file and the key."""


class ModelError(KangarooWbcError):
    """Inconsistent robot model or closure specification."""


class FrameNotFound(ModelError):
    """A frame name that the model does not contain; the message lists the valid names."""


class JointNotFound(ModelError):
    """A joint name that the model does not contain; the message lists the valid names."""


class ClosureFkError(KangarooWbcError):
    """Closure forward kinematics did not converge (singular or unreachable actuator input)."""


class CalibrationError(KangarooWbcError):
    """Encoder calibration failed (no convergence, robot moving, encoders missing)."""


class EstimationError(KangarooWbcError):
    """An estimator received unusable input (non-finite, wrong size, stale)."""


class InputError(KangarooWbcError):
    """Bad input to a library call: non-finite values, wrong sizes, unknown names."""


class NoSolutionFound(KangarooWbcError):
    """A QP had no usable solution.

    Attributes:
        problem: the problem object that was solved.
        result: the solver result (status, iterations, residuals) or None.
    """

    def __init__(self, message: str, problem: Any = None, result: Any = None) -> None:
        super().__init__(message)
        self.problem = problem
        self.result = result


def suggest(name: str, valid: list[str], limit: int = 40) -> str:
    """Format the list of valid names for an error message (closest first)."""
    import difflib

    close = difflib.get_close_matches(name, valid, n=5, cutoff=0.5)
    shown = sorted(valid)[:limit]
    more = "" if len(valid) <= limit else f" ... ({len(valid) - limit} more)"
    hint = f" Did you mean {close}?" if close else ""
    return f"{hint} Valid names: {shown}{more}"
