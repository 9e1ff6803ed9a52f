"""Mechanism analysis (Kangaroo paper Sections IV-V): singularities, joint-limit shapes,
manipulability, transmission, and Table III against TALOS. No ROS imports."""
