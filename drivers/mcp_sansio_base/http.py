"""The loop-neutral half of every driver's HTTP connection: the core (and, with
``auth=``, its OAuth host) built from the ``connect_http`` options, and the properties the
connection shows; a driver mixes :class:`HttpParts` in before its socket driver and only
moves bytes (and serves the OAuth redirect on its loop).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from mcp_sansio.config import ClientConfig
from mcp_sansio.http_transport import HttpClient
from mcp_sansio.types import ClientCapabilities
from mcp_sansio_oauth.host import OAuthHost, http_core

from .options import HttpKeys

__all__ = ["CONNECT_DOC", "HttpParts", "bind_redirect", "http_parts"]

CONNECT_DOC = """Speak MCP to the server at ``url`` over Streamable HTTP (or legacy HTTP+SSE); the
options are ``HttpOptions``. With ``auth=OAuth(...)`` the browser flow serves its redirect
on ``127.0.0.1`` and opens the browser; tokens go to ``auth.store``. Leaving the block
ends the session (its ``DELETE``, bounded by ``close_timeout``) and closes every socket.

Raises (on entering):
    LocalProtocolError: ``url`` is not an http(s) URL, ``auth`` conflicts with an
        ``Authorization`` header, or the proxy URL is unusable.
    OSError: the redirect port cannot be bound.
    ConnectionClosed, HttpError, Unauthorized (InsufficientScope), ProxyError,
    RequestTimeout, UnsupportedProtocolVersion: the handshake failed.
"""


class HttpParts:
    """``transport`` and ``session_id`` of an HTTP connection."""

    _client: HttpClient

    @property
    def transport(self) -> str:
        """The HTTP transport in use: ``"streamable-http"`` or ``"sse"``."""
        return self._client.transport

    @property
    def session_id(self) -> str | None:
        """The server's ``Mcp-Session-Id``, if it gave one."""
        return self._client.session_id


def http_parts(url: str, now: float, config: ClientConfig, capabilities: ClientCapabilities,
               options: HttpKeys) -> tuple[HttpClient, OAuthHost | None]:
    """The core of an HTTP connection, and its OAuth host (with ``auth=``).

    Raises:
        LocalProtocolError: ``url``, the settings or the proxy URL are invalid.
        OSError: the OAuth redirect port cannot be bound.
    """
    return http_core(url, options.get("auth"), now=now, config=config, capabilities=capabilities,
                     headers=options.get("headers"), transport=options.get("transport", "auto"),
                     proxy=options.get("proxy", True))


def bind_redirect(oauth: OAuthHost, now: Callable[[], float]) -> socket.socket | None:
    """The bound socket to serve ``oauth``'s loopback redirect URI on; ``None`` if it cannot
    be bound: then the core has been told, and fails the flow (pump it)."""
    assert oauth.loopback is not None  # only a loopback redirect is served here
    try:
        return oauth.loopback.listening_socket()
    except OSError as exc:
        oauth.cannot_start(exc, now())
        return None
