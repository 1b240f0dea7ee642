"""One HTTP/1.1 connection of the client's pool, and one request waiting for or using it.

State held: a :class:`PooledConnection` is an h11 client connection plus where it is in
its life (``CONNECTION_TRANSITIONS``: connecting, tunnelling through a proxy, starting TLS
in the tunnel, carrying an exchange, idle for reuse, closed), the bytes waiting to be
written and what the exchange on it has seen (sent, received, EOF, the response head's
byte budget). A :class:`PooledExchange` is a submitted request's head and body and the
connection it is bound to. They live apart from :class:`~mcp_sansio.http11.HttpPool`,
which holds the sets of them (connections by id, idle ones, the FIFO of waiting
requests), so that a connection's life is one table a move is checked against. RFC 9112;
CONNECT tunnels per RFC 9110 section 9.3.6.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

import h11

from . import machines
from .connections import OpenConnection
from .errors import LocalProtocolError
from .proxy import Tunnel
from .urls import Url

__all__ = [
    "CONNECTION_TRANSITIONS",
    "ConnectionState",
    "ConnectionTrigger",
    "PooledConnection",
    "PooledExchange",
    "h11_request",
]

# Headers the pool derives from the request itself.
_POOL_HEADERS: Final = frozenset({"host", "content-length", "transfer-encoding"})
# Methods whose request has content by definition, so they send Content-Length: 0 when
# empty (RFC 9110 section 8.6); others send none without a body.
_CONTENT_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})


class ConnectionState(enum.Enum):
    """Where a connection of the pool is in its life."""

    CONNECTING = "connecting"  # OpenConnection issued, exchange bound
    TUNNELING = "tunneling"  # connected to the proxy, CONNECT out, awaiting its answer
    SECURING = "securing"  # tunnel open, StartTls issued
    ACTIVE = "active"  # connected, exchange in flight
    IDLE = "idle"  # connected, keep-alive, no exchange
    CLOSED = "closed"  # CloseConnection issued; dropped from the pool


class ConnectionTrigger(enum.Enum):
    """What moves a connection between states."""

    CONNECTED = "connected"  # the driver's connection_made, straight to the server
    CONNECTED_TO_PROXY = "connected-to-proxy"  # the driver's connection_made: CONNECT goes out
    TUNNEL_OPENED = "tunnel-opened"  # the proxy said 2xx to an http origin: the request goes
    TUNNEL_OPENED_TLS = "tunnel-opened-tls"  # ... to an https origin: StartTls goes out
    TLS_STARTED = "tls-started"  # the driver's tls_started: the request goes
    REUSED = "reused"  # an idle connection takes the next request to its origin
    KEPT_ALIVE = "kept-alive"  # the response ended cleanly: kept for reuse
    CLOSE = "close"


_S = ConnectionState
_T = ConnectionTrigger
CONNECTION_TRANSITIONS: Final[Mapping[tuple[ConnectionState, ConnectionTrigger], ConnectionState]] = {
    (_S.CONNECTING, _T.CONNECTED): _S.ACTIVE,
    (_S.CONNECTING, _T.CONNECTED_TO_PROXY): _S.TUNNELING,
    (_S.TUNNELING, _T.TUNNEL_OPENED): _S.ACTIVE,
    (_S.TUNNELING, _T.TUNNEL_OPENED_TLS): _S.SECURING,
    (_S.SECURING, _T.TLS_STARTED): _S.ACTIVE,
    (_S.IDLE, _T.REUSED): _S.ACTIVE,
    (_S.ACTIVE, _T.KEPT_ALIVE): _S.IDLE,
    **{(state, _T.CLOSE): _S.CLOSED for state in ConnectionState if state is not _S.CLOSED},
}
"""Every legal move of a pooled connection (rendered in docs/state-machines.md). Bytes
from the server are read only while ``active`` (or, from the proxy, ``tunneling``); in
``idle`` they close the connection; before that, they are the driver's mistake."""


