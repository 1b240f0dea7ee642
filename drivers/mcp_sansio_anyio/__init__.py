"""anyio driver for mcp-sansio (asyncio or trio): ``connect_stdio``, ``connect_http``,
``connect_websocket``, each ``async with connect_*(...) as client``; ``serve_stdio``,
``serve_http`` and ``serve_websocket`` run an ``MCPServer``.

The HTTP and WebSocket parts load on first use, so a stdio-only program never imports
h11, wsproto or ssl.
"""

from typing import TYPE_CHECKING

from mcp_sansio_base._async.client import AsyncClient
from mcp_sansio_base._async.handlers import Handlers
from mcp_sansio_base.lazy import lazy_exports

from .stdio import StdioConnection, connect_stdio

if TYPE_CHECKING:
    from mcp_sansio_oauth import FileTokenStore, MemoryTokenStore, OAuth, StoredToken, TokenStore, es256_key

    from .http import HttpConnection, connect_http
    from .serve import serve_http, serve_stdio, serve_websocket
    from .websocket import WebSocketConnection, connect_websocket

__all__ = [
    "AsyncClient",
    "FileTokenStore",
    "Handlers",
    "HttpConnection",
    "MemoryTokenStore",
    "OAuth",
    "StdioConnection",
    "StoredToken",
    "TokenStore",
    "WebSocketConnection",
    "connect_http",
    "connect_stdio",
    "connect_websocket",
    "es256_key",
    "serve_http",
    "serve_stdio",
    "serve_websocket",
]

__getattr__ = lazy_exports(__name__)
