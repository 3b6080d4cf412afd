"""The tree's promises, checked on the source: who may import whom, no import cycles, no product code importing
tests. Imports under ``if TYPE_CHECKING`` are left out (they load nothing)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("broker", "exporter", "xmonitor", "lagmonitor", "slo", "dashboards", "kafkascope", "common")

# What each top-level package may import from the others (the architecture picture in README, arrows pointing down).
ALLOWED = {
    "common": set(),
    "exporter": {"common"},
    "broker": {"common", "exporter"},
    "xmonitor": {"common", "exporter"},
    "lagmonitor": {"common", "exporter"},
    "slo": {"common", "lagmonitor", "xmonitor"},
    "dashboards": {"common", "slo", "xmonitor", "lagmonitor", "exporter"},
    "kafkascope": set(PRODUCT) - {"kafkascope"},
    "benchmarks": set(PRODUCT),
}


def _modules(package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def imports(path: Path, module: str) -> set[str]:
    """Modules `path` imports, also inside functions (a deferred import that closes a cycle is still a cycle)."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)
            for field in ("body", "orelse", "finalbody", "handlers"):
                child = getattr(node, field, None)
                if isinstance(child, list) and child and isinstance(child[0], (ast.stmt, ast.excepthandler)):
                    visit(child)  # type: ignore[arg-type]

    visit(tree.body)
    return found


@pytest.mark.parametrize("package", [*PRODUCT, "benchmarks"])
def test_no_product_module_imports_tests(package):
    bad = [f"{m}: {i}" for m, p in _modules(package).items() for i in imports(p, m) if i.split(".")[0] == "tests"]
    assert not bad, bad


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_packages_import_only_downwards(package):
    bad = sorted({f"{m} -> {i}" for m, p in _modules(package).items() for i in imports(p, m)
                  if i.split(".")[0] in PRODUCT and i.split(".")[0] != package
                  and i.split(".")[0] not in ALLOWED[package]})
    assert not bad, bad


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := dfs(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := dfs(n)):
            return found
    return None


def _graph(package: str) -> dict[str, set[str]]:
    mods = _modules(package)
    graph = {}
    for m, p in mods.items():
        targets = set()
        for i in imports(p, m):
            while i and i not in mods:  # `from a.b import name` names a module or an attribute of one
                i = i.rpartition(".")[0]
            if i and i != m and not m.startswith(i + "."):  # a package's own __init__ is loaded first anyway
                targets.add(i)
        graph[m] = targets
    return graph


@pytest.mark.parametrize("package", ["broker", "exporter", "lagmonitor", "xmonitor", "slo", "dashboards", "kafkascope"])
def test_no_import_cycle(package):
    assert _cycle(_graph(package)) is None, " -> ".join(_cycle(_graph(package)) or [])


def test_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_imports_sees_deferred_and_relative_imports_but_not_type_checking(tmp_path):
    f = tmp_path / "mod.py"
    f.write_text("from typing import TYPE_CHECKING\nfrom . import sibling\nif TYPE_CHECKING:\n    import hidden\n"
                 "def f():\n    from tests.support import x\n")
    found = imports(f, "pkg.sub.mod")
    assert {"pkg.sub.sibling", "tests.support", "tests.support.x"} <= found and "hidden" not in found
