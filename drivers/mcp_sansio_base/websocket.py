"""The loop-neutral half of every driver's WebSocket connection: the core built from the
``connect_websocket`` options, and the properties the connection shows; a driver mixes
:class:`WebSocketParts` in before its socket driver, and ``websocket_connector`` (in
``_async/connect_websocket.py``) makes its ``connect_websocket``.

Every WebSocket decision (the upgrade, frames, pings, the closing handshake, failures) is
made by :class:`mcp_sansio.websocket.WebSocketClient`; a driver's socket driver opens the
socket it asks for and copies bytes both ways (STYLE.md section 8).
"""

from __future__ import annotations

import os

from mcp_sansio.config import ClientConfig
from mcp_sansio.front import SessionFront
from mcp_sansio.proxy import proxy_settings
from mcp_sansio.types import ClientCapabilities
from mcp_sansio.websocket import WebSocketClient

from .options import WebSocketKeys

__all__ = ["CONNECT_DOC", "WebSocketParts", "websocket_core"]

CONNECT_DOC = """Speak MCP to the server at ``url`` (``ws://`` or ``wss://``) over one WebSocket
(subprotocol ``mcp``); the options are ``WebSocketOptions``. ``ws`` URLs go through the
``http`` proxy, ``wss`` ones through the ``https`` proxy, both in a CONNECT tunnel.
Leaving the block runs the closing handshake (bounded by ``close_timeout``).

Raises (on entering):
    LocalProtocolError: ``url`` is not a ws(s) URL, a header is malformed, or the
        proxy URL is unusable.
    ConnectionClosed, HttpError, Unauthorized, RequestTimeout, RemoteProtocolError,
    UnsupportedProtocolVersion: the handshake failed.
"""


class WebSocketParts:
    """``url`` and ``subprotocol`` of a WebSocket connection."""

    _core: SessionFront

    @property
    def url(self) -> str:
        """The server's ``ws://`` or ``wss://`` URL, normalised."""
        return self._websocket.url

    @property
    def subprotocol(self) -> str | None:
        """The subprotocol the server accepted: ``"mcp"`` (or ``None`` if it named none)."""
        return self._websocket.subprotocol

    @property
    def _websocket(self) -> WebSocketClient:
        core = self._core
        assert isinstance(core, WebSocketClient)  # what websocket_connector builds
        return core



def websocket_core(url: str, config: ClientConfig, capabilities: ClientCapabilities,
                   options: WebSocketKeys) -> WebSocketClient:
    """The core of a WebSocket connection.

    Raises:
        LocalProtocolError: ``url``, a header or the proxy URL is invalid.
    """
    return WebSocketClient(url, config=config, capabilities=capabilities, headers=options.get("headers"),
                           ping_interval=options.get("ping_interval"),
                           proxies=proxy_settings(options.get("proxy", True), os.environ))
