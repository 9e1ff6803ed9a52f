"""ROS 2 nodes of kangaroo_wbc: thin adapters around the library (one file per node)."""
