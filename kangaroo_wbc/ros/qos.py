"""Named QoS profiles of the kangaroo_wbc topic contract (see ``docs/interface.md``).

Choice for the 1 kHz streams (``actuators/state``, ``passive_encoders/state``, ``imu/data``,
``joint_states``, ``estimation/base_odometry``): **reliable, keep-last, depth 10, volatile**.

- Reliable publishers match both reliable and best-effort subscribers (the reverse pairing is
  incompatible), so RViz, ``ros2 topic echo`` and ros2_control tools all connect with their
  defaults. ``rclpy.qos.qos_profile_sensor_data`` (best effort) would silently not match them.
- On one host (shared memory or loopback) reliable delivery at 1 kHz costs no measurable latency,
  and an estimator that integrates velocities should not lose samples without noticing.
- Depth 10 (10 ms at 1 kHz) bounds both memory and the worst-case age of a queued sample; a
  subscriber that falls further behind drops the oldest samples rather than lagging.

Subscribers that prefer the newest sample over completeness may use :data:`SENSOR_BEST_EFFORT`
(it matches the reliable publishers). Commands use depth 1: a stale command is worse than none.
Calibration results and the robot description are *latched* (transient local, depth 1) so a node
started later still receives the last value.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from kangaroo_wbc.errors import ConfigError, suggest


def _profile(depth: int, best_effort: bool = False, latched: bool = False) -> QoSProfile:
    """Keep-last ``depth``; reliable unless ``best_effort``; volatile unless ``latched`` (transient local)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth,
                      reliability=ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


#: 1 kHz sensor/state streams, publishers and default subscribers.
SENSOR_STATE = _profile(10)
#: Subscriber-side option for the same streams: newest sample wins, never blocks the writer.
SENSOR_BEST_EFFORT = _profile(10, best_effort=True)
#: Subscriber side of the 1 kHz streams in the pipeline nodes: the newest sample only, never a
#: backlog (a tick that overran skips to the latest state instead of working through old ones).
SENSOR_LATEST = _profile(1, best_effort=True)
#: ``actuators/command``: only the newest command matters.
COMMAND = _profile(1)
#: Latched results (``estimation/calibration``, ``robot_description``, ``wbc/ready``, ``actuators/modes``):
#: late joiners get the last one (a wrench estimator restarted after a fault learns the modes in effect).
LATCHED = _profile(1, latched=True)
#: Low-rate outputs for people and tools (markers, contact wrenches for RViz, timing, ZMP).
VISUALIZATION = _profile(10)
#: ``/diagnostics`` (same as diagnostic_updater's default).
DIAGNOSTICS = _profile(10)
#: ``/tf`` (same as tf2_ros.TransformBroadcaster's default).
TF = _profile(100)

PROFILES: dict[str, QoSProfile] = {
    "sensor_state": SENSOR_STATE,
    "sensor_best_effort": SENSOR_BEST_EFFORT,
    "sensor_latest": SENSOR_LATEST,
    "command": COMMAND,
    "latched": LATCHED,
    "visualization": VISUALIZATION,
    "diagnostics": DIAGNOSTICS,
    "tf": TF,
}


def qos_profile(name: str) -> QoSProfile:
    """Return the named profile (for a string parameter such as ``state_qos: sensor_best_effort``).

    Raises:
        ConfigError: unknown name; the message lists the valid ones.
    """
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigError(f"unknown QoS profile {name!r}." + suggest(name, list(PROFILES))) from None
