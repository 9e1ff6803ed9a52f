"""Reusable pytest helpers to run REAL node executables and talk to them over DDS.

Integration-test infrastructure (not a unit under test itself; ``test_ros_harness.py`` checks it).

Isolation: every test session takes a ROS domain id no other session on the machine holds (random
order, claimed with a lock file), discovery is restricted to localhost, and logs go to a temporary
``ROS_LOG_DIR``. Node processes start with that environment, their output goes to a log file per
process, and they are stopped with SIGINT and their exit code checked.

Synchronisation is by observation: :meth:`RosHarness.wait_for_message` returns when a message
has actually been received (polling with a timeout), and fails early with the processes' output
if one of them died. Rates are measured from reception times over a window.

Use in a test module::

    from test.integration.ros_harness import ros_environment, ros_harness  # noqa: F401 (fixtures)

    def test_sim_publishes_state(ros_harness):
        sim = ros_harness.start_node("sim", params={"rate_hz": 1000.0})
        ros_harness.wait_for_message("actuators/state", JointState, timeout_s=20.0)
        stats = ros_harness.measure_rate("actuators/state", JointState, duration_s=1.0)
        assert stats.rate_hz == pytest.approx(1000.0, rel=0.1)
        assert ros_harness.stop(sim) == 0
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import fcntl
import math
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "kangaroo_wbc"

#: Environment variable forcing the domain id of a test session (otherwise chosen at random).
DOMAIN_ID_ENV = "KANGAROO_WBC_TEST_DOMAIN_ID"
#: Domain ids considered (1..100 keeps the DDS ports clear of Linux' ephemeral range).
DOMAIN_IDS = range(1, 101)

_domain_locks: list[TextIO] = []


# --------------------------------------------------------------------------------------------
# environment


def allocate_domain_id() -> int:
    """A ROS domain id held by no other test session on this machine (lock held until exit)."""
    forced = os.environ.get(DOMAIN_ID_ENV)
    if forced:
        return int(forced)
    candidates = list(DOMAIN_IDS)
    random.SystemRandom().shuffle(candidates)
    for domain_id in candidates:
        path = Path(tempfile.gettempdir()) / f"{PACKAGE}_ros_domain_{domain_id}.lock"
        handle = open(path, "w")  # noqa: SIM115 - kept open to hold the lock
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _domain_locks.append(handle)
        return domain_id
    raise RuntimeError(f"no free ROS domain id in {DOMAIN_IDS}")


def isolated_ros_env(domain_id: int, log_dir: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for processes of one test session (copy of ``base``, default ``os.environ``)."""
    env = dict(os.environ if base is None else base)
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.pop("ROS_STATIC_PEERS", None)
    env.pop("ROS_LOCALHOST_ONLY", None)  # deprecated; conflicts with the discovery range
    env["ROS_LOG_DIR"] = str(log_dir)
    env["PYTHONUNBUFFERED"] = "1"
    env["RCUTILS_COLORIZED_OUTPUT"] = "0"
    # The package may not be installed in the interpreter's environment: run it from the tree.
    paths = [str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


@dataclasses.dataclass(frozen=True)
class RosEnvironment:
    """The isolated ROS environment of a test session."""

    domain_id: int
    log_dir: Path
    env: dict[str, str]


@pytest.fixture(scope="session")
def ros_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RosEnvironment]:
    """Session fixture (integration infrastructure): unique ROS_DOMAIN_ID, LOCALHOST discovery and
    a temporary ROS_LOG_DIR, applied to this process too (for in-process rclpy) and restored after."""
    domain_id = allocate_domain_id()
    log_dir = tmp_path_factory.mktemp("ros_log")
    env = isolated_ros_env(domain_id, log_dir)
    keys = ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_LOG_DIR", "ROS_STATIC_PEERS",
            "ROS_LOCALHOST_ONLY")
    saved = {k: os.environ.get(k) for k in keys}
    for k in keys:
        if k in env:
            os.environ[k] = env[k]
        else:
            os.environ.pop(k, None)
    try:
        yield RosEnvironment(domain_id, log_dir, env)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# --------------------------------------------------------------------------------------------
# commands


