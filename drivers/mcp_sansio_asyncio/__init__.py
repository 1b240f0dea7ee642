"""asyncio driver for mcp-sansio: ``connect_stdio(cmd, args)``, ``connect_http(url)``.

The HTTP and WebSocket parts load on first use, so a stdio-only program never imports
h11, wsproto or ssl.
"""

from typing import TYPE_CHECKING

from .client import AsyncClient
from .stdio import StdioConnection, connect_stdio

if TYPE_CHECKING:
    from .http import HttpConnection, connect_http

__all__ = ["AsyncClient", "HttpConnection", "StdioConnection", "connect_http", "connect_stdio"]

_LAZY = {"HttpConnection": "http", "connect_http": "http"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
