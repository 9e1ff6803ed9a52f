"""One actuator sample through the node components after its state estimate: the order every
deployment runs them in.

The composed node (:mod:`kangaroo_wbc.nodes.composed_node`) and the one-process loop
(:mod:`kangaroo_wbc.pipeline.closed_loop`) both call :func:`after_estimate`; separate processes
run the same order over DDS (each node on the messages of the one before). For one sample with
its estimate ``est``:

1. the controller updates its model at ``(q, v)`` (:meth:`WholeBodyControl.prepare`) when the
   estimate has a base;
2. the contact-wrench estimator takes the state and computes the sole wrenches, sharing that
   model update (the projected dynamics) instead of computing its own;
3. the normal sole forces go to the state estimator (contact detection of the floating base) and
   to the controller (measured contacts);
4. the controller computes the command.

Steps 2 and 4 are given as callables: a component's own ``step``, or a node adapter's
``process`` that also publishes the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kangaroo_wbc.components.contact_wrench import ContactWrenchEstimation
from kangaroo_wbc.components.control import WholeBodyControl
from kangaroo_wbc.components.samples import ActuatorSample
from kangaroo_wbc.components.state_estimation import StateEstimate, StateEstimation


def after_estimate(
    estimation: StateEstimation,
    wrench: ContactWrenchEstimation,
    control: WholeBodyControl,
    sample: ActuatorSample,
    est: StateEstimate,
    wrench_step: Callable[[ActuatorSample, Any], Any],
    control_step: Callable[[bool], Any],
) -> tuple[Any, Any]:
    """Steps 1-4 of the module docstring; returns ``(wrench output or None, command)``.

    Args:
        wrench_step: ``(sample, projected model or None) -> output or None`` (step 2).
        control_step: ``(prepared) -> command`` (step 4; ``prepared``: the model was updated at the
            estimate in step 1).
    """
    prepared = est.base_valid and control.prepare(est.q, est.v)
    wrench.on_state(est.q, est.v, est.stamp_s)
    out = wrench_step(sample, control.projected_model if prepared else None)
    if out is not None:
        for i, fz in enumerate(out.wrench_sole_in_sole[:, 2]):
            estimation.on_sole_force(i, float(fz), sample.stamp_s)
            control.on_sole_force(i, float(fz), sample.stamp_s)
    return out, control_step(prepared)


__all__ = ["after_estimate"]
