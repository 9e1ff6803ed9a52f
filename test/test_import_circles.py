"""No import circle inside the package (issue #36): a module's top-level imports (those that run when
it is imported; imports inside functions are deferred and not counted) never lead back to it.

A circle works only by the order modules happen to be imported in (a registration side effect, a
name defined before the import that needs it); it breaks on the first reordering. The graph is read
from the source with ``ast``: ``from a.b import c`` is an edge to ``a.b.c`` where that is a module,
else to ``a.b``; a package's ``__init__`` importing its own submodules is an edge like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = (REPO / "kangaroo_wbc", REPO / "kangaroo_wbc_tools")


def _modules() -> dict[str, Path]:
    out = {}
    for path in (p for package in PACKAGES for p in package.rglob("*.py")):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _top_level_imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The package modules that module ``name`` imports when it is imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()

    def visit(nodes) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    targets.add(full if full in modules else base)
            elif isinstance(node, ast.If | ast.Try):  # conditional imports still run at import time
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))

    visit(tree.body)
    return {t for t in targets if t in modules and t != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strongconnect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return out


def test_the_package_has_no_import_circle() -> None:
    modules = _modules()
    graph = {name: _top_level_imports(path, name, modules) for name, path in modules.items()}
    assert _cycles(graph) == []


def test_the_check_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
