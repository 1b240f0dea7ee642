"""A sans-IO HTTP/1.1 client connection pool on top of h11.

The pool turns :class:`HttpRequest` messages into bytes on keep-alive connections and the
server's bytes into response events, one exchange per connection at a time (RFC 9112;
no pipelining). It asks the driver to open and close connections with actions, streams
response bodies as they arrive, and never raises h11's exceptions: a misbehaving server
becomes an :class:`ExchangeFailed` event. It knows nothing of MCP. Through a proxy it
opens a CONNECT tunnel (:class:`~mcp_sansio.proxy.Tunnel`) on each new connection and,
for ``https``, asks the driver to start TLS on it (:class:`StartTls`).

State held: the sets of connections (by id, and the idle ones in the order they became
idle), the requests in progress and the FIFO of those waiting for a connection, and the
queues of events and actions. Each connection's own life and its h11 state are in
:mod:`~mcp_sansio.http11_connection`.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import Final

import h11
import msgspec

from .connections import CloseConnection, ConnectFailure, OpenConnection, SocketFailure, StartTls
from .errors import LocalProtocolError
from .http11_connection import (
    ConnectionState,
    ConnectionTrigger,
    PooledConnection,
    PooledExchange,
    h11_request,
)
from .proxy import ProxySettings, Tunnel, TunnelFailed
from .urls import Url

__all__ = [
    "ExchangeFailed",
    "Header",
    "HttpPool",
    "HttpRequest",
    "PoolEvent",
    "Progress",
    "ResponseData",
    "ResponseEnded",
    "ResponseStarted",
]

Header = tuple[str, str]
"""A header field; names are lower-case both in requests and in responses."""

_POOL_CLOSED: Final = "the connection pool was closed"


class HttpRequest(msgspec.Struct, frozen=True, kw_only=True):
    """One request to send.

    Attributes:
        exchange: the caller's id for this request and its response; unique among the
            exchanges in progress.
        method: the request method, e.g. ``"POST"``.
        url: where to send it; its authority becomes the ``Host`` header.
        headers: every header except ``Host`` and ``Content-Length``, which the pool adds.
        body: the request content, sent with a ``Content-Length``.
        short: a request answered at once (an MCP response or notification, which gets
            202): it may take the connection the pool keeps back from the others, so it
            never waits behind long-lived streams (see :class:`HttpPool`).
    """

    exchange: int
    method: str
    url: Url
    headers: tuple[Header, ...]
    body: bytes = b""
    short: bool = False


class ResponseStarted(msgspec.Struct, frozen=True, kw_only=True):
    """The final (non-1xx) response head of ``exchange`` arrived."""

    exchange: int
    status: int
    reason: str
    headers: tuple[Header, ...]


class ResponseData(msgspec.Struct, frozen=True, kw_only=True):
    """A piece of the response body of ``exchange``, as it arrived."""

    exchange: int
    data: bytes


class ResponseEnded(msgspec.Struct, frozen=True, kw_only=True):
    """The response of ``exchange`` is complete; nothing more comes for it."""

    exchange: int


class ExchangeFailed(msgspec.Struct, frozen=True, kw_only=True):
    """``exchange`` ended without a complete response; nothing more comes for it.

    Attributes:
        message: what went wrong, for people.
        sent: whether any byte of the request was handed to ``data_to_send``. When
            ``False`` the server cannot have seen it, so it is safe to send again.
        proxy_status: the proxy refused the tunnel with this HTTP status; the request
            never left (``sent`` is false).
        connect_failure: the connection could not be opened (name lookup, TCP connect,
            TLS); the request never left (``sent`` is false).
    """

    exchange: int
    message: str
    sent: bool
    proxy_status: int | None = None
    connect_failure: ConnectFailure | None = None


PoolEvent = ResponseStarted | ResponseData | ResponseEnded | ExchangeFailed
"""Everything :meth:`HttpPool.next_event` returns."""


class Progress(enum.Enum):
    """How far an exchange has got (for messages about one that stalled)."""

    QUEUED = "waiting for a free connection"
    CONNECTING = "the connection did not open"
    TUNNELING = "the proxy did not answer CONNECT"
    SECURING = "the TLS handshake in the proxy's tunnel did not complete"
    SENDING = "the request was not all written"
    WAITING = "no response came"
    RECEIVING = "the response started but did not finish"


# How far an exchange has got while its connection is not yet active.
_PROGRESS: Final = {
    ConnectionState.CONNECTING: Progress.CONNECTING,
    ConnectionState.TUNNELING: Progress.TUNNELING,
    ConnectionState.SECURING: Progress.SECURING,
}


class _Outcome(enum.Enum):
    """What feeding bytes to an exchange's response did."""

    MORE = "more"  # the response is incomplete
    ENDED = "ended"  # ResponseEnded queued
    FAILED = "failed"  # ExchangeFailed queued, connection closed


