"""anyio driver for MCP over WebSocket (asyncio or trio): the shared connection
(:mod:`mcp_sansio_base.websocket`) on this driver's socket driver, in its task group."""

from __future__ import annotations

from mcp_sansio_base._async.connect_websocket import websocket_connector
from mcp_sansio_base.websocket import WebSocketParts

from ._sockets import SocketDriver

__all__ = ["WebSocketConnection", "connect_websocket"]


class WebSocketConnection(WebSocketParts, SocketDriver):
    """A client connected over WebSocket; use it through :func:`connect_websocket`."""


connect_websocket = websocket_connector(WebSocketConnection)