class PooledExchange:
    """A submitted request: queued, or bound to a connection."""

    __slots__ = ("body", "connection", "head", "id", "origin", "resent", "short", "url")

    def __init__(self, exchange_id: int, url: Url, head: h11.Request, body: bytes, *, short: bool) -> None:
        self.id = exchange_id
        self.short = short
        self.url = url
        self.origin = url.origin
        self.head = head
        self.body = body
        self.connection: PooledConnection | None = None
        self.resent = False  # sent again after a stale keep-alive connection: on a new one


class PooledConnection:
    """One connection and the state of the exchange on it."""

    __slots__ = (
        "budget",
        "eof",
        "exchange",
        "h11",
        "id",
        "idle_at",
        "opened",
        "origin",
        "outgoing",
        "received",
        "reused",
        "sent",
        "started",
        "state",
        "tunnel",
    )

    def __init__(self, connection: int, exchange: PooledExchange, max_header_bytes: int) -> None:
        self.id = connection
        self.origin = exchange.origin
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=max_header_bytes)
        self.state = ConnectionState.CONNECTING  # moved only by move(), along CONNECTION_TRANSITIONS
        self.exchange: PooledExchange | None = exchange
        self.outgoing: list[bytes] = []
        self.idle_at = 0.0
        self.reused = False  # an earlier exchange completed on this connection
        self.tunnel: Tunnel | None = None  # the CONNECT under way, through a proxy
        self.opened: OpenConnection | None = None  # what the driver was asked to open
        # Per exchange, reset by start():
        self.sent = False  # bytes of the request were handed to data_to_send
        self.received = False  # a response byte (not EOF) arrived
        self.eof = False
        self.started = False  # the final response head arrived
        self.budget = max_header_bytes  # response head bytes still allowed

    def allows(self, trigger: ConnectionTrigger) -> bool:
        """Whether ``trigger`` may move the connection now."""
        return (self.state, trigger) in CONNECTION_TRANSITIONS

    def move(self, trigger: ConnectionTrigger) -> None:
        """Move along ``CONNECTION_TRANSITIONS`` (an illegal move is a bug of the pool's:
        ``LocalProtocolError``)."""
        self.state = machines.step(CONNECTION_TRANSITIONS, self.state, trigger, subject="the connection is ")

    def start(self, exchange: PooledExchange, trigger: ConnectionTrigger, max_header_bytes: int) -> None:
        """Write ``exchange``'s request on the connection, which ``trigger`` made ready."""
        self.move(trigger)
        self.exchange = exchange
        exchange.connection = self
        self.sent = self.received = self.eof = self.started = False
        self.budget = max_header_bytes
        # The request was validated at submit and the connection is idle, so h11 accepts it.
        self.outgoing.append(self.h11.send(exchange.head))
        if exchange.body:
            # With Content-Length h11 writes the body object itself (bytes.join of one item
            # returns it): no copy until data_to_send.
            self.outgoing.append(self.h11.send(h11.Data(data=exchange.body)))
        self.h11.send(h11.EndOfMessage())


def h11_request(method: str, url: Url, headers: tuple[tuple[str, str], ...], body: bytes) -> h11.Request:
    """Build and validate the h11 request head for a request.

    Raises:
        LocalProtocolError: CONNECT or an Upgrade, a header the pool sets itself, or
            anything h11 refuses (bad method, target or header; a non-ASCII value).
    """
    # h11 would switch protocols after CONNECT or Upgrade and stop parsing the exchange.
    if method == "CONNECT":
        raise LocalProtocolError("CONNECT is not supported")
    fields = [("host", url.authority)]
    for name, _ in headers:
        lowered = name.lower()
        if lowered in _POOL_HEADERS:
            raise LocalProtocolError(f"the pool sets the {name} header itself")
        if lowered == "upgrade":
            raise LocalProtocolError("protocol upgrades are not supported")
    fields += headers
    if body or method in _CONTENT_METHODS:
        fields.append(("content-length", str(len(body))))
    try:
        return h11.Request(method=method, target=url.target, headers=fields)
    except (h11.LocalProtocolError, UnicodeEncodeError) as exc:
        raise LocalProtocolError(f"invalid request: {exc}") from exc
