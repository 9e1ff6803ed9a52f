"""Under ``CI=true`` the suite accepts no skip but the launch stack's (test/conftest.py): a missing
fixture, generated file or dependency fails the run instead of silently skipping a test."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PROBE = """
import pytest

def test_generated_file_missing():
    pytest.skip("Kangaroo not generated")

def test_launch_stack_missing():
    pytest.skip("launch_ros is not installed (pip ROS wheels)")

def test_runs():
    pass
"""


@pytest.fixture
def probe(pytester):
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile(test_probe=PROBE)
    pytester.makepyfile(test_module_skip="import pytest\n"
                                         "pytest.importorskip('no_such_module_kw', reason='fixture missing')\n")
    return pytester


def test_ci_fails_unaccepted_skips(probe, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = probe.runpytest_inprocess("-q", "-p", "no:cacheprovider", "test_probe.py")
    result.assert_outcomes(passed=1, skipped=1, failed=1)
    result.stdout.fnmatch_lines(["*skipped under CI=true*Kangaroo not generated*"])
    result = probe.runpytest_inprocess("-q", "-p", "no:cacheprovider", "test_module_skip.py")
    result.assert_outcomes(errors=1)  # a module skipped at collection fails the run


def test_outside_ci_skips_stay_skips(probe, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = probe.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=3)
