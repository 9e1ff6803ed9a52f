"""scripts/build_controller_manager_msgs.sh: sources other than the pinned ros2_control release are
refused before anything is built, and the built service has the fields the hand-over uses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "build_controller_manager_msgs.sh"


def test_other_sources_are_refused(tmp_path):
    pkg = tmp_path / "ros2_control" / "controller_manager_msgs"
    (pkg / "srv").mkdir(parents=True)
    (pkg / "package.xml").write_text("<package/>\n")
    (pkg / "srv" / "SwitchController.srv").write_text("string[] activate_controllers\n---\nbool ok\n")
    venv = Path(sys.prefix)
    out = subprocess.run(["bash", str(SCRIPT), "--force", "--source", str(pkg.parent), str(venv)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert out.returncode != 0
    assert "differ from ros2_control" in out.stdout and "not built" in out.stdout, out.stdout + out.stderr


def test_the_service_has_the_kilted_fields():
    srv = pytest.importorskip("controller_manager_msgs.srv", reason="controller_manager_msgs not built (make setup)")
    req = srv.SwitchController.Request()
    assert (req.BEST_EFFORT, req.STRICT, req.AUTO, req.FORCE_AUTO) == (1, 2, 3, 4)
    fields = req.get_fields_and_field_types()
    assert fields == {"activate_controllers": "sequence<string>", "deactivate_controllers": "sequence<string>",
                      "strictness": "int32", "activate_asap": "boolean", "timeout": "builtin_interfaces/Duration"}
    assert srv.SwitchController.Response.get_fields_and_field_types() == {"ok": "boolean", "message": "string"}
