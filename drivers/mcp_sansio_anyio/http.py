"""anyio driver for MCP over HTTP (asyncio or trio): TCP/TLS sockets, one timer, the pump.

Every HTTP decision (connections, headers, statuses, retries, session expiry) is made
by :class:`mcp_sansio.http_transport.HttpClient`; the shared socket driver only opens
the sockets it asks for and copies bytes both ways.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator, Mapping
from typing import Literal

from mcp_sansio import ClientConfig
from mcp_sansio.handlers import client_capabilities
from mcp_sansio.http_transport import HttpClient, TransportMode
from mcp_sansio_asyncio.client import ElicitationHandler, NotificationHandler, RootsArg, SamplingHandler

from ._sockets import SocketDriver

__all__ = ["HttpConnection", "connect_http"]

Transport = TransportMode | Literal["auto", "streamable-http", "sse"]


class HttpConnection(SocketDriver):
    """A client connected to an MCP server over HTTP; use it through :func:`connect_http`."""

    def __init__(
        self, url: str, *, headers: Mapping[str, str] | None, transport: Transport,
        config: ClientConfig, on_sampling: SamplingHandler | None,
        on_elicitation: ElicitationHandler | None, roots: RootsArg | None,
        on_notification: NotificationHandler | None,
    ) -> None:
        caps = client_capabilities(sampling=on_sampling is not None,
                                   elicitation=on_elicitation is not None, roots=roots is not None)
        self._client = HttpClient(url, config=config, capabilities=caps, headers=headers,
                                  transport=transport, jitter_seed=random.getrandbits(64))
        super().__init__(self._client, on_sampling=on_sampling, on_elicitation=on_elicitation,
                         roots=roots, on_notification=on_notification)

    @property
    def transport(self) -> str:
        """The HTTP transport in use: ``"streamable-http"`` or ``"sse"``."""
        return self._client.transport

    @property
    def session_id(self) -> str | None:
        """The server's ``Mcp-Session-Id``, if it gave one."""
        return self._client.session_id


@contextlib.asynccontextmanager
async def connect_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    transport: Transport = "auto",
    config: ClientConfig | None = None,
    on_sampling: SamplingHandler | None = None,
    on_elicitation: ElicitationHandler | None = None,
    roots: RootsArg | None = None,
    on_notification: NotificationHandler | None = None,
) -> AsyncIterator[HttpConnection]:
    """Speak MCP to the server at ``url`` over Streamable HTTP (or legacy HTTP+SSE).

    ``headers`` (API keys, ...) go on every request to that origin. ``transport`` is
    ``"auto"`` (Streamable HTTP, falling back to HTTP+SSE on 400/404/405),
    ``"streamable-http"`` or ``"sse"``. Leaving the block ends the session (its
    ``DELETE``, bounded by ``close_timeout``, shielded from cancellation) and closes
    every socket.

    Raises (on entering):
        LocalProtocolError: ``url`` is not an http(s) URL.
        ConnectionClosed, HttpError, Unauthorized, RequestTimeout,
        UnsupportedProtocolVersion: the handshake failed.
    """
    conn = HttpConnection(
        url, headers=headers, transport=transport, config=config or ClientConfig(),
        on_sampling=on_sampling, on_elicitation=on_elicitation, roots=roots,
        on_notification=on_notification,
    )
    await conn._open()
    try:
        yield conn
    finally:
        await conn.aclose()
