"""The core's import graph: it names no driver (not even by string), and the server role
has no import knot (a cycle, ``TYPE_CHECKING`` imports counted) of more than 3 modules."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import mcp_sansio

PACKAGE = Path(mcp_sansio.__file__).parent
DRIVERS = frozenset(p.name for p in (PACKAGE.parent / "drivers").iterdir() if p.is_dir())
MAX_KNOT = 3


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(module: str, path: Path, modules: Mapping[str, Path]) -> list[str]:
    """Every module ``module`` imports: statements anywhere (``TYPE_CHECKING`` blocks and
    functions too) and ``import_module("...")`` calls. ``from p import m`` names ``p.m`` when
    that is a module, else ``p`` (a package is no dependency of its submodules here: Python
    initialises it first whatever they import)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            root = ".".join([*base, node.module] if node.module else base)
            names += [f"{root}.{a.name}" if f"{root}.{a.name}" in modules else root for a in node.names]
        elif isinstance(node, ast.Call) and _called(node.func) == "import_module":
            names += [arg.value for arg in node.args
                      if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    return names


def _called(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _graph(scope: str) -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        if not module.startswith(scope):
            continue
        targets = set()
        for name in _imported(module, path, modules):
            target = name
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith(scope) and target != module:
                targets.add(target)
        graph[module] = targets
    return graph


def _knots(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_the_core_imports_no_driver_even_by_name() -> None:
    modules = _modules()
    found = [(module, name) for module, path in modules.items() for name in _imported(module, path, modules)
             if name.split(".")[0] in DRIVERS]
    assert found == []


def test_the_server_role_has_no_import_knot_over_three_modules() -> None:
    knots = _knots(_graph("mcp_sansio.server"))
    assert all(len(knot) <= MAX_KNOT for knot in knots), sorted(knots, key=len)[-1]


def test_the_knot_finder_finds_a_cycle_and_leaves_its_tail_out() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _knots(graph) == [{"a", "b", "c"}]
