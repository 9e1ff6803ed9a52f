"""scripts/bench_interleaved.py: the interleaved comparison of two checkouts' component medians
refuses what is not a checkout before it starts a worker (the comparison itself is a measurement,
run by hand: docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_interleaved.py"


def test_a_folder_that_is_not_a_checkout_is_refused_with_a_usage_error(tmp_path):
    out = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "not a kangaroo_wbc checkout" in out.stderr, out.stderr


def test_no_other_checkout_is_a_usage_error():
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "name the other checkout" in out.stderr, out.stderr
