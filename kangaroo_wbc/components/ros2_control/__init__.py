"""The ros2_control backend without ROS: the boundary between the standard broadcasters' and effort
controllers' arrays and the native samples (:mod:`.boundary`), the simulated robot as a
ros2_control system (:mod:`.system`), the hand-over gate (:mod:`.hand_over`), the in-process link
of the one-process loop (:mod:`.link`) and the nodes' parameters (:mod:`.settings`). See
``docs/ros2_control.md``."""