def _node_entry_points() -> dict[str, str]:
    """``{executable: "module:function"}`` read from setup.py's NODES table (no import)."""
    tree = ast.parse((REPO_ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "NODES" for t in node.targets
        ):
            return dict(ast.literal_eval(node.value))
    raise RuntimeError("setup.py has no NODES table")


def node_command(executable: str) -> list[str]:
    """Command running node ``executable`` (e.g. "sim"): the installed console script
    ``kangaroo_wbc_<executable>`` next to this interpreter or on PATH, else its entry point run by
    this interpreter from the source tree."""
    script = f"{PACKAGE}_{executable}"
    candidate = Path(sys.executable).parent / script
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return [str(candidate)]
    found = shutil.which(script)
    if found:
        return [found]
    entry_points = _node_entry_points()
    if executable not in entry_points:
        raise KeyError(f"unknown node executable {executable!r}; setup.py has {sorted(entry_points)}")
    module, function = entry_points[executable].split(":")
    return [sys.executable, "-c", f"import sys; from {module} import {function}; sys.exit({function}())"]


def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_param_text(v) for v in value) + "]"
    return str(value)


def ros_arguments(
    *,
    node_name: str | None = None,
    params: Mapping[str, Any] | None = None,
    params_file: Path | str | None = None,
    remaps: Mapping[str, str] | None = None,
    namespace: str | None = None,
    log_level: str | None = None,
) -> list[str]:
    """``--ros-args ...`` for the given node name, parameters, remappings and namespace."""
    args: list[str] = []
    if node_name:
        args += ["-r", f"__node:={node_name}"]
    if namespace:
        args += ["-r", f"__ns:={namespace}"]
    if params_file:
        args += ["--params-file", str(params_file)]
    for name, value in (params or {}).items():
        args += ["-p", f"{name}:={_param_text(value)}"]
    for src, dst in (remaps or {}).items():
        args += ["-r", f"{src}:={dst}"]
    if log_level:
        args += ["--log-level", log_level]
    return ["--ros-args", *args] if args else []


# --------------------------------------------------------------------------------------------
# processes


