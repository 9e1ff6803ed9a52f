"""Common skeleton of the kangaroo_wbc nodes and their ``main``.

:class:`KangarooNode` gives a node, in its constructor: parameters declared from a dataclass and
kept valid at run time (:mod:`kangaroo_wbc.ros.params`), a ``/diagnostics`` publisher fed by a
steady-clock timer (it keeps reporting when ``/clock`` stops, which is when it matters), and a
per-key throttled logger, and a guard around every subscription callback (:meth:`KangarooNode.create_subscription`):
a message a callback cannot take (an exception of any kind) is skipped, the node keeps its previous
input, logs one throttled line naming the topic and the error, and reports an ``inputs`` status
(WARN for a rejected message, ERROR for any other exception) in ``/diagnostics``; no message can
end the process. Subclasses override :meth:`KangarooNode.diagnostic_statuses`,
:meth:`KangarooNode.on_parameters_changed` and :meth:`KangarooNode.on_shutdown`.

:func:`run_nodes` runs one or several nodes in one executor and handles SIGINT and SIGTERM itself:
while the nodes are being built a signal aborts their construction (exit code 0 at once: nothing
has run that needs a last word); after that, the signal only sets a flag, the spin loop returns,
every node's :meth:`~KangarooNode.on_shutdown` runs *while the context is still valid* (so a
controller can still publish its zero-force command),
then the nodes are destroyed and the process exits with code 0. A configuration error gives one
fatal line and exit code 2: a :class:`~kangaroo_wbc.errors.ConfigError` while building a node (the
line also lists the ``--params-file`` files), a parameter file rcl cannot read (its error names the
file and the line), or a parameter override (file or ``-p``) that no node declared.

Example::

    def main(args=None) -> int:
        return run_nodes([StateEstimatorNode], args=args)
"""

from __future__ import annotations

import difflib
import faulthandler
import gc
import inspect
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import rclpy
from diagnostic_msgs.msg import DiagnosticStatus
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions
from rclpy.time import Time as RosTime
from rclpy.time_source import TimeSource

from kangaroo_wbc.errors import ConfigError, KangarooWbcError
from kangaroo_wbc.ros import exit_guard
from kangaroo_wbc.ros.diagnostics import LOG_LEVELS, DiagnosticsPublisher, Level, ThrottledLogger
from kangaroo_wbc.ros.params import ParameterBinding, declare_parameters
from kangaroo_wbc.ros.publication import (
    PublicationThread,
    publication_thread,
    stop_publication_thread,
)

#: What the rcl calls raise (rclpy.init: e.g. a parameter file that is not valid YAML).
RCLError = rclpy_implementation.RCLError

#: Stamps at or above this [s] do not set a clock from stamps (not a time rcl can hold: int64 ns).
STAMP_LIMIT_S = 9.2e9

EXIT_OK = 0
EXIT_CONFIG_ERROR = 2

#: Longest time [s] between a signal and the start of the shutdown sequence.
SPIN_PERIOD_S = 0.05
#: Longest wait [s] at shutdown for reliable subscribers to acknowledge the last messages.
SHUTDOWN_FLUSH_S = 1.0
#: A shutdown still running after this [s] writes every thread's stack to stderr (the node's log):
#: a process that does not exit says where it waits.
SHUTDOWN_STACKS_AFTER_S = 6.0
#: ... and after this [s] the process ends with its exit code (:mod:`kangaroo_wbc.ros.exit_guard`):
#: the node's own hooks and joins take at most about 5 s, and ``ros2 launch`` sends SIGKILL 10 s
#: after its SIGINT (its default ``sigterm_timeout`` + ``sigkill_timeout``).
SHUTDOWN_EXIT_AFTER_S = 8.0
#: A throttled log line repeats at most once per this period [s].
THROTTLE_PERIOD_S = 5.0
#: Period [s, steady clock] of the ROS-graph check of the single-writer topics.
WRITER_CHECK_PERIOD_S = 0.25
#: The node name rmw gives a publisher whose node's information has not been discovered yet.
UNKNOWN_NODE_NAME = "_NODE_NAME_UNKNOWN_"


