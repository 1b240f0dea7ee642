"""Blocking driver for mcp-sansio: ``with connect_stdio(cmd, args) as client:
client.call_tool(...)``, and likewise ``connect_http`` and ``connect_websocket``.

The HTTP and WebSocket parts load on first use, so a stdio-only program never imports
h11, wsproto or ssl.
"""

from typing import TYPE_CHECKING

from mcp_sansio_base._sync.client import Client
from mcp_sansio_base._sync.handlers import Handlers
from mcp_sansio_base.lazy import lazy_exports

from .stdio import StdioConnection, connect_stdio

if TYPE_CHECKING:
    from mcp_sansio_oauth import FileTokenStore, MemoryTokenStore, OAuth, StoredToken, TokenStore, es256_key

    from .http import HttpConnection, connect_http
    from .serve import serve_http, serve_stdio, serve_websocket
    from .websocket import WebSocketConnection, connect_websocket

__all__ = [
    "Client",
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
