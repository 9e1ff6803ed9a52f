"""Write a closed-loop run as a ROS 2 bag (MCAP storage) without a ROS installation.

Uses the ``rosbags`` package (standard message definitions, CDR serialisation), so the bag opens in
``ros2 bag info`` / ``ros2 bag play`` and in Foxglove. Topic names follow ``docs/interface.md``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kangaroo_wbc.errors import ConfigError


def write_run_bag(path: Path, run, decimation: int = 1) -> dict[str, int]:
    """Write the logged run to ``path`` (a new folder). Returns message counts per topic."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    if path.exists():
        raise ConfigError(f"{path}: bag folder exists already; choose another --out folder")
    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    Time = T["builtin_interfaces/msg/Time"]
    Header = T["std_msgs/msg/Header"]
    Vector3 = T["geometry_msgs/msg/Vector3"]
    Point = T["geometry_msgs/msg/Point"]
    Wrench = T["geometry_msgs/msg/Wrench"]
    WrenchStamped = T["geometry_msgs/msg/WrenchStamped"]
    PointStamped = T["geometry_msgs/msg/PointStamped"]
    JointState = T["sensor_msgs/msg/JointState"]

    def header(t: float, frame: str):
        sec = int(np.floor(t))
        return Header(stamp=Time(sec=sec, nanosec=int(round((t - sec) * 1e9)) % 1_000_000_000), frame_id=frame)

    log = run.log
    t = log.array("t")
    counts: dict[str, int] = {}
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        conns = {}

        def conn(topic: str, msgtype: str):
            if topic not in conns:
                conns[topic] = writer.add_connection(topic, msgtype, typestore=ts)
            return conns[topic]

        def put(topic: str, msgtype: str, msg, stamp: float) -> None:
            writer.write(conn(topic, msgtype), int(stamp * 1e9), ts.serialize_cdr(msg, msgtype))
            counts[topic] = counts.get(topic, 0) + 1

        names = run.clm.actuated_joint_names
        tau = log.array("tau")
        fz_est, fz_true = log.array("fz_est"), log.array("fz_true")
        zmp_est, zmp_true = log.array("zmp_est"), log.array("zmp_true")
        com_true, com_ref = log.array("com_true"), log.array("com_ref")
        for k in range(0, len(t), decimation):
            tk = float(t[k])
            put("actuators/command", "sensor_msgs/msg/JointState",
                JointState(header=header(tk, ""), name=list(names), position=np.zeros(0), velocity=np.zeros(0),
                           effort=np.asarray(tau[k], float)), tk)
            for i, sole in enumerate(run.soles):
                for topic, fz in ((f"contact/{sole}/wrench", fz_est), (f"sim/ground_truth/{sole}/wrench", fz_true)):
                    put(topic, "geometry_msgs/msg/WrenchStamped",
                        WrenchStamped(header=header(tk, "odom"),
                                      wrench=Wrench(force=Vector3(x=0.0, y=0.0, z=float(fz[k, i])),
                                                    torque=Vector3(x=0.0, y=0.0, z=0.0))), tk)
            for topic, arr in (("zmp", zmp_est), ("sim/ground_truth/zmp", zmp_true), ("wbc/com", com_true),
                               ("wbc/com_reference", com_ref)):
                if np.all(np.isfinite(arr[k])):
                    put(topic, "geometry_msgs/msg/PointStamped",
                        PointStamped(header=header(tk, "odom"),
                                     point=Point(x=float(arr[k, 0]), y=float(arr[k, 1]), z=float(arr[k, 2]))), tk)
    return counts