class HttpPool:
    """HTTP/1.1 exchanges over a bounded set of keep-alive connections.

    A submitted request reuses an idle connection to its origin, else opens a new one
    when fewer than ``max_connections`` exist (closing the least recently used idle
    connection to another origin if that is what stands in the way), else waits in
    FIFO order. Every opened connection later gets exactly one :class:`CloseConnection`.

    One connection is kept back for ``short`` requests: the others may hold at most
    ``max_connections - 1`` connections at once, and a waiting short request goes before
    them. Over HTTP/1.1 each SSE stream holds a connection until its response ends; a
    client whose every connection carries a stream that waits for the client's own answer
    (a tool call asking for elicitation) could otherwise never send that answer.

    Connection ids are allocated by the pool. Calls naming a connection the pool has
    already closed are ignored (the driver may learn of the close late); an id the pool
    never allocated is a :class:`LocalProtocolError`.

    The response head (1xx heads included) may not exceed ``max_header_bytes``, however
    the bytes are split; bodies are not bounded here, since an SSE stream may last hours.
    The same bound applies to a proxy's answer to CONNECT. A proxy that refuses the
    tunnel fails the exchange with ``proxy_status`` set.

    A request that fails on a reused keep-alive connection before any byte of its
    response arrived (the server closed the idle connection, or restarted, as the request
    went out) is sent again, once, on a new connection, as urllib3 and httpcore do: the
    server closed the connection rather than answer, so it did not act on the request.
    Only when that fails too does the exchange fail.
    """

    def __init__(
        self, *, max_connections: int = 8, max_header_bytes: int = 64 * 1024, idle_timeout: float = 30.0,
        proxies: ProxySettings | None = None,
    ) -> None:
        """Create an empty pool.

        Args:
            max_connections: how many connections may be open (or opening) at once.
            max_header_bytes: the largest response head, in bytes; also bounds a chunk
                header line and the trailer block.
            idle_timeout: seconds an idle keep-alive connection is kept for reuse.
            proxies: which proxy each new connection goes through; ``None``: none.

        Raises:
            LocalProtocolError: a limit is not positive, or ``idle_timeout`` is negative.
        """
        if max_connections < 1 or max_header_bytes < 1 or idle_timeout < 0:
            raise LocalProtocolError(
                "max_connections and max_header_bytes must be positive and idle_timeout not negative"
            )
        self._max_connections = max_connections
        self._max_header_bytes = max_header_bytes
        self._idle_timeout = idle_timeout
        self._proxies = proxies
        self._connections: dict[int, PooledConnection] = {}
        self._idle: dict[int, PooledConnection] = {}  # in the order they became idle
        self._exchanges: dict[int, PooledExchange] = {}  # queued or bound, in submission order
        self._queue: deque[PooledExchange] = deque()
        self._events: deque[PoolEvent] = deque()
        self._actions: deque[OpenConnection | StartTls | CloseConnection] = deque()
        self._next_connection = 1
        self._closed = False

    def submit(self, request: HttpRequest, now: float) -> None:
        """Send ``request`` as soon as a connection to its origin is free.

        Args:
            request: the request; ``Host`` and ``Content-Length`` are added.
            now: the current time.

        Raises:
            LocalProtocolError: the pool is closed, the exchange id is in progress, or
                the request is invalid (bad method, target or header; a header the
                pool sets itself; a non-ASCII header value; CONNECT or Upgrade).

        Events: none directly; the exchange's events follow. Actions: ``OpenConnection``,
        or ``CloseConnection`` for an idle connection given up to make room.
        """
        if self._closed:
            raise LocalProtocolError(_POOL_CLOSED)
        if request.exchange in self._exchanges:
            raise LocalProtocolError(f"exchange {request.exchange} is already in progress")
        head = h11_request(request.method, request.url, request.headers, request.body)
        exchange = PooledExchange(request.exchange, request.url, head, request.body, short=request.short)
        self._exchanges[exchange.id] = exchange
        self._queue.append(exchange)
        self._dispatch()

    def cancel(self, exchange: int, now: float) -> None:
        """Abandon ``exchange``: no event for it follows, not even one already queued.

        A request still waiting for a connection is dropped; one bound to a connection
        takes the connection with it, as the response can no longer be read to its end.
        Unknown or finished exchanges are ignored.

        Args:
            exchange: the exchange id.
            now: the current time.

        Actions: ``CloseConnection`` for its connection, then perhaps ``OpenConnection``
        for a request that was waiting.
        """
        if self._events:
            self._events = deque(event for event in self._events if event.exchange != exchange)
        record = self._exchanges.pop(exchange, None)
        if record is None:
            return
        if record.connection is None:
            self._queue.remove(record)
            return
        self._close(record.connection)
        self._dispatch()

    def connection_made(self, connection: int, now: float) -> None:
        """The driver connected ``connection`` (TLS handshake included); its request is
        queued, or the CONNECT to the proxy.

        Args:
            connection: the id from ``OpenConnection``.
            now: the current time.

        Raises:
            LocalProtocolError: the pool never allocated this id, or it is already connected.
        """
        conn = self._lookup(connection)
        if conn is None:
            return
        if not conn.allows(ConnectionTrigger.CONNECTED) or conn.exchange is None:
            raise LocalProtocolError(f"connection {connection} is already connected")
        if conn.tunnel is None:
            conn.start(conn.exchange, ConnectionTrigger.CONNECTED, self._max_header_bytes)
        else:
            conn.move(ConnectionTrigger.CONNECTED_TO_PROXY)
            conn.outgoing.append(conn.tunnel.request)

    def tls_started(self, connection: int, now: float) -> None:
        """The driver completed the TLS handshake a ``StartTls`` asked for; the request is queued.

        Args:
            connection: the id from ``StartTls``.
            now: the current time.

        Raises:
            LocalProtocolError: the pool never allocated this id, or asked for no TLS on it.
        """
        conn = self._lookup(connection)
        if conn is None:
            return
        if not conn.allows(ConnectionTrigger.TLS_STARTED) or conn.exchange is None:
            raise LocalProtocolError(f"connection {connection} is not starting TLS")
        conn.start(conn.exchange, ConnectionTrigger.TLS_STARTED, self._max_header_bytes)

    def connection_failed(self, connection: int, failure: SocketFailure, now: float) -> None:
        """Connecting, reading or writing ``connection`` failed; the pool drops it.

        Args:
            connection: the connection id.
            failure: what failed; while connecting (or starting TLS in a tunnel) the
                exchange's :class:`ExchangeFailed` carries it as ``connect_failure``.
            now: the current time.

        Raises:
            LocalProtocolError: the pool never allocated this id.

        Events: ``ExchangeFailed`` for the exchange on it, if any. Actions:
        ``CloseConnection``, then perhaps ``OpenConnection`` for a waiting request.
        """
        conn = self._lookup(connection)
        if conn is None:
            return
        if conn.exchange is None:
            self._close(conn)
        elif conn.state is ConnectionState.CONNECTING or conn.state is ConnectionState.SECURING:
            unreachable = self._unreachable(conn, failure)
            self._fail(conn, unreachable.message, connect_failure=unreachable)
        elif not self._resend_if_stale(conn):
            self._fail(conn, failure.cause)
        self._dispatch()

    def receive_data(self, connection: int, data: bytes, now: float) -> None:
        """Feed bytes the server sent on ``connection``; ``b""`` means it closed its side.

        Args:
            connection: the connection id.
            data: the bytes, or ``b""`` at EOF.
            now: the current time; an idle connection's keep-alive period starts here.

        Raises:
            LocalProtocolError: the pool never allocated this id, or it is still connecting
                (or starting TLS).

        Events: ``ResponseStarted``, ``ResponseData``, ``ResponseEnded``,
        ``ExchangeFailed``. Actions: ``CloseConnection`` when the connection cannot be
        reused; ``OpenConnection`` for a waiting request; ``StartTls`` once a tunnel to
        an ``https`` origin is open.
        """
        conn = self._lookup(connection)
        if conn is None:
            return
        state = conn.state
        if state is not ConnectionState.ACTIVE:
            if state is ConnectionState.IDLE:
                # Bytes or EOF with no request outstanding: a 408, junk, or a plain close.
                self._close(conn)
                self._dispatch()
            elif state is ConnectionState.TUNNELING:
                self._tunnel_data(conn, data, now)
            else:
                raise LocalProtocolError(f"connection {connection} is not connected yet")
            return
        if data:
            conn.received = True
        else:
            conn.eof = True
        outcome = _Outcome.MORE
        chunk: bytes | memoryview = data
        if not conn.started and len(data) > conn.budget:
            # Give h11 only what the head may still take, so the bound does not depend on
            # how the bytes were split; the rest must be body or after the response.
            view = memoryview(data)
            head, chunk = view[: conn.budget], view[conn.budget :]
            if head:
                outcome = self._pump(conn, head)
            if outcome is _Outcome.MORE and not conn.started:
                outcome = self._fail(conn, f"response head exceeds {self._max_header_bytes} bytes")
            elif outcome is _Outcome.ENDED:
                # Left unread in h11's buffer, it tells _finish the connection is not clean.
                conn.h11.receive_data(chunk)  # type: ignore[arg-type]  # h11 takes any bytes-like
        else:
            conn.budget -= len(data)
        if outcome is _Outcome.MORE:
            outcome = self._pump(conn, chunk)
        if outcome is _Outcome.ENDED:
            self._finish(conn, now)
        elif outcome is _Outcome.FAILED:
            self._dispatch()

    def data_to_send(self, connection: int) -> bytes:
        """Drain the bytes waiting to be written on ``connection``.

        Raises:
            LocalProtocolError: the pool never allocated this id.
        """
        conn = self._lookup(connection)
        if conn is None or not conn.outgoing:
            return b""
        data = b"".join(conn.outgoing)
        conn.outgoing.clear()
        conn.sent = conn.state is not ConnectionState.TUNNELING  # the CONNECT is not the request
        return data

    def connections_with_data(self) -> list[int]:
        """The connections with bytes waiting in ``data_to_send``; changes nothing."""
        return [conn.id for conn in self._connections.values() if conn.outgoing]

    def next_action(self) -> OpenConnection | StartTls | CloseConnection | None:
        """Pop the next connection the driver must open or close, or ``None``."""
        return self._actions.popleft() if self._actions else None

    def next_event(self) -> PoolEvent | None:
        """Pop the next response event, or ``None``."""
        return self._events.popleft() if self._events else None

    def progress(self, exchange: int) -> Progress | None:
        """How far ``exchange`` has got, or ``None`` if it is not in progress; changes nothing."""
        record = self._exchanges.get(exchange)
        if record is None:
            return None
        conn = record.connection
        if conn is None:
            return Progress.QUEUED
        if conn.state is not ConnectionState.ACTIVE:
            return _PROGRESS[conn.state]
        return Progress.RECEIVING if conn.started else Progress.WAITING if conn.sent else Progress.SENDING

    def next_deadline(self) -> float | None:
        """When the first idle connection expires, or ``None``; changes nothing."""
        idle = self._idle
        if not idle:
            return None
        if len(idle) == 1:
            return next(iter(idle.values())).idle_at
        return min(conn.idle_at for conn in idle.values())

    def handle_timeout(self, now: float) -> None:
        """Close the idle connections whose keep-alive period ended at or before ``now``.

        Actions: ``CloseConnection`` for each.
        """
        for conn in [conn for conn in self._idle.values() if conn.idle_at <= now]:
            self._close(conn)
        # No request can be waiting while a connection is idle, so nothing to dispatch.

    def close(self) -> None:
        """Close every connection and fail every exchange; later ``submit`` calls raise.

        Events: ``ExchangeFailed`` for each exchange in progress, in submission order
        (``sent=False`` for those still waiting). Actions: ``CloseConnection`` for each
        connection.
        """
        if self._closed:
            return
        self._closed = True
        for record in self._exchanges.values():
            sent = record.connection is not None and record.connection.sent
            self._events.append(ExchangeFailed(exchange=record.id, message=_POOL_CLOSED, sent=sent))
        for conn in self._connections.values():
            self._actions.append(CloseConnection(connection=conn.id))
        self._exchanges.clear()
        self._queue.clear()
        self._connections.clear()
        self._idle.clear()

    def _lookup(self, connection: int) -> PooledConnection | None:
        """The live connection with this id; ``None`` if the pool closed it already."""
        conn = self._connections.get(connection)
        if conn is None and not 0 < connection < self._next_connection:
            raise LocalProtocolError(f"the pool never opened connection {connection}")
        return conn

    def _dispatch(self) -> None:
        """Give waiting requests connections, in FIFO order (short ones first), as far as
        the limits allow."""
        while (exchange := self._next_to_start()) is not None:
            conn = None if exchange.resent else next(
                (c for c in reversed(self._idle.values()) if c.origin == exchange.origin), None)
            if conn is not None:
                del self._idle[conn.id]
                conn.start(exchange, ConnectionTrigger.REUSED, self._max_header_bytes)
            elif len(self._connections) < self._max_connections or self._idle:
                if len(self._connections) >= self._max_connections:
                    self._close(next(iter(self._idle.values())))
                self._open(exchange)
            else:
                return
            self._queue.remove(exchange)

    def _next_to_start(self) -> PooledExchange | None:
        """The first waiting short request, else the first waiting one if the others hold
        fewer than all but one connection."""
        first = None
        for exchange in self._queue:
            if exchange.short:
                return exchange
            first = first or exchange
        if first is None:
            return None
        held = sum(1 for c in self._connections.values() if c.exchange is not None and not c.exchange.short)
        return first if held < max(1, self._max_connections - 1) else None

    def _open(self, exchange: PooledExchange) -> None:
        """Allocate a connection for ``exchange`` and ask the driver to open it."""
        conn = PooledConnection(self._next_connection, exchange, self._max_header_bytes)
        self._next_connection += 1
        self._connections[conn.id] = conn
        exchange.connection = conn
        url = exchange.url
        tls = url.scheme == "https"
        proxy = None if self._proxies is None else self._proxies.select(url)
        if proxy is None:
            action = OpenConnection(connection=conn.id, host=url.host, port=url.port, tls=tls,
                                    server_hostname=url.host)
        else:
            conn.tunnel = Tunnel(proxy, url.host, url.port, tls=tls, max_header_bytes=self._max_header_bytes)
            action = OpenConnection(connection=conn.id, host=proxy.host, port=proxy.port, tls=False,
                                    server_hostname=proxy.host)
        conn.opened = action
        self._actions.append(action)

    def _unreachable(self, conn: PooledConnection, failure: SocketFailure) -> ConnectFailure:
        """Where ``conn`` was to go: the server, or the proxy before its tunnel opened."""
        if conn.state is ConnectionState.SECURING:  # TLS with the server, in the tunnel
            _, host, port = conn.origin
            return ConnectFailure(host=host, port=port, failure=failure)
        opened = conn.opened
        assert opened is not None  # CONNECTING: _open set it
        return ConnectFailure(host=opened.host, port=opened.port, failure=failure,
                              proxy=conn.tunnel is not None)

    def _tunnel_data(self, conn: PooledConnection, data: bytes, now: float) -> None:
        """Feed the proxy's answer to CONNECT; once the tunnel is open, use it."""
        assert conn.tunnel is not None and conn.exchange is not None  # TUNNELING has both
        outcome = conn.tunnel.receive_data(data)
        if outcome is None:
            return
        if isinstance(outcome, TunnelFailed):
            self._fail(conn, outcome.message, proxy_status=outcome.status)
            self._dispatch()
            return
        conn.tunnel = None
        url = conn.exchange.url
        if url.scheme == "https":
            conn.move(ConnectionTrigger.TUNNEL_OPENED_TLS)
            self._actions.append(StartTls(connection=conn.id, server_hostname=url.host))
            return
        conn.start(conn.exchange, ConnectionTrigger.TUNNEL_OPENED, self._max_header_bytes)
        if outcome.leftover:
            self.receive_data(conn.id, outcome.leftover, now)

    def _pump(self, conn: PooledConnection, data: bytes | memoryview) -> _Outcome:
        """Feed ``data`` to h11 and queue the events it yields, up to the response's end."""
        assert conn.exchange is not None  # only ACTIVE connections are pumped
        exchange = conn.exchange.id
        parser = conn.h11
        parser.receive_data(data)  # type: ignore[arg-type]  # h11 accepts any bytes-like
        try:
            while True:
                event = parser.next_event()
                if isinstance(event, h11.Data):
                    self._events.append(ResponseData(exchange=exchange, data=bytes(event.data)))
                elif isinstance(event, h11.Response):
                    conn.started = True
                    headers = tuple(
                        [
                            (name.lower().decode("ascii"), value.decode("latin-1"))
                            for name, value in event.headers.raw_items()
                        ]
                    )
                    self._events.append(
                        ResponseStarted(
                            exchange=exchange,
                            status=event.status_code,
                            reason=event.reason.decode("latin-1"),
                            headers=headers,
                        )
                    )
                elif isinstance(event, h11.EndOfMessage):
                    self._events.append(ResponseEnded(exchange=exchange))
                    return _Outcome.ENDED
                elif not isinstance(event, h11.InformationalResponse):
                    # NEED_DATA: before the response's end h11 returns nothing else.
                    return _Outcome.MORE
        except h11.RemoteProtocolError as exc:
            return self._fail_remote(conn, exc)

    def _fail_remote(self, conn: PooledConnection, exc: h11.RemoteProtocolError) -> _Outcome:
        """Fail the exchange on ``conn`` for what h11 refused, with a message for people."""
        if conn.eof and not conn.received:
            if self._resend_if_stale(conn):
                return _Outcome.FAILED
            return self._fail(conn, "the server closed the connection without responding")
        if conn.eof:
            message = "the server closed the connection before the response was complete"
        elif exc.error_status_hint == 431:
            # The head cannot get here (receive_data bounds it), so this is the body.
            message = f"a chunk header or the trailer exceeds {self._max_header_bytes} bytes"
        else:
            message = f"invalid HTTP response: {exc}"
        return self._fail(conn, message)

    def _resend_if_stale(self, conn: PooledConnection) -> bool:
        """If the exchange on ``conn`` failed on a reused connection before a byte of its
        response came, queue it first for a new connection (once) and close ``conn``."""
        exchange = conn.exchange
        assert exchange is not None  # callers check
        if not conn.reused or conn.received or exchange.resent:
            return False
        exchange.resent = True
        exchange.connection = None
        conn.exchange = None
        self._queue.appendleft(exchange)
        self._close(conn)
        return True

    def _fail(
        self, conn: PooledConnection, message: str, *, proxy_status: int | None = None,
        connect_failure: ConnectFailure | None = None,
    ) -> _Outcome:
        """Queue ``ExchangeFailed`` for the exchange on ``conn`` and close ``conn``."""
        assert conn.exchange is not None  # callers check
        exchange = conn.exchange.id
        self._events.append(
            ExchangeFailed(exchange=exchange, message=message, sent=conn.sent, proxy_status=proxy_status,
                           connect_failure=connect_failure)
        )
        del self._exchanges[exchange]
        self._close(conn)
        return _Outcome.FAILED

    def _finish(self, conn: PooledConnection, now: float) -> None:
        """After a complete response: keep ``conn`` for reuse if it is clean, else close it."""
        assert conn.exchange is not None  # the exchange just ended on it
        del self._exchanges[conn.exchange.id]
        conn.exchange = None
        parser = conn.h11
        reusable = (
            parser.our_state is h11.DONE
            and parser.their_state is h11.DONE  # neither side asked to close
            and not conn.outgoing  # the server answered before reading all of the request
            and parser.trailing_data == (b"", False)  # no extra bytes, no EOF
        )
        if reusable:
            parser.start_next_cycle()
            conn.move(ConnectionTrigger.KEPT_ALIVE)
            conn.reused = True
            conn.idle_at = now + self._idle_timeout
            self._idle[conn.id] = conn
        else:
            self._close(conn)
        self._dispatch()

    def _close(self, conn: PooledConnection) -> None:
        """Forget ``conn`` and tell the driver to close it."""
        del self._connections[conn.id]
        self._idle.pop(conn.id, None)
        conn.outgoing.clear()
        conn.move(ConnectionTrigger.CLOSE)
        self._actions.append(CloseConnection(connection=conn.id))

