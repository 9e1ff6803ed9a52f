"""Unit tests: the ``contact_wrench_estimator`` node's payload identification parameters
(``payload_identification`` and the identifier's configuration as ``payload_*``) are the core
configurations' fields, reach them by name and are checked as the identifier checks them. No rclpy
context: only the parameter dataclass and the configurations."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("rclpy", reason="rclpy is not importable (ROS 2 not sourced)")

from kangaroo_wbc.components import wrench_params as cw  # noqa: E402
from kangaroo_wbc.components.contact_wrench import ContactWrenchSettings  # noqa: E402
from kangaroo_wbc.estimation.payload_identification import PayloadIdentificationConfig  # noqa: E402


def test_every_identifier_field_is_a_payload_parameter_with_its_default():
    pairs = cw.PAYLOAD.pairs(cw.ContactWrenchParams)
    fields = [f.name for f in dataclasses.fields(PayloadIdentificationConfig)]
    assert pairs == {f: f"payload_{f}" for f in fields}
    defaults = cw.ContactWrenchParams()
    assert cw.PAYLOAD.build(defaults) == PayloadIdentificationConfig()
    assert defaults.payload_identification is False and cw.SETTINGS.build(defaults) == ContactWrenchSettings()


def test_changed_parameters_reach_the_identifier_and_the_component():
    p = dataclasses.replace(cw.ContactWrenchParams(), payload_identification=True, payload_block_samples=20,
                            payload_window_s=3.0, payload_max_mass_std_kg=0.3)
    cfg = cw.PAYLOAD.build(p)
    assert (cfg.block_samples, cfg.window_s, cfg.max_mass_std_kg) == (20, 3.0, 0.3)
    assert cfg.min_still_s == PayloadIdentificationConfig().min_still_s  # the rest: defaults
    assert cw.SETTINGS.build(p).payload_identification is True


@pytest.mark.parametrize(("change", "text"), [
    ({"payload_min_still_s": 3.0}, "must not exceed window_s"),  # more still time than the window holds
    ({"payload_window_s": 0.0}, "window_s must be finite and > 0"),
    ({"payload_max_mass_stderr_kg": 0.0}, "max_mass_stderr_kg must be finite and > 0"),
])
def test_values_the_identifier_refuses_are_refused_with_the_reason(change, text):
    """What :func:`~kangaroo_wbc.ros.params.declare_parameters` (a ConfigError at start-up) and the
    set-parameters check (the reason) report."""
    with pytest.raises(ValueError, match="payload_\\* parameters") as info:
        dataclasses.replace(cw.ContactWrenchParams(), **change)
    assert text in str(info.value)
