"""asyncio driver for mcp-sansio: ``connect_stdio(cmd, args)`` and ``connect_http(url)``."""

from .client import AsyncClient
from .http import HttpConnection, connect_http
from .stdio import StdioConnection, connect_stdio

__all__ = ["AsyncClient", "HttpConnection", "StdioConnection", "connect_http", "connect_stdio"]
