"""A sans-IO HTTP/1.1 server on h11's server side: connections in, requests out.

:class:`HttpConnections` turns each connection's bytes into whole requests (head and
body, both bounded: a head over ``max_header_bytes`` gets 431, a body over
``max_body_bytes`` 413, a malformed request 400, and a head or body that does not arrive
in time 408: slow clients cannot hold a connection), one exchange at a time per
connection (RFC 9112, no pipelining: a request sent early waits its turn, but a client
sending more than ``max_header_bytes`` ahead of its response is dropped, as what it sends
is kept meanwhile). Responses are written whole
or streamed (SSE). What waits to be written is bounded as ``flow.py``
says: over ``high_water_bytes`` the connection is congested (:meth:`congested`), and it
is dropped when its backlog would pass ``max_buffer_bytes`` or stays congested for
``stall_timeout``. It knows nothing of MCP.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable
from typing import Final, NamedTuple

import h11
import msgspec

from ..errors import LocalProtocolError
from ..events import Action
from .deadlines import Deadlines
from .flow import Backlog, FlowLimits

__all__ = [
    "CloseConnection",
    "ExchangeClosed",
    "HttpConnections",
    "HttpLimits",
    "RequestReceived",
]

Header = tuple[str, str]
_HEADS: Final = 1024  # checked response heads kept
_FRAMING: Final = frozenset((b"connection", b"content-length", b"transfer-encoding"))
_REASONS: Final = {400: b"Bad Request", 408: b"Request Timeout", 413: b"Content Too Large",
                   431: b"Request Header Fields Too Large", 505: b"HTTP Version Not Supported"}


class HttpLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Bounds of the HTTP layer.

    Attributes:
        max_header_bytes: the largest request head, and the most a client may send ahead
            of the response it awaits (a pipelined request; more, and it is dropped).
        max_body_bytes: the largest request body.
        header_timeout: seconds a request head may take to arrive (from the connection,
            or from the end of the previous response).
        body_timeout: seconds a request body may take after its head.
        idle_timeout: seconds an idle keep-alive connection is kept.
        max_buffer_bytes: bytes of response a connection may have waiting to be written;
            more, and the client is not reading: the connection is dropped.
        high_water_bytes: over this many bytes waiting, a connection is congested: the
            handlers producing into it wait (see ``flow.py``).
        stall_timeout: seconds a connection may stay congested before it is dropped.
    """

    max_header_bytes: int = 32 * 1024
    max_body_bytes: int = 4 * 1024 * 1024
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    idle_timeout: float = 60.0
    max_buffer_bytes: int = 4 * 1024 * 1024
    high_water_bytes: int = 256 * 1024
    stall_timeout: float = 30.0

    @property
    def flow(self) -> FlowLimits:
        """The backpressure bounds."""
        return FlowLimits(high_water_bytes=self.high_water_bytes, max_buffer_bytes=self.max_buffer_bytes,
                          stall_timeout=self.stall_timeout)


class RequestReceived(msgspec.Struct, frozen=True, kw_only=True):
    """A whole request arrived on ``connection``; answer ``exchange``.

    Attributes:
        exchange: the id of this request and its response.
        connection: the connection it came on.
        method: ``POST``, ``GET``, ...
        target: the request target (path and query).
        headers: every header, names lower-case, values decoded as Latin-1.
        body: the request content.
        peer: who sent it, as the driver named the connection's peer (an IP address),
            if it did.
    """

    exchange: int
    connection: int
    method: str
    target: str
    headers: tuple[Header, ...]
    body: bytes
    peer: str | None = None

    def header(self, name: str) -> str | None:
        """The value of header ``name`` (lower-case), the last one if repeated."""
        found = None
        for key, value in self.headers:
            if key == name:
                found = value
        return found


class ExchangeClosed(msgspec.Struct, frozen=True, kw_only=True):
    """``exchange`` ended before its response did: the client went away (or was dropped)."""

    exchange: int
    reason: str


class CloseConnection(Action, frozen=True, kw_only=True):
    """Close ``connection`` (after writing what ``data_to_send`` still holds).

    ``linger``: the client may still be sending while its last bytes (an error response,
    a Close frame) go out, and a close with unread input makes the kernel reset the
    connection, which can destroy them before the client reads them. The driver ends its
    side, then reads and discards for a while before it closes (RFC 9112 section 9.6,
    "lingering close"). ``False``: nothing to protect (no last bytes, or the client's
    input already ended, or it said it sends no more): close at once.
    """

    connection: int
    linger: bool = True