def unexpected_writers(publishers: Sequence[tuple[str, str]], writer: str) -> list[str]:
    """The fully qualified names of a single-writer topic's ``publishers`` (``(namespace, node
    name)`` pairs from the graph) other than ``writer``. A publisher whose node discovery has not
    named yet (:data:`UNKNOWN_NODE_NAME`) while ``writer`` is not among the named ones is, as far as
    the graph can tell, the writer itself: one such is not reported; a second one is."""
    names = [f"{ns.rstrip('/')}/{name}" for ns, name in publishers if name != writer]
    if len(names) == len(publishers):  # the writer not named: one unnamed publisher may be it
        unnamed = next((n for n in names if n.endswith(UNKNOWN_NODE_NAME)), None)
        if unnamed is not None:
            names.remove(unnamed)
    return sorted(set(names))
#: A topic's ``inputs`` status stays WARN/ERROR this long [s] after the last message it rejected.
INPUT_FAULT_HOLD_S = 5.0


class InputFaults:
    """The messages a node's subscription callbacks could not take, per topic: counts, the last
    error and when it happened (the ``inputs`` status of :class:`KangarooNode`).

    Args:
        clock: monotonic time source [s] (injectable for tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: topic -> [level of the last rejection, rejected count, time [s] of the last one, message]
        self.topics: dict[str, list[Any]] = {}

    def record(self, topic: str, exc: BaseException) -> tuple[Level, str, bool]:
        """Count a message of ``topic`` whose callback raised ``exc``.

        Returns:
            ``(level, line, news)``: WARN for a rejected message (a :class:`KangarooWbcError`:
            non-finite value, wrong size, unknown name), ERROR for any other exception (a failing
            callback: the line says where it raised); ``news`` is True when the topic was not
            faulty a moment ago or its level rose (the caller reports it at once).
        """
        now = self._clock()
        if isinstance(exc, KangarooWbcError):
            level, what = Level.WARN, f"{topic}: message rejected: {exc}"
        else:
            frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
            where = f" (in {frame.name}, {frame.filename}:{frame.lineno})" if frame else ""
            level, what = Level.ERROR, f"{topic}: callback failed: {type(exc).__name__}: {exc}{where}"
        entry = self.topics.get(topic)
        news = entry is None or now - entry[2] > INPUT_FAULT_HOLD_S or level > entry[0]
        count = 1 if entry is None else entry[1] + 1
        self.topics[topic] = [level, count, now, what]
        return level, f"{what}; the previous input is kept", news

    def summary(self) -> tuple[Level, str, dict[str, Any]]:
        """``(level, message, values)`` of the ``inputs`` status: the recent faults named, and
        per topic the count of rejected messages and the last error."""
        now = self._clock()
        recent = {t: e for t, e in self.topics.items() if now - e[2] <= INPUT_FAULT_HOLD_S}
        level = max((e[0] for e in recent.values()), default=Level.OK)
        if recent:
            message = "; ".join(e[3] for e in recent.values())
        else:
            message = f"every input accepted for {INPUT_FAULT_HOLD_S:g} s"
        values: dict[str, Any] = {}
        for topic, (_, count, _, what) in self.topics.items():
            values[f"{topic} rejected"] = count
            values[f"{topic} last error"] = what
        return level, message, values


class StreamPublisher:
    """A high-rate publisher that builds and sends its messages only while somebody subscribes.

    A 1 kHz topic without a subscriber still costs the serialisation and ``rcl_publish`` (a few
    µs each, a dozen topics a tick); what nobody receives is skipped. The matched-subscription
    count is asked again every ``IDLE_REFRESH`` calls while nobody listens (a new subscriber
    misses at most that many samples after its match, which discovery delays anyway) and every
    ``BUSY_REFRESH`` calls while somebody does. Use::

        if stream.wanted():
            stream.publish(writer.write(...))
    """

    IDLE_REFRESH = 50
    BUSY_REFRESH = 200

    def __init__(self, publisher: Any, sender: PublicationThread | None = None) -> None:
        self.publisher = publisher
        self._sender = sender
        self._key = sender.register(publisher) if sender is not None else 0
        self._countdown = 0
        self._wanted = False

    def wanted(self) -> bool:
        """True if the message should be built and published (somebody subscribes)."""
        self._countdown -= 1
        if self._countdown <= 0:
            self._wanted = self.publisher.get_subscription_count() > 0
            self._countdown = self.BUSY_REFRESH if self._wanted else self.IDLE_REFRESH
        return self._wanted

    def publish(self, msg: Any) -> None:
        """Publish ``msg``; serialised bytes go through the sender thread when there is one."""
        if self._sender is not None and type(msg) is bytes and self._sender.send(self._key, msg):
            return
        self.publisher.publish(msg)


class KangarooNode(Node):
    """Node with dataclass parameters, diagnostics and throttled logging.

    Args:
        node_name: default node name (launch may remap it).
        params_cls: dataclass of the node's parameters (see :func:`~kangaroo_wbc.ros.params.parameter`),
            or None for a node without parameters.
        diagnostics_period_s: period [s] of the ``/diagnostics`` timer (steady clock); 0 disables it.
        **node_kwargs: passed to ``rclpy.node.Node``.
    """

    def __init__(
        self,
        node_name: str,
        params_cls: type | None = None,
        *,
        diagnostics_period_s: float = 1.0,
        **node_kwargs: Any,
    ) -> None:
        super().__init__(node_name, **node_kwargs)
        self._binding: ParameterBinding | None = None
        if params_cls is not None:
            params: Any = declare_parameters(self, params_cls)
            self._binding = ParameterBinding(self, params, on_change=self.on_parameters_changed)
        self.diagnostics = DiagnosticsPublisher(self)
        #: samples this node processed (its adapter counts them); with :attr:`report_process` the
        #: diagnostics add a ``process`` status: process CPU time per sample and sample rate
        self.tick_count = 0
        self._in_diagnostics = False
        self.report_process = True
        #: the clock is set by the process that hosts the node (:meth:`use_time_set_in_process`)
        self.time_set_in_process = False
        self._stamp_clock: Clock | None = None  # set from the samples' stamps (:meth:`take_clock_from_stamps`)
        self._cpu_mark = (time.process_time(), time.monotonic(), 0)
        self.throttled = ThrottledLogger(self.get_logger(), THROTTLE_PERIOD_S)
        self.input_faults = InputFaults()
        self._single_writer: dict[str, str] = {}  # resolved topic -> its one expected writer node
        self._writers_seen: dict[str, list[str]] = {}
        self._writer_counts: dict[str, int] = {}  # resolved topic -> its publishers at the last check
        if diagnostics_period_s > 0.0:
            self.create_timer(
                diagnostics_period_s,
                self.publish_diagnostics,
                clock=Clock(clock_type=ClockType.STEADY_TIME),
            )

    @property
    def params(self) -> Any:
        """Current parameter values (a new dataclass instance after each accepted change)."""
        return None if self._binding is None else self._binding.params

    def on_parameters_changed(self, params: Any, changed: set[str]) -> None:
        """Called after an accepted parameter change with the new values and changed field names."""

    def diagnostic_statuses(self) -> list[DiagnosticStatus]:
        """Statuses published periodically: those of the node's ``component`` (the plain-Python
        class of its behaviour; its queued events are logged), else that the node is running."""
        component = getattr(self, "component", None)
        if component is None:
            return [self.diagnostics.status("node", Level.OK, "running")]
        statuses = self.to_diagnostics(component.statuses())
        self.log_events(component)
        return statuses

    def create_subscription(self, msg_type: Any, topic: str, callback: Callable[..., Any],
                            qos_profile: Any, **kwargs: Any) -> Any:
        """``Node.create_subscription`` with ``callback`` guarded: an exception it raises skips
        that message (the node keeps its previous input) and becomes a throttled log line and an
        ``inputs`` status naming the topic and the error (:meth:`input_rejected`); it never
        reaches the executor, so no message can end the process."""
        name = self.resolve_topic_name(topic)
        return super().create_subscription(msg_type, topic, self._guarded(name, callback), qos_profile, **kwargs)

    def create_stamped_subscription(self, msg_type: Any, topic: str, callback: Callable[[Any], Any],
                                    qos_profile: Any) -> Any:
        """A subscription to a 1 kHz ``WrenchStamped``, ``Imu`` or ``Odometry`` stream whose
        ``callback`` gets the serialised bytes, which the conversions read without building the
        nested message (:func:`~kangaroo_wbc.ros.serialized.stamped_reader`;
        :func:`~kangaroo_wbc.ros.conversions.wrench_stamped_to_arrays`, ``imu_msg_to_arrays``,
        ``odometry_msg_to_arrays`` take both forms). Guarded as :meth:`create_subscription`; the
        typed message where no reader passed its self-check on this middleware."""
        from kangaroo_wbc.ros.serialized import stamped_reader

        raw = stamped_reader(msg_type) is not None
        return self.create_subscription(msg_type, topic, callback, qos_profile, raw=raw)

    def create_joint_state_subscription(self, topic: str, callback: Callable[[Any], Any], qos_profile: Any) -> Any:
        """A ``sensor_msgs/JointState`` subscription whose messages are read from their serialised
        form (:class:`~kangaroo_wbc.ros.serialized.JointStateReader`): ``callback`` gets a
        :class:`~kangaroo_wbc.ros.serialized.JointStateView` (``name``, ``position``, ``velocity``,
        ``effort``, ``header.stamp``, ``header.frame_id``) instead of the message, without rclpy's
        per-name conversion (the 1 kHz streams). Guarded as :meth:`create_subscription`; a typed
        subscription when the reader's self-check fails on this middleware."""
        from sensor_msgs.msg import JointState

        from kangaroo_wbc.ros.serialized import JointStateReader

        try:
            reader = JointStateReader()
        except ConfigError as exc:
            self.get_logger().warning(f"{topic}: {exc}; subscribing to the typed message")
            return self.create_subscription(JointState, topic, callback, qos_profile)
        read = reader.read
        return self.create_subscription(JointState, topic, lambda raw: callback(read(raw)), qos_profile, raw=True)

    def _guarded(self, topic: str, callback: Callable[..., Any]) -> Callable[..., Any]:
        """``callback`` (taking the message, or the message and its info) behind the guard."""
        try:
            inspect.signature(callback).bind(object())
            with_info = False
        except TypeError:
            with_info = True
        except ValueError:  # no signature (a builtin): called with the message only
            with_info = False
        if with_info:
            def guarded_with_info(msg: Any, info: Any) -> None:
                try:
                    callback(msg, info)
                except Exception as exc:  # noqa: BLE001 - the guard: reported, never raised
                    self.input_rejected(topic, exc)

            return guarded_with_info

        def guarded(msg: Any) -> None:
            try:
                callback(msg)
            except Exception as exc:  # noqa: BLE001 - the guard: reported, never raised
                self.input_rejected(topic, exc)

        return guarded

    def input_rejected(self, topic: str, exc: BaseException) -> None:
        """A message of ``topic`` that its callback could not take (``exc``): one log line per
        topic and 5 s, and the ``inputs`` status (published at once when it is new)."""
        level, line, news = self.input_faults.record(topic, exc)
        self.throttled.log(LOG_LEVELS[level], f"input {topic}", line)
        if news and not self._in_diagnostics:
            try:
                self.publish_diagnostics()
            except Exception as diag_exc:  # noqa: BLE001 - e.g. the context is shutting down
                self.throttled.error("diagnostics", f"/diagnostics not published: {diag_exc!r}")

    def create_stream_publisher(self, msg_type: type, topic: str, qos_profile: Any) -> StreamPublisher:
        """A :class:`StreamPublisher` (high-rate topic published only while somebody subscribes)."""
        return StreamPublisher(self.create_publisher(msg_type, topic, qos_profile), sender=publication_thread())

    def use_time_set_in_process(self) -> Clock:
        """Make this node's clock report the ROS time its owner sets with
        ``clock.set_ros_time_override``: what ``use_sim_time`` does, without its ``/clock``
        subscription (``use_sim_time`` is turned off). A :class:`~rclpy.time_source.TimeSource`
        without a node switches the clocks attached to it to ROS time and subscribes to nothing.

        Returns:
            The node's clock.
        """
        if self.get_parameter("use_sim_time").value:
            self.set_parameters([Parameter("use_sim_time", Parameter.Type.BOOL, False)])
        clock = self.get_clock()
        time_source = TimeSource()
        time_source.attach_clock(clock)  # type: ignore[arg-type]  # rclpy types get_clock() as Clock; a node's is a ROSClock
        time_source.ros_time_is_active = True
        self.time_set_in_process = True
        return clock

    def take_clock_from_stamps(self, source: str) -> bool:
        """With ``use_sim_time``, set this node's clock from the stamps of its ``source`` samples
        (:meth:`stamp_clock`) instead of following ``/clock``: the simulator stamps them with its
        simulated time, and a ``/clock`` message per simulated millisecond costs each node a
        wake-up. The clock then stops when ``source`` stops, as it would when ``/clock`` stops.
        Without ``use_sim_time``, nothing changes (the system clock).

        Returns:
            Whether the clock now follows the stamps.
        """
        if not self.get_parameter("use_sim_time").value:
            return False
        self._stamp_clock = self.use_time_set_in_process()
        self.get_logger().info(f"simulated time from the stamps of {source} (no /clock subscription)")
        return True

    def stamp_clock(self, stamp_s: float) -> None:
        """The simulated time [s] of a sample just taken, while the clock follows the stamps
        (:meth:`take_clock_from_stamps`); a stamp that is not a positive finite time is ignored."""
        clock = self._stamp_clock
        if clock is not None and 0.0 < stamp_s < STAMP_LIMIT_S:
            clock.set_ros_time_override(  # type: ignore[attr-defined]  # rclpy: a node's clock is a ROSClock
                RosTime(nanoseconds=round(stamp_s * 1e9), clock_type=ClockType.ROS_TIME))

    def destroy_node(self) -> None:
        """Stop the process's publication thread (it keeps the stream publishers in use), then
        destroy the node."""
        stop_publication_thread()
        super().destroy_node()

    def watch_single_writer(self, topic: str, writer: str) -> None:
        """Report every node other than ``writer`` (a node name) that publishes ``topic``: an
        ERROR ``writers`` status and log line as soon as the ROS graph shows it (checked every
        ``WRITER_CHECK_PERIOD_S``), e.g. a second source of ``actuators/command``."""
        if not self._single_writer:
            self.create_timer(WRITER_CHECK_PERIOD_S, self._check_writers,
                              clock=Clock(clock_type=ClockType.STEADY_TIME))
        self._single_writer[self.resolve_topic_name(topic)] = writer

    def other_writers(self, topic: str) -> list[str]:
        """The unexpected publishers of single-writer ``topic`` the latest graph check found
        (:meth:`watch_single_writer`; empty: none, or not watched)."""
        return self._writers_seen.get(self.resolve_topic_name(topic), [])

    def shared_commands(self) -> str:
        """The single-writer topics the latest graph check found with other publishers, as text
        (empty: none): e.g. ``actuators/command also published by /intruder``."""
        return "; ".join(f"{t} also published by {', '.join(n)}" for t, n in self._writers_seen.items())

    def writer_count(self, topic: str) -> int:
        """The publishers of single-writer ``topic`` the latest graph check found (0: none, or not
        watched)."""
        return self._writer_counts.get(self.resolve_topic_name(topic), 0)

    def _other_writers(self) -> dict[str, list[str]]:
        """``{topic: [fully qualified names of the unexpected publishers]}`` (non-empty lists only)."""
        out = {}
        for topic, writer in self._single_writer.items():
            try:
                infos = self.get_publishers_info_by_topic(topic)
            except Exception:  # noqa: BLE001 - the graph is unavailable while shutting down
                continue
            self._writer_counts[topic] = len(infos)
            others = unexpected_writers([(i.node_namespace, i.node_name) for i in infos], writer)
            if others:
                out[topic] = others
        return out

    def _check_writers(self) -> None:
        others = self._other_writers()
        if others != self._writers_seen:
            self._writers_seen = others
            for topic, names in others.items():
                self.throttled.error(f"writers {topic}", f"{topic} has other publishers than "
                                     f"{self._single_writer[topic]!r}: {names}")
            self.publish_diagnostics()

    def _writers_status(self) -> DiagnosticStatus:
        others = self._writers_seen
        values = {t: ", ".join(n) for t, n in others.items()}
        if others:
            text = "; ".join(f"{t} also published by {', '.join(n)}" for t, n in others.items())
            return self.diagnostics.status("writers", Level.ERROR, f"more than one writer: {text}", values)
        return self.diagnostics.status("writers", Level.OK, "one writer per single-writer topic",
                                       {t: w for t, w in self._single_writer.items()})

    def publish_diagnostics(self) -> None:
        """Publish :meth:`diagnostic_statuses`; an exception there is reported as an ERROR status."""
        self._in_diagnostics = True
        try:
            statuses = self.diagnostic_statuses()
        except Exception as exc:  # noqa: BLE001 - a broken report must not kill the node
            self.throttled.error("diagnostics", f"diagnostic_statuses() failed: {exc!r}")
            statuses = [self.diagnostics.status("node", Level.ERROR, f"diagnostics failed: {exc}")]
        finally:
            self._in_diagnostics = False
        if self.report_process:
            statuses.append(self._process_status())
        if self._single_writer:
            statuses.append(self._writers_status())
        if self.input_faults.topics:
            statuses.append(self.diagnostics.status("inputs", *self.input_faults.summary()))
        self.diagnostics.publish(statuses)

    def _process_status(self) -> DiagnosticStatus:
        """CPU time of this process (every thread: executor, DDS, conversions, compute) per sample
        of this node since the last report, the sample rate and the CPU load [cores]."""
        cpu, wall, ticks = time.process_time(), time.monotonic(), self.tick_count
        cpu0, wall0, ticks0 = self._cpu_mark
        self._cpu_mark = (cpu, wall, ticks)
        n, span = ticks - ticks0, max(wall - wall0, 1e-9)
        values = {"cpu_ms_per_tick": 1e3 * (cpu - cpu0) / n if n else float("nan"),
                  "tick_rate_hz": n / span, "cpu_load": (cpu - cpu0) / span}
        return self.diagnostics.status("process", Level.OK, f"{n / span:.0f} samples/s", values)

    def on_shutdown(self) -> None:
        """Called once by :func:`run_nodes` before destruction, with the context still valid."""

    def log_events(self, component: Any) -> None:
        """Log the events a node component queued (throttled per cause; a new cause at once). An
        ERROR that was logged also publishes ``/diagnostics`` at once: a fault that clears before
        the next periodic report (a recalibration after a restart) is still seen."""
        urgent = False
        for event in component.drain_events():
            logged = self.throttled.log(LOG_LEVELS[event.level], event.key, event.message)
            urgent = urgent or (logged and int(event.level) >= 2)
        if urgent and not self._in_diagnostics:
            self.publish_diagnostics()

    def to_diagnostics(self, statuses: Sequence[Any]) -> list[DiagnosticStatus]:
        """A node component's plain statuses as ``DiagnosticStatus`` messages of this node."""
        return [self.diagnostics.status(s.name, int(s.level), s.message, s.values) for s in statuses]

    def check_parameter_overrides(self) -> None:
        """Raise ConfigError for a parameter given to this node (parameter file or ``-p``) that it
        does not declare: rclpy would silently ignore it (a misspelt key keeps the default)."""
        overrides = getattr(self, "_parameter_overrides", {})  # rclpy's overrides of this node
        unknown = sorted(n for n in overrides if not self.has_parameter(n))
        if not unknown:
            return
        declared = list(self.list_parameters([], 0).names)
        hints = {n: difflib.get_close_matches(n, declared, n=1) for n in unknown}
        text = ", ".join(
            f"{n!r}" + (f" (did you mean {h[0]!r}?)" if h else "") for n, h in hints.items()
        )
        raise ConfigError(f"node {self.get_name()!r}: unknown parameter(s) {text}")


