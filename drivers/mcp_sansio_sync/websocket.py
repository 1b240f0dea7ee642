"""Blocking driver for MCP over WebSocket: one non-blocking socket, ``selectors``, the pump.

Every WebSocket decision (the upgrade, frames, pings, the closing handshake, failures)
is made by :class:`mcp_sansio.websocket.WebSocketClient`; the shared socket driver opens
the socket it asks for and copies bytes both ways (STYLE.md section 8).
"""

from __future__ import annotations

from typing import Unpack

from mcp_sansio_base._sync.connect import Connect
from mcp_sansio_base._sync.handlers import WebSocketOptions, resolve
from mcp_sansio_base.websocket import CONNECT_DOC, WebSocketParts, websocket_core

from ._sockets import SocketConnection

__all__ = ["WebSocketConnection", "connect_websocket"]


class WebSocketConnection(WebSocketParts, SocketConnection):
    """A client connected over WebSocket; use it through :func:`connect_websocket`."""

    def __init__(self, url: str, options: WebSocketOptions) -> None:
        settings = resolve(options)
        self._client = websocket_core(url, settings.config, settings.handlers.capabilities(), options)
        super().__init__(self._client, settings.handlers, options.get("ssl_context"))


def connect_websocket(url: str, **options: Unpack[WebSocketOptions]) -> Connect[WebSocketConnection]:
    return Connect(lambda: WebSocketConnection(url, options))


connect_websocket.__doc__ = CONNECT_DOC
