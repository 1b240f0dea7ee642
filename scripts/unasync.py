#!/usr/bin/env python3
"""Generate the blocking twin of each async source in ``drivers/mcp_sansio_base/_async/``.

The client, manager and ``serve_*`` surfaces are written once, async, and the blocking driver's are
derived from them by token rewriting (httpcore's ``unasync`` approach): ``async def`` ->
``def``, ``await x`` -> ``x``, ``Awaitable[T]`` -> ``T``, ``AsyncClient`` -> ``Client``
and so on. Two line markers cover what has no blocking spelling:

* a line ending in ``# async-only`` is left out of the blocking file;
* a comment line ``# sync-only: CODE`` becomes ``CODE`` there (same indentation).

``python scripts/unasync.py`` writes ``_sync/``; ``--check`` exits 1, naming the files,
when a generated file is not what its source gives (CI runs it).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
SOURCE: Final = ROOT / "drivers" / "mcp_sansio_base" / "_async"
TARGET: Final = ROOT / "drivers" / "mcp_sansio_base" / "_sync"

# Whole-word renames, applied in order.
_WORDS: Final = [
    ("AsyncClient", "Client"),
    ("AsyncManager", "Manager"),
    ("AsyncIterator", "Iterator"),
    ("AsyncExitStack", "ExitStack"),
    ("AbstractAsyncContextManager", "AbstractContextManager"),
    ("asynccontextmanager", "contextmanager"),
    ("__aenter__", "__enter__"),
    ("__aexit__", "__exit__"),
    ("aclose", "close"),
    ("_async", "_sync"),
    ("asynchronous", "blocking"),
]
_WORD_RES: Final = [(re.compile(rf"\b{old}\b"), new) for old, new in _WORDS]
_KEYWORDS: Final = [
    (re.compile(r"\basync def\b"), "def"),
    (re.compile(r"\basync with\b"), "with"),
    (re.compile(r"\basync for\b"), "for"),
    (re.compile(r"\bawait "), ""),
]
_ASYNC_ONLY: Final = re.compile(r"#\s*async-only\s*$")
_SYNC_ONLY: Final = re.compile(r"^(\s*)# sync-only: (.*)$")


def _strip_awaitable(line: str) -> str:
    """``Awaitable[T]`` -> ``T``, with nested brackets inside ``T``."""
    while (start := line.find("Awaitable[")) != -1:
        depth, i = 0, start + len("Awaitable")
        for i in range(start + len("Awaitable"), len(line)):  # i is used after the loop
            if line[i] == "[":
                depth += 1
            elif line[i] == "]":
                depth -= 1
                if depth == 0:
                    break
        else:
            raise SystemExit(f"unasync: unbalanced Awaitable[...] in {line!r}")
        line = line[:start] + line[start + len("Awaitable["):i] + line[i + 1:]
    return line


_ASYNC_ONLY_NAMES: Final = re.compile(r"\bAwaitable, |, Awaitable\b")


def _rewrite(line: str) -> str:
    """One line, async spellings replaced by blocking ones."""
    for pattern, repl in [*_KEYWORDS, *_WORD_RES]:
        line = pattern.sub(repl, line)
    if line.startswith("from ") and " import " in line:
        line = _ASYNC_ONLY_NAMES.sub("", line)
    return _strip_awaitable(line)


def convert(text: str, name: str) -> str:
    """The blocking twin of one async source file."""
    out = [f"# Generated from drivers/mcp_sansio_base/_async/{name} by scripts/unasync.py: do not edit.\n"]
    for line in text.splitlines(keepends=True):
        if _ASYNC_ONLY.search(line):
            continue
        match = _SYNC_ONLY.match(line)
        if match:
            out.append(f"{match.group(1)}{match.group(2)}\n")
            continue
        out.append(_rewrite(line))
    return "".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    check = parser.parse_args().check
    stale = []
    for source in sorted(SOURCE.glob("*.py")):
        target = TARGET / source.name
        want = convert(source.read_text(), source.name)
        have = target.read_text() if target.exists() else None
        if have == want:
            continue
        stale.append(target)
        if not check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(want)
    known = {p.name for p in SOURCE.glob("*.py")}
    orphans = [p for p in TARGET.glob("*.py") if p.name not in known]
    if check and (stale or orphans):
        for path in [*stale, *orphans]:
            print(f"unasync: {path.relative_to(ROOT)} is stale: run scripts/unasync.py", file=sys.stderr)
        return 1
    for path in orphans:
        path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