NodeFactory = Callable[[], Node]


def _in_finaliser(frame: Any) -> bool:
    """Whether ``frame`` (where a signal arrived) runs a ``__del__`` or a weakref callback."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.endswith("weakref.py"):
            return True
        frame = frame.f_back
    return False


def run_nodes(
    factories: Sequence[NodeFactory],
    *,
    args: list[str] | None = None,
    executor: Executor | None = None,
) -> int:
    """Initialise rclpy, build the nodes, spin them until SIGINT/SIGTERM, shut down cleanly.

    Args:
        factories: callables returning nodes (node classes with default arguments work).
        args: command line (ROS arguments such as ``--ros-args -p rate_hz:=500.0``); None reads
            ``sys.argv``.
        executor: executor to use (default: :func:`default_executor`).

    Returns:
        The process exit code: 0 after a signal or an external shutdown, 2 after a ConfigError.
    """
    files = _parameter_files(sys.argv if args is None else args)
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    except RCLError as exc:  # e.g. a parameter file that is not valid YAML, or missing
        sys.stderr.write(f"[FATAL] [kangaroo_wbc]: configuration error: {exc}\n")
        return EXIT_CONFIG_ERROR
    exit_guard.prepare()  # compiled now, not when asked to stop
    exit_code = EXIT_OK  # what a stalled teardown exits with
    stop = threading.Event()
    building = [True]  # the nodes are being built: a signal aborts that (nothing ran yet)

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()
        # a node's construction (models, compiled kernels) may take many seconds: abort it, unless
        # the signal landed in a finaliser or a weakref callback, where Python would print the
        # exception as "ignored" and swallow it (the flag then stops the run once the nodes are built)
        if building[0] and not _in_finaliser(frame):
            raise KeyboardInterrupt

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    context = rclpy.get_default_context()
    nodes: list[Node] = []
    executor = executor or default_executor()
    factory: Any = None
    try:
        for factory in factories:
            nodes.append(factory())
        for node in nodes:
            if isinstance(node, KangarooNode):
                node.check_parameter_overrides()
        for node in nodes:
            executor.add_node(node)
        building[0] = False
        if stop.is_set():  # a signal the construction did not see (swallowed in compiled code)
            return EXIT_OK
        # everything built at start-up (models, compiled kernels, buffers) leaves the garbage
        # collector's passes: they then scan only what the callbacks allocate (shorter pauses)
        gc.collect()
        gc.freeze()
        while not stop.is_set() and context.ok():
            executor.spin_once(timeout_sec=SPIN_PERIOD_S)
        faulthandler.dump_traceback_later(SHUTDOWN_STACKS_AFTER_S)
        exit_guard.arm(SHUTDOWN_EXIT_AFTER_S, EXIT_OK)
        for node in nodes:
            if isinstance(node, KangarooNode):
                try:
                    node.on_shutdown()
                except Exception as exc:  # noqa: BLE001 - the other nodes still get theirs
                    node.get_logger().error(f"on_shutdown failed: {exc!r}")
        _flush_publishers(nodes, SHUTDOWN_FLUSH_S)
        return EXIT_OK
    except ConfigError as exc:
        name = getattr(factory, "__name__", "kangaroo_wbc")
        source = f" (parameter files: {files})" if files else ""
        rclpy.logging.get_logger(name).fatal(f"configuration error: {exc}{source}")
        exit_code = EXIT_CONFIG_ERROR
        return exit_code
    except (KeyboardInterrupt, ExternalShutdownException):
        return EXIT_OK
    finally:
        aborted, building[0] = building[0], False  # from here on a signal only sets the flag
        exit_guard.arm(SHUTDOWN_EXIT_AFTER_S, exit_code)
        executor.shutdown(timeout_sec=1.0)
        stop_publication_thread()  # what it queued is published; then the publishers may go
        for node in nodes:
            node.destroy_node()
        if context.ok():
            try:  # destroys the nodes still registered, a node built only in part among them
                context.try_shutdown()
            except Exception as exc:  # noqa: BLE001 - the process ends anyway; say it unless expected
                if not aborted:
                    sys.stderr.write(f"[WARN] [kangaroo_wbc]: shutdown: {exc!r}\n")
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        faulthandler.cancel_dump_traceback_later()
        exit_guard.disarm()


def default_executor() -> Executor:
    """rclpy's EventsExecutor where available (taking a 76-joint JointState costs about 130 µs of
    CPU with it against about 330 µs with the SingleThreadedExecutor), else the latter."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:  # older rclpy
        return SingleThreadedExecutor()
    return EventsExecutor()


def _parameter_files(args: Sequence[str]) -> list[str]:
    """The ``--params-file`` arguments of a command line."""
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--params-file"]


def _flush_publishers(nodes: list[Node], budget_s: float) -> None:
    """Wait (at most ``budget_s`` in all) until reliable subscribers acknowledged every message.

    The shutdown hooks publish last messages (zero force, a final diagnostic); without this wait the
    process may tear DDS down before they leave the machine.
    """
    deadline = time.monotonic() + budget_s
    for node in nodes:
        for publisher in node.publishers:
            remaining = deadline - time.monotonic()
            if remaining <= 0.0:
                node.get_logger().warning("shutdown: not every last message was acknowledged")
                return
            publisher.wait_for_all_acked(Duration(nanoseconds=int(remaining * 1e9)))


def main_for(node_cls: type[Node]) -> Callable[[list[str] | None], int]:
    """A console-script ``main(args=None) -> int`` that runs one node class."""

    def main(args: list[str] | None = None) -> int:
        return run_nodes([node_cls], args=args)

    main.__doc__ = f"Run {node_cls.__name__} until SIGINT/SIGTERM; return the exit code."
    return main


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run_nodes([lambda: KangarooNode("kangaroo_wbc_idle")]))
