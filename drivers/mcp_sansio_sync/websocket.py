"""Blocking driver for MCP over WebSocket: the shared connection (:mod:`mcp_sansio_base.websocket`)
on one non-blocking socket watched by ``selectors``."""

from __future__ import annotations

from mcp_sansio_base._sync.connect_websocket import websocket_connector
from mcp_sansio_base.websocket import WebSocketParts

from ._sockets import SocketConnection

__all__ = ["WebSocketConnection", "connect_websocket"]


class WebSocketConnection(WebSocketParts, SocketConnection):
    """A client connected over WebSocket; use it through :func:`connect_websocket`."""


connect_websocket = websocket_connector(WebSocketConnection)
