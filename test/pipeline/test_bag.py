"""Integration tests of the run bag (:mod:`kangaroo_wbc_tools.pipeline.bag`): what Foxglove and RViz need
to replay a closed-loop run as a robot, read back with rosbags' reader and with the ``mcap`` package's,
and a bag that is closed whatever stops its writing.
"""

from __future__ import annotations

import math
import os
import signal

import numpy as np
import pinocchio as pin
import pytest

from kangaroo_wbc.errors import ConfigError, InputError
from kangaroo_wbc_tools.pipeline import bag_messages
from kangaroo_wbc_tools.pipeline.bag import write_run_bag
from kangaroo_wbc_tools.pipeline.closed_loop import ClosedLoopRun, LoopConfig

ROBOT_TOPICS = {"/joint_states", "/tf", "/tf_static", "/robot_description", "/sim/ground_truth/joint_states",
                "/estimation/base_odometry", "/sim/ground_truth/base_odometry", "/actuators/state",
                "/actuators/command", "/imu/data", "/contact/left_sole/wrench", "/contact/right_sole/wrench",
                "/sim/ground_truth/left_sole/wrench", "/diagnostics"}
EPOCH_2020_NS = 1.6e18  # any stamp on the system clock is later than this
DECIMATION = 2
FK_TOLERANCE_M = 1e-9


@pytest.fixture(scope="module")
def stand_run():
    """Integration fixture: 1.2 s of standing after boot (seeded), the components chained in this process."""
    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=1.2, seed=1))
    run.run()
    return run


@pytest.fixture(scope="module")
def stand_bag(stand_run, tmp_path_factory):
    """Integration fixture: the run's bag (every 2nd tick, /tf at 100 Hz) and its counts per topic."""
    path = tmp_path_factory.mktemp("bag") / "bag"
    return path, write_run_bag(path, stand_run, decimation=DECIMATION)


@pytest.fixture(scope="module")
def typestore():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_KILTED)


def _read(path, typestore, topics):
    """``{topic: [(log time [ns], message)]}`` of ``topics``."""
    from rosbags.rosbag2 import Reader

    out = {t: [] for t in topics}
    with Reader(path) as reader:
        conns = [c for c in reader.connections if c.topic in topics]
        for c, stamp, raw in reader.messages(connections=conns):
            out[c.topic].append((stamp, typestore.deserialize_cdr(raw, c.msgtype)))
    return out


def _stamp_ns(header) -> int:
    return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec


def test_bag_holds_the_robot_topics_with_plausible_counts(stand_run, stand_bag):
    from rosbags.rosbag2 import Reader

    path, counts = stand_bag
    assert (path / "metadata.yaml").is_file()
    with Reader(path) as reader:
        topics = {c.topic: c for c in reader.connections}
        assert ROBOT_TOPICS <= set(topics)
        assert all(t.startswith("/") for t in topics)
        assert reader.message_count == sum(counts.values())
        assert reader.start_time > EPOCH_2020_NS
    ticks = math.ceil(len(stand_run.log.array("t")) / DECIMATION)
    assert counts["/joint_states"] == counts["/sim/ground_truth/joint_states"] == ticks
    assert counts["/robot_description"] == counts["/tf_static"] == 1
    logged_s = np.ptp(stand_run.log.array("t"))
    assert abs(counts["/tf"] - (100.0 * logged_s + 1)) <= 2  # 100 Hz on simulated time
    assert counts["/diagnostics"] == len(stand_run.status_log) >= 1


def test_stamps_are_the_runs_wall_clock_start_plus_simulated_time(stand_run, stand_bag, typestore):
    path, _ = stand_bag
    msgs = _read(path, typestore, {"/joint_states", "/robot_description"})
    t = stand_run.log.array("t")[::DECIMATION]
    epoch_ns = round(stand_run.wall_start_epoch_s * 1e9)
    stamps = np.array([_stamp_ns(m.header) for _, m in msgs["/joint_states"]])
    assert stamps[0] > EPOCH_2020_NS
    np.testing.assert_array_equal(stamps, epoch_ns + np.round(t * 1e9).astype(np.int64))
    assert [log for log, _ in msgs["/joint_states"]] == list(stamps)  # log time = header stamp
    assert msgs["/robot_description"][0][0] == epoch_ns  # latched at the boot
    assert "<robot" in msgs["/robot_description"][0][1].data


def test_every_link_of_the_model_is_a_child_frame_in_tf(stand_run, stand_bag, typestore):
    path, _ = stand_bag
    urdf_text = bag_messages.run_urdf_text(stand_run)
    model = pin.buildModelFromXML(urdf_text)
    links = {f.name for f in model.frames if f.type == pin.FrameType.BODY}
    msgs = _read(path, typestore, {"/tf", "/tf_static"})
    children = {tf.child_frame_id for topic in msgs.values() for _, m in topic for tf in m.transforms}
    assert links <= children
    assert {"ground_truth/" + link for link in links} <= children  # the simulator's truth, as a ghost
    assert len(links) > 100


