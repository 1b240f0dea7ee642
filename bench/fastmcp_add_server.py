# mypy: disable-error-code="untyped-decorator"
"""FastMCP 4.2 (the standalone ``fastmcp`` package) with the same ``add`` and ``text`` tools as
``add_server.py``, for the server benchmark's FastMCP rows.

``python bench/fastmcp_add_server.py`` serves stdio; ``--http PORT [--json]`` serves
Streamable HTTP under uvicorn (SSE answers unless ``--json``), stateful, at ``/mcp``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastmcp import FastMCP

if __name__ == "__main__":  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.sdk_add_server import serve

server = FastMCP("add-server")


@server.tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return repr(a + b)


@server.tool
def text(size: int) -> str:
    """A text of ``size`` bytes."""
    return "a" * size


if __name__ == "__main__":
    serve(lambda: server.run("stdio", show_banner=False),
          lambda json: server.http_app(path="/mcp", json_response=json))
