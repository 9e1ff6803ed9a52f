"""One definition of the per-sample prelude (issue #36): the ``wbc/ready`` handshake
(``set_released``) and the chain after the estimate are called from the assembly only
(:mod:`kangaroo_wbc.components.assembly`); every deployment goes through it."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kangaroo_wbc"
ASSEMBLY = PACKAGE / "components" / "assembly.py"


def _call_sites(pattern: str) -> list[str]:
    sites = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(pattern, code) and not re.search(r"\bdef\s", code):
                sites.append(f"{path.relative_to(PACKAGE.parent)}:{n}")
    return sites


def test_the_ready_handshake_is_called_from_the_assembly_only() -> None:
    sites = _call_sites(r"\.set_released\(")
    assert sites and all(s.startswith("kangaroo_wbc/components/assembly.py:") for s in sites), sites


def test_the_chain_after_the_estimate_is_written_once() -> None:
    assert _call_sites(r"\bafter_estimate\(") == []
    # the sole forces reach the estimator and the controller in the chain, or from the separate
    # nodes' contact/<sole>/wrench subscription
    allowed = ("kangaroo_wbc/components/assembly.py:", "kangaroo_wbc/ros/node_support.py:")
    sites = _call_sites(r"\.on_sole_force\(")
    assert sites and all(s.startswith(allowed) for s in sites), sites