def test_tf_chain_reproduces_the_forward_kinematics_of_the_estimate(stand_run, stand_bag, typestore):
    """Composing /tf and /tf_static from odom to each sole gives pinocchio's placement of the sole
    at the configuration the estimator logged at that stamp (the last /tf message)."""
    path, _ = stand_bag
    msgs = _read(path, typestore, {"/tf", "/tf_static"})
    stamp, last = msgs["/tf"][-1]
    edges = {tf.child_frame_id: tf for _, m in msgs["/tf_static"] for tf in m.transforms}
    edges.update({tf.child_frame_id: tf for tf in last.transforms})

    def world(frame: str) -> pin.SE3:
        if frame == "odom":
            return pin.SE3.Identity()
        tf = edges[frame]
        r, p = tf.transform.rotation, tf.transform.translation
        local = pin.XYZQUATToSE3(np.array([p.x, p.y, p.z, r.x, r.y, r.z, r.w]))
        return world(tf.header.frame_id) * local

    t = stand_run.log.array("t")
    k = int(np.argmin(np.abs(stand_run.wall_start_epoch_s * 1e9 + t * 1e9 - stamp)))
    model = stand_run.clm.model
    data = model.createData()
    pin.framesForwardKinematics(model, data, stand_run.log.array("q_est")[k])
    for sole in stand_run.soles:
        expected = data.oMf[model.getFrameId(sole)]
        got = world(sole)
        assert np.allclose(got.translation, expected.translation, atol=FK_TOLERANCE_M)
        assert np.allclose(got.rotation, expected.rotation, atol=FK_TOLERANCE_M)


def test_joint_states_carry_every_joint_by_name(stand_run, stand_bag, typestore):
    path, _ = stand_bag
    _, msg = _read(path, typestore, {"/joint_states"})["/joint_states"][-1]
    model = stand_run.clm.model
    assert len(msg.name) == len(set(msg.name)) == 76
    q = stand_run.log.array("q_est")[::DECIMATION][-1]
    for name, position in zip(msg.name, msg.position, strict=True):
        assert position == q[model.joints[model.getJointId(name)].idx_q]


def test_latched_topics_offer_transient_local_qos(stand_bag):
    from rosbags.interfaces import QosDurability
    from rosbags.rosbag2 import Reader

    path, _ = stand_bag
    with Reader(path) as reader:
        durability = {c.topic: c.ext.offered_qos_profiles[0].durability for c in reader.connections}
    for topic in ("/robot_description", "/tf_static"):
        assert durability[topic] == QosDurability.TRANSIENT_LOCAL
    assert durability["/tf"] == durability["/joint_states"] == QosDurability.VOLATILE


def test_mcap_reader_reads_the_bag_with_zstd_chunks_and_a_summary(stand_bag):
    from mcap.reader import make_reader

    path, counts = stand_bag
    with open(path / f"{path.name}.mcap", "rb") as f:
        reader = make_reader(f)
        assert reader.get_header().profile == "ros2"
        summary = reader.get_summary()
        assert summary is not None and summary.statistics.message_count == sum(counts.values())
        assert {c.compression for c in summary.chunk_indexes} == {"zstd"}
        topics = {c.topic for c in summary.channels.values()}
        assert ROBOT_TOPICS <= topics
        schema = {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values()}
        assert schema["/tf"] == "tf2_msgs/msg/TFMessage" and schema["/robot_description"] == "std_msgs/msg/String"
        n_tf = sum(1 for _ in reader.iter_messages(topics=["/tf"]))
    assert n_tf == counts["/tf"]


class Terminated(BaseException):
    """What a command's SIGTERM handler raises in the test."""


