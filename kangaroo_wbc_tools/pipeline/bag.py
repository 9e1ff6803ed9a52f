"""Write a closed-loop run as a ROS 2 bag (MCAP storage, zstd-compressed chunks) without ROS.

Uses the ``rosbags`` package (the ROS 2 Kilted message definitions, CDR serialisation), so the bag
opens in ``ros2 bag info`` / ``ros2 bag play``, in Foxglove and in RViz (through ``ros2 bag play``).
Topics, types and rates: :mod:`kangaroo_wbc_tools.pipeline.bag_messages` and ``docs/interface.md``.

The bag is always closed: whatever stops the writing (an error, ``KeyboardInterrupt``), the MCAP
file gets its summary and footer and ``metadata.yaml`` is written before the exception goes on. A
SIGINT or SIGTERM that arrives while the bag is written (main thread) is held until the message
being written is complete; the writing then stops, the bag is closed, and the signal goes to the
handler that was installed before (Python's SIGINT handler raises ``KeyboardInterrupt``; the
default SIGTERM action ends the process).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kangaroo_wbc.errors import ConfigError, InputError
from kangaroo_wbc_tools.pipeline.bag_messages import (
    LATCHED_TOPICS,
    TF_RATE_HZ,
    BagMessage,
    RunTopics,
)

#: depth of the offered QoS of the streamed topics (``/tf``: tf2_ros' 100)
STREAM_DEPTH, TF_DEPTH = 10, 100
#: signals held while a message is written (then the writing stops and the bag is closed)
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def write_run_bag(path: Path, run, decimation: int = 1, *, tf_rate_hz: float = TF_RATE_HZ,
                  progress=None) -> BagCounts:
    """Write the logged run to ``path`` (a new folder); returns the message count per topic
    (:class:`BagCounts`: ``complete`` says whether a signal cut the writing short).

    Args:
        path: the bag folder (must not exist); holds ``<name>.mcap`` and ``metadata.yaml``.
        run: a :class:`~kangaroo_wbc_tools.pipeline.closed_loop.ClosedLoopRun`, finished or interrupted
            at any tick.
        decimation: record every N-th control tick (N ≥ 1) on the 1 kHz topics.
        tf_rate_hz: largest rate of ``/tf`` [Hz] on simulated time.
        progress: a display counting the messages written (:meth:`kangaroo_wbc.progress.Progress.count`);
            None: none.

    Raises:
        ConfigError: ``path`` exists.
        InputError: ``decimation`` < 1 or ``tf_rate_hz`` ≤ 0.
    """
    from rosbags.typesys import Stores, get_typestore

    path = Path(path)
    if path.exists():
        raise ConfigError(f"{path}: bag folder exists already; choose another --out folder")
    if int(decimation) < 1:
        raise InputError(f"bag decimation must be >= 1, got {decimation}")
    if not tf_rate_hz > 0.0:
        raise InputError(f"bag tf_rate_hz must be > 0, got {tf_rate_hz}")
    typestore = get_typestore(Stores.ROS2_KILTED)
    source = RunTopics(run, typestore, decimation=int(decimation), tf_rate_hz=tf_rate_hz)
    messages = source.messages()
    if progress is not None:
        messages = progress.count(messages, desc="writing bag", unit="messages")
    try:
        return write_messages(path, messages, typestore)
    finally:
        getattr(messages, "close", lambda: None)()


class BagCounts(dict):
    """Message count per topic of a bag written, and ``complete``: False when a signal ended the
    writing before the last message (the bag is closed and readable, and holds these messages)."""

    complete: bool = True


def write_messages(path: Path, messages: Iterator[BagMessage], typestore) -> BagCounts:
    """Write ``messages`` (in stamp order) to a new MCAP bag at ``path``, closing it whatever happens.

    Returns the message count per topic (:class:`BagCounts`).
    """
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer

    writer = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
    writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)  # zstd chunks inside the MCAP
    connections: dict = {}
    counts = BagCounts()
    with _signals_held() as interrupted:
        writer.open()
        try:
            for m in messages:
                if interrupted():
                    counts.complete = False
                    break
                if m.topic not in connections:
                    connections[m.topic] = writer.add_connection(m.topic, m.msgtype, typestore=typestore,
                                                                 offered_qos_profiles=[offered_qos(m.topic)])
                writer.write(connections[m.topic], m.stamp_ns, typestore.serialize_cdr(m.message, m.msgtype))
                counts[m.topic] = counts.get(m.topic, 0) + 1
        finally:
            writer.close()
    return counts


def offered_qos(topic: str):
    """The QoS a live publisher of ``topic`` offers (replayed by ``ros2 bag play``): reliable;
    transient local, depth 1 for the latched topics; depth 100 for ``/tf``, 10 otherwise."""
    from rosbags import interfaces as ri

    infinite = ri.QosTime(sec=9223372036, nsec=854775807)  # rmw's "infinite", as rosbag2 records a default
    latched = topic in LATCHED_TOPICS
    return ri.Qos(history=ri.QosHistory.KEEP_LAST,
                  depth=1 if latched else TF_DEPTH if topic == "/tf" else STREAM_DEPTH,
                  reliability=ri.QosReliability.RELIABLE,
                  durability=ri.QosDurability.TRANSIENT_LOCAL if latched else ri.QosDurability.VOLATILE,
                  deadline=infinite, lifespan=infinite, liveliness=ri.QosLiveliness.AUTOMATIC,
                  liveliness_lease_duration=infinite, avoid_ros_namespace_conventions=False)


@contextmanager
def _signals_held() -> Iterator[Callable[[], bool]]:
    """Hold SIGINT and SIGTERM during the block (main thread only); yields ``interrupted()``.

    On exit the previous handlers are restored and a signal that came is passed on to its previous
    handler (Python's SIGINT handler raises KeyboardInterrupt; the default SIGTERM action ends the
    process), after the bag is closed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    received: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum)) for s in HELD_SIGNALS}
    try:
        yield lambda: bool(received)
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
    for signum in dict.fromkeys(received):
        handler = previous[signal.Signals(signum)]
        if callable(handler):
            handler(signum, None)
        elif handler == signal.SIG_DFL or handler is None:
            signal.raise_signal(signum)
