"""``joint_states`` paired with the ``estimation/base_odometry`` of its time: the full state ``(q, v)``
a node downstream of the state estimator runs on.

The estimator publishes both for every sample; they arrive on two topics, in either order. After a
stall the executor may hand over the newest ``joint_states`` before the odometry of the same time:
that must not read as "no base state". So a ``joint_states`` newer than the odometry (by more than
``max_lag_s``) waits for its odometry, for at most ``max_lag_s`` of joint-states time, and runs on the
pair when it comes; one older than the odometry is skipped (a newer one is on its way), at most
``MAX_JOINT_STATES_BEHIND`` in a row. Otherwise the state goes out with the ``joint_states`` stamp, or
NaN when no odometry of its time exists (no consistent state: the receiver's safe mode).

A receiver that checks the state's age itself (the contact-wrench estimator, against its torque
samples: ``wait=False``) gets every ``joint_states`` at once, stamped with the older of it and its
base's odometry, and the state again when the odometry of that ``joint_states`` comes after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kangaroo_wbc.errors import InputError
from kangaroo_wbc.ros.conversions import JointIndexMap, odometry_msg_to_arrays
from kangaroo_wbc.ros.node_support import joint_indices

#: the topics paired
JOINT_STATES, ODOMETRY = "joint_states", "estimation/base_odometry"
#: joint_states older than the odometry skipped in a row before the state goes out without a base.
MAX_JOINT_STATES_BEHIND = 20


class StatePairing:
    """Pairs ``joint_states`` with the odometry of its time (module docstring).

    Args:
        clm: the node's model (``clm.joint_names``, floating base).
        on_state: ``(q, v, stamp_s, header_stamp, source) -> None`` for every state (``stamp_s`` NaN:
            no consistent state; ``source``: the topic that stamp comes from).
        warn: ``(key, text) -> None``, a throttled warning.
        max_lag_s: the largest stamp difference of a pair [s] (settable).
        required: the joint_states fields that must be there.
        wait: False: the state of every sample at once (module docstring).
        reject: ``(topic, error) -> None`` for a message refused (malformed or out of order), instead
            of ``warn``.
        in_order: ``(topic, stamp_s) -> bool``: False skips the message (an older stamp).
    """

    def __init__(self, clm: Any, on_state: Callable[..., Any], warn: Callable[[str, str], object], max_lag_s: float,
                 required: Sequence[str] = ("position", "velocity"), *, wait: bool = True,
                 reject: Callable[[str, Exception], None] | None = None,
                 in_order: Callable[[str, float], bool] | None = None) -> None:
        self._on_state, self._warn, self.max_lag_s, self._required = on_state, warn, max_lag_s, tuple(required)
        self._wait, self._reject, self._in_order = wait, reject, in_order or (lambda topic, stamp_s: True)
        self._floating = bool(clm.floating_base)
        self._idx_q, self._idx_v = joint_indices(clm.model, clm.joint_names)
        self._joints = JointIndexMap(clm.joint_names, allow_extra=True)
        #: the state being assembled (model order; the base from the odometry)
        self.q, self.v = clm.q_ref.copy(), np.zeros(clm.model.nv)
        self._odom_stamp: float | None = None
        self._joint_stamp: float | None = None  # the stamp [s] of the latest joint_states passed on
        self._pending: tuple | None = None  # (stamp [s], header stamp) of joint_states waiting for its odometry
        self._waiting_since: float | None = None  # joint_states stamp [s] since the odometry lags
        self._behind = 0  # consecutive joint_states skipped for being older than the odometry

    def on_odometry(self, msg: Any) -> None:
        """``estimation/base_odometry`` (pose in ``odom``, twist in ``base_link``)."""
        try:
            odom = odometry_msg_to_arrays(msg)
        except InputError as exc:
            if self._reject is not None:
                return self._reject(ODOMETRY, exc)
            self._warn("odometry", f"{ODOMETRY} skipped: {exc}")
            return
        if not self._in_order(ODOMETRY, odom.stamp_s):
            return
        if self._floating:
            self.q[:3], self.q[3:7] = odom.position, odom.quaternion_xyzw  # a unit quaternion
            self.v[:3], self.v[3:6] = odom.linear, odom.angular  # twist in base_link = free-flyer convention
        self._odom_stamp = odom.stamp_s
        if not self._wait:
            if odom.stamp_s == self._joint_stamp:  # the base of the joint sample already passed on
                self._on_state(self.q, self.v, odom.stamp_s, None, JOINT_STATES)
            return
        pending, self._pending = self._pending, None
        if pending is not None and abs(pending[0] - odom.stamp_s) <= self.max_lag_s:
            self._waiting_since = None
            self._on_state(self.q, self.v, pending[0], pending[1], JOINT_STATES)  # the pair is complete now

    def on_joints(self, msg: Any) -> None:
        """``joint_states`` (all joints by name; extra names ignored)."""
        try:
            arr = self._joints.from_joint_state(msg, required=self._required)
        except InputError as exc:
            if self._reject is not None:
                return self._reject(JOINT_STATES, exc)
            self._warn("joint_states", f"joint_states rejected: {exc}")
            return self._on_state(self.q, self.v, float("nan"), msg.header.stamp, JOINT_STATES)
        if not self._in_order(JOINT_STATES, arr.stamp_s):
            return
        self.q[self._idx_q] = arr.position
        self.v[self._idx_v] = 0.0 if arr.velocity is None else arr.velocity
        self._pending = None
        lag, odom = self.max_lag_s, self._odom_stamp
        if not self._wait:
            self._joint_stamp = arr.stamp_s
            base = -float("inf") if odom is None else odom
            if self._floating and base < arr.stamp_s - lag:  # the state is as old as its base
                return self._on_state(self.q, self.v, base, msg.header.stamp, ODOMETRY)
            return self._on_state(self.q, self.v, arr.stamp_s, msg.header.stamp, JOINT_STATES)
        if odom is not None and odom < arr.stamp_s - lag:  # its odometry may be on its way: wait for it
            if self._waiting_since is None:
                self._waiting_since = arr.stamp_s
            if arr.stamp_s - self._waiting_since <= lag:
                self._pending = (arr.stamp_s, msg.header.stamp)
                return
        else:
            self._waiting_since = None
        if odom is not None and arr.stamp_s < odom - lag and self._behind < MAX_JOINT_STATES_BEHIND:
            self._behind += 1  # older than the odometry: a newer one is on its way
            return
        self._behind = 0
        consistent = odom is not None and abs(arr.stamp_s - odom) <= lag
        self._on_state(self.q, self.v, arr.stamp_s if consistent else float("nan"), msg.header.stamp, JOINT_STATES)


__all__ = ["StatePairing", "MAX_JOINT_STATES_BEHIND", "JOINT_STATES", "ODOMETRY"]
