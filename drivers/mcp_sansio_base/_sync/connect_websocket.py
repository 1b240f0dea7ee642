# Generated from drivers/mcp_sansio_base/_async/connect_websocket.py by scripts/unasync.py: do not edit.
"""``connect_websocket``, written once for every driver's socket connection class.

Its own module so that a program that never opens a WebSocket never loads wsproto, h11 or
ssl (``connect`` is imported by every driver's stdio path)."""

from __future__ import annotations

from collections.abc import Callable
from ssl import SSLContext
from typing import Protocol, Unpack

from mcp_sansio.websocket import WebSocketClient

from ..websocket import CONNECT_DOC, websocket_core
from .connect import C, Connect
from .handlers import Handlers, WebSocketOptions, resolve

__all__ = ["ConnectWebSocket", "websocket_connector"]


class ConnectWebSocket(Protocol[C]):
    """The signature of a driver's ``connect_websocket``, ``C`` its connection class."""

    def __call__(self, url: str, **options: Unpack[WebSocketOptions]) -> Connect[C]: ...


def websocket_connector(connection: Callable[[WebSocketClient, Handlers, SSLContext | None], C]
                        ) -> ConnectWebSocket[C]:
    """The ``connect_websocket`` of a driver whose socket connection class is ``connection``:
    the WebSocket core is built from the options here, the class only moves its bytes."""

    def connect_websocket(url: str, **options: Unpack[WebSocketOptions]) -> Connect[C]:
        def make() -> C:
            settings = resolve(options)
            core = websocket_core(url, settings.config, settings.handlers.capabilities(), options)
            return connection(core, settings.handlers, options.get("ssl_context"))

        return Connect(make)

    connect_websocket.__doc__ = CONNECT_DOC
    connect_websocket.__module__ = connection.__module__
    return connect_websocket
