"""Unit test: the estimation core imports without ROS (STYLE rule 1)."""

from __future__ import annotations

import subprocess
import sys


def test_estimation_does_not_import_rclpy():
    code = ("import importlib, pkgutil, sys, kangaroo_wbc.estimation as e\n"
            "for m in pkgutil.iter_modules(e.__path__, e.__name__ + '.'):\n"
            "    importlib.import_module(m.name)\n"
            "assert 'rclpy' not in sys.modules, 'rclpy imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
