"""The CLI's modules import each other in a line, never in a circle (nor hidden in functions)."""

from __future__ import annotations

import ast
from pathlib import Path

import mcp_sansio_cli
from mcp_sansio_cli.main import COMMANDS

PACKAGE = Path(mcp_sansio_cli.__file__).parent
LINE = ("main", "direct", "host", "auth_cmd", "serve_cmd", "serve_auth", "fuzz_cmd", "output", "args")


def imported(module: str) -> set[str]:
    """The package's modules that ``module`` imports, wherever the import statement is."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found |= {node.module} if node.module else {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcp_sansio_cli."):
            found.add((node.module or "").removeprefix("mcp_sansio_cli."))
    return found


def test_each_module_imports_only_modules_after_it_in_the_line() -> None:
    for index, module in enumerate(LINE):
        assert imported(module) <= set(LINE[index + 1:]), module


def test_every_command_module_offers_its_parsers_and_run() -> None:
    for module in COMMANDS:
        assert hasattr(module, "add_parser") or hasattr(module, "add_parsers"), module
        assert callable(module.run), module
