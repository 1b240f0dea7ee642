# mypy: disable-error-code="untyped-decorator"
"""FastMCP 4.2 (the standalone ``fastmcp`` package) with the same ``add`` tool as
``add_server.py``, for the server benchmark's FastMCP rows.

``python bench/fastmcp_add_server.py`` serves stdio; ``--http PORT [--json]`` serves
Streamable HTTP under uvicorn (SSE answers unless ``--json``), stateful, at ``/mcp``.
"""

from __future__ import annotations

import argparse

import uvicorn
from fastmcp import FastMCP

server = FastMCP("add-server")


@server.tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return repr(a + b)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    if options.http is None:
        server.run("stdio", show_banner=False)
        return
    app = server.http_app(path="/mcp", json_response=options.json)
    uvicorn.run(app, host="127.0.0.1", port=options.http, log_level="warning")


if __name__ == "__main__":
    main()
