"""anyio driver for mcp-sansio (asyncio or trio): ``async with connect_stdio(cmd, args) as client``."""

from .stdio import StdioConnection, connect_stdio

__all__ = ["StdioConnection", "connect_stdio"]
