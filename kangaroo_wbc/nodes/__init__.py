"""ROS 2 nodes of kangaroo_wbc: thin adapters around the components (one file per node)."""
