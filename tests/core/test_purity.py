"""The core does no I/O and reads no clock or entropy: checked on the AST of every module.

STYLE.md section 1. A module under ``mcp_sansio/`` may not import an event loop, sockets,
processes, threads, signals, the clock, randomness or an HTTP client, nor call ``open()``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mcp_sansio

FORBIDDEN: frozenset[str] = frozenset({
    "asyncio", "anyio", "trio", "socket", "ssl", "subprocess", "threading", "selectors",
    "select", "signal", "time", "random", "secrets", "httpx", "urllib.request", "http.client",
})
OPENERS: frozenset[str] = frozenset({"open", "io.open", "os.open", "builtins.open", "codecs.open"})

PACKAGE = Path(mcp_sansio.__file__).parent
MODULES = sorted(PACKAGE.rglob("*.py"))


def _forbidden(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in FORBIDDEN)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def violations(source: str) -> list[str]:
    """Every forbidden import or ``open()`` call in ``source``, as ``line: what``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if _forbidden(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _forbidden(node.module):
                found.append(f"{node.lineno}: from {node.module} import ...")
            found += [f"{node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if _forbidden(f"{node.module}.{a.name}")]
        elif isinstance(node, ast.Call) and _dotted(node.func) in OPENERS:
            found.append(f"{node.lineno}: {_dotted(node.func)}()")
    return found


def test_the_package_has_modules_to_check() -> None:
    assert PACKAGE / "session.py" in MODULES
    assert PACKAGE / "types" / "tools.py" in MODULES


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_module_does_no_io(path: Path) -> None:
    assert violations(path.read_text("utf-8")) == []


@pytest.mark.parametrize(
    "source",
    [
        "import asyncio",
        "import os, time",
        "import trio.lowlevel",
        "import urllib.request",
        "from http import client",
        "from http.client import HTTPConnection",
        "from random import random",
        "from socket import *",
        "def f():\n    import selectors",
        "open('x')",
        "import io\nio.open('x')",
        "with open('x') as f: pass",
    ],
)
def test_checker_catches_a_violation(source: str) -> None:
    assert violations(source) != []


@pytest.mark.parametrize(
    "source",
    [
        "import timeit_like",
        "from . import time",  # a sibling module of that name, not the stdlib
        "import urllib.parse",
        "from http import HTTPStatus",
        "self.open()",
        "import msgspec, heapq, logging",
    ],
)
def test_checker_allows_pure_code(source: str) -> None:
    assert violations(source) == []
