"""asyncio driver for mcp-sansio: ``async with connect_stdio(cmd, args) as client``."""

from .client import AsyncClient
from .stdio import StdioConnection, connect_stdio

__all__ = ["AsyncClient", "StdioConnection", "connect_stdio"]
