"""Build the Kangaroo full closed-chain description (76 joints, 64 closure rows) from ``params.yaml``.

Per leg the serial *output* chain is hip yaw → hip roll → hip pitch (femur) → knee (tibia) → ankle
roll → ankle pitch (foot), and four closed sub-mechanisms (paper Table II) drive it:

=====================  ============  ===================  ==========================================
sub-mechanism           actuated      passive in tree       loops (cut, constrained directions in F_a)
=====================  ============  ===================  ==========================================
``<side>_hip_yaw``       1             2                    RRPR, planar: rod end / yaw lever [x, y]
``<side>_hip_pitch_roll`` 2            8                    2 × RRPU: rod-end universal [x, y, z, rz]
``<side>_knee``           1            6                    3 planar: drive (RRRP), relay, output (RRRR)
``<side>_ankle``          2            16                   per side: drive (RRRP) [x, z], transfer
                                                            (RRRR) [x, z], lower rod [x, y, z, rz]
=====================  ============  ===================  ==========================================

The planar loops are cut at a revolute joint and constrain the two in-plane positions of ``F_a``.
The RRPU legs and the lower ankle rods are cut at the rod-end universal joint: three positions plus
the rotation about the rod axis (``z`` of ``F_a``), which fixes the passive *spin* of the rod
(the third revolute of the leg in the tree); the two free rotations are the universal joint.

All link frames are placed at the zero configuration, which is closed: straight leg (knee 0), all
actuators at stroke 0 except where Table II's stroke starts at 0 (leg length: knee straight).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kangaroo_wbc.robots.kangaroo.description import (
    Closure,
    Description,
    TreeBuilder,
    frame_from_z,
    rot_x,
    rot_y,
    rot_z,
)
from kangaroo_wbc.robots.kangaroo.params import ACTUATORS, OUTPUTS, KangarooParams, load_params

SIDES = ("left", "right")
EY = np.array([0.0, 1.0, 0.0])
EX = np.array([1.0, 0.0, 0.0])

def actuator_joint(side: str, key: str) -> str:
    """URDF name of an actuated (prismatic) joint, e.g. ``left_leg_length_actuator``."""
    return f"{side}_{key}_actuator"


def output_joint(side: str, key: str) -> str:
    """URDF name of an output joint, e.g. ``left_knee_joint``."""
    return f"{side}_{key}_joint"


def circle_intersection_xz(c0: np.ndarray, r0: float, c1: np.ndarray, r1: float, upper: bool) -> np.ndarray:
    """Intersection of two circles in a plane ``y = const``; ``upper`` picks the point of larger z.

    Raises:
        ValueError: the circles do not intersect (unreachable design).
    """
    d = c1 - c0
    L = float(np.hypot(d[0], d[2]))
    a = (r0**2 - r1**2 + L**2) / (2.0 * L)
    h2 = r0**2 - a**2
    if h2 < 0.0:
        raise ValueError(f"circles do not intersect (distance {L:.4f}, radii {r0:.4f}, {r1:.4f})")
    u = np.array([d[0], 0.0, d[2]]) / L
    n = np.array([-u[2], 0.0, u[0]])
    p = c0 + a * u
    cands = [p + np.sqrt(h2) * n, p - np.sqrt(h2) * n]
    cands.sort(key=lambda x: x[2])
    out = cands[1] if upper else cands[0]
    out[1] = c0[1]
    return out


def _sagittal_frame(x_dir: np.ndarray) -> np.ndarray:
    """Rotation about y whose x axis points along ``x_dir`` (a vector in the sagittal plane)."""
    return rot_y(float(np.arctan2(-x_dir[2], x_dir[0])))


def _lever(angle: float) -> np.ndarray:
    """Unit vector ``R_y(angle) (1, 0, 0)`` in the sagittal plane."""
    return rot_y(angle) @ EX


class KneeGeometry:
    """Planar knee linkage of the left leg in femur coordinates (world at the zero configuration).

    Three non-linear stages in series: the actuator turns rocker 1 (slider-crank), a relay link
    turns rocker 2 (four-bar between the two rocker pivots, ``relay_length_m`` apart on the femur),
    and the push rod turns the tibia (four-bar). Dimensions are given at the design posture (knee at
    ``mid_range_deg``, tibia lever level); the ``*_deg`` values are the arm and rod directions there:
    push rod and actuator tilted forward from the vertical by ``pushrod_angle_deg`` /
    ``actuator_angle_deg``, rocker arms at ``rocker2_arm_deg`` (rocker-2 output arm, pointing from
    the rocker pivot to the push-rod pin), ``rocker1_arm_deg`` (rocker-1 actuator arm) and
    ``rocker1_relay_arm_deg`` (rocker-1 relay arm) below the forward horizontal. The rocker-2 relay
    arm points opposite to its output arm.
    """

    def __init__(self, prm: KangarooParams, K: np.ndarray) -> None:
        g = "knee."
        self.K = K
        self.r_t = prm.num(g + "tibia_lever_m", True)
        self.l_push = prm.num(g + "pushrod_length_m", True)
        self.r2c = prm.num(g + "rocker2_output_arm_m", True)
        self.r_relay1 = prm.num(g + "rocker1_relay_arm_m", True)
        self.r_relay2 = prm.num(g + "rocker2_relay_arm_m", True)
        self.d_relay = prm.num(g + "relay_length_m", True)
        self.r1a = prm.num(g + "rocker1_actuator_arm_m", True)
        self.l_mid = prm.num(g + "actuator_length_m", True)
        self.mid = np.radians(prm.num(g + "mid_range_deg"))
        self.a2 = np.radians(prm.num(g + "rocker2_arm_deg"))
        self.a1 = np.radians(prm.num(g + "rocker1_arm_deg"))
        self.ph1 = np.radians(prm.num(g + "rocker1_relay_arm_deg"))
        push = np.radians(prm.num(g + "pushrod_angle_deg"))
        act = np.radians(prm.num(g + "actuator_angle_deg"))
        T_mid = K + self.r_t * EX
        Q2_mid = T_mid + self.l_push * np.array([np.sin(push), 0.0, np.cos(push)])
        self.R2 = Q2_mid - self.r2c * _lever(self.a2)
        self.R1 = self.R2 + np.array([0.0, 0.0, self.d_relay])
        b1 = self.R1 + self.r_relay1 * _lever(self.ph1)
        b2 = self.R2 - self.r_relay2 * _lever(self.a2)
        self.l_relay = float(np.linalg.norm(b1 - b2))
        self._mode = self._side(b1, b2)
        self.Pk = self.R1 + self.r1a * _lever(self.a1) + self.l_mid * np.array([np.sin(act), 0.0, np.cos(act)])

    def _side(self, b1: np.ndarray, b2: np.ndarray) -> float:
        """Assembly mode of the relay four-bar: side of the relay link w.r.t. the rocker-1 arm."""
        v, w = b1 - self.R1, b2 - b1
        return float(np.sign(v[0] * w[2] - v[2] * w[0]))

    def at(self, knee: float) -> KneePose:
        """Pin positions for a knee angle [rad]."""
        T = self.K + self.r_t * _lever(knee - self.mid)
        Q2 = circle_intersection_xz(self.R2, self.r2c, T, self.l_push, upper=True)
        d = Q2 - self.R2
        beta2 = float(np.arctan2(-d[2], d[0])) - self.a2
        b2 = self.R2 - self.r_relay2 * _lever(self.a2 + beta2)
        cands = [circle_intersection_xz(b2, self.l_relay, self.R1, self.r_relay1, upper=u) for u in (True, False)]
        b1 = next(c for c in cands if self._side(c, b2) == self._mode)
        v = b1 - self.R1
        beta1 = float(np.arctan2(-v[2], v[0])) - self.ph1
        return KneePose(T=T, Q2=Q2, a_pin=self.R1 + self.r1a * _lever(self.a1 + beta1), b1=b1, b2=b2)


@dataclass
class KneePose:
    """Knee linkage pins [m] (femur coordinates) at one knee angle: ``T`` tibia lever pin, ``Q2``
    rocker-2 / push-rod pin, ``a_pin`` actuator rod end on rocker 1, ``b1``/``b2`` relay pins on
    rockers 1/2."""

    T: np.ndarray
    Q2: np.ndarray
    a_pin: np.ndarray
    b1: np.ndarray
    b2: np.ndarray


def build(prm: KangarooParams | None = None, cage: bool = False) -> Description:
    """Full closed-chain description of the Kangaroo lower body.

    Args:
        prm: parameters (default: the packaged ``params.yaml``).
        cage: add the torso protection cage (about +6 kg, paper Section IV).
    """
    prm = prm or load_params()
    b = TreeBuilder(str(prm.raw("name")))
    base = b.add_root("base_link")
    b.set_box("base_link", prm.num("pelvis.mass_kg", True), np.zeros(3),
              tuple(prm.vec("pelvis.size_m", 3)), mirrored=False)
    base.segment = "base"
    b.add_frame("imu", "base_link", prm.vec("pelvis.imu_xyz_m", 3), mirrored=False)
    if cage:
        b.add("torso_cage", "base_link", "torso_cage_joint", "fixed", np.zeros(3), mirrored=False)
        b.set_box("torso_cage", prm.num("cage.mass_kg", True), prm.vec("cage.center_xyz_m", 3),
                  tuple(prm.vec("cage.size_m", 3)), mirrored=False)
    for side in SIDES:
        b.mirror = side == "right"
        _build_leg(b, prm, side)
    b.mirror = False
    d = b.desc
    d.actuators = {actuator_joint(s, k): prm.actuator(k) for s in SIDES for k in ACTUATORS}
    d.absolute_actuators = [actuator_joint(s, k) for s in SIDES for k in prm.raw("absolute_actuators")]
    d.absolute_encoders = [output_joint(s, k) for s in SIDES for k in prm.raw("absolute_encoders")]
    _ownership(d)
    return d


def _ownership(d: Description) -> None:
    """Per sub-mechanism, the actuated and passive tree joints it owns (Table II counts)."""
    for j in d.joints:
        if j.role in ("actuated", "passive", "output"):
            entry = d.submechanism_joints.setdefault(j.submechanism, {"actuated": [], "passive": []})
            entry["actuated" if j.role == "actuated" else "passive"].append(j.name)


#: Cut joint of a loop by its constrained directions in ``F_a``: planar loops are cut at a revolute
#: joint normal to their plane, the others at a universal joint (rod end).
_CUTS = {("x", "y"): ("revolute", ((0, 0, 1),)), ("x", "z"): ("revolute", ((0, 1, 0),)),
         ("x", "y", "z", "rz"): ("universal", ((1, 0, 0), (0, 1, 0)))}


def _segment_box(b: TreeBuilder, prm: KangarooParams, link: str, key: str, mass: float,
                 top: np.ndarray, bottom: np.ndarray) -> None:
    """The body of a leg segment (femur, tibia) from joint ``top`` down to joint ``bottom``: a solid
    box of ``mass`` [kg] whose length is ``mass_distribution.<key>.length_fraction`` of the segment,
    centred at ``com_fraction`` of the way down (both checked to keep the box inside the segment by
    :class:`KangarooParams`), cross-section ``section_m`` [m] (x, y)."""
    f = prm.num(f"mass_distribution.{key}.com_fraction")
    lf = prm.num(f"mass_distribution.{key}.length_fraction", True)
    sx, sy = prm.vec(f"mass_distribution.{key}.section_m", 2)
    L = float(np.linalg.norm(top - bottom))
    b.set_box(link, mass, top + f * (bottom - top), (float(sx), float(sy), lf * L))


def _build_leg(b: TreeBuilder, prm: KangarooParams, side: str) -> None:
    n = f"{side}_"
    vel = prm.num("passive_velocity_rad_s", True)
    hy = prm.num("pelvis.hip_yaw_axis_y_m", True)
    Y = np.array([0.0, hy, 0.0])
    C = Y - np.array([0.0, 0.0, prm.num("leg.hip_yaw_to_pitch_m", True)])
    K = C - np.array([0.0, 0.0, prm.num("leg.femur_length_m", True)])
    A = K - np.array([0.0, 0.0, prm.num("leg.tibia_length_m", True)])
    m = prm.mass

    def output(link: str, parent: str, key: str, p: np.ndarray, axis: tuple[int, int, int], segment: str) -> str:
        """Output joint ``key`` moving link ``<side>_<link>``; returns the link name."""
        b.add(n + link, parent, output_joint(side, key), "revolute", p, axis=axis, segment=n + segment,
              submechanism=n + sub, role="output", limits=prm.deg_range(f"output_limits_deg.{key}"), velocity=vel)
        return n + link

    def actuated(link: str, parent: str, key: str, p: np.ndarray, R: np.ndarray,
                 axis: tuple[int, int, int] = (0, 0, 1), segment: str = "") -> None:
        """Prismatic joint of actuator ``key`` moving ``link`` (stroke, force and speed limits)."""
        a = prm.actuator(key)
        b.add(link, parent, actuator_joint(side, key), "prismatic", p, R, axis=axis, segment=segment,
              submechanism=n + sub, role="actuated", limits=tuple(a["stroke_m"]), effort=a["max_force_n"],
              velocity=a["max_velocity_m_s"])

    def passive(link: str, parent: str, joint: str, key: str, p: np.ndarray, R: np.ndarray | None = None,
                axis: tuple[int, int, int] = (0, 1, 0), segment: str = "") -> None:
        """Passive revolute ``joint`` moving ``link``, its limits from ``passive_limits_deg.<key>``."""
        b.add(link, parent, joint, "revolute", p, R, axis=axis, segment=segment, submechanism=n + sub,
              role="passive", limits=prm.deg_range(f"passive_limits_deg.{key}"), velocity=vel)

    def loop(name: str, a_link: str, u_link: str, p: np.ndarray, dirs: tuple[str, ...],
             R: np.ndarray | None = None, R_u: np.ndarray | None = None) -> None:
        """Cut frames ``<side>_<name>_cut_a`` / ``_cut_u`` at ``p`` and the loop ``<side>_<name>_loop``."""
        cut = f"{n}{name}_cut"
        b.add_frame(cut + "_a", a_link, p, R)
        b.add_frame(cut + "_u", u_link, p, R if R_u is None else R_u)
        b.desc.closures.append(Closure(f"{n}{name}_loop", n + sub, cut + "_a", cut + "_u", dirs, *_CUTS[dirs]))

    # ------------------------------------------------------------ hip yaw (RRPR, horizontal plane)
    sub = "hip_yaw"
    r_y = prm.num("hip_yaw.lever_radius_m", True)
    l_y = prm.num("hip_yaw.actuator_length_m", True)
    L = Y + r_y * EX
    P = L - l_y * EY
    yaw = output("hip_yaw_link", "base_link", "hip_yaw", Y, (0, 0, 1), "hip_yaw")
    b.set_box(yaw, m("hip_yaw_link"), 0.5 * (Y + C), tuple(prm.vec("mass_distribution.hip_yaw_link_size_m", 3)))
    R_act = rot_z(np.pi / 2)  # local x along +y (towards the hip)
    cyl = n + "hip_yaw_actuator_cylinder"
    passive(cyl, "base_link", n + "hip_yaw_actuator_pivot", "hip_yaw_actuator_pivot", P, R_act, axis=(0, 0, 1),
            segment="base")
    b.set_rod(cyl, m("hip_yaw_actuator_cylinder"), P, P + 0.6 * l_y * EY, 0.018)
    rod = n + "hip_yaw_actuator_rod"
    actuated(rod, cyl, "hip_yaw", P, R_act, axis=(1, 0, 0), segment="base")
    b.set_rod(rod, m("hip_yaw_actuator_rod"), P + 0.4 * l_y * EY, L, 0.008)
    loop("hip_yaw", rod, yaw, L, ("x", "y"), R_act)

    # ------------------------------------------------------------ hip pitch/roll (U-2RRPU)
    sub = "hip_pitch_roll"
    roll = output("hip_roll_link", yaw, "hip_roll", C, (1, 0, 0), "hip_roll")
    b.set_box(roll, m("hip_roll_link"), C, (0.08, 0.08, 0.06))
    femur = output("femur_link", roll, "hip_pitch", C, (0, 1, 0), "femur")
    _segment_box(b, prm, femur, "femur", m("femur"), C, K)
    h_top = prm.num("hip_pitch_roll.anchor_height_m", True)
    x_h = prm.num("hip_pitch_roll.attach_forward_m")
    w_h = prm.num("hip_pitch_roll.attach_lateral_m", True)
    z_b = prm.num("hip_pitch_roll.attach_height_m")
    for part, sgn in (("inner", -1.0), ("outer", 1.0)):
        Aa = C + np.array([x_h, sgn * w_h, h_top])
        Bb = C + np.array([x_h, sgn * w_h, z_b])
        Rc = frame_from_z(Bb - Aa, EY)
        pre = f"{n}hip_{part}_actuator"
        cross = pre + "_cross"
        passive(cross, yaw, pre + "_base_x", "hip_actuator_base_x", Aa, axis=(1, 0, 0),
                segment=n + "hip_yaw")
        b.set_box(cross, m("hip_actuator_cross"), Aa, (0.03, 0.03, 0.03))
        cyl = pre + "_cylinder"
        passive(cyl, cross, pre + "_base_y", "hip_actuator_base_y", Aa, Rc)
        b.set_rod(cyl, m("hip_actuator_cylinder"), Aa, Aa + 0.55 * (Bb - Aa), 0.025)
        rod = pre + "_rod"
        actuated(rod, cyl, f"hip_{part}", Aa, Rc, segment=n + "hip_roll")
        b.set_rod(rod, m("hip_actuator_rod"), Aa + 0.45 * (Bb - Aa), Bb, 0.01)
        end = pre + "_rod_end"
        passive(end, rod, pre + "_spin", "hip_actuator_spin", Bb, Rc, axis=(0, 0, 1))
        b.set_box(end, m("hip_actuator_rod_end"), Bb, (0.02, 0.02, 0.02))
        loop(f"hip_{part}", end, femur, Bb, ("x", "y", "z", "rz"), Rc)

    # ------------------------------------------------------------ knee (RRRR-RRRP-R, sagittal plane)
    sub = "knee"
    tibia = output("tibia_link", femur, "knee", K, (0, 1, 0), "tibia")
    _segment_box(b, prm, tibia, "tibia", m("tibia"), K, A)
    kg = KneeGeometry(prm, K)
    k0 = kg.at(0.0)
    Rk = frame_from_z(k0.a_pin - kg.Pk, EY)
    cyl = n + "leg_length_actuator_cylinder"
    passive(cyl, femur, n + "leg_length_actuator_pivot", "knee_actuator_pivot", kg.Pk, Rk)
    b.set_rod(cyl, m("knee_actuator_cylinder"), kg.Pk, kg.Pk + 0.6 * (k0.a_pin - kg.Pk), 0.02)
    rod = n + "leg_length_actuator_rod"
    actuated(rod, cyl, "leg_length", kg.Pk, Rk)
    b.set_rod(rod, m("knee_actuator_rod"), kg.Pk + 0.4 * (k0.a_pin - kg.Pk), k0.a_pin, 0.01)
    r1 = n + "knee_rocker1"
    passive(r1, femur, n + "knee_rocker1_joint", "knee_rocker1", kg.R1)
    b.set_box(r1, m("knee_rocker1"), 0.5 * (k0.a_pin + k0.b1), (float(np.linalg.norm(k0.a_pin - k0.b1)), 0.02, 0.02),
              R_shape=_sagittal_frame(k0.a_pin - k0.b1))
    loop("knee_drive", rod, r1, k0.a_pin, ("x", "z"), Rk)
    relay = n + "knee_relay"
    passive(relay, r1, n + "knee_relay_joint", "knee_relay", k0.b1)
    b.set_rod(relay, m("knee_relay"), k0.b1, k0.b2, 0.008)
    r2 = n + "knee_rocker2"
    passive(r2, femur, n + "knee_rocker2_joint", "knee_rocker2", kg.R2)
    b.set_box(r2, m("knee_rocker2"), 0.5 * (k0.Q2 + k0.b2), (kg.r2c + kg.r_relay2, 0.02, 0.02),
              R_shape=_sagittal_frame(k0.Q2 - k0.b2))
    loop("knee_relay", relay, r2, k0.b2, ("x", "z"))
    push = n + "knee_pushrod"
    passive(push, r2, n + "knee_pushrod_joint", "knee_pushrod", k0.Q2)
    b.set_rod(push, m("knee_pushrod"), k0.Q2, k0.T, 0.008)
    loop("knee_output", push, tibia, k0.T, ("x", "z"))

    # ------------------------------------------------------------ ankle (U-2(RRRP-RRR-UU))
    sub = "ankle"
    # Roll axis on the tibia, pitch axis on the cross: with the knee transmission the ankle pitch
    # joint sweeps about minus the knee angle (through -90 deg); a pitch-first universal joint
    # would there lose the roll transmission of the rods (singular J_l,u).
    cross = output("ankle_cross_link", tibia, "ankle_roll", A, (1, 0, 0), "ankle_cross")
    b.set_box(cross, m("ankle_cross"), A, (0.05, 0.04, 0.03))
    foot = output("foot_link", cross, "ankle_pitch", A, (0, 1, 0), "foot")
    h_a = prm.num("leg.ankle_height_m", True)
    s_len = prm.num("leg.sole_length_m", True)
    s_wid = prm.num("leg.sole_width_m", True)
    sole = A + np.array([prm.num("leg.sole_forward_m"), 0.0, -h_a])
    # The foot's mass is a sole plate (mass_distribution.foot_plate_height_m); its collision box keeps
    # the full height up to the ankle axes.
    h_p = prm.num("mass_distribution.foot_plate_height_m", True)
    b.set_box(foot, m("foot"), sole + np.array([0.0, 0.0, 0.5 * h_p]), (s_len, s_wid, h_p))
    b.add_collision_box(foot, sole + np.array([0.0, 0.0, 0.5 * h_a]), (s_len, s_wid, h_a))
    b.add_frame(n + "sole", foot, sole)
    for tag, sx, sy in (("fl", 1, 1), ("fr", 1, -1), ("rl", -1, 1), ("rr", -1, -1)):  # front/rear, left/right
        b.add_frame(f"{n}sole_corner_{tag}", foot, b.P(sole) + np.array([0.5 * sx * s_len, 0.5 * sy * s_wid, 0.0]),
                    mirrored=False)

    w_a = prm.num("ankle.chain_lateral_m", True)
    d_c = prm.num("ankle.crank_height_m", True)
    r_a = prm.num("ankle.actuator_arm_m", True)
    r_b = prm.num("ankle.transfer_arm_m", True)
    r_c = prm.num("ankle.heel_lever_m", True)
    lam = np.radians(prm.num("ankle.heel_lever_deg"))
    l_a = prm.num("ankle.actuator_length_m", True)
    lever = rot_y(lam) @ np.array([0.0, 0.0, -1.0])
    # The lower rod's rotation about its axis is measured against a foot frame turned by the knee
    # mid range, so that the relative rotation stays well inside (-pi, pi) over the whole box.
    R_rod = rot_x(np.pi)
    R_rod_u = rot_y(np.radians(prm.num("knee.mid_range_deg"))) @ R_rod
    for part, sgn in (("inner", -1.0), ("outer", 1.0)):
        off = np.array([0.0, sgn * w_a, 0.0])
        Kc = K + off
        C1 = Kc + np.array([0.0, 0.0, d_c])
        E = C1 - r_a * EX
        Pa = E + np.array([0.0, 0.0, l_a])
        Kb = Kc + r_b * EX
        Cb = C1 + r_b * EX
        Tc = Kc + r_c * lever
        F = A + off + r_c * lever
        pre = f"{n}ankle_{part}"
        Ra = frame_from_z(E - Pa, EY)
        cyl = pre + "_actuator_cylinder"
        passive(cyl, femur, pre + "_actuator_pivot", "ankle_actuator_pivot", Pa, Ra)
        b.set_rod(cyl, m("ankle_actuator_cylinder"), Pa, Pa + 0.6 * (E - Pa), 0.016)
        rod = pre + "_actuator_rod"
        actuated(rod, cyl, f"ankle_{part}", Pa, Ra)
        b.set_rod(rod, m("ankle_actuator_rod"), Pa + 0.4 * (E - Pa), E, 0.007)
        crank = pre + "_crank"
        passive(crank, femur, pre + "_crank_joint", "ankle_crank", C1)
        b.set_box(crank, m("ankle_crank"), 0.5 * (E + Cb), (r_a + r_b, 0.015, 0.02))
        loop(f"ankle_{part}_drive", rod, crank, E, ("x", "z"), Ra)
        lrod = pre + "_long_rod"
        passive(lrod, crank, pre + "_long_rod_joint", "ankle_long_rod", Cb)
        b.set_rod(lrod, m("ankle_long_rod"), Cb, Kb, 0.006)
        kcrank = pre + "_knee_crank"
        passive(kcrank, femur, pre + "_knee_crank_joint", "ankle_knee_crank", Kc)
        b.set_box(kcrank, m("ankle_knee_crank"), (Kb + Tc + Kc) / 3.0, (0.05, 0.015, 0.05))
        loop(f"ankle_{part}_transfer", lrod, kcrank, Kb, ("x", "z"))
        lcross = pre + "_lower_rod_cross"
        passive(lcross, kcrank, pre + "_lower_rod_pitch", "ankle_lower_rod_pitch", Tc,
                segment=n + "tibia")
        b.set_box(lcross, m("ankle_lower_rod_cross"), Tc, (0.015, 0.015, 0.015))
        lower = pre + "_lower_rod"
        passive(lower, lcross, pre + "_lower_rod_roll", "ankle_lower_rod_roll", Tc, R_rod, axis=(1, 0, 0))
        b.set_rod(lower, m("ankle_lower_rod"), Tc, F, 0.006)
        end = pre + "_lower_rod_end"
        passive(end, lower, pre + "_lower_rod_spin", "ankle_lower_rod_spin", F, R_rod, axis=(0, 0, 1))
        b.set_box(end, m("ankle_lower_rod_end"), F, (0.015, 0.015, 0.015))
        loop(f"ankle_{part}_rod", end, foot, F, ("x", "y", "z", "rz"), R_rod, R_u=R_rod_u)


def output_joints(side: str) -> list[str]:
    """Output joints of one leg in the serial order (hip yaw, roll, pitch, knee, ankle roll, pitch)."""
    return [output_joint(side, k) for k in OUTPUTS]


def actuated_joints(side: str) -> list[str]:
    """Actuated joints of one leg in the order of :data:`ACTUATORS`."""
    return [actuator_joint(side, k) for k in ACTUATORS]
