"""HTTP exchanges as messages, for a host server that owns the bytes (ASGI).

:class:`HttpExchanges` is the message-level twin of :class:`~.http11.HttpConnections`:
the same side that ``HttpServer`` answers through (``respond``, ``start_stream``, ``send``,
``end``, ``abort``, and the ``RequestReceived`` / ``ExchangeClosed`` events), but fed
whole request heads and body chunks instead of bytes, and read as response parts per
exchange instead of bytes per connection. Under uvicorn, hypercorn or granian the host
parses HTTP/1.1 or HTTP/2 and bounds slow heads; this keeps the bounds that are MCP's
to keep, as over plain sockets: the head's size (``max_header_bytes``, 431: a host may
allow more, and a huge ``Authorization`` header would reach the token verifier), a
request framed by both ``Transfer-Encoding`` and ``Content-Length`` (400, closing), the
body's size and time (``max_body_bytes``, 413; ``body_timeout`` from the head, 408:
hosts leave a body that never ends open), and the bytes of response a client that does
not read may have waiting (``flow.py``: congested over ``high_water_bytes``, dropped past
``max_buffer_bytes`` or after ``stall_timeout``).
A part counts as waiting until the driver takes it with :meth:`HttpExchanges.next_part`,
which it does only once the host took the previous one (its ``send`` returned).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable
from typing import Final

import msgspec

from ..errors import LocalProtocolError
from .deadlines import Deadlines
from .flow import Backlog
from .http11 import ExchangeClosed, HttpLimits, RequestReceived

__all__ = ["HttpExchanges", "ResponseAborted", "ResponseBody", "ResponseStart"]

Header = tuple[str, str]
_HEADS: Final = 1024  # encoded response heads kept


class ResponseStart(msgspec.Struct, frozen=True, kw_only=True):
    """The response head (ASGI ``http.response.start``); header names are lower-case."""

    status: int
    headers: list[tuple[bytes, bytes]]


class ResponseBody(msgspec.Struct, frozen=True, kw_only=True):
    """A piece of the response (ASGI ``http.response.body``); ``more=False`` ends it."""

    data: bytes
    more: bool


class ResponseAborted(msgspec.Struct, frozen=True, kw_only=True):
    """The server dropped the exchange mid-response: close the connection without ending it."""


Part = ResponseStart | ResponseBody | ResponseAborted


class _State(enum.Enum):
    READING = "reading"  # the head is in, the body is arriving
    HANDLING = "handling"  # handed over; no response yet
    STREAMING = "streaming"  # the head is out, the body goes on
    DONE = "done"  # the response ended, or was aborted or refused


class _Exchange:
    __slots__ = ("backlog", "body", "head", "id", "out", "state")

    def __init__(self, head: RequestReceived) -> None:
        self.id = head.exchange
        self.head = head
        self.state = _State.READING
        self.body = bytearray()
        self.out: deque[Part] = deque()
        self.backlog = Backlog()


class HttpExchanges:
    """Requests in as messages, responses out as parts, for any number of exchanges.

    Driver contract: :meth:`begin` each request with its head, feed its body to
    :meth:`receive_body` (``more=False`` with the last chunk), call :meth:`disconnect`
    when the client goes away, and after each input send every part of
    :meth:`next_part` for the exchanges :meth:`exchanges_with_output` names; an exchange
    is over after a ``ResponseBody(more=False)`` or a ``ResponseAborted``. Take a part
    only once the host took the previous one: what is not taken is what the backpressure
    bounds count. Call :meth:`handle_timeout` at :meth:`next_deadline`; an exchange whose
    body is still being read when it gets output (a 408, a 413) is answered: stop reading.
    """

    def __init__(self, limits: HttpLimits | None = None) -> None:
        self.limits = limits or HttpLimits()
        self._flow = self.limits.flow
        self._congested: set[int] = set()  # exchanges over high water (no scan per pump)
        self._exchanges: dict[int, _Exchange] = {}
        self._deadlines: Deadlines[int] = Deadlines()  # the bodies', while they are read
        self._waiting: dict[int, None] = {}  # exchanges with parts waiting (no scan per pump)
        self._events: deque[RequestReceived | ExchangeClosed] = deque()
        self._next_exchange = 0
        self._heads: dict[tuple[Header, ...], list[tuple[bytes, bytes]]] = {}  # encoded once (bounded)

    # ------------------------------------------------------------ input

    def begin(self, method: str, target: str, headers: Iterable[tuple[bytes, bytes]],
              peer: str | None = None, *, now: float) -> int:
        """A request head arrived (ASGI's scope) from ``peer`` (the client's address, if
        known) at ``now``; its exchange id. Header names are lower-cased and values decoded
        as Latin-1, as HTTP/1.1 carries them. Its body must be in by ``now + body_timeout``.
        A head over ``max_header_bytes`` is answered 431 at once (none of its body is read)."""
        self._next_exchange += 1
        exchange = self._next_exchange
        decoded, size, framed_twice = _decode_head(headers)
        head = RequestReceived(exchange=exchange, connection=exchange, method=method, target=target,
                               headers=decoded, body=b"", peer=peer)
        ex = self._exchanges[exchange] = _Exchange(head)
        self._deadlines.set(exchange, now + self.limits.body_timeout)
        size += len(method) + len(target) + 12
        if size > self.limits.max_header_bytes:  # as http11 bounds it (hosts may not, or more loosely)
            self._whole(ex, 431, [("content-type", "text/plain; charset=utf-8")],
                        f"the request head exceeds {self.limits.max_header_bytes} bytes\n".encode())
        elif framed_twice:
            # As http11 refuses it (RFC 9112 section 6.1: perhaps smuggling; the server MUST
            # close after responding): a host may take the chunked body (uvicorn on h11 did)
            # and read what follows it as the next request.
            self._whole(ex, 400, [("content-type", "text/plain; charset=utf-8"), ("connection", "close")],
                        b"a request with both Transfer-Encoding and Content-Length\n")
        return exchange

    def receive_body(self, exchange: int, data: bytes, *, more: bool) -> bool:
        """A chunk of the request body (``more=False`` with the last); whether to read more.

        A body over ``max_body_bytes`` is answered 413 at once (read no more of it).

        Events: ``RequestReceived`` once the body is complete.
        """
        ex = self._exchanges.get(exchange)
        if ex is None or ex.state is not _State.READING:
            return False
        ex.body += data
        limit = self.limits.max_body_bytes
        if len(ex.body) > limit:
            ex.body.clear()
            self._whole(ex, 413, [("content-type", "text/plain; charset=utf-8")],
                        f"the body exceeds {limit} bytes\n".encode())
            return False
        if not more:
            ex.state = _State.HANDLING
            self._deadlines.set(ex.id, None)
            self._events.append(msgspec.structs.replace(ex.head, body=bytes(ex.body)))
            ex.body.clear()
        return more

    def disconnect(self, exchange: int) -> None:
        """The client went away (ASGI ``http.disconnect``).

        Events: ``ExchangeClosed`` when its request was being handled or streamed.
        """
        ex = self._exchanges.pop(exchange, None)
        self._congested.discard(exchange)
        self._waiting.pop(exchange, None)
        self._deadlines.set(exchange, None)
        if ex is not None and ex.state in (_State.HANDLING, _State.STREAMING):
            self._events.append(ExchangeClosed(exchange=exchange, reason="the client closed the connection"))

    # ------------------------------------------------------------ responses (HttpConnections' side)

    def respond(self, exchange: int, status: int, headers: list[Header], body: bytes = b"", *,
                now: float) -> None:
        """Answer ``exchange`` with a whole response (``Content-Length`` is added).

        Raises:
            LocalProtocolError: the exchange already has a response.
        """
        ex = self._awaiting(exchange)
        if ex is not None:
            self._whole(ex, status, headers, body)

    def start_stream(self, exchange: int, status: int, headers: list[Header]) -> None:
        """Begin a streamed response; :meth:`send` its pieces, :meth:`end` it.

        Raises:
            LocalProtocolError: the exchange already has a response.
        """
        ex = self._awaiting(exchange)
        if ex is not None:
            self._put(ex, ResponseStart(status=status, headers=self._encode(headers)))
            ex.state = _State.STREAMING

    def send(self, exchange: int, data: bytes) -> bool:
        """A piece of a streamed response; whether it was queued (``False``: the exchange
        is gone, or its client stopped reading and it was just dropped).

        Events: ``ExchangeClosed`` when the buffer bound drops the stream.
        """
        ex = self._exchanges.get(exchange)
        if ex is None or ex.state is not _State.STREAMING:
            return False
        if not ex.backlog.fits(len(data), self._flow):
            reason = "the client does not read its stream"
            self._events.append(ExchangeClosed(exchange=exchange, reason=reason))
            self.abort(exchange)
            return False
        self._put(ex, ResponseBody(data=data, more=True))
        ex.backlog.add(len(data))
        if ex.backlog.congested(self._flow):
            self._congested.add(exchange)
        return True

    def end(self, exchange: int, *, now: float) -> None:
        """Finish a streamed response."""
        ex = self._exchanges.get(exchange)
        if ex is not None and ex.state is _State.STREAMING:
            self._put(ex, ResponseBody(data=b"", more=False))
            ex.state = _State.DONE

    def abort(self, exchange: int) -> None:
        """Drop ``exchange`` mid-response (its connection is closed)."""
        ex = self._exchanges.get(exchange)
        if ex is not None and ex.state is not _State.DONE:
            self._drop(exchange, ex)

    def next_event(self) -> RequestReceived | ExchangeClosed | None:
        """Pop the next event."""
        return self._events.popleft() if self._events else None

    def has_events(self) -> bool:
        """Whether :meth:`next_event` has something; changes nothing."""
        return bool(self._events)

    def next_deadline(self) -> float | None:
        """The earliest body or stall deadline; changes nothing."""
        first = self._deadlines.first()
        if not self._congested:  # (the usual case)
            return first
        exchanges, flow = self._exchanges, self._flow
        deadlines = [d for e in self._congested if (d := exchanges[e].backlog.deadline(flow)) is not None]
        if first is not None:
            deadlines.append(first)
        return min(deadlines) if deadlines else None

    def handle_timeout(self, now: float) -> None:
        """Answer 408 to a body that did not arrive in time (the host then closes the
        connection: the response says ``Connection: close``), and drop streams whose
        client stopped reading (congested for ``stall_timeout``).

        Events: ``ExchangeClosed`` for a dropped stream.
        """
        for exchange in sorted(self._deadlines.due(now)):  # in the order they began
            ex = self._exchanges[exchange]
            ex.body.clear()
            self._whole(ex, 408, [("content-type", "text/plain; charset=utf-8"), ("connection", "close")],
                        b"the request did not arrive in time\n")
        for exchange in list(self._congested):
            ex = self._exchanges[exchange]
            if ex.backlog.stamp(now, self._flow):
                if ex.state is _State.STREAMING:  # (else its response ended, unread)
                    reason = "the client does not read its stream"
                    self._events.append(ExchangeClosed(exchange=exchange, reason=reason))
                self._drop(exchange, ex)

    def congested(self, exchange: int) -> bool:
        """Whether ``exchange`` holds more than ``high_water_bytes`` of response the host
        has not taken (a producer should wait); changes nothing."""
        ex = self._exchanges.get(exchange)
        return ex is not None and ex.backlog.congested(self._flow)

    def reading(self, exchange: int) -> bool:
        """Whether ``exchange``'s body is still wanted (``False`` once it was answered
        early: a 408 or a 413); changes nothing."""
        ex = self._exchanges.get(exchange)
        return ex is not None and ex.state is _State.READING

    # ------------------------------------------------------------ output

    def dropped(self, exchange: int) -> bool:
        """Whether ``exchange`` was aborted and only its ``ResponseAborted`` is left (a
        driver blocked writing it should stop at once); changes nothing."""
        ex = self._exchanges.get(exchange)
        return ex is not None and len(ex.out) == 1 and isinstance(ex.out[0], ResponseAborted)

    def has_output(self, exchange: int) -> bool:
        """Whether ``exchange`` has parts waiting; changes nothing."""
        return exchange in self._waiting

    def exchanges_with_output(self) -> list[int]:
        """The exchanges with parts waiting; changes nothing."""
        return sorted(self._waiting) if len(self._waiting) > 1 else list(self._waiting)

    def next_part(self, exchange: int) -> Part | None:
        """Pop the next part of ``exchange``'s response (the exchange is forgotten after
        its last part)."""
        ex = self._exchanges.get(exchange)
        if ex is None or not ex.out:
            return None
        part = ex.out.popleft()
        if not ex.out:
            self._waiting.pop(exchange, None)
        if isinstance(part, ResponseBody):
            ex.backlog.taken(len(part.data), self._flow)
            if not ex.backlog.congested(self._flow):
                self._congested.discard(exchange)
        if ex.state is _State.DONE and not ex.out:
            del self._exchanges[exchange]
            self._congested.discard(exchange)
        return part

    # ------------------------------------------------------------ internals

    def _awaiting(self, exchange: int) -> _Exchange | None:
        ex = self._exchanges.get(exchange)
        if ex is None:
            return None  # the client left: nothing to answer
        if ex.state is not _State.HANDLING:
            raise LocalProtocolError(f"exchange {exchange} already has a response")
        return ex

    def _drop(self, exchange: int, ex: _Exchange) -> None:
        """Forget what ``ex`` has waiting; the driver closes it (``ResponseAborted``)."""
        ex.out.clear()
        self._put(ex, ResponseAborted())
        ex.backlog = Backlog()
        self._congested.discard(exchange)
        ex.state = _State.DONE

    def _whole(self, ex: _Exchange, status: int, headers: list[Header], body: bytes) -> None:
        head = self._encode(headers)
        head.append((b"content-length", b"%d" % len(body)))
        self._put(ex, ResponseStart(status=status, headers=head))
        ex.out.append(ResponseBody(data=body, more=False))
        ex.state = _State.DONE
        self._deadlines.set(ex.id, None)

    def _put(self, ex: _Exchange, part: Part) -> None:
        """Queue ``part`` of ``ex``'s response."""
        ex.out.append(part)
        self._waiting[ex.id] = None

    def _encode(self, headers: list[Header]) -> list[tuple[bytes, bytes]]:
        """``headers`` as ASGI carries them (a new list); a server sends the same few heads
        on every response, so each is encoded once (boundedly)."""
        key = tuple(headers)
        encoded = self._heads.get(key)
        if encoded is None:
            try:
                encoded = [(name.lower().encode("ascii"), value.encode("latin-1")) for name, value in headers]
            except UnicodeEncodeError as exc:
                raise LocalProtocolError(f"invalid response header: {exc}") from exc
            if len(self._heads) >= _HEADS:
                self._heads.clear()
            self._heads[key] = encoded
        return list(encoded)


def _decode_head(headers: Iterable[tuple[bytes, bytes]]) -> tuple[tuple[Header, ...], int, bool]:
    """A host's header pairs, names lower-cased and values decoded as Latin-1; their size on
    the wire (``name: value`` and CRLF each); and whether the request is framed twice (both
    ``Transfer-Encoding`` and ``Content-Length``). Decoded all at once, joined by a line
    feed, unless a name or value holds one (HTTP/1.1 lets none in; another host might):
    then pair by pair."""
    pairs = headers if isinstance(headers, list) else list(headers)
    if not pairs:
        return (), 0, False
    names = b"\n".join([name for name, _ in pairs])
    values = b"\n".join([value for _, value in pairs])
    size = len(names) + len(values) + 2 * len(pairs) + 2  # ": " and CRLF per line (not the joins)
    keys = names.decode("latin-1").lower().split("\n")
    texts = values.decode("latin-1").split("\n")
    if len(keys) == len(texts) == len(pairs):
        decoded = tuple(zip(keys, texts, strict=True))
    else:
        decoded = tuple((name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in pairs)
        keys = [name for name, _ in decoded]
    return decoded, size, "transfer-encoding" in keys and "content-length" in keys
