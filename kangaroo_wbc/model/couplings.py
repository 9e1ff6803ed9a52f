r"""Coupled joints: constraints between joint coordinates, beside the loop closures.

A coupling makes some joints follow others (a gripper's second finger, a differential, a tendon
that ties joints together). It is one constraint row of the closed-chain model, stacked after the
loop rows of ``e_l`` and ``J_l`` (eq. (2), (5) of the Kangaroo paper): the compiled closure kernel
evaluates both (:mod:`kangaroo_wbc.model.closure_kernel`). With ``y = Σ_i c_i q_i`` over the
*followers* and ``x = Σ_j d_j q_j`` over the *leaders*,

.. math::

    e = (y - y_0) - \sum_{k=0}^{4} a_k (x - x_0)^k, \qquad
    \frac{\partial e}{\partial q_i} = c_i, \quad \frac{\partial e}{\partial q_j} = -p'(x - x_0)\, d_j,
    \qquad \dot J v = -p''(x - x_0)\, \big(\textstyle\sum_j d_j \dot q_j\big)^2 .

Sources: URDF ``<mimic joint= multiplier= offset=>`` (``q_f = m q_l + o``: ``y = q_f``, ``x = q_l``,
``a = (o, m)``), MJCF ``<equality><joint polycoef=…>`` (``y_0``, ``x_0`` the joints' ``qpos0``) and
``<equality><tendon>`` on fixed tendons (``y``, ``x`` the tendon lengths ``Σ c_i q_i``, ``y_0``, ``x_0``
their lengths at ``qpos0``), and the ``couplings`` key of a native closure file. Without leaders
(``x`` empty) the row holds ``y - y_0 = a_0``. The coupled joints are 1-DOF (revolute, unbounded
revolute, prismatic).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from kangaroo_wbc.errors import ConfigError

#: Highest power of a coupling polynomial (MuJoCo's ``polycoef`` holds ``a_0 .. a_4``).
POLY_ORDER = 4


@dataclass(frozen=True)
class CouplingSpec:
    """One coupling ``(Σ c_i q_i - y_0) - Σ_k a_k (Σ d_j q_j - x_0)^k = 0`` (see the module docstring).

    Attributes:
        name: unique name (the MJCF equality's, the mimic joint's).
        y: the followers ``(joint, c_i)``.
        x: the leaders ``(joint, d_j)``; empty: the followers are held at ``y_0 + a_0``.
        polynomial: ``a_0 .. a_4`` (missing powers are 0).
        y0, x0: offsets [rad or m].
        source: where it comes from ("URDF mimic", "MJCF equality joint", ...).
    """

    name: str
    y: tuple[tuple[str, float], ...]
    x: tuple[tuple[str, float], ...]
    polynomial: tuple[float, ...]
    y0: float = 0.0
    x0: float = 0.0
    source: str = ""

    @property
    def coefficients(self) -> np.ndarray:
        """``a_0 .. a_4`` as an array of five."""
        a = np.zeros(POLY_ORDER + 1)
        a[:len(self.polynomial)] = self.polynomial[:POLY_ORDER + 1]
        return a

    @property
    def followers(self) -> list[str]:
        return [j for j, c in self.y if c != 0.0]

    @property
    def leaders(self) -> list[str]:
        return [j for j, c in self.x if c != 0.0]

    def as_dict(self) -> dict[str, Any]:
        """The coupling for ``model info``."""
        return {"name": self.name, "source": self.source, "followers": dict(self.y), "leaders": dict(self.x),
                "polynomial": [float(a) for a in self.coefficients], "y0": self.y0, "x0": self.x0}


class CouplingTables(NamedTuple):
    """The couplings as the compiled kernel reads them: per coupling ``k`` (row ``n_loop + k`` of
    ``e_l``) its terms ``t`` (a ``-1`` side ends the list)."""

    #: configuration / velocity index of the term's joint
    term_q: np.ndarray
    term_v: np.ndarray
    #: 0: ``q[term_q]``; 1: an unbounded revolute joint, angle ``atan2(q[term_q + 1], q[term_q])``
    term_kind: np.ndarray
    term_coef: np.ndarray
    #: 0: a follower (``y``), 1: a leader (``x``), -1: no term
    term_side: np.ndarray
    #: (P, 5) ``a_0 .. a_4``
    poly: np.ndarray
    #: (P, 2) ``y_0, x_0``
    offset: np.ndarray


def coupling_tables(model: Any, couplings: list[CouplingSpec], source: str = "<memory>") -> CouplingTables:
    """The kernel tables of ``couplings`` on the pinocchio ``model``.

    Raises:
        ConfigError: an unknown joint, or one that is not 1-DOF (file and coupling named).
    """
    P = len(couplings)
    W = max((len(c.y) + len(c.x) for c in couplings), default=0) + 1
    term_q = np.zeros((P, W), dtype=np.int64)
    term_v = np.zeros((P, W), dtype=np.int64)
    term_kind = np.zeros((P, W), dtype=np.int64)
    term_coef = np.zeros((P, W))
    term_side = np.full((P, W), -1, dtype=np.int64)
    names = list(model.names)
    for k, c in enumerate(couplings):
        for t, (side, (joint, coef)) in enumerate([(0, term) for term in c.y] + [(1, term) for term in c.x]):
            if joint not in names[1:]:
                raise ConfigError(f"{source}: coupling {c.name!r} ({c.source}): unknown joint {joint!r}")
            jm = model.joints[names.index(joint)]
            if jm.nv != 1:
                raise ConfigError(f"{source}: coupling {c.name!r}: joint {joint!r} has {jm.nv} degrees of freedom; "
                                  f"coupled joints are revolute or prismatic")
            term_q[k, t], term_v[k, t] = jm.idx_q, jm.idx_v
            term_kind[k, t] = 1 if jm.nq == 2 else 0
            term_coef[k, t] = coef
            term_side[k, t] = side
    poly = np.array([c.coefficients for c in couplings]).reshape(P, POLY_ORDER + 1)
    offset = np.array([(c.y0, c.x0) for c in couplings], dtype=float).reshape(P, 2)
    return CouplingTables(term_q, term_v, term_kind, term_coef, term_side, poly, offset)


def mimic_couplings(root: ET.Element) -> list[CouplingSpec]:
    """The ``<mimic>`` elements of a URDF document: ``q_follower = multiplier q_leader + offset``.

    Raises:
        ConfigError: a mimic without ``joint`` or with a non-numeric multiplier or offset.
    """
    out = []
    for joint in root.iter("joint"):
        mimic = joint.find("mimic")
        if mimic is None:
            continue
        name = str(joint.get("name"))
        leader = mimic.get("joint")
        if not leader:
            raise ConfigError(f"joint {name!r}: <mimic> without a joint attribute")
        try:
            m, o = float(mimic.get("multiplier", 1.0)), float(mimic.get("offset", 0.0))
        except ValueError:
            raise ConfigError(f"joint {name!r}: <mimic> multiplier/offset are not numbers: "
                              f"{mimic.get('multiplier')!r}, {mimic.get('offset')!r}") from None
        out.append(CouplingSpec(name, ((name, 1.0),), ((leader, 1.0),), (o, m), source="URDF mimic"))
    return out


def parse_couplings(value: Any, path: str) -> list[CouplingSpec]:
    """The ``couplings`` key of a native closure file: a list of
    ``{name, joint, leader, multiplier (1), offset (0)}`` (``joint = multiplier * leader + offset``) or
    ``{name, joint, leader, polynomial: [a_0, ...]}`` (``joint = Σ a_k leader^k``); ``leader`` may be
    omitted (``joint = offset`` or ``a_0``).

    Raises:
        ConfigError: naming the file and the key.
    """
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{path}: key 'couplings': expected a list, got {type(value).__name__}")
    out = []
    for i, item in enumerate(value):
        key = f"couplings[{i}]"
        if not isinstance(item, dict) or "joint" not in item:
            raise ConfigError(f"{path}: key '{key}': expected a mapping with 'joint' (and 'leader', "
                              f"'multiplier', 'offset' or 'polynomial'), got {item!r}")
        unknown = sorted(set(item) - {"name", "joint", "leader", "multiplier", "offset", "polynomial"})
        if unknown:
            raise ConfigError(f"{path}: key '{key}': unknown keys {unknown}")
        try:
            if "polynomial" in item:
                if "multiplier" in item or "offset" in item:
                    raise ConfigError(f"{path}: key '{key}': give 'polynomial' or 'multiplier'/'offset', not both")
                poly = tuple(float(a) for a in item["polynomial"])
                if not 1 <= len(poly) <= POLY_ORDER + 1:
                    raise ConfigError(f"{path}: key '{key}.polynomial': 1 to {POLY_ORDER + 1} coefficients")
            else:
                poly = (float(item.get("offset", 0.0)), float(item.get("multiplier", 1.0)))
        except (TypeError, ValueError):
            raise ConfigError(f"{path}: key '{key}': the coefficients must be numbers, got {item!r}") from None
        if not all(np.isfinite(poly)):
            raise ConfigError(f"{path}: key '{key}': the coefficients must be finite, got {list(poly)}")
        joint = str(item["joint"])
        leader = item.get("leader")
        x = ((str(leader), 1.0),) if leader is not None else ()
        out.append(CouplingSpec(str(item.get("name", joint)), ((joint, 1.0),), x, poly, source=f"{path} {key}"))
    return out


__all__ = ["CouplingSpec", "CouplingTables", "POLY_ORDER", "coupling_tables", "mimic_couplings", "parse_couplings"]
