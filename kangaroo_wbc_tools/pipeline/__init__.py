"""The whole loop without ROS (simulator → estimators → controller), metrics and reports."""
