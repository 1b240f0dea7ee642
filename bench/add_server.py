"""The server of the server benchmark: one tool, ``add(a, b)``, answering the sum as text.

``mcp-sansio serve bench/add_server.py`` (stdio) or ``... --http PORT``; ``asgi`` is the same
server as an ASGI application (``uvicorn add_server:asgi``).
"""

from __future__ import annotations

from mcp_sansio import MCPServer
from mcp_sansio_asgi import AsgiApp

app = MCPServer("add-server", version="1.0.0")


@app.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return repr(a + b)


asgi = AsgiApp(app)