class _State(enum.Enum):
    READING = "reading"  # awaiting (the rest of) a request
    HANDLING = "handling"  # a request was handed over; no response yet
    STREAMING = "streaming"  # the response head is out, its body goes on
    CLOSING = "closing"  # CloseConnection issued


def _parser(limits: HttpLimits) -> h11.Connection:
    """An h11 server connection awaiting a request (its head bounded)."""
    return h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_header_bytes)


class _Connection:
    __slots__ = ("ahead", "backlog", "body", "exchange", "h11", "head_started", "headers", "id", "out",
                 "peer", "request", "state")

    def __init__(self, connection: int, limits: HttpLimits, peer: str | None) -> None:
        self.id = connection
        self.peer = peer
        self.h11 = _parser(limits)
        self.state = _State.READING
        self.exchange = 0
        self.request: h11.Request | None = None
        self.headers: tuple[Header, ...] = ()  # the request's, decoded (once, as it arrived)
        self.body = bytearray()
        self.out: list[bytes] = []
        self.backlog = Backlog()
        self.head_started = False  # bytes of the next request arrived
        self.ahead = 0  # bytes received while a request is answered (pipelined), kept by h11


class HttpConnections:
    """Server-side HTTP/1.1 connections.

    Driver contract: call :meth:`connection_made` for each accepted connection, feed its
    bytes to :meth:`receive_data` (``b""`` at EOF), write :meth:`data_to_send` when the
    socket can take more (not before, and never into a buffer of its own: unread output
    is what the backpressure bounds count), perform each :meth:`next_action`, and call
    :meth:`handle_timeout` at :meth:`next_deadline`.
    """

    def __init__(self, limits: HttpLimits | None = None) -> None:
        self.limits = limits or HttpLimits()
        self._flow = self.limits.flow
        self._congested: set[int] = set()  # connections over high water (no scan per pump)
        self._connections: dict[int, _Connection] = {}
        self._exchanges: dict[int, _Connection] = {}
        self._events: deque[RequestReceived | ExchangeClosed] = deque()
        self._actions: deque[CloseConnection] = deque()
        self._closing: dict[int, list[bytes]] = {}  # closed connections' last bytes, until drained
        self._waiting: dict[int, None] = {}  # open connections with bytes waiting (no scan per pump)
        self._next_connection = 0
        self._next_exchange = 0
        self._heads: dict[tuple[int, tuple[Header, ...]], list[tuple[bytes, bytes]]] = {}
        self._wires: dict[tuple[int, tuple[Header, ...]], bytes | None] = {}  # heads as written
        self._deadlines: Deadlines[int] = Deadlines()  # each connection's read deadline

    # ------------------------------------------------------------ input

    def connection_made(self, now: float, peer: str | None = None, *, sending: bool = False) -> int:
        """A client connected (from ``peer``, its address, if the driver knows it); its id.
        ``sending``: the driver saw its bytes waiting already, so its request is arriving
        (its head's deadline runs), and :meth:`idle_connection` does not take it for idle
        before those bytes are fed to :meth:`receive_data`."""
        self._next_connection += 1
        conn = _Connection(self._next_connection, self.limits, peer)
        conn.head_started = sending
        self._connections[conn.id] = conn
        self._deadlines.set(conn.id, now + self.limits.header_timeout)
        return conn.id

    def idle_connection(self, among: Iterable[int], *, arriving: bool = False) -> int | None:
        """Of the open connections ``among``, the one idle longest (no request begun, none
        being answered); with ``arriving``, when none is idle, the one whose request (head
        or body) is closest to its deadline, never one handed over; ``None`` if there is
        none. Changes nothing."""
        idle: list[tuple[float, int]] = []
        slow: list[tuple[float, int]] = []
        for c in among:
            conn = self._connections.get(c)
            deadline = self._deadlines.get(c)
            if conn is not None and conn.state is _State.READING and deadline is not None:
                (slow if conn.head_started or conn.request is not None else idle).append((deadline, c))
        if not idle and arriving:
            idle = slow
        return min(idle)[1] if idle else None

    def close(self, connection: int) -> None:
        """Close ``connection`` now (its exchange, if any, ends).

        Events: ``ExchangeClosed``. Actions: ``CloseConnection``.
        """
        conn = self._connections.get(connection)
        if conn is not None:
            self._lost(conn, "the server closed the connection")

    def receive_data(self, connection: int, data: bytes, now: float) -> None:
        """Bytes from ``connection``; ``b""`` when the client closed its side.

        Raises:
            LocalProtocolError: the connection was never made.

        Events: ``RequestReceived``, ``ExchangeClosed``. Actions: ``CloseConnection``.
        """
        conn = self._connection(connection)
        if conn is None:
            return
        if not data:
            self._lost(conn, "the client closed the connection", ended=True)
            return
        conn.h11.receive_data(data)
        if conn.state is _State.READING:
            fresh = not conn.head_started
            conn.head_started = True
            self._read(conn, now, fresh)
        else:
            conn.ahead += len(data)
            if conn.ahead > self.limits.max_header_bytes:
                # h11 would keep all of it (a client writing without end while its request
                # is answered), and each request it holds costs a copy of the rest.
                conn.out.clear()
                self._lost(conn, "the client sent too much ahead of its response")

    def connection_lost(self, connection: int, now: float) -> None:
        """The connection broke (reset, write error): its exchange ends.

        Events: ``ExchangeClosed``. Actions: ``CloseConnection``.
        """
        conn = self._connection(connection)
        if conn is not None:
            self._lost(conn, "the connection was lost")

    def handle_timeout(self, now: float) -> None:
        """Answer 408 to requests that are too slow, close idle connections, and drop
        connections whose client stopped reading (congested for ``stall_timeout``).

        Events: ``ExchangeClosed``. Actions: ``CloseConnection``.
        """
        for conn in [c for c in map(self._connections.__getitem__, list(self._congested))
                     if c.backlog.stamp(now, self._flow)]:
            conn.out.clear()  # it would not be read
            self._lost(conn, "the client does not read its stream")
        for conn in [self._connections[c] for c in self._deadlines.due(now)]:
            if conn.head_started:
                self._refuse(conn, 408, "the request did not arrive in time")
            else:
                self._close(conn)  # idle keep-alive, or nothing sent at all

    # ------------------------------------------------------------ responses

    def respond(self, exchange: int, status: int, headers: list[Header], body: bytes = b"", *,
                now: float) -> None:
        """Answer ``exchange`` with a whole response (``Content-Length`` is added); the
        connection then serves its next request (one sent early is read now).

        Raises:
            LocalProtocolError: the exchange is not awaiting a response, or the head is invalid.

        Events: ``RequestReceived`` for a request that was waiting.
        """
        conn = self._awaiting(exchange)
        if conn is None:
            return
        if not conn.backlog.fits(len(body), self._flow):  # earlier responses were never read
            self._lost(conn, "the client does not read its responses")
            return
        h = conn.h11
        request = conn.request
        plain = h.their_state is h11.DONE and request is not None and request.method != b"HEAD"
        wire = self._wire_head(status, headers) if plain else None
        if wire is not None:
            # A keep-alive exchange whose response h11 would only frame by Content-Length:
            # its checked head is written as kept, and the next request gets an h11 of
            # its own (what h11 writes and how it resets between requests cost as much as
            # it takes to parse the request).
            self._queue(conn, b"%scontent-length: %d\r\n\r\n%s" % (wire, len(body), body))
            fresh = conn.h11 = _parser(self.limits)
            if h.trailing_data[0]:
                fresh.receive_data(h.trailing_data[0])
            self._exchanges.pop(conn.exchange, None)
            conn.request = None
            self._reading(conn, now)
            return
        try:  # head, body and end in one pass, queued as one piece
            data = h.send(self._response(status, headers, len(body))) or b""
            if body:
                data += h.send(h11.Data(data=body)) or b""
            data += h.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError as exc:
            raise LocalProtocolError(f"invalid response: {exc}") from exc
        self._queue(conn, data)
        self._next_cycle(conn, now)

    def start_stream(self, exchange: int, status: int, headers: list[Header]) -> None:
        """Begin a streamed response (chunked); :meth:`send` its pieces, :meth:`end` it.

        Raises:
            LocalProtocolError: the exchange is not awaiting a response, or the head is invalid.
        """
        conn = self._awaiting(exchange)
        if conn is None:
            return
        self._send(conn, self._response(status, headers, None))
        conn.state = _State.STREAMING

    def send(self, exchange: int, data: bytes) -> bool:
        """A piece of a streamed response; whether it was queued (``False``: the exchange
        is gone, or its client stopped reading and it was just dropped).

        Events: ``ExchangeClosed`` when the buffer bound drops the stream.
        """
        conn = self._exchanges.get(exchange)
        if conn is None or conn.state is not _State.STREAMING:
            return False
        if not conn.backlog.fits(len(data), self._flow):
            self._lost(conn, "the client does not read its stream")
            return False
        self._send(conn, h11.Data(data=data))
        return True

    def end(self, exchange: int, *, now: float) -> None:
        """Finish a streamed response; the connection serves the next request.

        Events: ``RequestReceived`` for a request that was waiting.
        """
        conn = self._exchanges.get(exchange)
        if conn is not None and conn.state is _State.STREAMING:
            self._end(conn, now)

    def abort(self, exchange: int) -> None:
        """Drop ``exchange`` mid-response: its connection closes (an SSE stream a server
        ends early closes this way when the response cannot be ended cleanly)."""
        conn = self._exchanges.get(exchange)
        if conn is not None:
            self._close(conn)

    # ------------------------------------------------------------ output

    def data_to_send(self, connection: int) -> bytes:
        """Drain the bytes waiting for ``connection``."""
        conn = self._connections.get(connection)
        if conn is None:
            return b"".join(self._closing.pop(connection, ()))
        out = conn.out
        if not out:
            return b""
        data = out[0] if len(out) == 1 else b"".join(out)
        out.clear()
        del self._waiting[connection]
        conn.backlog.taken(len(data), self._flow)
        self._congested.discard(connection)  # all of it was taken
        return data

    def connections_with_data(self) -> list[int]:
        """The connections with bytes waiting; changes nothing."""
        return [*self._waiting, *self._closing]

    def next_event(self) -> RequestReceived | ExchangeClosed | None:
        """Pop the next event."""
        return self._events.popleft() if self._events else None

    def has_events(self) -> bool:
        """Whether :meth:`next_event` has something; changes nothing."""
        return bool(self._events)

    def next_action(self) -> CloseConnection | None:
        """Pop the next action."""
        return self._actions.popleft() if self._actions else None

    def next_deadline(self) -> float | None:
        """The earliest read or stall deadline of any connection; changes nothing."""
        earliest = self._deadlines.first()
        for c in self._congested:
            deadline = self._connections[c].backlog.deadline(self._flow)
            if deadline is not None and (earliest is None or deadline < earliest):
                earliest = deadline
        return earliest

    def congested(self, exchange: int) -> bool:
        """Whether the connection carrying ``exchange`` holds more than
        ``high_water_bytes`` its client has not read (a producer should wait); changes nothing."""
        conn = self._exchanges.get(exchange)
        return conn is not None and conn.backlog.congested(self._flow)

    def exchange_connection(self, exchange: int) -> int | None:
        """The connection carrying ``exchange``, while it is open."""
        conn = self._exchanges.get(exchange)
        return None if conn is None else conn.id

    # ------------------------------------------------------------ internals

    def _connection(self, connection: int) -> _Connection | None:
        conn = self._connections.get(connection)
        if conn is None and not 0 < connection <= self._next_connection:
            raise LocalProtocolError(f"connection {connection} was never made")
        return conn

    def _awaiting(self, exchange: int) -> _Connection | None:
        conn = self._exchanges.get(exchange)
        if conn is None:
            return None  # the client left: nothing to answer
        if conn.state is not _State.HANDLING:
            raise LocalProtocolError(f"exchange {exchange} already has a response")
        return conn

    def _read(self, conn: _Connection, now: float, fresh: bool) -> None:
        """Parse what ``conn`` received; ``fresh``: it begins a request head. A request
        still incomplete afterwards gets its deadline: the head's from its first byte,
        the body's from the head (set here, once, not per event: a request that arrives
        whole, as most do, never has either)."""
        limits = self.limits
        had_head = conn.request is not None
        while conn.state is _State.READING:
            try:
                event = conn.h11.next_event()
            except h11.RemoteProtocolError as exc:
                status = exc.error_status_hint if exc.error_status_hint in _REASONS else 400
                self._refuse(conn, status, str(exc))
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                if conn.request is None:
                    if fresh:
                        self._deadlines.set(conn.id, now + limits.header_timeout)
                elif not had_head:
                    self._deadlines.set(conn.id, now + limits.body_timeout)
                return
            if type(event) is h11.Data:
                conn.body += event.data
                if len(conn.body) > limits.max_body_bytes:
                    self._refuse(conn, 413, f"the body exceeds {limits.max_body_bytes} bytes")
                    return
            elif type(event) is h11.Request:
                conn.request = event
                head = _head(event)
                conn.headers = head.headers
                length = head.length
                if head.size > limits.max_header_bytes:  # h11 bounds only a head still arriving
                    self._refuse(conn, 431, f"the request head exceeds {limits.max_header_bytes} bytes")
                    return
                if length is not None and head.chunked:
                    # RFC 9112 section 6.1: framed twice (request smuggling?); the server MAY
                    # reject it and MUST close after responding, so its leftovers are never read.
                    self._refuse(conn, 400, "a request with both Transfer-Encoding and Content-Length")
                    return
                if length is not None and length > limits.max_body_bytes:
                    self._refuse(conn, 413, f"the body exceeds {limits.max_body_bytes} bytes")
                    return
                if head.expects and conn.h11.they_are_waiting_for_100_continue:
                    self._queue(conn, conn.h11.send(h11.InformationalResponse(status_code=100, headers=[])))
            else:
                assert isinstance(event, h11.EndOfMessage)  # EOF never reaches h11: no ConnectionClosed
                self._deliver(conn)

    def _deliver(self, conn: _Connection) -> None:
        request = conn.request
        assert request is not None  # a request precedes its EndOfMessage
        self._next_exchange += 1
        conn.exchange = self._next_exchange
        self._exchanges[conn.exchange] = conn
        conn.state = _State.HANDLING
        self._deadlines.set(conn.id, None)
        conn.head_started = False
        self._events.append(RequestReceived(
            exchange=conn.exchange, connection=conn.id, method=request.method.decode("latin-1"),
            target=request.target.decode("latin-1"), headers=conn.headers, body=bytes(conn.body),
            peer=conn.peer,
        ))
        conn.headers = ()
        conn.body.clear()

    def _send(self, conn: _Connection, event: h11.Response | h11.Data | h11.EndOfMessage) -> None:
        try:
            data = conn.h11.send(event)
        except h11.LocalProtocolError as exc:
            raise LocalProtocolError(f"invalid response: {exc}") from exc
        if data:
            self._queue(conn, data)

    def _queue(self, conn: _Connection, data: bytes) -> None:
        """``data`` waits for ``conn``'s client."""
        conn.out.append(data)
        self._waiting[conn.id] = None
        backlog = conn.backlog
        backlog.add(len(data))
        if backlog.congested(self._flow):
            self._congested.add(conn.id)

    def _end(self, conn: _Connection, now: float) -> None:
        self._send(conn, h11.EndOfMessage())
        self._next_cycle(conn, now)

    def _next_cycle(self, conn: _Connection, now: float) -> None:
        """``conn``'s response is complete: serve its next request (or close it)."""
        self._exchanges.pop(conn.exchange, None)
        conn.request = None
        h = conn.h11
        if h.our_state is not h11.DONE or h.their_state is not h11.DONE:
            self._close(conn)  # "Connection: close", or HTTP/1.0
            return
        h.start_next_cycle()
        self._reading(conn, now)

    def _reading(self, conn: _Connection, now: float) -> None:
        """``conn``'s h11 awaits the next request: read what came of it already."""
        h = conn.h11
        conn.state = _State.READING
        conn.ahead = 0
        conn.head_started = bool(h.trailing_data[0])  # the next request began already
        if conn.head_started:  # (else h11 has nothing to parse: no second drain)
            self._read(conn, now, True)
            if conn.state is not _State.READING:  # what h11 keeps beyond it was sent ahead too
                conn.ahead = len(h.trailing_data[0])
        else:
            self._deadlines.set(conn.id, now + self.limits.idle_timeout)

    def _refuse(self, conn: _Connection, status: int, message: str) -> None:
        """Answer a request that cannot be served with ``status``, then close (a connection
        still reading its request can always be answered: h11 is IDLE or has sent 100)."""
        body = (message[:200] + "\n").encode("utf-8", "replace")
        self._queue(conn, b"".join([conn.h11.send(h11.Response(status_code=status, headers=[
            ("content-type", "text/plain; charset=utf-8"), ("content-length", str(len(body))),
            ("connection", "close")], reason=_REASONS.get(status, b""))) or b"",
            conn.h11.send(h11.Data(data=body)) or b"", conn.h11.send(h11.EndOfMessage()) or b""]))
        self._lost(conn, message)

    def _lost(self, conn: _Connection, reason: str, *, ended: bool = False) -> None:
        exchange = conn.exchange if conn.exchange in self._exchanges else None
        if exchange is not None:
            self._events.append(ExchangeClosed(exchange=exchange, reason=reason))
        self._close(conn, ended=ended)

    def _close(self, conn: _Connection, *, ended: bool = False) -> None:
        """Close ``conn``; ``ended``: its client's input ended (no lingering then)."""
        # Linger only to protect last bytes from a client that may still send: not after
        # its EOF, nor once it said "Connection: close" (or spoke HTTP/1.0) and sent no more.
        done = conn.h11.their_state is h11.MUST_CLOSE and not conn.h11.trailing_data[0]
        linger = bool(conn.out) and not ended and not done
        del self._connections[conn.id]
        self._congested.discard(conn.id)
        self._waiting.pop(conn.id, None)
        self._exchanges.pop(conn.exchange, None)
        conn.state = _State.CLOSING
        self._deadlines.set(conn.id, None)
        if conn.out:
            self._closing[conn.id] = conn.out  # its last bytes (an error response), until drained
        self._actions.append(CloseConnection(connection=conn.id, linger=linger))


    def _wire_head(self, status: int, headers: list[Header]) -> bytes | None:
        """The bytes of the response head ``status`` ``headers`` up to its Content-Length,
        as h11 writes them, checked by h11 once and kept; ``None`` when h11 would frame
        or close it otherwise (no body by status, or a framing or connection header)."""
        key = (status, tuple(headers))
        try:
            return self._wires[key]
        except KeyError:
            raw = self._response(status, headers, None).headers.raw_items()
            plain = status >= 200 and status not in (204, 304) and not any(
                name.lower() in _FRAMING for name, _ in raw)
            if len(self._wires) >= _HEADS:
                self._wires.clear()
            wire = self._wires[key] = b"HTTP/1.1 %d \r\n%s" % (status, b"".join(
                [b"%s: %s\r\n" % item for item in raw])) if plain else None
            return wire

    def _response(self, status: int, headers: list[Header], length: int | None) -> h11.Response:
        """The response head ``status`` ``headers`` (and ``Content-Length: length``). h11
        checks a head once: a server sends the same few (per content type and session)
        on every response, so the checked head is kept (boundedly) and reused as h11
        takes a head it parsed itself (``_parsed``: the regex checks are not run again)."""
        key = (status, tuple(headers))
        checked = self._heads.get(key)
        if checked is None:
            try:
                head = h11.Response(status_code=status, headers=headers)
            except h11.LocalProtocolError as exc:
                raise LocalProtocolError(f"invalid response: {exc}") from exc
            if len(self._heads) >= _HEADS:
                self._heads.clear()
            checked = self._heads[key] = list(head.headers.raw_items())
        if length is not None:
            checked = [*checked, (b"content-length", b"%d" % length)]
        if _PARSED:
            return h11.Response(status_code=status, headers=checked, reason=b"", _parsed=True)
        return h11.Response(status_code=status, headers=checked, reason=b"")


