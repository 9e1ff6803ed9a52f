"""scripts/build_controller_manager_msgs.sh: the interfaces built into the venv (``make setup``) have
the fields of the Kilted distribution's controller_manager_msgs, which the hand-over's request and
the simulator's stand-in of the controller manager use (docs/ros2_control.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "build_controller_manager_msgs.sh"


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
    assert out.returncode == 0 and "SwitchController" in out.stdout and "Usage" in out.stdout
