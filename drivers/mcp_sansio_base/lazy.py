"""The lazily loaded names of every driver package.

A driver's HTTP and WebSocket parts, and the OAuth settings, load on first use, so a
stdio-only program never imports h11, wsproto or ssl; each driver's ``__init__`` sets
``__getattr__ = lazy_exports(__name__)``.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Final

__all__ = ["LAZY", "lazy_exports"]

LAZY: Final = {
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
    "serve_http": ".serve",
    "serve_stdio": ".serve",
    "serve_websocket": ".serve",
}
"""Name -> the module that defines it (relative ones: within the driver package)."""


def lazy_exports(package: str) -> Callable[[str], object]:
    """The module ``__getattr__`` of driver package ``package``: each name in :data:`LAZY`
    is imported on first access, then kept in the package's namespace."""
    namespace = vars(import_module(package))

    def __getattr__(name: str) -> object:
        module = LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