class NodeProcess:
    """One node process started by :class:`RosHarness`; its output goes to :attr:`log_path`."""

    def __init__(self, name: str, cmd: Sequence[str], env: Mapping[str, str], log_path: Path, cwd: Path):
        self.name = name
        self.cmd = list(cmd)
        self.log_path = log_path
        self._log = open(log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(  # noqa: S603 - test helper running known commands
            self.cmd, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.killed = False
        self.stopping = False  # set once the harness asked it to stop

    @property
    def pid(self) -> int:
        """Process id."""
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        """Exit code, or None while running (negative: killed by that signal)."""
        return self.popen.poll()

    def is_running(self) -> bool:
        """True while the process has not exited."""
        return self.popen.poll() is None

    def output(self, tail_lines: int | None = None) -> str:
        """What the process printed so far (stdout and stderr)."""
        text = self.log_path.read_text(errors="replace")
        if tail_lines is not None:
            text = "\n".join(text.splitlines()[-tail_lines:])
        return text

    def describe(self, tail_lines: int = 40) -> str:
        """Name, state and output tail, for assertion messages."""
        state = "running" if self.is_running() else f"exited with {self.returncode}"
        return (f"--- process {self.name!r} (pid {self.pid}, {state}): {shlex.join(self.cmd)}\n"
                f"{self.output(tail_lines)}")

    def send_signal(self, sig: int = signal.SIGINT) -> None:
        """Send ``sig`` if still running, and mark the process as being stopped."""
        self.stopping = True
        if self.is_running():
            with contextlib.suppress(ProcessLookupError):
                self.popen.send_signal(sig)

    def wait_exit(self, timeout_s: float = 10.0) -> int:
        """Wait for the exit; after ``timeout_s`` kill the process group (``killed`` becomes True).

        Returns:
            The exit code (negative if ended by a signal).
        """
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.killed = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10.0)
        self._log.close()
        return self.popen.returncode

    def stop(self, sig: int = signal.SIGINT, timeout_s: float = 10.0) -> int:
        """Send ``sig`` (once) and wait for the exit (see :meth:`wait_exit`); returns the exit code."""
        if not self.stopping:
            self.send_signal(sig)
        return self.wait_exit(timeout_s)


# --------------------------------------------------------------------------------------------
# in-process observer


@dataclasses.dataclass(frozen=True)
class RateStats:
    """Rate of a topic measured from reception times (wall clock, this process)."""

    count: int
    duration_s: float
    rate_hz: float
    period_mean_s: float
    period_std_s: float
    period_max_s: float
    stamp_rate_hz: float | None  # from header stamps, if the type has a header

    def __str__(self) -> str:
        stamp = "" if self.stamp_rate_hz is None else f", stamps {self.stamp_rate_hz:.1f} Hz"
        return (f"{self.rate_hz:.1f} Hz over {self.count} msgs / {self.duration_s:.2f} s "
                f"(period {self.period_mean_s * 1e3:.3f} ± {self.period_std_s * 1e3:.3f} ms, "
                f"max {self.period_max_s * 1e3:.2f} ms{stamp})")


class _Recorder:
    def __init__(self, maxlen: int) -> None:
        self.lock = threading.Condition()
        self.items: list[tuple[float, Any]] = []
        self.maxlen = maxlen
        self.total = 0
        self.subscription: Any = None

    def __call__(self, msg: Any) -> None:
        t = time.monotonic()
        with self.lock:
            self.items.append((t, msg))
            self.total += 1
            if len(self.items) > self.maxlen:
                del self.items[: len(self.items) - self.maxlen]
            self.lock.notify_all()


class TopicProbe:
    """An rclpy node in its own context, spun by a background thread, that records topics.

    Args:
        domain_id: ROS domain to join.
        name: node name.
    """

    def __init__(self, domain_id: int, name: str = "kangaroo_wbc_test_probe") -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self._context = rclpy.Context()
        rclpy.init(context=self._context, domain_id=domain_id)
        self.node = rclpy.create_node(name, context=self._context)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)
        self._recorders: dict[tuple[str, type, Any], _Recorder] = {}
        self._publishers: dict[tuple[str, type], Any] = {}
        self._thread = threading.Thread(target=self._spin, name=f"{name}_spin", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        from rclpy.executors import ExternalShutdownException

        with contextlib.suppress(ExternalShutdownException):
            while self._context.ok():
                self._executor.spin_once(timeout_sec=0.05)

    def recorder(self, topic: str, msg_type: type, qos: Any = None, maxlen: int = 20_000) -> _Recorder:
        """Subscribe (once per topic, type and QoS) and return the recorder of received messages
        (the newest ``maxlen``). Default QoS: reliable, volatile, depth 1000; pass
        ``kangaroo_wbc.ros.qos.LATCHED`` to receive the last sample of a latched topic."""
        qos_key = None if qos is None else (qos.reliability, qos.durability, qos.depth)
        key = (topic, msg_type, qos_key)
        if key not in self._recorders:
            from rclpy.qos import QoSProfile, ReliabilityPolicy

            qos = qos or QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
            rec = _Recorder(maxlen)
            rec.subscription = self.node.create_subscription(msg_type, topic, rec, qos)
            self._recorders[key] = rec
        return self._recorders[key]

    def publisher(self, topic: str, msg_type: type, qos: Any = 10) -> Any:
        """A publisher (created once per topic and type)."""
        key = (topic, msg_type)
        if key not in self._publishers:
            self._publishers[key] = self.node.create_publisher(msg_type, topic, qos)
        return self._publishers[key]

    def close(self) -> None:
        """Shut the context down and join the spin thread."""
        self._context.try_shutdown()
        self._thread.join(timeout=5.0)
        self._executor.shutdown(timeout_sec=1.0)
        with contextlib.suppress(Exception):
            self.node.destroy_node()


def _stamp_s(msg: Any) -> float | None:
    header = getattr(msg, "header", None)
    if header is None:
        return None
    return header.stamp.sec + header.stamp.nanosec * 1e-9


def rate_stats(times: Sequence[float], stamps: Sequence[float | None] = ()) -> RateStats:
    """Rate statistics of reception times [s] (and header stamps [s] when all are known)."""
    if len(times) < 2:
        raise ValueError(f"need at least 2 messages to measure a rate, got {len(times)}")
    periods = [b - a for a, b in zip(times[:-1], times[1:], strict=True)]
    duration = times[-1] - times[0]
    mean = duration / len(periods)
    std = math.sqrt(sum((p - mean) ** 2 for p in periods) / len(periods))
    stamp_rate = None
    known = [s for s in stamps if s is not None]
    if len(known) == len(times) and known[-1] > known[0]:
        stamp_rate = (len(known) - 1) / (known[-1] - known[0])
    return RateStats(len(times), duration, len(periods) / duration if duration > 0 else math.inf,
                     mean, std, max(periods), stamp_rate)


# --------------------------------------------------------------------------------------------
# harness


class ProcessDied(AssertionError):
    """A node process exited while the test was waiting for it."""


class RosHarness:
    """Starts node processes in an isolated ROS environment and observes their topics.

    Args:
        environment: the session's :class:`RosEnvironment`.
        work_dir: directory for process logs and working directories (per test).
    """

    def __init__(self, environment: RosEnvironment, work_dir: Path) -> None:
        self.environment = environment
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.processes: list[NodeProcess] = []
        self._probe: TopicProbe | None = None

    # processes ------------------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        """Environment given to the processes."""
        return dict(self.environment.env)

    def start(
        self,
        cmd: Sequence[str],
        *,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> NodeProcess:
        """Start ``cmd`` in the isolated environment (plus ``env`` overrides)."""
        name = name or Path(cmd[0]).name
        index = len(self.processes)
        full_env = {**self.environment.env, **(env or {})}
        proc = NodeProcess(name, cmd, full_env, self.work_dir / f"{index:02d}_{name}.log", self.work_dir)
        self.processes.append(proc)
        return proc

    def start_node(
        self,
        executable: str,
        *,
        node_name: str | None = None,
        params: Mapping[str, Any] | None = None,
        params_file: Path | str | None = None,
        remaps: Mapping[str, str] | None = None,
        namespace: str | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> NodeProcess:
        """Start the package's node ``executable`` ("sim", "state_estimator", ...) with ROS args."""
        cmd = node_command(executable) + list(extra_args) + ros_arguments(
            node_name=node_name, params=params, params_file=params_file, remaps=remaps,
            namespace=namespace,
        )
        return self.start(cmd, name=node_name or executable, env=env)

    def stop(self, proc: NodeProcess, sig: int = signal.SIGINT, timeout_s: float = 10.0) -> int:
        """Stop one process (SIGINT by default) and return its exit code."""
        return proc.stop(sig, timeout_s)

    def stop_all(self, sig: int = signal.SIGINT, timeout_s: float = 10.0) -> dict[str, int]:
        """Signal every running process at once, then collect exit codes ``{name: code}``."""
        for proc in self.processes:
            if not proc.stopping:
                proc.send_signal(sig)
        return {p.name: p.wait_exit(timeout_s) for p in self.processes}

    def assert_exit_codes(self, codes: Mapping[str, int], allowed: Sequence[int] = (0,)) -> None:
        """Fail with every offending process' output unless all exit codes are in ``allowed``."""
        bad = [p for p in self.processes if codes.get(p.name) not in allowed]
        if bad:
            raise AssertionError(
                f"unexpected exit codes {[(p.name, p.returncode) for p in bad]} (allowed {list(allowed)})\n"
                + "\n".join(p.describe() for p in bad)
            )

    def check_alive(self) -> None:
        """Raise :class:`ProcessDied` (with outputs) if a started process has exited."""
        dead = [p for p in self.processes if not p.stopping and not p.is_running()]
        if dead:
            raise ProcessDied("\n".join(p.describe() for p in dead))

    # observation ----------------------------------------------------------------------------

    @property
    def probe(self) -> TopicProbe:
        """The in-process observer node (created on first use)."""
        if self._probe is None:
            self._probe = TopicProbe(self.environment.domain_id)
        return self._probe

    def _poll(self, condition: Callable[[], bool], timeout_s: float, what: str, check: bool) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            if condition():
                return
            if check:
                self.check_alive()
            if time.monotonic() >= deadline:
                graph = sorted(self.probe.node.get_topic_names_and_types())
                outputs = "\n".join(p.describe(15) for p in self.processes)
                raise TimeoutError(f"{what} within {timeout_s} s. Topics seen: {graph}\n{outputs}")
            time.sleep(0.01)

    def wait_for_message(
        self,
        topic: str,
        msg_type: type,
        *,
        timeout_s: float = 10.0,
        predicate: Callable[[Any], bool] | None = None,
        qos: Any = None,
        check_processes: bool = True,
        include_earlier: bool = False,
    ) -> Any:
        """Return the first message on ``topic`` received after this call (or, with
        ``include_earlier``, since the probe subscribed) that satisfies ``predicate``;
        TimeoutError (with the graph and the process outputs) otherwise.

        ``check_processes`` makes the wait fail early if a process the harness did not stop exited.
        """
        topic = self._absolute(topic)
        rec = self.probe.recorder(topic, msg_type, qos)
        with rec.lock:
            start = 0 if include_earlier else len(rec.items)
        found: list[Any] = []

        def received() -> bool:
            with rec.lock:
                for _, msg in rec.items[start:]:
                    if predicate is None or predicate(msg):
                        found.append(msg)
                        return True
            return False

        self._poll(received, timeout_s, f"no message on {topic}", check_processes)
        return found[0]

    def measure_rate(
        self,
        topic: str,
        msg_type: type,
        *,
        duration_s: float = 1.0,
        timeout_s: float = 10.0,
        qos: Any = None,
    ) -> RateStats:
        """Wait for traffic on ``topic``, then measure its rate over a ``duration_s`` window."""
        topic = self._absolute(topic)
        self.wait_for_message(topic, msg_type, timeout_s=timeout_s, qos=qos)
        rec = self.probe.recorder(topic, msg_type, qos)
        t0 = time.monotonic()
        end = t0 + duration_s
        while time.monotonic() < end:  # measurement window, not synchronisation
            self.check_alive()
            time.sleep(min(0.05, max(0.0, end - time.monotonic())))
        with rec.lock:
            window = [(t, m) for t, m in rec.items if t0 <= t <= end]
        return rate_stats([t for t, _ in window], [_stamp_s(m) for _, m in window])

    def wait_for_subscribers(self, topic: str, count: int = 1, *, timeout_s: float = 10.0) -> None:
        """Wait until ``topic`` has at least ``count`` subscribers (so a publish is not lost)."""
        topic = self._absolute(topic)
        self._poll(lambda: self.probe.node.count_subscribers(topic) >= count, timeout_s,
                   f"fewer than {count} subscribers on {topic}", True)

    def wait_for_publishers(self, topic: str, count: int = 1, *, timeout_s: float = 10.0) -> None:
        """Wait until ``topic`` has at least ``count`` publishers."""
        topic = self._absolute(topic)
        self._poll(lambda: self.probe.node.count_publishers(topic) >= count, timeout_s,
                   f"fewer than {count} publishers on {topic}", True)

    def publish(self, topic: str, msg: Any, qos: Any = 10, *, match_timeout_s: float = 10.0) -> None:
        """Publish ``msg`` on ``topic`` from the probe node. A publisher is matched with the
        subscriptions some time after the graph lists them: when the graph shows a subscriber,
        wait (up to ``match_timeout_s``) until this publisher is matched, so that the first
        message is not lost."""
        topic = self._absolute(topic)
        publisher = self.probe.publisher(topic, type(msg), qos)
        if self.probe.node.count_subscribers(topic) > 0:
            self._poll(lambda: publisher.get_subscription_count() > 0, match_timeout_s,
                       f"the probe's publisher on {topic} matched no subscription", False)
        publisher.publish(msg)

    def wait_matched(self, recorder: Any, count: int = 1, *, timeout_s: float = 10.0) -> None:
        """Wait until the subscription behind ``recorder`` is matched with ``count`` publishers
        (a volatile sample published before the match is never delivered)."""
        self._poll(lambda: recorder.subscription.get_publisher_count() >= count, timeout_s,
                   "the probe's subscription matched too few publishers", True)

    @staticmethod
    def _absolute(topic: str) -> str:
        return topic if topic.startswith("/") else "/" + topic

    # teardown -------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop leftover processes (SIGINT, then SIGKILL) and the probe. Exit codes are not
        checked here: tests check them explicitly with :meth:`stop` / :meth:`stop_all`."""
        for proc in self.processes:
            proc.stop(signal.SIGINT, timeout_s=5.0)
        if self._probe is not None:
            self._probe.close()
            self._probe = None


@pytest.fixture
def ros_harness(ros_environment: RosEnvironment, tmp_path: Path) -> Iterator[RosHarness]:
    """Per-test harness (integration infrastructure) in the session's isolated ROS environment;
    leftover processes are stopped at teardown."""
    harness = RosHarness(ros_environment, tmp_path / "ros_harness")
    try:
        yield harness
    finally:
        harness.close()
