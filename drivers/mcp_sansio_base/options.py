"""The transport options of the ``connect_*`` functions, without the handlers.

The async and blocking ``*Options`` (in ``_async/handlers.py`` and its generated twin)
add the handler arguments, whose types differ between the two; the loop-neutral helpers
that build the cores take these handler-free parts, which both satisfy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypedDict

if TYPE_CHECKING:  # a stdio-only program never imports ssl or the OAuth host
    import ssl

    from mcp_sansio.http_transport import TransportMode
    from mcp_sansio_oauth import OAuth

__all__ = ["HttpKeys", "NetworkKeys", "StdioKeys", "WebSocketKeys"]


class StdioKeys(TypedDict, total=False):
    """``connect_stdio``: ``env`` entries are added to the current environment; ``cwd`` is
    the server's working directory."""

    env: Mapping[str, str] | None
    cwd: str | os.PathLike[str] | None


class NetworkKeys(TypedDict, total=False):
    """The remote transports: ``headers`` go on every request to the server's origin (API
    keys, a static ``Authorization``); ``proxy`` is ``True`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, ``NO_PROXY`` from the environment, never for loopback targets), ``False``
    (none) or one ``http://[user:password@]host:port`` proxy for every target, reached in
    CONNECT tunnels; ``ssl_context`` replaces the system trust store."""

    headers: Mapping[str, str] | None
    proxy: str | bool
    ssl_context: ssl.SSLContext | None


class HttpKeys(NetworkKeys, total=False):
    """``connect_http``: ``transport`` is ``"auto"`` (Streamable HTTP, falling back to
    HTTP+SSE on 400/404/405), ``"streamable-http"`` or ``"sse"``; ``auth=OAuth(...)``
    authorizes with OAuth 2.1 whenever the server asks."""

    transport: TransportMode | Literal["auto", "streamable-http", "sse"]
    auth: OAuth | None


class WebSocketKeys(NetworkKeys, total=False):
    """``connect_websocket``: ``ping_interval`` turns on keepalive pings (a missing Pong
    then fails the connection); the default sends none."""

    ping_interval: float | None
