"""Unit test: the estimation core imports without ROS (STYLE rule 1)."""

from __future__ import annotations

import subprocess
import sys


def test_estimation_does_not_import_rclpy():
    code = "import sys, kangaroo_wbc.estimation; assert 'rclpy' not in sys.modules, 'rclpy imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
