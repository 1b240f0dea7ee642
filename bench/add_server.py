"""The server of the server benchmark: ``add(a, b)``, answering the sum as text, and
``text(size)``, answering ``size`` bytes of text (``bench_sizes.py``: cost with message size).

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


def text(size: int) -> str:
    """A text of ``size`` bytes."""
    return "a" * size


async def text_async(size: int) -> str:
    """A text of ``size`` bytes."""
    return "a" * size


ON_LOOP = os.environ.get("BENCH_ASYNC_ADD") == "1"
app.tool(name="add")(add_async if ON_LOOP else add)
app.tool(name="text")(text_async if ON_LOOP else text)

asgi = AsgiApp(app)
