"""The Streamable HTTP server's settings (``HttpConfig``, also importable from ``server.http``)."""

from __future__ import annotations

from typing import Literal

import msgspec

from .http11 import HttpLimits
from .http_headers import LOOPBACK_HOSTS, check_origins

__all__ = ["HttpConfig"]


class HttpConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The HTTP transport's settings.

    Attributes:
        path: the MCP endpoint's path.
        allowed_hosts: host names the ``Host`` header may name (any port); ``None``: any.
        allowed_origins: origins (``https://app.example.com``: scheme, host and port) a
            browser page calling the server may have; a request without ``Origin`` (not
            from a browser) always passes, and so does the server's own origin when
            ``allowed_hosts`` checks the ``Host``. Default: none. ``None``: any (an
            explicit opt-out of the spec's MUST).
        response_mode: ``"auto"`` (JSON when the answer is all there is, SSE otherwise),
            ``"json"`` or ``"sse"`` (always).
        max_connections: connections served at once. A connection past it takes the
            place of the connection idle longest of the peer holding the most (or, for
            another client, of its request still arriving closest to its deadline: a
            slow head or body), and is closed at once only when none can go; a request
            being answered is never cut.
        max_connections_per_peer: connections one peer (client address) may hold; past
            it, its own idle connection goes, or the new one.
        max_sessions: handshake-era sessions at once. Past it, an ``initialize`` ends
            the least recently active idle session that never served a request (an
            opened-and-abandoned one); a session in use is never ended for a new one:
            when none can go, ``initialize`` gets 503.
        max_sessions_per_peer: sessions one peer may hold; past it, an ``initialize``
            from it ends its own least recently active idle session (else 429), so one
            client cannot fill the table. With ``auth`` the peer is the principal (the
            token's issuer and subject), whatever address it comes from: users behind one
            NAT or proxy do not share a cap, and one user cannot escape it by moving.
        session_idle_timeout: seconds without a request after which a session ends.
        sse_retry_ms: the ``retry`` hint of the priming event of resumable streams.
        limits: the HTTP/1.1 bounds.
    """

    path: str = "/mcp"
    allowed_hosts: tuple[str, ...] | None = None
    allowed_origins: tuple[str, ...] | None = ()
    response_mode: Literal["auto", "json", "sse"] = "auto"
    max_connections: int = 1024
    max_connections_per_peer: int = 256
    max_sessions: int = 4096
    max_sessions_per_peer: int = 256
    session_idle_timeout: float = 1800.0
    sse_retry_ms: int = 1000
    limits: HttpLimits = HttpLimits()

    @classmethod
    def loopback(cls, **overrides: object) -> HttpConfig:
        """Settings for a server bound to loopback: DNS-rebinding protection on (only
        ``localhost``, ``127.0.0.1`` and ``[::1]`` as ``Host``, so only pages of this very
        server as ``Origin``, unless ``allowed_origins`` names more)."""
        return msgspec.structs.replace(cls(allowed_hosts=LOOPBACK_HOSTS), **overrides)

    def __post_init__(self) -> None:
        check_origins(self.allowed_origins)
