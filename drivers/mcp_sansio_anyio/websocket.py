"""anyio driver for MCP over WebSocket (asyncio or trio): one TCP/TLS socket, the pump.

Every WebSocket decision (the upgrade, frames, pings, the closing handshake, failures)
is made by :class:`mcp_sansio.websocket.WebSocketClient`; the shared socket driver opens
the socket it asks for and copies bytes both ways (STYLE.md section 8).
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import AsyncIterator, Mapping

from mcp_sansio import ClientConfig
from mcp_sansio.handlers import client_capabilities
from mcp_sansio.proxy import proxy_settings
from mcp_sansio.websocket import WebSocketClient
from mcp_sansio_asyncio.client import ElicitationHandler, NotificationHandler, RootsArg, SamplingHandler

from ._sockets import SocketDriver

__all__ = ["WebSocketConnection", "connect_websocket"]


class WebSocketConnection(SocketDriver):
    """A client connected over WebSocket; use it through :func:`connect_websocket`."""

    def __init__(
        self, url: str, *, headers: Mapping[str, str] | None, config: ClientConfig,
        ping_interval: float | None, on_sampling: SamplingHandler | None,
        on_elicitation: ElicitationHandler | None, roots: RootsArg | None,
        on_notification: NotificationHandler | None, proxy: str | bool = True,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        caps = client_capabilities(sampling=on_sampling is not None,
                                   elicitation=on_elicitation is not None, roots=roots is not None)
        self._client = WebSocketClient(url, config=config, capabilities=caps, headers=headers,
                                       ping_interval=ping_interval, proxies=proxy_settings(proxy, os.environ))
        super().__init__(self._client, on_sampling=on_sampling, on_elicitation=on_elicitation,
                         roots=roots, on_notification=on_notification, ssl_context=ssl_context)

    @property
    def url(self) -> str:
        """The server's ``ws://`` or ``wss://`` URL, normalised."""
        return self._client.url

    @property
    def subprotocol(self) -> str | None:
        """The subprotocol the server accepted: ``"mcp"`` (or ``None`` if it named none)."""
        return self._client.subprotocol


@contextlib.asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    config: ClientConfig | None = None,
    ping_interval: float | None = None,
    on_sampling: SamplingHandler | None = None,
    on_elicitation: ElicitationHandler | None = None,
    roots: RootsArg | None = None,
    on_notification: NotificationHandler | None = None,
    proxy: str | bool = True,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[WebSocketConnection]:
    """Speak MCP to the server at ``url`` (``ws://`` or ``wss://``) over one WebSocket.

    ``headers`` go on the upgrade request. ``ping_interval`` turns on keepalive pings
    (a missing Pong then fails the connection); the default sends none. Leaving the
    block runs the closing handshake (bounded by ``close_timeout``, shielded from
    cancellation).

    ``proxy`` and ``ssl_context`` are as for ``connect_http``: ``ws`` URLs go through the
    ``http`` proxy, ``wss`` ones through the ``https`` proxy, both in a CONNECT tunnel.

    Raises (on entering):
        LocalProtocolError: ``url`` is not a ws(s) URL, a header is malformed, or the
            proxy URL is unusable.
        ConnectionClosed, HttpError, Unauthorized, RequestTimeout, RemoteProtocolError,
        UnsupportedProtocolVersion: the handshake failed.
    """
    conn = WebSocketConnection(
        url, headers=headers, config=config or ClientConfig(), ping_interval=ping_interval,
        on_sampling=on_sampling, on_elicitation=on_elicitation, roots=roots,
        on_notification=on_notification, proxy=proxy, ssl_context=ssl_context,
    )
    await conn._open()
    try:
        yield conn
    finally:
        await conn.aclose()
