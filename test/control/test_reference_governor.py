"""Reference governor: geometry helpers against brute force, bounds and rate limits."""

from __future__ import annotations

import numpy as np
import pytest

from kangaroo_wbc.control.reference_governor import (
    GovernorSettings,
    ReferenceGovernor,
    convex_hull_2d,
    project_to_polygon,
    shrink_polygon,
)
from kangaroo_wbc.errors import InputError

# two soles 0.2 m long and 0.1 m wide, 0.2 m apart (centre to centre)
SOLES = np.array([[x, y] for cy in (-0.1, 0.1) for x in (-0.1, 0.1) for y in (cy - 0.05, cy + 0.05)])


def test_hull_shrink_and_projection_against_brute_force():
    hull = convex_hull_2d(SOLES)
    np.testing.assert_allclose(sorted(map(tuple, hull)), sorted([(-0.1, -0.15), (0.1, -0.15), (0.1, 0.15),
                                                                (-0.1, 0.15)]), atol=1e-12)
    region = shrink_polygon(hull, 0.03)
    np.testing.assert_allclose(sorted(map(tuple, region)), sorted([(-0.07, -0.12), (0.07, -0.12), (0.07, 0.12),
                                                                 (-0.07, 0.12)]), atol=1e-12)
    assert shrink_polygon(hull, 0.2) is None  # nothing left
    rng = np.random.default_rng(0)
    # brute force: the nearest of many points sampled in the region
    xs, ys = np.meshgrid(np.linspace(-0.07, 0.07, 141), np.linspace(-0.12, 0.12, 241))
    grid = np.stack([xs.ravel(), ys.ravel()], axis=1)
    for point in rng.uniform(-0.5, 0.5, (20, 2)):
        projected = project_to_polygon(point, region)
        best = grid[np.argmin(np.linalg.norm(grid - point, axis=1))]
        assert np.linalg.norm(projected - point) <= np.linalg.norm(best - point) + 1e-9
        assert abs(np.linalg.norm(projected - best)) < 2e-3
    inside = np.array([0.01, -0.02])
    np.testing.assert_array_equal(project_to_polygon(inside, region), inside)


def test_com_reference_is_bounded_then_ramped_and_handed_back():
    g = ReferenceGovernor(GovernorSettings(com_polygon_scale=1.0, com_margin_m=0.03, com_speed_max_mps=0.1))
    own = np.array([0.0, 0.0, 0.75])
    assert g.com(0.0, own, None, SOLES) is None and g.idle  # nothing external: the behaviour's own
    far = np.array([0.3, 0.0, 0.70])
    p, v = g.com(0.01, own, far, SOLES)
    assert np.linalg.norm(p - own) == pytest.approx(0.001) and np.linalg.norm(v) == pytest.approx(0.1)
    assert "wbc/com_reference" in g.bounded and "support polygon" in g.bounded["wbc/com_reference"]
    for k in range(2, 200):
        p, v = g.com(0.01 * k, own, far, SOLES)
    np.testing.assert_allclose(p, [0.07, 0.0, 0.70], atol=1e-12)  # the front edge less the margin
    # the reference expires: back to the behaviour's own at the same speed, then handed back
    p1, _ = g.com(2.0, own, None, SOLES)
    assert np.linalg.norm(p1 - p) == pytest.approx(0.001) and not g.idle
    result = None
    for k in range(1, 200):
        result = g.com(2.0 + 0.01 * k, own, None, SOLES)
        if result is None:
            break
    assert result is None and g.idle


def test_com_height_and_foot_bounds():
    g = ReferenceGovernor(GovernorSettings(com_drop_max_m=0.2, com_rise_max_m=0.02, foot_reach_m=0.15,
                                           foot_speed_max_mps=1e3))
    own = np.array([0.0, 0.0, 0.75])
    g.com(0.0, own, None, SOLES)  # records the standing height
    g.com(0.001, own, np.array([0.0, 0.0, 1.5]), SOLES)
    assert "wbc/com_reference height" in g.bounded
    foot = np.array([0.0, 0.1, 0.05])
    g.foot("left", 0.5, foot, None, floor_z=0.0)  # a tick without an external reference
    p = g.foot("left", 1.0, foot, np.array([0.0, 0.1, -0.3]), floor_z=0.0)
    assert p[2] == pytest.approx(0.0) and np.linalg.norm(p - foot) <= 0.15 + 1e-12
    assert "wbc/left/pose_reference height" in g.bounded
    p = g.foot("left", 2.0, foot, np.array([0.5, 0.1, 0.05]), floor_z=0.0)
    np.testing.assert_allclose(p, [0.15, 0.1, 0.05])
    tilted = g.foot_rotation("left", np.eye(3), np.array([[1, 0, 0], [0, -1, 0], [0, 0, -1.0]]))
    angle = np.degrees(np.arccos((np.trace(tilted) - 1) / 2))
    assert angle == pytest.approx(np.degrees(0.35))


