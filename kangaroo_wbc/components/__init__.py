"""Node components: each ROS node's whole behaviour as a plain-Python class (no rclpy).

A component takes plain samples (:mod:`kangaroo_wbc.components.samples`) and returns plain outputs,
events to log and diagnostics. The ROS 2 nodes (:mod:`kangaroo_wbc.nodes`) are thin adapters around
them (messages ↔ arrays, parameters, timers); the composed deployment, the one-process demo, the
soak and the benchmark chain the same components.
"""
