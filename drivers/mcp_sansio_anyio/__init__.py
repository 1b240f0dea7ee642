"""anyio driver for mcp-sansio (asyncio or trio): ``connect_stdio``, ``connect_http``,
``connect_websocket``, each ``async with connect_*(...) as client``.

The HTTP and WebSocket parts load on first use, so a stdio-only program never imports
h11, wsproto or ssl.
"""

from typing import TYPE_CHECKING

from .stdio import StdioConnection, connect_stdio

if TYPE_CHECKING:
    from mcp_sansio_oauth import FileTokenStore, MemoryTokenStore, OAuth, StoredToken, TokenStore, es256_key

    from .http import HttpConnection, connect_http
    from .websocket import WebSocketConnection, connect_websocket

__all__ = [
    "FileTokenStore",
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
]

_LAZY = {
    "HttpConnection": ".http",
    "connect_http": ".http",
    "WebSocketConnection": ".websocket",
    "connect_websocket": ".websocket",
    "FileTokenStore": "mcp_sansio_oauth",
    "MemoryTokenStore": "mcp_sansio_oauth",
    "OAuth": "mcp_sansio_oauth",
    "StoredToken": "mcp_sansio_oauth",
    "TokenStore": "mcp_sansio_oauth",
    "es256_key": "mcp_sansio_oauth",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