def test_messages_decode_from_the_schemas_stored_in_the_mcap_file(stand_run, stand_bag):
    """A reader that knows no message types (Foxglove, ``mcap_ros2``) decodes every message from
    the schema text in the file; the values are the run's."""
    mcap_ros2 = pytest.importorskip("mcap_ros2.decoder", reason="mcap-ros2-support not installed")
    from mcap.reader import make_reader

    path, counts = stand_bag
    seen: dict[str, int] = {}
    with open(path / f"{path.name}.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[mcap_ros2.DecoderFactory()])
        for _, channel, _, msg in reader.iter_decoded_messages():
            seen[channel.topic] = seen.get(channel.topic, 0) + 1
            if channel.topic == "/joint_states" and seen[channel.topic] == 1:
                first_joint_states = msg
            if channel.topic == "/robot_description":
                assert msg.data.lstrip().startswith("<")
    assert seen == counts
    q0 = stand_run.log.array("q_est")[0]
    model = stand_run.clm.model
    assert [p for p in first_joint_states.position] == [q0[model.joints[model.getJointId(n)].idx_q]
                                                        for n in first_joint_states.name]


def _sources_interrupted(monkeypatch, after: int, how: str):
    """Make the run's message source stop after ``after`` messages: raise KeyboardInterrupt, or
    send this process a real SIGINT or SIGTERM."""
    original = bag_messages.RunTopics.messages

    def interrupted(self):
        for i, m in enumerate(original(self)):
            if i == after:
                if how == "raise":
                    raise KeyboardInterrupt
                os.kill(os.getpid(), signal.SIGINT if how == "sigint" else signal.SIGTERM)
            yield m

    monkeypatch.setattr(bag_messages.RunTopics, "messages", interrupted)


@pytest.mark.parametrize("how", ["raise", "sigint", "sigterm"])
def test_an_interrupted_writer_still_closes_the_bag(stand_run, tmp_path, monkeypatch, how):
    """KeyboardInterrupt from the message source, or a SIGINT / SIGTERM while writing: the bag is
    closed (MCAP summary and footer, metadata.yaml) and holds the messages written before; the
    signal goes on to the caller's handler (KeyboardInterrupt; here a SIGTERM handler that raises),
    which is installed again."""
    from mcap.reader import make_reader
    from rosbags.rosbag2 import Reader

    def on_sigterm(signum, frame):
        raise Terminated

    # known handlers for both signals: whatever an earlier test left in this process (rclpy's own
    # handlers once a context was initialised) must not decide what the signal does here
    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
                signal.SIGTERM: signal.signal(signal.SIGTERM, on_sigterm)}
    try:
        handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        _sources_interrupted(monkeypatch, after=300, how=how)
        path = tmp_path / "bag"
        with pytest.raises(Terminated if how == "sigterm" else KeyboardInterrupt):
            write_run_bag(path, stand_run)
        assert {s: signal.getsignal(s) for s in handlers} == handlers
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
    assert (path / "metadata.yaml").is_file()
    with Reader(path) as reader:
        assert reader.message_count == 300 == sum(1 for _ in reader.messages())
    with open(path / "bag.mcap", "rb") as f:
        assert make_reader(f).get_summary().statistics.message_count == 300


def test_a_signal_the_caller_only_records_gives_counts_that_say_the_bag_is_cut_short(
        stand_run, tmp_path, monkeypatch):
    """A SIGINT while writing, whose handler (the CLI's StopSignals) only records it: the bag is
    closed after the messages written so far, the counts are those messages and say ``complete``
    False; without a signal ``complete`` is True."""
    from kangaroo_wbc.progress import Progress
    from kangaroo_wbc_tools.cli.common import StopSignals

    counts = write_run_bag(tmp_path / "whole", stand_run, progress=Progress("off"))
    assert counts.complete is True
    _sources_interrupted(monkeypatch, after=300, how="sigint")
    with StopSignals(announce=False, phase="writing bag") as stop:
        counts = write_run_bag(tmp_path / "cut", stand_run)
    assert stop.phase_at_signal == "writing bag"
    assert counts.complete is False and sum(counts.values()) == 300


def test_a_run_interrupted_at_any_tick_gives_a_readable_bag(tmp_path):
    """Before the first estimate (on the crane, calibrating), just after it, and with a log row
    cut short (an interrupt inside the recording): the bag holds what was recorded."""
    from rosbags.rosbag2 import Reader

    run = ClosedLoopRun(LoopConfig(behaviour="stand", duration_s=1.0, seed=2))
    run.start()
    for n_ticks in (0, 60, 450):
        while round(run.robot.time / run.dt) < n_ticks:
            run.tick()
        run.finish()
        logged = len(run.log.array("t"))
        if n_ticks == 450:
            run.log.rows["t"].append(run.robot.time)  # a row recorded only in part
        path = tmp_path / f"bag_{n_ticks}"
        counts = write_run_bag(path, run)
        with Reader(path) as reader:
            assert reader.message_count == sum(counts.values())
        assert counts["/robot_description"] == counts["/tf_static"] == 1
        assert counts.get("/joint_states", 0) == logged
        assert (logged > 0) == (n_ticks == 450)


def test_existing_folder_and_bad_arguments_are_refused(stand_run, tmp_path):
    with pytest.raises(ConfigError, match="exists"):
        write_run_bag(tmp_path, stand_run)
    with pytest.raises(InputError, match="decimation"):
        write_run_bag(tmp_path / "a", stand_run, decimation=0)
    with pytest.raises(InputError, match="tf_rate_hz"):
        write_run_bag(tmp_path / "b", stand_run, tf_rate_hz=0.0)


def test_bag_and_report_need_no_ros():
    """Writing the bag and the figures imports no ROS client library (the core never does)."""
    import subprocess
    import sys

    code = ("import sys; import kangaroo_wbc_tools.pipeline.bag, kangaroo_wbc_tools.pipeline.report; "
            "from rosbags.typesys import Stores, get_typestore; get_typestore(Stores.ROS2_KILTED); "
            "assert 'rclpy' not in sys.modules, 'rclpy imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
