"""kangaroo_wbc: closed-linkage modelling, estimation and whole-body control for the Kangaroo biped.

The library core (``model``, ``estimation``, ``control``, ``sim``, ``robots``) never imports rclpy;
ROS 2 adapters live in ``ros`` and ``nodes``.
"""

__version__ = "0.1.0"
