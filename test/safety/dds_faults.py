"""Helpers of the DDS fault-injection tests of the estimator nodes (integration-test infrastructure).

* :func:`module_harness` — a :class:`~test.integration.ros_harness.RosHarness` per test module,
  so that a node process is started once for a group of tests;
* :class:`Diagnostics` — waits for a ``/diagnostics`` status matching a name, levels and text;
* :class:`SyntheticStream` — publishes a synthetic sensor stream from a background thread at a
  fixed period with synthetic stamps ``t0 + k dt``; the test changes what its callback publishes
  while it runs;
* :func:`name_faults`, :func:`joint_state` — malformed ``sensor_msgs/JointState`` messages;
* :func:`still_odometry` — the estimator's base odometry of a robot standing still;
* :func:`estimator_params` — the ``state_estimator`` parameters of the tests' synthetic streams;
* :func:`set_parameters`, :func:`get_parameters` — a node's parameter services, called from the
  test probe as ``ros2 param set`` / ``get`` would;
* :func:`assert_commands_safe` — every ``actuators/command`` finite and within ``max_force_n``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import SetParametersResult
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter, parameter_value_to_python
from sensor_msgs.msg import JointState

from kangaroo_wbc.ros.conversions import seconds_to_time_msg
from kangaroo_wbc.ros.diagnostics import Level
from test.integration.ros_harness import RosEnvironment, RosHarness
from test.ros.messages import arrays_to_odometry_msg

START_TIMEOUT_S = 90.0  # node start-up (model loading) on a loaded machine
DIAG_TIMEOUT_S = 8.0  # a few periods of the 1 Hz /diagnostics timer, with margin for load
SERVICE_TIMEOUT_S = 20.0  # a parameter service call on a loaded machine
WARN_OR_ERROR = (int(Level.WARN), int(Level.ERROR))
ERROR = (int(Level.ERROR),)
OK = (int(Level.OK),)


@pytest.fixture(scope="module")
def module_harness(
    ros_environment: RosEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RosHarness]:
    """Harness shared by the tests of one module (integration infrastructure); leftover
    processes are stopped at the end of the module."""
    harness = RosHarness(ros_environment, tmp_path_factory.mktemp("ros_harness"))
    try:
        yield harness
    finally:
        harness.close()


def values(status: DiagnosticStatus) -> dict[str, str]:
    """Key-value pairs of a status."""
    return {kv.key: kv.value for kv in status.values}


class Diagnostics:
    """Finds, among the ``/diagnostics`` messages received after :meth:`mark`, a matching status."""

    def __init__(self, harness: RosHarness) -> None:
        self.harness = harness
        self.rec = harness.probe.recorder("/diagnostics", DiagnosticArray)
        self._start = 0

    def mark(self) -> None:
        """Only statuses received from now on count."""
        with self.rec.lock:
            self._start = len(self.rec.items)

    def statuses(self, name: str) -> list[DiagnosticStatus]:
        """Statuses named ``name`` received since :meth:`mark`."""
        with self.rec.lock:
            arrays = [arr for _, arr in self.rec.items[self._start :]]
        return [s for arr in arrays for s in arr.status if s.name == name]

    def stamps(self, node: str) -> list[float]:
        """The stamps [s] (the node's clock) of the arrays of node ``node`` received since :meth:`mark`."""
        with self.rec.lock:
            arrays = [arr for _, arr in self.rec.items[self._start :]]
        return [a.header.stamp.sec + a.header.stamp.nanosec * 1e-9 for a in arrays
                if a.status and a.status[0].name.startswith(node + ":")]

    def wait(
        self,
        name: str,
        levels: tuple[int, ...],
        *fragments: str,
        separator: str | None = None,
        value: str | None = None,
        timeout_s: float = DIAG_TIMEOUT_S,
    ) -> DiagnosticStatus:
        """The first status named ``name`` at one of ``levels`` whose message (with ``value``: the
        value of that key instead) contains every fragment (with ``separator``: all in one of its
        parts), received since :meth:`mark`; AssertionError listing what was seen otherwise."""
        found: list[DiagnosticStatus] = []

        def contains(status: DiagnosticStatus) -> bool:
            text = status.message if value is None else values(status).get(value, "")
            parts = [text] if separator is None else text.split(separator)
            return any(all(f in part for f in fragments) for part in parts)

        def match() -> bool:
            for s in self.statuses(name):
                if s.level[0] in levels and contains(s):
                    found.append(s)
                    return True
            return False

        try:
            self.harness._poll(match, timeout_s, f"no {name} status with {fragments}", True)
        except TimeoutError:
            seen = [
                (s.level[0], s.message if value is None else values(s).get(value))
                for s in self.statuses(name)
            ]
            raise AssertionError(
                f"no /diagnostics {name!r} at {levels} mentioning {fragments}; seen: {seen[-8:]}"
            ) from None
        return found[0]


class SyntheticStream:
    """Calls ``publish(k, stamp_s)`` every ``dt_s`` [s] from a thread, with ``stamp_s = t0 + k dt``.

    The stamps are synthetic: the nodes under test see a perfectly regular stream whatever the
    load of the machine, so the checks that depend on stamps are deterministic as long as the node
    takes every sample. A node that keeps only the newest sample skips some on a busy machine, and
    the stamp gap between the samples it takes grows; a check that needs every sample slows the wall
    pace down with ``wall_period_s`` (the stamps still advance ``dt_s`` per sample).
    """

    def __init__(
        self, publish: Callable[[int, float], None], dt_s: float, t0_s: float = 100.0
    ) -> None:
        self.dt_s, self.t0_s = dt_s, t0_s
        self.wall_period_s = dt_s  # wall time between two samples [s]
        self._publish = publish
        self.k = 0
        self._run = True
        self._thread = threading.Thread(target=self._loop, name="synthetic_stream", daemon=True)
        self._thread.start()

    def stamp(self, k: int | None = None) -> float:
        """Stamp [s] of sample ``k`` (default: the latest one published)."""
        return self.t0_s + (self.k if k is None else k) * self.dt_s

    def _loop(self) -> None:
        while self._run:
            self._publish(self.k, self.stamp(self.k))
            self.k += 1
            time.sleep(self.wall_period_s)  # pacing of the synthetic stream, not synchronisation

    def wait_samples(self, n: int, harness: RosHarness, timeout_s: float = 30.0) -> None:
        """Return once ``n`` more samples were published."""
        target = self.k + n
        harness._poll(lambda: self.k >= target, timeout_s, f"{n} samples not published", True)

    def stop(self) -> None:
        """Stop and join the thread."""
        self._run = False
        self._thread.join(timeout=5.0)


def name_faults(
    names: list[str], field: str, values: list[float], extra: dict[str, list[float]] | None = None
) -> list[tuple[str, list[str], dict[str, list[float]], str]]:
    """``(label, names, {field: values}, fragment)`` of the name / length / finiteness faults of one
    JointState; ``fragment`` is a text the rejection reason contains. ``extra`` adds other fields."""
    n = len(names)
    extra = extra or {}

    def fields(vals: list[float]) -> dict[str, list[float]]:
        return {field: vals, **extra}

    nan, inf = list(values), list(values)
    nan[0], inf[-1] = math.nan, math.inf
    return [
        ("nan", names, fields(nan), "non-finite"),
        ("inf", names, fields(inf), "non-finite"),
        ("wrong length", names, {k: v[:-1] for k, v in fields(values).items()}, f"for {n}"),
        ("unknown name", names[:-1] + ["no_such_joint"], fields(values), "no_such_joint"),
        ("missing name", names[:-1], {k: v[:-1] for k, v in fields(values).items()}, "lacks"),
        ("duplicated name", names[:-1] + [names[0]], fields(values), "duplicated"),
    ]


def joint_state(names: list[str], stamp_s: float, **fields: list[float]) -> JointState:
    """A JointState with the given names, stamp [s] and fields, values written as given."""
    msg = JointState()
    msg.header.stamp = seconds_to_time_msg(stamp_s)
    msg.name = list(names)
    for key, vals in fields.items():
        setattr(msg, key, [float(x) for x in vals])
    return msg


def still_odometry(q: np.ndarray, stamp_s: float) -> Odometry:
    """``estimation/base_odometry`` of a still robot at configuration ``q`` (base pose from
    ``q[:7]``, zero twist), frames ``odom`` → ``base_link``."""
    return arrays_to_odometry_msg(q[:3], q[3:7], np.zeros(3), np.zeros(3), frame_id="odom",
                                  child_frame_id="base_link", stamp=seconds_to_time_msg(stamp_s))


def estimator_params(dt_s: float, **extra: object) -> dict[str, object]:
    """``state_estimator`` parameters for synthetic streams of period ``dt_s``: the rate and the
    velocity-feedback gain of the stream, a short calibration window, no TF; ``extra`` added."""
    return {"rate_hz": 1.0 / dt_s, "beta": 1.0 / dt_s, "calibration_samples": 20, "publish_tf": False, **extra}


def _call(harness: RosHarness, srv_type: type, name: str, request: object) -> object:
    """Response of service ``name`` called from the probe (AssertionError if it does not answer)."""
    client = harness.probe.node.create_client(srv_type, name)
    assert client.wait_for_service(timeout_sec=SERVICE_TIMEOUT_S), f"service {name} not available"
    future = client.call_async(request)
    harness._poll(future.done, SERVICE_TIMEOUT_S, f"no response from {name}", True)
    return future.result()


def set_parameters(harness: RosHarness, node: str, **values: object) -> SetParametersResult:
    """Set parameters of ``/<node>`` at once through its ``set_parameters`` service; the result of
    the first one (the node's validator answers for the whole request)."""
    request = SetParameters.Request()
    request.parameters = [Parameter(k, value=v).to_parameter_msg() for k, v in values.items()]
    response = _call(harness, SetParameters, f"/{node}/set_parameters", request)
    return response.results[0]


def get_parameters(harness: RosHarness, node: str, *names: str) -> list[object]:
    """Current values of parameters of ``/<node>`` (its ``get_parameters`` service)."""
    response = _call(
        harness, GetParameters, f"/{node}/get_parameters", GetParameters.Request(names=list(names))
    )
    return [parameter_value_to_python(v) for v in response.values]


def assert_commands_safe(messages: list[JointState], limits: dict[str, float]) -> None:
    """Every effort of the ``actuators/command`` messages finite and within ``limits`` [N] by name."""
    assert messages, "no actuators/command received"
    for msg in messages:
        effort = np.asarray(msg.effort, dtype=float)
        assert np.all(np.isfinite(effort)), list(msg.effort)
        bound = np.array([limits[n] for n in msg.name])
        assert np.all(np.abs(effort) <= bound + 1e-9), dict(zip(msg.name, effort))
