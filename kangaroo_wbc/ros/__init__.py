"""ROS 2 adapters of kangaroo_wbc: message ↔ array conversions, parameters, QoS, TF, diagnostics.

Everything that knows about ROS message conventions lives here, so that the library core
(``model``, ``estimation``, ``control``, ``sim``) never imports rclpy and nodes stay thin.
Importing this package imports nothing heavy; import the submodules you need.
"""
