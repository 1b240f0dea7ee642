"""MCP over WebSocket, server side: one JSON-RPC message per text frame (wsproto).

``WebSocketServer`` accepts connections whose upgrade request names the subprotocol
``mcp`` (RFC 6455 section 4; as the official SDK 1.x serves it, the MCP specification
itself defines no WebSocket transport) and checks ``Host``/``Origin`` like the HTTP
server. With the app's ``auth``, the upgrade request must carry a valid bearer token
(``server.authz``: 401/403 before the upgrade, as over Streamable HTTP) and the
connection closes (1008) when that token expires, since no later message can bring a
fresh one. Each connection is one :class:`ServerSession`, as a stdio connection is. A message
over ``max_line_bytes`` closes the connection with 1009; a binary message is refused with
1003; control frames and the closing handshake are wsproto's and this module's. Output
waiting for a client that does not read is bounded as ``flow.py`` says: handlers wait
over ``high_water_bytes``; past ``max_buffer_bytes``, or congested for ``stall_timeout``,
the connection is dropped (its session ends: the WebSocket transport has no resumption).
"""

from __future__ import annotations

import contextlib
from collections import Counter, deque
from collections.abc import Hashable, Iterable
from typing import TYPE_CHECKING, Final

import msgspec
from wsproto import ConnectionType, WSConnection
from wsproto import events as wsevents
from wsproto.utilities import LocalProtocolError as WsLocalError
from wsproto.utilities import RemoteProtocolError as WsRemoteError

from ..errors import LocalProtocolError
from .authz import Allowed, AuthGate, Principal, Refusal, TokenVerdict
from .deadlines import Deadlines
from .endpoint import Endpoint, SubHost
from .flow import AT_ONCE, Backlog, FlowLimits
from .http11 import CloseConnection
from .http_headers import LOOPBACK_HOSTS, check_origins, host_allowed, origin_allowed
from .session import ServerSession

if TYPE_CHECKING:
    from .app import MCPServer

__all__ = ["WebSocketConfig", "WebSocketServer"]

_SUBPROTOCOL: Final = "mcp"
_TOO_BIG: Final = 1009
_UNSUPPORTED: Final = 1003
_GOING_AWAY: Final = 1001
_POLICY: Final = 1008


class WebSocketConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The WebSocket transport's settings.

    Attributes:
        path: the path upgrades must name (``None``: any).
        allowed_hosts: host names the ``Host`` header may name; ``None``: any.
        allowed_origins: origins a browser page opening the socket may have, as for
            ``HttpConfig`` (none by default; the server's own passes when ``Host`` is
            checked; ``None``: any). Browsers apply no CORS to WebSockets, so this check
            is the only one.
        max_connections: connections served at once.
        max_connections_per_peer: connections one peer (address) may hold at once, so
            that one client cannot take every connection (more are closed at once).
        flow: the bounds of output waiting for a client (``flow.py``).
    """

    path: str | None = None
    allowed_hosts: tuple[str, ...] | None = None
    allowed_origins: tuple[str, ...] | None = ()
    max_connections: int = 1024
    max_connections_per_peer: int = 128
    flow: FlowLimits = FlowLimits()

    @classmethod
    def loopback(cls, **overrides: object) -> WebSocketConfig:
        """Settings for a loopback bind: only loopback names as ``Host`` (so only this
        server's own pages as ``Origin``, unless ``allowed_origins`` names more)."""
        return msgspec.structs.replace(cls(allowed_hosts=LOOPBACK_HOSTS), **overrides)

    def __post_init__(self) -> None:
        check_origins(self.allowed_origins)


class _Link:
    """One WebSocket connection: wsproto, its session once upgraded, a partial message."""

    __slots__ = ("backlog", "id", "message", "out", "peer", "principal", "session", "ws")

    def __init__(self, connection: int, peer: str | None) -> None:
        self.id = connection
        self.peer = peer
        self.ws = WSConnection(ConnectionType.SERVER)
        self.session: ServerSession | None = None
        self.message: list[str] = []
        self.out: list[bytes] = []
        self.backlog = Backlog()
        self.principal: Principal | None = None


class _LinkHost(SubHost):
    """The host one connection's session sees: the server's, writing to that connection."""

    __slots__ = ("_link", "_ws")

    def __init__(self, server: WebSocketServer, link: _Link) -> None:
        super().__init__(server)
        self._ws = server
        self._link = link

    def send(self, channel: int | None, data: bytes) -> None:
        """A message, as one text frame."""
        self._ws.write(self._link, data)

    def finish(self, channel: int | None, data: bytes, status: int, now: float) -> None:
        """A response, as one text frame."""
        self._ws.write(self._link, data)

    def congested(self) -> bool:
        """Whether this connection holds more than its high-water mark unread."""
        return self._link.backlog.congested(self._ws.config.flow)


class WebSocketServer(Endpoint):
    """An MCP server for WebSocket clients, one session per connection.

    Driver contract: as :class:`~mcp_sansio.server.http.HttpServer` (connections in,
    bytes, ``CloseConnection`` actions, the :class:`Endpoint` API for handlers).
    """

    def __init__(self, app: MCPServer, *, secret: bytes, entropy: bytes, wall_offset: float = 0.0,
                 config: WebSocketConfig | None = None) -> None:
        super().__init__(app, secret=secret, entropy=entropy, wall_offset=wall_offset)
        self.config = config or WebSocketConfig()
        self._links: dict[int, _Link] = {}
        self._actions: deque[CloseConnection] = deque()
        self._closing: dict[int, list[bytes]] = {}
        self._next = 0
        self._overflowed: set[int] = set()  # connections past max_buffer_bytes, to drop
        self._congested: set[int] = set()  # connections over high water (no scan per pump)
        self._expiries = Deadlines()  # when each connection's token expires (driver clock)
        self._per_peer: Counter[str | None] = Counter()  # open connections of each peer
        self.gate: AuthGate[tuple[int, wsevents.Request]] | None = None
        """The bearer check of upgrade requests (``None``: the app has no ``auth``)."""
        if app.auth is not None:
            self.gate = AuthGate(app.auth, app.registry, wall_offset, self.new_ticket, self.emit)

    # ------------------------------------------------------------ driver side

    def connection_made(self, now: float, peer: str | None = None, *, sending: bool = False) -> int:
        """A client connected from ``peer`` (its address, if known); its id (closed at
        once past ``max_connections``, or past ``max_connections_per_peer`` of its peer).
        ``sending`` (bytes of it wait already) changes nothing here: no connection is
        closed to make room for another."""
        self._next += 1
        config = self.config
        mine = 0 if peer is None else self._per_peer[peer]
        if len(self._links) >= config.max_connections or mine >= config.max_connections_per_peer:
            self._actions.append(CloseConnection(connection=self._next, linger=False))  # nothing sent
            return self._next
        self._links[self._next] = _Link(self._next, peer)
        self._per_peer[peer] += 1
        return self._next

    def receive_data(self, connection: int, data: bytes, now: float) -> None:
        """Bytes from ``connection`` (``b""`` at EOF).

        Raises:
            LocalProtocolError: the connection was never made.
        """
        link = self._link(connection)
        if link is None:
            return
        link.ws.receive_data(data or None)
        try:
            for event in link.ws.events():
                self._on_event(link, event, now)
                if link.id not in self._links:
                    return
        except WsRemoteError as exc:  # wsproto says what to answer: a 400, or Close 1002
            if exc.event_hint is not None:
                self._send_ws(link, exc.event_hint)
            self._drop(link, now, f"invalid WebSocket data: {exc}")
            return
        if not data:
            self._drop(link, now, "the client closed the connection", ended=True)

    def connection_lost(self, connection: int, now: float) -> None:
        """``connection`` broke: its session ends."""
        link = self._link(connection)
        if link is not None:
            self._drop(link, now, "the connection was lost")

    def data_to_send(self, connection: int) -> bytes:
        """What to write on ``connection`` (drains it)."""
        link = self._links.get(connection)
        out = self._closing.pop(connection, None) if link is None else link.out
        if not out:
            return b""
        data = b"".join(out)
        out.clear()
        if link is not None:
            link.backlog.taken(len(data), self.config.flow)
            self._congested.discard(connection)  # all of it was taken
        return data

    def connections_with_data(self) -> list[int]:
        """The connections with bytes waiting; changes nothing."""
        return [*(link.id for link in self._links.values() if link.out), *self._closing]

    def next_action(self) -> CloseConnection | None:
        """The next connection to close (write its ``data_to_send`` first)."""
        return self._actions.popleft() if self._actions else None

    def token_verified(self, ticket: int, verdict: TokenVerdict, *, now: float) -> None:
        """The verdict on an upgrade request's token: upgrade, or refuse with 401/403/503."""
        if self.gate is None:
            return
        for (connection, request), outcome in self.gate.verified(ticket, verdict, now):
            link = self._links.get(connection)
            if link is not None:
                self._admit(link, request, outcome, now)

    def next_deadline(self) -> float | None:
        """The earliest deadline: sessions, token verdicts, token expiries, a connection's
        stall (``flow.py``), at once for one past ``max_buffer_bytes``; changes nothing."""
        if self._overflowed:
            return AT_ONCE
        flow = self.config.flow
        deadlines = [super().next_deadline(), None if self.gate is None else self.gate.next_deadline(),
                     self._expiries.first(),
                     *(self._links[c].backlog.deadline(flow) for c in self._congested)]
        return min((d for d in deadlines if d is not None), default=None)

    def handle_timeout(self, now: float) -> None:
        """Fire what is due: connections past ``max_buffer_bytes`` or congested for
        ``stall_timeout`` (dropped: their client does not read), sessions' deadlines,
        overdue verdicts (503), expired tokens (the connection closes with 1008).

        Events: those of :meth:`Endpoint.handle_timeout`; ``CallCancelled`` and
        ``ConnectionTerminated`` for a dropped connection. Actions: ``CloseConnection``.
        """
        for overflowed in [self._links[c] for c in self._overflowed if c in self._links]:
            self._drop(overflowed, now, "the client does not read")
        self._overflowed.clear()
        for stalled in [k for k in map(self._links.__getitem__, list(self._congested))
                        if k.backlog.stamp(now, self.config.flow)]:
            stalled.out.clear()  # it would not be read
            self._drop(stalled, now, "the client does not read")
        super().handle_timeout(now)
        if self.gate is not None:
            for (connection, _), refusal in self.gate.handle_timeout(now):
                link = self._links.get(connection)
                if link is not None:
                    self._reject(link, refusal, now)
        for link in [self._links[c] for c in self._expiries.due(now)]:
            self._fail(link, "the access token expired", now, _POLICY)

    def close(self, now: float) -> None:
        """Shut down: every connection gets a Close frame (1001) and closes."""
        for link in list(self._links.values()):
            closing = wsevents.CloseConnection(code=_GOING_AWAY, reason="the server is shutting down")
            self._send_ws(link, closing)
            self._drop(link, now, "the server is shutting down")

    @property
    def flow_limits(self) -> FlowLimits:
        """The bounds of output waiting for a client."""
        return self.config.flow

    def congested(self, call: int) -> bool:
        """Whether the connection ``call`` came on is congested (see ``flow.py``)."""
        session = self._calls.get(call)
        return session is not None and isinstance(session.host, _LinkHost) and session.host.congested()

    def answer_stream(self, call: int) -> Hashable:
        """The connection ``call`` came on (its answers keep their order)."""
        session = self._calls.get(call)
        host = None if session is None else session.host
        return host._link.id if isinstance(host, _LinkHost) else None

    # ------------------------------------------------------------ Endpoint

    def sessions(self) -> Iterable[ServerSession]:
        """The session of every upgraded connection."""
        return [link.session for link in self._links.values() if link.session is not None]

    def send(self, channel: int | None, data: bytes) -> None:
        """Unused: every session writes through its own connection's host."""

    def finish(self, channel: int | None, data: bytes, status: int, now: float) -> None:
        """Unused: every session writes through its own connection's host."""

    def write(self, link: _Link, data: bytes) -> None:
        """One message as a text frame on ``link`` (if it is still open)."""
        if link.id not in self._links or link.id in self._overflowed:
            return
        if not link.backlog.fits(len(data), self.config.flow):  # dropped at the next event: not
            self._overflowed.add(link.id)  # while its session is busy sending
            link.out.clear()
            return
        self._send_ws(link, wsevents.TextMessage(data=data.decode()))

    # ------------------------------------------------------------ internals

    def _link(self, connection: int) -> _Link | None:
        link = self._links.get(connection)
        if link is None and not 0 < connection <= self._next:
            raise LocalProtocolError(f"connection {connection} was never made")
        return link

    def _on_event(self, link: _Link, event: wsevents.Event, now: float) -> None:
        if isinstance(event, wsevents.Request):
            self._upgrade(link, event, now)
        elif isinstance(event, wsevents.TextMessage):
            self._text(link, event, now)
        elif isinstance(event, wsevents.BytesMessage):
            self._fail(link, "MCP messages are text frames", now, _UNSUPPORTED)
        elif isinstance(event, wsevents.Ping):
            self._send_ws(link, event.response())
        elif isinstance(event, wsevents.CloseConnection):
            self._send_ws(link, event.response())
            self._drop(link, now, "the client closed the connection", ended=True)  # it sends no more

    def _upgrade(self, link: _Link, request: wsevents.Request, now: float) -> None:
        config = self.config
        origin = next((value.decode("latin-1") for name, value in request.extra_headers
                       if name.lower() == b"origin"), None)
        path_ok = config.path is None or request.target.partition("?")[0] == config.path
        if (not path_ok or _SUBPROTOCOL not in request.subprotocols
                or not host_allowed(request.host, config.allowed_hosts)
                or not origin_allowed(origin, config.allowed_origins, host=request.host,
                                      host_checked=config.allowed_hosts is not None)):
            status = 404 if not path_ok else 403 if _SUBPROTOCOL in request.subprotocols else 400
            self._send_ws(link, wsevents.RejectConnection(status_code=status, has_body=False))
            self._drop(link, 0.0, "the upgrade was refused")
            return
        if self.gate is None:
            self._accept(link, None, now)
            return
        credentials = [value.decode("latin-1") for name, value in request.extra_headers
                       if name.lower() == b"authorization"]
        outcome = self.gate.check(credentials, (link.id, request), now)
        if outcome is not None:  # else held until its token's verdict
            self._admit(link, request, outcome, now)

    def _admit(self, link: _Link, request: wsevents.Request, outcome: Allowed | Refusal, now: float) -> None:
        if isinstance(outcome, Refusal):
            self._reject(link, outcome, now)
        else:
            self._accept(link, outcome.principal, now)

    def _accept(self, link: _Link, principal: Principal | None, now: float) -> None:
        self._send_ws(link, wsevents.AcceptConnection(subprotocol=_SUBPROTOCOL))
        link.principal = principal
        if principal is not None and principal.expires_at is not None:
            self._expiries.set(link.id, principal.expires_at - self.wall_offset)
        link.session = ServerSession(self.app, _LinkHost(self, link))

    def _reject(self, link: _Link, refusal: Refusal, now: float) -> None:
        headers = [(name.encode(), value.encode()) for name, value in refusal.headers]
        rejection = wsevents.RejectConnection(status_code=refusal.status, headers=headers, has_body=True)
        self._send_ws(link, rejection)
        self._send_ws(link, wsevents.RejectData(data=refusal.body))
        self._drop(link, now, "the upgrade was refused")

    def _text(self, link: _Link, event: wsevents.TextMessage, now: float) -> None:
        link.message.append(event.data)
        size = sum(len(part) for part in link.message)
        if size > self.app.config.max_line_bytes:
            self._fail(link, f"a message exceeds {self.app.config.max_line_bytes} bytes", now, _TOO_BIG)
            return
        if event.message_finished and link.session is not None:
            text, link.message = "".join(link.message), []
            link.session.receive_message(text.encode("utf-8", "surrogatepass"), now, None, link.principal)

    def _fail(self, link: _Link, reason: str, now: float, code: int) -> None:
        """Close ``link`` for a protocol violation by the client."""
        self._send_ws(link, wsevents.CloseConnection(code=code, reason=reason[:120]))
        self._drop(link, now, reason)

    def _send_ws(self, link: _Link, event: wsevents.Event) -> None:
        with contextlib.suppress(WsLocalError):  # the connection is closing: nothing more goes out
            frame = link.ws.send(event)
            link.out.append(frame)
            link.backlog.add(len(frame))
            if link.backlog.congested(self.config.flow) and link.id in self._links:  # (else: closing)
                self._congested.add(link.id)

    def _drop(self, link: _Link, now: float, reason: str, *, ended: bool = False) -> None:
        """End ``link``; ``ended``: the client sends no more (EOF, or its Close frame), so
        its last bytes need no lingering close (see ``CloseConnection.linger``)."""
        if self._links.pop(link.id, None) is None:
            return
        self._congested.discard(link.id)
        self._expiries.set(link.id, None)
        self._per_peer[link.peer] -= 1
        if not self._per_peer[link.peer]:
            del self._per_peer[link.peer]
        if self.gate is not None and link.session is None:  # perhaps waiting for its token's verdict
            self.gate.discard(lambda held: held[0] == link.id)
        if link.session is not None:
            link.session.close(now, reason)
        if link.out:
            self._closing[link.id] = link.out  # its last bytes (a Close frame), until drained
        self._actions.append(CloseConnection(connection=link.id, linger=bool(link.out) and not ended))
