"""Blocking driver for mcp-sansio: ``with connect_stdio(cmd, args) as client: client.call_tool(...)``."""

from .client import Client
from .stdio import StdioConnection, connect_stdio

__all__ = ["Client", "StdioConnection", "connect_stdio"]
