"""What the HTTP client knows of the MCP session it carries, beyond any one exchange.

State held: the ``Mcp-Session-Id`` the server gave; whether the session runs on the
legacy HTTP+SSE transport (2024-11-05) and, there, the endpoint its messages go to; the
messages held until the session is ready (or the endpoint known) and, once it is, until
the GET stream for server-initiated messages has its response head (bounded in time); the
``initialize`` message as sent (re-sent when falling back to the legacy transport); and,
across sessions re-created after expiry, how many were re-created in a row and which
requests were re-sent on the new one (each is re-sent once). It outlives every exchange and is what the
session's :class:`~mcp_sansio.session.Link` callbacks consult, so it lives apart from the
exchange table and from the decisions on responses. See the "Session Management" and
"Backwards Compatibility" sections of the Streamable HTTP transport.
"""

from __future__ import annotations

from collections.abc import Callable

from .config import ClientConfig
from .errors import RemoteProtocolError
from .urls import Url, resolve_url, same_origin

__all__ = ["HttpSessionState", "legacy_endpoint"]

Message = tuple[int | None, bytes]  # (request id, or None for a notification or a response; the wire)


class HttpSessionState:
    """The session's id, transport and held messages, and its re-creation count."""

    __slots__ = ("endpoint", "fallback_status", "gate_until", "gated", "generation", "held", "init_wire",
                 "legacy", "resent", "restarts", "session_id")

    def __init__(self, *, legacy: bool) -> None:
        self.session_id: str | None = None
        self.legacy = legacy  # the 2024-11-05 HTTP+SSE transport: chosen, or fallen back to
        self.endpoint: Url | None = None  # where legacy messages are POSTed, once the stream said
        self.fallback_status = 0  # what the Streamable HTTP attempt got, when it fell back
        self.held: list[Message] = []  # messages waiting for the session (or the endpoint)
        # The session is ready, its GET stream opening: messages wait (in order) for the
        # stream's response head until ``gate_until`` at the latest. ``None``: no wait.
        self.gate_until: float | None = None
        self.gated: list[Message] = []
        self.init_wire = b""  # the initialize request as sent
        self.generation = 0  # sessions re-created after expiry
        self.resent: set[int] = set()  # requests re-sent on the re-created session
        self.restarts = 0  # sessions re-created in a row, with no request answered between

    def carry(self, request_id: int | None, message: bytes, *, handshake_id: int | None, ready: bool) -> bool:
        """Whether ``message`` goes out now; if not, it is held until the session is ready
        (a request) or until the GET stream opened (any message, see :meth:`gate`)."""
        if request_id is not None:
            if request_id == handshake_id:
                self.init_wire = message
                return True
            if not ready:
                self.held.append((request_id, message))
                return False
        if self.gate_until is not None:
            self.gated.append((request_id, message))
            return False
        return True

    def gate(self, until: float, first: list[Message]) -> None:
        """Hold what goes out (``first``, then whatever is carried) until :meth:`ungate`;
        ``until`` is when it goes anyway."""
        self.gate_until = until
        self.gated = first

    def ungate(self) -> list[Message]:
        """What the gate held, in order; messages go out at once from now on."""
        gated, self.gated, self.gate_until = self.gated, [], None
        return gated

    def withdraw(self, request_id: int) -> bool:
        """Drop the held request ``request_id`` (it failed before it went out: held for the
        GET stream, or for a session still in its handshake); whether it was held."""
        for queue in (self.gated, self.held):
            for i, (rid, _) in enumerate(queue):
                if rid == request_id:
                    del queue[i]
                    return True
        return False

    def ready(self, in_flight: Callable[[], list[tuple[int, bytes]]]) -> list[Message]:
        """The session is ready: what to send now, in order. After an expiry, what was in
        flight on the old session is re-sent once (requests made meanwhile were held, and
        follow)."""
        held, self.held = self.held, []
        if not self.generation:
            return held
        skip = self.resent | {rid for rid, _ in held}
        resend: list[Message] = [(rid, wire) for rid, wire in in_flight() if rid not in skip]
        self.resent.update(rid for rid, _ in resend if rid is not None)
        return resend + held

    def ended(self, request_id: int, *, answered: bool) -> None:
        """Request ``request_id`` ended; ``answered``: the server answered it, so the
        session works and the count of restarts in a row starts over."""
        self.resent.discard(request_id)
        if answered:
            self.restarts = 0

    def expire(self, config: ClientConfig) -> tuple[bool, str | None]:
        """The server forgot the session: forget its id (nothing more goes out with it,
        not even DELETE). Returns whether to re-create it (counted), and the old id."""
        restart = config.reinitialize_on_expiry and self.restarts < config.max_session_restarts
        old, self.session_id = self.session_id, None
        # Requests the gate held never went out: they wait for the new session as requests
        # made during its handshake do; the rest (notifications, answers) was the old one's.
        self.held[:0] = [(rid, wire) for rid, wire in self.ungate() if rid is not None]
        if restart:
            self.restarts += 1
            self.generation += 1
        return restart, old

    def fall_back(self, status: int, handshake_id: int) -> None:
        """Fall back to the legacy transport after ``status``: the ``initialize`` goes
        again, first, once the endpoint is known."""
        self.fallback_status = status
        self.legacy = True
        self.held.insert(0, (handshake_id, self.init_wire))

    def endpoint_known(self, endpoint: Url) -> list[Message]:
        """The legacy stream named ``endpoint``: what was held for it (only the first time)."""
        first = self.endpoint is None
        self.endpoint = endpoint
        if not first:
            return []
        held, self.held = self.held, []
        return held


def legacy_endpoint(stream: Url, data: str) -> Url | str:
    """The URL the legacy ``endpoint`` event ``data`` on ``stream`` names, or why it names
    none the client may use (it must be a URL on the stream's origin)."""
    try:
        endpoint = resolve_url(stream, data.strip())
    except RemoteProtocolError as exc:
        return f"the SSE endpoint event is not a URL: {exc}"
    if not same_origin(endpoint, stream):
        return f"the SSE endpoint {endpoint} is on another origin than {stream}"
    return endpoint
