"""scripts/build_interfaces.sh: the interface packages no wheel provides, built into the venv by
``make setup``. controller_manager_msgs has the fields of the Kilted distribution's package, which
the hand-over's request and the simulator's stand-in of the controller manager use
(docs/ros2_control.md); the script refuses a package it does not know."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "build_interfaces.sh"


def test_the_switch_service_has_the_kilted_fields():
    from controller_manager_msgs import srv

    req = srv.SwitchController.Request()
    assert (req.BEST_EFFORT, req.STRICT, req.AUTO, req.FORCE_AUTO) == (1, 2, 3, 4)
    assert req.get_fields_and_field_types() == {
        "activate_controllers": "sequence<string>", "deactivate_controllers": "sequence<string>",
        "strictness": "int32", "activate_asap": "boolean", "timeout": "builtin_interfaces/Duration"}
    assert srv.SwitchController.Response.get_fields_and_field_types() == {"ok": "boolean", "message": "string"}


def test_the_list_service_carries_the_controller_states():
    from controller_manager_msgs import msg, srv

    assert srv.ListControllers.Request.get_fields_and_field_types() == {}
    assert srv.ListControllers.Response.get_fields_and_field_types() == {
        "controller": "sequence<controller_manager_msgs/ControllerState>"}
    strings = "sequence<string>"
    assert msg.ControllerState.get_fields_and_field_types() == {
        "name": "string", "state": "string", "type": "string", "is_async": "boolean", "update_rate": "uint16",
        "claimed_interfaces": strings, "required_command_interfaces": strings,
        "required_state_interfaces": strings, "is_chainable": "boolean", "is_chained": "boolean",
        "exported_state_interfaces": strings, "reference_interfaces": strings,
        "chain_connections": "sequence<controller_manager_msgs/ChainConnection>"}
    assert msg.ChainConnection.get_fields_and_field_types() == {"name": "string", "reference_interfaces": strings}


def test_the_script_says_what_it_does():
    out = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "SwitchController" in out.stdout and "TFMessage" in out.stdout
    assert "Usage" in out.stdout


def test_an_unknown_or_missing_package_is_a_usage_error_naming_the_known_ones():
    for args in (["geometry_msgs"], [], ["--frobnicate", "tf2_msgs"]):
        out = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=30)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert "tf2_msgs" in out.stderr or "--help" in out.stderr, (args, out.stderr)


def test_a_package_already_built_is_left_alone():
    pytest.importorskip("tf2_msgs.msg", reason="tf2_msgs is not built in this environment")
    out = subprocess.run(["bash", str(SCRIPT), "tf2_msgs", sys.prefix], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "nothing to do" in out.stdout, out.stdout + out.stderr
