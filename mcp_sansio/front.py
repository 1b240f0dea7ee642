"""The session's public surface on a transport: what a caller asks of any client.

A transport (:class:`~mcp_sansio.stdio.StdioClient`, :class:`~mcp_sansio.http_transport.HttpClient`,
:class:`~mcp_sansio.websocket.WebSocketClient`) owns a :class:`~mcp_sansio.session.ClientSession`
and adds only how bytes move; this base forwards the protocol calls to that session, so
they are written once and a driver can take any transport as a :class:`SessionFront`.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from .calls import Calls
from .config import ClientConfig
from .events import ClientEvent, RequestId
from .session import ClientSession, Params, Phase
from .types import (
    ClientCapabilities,
    Implementation,
    ServerCapabilities,
)
from .versions import VersionRules

__all__ = ["SessionFront"]


class SessionFront(Calls):
    """A client's protocol surface, forwarded to the session it owns (see
    :class:`~mcp_sansio.session.ClientSession` for what each call does)."""

    def __init__(self, session: ClientSession) -> None:
        self._session = session

    @property
    def session(self) -> ClientSession:
        """The protocol state machine this transport carries."""
        return self._session

    @property
    def config(self) -> ClientConfig:
        """Limits and timeouts."""
        return self._session.config

    @property
    def capabilities(self) -> ClientCapabilities:
        """What the client declares."""
        return self._session.capabilities

    @property
    def era(self) -> str | None:
        """``"legacy"`` or ``"modern"``, once known."""
        return self._session.era

    @property
    def phase(self) -> Phase:
        """The lifecycle phase."""
        return self._session.phase

    @property
    def rules(self) -> VersionRules | None:
        """The negotiated revision's row."""
        return self._session.rules

    @property
    def protocol_version(self) -> str | None:
        """The negotiated revision."""
        return self._session.protocol_version

    @property
    def server_info(self) -> Implementation | None:
        """``serverInfo`` from the handshake."""
        return self._session.server_info

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        """What the server declared."""
        return self._session.server_capabilities

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if any."""
        return self._session.instructions

    @property
    def outgoing_meta(self) -> Mapping[str, str] | None:
        """Entries added to ``params._meta`` of every request sent while set (the trace
        context): see :attr:`ClientSession.outgoing_meta`."""
        return self._session.outgoing_meta

    @outgoing_meta.setter
    def outgoing_meta(self, meta: Mapping[str, str] | None) -> None:
        self._session.outgoing_meta = meta

    @property
    def next_request_id(self) -> int:
        """The id the next request sent will carry: :attr:`ClientSession.next_request_id`."""
        return self._session.next_request_id

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timeout` is due (a transport adds its own timers)."""
        return self._session.next_deadline()

    def handle_timeout(self, now: float) -> None:
        """Fire what is due at ``now`` (a transport adds its own timers)."""
        self._session.handle_timeout(now)

    def next_event(self) -> ClientEvent | None:
        """The oldest queued event, or ``None``."""
        return self._session.next_event()

    def pending_requests(self) -> list[RequestId]:
        """Ids the caller is still waiting on."""
        return self._session.pending_requests()

    def request(self, method: str, params: Params = None, *, now: float, timeout: float | None = None,
                all_pages: bool = False) -> int:
        """Any request: :meth:`ClientSession.request`."""
        return self._session.request(method, params, now=now, timeout=timeout, all_pages=all_pages)

    def _send_call(self, method: str, params: msgspec.Struct | None, now: float, timeout: float | None,
                   all_pages: bool) -> int:
        return self._session.send_built(method, params, now, timeout, all_pages)

    def subscribe_resource(self, uri: str, *, now: float, timeout: float | None = None) -> int:
        """``resources/subscribe`` (stateless era: joins the listen filter)."""
        return self._session.subscribe_resource(uri, now=now, timeout=timeout)

    def unsubscribe_resource(self, uri: str, *, now: float, timeout: float | None = None) -> int:
        """``resources/unsubscribe`` (stateless era: leaves the listen filter)."""
        return self._session.unsubscribe_resource(uri, now=now, timeout=timeout)

    def listen(self, *, now: float) -> None:
        """Stateless era: (re-)open ``subscriptions/listen``."""
        self._session.listen(now=now)

    def set_logging_level(self, level: str, *, now: float, timeout: float | None = None) -> int:
        """``logging/setLevel`` (stateless era: carried in every request's ``_meta``)."""
        return self._session.set_logging_level(level, now=now, timeout=timeout)

    def ping(self, *, now: float, timeout: float | None = None) -> int:
        """``ping`` (stateless era: a ``server/discover`` round trip)."""
        return self._session.ping(now=now, timeout=timeout)

    def notify(self, method: str, params: Params = None, *, now: float) -> None:
        """Send a notification."""
        self._session.notify(method, params, now=now)

    def cancel(self, request_id: RequestId, *, now: float, reason: str | None = None) -> None:
        """Give up on a request (``notifications/cancelled`` goes out)."""
        self._session.cancel(request_id, now=now, reason=reason)

    def respond(self, request_id: RequestId, result: msgspec.Struct | Mapping[str, object], *,
                now: float) -> None:
        """Answer the server's request."""
        self._session.respond(request_id, result, now=now)

    def respond_error(self, request_id: RequestId, code: int, message: str, data: object = None, *,
                      now: float) -> None:
        """Answer the server's request with a JSON-RPC error."""
        self._session.respond_error(request_id, code, message, data, now=now)
