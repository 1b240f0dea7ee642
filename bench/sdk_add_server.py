"""The official SDK's ``MCPServer`` (mcp 2.3) with the same ``add`` and ``text`` tools as
``add_server.py``.

``python bench/sdk_add_server.py`` serves stdio; ``--http PORT [--json]`` serves Streamable
HTTP under uvicorn (SSE answers unless ``--json``), stateful, as ``MCPServer.run`` does.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("add-server")


@server.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return repr(a + b)


@server.tool()
def text(size: int) -> str:
    """A text of ``size`` bytes."""
    return "a" * size


def serve(run_stdio: Callable[[], None], http_app: Callable[[bool], Any]) -> None:
    """Serve stdio (``run_stdio``), or with ``--http PORT [--json]`` the ASGI app
    ``http_app(json_response)`` under uvicorn: the command line of this bench's peers."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    if options.http is None:
        run_stdio()
        return
    uvicorn.run(http_app(options.json), host="127.0.0.1", port=options.http, log_level="warning")


if __name__ == "__main__":
    serve(lambda: server.run("stdio"), lambda json: server.streamable_http_app(json_response=json))
