#!/usr/bin/env python3
"""CPU a subscriber process spends per 1 kHz sample: one trigger stream and four side streams.

A publisher process sends five ``geometry_msgs/WrenchStamped`` topics at 1 kHz (``t0`` the
trigger, ``t1``..``t4`` the side streams); the subscriber process, on rclpy's ``EventsExecutor``,
takes them in one of these ways and reports its process CPU time per trigger sample:

* ``trigger``: the trigger only (no side subscription);
* ``unread``: the side streams subscribed on a node no executor spins, never taken;
* ``executor``: the side streams served by the executor, typed messages;
* ``executor-raw``: the same, serialised bytes (no conversion into Python messages);
* ``polled``: the side streams on a node no executor spins, taken (typed) when a trigger arrives;
* ``polled-raw``: the same, serialised bytes.

Usage: ``python scripts/subscription_cost.py [--seconds 10] [--rounds 2] [MODE ...]`` (in the
project's environment: ``source scripts/env.sh``). Modes alternate round by round, so that a VM
whose speed drifts shows in every mode alike.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

MODES = ("trigger", "unread", "executor", "executor-raw", "polled", "polled-raw")
SIDE = 4


def publish(seconds: float) -> None:
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.node import Node
    from rclpy.qos import QoSProfile

    rclpy.init()
    node = Node("subscription_cost_publisher")
    pubs = [node.create_publisher(WrenchStamped, f"t{i}", QoSProfile(depth=10)) for i in range(SIDE + 1)]
    msg = WrenchStamped()
    start, k = time.monotonic(), 0
    while time.monotonic() - start < seconds:
        k += 1
        for pub in pubs:
            pub.publish(msg)
        pause = start + k * 1e-3 - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    node.destroy_node()
    rclpy.shutdown()


def subscribe(mode: str, seconds: float) -> tuple[int, int, float]:
    """``(trigger samples, side messages, CPU µs per trigger sample)`` over ``seconds``."""
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.experimental import EventsExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    rclpy.init()
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
    node = Node("subscription_cost_subscriber")
    count = [0, 0]
    raw = mode.endswith("-raw")
    side: list = []
    if mode in ("unread", "polled", "polled-raw"):
        helper = Node("subscription_cost_side", use_global_arguments=False, enable_rosout=False,
                      start_parameter_services=False,
                      parameter_overrides=[Parameter("start_type_description_service", value=False)])
        side = [helper.create_subscription(WrenchStamped, f"t{i}", lambda m: None, qos, raw=raw)
                for i in range(1, SIDE + 1)]
    elif mode.startswith("executor"):
        for i in range(1, SIDE + 1):
            node.create_subscription(WrenchStamped, f"t{i}", lambda m: count.__setitem__(1, count[1] + 1), qos,
                                     raw=raw)

    def on_trigger(_msg) -> None:
        count[0] += 1
        if not mode.startswith("polled"):
            return
        for sub in side:
            handle = sub.handle
            while True:
                with handle:
                    taken = handle.take_message(sub.msg_type, sub.raw)
                if taken is None:
                    break
                count[1] += 1

    node.create_subscription(WrenchStamped, "t0", on_trigger, qos)
    executor = EventsExecutor()
    executor.add_node(node)
    warm_up = time.monotonic() + 2.0
    while time.monotonic() < warm_up:
        executor.spin_once(timeout_sec=0.1)
    cpu0, wall0, before = time.process_time(), time.monotonic(), list(count)
    while time.monotonic() < wall0 + seconds:
        executor.spin_once(timeout_sec=0.1)
    cpu = time.process_time() - cpu0
    triggers, sides = count[0] - before[0], count[1] - before[1]
    rclpy.shutdown()
    return triggers, sides, cpu / max(triggers, 1) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modes", nargs="*", default=list(MODES), metavar="MODE",
                        help=f"one or more of {', '.join(MODES)} (default: all)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per run (default 10)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the modes (default 2)")
    parser.add_argument("--role", choices=("publisher", "subscriber"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    args = parser.parse_args()
    unknown = [m for m in args.modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode(s) {', '.join(unknown)}; choose from {', '.join(MODES)}")
    if args.role == "publisher":
        publish(args.seconds)
        return 0
    if args.role == "subscriber":
        triggers, sides, us = subscribe(args.mode, args.seconds)
        print(f"{args.mode:13s} trigger samples {triggers:6d}  side messages {sides:6d}  "
              f"CPU per trigger sample {us:6.1f} µs", flush=True)
        return 0
    me = os.path.abspath(__file__)
    for _ in range(args.rounds):
        for mode in args.modes:
            pub = subprocess.Popen([sys.executable, me, "--role", "publisher", "--seconds", str(args.seconds + 4.0)])
            try:
                subprocess.run([sys.executable, me, "--role", "subscriber", "--mode", mode,
                                "--seconds", str(args.seconds)], check=True)
            finally:
                pub.wait(timeout=args.seconds + 30.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
