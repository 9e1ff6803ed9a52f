"""Unit tests of :class:`~kangaroo_wbc.components.control.WholeBodyControl` (no ROS): the ready
handshake, the start-up behaviour delay, stale state, reference expiry and measured contacts."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.components.assembly import contact_specs
from kangaroo_wbc.components.control import ControlSettings, WholeBodyControl
from kangaroo_wbc.components.samples import Level
from kangaroo_wbc.control.supervisor import WbcSupervisor
from kangaroo_wbc.control.wbc import WbcSettings, WholeBodyController
from kangaroo_wbc.errors import InputError
from kangaroo_wbc.robots.kangaroo.robot import load_kangaroo, standing_configuration

DT = 1e-3


@pytest.fixture(scope="module")
def standing():
    """Unit fixture: the floating-base Kangaroo standing still."""
    clm = load_kangaroo(floating_base=True)
    return clm, standing_configuration(clm), np.zeros(clm.model.nv)


def _control(clm, **kw) -> WholeBodyControl:
    wbc = WholeBodyController(clm, contact_specs(clm), WbcSettings(base_frame="base_link"))
    return WholeBodyControl(WbcSupervisor(wbc), ControlSettings(**kw))


def test_ready_after_control_ticks_and_lost_when_the_state_stops(standing):
    clm, q, v = standing
    c = _control(clm, ready_ticks=5)
    for k in range(4):
        cmd = c.step(k * DT, q, v, 0.0)
        assert cmd.mode == "control" and np.all(np.isfinite(cmd.tau_a))
    assert not c.ready
    c.step(4 * DT, q, v, 0.0)
    assert c.ready and c.ready_since_s == pytest.approx(4 * DT)
    assert any(e.key == "ready" for e in c.drain_events())
    cmd = c.stale(0.6)  # the state stopped (restarted robot or estimator)
    assert cmd.mode == "safe" and not c.ready and np.all(cmd.tau_a == 0.0)
    assert any(e.level == Level.ERROR and "not ready" in e.message for e in c.drain_events())
    for k in range(5):
        c.step(1.0 + k * DT, q, v, 0.0)
    assert c.ready
    c.drain_events()
    c.step(1.1, q, v, float("inf"))  # once in control, a lost state is a fault
    assert [e.level for e in c.drain_events() if e.key.startswith("safe")] == [Level.ERROR]
    assert c.statuses()[0].level == Level.ERROR


def test_stale_or_inconsistent_state_is_a_finite_safe_command(standing):
    clm, q, v = standing
    c = _control(clm)
    cmd = c.step(0.0, q, v, float("inf"))
    assert cmd.mode == "safe" and "stale state" in cmd.reason and np.all(np.isfinite(cmd.tau_a))
    # before the first ready a missing state is waited for: a warning, not a fault
    assert [e.level for e in c.drain_events()] == [Level.WARN]
    assert c.statuses()[0].level == Level.WARN
    bad = q.copy()
    bad[10] = np.nan
    cmd = c.step(0.0, bad, v, 0.0)
    assert cmd.mode == "safe" and np.all(np.isfinite(cmd.tau_a))
    assert c.statuses()[0].level == Level.ERROR


def test_the_startup_behaviour_waits_for_ready_plus_the_delay(standing):
    clm, q, v = standing
    c = _control(clm, ready_ticks=2, behaviour_delay_s=0.01)
    c.select("sway", period_s=3.0)
    with pytest.raises(InputError):
        c.select("no_such_behaviour")
    assert c.behaviour_name == "sway"
    t = 0.0
    for _ in range(5):
        c.step(t, q, v, 0.0)
        t += DT
    assert c.ready and c.behaviour_started_s is None and c.supervisor.behaviour_name == "stand"
    for _ in range(10):
        c.step(t, q, v, 0.0)
        t += DT
    assert c.behaviour_started_s is not None and c.supervisor.behaviour_name == "sway"
    c.select("squat")  # after start-up: at the next tick
    c.step(t, q, v, 0.0)
    assert c.supervisor.behaviour_name == "squat"


def test_external_references_expire_and_contacts_follow_fresh_forces(standing):
    clm, q, v = standing
    c = _control(clm, reference_timeout_s=0.5)
    c.step(0.0, q, v, 0.0)
    com0 = c.supervisor.last_references.com_position.copy()
    target = com0 + np.array([0.0, 0.01, 0.0])
    c.set_com_reference(target, 0.0)
    speed = c.supervisor.governor.settings.com_speed_max_mps
    c.step(0.01, q, v, 0.0)  # rate-limited
    moved = c.supervisor.last_references.com_position - com0
    assert 0.0 < np.linalg.norm(moved) <= speed * 0.01 + 1e-12 and moved[1] > 0.0
    c.step(0.01 + 0.01 / speed, q, v, 0.0)
    np.testing.assert_allclose(c.supervisor.last_references.com_position, target)
    assert not [e for e in c.drain_events() if e.key.startswith("bounded")]  # within bounds: no warning
    c.set_com_reference(np.array([np.nan, 0.0, 0.0]), 0.3)  # ignored
    c.step(0.6, q, v, 0.0)  # the reference (set at 0.0, valid 0.5 s) expired: back towards the behaviour's own
    assert not np.allclose(c.supervisor.last_references.com_position, target)
    # fresh forces: the unloaded right sole is dropped from the behaviour's contacts
    c.on_sole_force(0, 500.0, 0.7)
    c.on_sole_force(1, 5.0, 0.7)
    c.step(0.7, q, v, 0.0)
    assert c.supervisor.last_references.active_contacts == ("left_sole",)
    # stale forces: the behaviour's contacts again
    c.step(1.0, q, v, 0.0)
    soles = {"left_sole", "right_sole"}
    assert set(c.supervisor.last_references.active_contacts or soles) == soles


def test_a_com_reference_outside_the_support_polygon_is_bounded_with_a_warning(standing):
    clm, q, v = standing
    c = _control(clm, reference_timeout_s=10.0)
    c.step(0.0, q, v, 0.0)
    com0 = c.supervisor.last_references.com_position.copy()
    c.set_com_reference(com0 + np.array([0.3, 0.0, -0.5]), 0.0)  # 0.3 m ahead, 0.5 m down
    for k in range(1, 400):
        c.step(0.01 * k, q, v, 0.0)
    ref = c.supervisor.last_references.com_position
    support = c.supervisor.support_points(None)
    g = c.supervisor.governor.settings
    centre = 0.5 * (support[:, 0].max() + support[:, 0].min())
    front = centre + g.com_polygon_scale * 0.5 * np.ptp(support[:, 0]) - g.com_margin_m
    assert com0[0] < ref[0] <= front + 1e-9  # forward, towards the request, up to the scaled polygon
    assert ref[2] >= com0[2] - 0.20 - 1e-9
    warned = [e for e in c.drain_events() if e.key.startswith("bounded")]
    assert warned and all(e.level == Level.WARN for e in warned)
    assert any("wbc/com_reference" in e.message and "support polygon" in e.message for e in warned)
    assert any("height" in e.message for e in warned)
    references = c.statuses()[1]
    assert references.name == "references" and references.level == Level.WARN
    assert "wbc/com_reference bounded: support polygon" in references.message
    assert c.statuses()[1].level == Level.OK  # nothing bounded since the last report


def test_wrenches_that_stop_are_a_warning_and_the_plan_takes_over(standing):
    clm, q, v = standing
    c = _control(clm, max_state_age_s=0.05)
    c.step(0.0, q, v, 0.0)  # no forces yet (start-up): nothing said
    assert not [e for e in c.drain_events() if e.key == "wrenches"]
    for k in range(5):
        t = 0.01 * (k + 1)
        c.on_sole_force(0, 300.0, t)
        c.on_sole_force(1, 300.0, t)
        c.step(t, q, v, 0.0)
    assert c.statuses()[0].values["contacts"] == "measured"
    c.step(0.2, q, v, 0.0)  # the wrench estimator stopped
    events = [e for e in c.drain_events() if e.key == "wrenches"]
    assert [e.level for e in events] == [Level.WARN] and "stale" in events[0].message
    status = c.statuses()[0]
    assert status.level == Level.WARN and status.values["contacts"] == "planned"
    assert set(c.supervisor.last_references.active_contacts) == {"left_sole", "right_sole"}
    c.on_sole_force(0, 300.0, 0.3)
    c.on_sole_force(1, 300.0, 0.3)
    c.step(0.3, q, v, 0.0)
    assert [e.level for e in c.drain_events() if e.key == "wrenches"] == [Level.OK]


def test_a_planned_touchdown_is_not_vetoed_by_the_unloaded_sole_at_once(standing):
    """A contact the behaviour has just planned (touchdown) is unloaded until the controller loads
    it: the measured forces may drop it only after TOUCHDOWN_GRACE_S; a contact planned all along
    and measured unloaded is dropped at once."""
    from kangaroo_wbc.control.behaviours import Stand
    from kangaroo_wbc.control.supervisor import TOUCHDOWN_GRACE_S

    clm, q, v = standing
    plan = {"contacts": ("left_sole",)}

    class Planned(Stand):
        def _references(self, tau):
            ref = super()._references(tau)
            ref.active_contacts = plan["contacts"]
            return ref

    wbc = WholeBodyController(clm, contact_specs(clm), WbcSettings(base_frame="base_link"))
    sv = WbcSupervisor(wbc, behaviour_factory=lambda name, **kw: Planned())
    sv.tick(0.0, q, v)
    plan["contacts"] = ("left_sole", "right_sole")  # touchdown of the right sole at t = 0.1
    sv.tick(0.1, q, v, measured_contacts=["left_sole"])
    assert set(sv.last_references.active_contacts) == {"left_sole", "right_sole"}
    sv.tick(0.1 + 0.9 * TOUCHDOWN_GRACE_S, q, v, measured_contacts=["left_sole"])
    assert set(sv.last_references.active_contacts) == {"left_sole", "right_sole"}
    sv.tick(0.1 + 1.1 * TOUCHDOWN_GRACE_S, q, v, measured_contacts=["left_sole"])  # still unloaded: dropped
    assert sv.last_references.active_contacts == ("left_sole",)
    sv.tick(0.2 + TOUCHDOWN_GRACE_S, q, v, measured_contacts=["left_sole", "right_sole"])
    assert set(sv.last_references.active_contacts) == {"left_sole", "right_sole"}


def test_velocity_command_reaches_the_walk_and_stops_it_when_stale(standing):
    clm, q, v = standing
    c = _control(clm, ready_ticks=1, behaviour_delay_s=0.0, cmd_vel_timeout_s=0.2)
    c.select("walk", cmd_vel=(0.1, 0.0, 0.0))
    c.step(0.0, q, v, 0.0)  # ready
    c.step(DT, q, v, 0.0)  # the walk starts with its own command
    walk = c.supervisor.behaviour
    assert walk.name == "walk"
    with pytest.raises(InputError, match="finite"):
        c.set_velocity_command(float("inf"), 0.0, 0.0, 0.0)
    c.set_velocity_command(0.3, 0.0, 0.2, 2 * DT)
    c.drain_events()
    for k in range(2, 100):
        c.step(k * DT, q, v, 0.0)
    # the topic's command (0.3, 0, 0.2), not the walk's own (0.1, 0, 0), at the gait's acceleration limits
    assert walk.velocity_command == pytest.approx([0.5 * 0.098, 0.0, 1.0 * 0.098], abs=2e-3)
    values = c.statuses()[0].values
    assert values["cmd_vel_source"] == "topic" and values["cmd_vel_stale"] is False
    for k in range(100, 1300):  # no new cmd_vel: after 0.2 s the walk is told to stop
        c.step(k * DT, q, v, 0.0)
    assert np.all(walk.velocity_command == 0.0)
    events = c.drain_events()
    assert [e.level for e in events if e.key == "cmd_vel"] == [Level.WARN]
    c.set_velocity_command(0.2, 0.0, 0.0, 1.3)
    c.step(1.3, q, v, 0.0)
    assert [e.level for e in c.drain_events() if e.key == "cmd_vel"] == [Level.OK]


def test_the_wbc_status_names_the_binding_limits(standing):
    """The ``wbc`` status carries the limits binding the last solution, as the controller names
    them: none while every stroke is mid-range; a stroke end placed where an actuator stands binds
    and is named."""
    from kangaroo_wbc.control.wbc import ActuatorLimits

    clm, q, v = standing
    c = _control(clm, ready_ticks=1)
    c.step(0.0, q, v, 0.0)
    assert c.statuses()[0].values["active_limits"] == "none"
    limits = ActuatorLimits.from_model(clm)
    name = "left_leg_length_actuator"
    k = clm.actuated_joint_names.index(name)
    limits.position_max[k] = q[clm.model.joints[clm.model.getJointId(name)].idx_q]  # at its end now
    wbc = WholeBodyController(clm, contact_specs(clm), WbcSettings(base_frame="base_link"), limits)
    c = WholeBodyControl(WbcSupervisor(wbc), ControlSettings(ready_ticks=1))
    c.step(0.0, q, v, 0.0)
    assert f"{name} upper" in wbc.active_limits()["actuator_stroke_limits"]
    assert f"{name} upper (actuator stroke)" in c.statuses()[0].values["active_limits"]


def test_a_clipped_or_refused_cmd_vel_is_a_warning_with_the_value_and_the_bound(standing):
    """Unit: cmd_vel beyond the walk's limits is clipped with a WARN naming the value and the limit
    in the ``references`` status; a non-finite one is refused (WARN, the command in use stays); a
    command within the limits says nothing."""
    clm, q, v = standing
    c = _control(clm, ready_ticks=1, behaviour_delay_s=0.0)
    c.select("walk", cmd_vel=(0.1, 0.0, 0.0))
    c.step(0.0, q, v, 0.0)
    c.step(DT, q, v, 0.0)
    walk = c.supervisor.behaviour
    limits = walk.command_limits
    c.set_velocity_command(0.5 * limits[0], 0.0, 0.0, 2 * DT)
    c.step(2 * DT, q, v, 0.0)
    assert c.statuses()[1].level == Level.OK  # within the limits
    c.set_velocity_command(100.0, 0.0, -50.0, 3 * DT)
    c.step(3 * DT, q, v, 0.0)
    references = c.statuses()[1]
    assert references.level == Level.WARN and "cmd_vel clipped" in references.message
    assert "[100, 0, -50]" in references.message  # the value
    assert f"±[{limits[0]:g}, {limits[1]:g}, {limits[2]:g}]" in references.message  # the bound
    assert any(e.level == Level.WARN and e.key == "clipped cmd_vel" for e in c.drain_events())
    with pytest.raises(InputError, match="finite"):
        c.set_velocity_command(float("nan"), 0.0, 0.0, 4 * DT)
    c.step(4 * DT, q, v, 0.0)
    references = c.statuses()[1]
    assert references.level == Level.WARN and "cmd_vel refused" in references.message
    assert "nan" in references.message and "the command in use stays" in references.message
    assert "cmd_vel clipped" in references.message  # the clipped command still in use


def test_a_cmd_vel_the_walk_refuses_is_a_warning_not_a_failed_tick(standing, monkeypatch):
    """Unit: the walk refusing a velocity command (its ``command`` raising InputError) leaves the
    tick whole (a control command, no exception) and says so in the ``references`` status."""
    clm, q, v = standing
    c = _control(clm, ready_ticks=1, behaviour_delay_s=0.0)
    c.select("walk", cmd_vel=(0.1, 0.0, 0.0))
    c.step(0.0, q, v, 0.0)
    c.step(DT, q, v, 0.0)
    walk = c.supervisor.behaviour

    def refuse(*_):
        raise InputError("the gait cannot take that now")

    monkeypatch.setattr(walk, "command", refuse)
    c.set_velocity_command(0.05, 0.0, 0.0, 2 * DT)
    cmd = c.step(2 * DT, q, v, 0.0)
    assert cmd.mode == "control" and np.all(np.isfinite(cmd.tau_a))
    references = c.statuses()[1]
    assert references.level == Level.WARN and "cmd_vel refused" in references.message
    assert "the gait cannot take that now" in references.message


def test_a_non_finite_com_reference_is_refused_with_a_warning(standing):
    clm, q, v = standing
    c = _control(clm)
    c.step(0.0, q, v, 0.0)
    c.set_com_reference(np.array([np.inf, 0.0, 0.8]), 0.0)
    c.refused("wbc/left_sole/pose_reference", "Quaternion: non-finite value")  # an adapter's refusal
    references = c.statuses()[1]
    assert references.level == Level.WARN
    assert "wbc/com_reference refused: [inf, 0.0, 0.8]" in references.message
    assert "wbc/left_sole/pose_reference refused: Quaternion" in references.message
    assert c.statuses()[1].level == Level.OK  # nothing since the last report
