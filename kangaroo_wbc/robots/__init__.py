"""Robot descriptions (generators and parameters) built on the robot-agnostic core."""
