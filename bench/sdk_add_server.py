"""The official SDK's ``MCPServer`` (mcp 2.3) with the same ``add`` tool as ``add_server.py``.

``python bench/sdk_add_server.py`` serves stdio; ``--http PORT [--json]`` serves Streamable
HTTP under uvicorn (SSE answers unless ``--json``), stateful, as ``MCPServer.run`` does.
"""

from __future__ import annotations

import argparse

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("add-server")


@server.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return repr(a + b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    if options.http is None:
        server.run("stdio")
        return
    app = server.streamable_http_app(json_response=options.json)
    uvicorn.run(app, host="127.0.0.1", port=options.http, log_level="warning")


if __name__ == "__main__":
    main()
