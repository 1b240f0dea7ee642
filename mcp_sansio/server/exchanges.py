"""HTTP exchanges as messages, for a host server that owns the bytes (ASGI).

:class:`HttpExchanges` is the message-level twin of :class:`~.http11.HttpConnections`:
the same side that ``HttpServer`` answers through (``respond``, ``start_stream``, ``send``,
``end``, ``abort``, and the ``RequestReceived`` / ``ExchangeClosed`` events), but fed
whole request heads and body chunks instead of bytes, and read as response parts per
exchange instead of bytes per connection. Under uvicorn, hypercorn or granian the host
parses HTTP/1.1 or HTTP/2 and bounds slow clients; this keeps the bounds that are MCP's
to keep: the body size, and the bytes of response a client that does not read may have
waiting (past ``max_buffer_bytes`` its stream is dropped, as over plain sockets).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Iterable

import msgspec

from ..errors import LocalProtocolError
from .http11 import ExchangeClosed, HttpLimits, RequestReceived

__all__ = ["HttpExchanges", "ResponseAborted", "ResponseBody", "ResponseStart"]

Header = tuple[str, str]


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
    __slots__ = ("body", "head", "out", "out_size", "state")

    def __init__(self, head: RequestReceived) -> None:
        self.head = head
        self.state = _State.READING
        self.body = bytearray()
        self.out: deque[Part] = deque()
        self.out_size = 0


class HttpExchanges:
    """Requests in as messages, responses out as parts, for any number of exchanges.

    Driver contract: :meth:`begin` each request with its head, feed its body to
    :meth:`receive_body` (``more=False`` with the last chunk), call :meth:`disconnect`
    when the client goes away, and after each input send every part of
    :meth:`next_part` for the exchanges :meth:`exchanges_with_output` names; an exchange
    is over after a ``ResponseBody(more=False)`` or a ``ResponseAborted``.
    """

    def __init__(self, limits: HttpLimits | None = None) -> None:
        self.limits = limits or HttpLimits()
        self._exchanges: dict[int, _Exchange] = {}
        self._events: deque[RequestReceived | ExchangeClosed] = deque()
        self._next_exchange = 0

    # ------------------------------------------------------------ input

    def begin(self, method: str, target: str, headers: Iterable[tuple[bytes, bytes]],
              peer: str | None = None) -> int:
        """A request head arrived (ASGI's scope) from ``peer`` (the client's address, if
        known); its exchange id. Header names are lower-cased and values decoded as
        Latin-1, as HTTP/1.1 carries them."""
        self._next_exchange += 1
        exchange = self._next_exchange
        head = RequestReceived(
            exchange=exchange, connection=exchange, method=method, target=target,
            headers=tuple((name.decode("latin-1").lower(), value.decode("latin-1"))
                          for name, value in headers),
            body=b"", peer=peer,
        )
        self._exchanges[exchange] = _Exchange(head)
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
            self._events.append(msgspec.structs.replace(ex.head, body=bytes(ex.body)))
            ex.body.clear()
        return more

    def disconnect(self, exchange: int) -> None:
        """The client went away (ASGI ``http.disconnect``).

        Events: ``ExchangeClosed`` when its request was being handled or streamed.
        """
        ex = self._exchanges.pop(exchange, None)
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
            ex.out.append(ResponseStart(status=status, headers=_encode(headers)))
            ex.state = _State.STREAMING

    def send(self, exchange: int, data: bytes) -> bool:
        """A piece of a streamed response; whether it was queued (``False``: the exchange
        is gone, or its client stopped reading and it was just dropped).

        Events: ``ExchangeClosed`` when the buffer bound drops the stream.
        """
        ex = self._exchanges.get(exchange)
        if ex is None or ex.state is not _State.STREAMING:
            return False
        if ex.out_size + len(data) > self.limits.max_buffer_bytes:
            reason = "the client does not read its stream"
            self._events.append(ExchangeClosed(exchange=exchange, reason=reason))
            self.abort(exchange)
            return False
        ex.out.append(ResponseBody(data=data, more=True))
        ex.out_size += len(data)
        return True

    def end(self, exchange: int, *, now: float) -> None:
        """Finish a streamed response."""
        ex = self._exchanges.get(exchange)
        if ex is not None and ex.state is _State.STREAMING:
            ex.out.append(ResponseBody(data=b"", more=False))
            ex.state = _State.DONE

    def abort(self, exchange: int) -> None:
        """Drop ``exchange`` mid-response (its connection is closed)."""
        ex = self._exchanges.get(exchange)
        if ex is not None and ex.state is not _State.DONE:
            ex.out.clear()
            ex.out.append(ResponseAborted())
            ex.out_size = 0
            ex.state = _State.DONE

    def next_event(self) -> RequestReceived | ExchangeClosed | None:
        """Pop the next event."""
        return self._events.popleft() if self._events else None

    def next_deadline(self) -> float | None:
        """Always ``None``: the host server times out slow clients."""
        return None

    def handle_timeout(self, now: float) -> None:
        """Nothing is timed here (see :meth:`next_deadline`)."""

    # ------------------------------------------------------------ output

    def dropped(self, exchange: int) -> bool:
        """Whether ``exchange`` was aborted and only its ``ResponseAborted`` is left (a
        driver blocked writing it should stop at once); changes nothing."""
        ex = self._exchanges.get(exchange)
        return ex is not None and len(ex.out) == 1 and isinstance(ex.out[0], ResponseAborted)

    def exchanges_with_output(self) -> list[int]:
        """The exchanges with parts waiting; changes nothing."""
        return [exchange for exchange, ex in self._exchanges.items() if ex.out]

    def next_part(self, exchange: int) -> Part | None:
        """Pop the next part of ``exchange``'s response (the exchange is forgotten after
        its last part)."""
        ex = self._exchanges.get(exchange)
        if ex is None or not ex.out:
            return None
        part = ex.out.popleft()
        if isinstance(part, ResponseBody):
            ex.out_size -= len(part.data)
        if ex.state is _State.DONE and not ex.out:
            del self._exchanges[exchange]
        return part

    # ------------------------------------------------------------ internals

    def _awaiting(self, exchange: int) -> _Exchange | None:
        ex = self._exchanges.get(exchange)
        if ex is None:
            return None  # the client left: nothing to answer
        if ex.state is not _State.HANDLING:
            raise LocalProtocolError(f"exchange {exchange} already has a response")
        return ex

    def _whole(self, ex: _Exchange, status: int, headers: list[Header], body: bytes) -> None:
        head = _encode([*headers, ("content-length", str(len(body)))])
        ex.out.append(ResponseStart(status=status, headers=head))
        ex.out.append(ResponseBody(data=body, more=False))
        ex.state = _State.DONE


def _encode(headers: list[Header]) -> list[tuple[bytes, bytes]]:
    try:
        return [(name.lower().encode("ascii"), value.encode("latin-1")) for name, value in headers]
    except UnicodeEncodeError as exc:
        raise LocalProtocolError(f"invalid response header: {exc}") from exc
