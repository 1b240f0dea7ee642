"""OAuth for ``connect_http(url, auth=OAuth(...))``, shared by every driver.

The core (:class:`mcp_sansio.http_auth.AuthorizingHttpClient`) makes every OAuth
decision; this package holds what only the host has and what needs no event loop: the
settings, token stores, keys, and the loopback redirect's port and page. Each driver
accepts the browser's connection on its own loop (asyncio, anyio, or a selector).
"""

from .settings import BrowserOpener, OAuth, es256_key
from .stores import FileTokenStore, MemoryTokenStore, StoredToken, TokenStore, UnsafeTokenStore

__all__ = [
    "BrowserOpener",
    "FileTokenStore",
    "MemoryTokenStore",
    "OAuth",
    "StoredToken",
    "TokenStore",
    "UnsafeTokenStore",
    "es256_key",
]