def _takes_parsed_heads() -> bool:
    """Whether this h11 takes ``_parsed=True`` (private, in every release since 0.8): an h11
    that drops it costs the head checks again, never a failed response."""
    try:
        h11.Response(status_code=200, headers=[], reason=b"", _parsed=True)
    except TypeError:
        return False
    return True


_PARSED: Final = _takes_parsed_heads()


class _Head(NamedTuple):
    """What the request path needs of a request head, read in one pass."""

    headers: tuple[Header, ...]  # names lower-case, Latin-1
    size: int  # bytes
    length: int | None  # its Content-Length
    chunked: bool  # it has a Transfer-Encoding
    expects: bool  # it has an Expect (perhaps 100-continue)


def _head(request: h11.Request) -> _Head:
    """A request head in one pass. Names and values are decoded all at once, joined by a
    line feed (which h11 lets into neither)."""
    raw = request.headers.raw_items()
    size = len(request.method) + len(request.target) + 12
    if not raw:
        return _Head((), size, None, False, False)
    names = b"\n".join([name for name, _ in raw])
    values = b"\n".join([value for _, value in raw])
    size += len(names) + len(values) + 2 * len(raw) + 2  # ": " and CRLF per line (not the 2 joins)
    keys = names.decode("latin-1").lower().split("\n")
    headers = tuple(zip(keys, values.decode("latin-1").split("\n"), strict=True))
    try:
        length: int | None = int(raw[keys.index("content-length")][1])  # h11 validated it
    except ValueError:
        length = None
    return _Head(headers, size, length, "transfer-encoding" in keys, "expect" in keys)
