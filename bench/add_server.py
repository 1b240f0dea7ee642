"""The server of the server benchmark: one tool, ``add(a, b)``, answering the sum as text.

``mcp-sansio serve bench/add_server.py`` (stdio) or ``... --http PORT``; ``asgi`` is the same
server as an ASGI application (``uvicorn add_server:asgi``). With ``BENCH_ASYNC_ADD=1`` in the
environment the tool is an ``async def`` (run on the loop, no worker thread), so the benchmark
shows the transport's own cost apart from the plain-``def`` handler-thread policy.
"""

from __future__ import annotations

import os

from mcp_sansio import MCPServer
from mcp_sansio_asgi import AsgiApp

app = MCPServer("add-server", version="1.0.0")


def add(a: float, b: float) -> str:
    """Add two numbers."""
    return repr(a + b)


async def add_async(a: float, b: float) -> str:
    """Add two numbers."""
    return repr(a + b)


app.tool(name="add")(add_async if os.environ.get("BENCH_ASYNC_ADD") == "1" else add)

asgi = AsgiApp(app)
