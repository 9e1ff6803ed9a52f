"""Boundaries between the package's native samples and a robot backend's topics (no rclpy imports:
plain arrays in and out; the nodes move them to and from messages)."""