def test_bad_settings_are_refused():
    with pytest.raises(InputError):
        GovernorSettings(com_margin_m=float("nan"))
    with pytest.raises(InputError):
        GovernorSettings(com_speed_max_mps=0.0)


def test_the_default_region_is_the_scaled_polygon_less_the_margin():
    s = GovernorSettings()
    g = ReferenceGovernor(s)
    own = np.array([0.0, 0.0, 0.75])
    g.com(0.0, own, None, SOLES)
    g.com(0.001, own, np.array([1.0, 1.0, 0.75]), SOLES)
    bound = g.bounded["wbc/com_reference"]
    corner = (s.com_polygon_scale * 0.1 - s.com_margin_m, s.com_polygon_scale * 0.15 - s.com_margin_m)
    assert f"-> ({corner[0]:.3f}, {corner[1]:.3f}) m" in bound


def test_an_actuator_near_its_stroke_end_holds_then_retreats_the_reference():
    g = ReferenceGovernor(GovernorSettings(com_polygon_scale=1.0, com_speed_max_mps=0.1))
    own = np.array([0.0, 0.0, 0.75])
    far = np.array([0.05, 0.0, 0.75])
    g.com(0.0, own, None, SOLES)
    p1, _ = g.com(0.1, own, far, SOLES, ("a", 0.01))
    p2, _ = g.com(0.2, own, far, SOLES, ("a", 0.003))  # within stroke_hold_m: holds
    np.testing.assert_allclose(p2, p1)
    assert "holds" in g.bounded["wbc/com_reference strokes"]
    p3, _ = g.com(0.3, own, far, SOLES, ("a", 0.001))  # within stroke_retreat_m: moves back
    assert p3[0] < p2[0] and "moves back" in g.bounded["wbc/com_reference strokes"]


def test_hull_drops_corners_collinear_up_to_rounding():
    """Two soles side by side: corners on one line up to rounding noise are not hull vertices
    (they once biased the region's centre)."""
    rng = np.random.default_rng(1)
    noisy = SOLES + rng.normal(0.0, 1e-15, SOLES.shape)
    hull = convex_hull_2d(noisy)
    assert len(hull) == 4
    for corner in [(-0.1, -0.15), (0.1, -0.15), (0.1, 0.15), (-0.1, 0.15)]:
        assert np.min(np.linalg.norm(hull - corner, axis=1)) < 1e-12
    # a real corner (1 mm off the line) stays
    bent = np.vstack([SOLES, [[0.0, 0.151]]])
    assert len(convex_hull_2d(bent)) == 5


def test_region_is_scaled_about_the_behaviours_own_com():
    """A robot balancing off the polygon's centre keeps its own CoM inside the region: the region
    is scaled about it (the centroid only when the own CoM lies outside the support)."""
    s = GovernorSettings()
    own = np.array([0.03, 0.0, 0.75])  # 7 cm from the front edge, 13 cm from the back edge
    for target, x_expected in (((1.0, 0.0), 0.03 + s.com_polygon_scale * 0.07 - s.com_margin_m),
                               ((-1.0, 0.0), 0.03 - s.com_polygon_scale * 0.13 + s.com_margin_m)):
        g = ReferenceGovernor(s)
        g.com(0.0, own, None, SOLES)
        g.com(0.001, own, np.array([*target, 0.75]), SOLES)
        assert f"-> ({x_expected:.3f}, 0.000) m" in g.bounded["wbc/com_reference"]
    g = ReferenceGovernor(s)  # the own CoM inside the region: not bounded
    g.com(0.0, own, None, SOLES)
    g.com(0.001, own, own + np.array([0.0, 0.005, 0.0]), SOLES)
    assert "wbc/com_reference" not in g.bounded
    outside = np.array([0.5, 0.0, 0.75])  # outside the support: about the centroid (0, 0)
    g = ReferenceGovernor(s)
    g.com(0.0, outside, None, SOLES)
    g.com(0.001, outside, np.array([1.0, 0.0, 0.75]), SOLES)
    assert f"-> ({s.com_polygon_scale * 0.1 - s.com_margin_m:.3f}, 0.000) m" in g.bounded["wbc/com_reference"]
