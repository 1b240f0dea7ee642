"""The Streamable HTTP server's exchange table and response writing.

:class:`ResponseWriter` holds the exchanges awaiting (or streaming) their response and
writes MCP messages into them: a response is JSON when the request's only message is its
answer, SSE once anything precedes it (``response_mode`` can force either); an SSE answer
that is all there is goes out whole, as one response. Handshake-era streams are resumable:
numbered per session, primed with an event id and the retry hint, each event kept in the
event store. It is the lowest layer of :class:`~.http.HttpServer` (``http_sessions`` adds
the session table, ``http`` the requests and the driver's side).
"""

from __future__ import annotations

import abc
from collections import deque
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Final

from .. import jsonrpc
from .endpoint import Endpoint
from .exchanges import HttpExchanges
from .flow import AT_ONCE, FlowLimits
from .http11 import HttpConnections, RequestReceived
from .http_config import HttpConfig
from .http_streams import JSON_HEAD, SSE_ANSWER_HEAD, SSE_HEAD, Exchange, Legacy, LegacyHost, Mode, sse_event
from .stores import INBOX_STREAM, EventStore, MemoryEventStore, StoreUnavailable

if TYPE_CHECKING:
    from .app import MCPServer

__all__ = ["ResponseWriter"]

Header = tuple[str, str]
JSON: Final[Header] = ("content-type", "application/json")
_FINISHED_STREAMS: Final = 1024
_UNSTORED: Final = 1024
"""Events of broken streams kept while a shared store does not take them."""
_UNSTORED_RETRY: Final = 1.0
"""Seconds between offers of those events to the store."""


class ResponseWriter(Endpoint):
    """The exchanges of an HTTP server and what is written into them (see the module).

    Args:
        app, secret, entropy, wall_offset: see :class:`Endpoint`.
        config: the HTTP settings.
        events: where resumable stream events are kept (default: this process).
        exchanges: HTTP messages from a host server (ASGI) instead of bytes.
    """

    def __init__(self, app: MCPServer, *, secret: bytes, entropy: bytes, wall_offset: float,
                 config: HttpConfig | None, events: EventStore | None,
                 exchanges: HttpExchanges | None) -> None:
        super().__init__(app, secret=secret, entropy=entropy, wall_offset=wall_offset)
        self.config = config or HttpConfig()
        self._wire: HttpConnections | None = None  # None: a host server (ASGI) owns the bytes
        self.http: HttpConnections | HttpExchanges
        if exchanges is None:
            self.http = self._wire = HttpConnections(self.config.limits)
        else:
            self.http = exchanges
        self.event_store: EventStore = events or MemoryEventStore()
        self._exchanges: dict[int, Exchange] = {}
        self._inboxes: dict[str, None] = {}  # the sessions whose inbox may matter here (a shared store)
        self._retry = f"\nretry: {self.config.sse_retry_ms}\ndata: \n\n".encode()
        self._unstored: deque[tuple[str, int, bytes, bool]] = deque()
        """Events of broken streams (nobody got them) a shared store did not take: (session,
        stream, data, final), in order, stored once it answers (a resumption, at any worker,
        gets them then)."""
        self._unstored_at: float | None = None  # when to offer them again (None: at once)

    @abc.abstractmethod
    def _pump(self, now: float) -> None:
        """Act on what the HTTP layer has (a request let in by a response just written)."""

    def send(self, channel: int | None, data: bytes) -> None:
        """A stateless-era message for the request of ``channel`` (none other exist)."""
        ex = None if channel is None else self._exchanges.get(channel)
        if ex is not None:
            self._emit(ex, data, None, 200, None)

    def finish(self, channel: int | None, data: bytes, status: int, now: float) -> None:
        """A stateless-era response (a request that waited behind it is taken in at once)."""
        ex = None if channel is None else self._exchanges.get(channel)
        if ex is not None:
            self._emit(ex, data, None, status, now)
            self._pump(now)

    @property
    def flow_limits(self) -> FlowLimits:
        """The bounds of response bytes waiting for a client."""
        return self.http.limits.flow

    def congested(self, call: int) -> bool:
        """Whether the response stream ``call`` writes to is congested (see ``flow.py``)."""
        session = self._calls.get(call)
        record = None if session is None else session.calls.get(call)
        if session is None or record is None:
            return False
        if isinstance(session.host, LegacyHost):
            return session.host.congested(record.channel)
        return record.channel is not None and self.http.congested(record.channel)

    def answer_stream(self, call: int) -> Hashable:
        """Every request has a response of its own (no batches): ``call`` alone."""
        return call

    def legacy_congested(self, legacy: Legacy, channel: int | None) -> bool:
        """Whether the exchange now carrying ``channel``'s stream of ``legacy`` is congested."""
        stream = 0 if channel is None else legacy.stream_of.get(channel)
        exchange = channel if stream is None else legacy.live.get(stream)
        return exchange is not None and self.http.congested(exchange)

    def legacy_send(self, legacy: Legacy, channel: int | None, data: bytes, final: bool, status: int,
                    now: float | None) -> None:
        """A message of a handshake-era session (``now`` given for a final response),
        routed to its request's stream, the GET stream, or the event store when the
        stream is gone."""
        stream = 0 if channel is None else legacy.stream_of.get(channel)
        if stream is None:  # a request whose response has not begun: its own exchange
            exchange: int | None = channel
        else:  # the exchange carrying the stream now (a resumption's GET, perhaps)
            exchange = legacy.live.get(stream)
        ex = None if exchange is None else self._exchanges.get(exchange)
        if ex is not None:
            self._emit(ex, data, legacy, status, now if final else None)
            if now is not None and final:
                self._pump(now)  # a request that waited behind this response
        elif stream is not None:  # its stream broke: keep the event for a resumption
            if self._unstored or self._append(legacy, stream, data, final) is None:
                self._keep_unstored(legacy.id, stream, data, final)
            if final:
                self._stream_done(legacy, stream)

    def _keep_unstored(self, session_id: str, stream: int, data: bytes, final: bool) -> None:
        """Keep an event nobody got that the store did not take (behind any kept before:
        in order), at most ``_UNSTORED`` of them (the oldest go: lost, as before)."""
        if not self._unstored:
            self._unstored_at = None  # (set when the timer is handled)
        self._unstored.append((session_id, stream, data, final))
        if len(self._unstored) > _UNSTORED:
            self._unstored.popleft()

    def _unstored_deadline(self) -> float | None:
        """When the kept events are offered to the store again (none kept: ``None``)."""
        if not self._unstored:
            return None
        return AT_ONCE if self._unstored_at is None else self._unstored_at

    def _store_unstored(self, now: float) -> None:
        """Offer the kept events to the store, in order, when their time came; on a failure
        the rest wait ``_UNSTORED_RETRY`` seconds more."""
        if not self._unstored:
            return
        if self._unstored_at is None:  # kept since the last call: offered in a while
            self._unstored_at = now + _UNSTORED_RETRY
            return
        if now < self._unstored_at:
            return
        while self._unstored:
            session_id, stream, data, final = self._unstored[0]
            try:
                self.event_store.append(session_id, stream, data, final)
            except StoreUnavailable:
                self._unstored_at = now + _UNSTORED_RETRY
                return
            self._unstored.popleft()
        self._unstored_at = None

    def _emit(self, ex: Exchange, data: bytes, legacy: Legacy | None, status: int, now: float | None) -> None:
        """Write one message on ``ex`` (the response that ends it when ``now`` is given):
        as its JSON body, or as an SSE event."""
        mode = self.config.response_mode
        if ex.mode is Mode.PENDING:
            if now is not None and ex.wants_json and (mode != "sse" or not ex.wants_sse):
                del self._exchanges[ex.id]
                ex.mode = Mode.DONE
                self.http.respond(ex.id, status, JSON_HEAD if legacy is None else legacy.json_head, data,
                                  now=now)
                return
            if now is None and (not ex.wants_sse or mode == "json"):
                if legacy is not None:
                    self.legacy_send(legacy, None, data, False, status, None)  # the GET stream takes it
                return  # no stream to carry a stateless notification: dropped
            if now is not None:
                self._answer_sse(ex, data, legacy, now)
                return
            self._start_sse(ex, legacy)
        event_id = None
        if legacy is not None:
            event_id = self._append(legacy, legacy.stream_of[ex.id], data, now is not None)
        self.http.send(ex.id, sse_event(data, event_id))
        if now is not None:
            self._exchanges.pop(ex.id, None)
            ex.mode = Mode.DONE
            self.http.end(ex.id, now=now)
            if legacy is not None:
                self._stream_done(legacy, legacy.stream_of[ex.id])

    def _answer_sse(self, ex: Exchange, data: bytes, legacy: Legacy | None, now: float) -> None:
        """An SSE response whose answer is all there is: the stream (a resumable one's
        priming event, then the answer) written whole, as one response of known length."""
        del self._exchanges[ex.id]
        ex.mode = Mode.DONE
        if legacy is None:
            self.http.respond(ex.id, 200, SSE_ANSWER_HEAD, sse_event(data, None), now=now)
            return
        stream = self._open_stream(ex, legacy)
        ids = self._extend(legacy, stream, ((b"", False), (data, True)), ex.request_id)
        body = sse_event(data, None) if ids is None else self._priming(ids[0]) + sse_event(data, ids[1])
        self.http.respond(ex.id, 200, legacy.sse_answer_head, body, now=now)
        self._stream_done(legacy, stream, ex.id)

    def _stream_done(self, legacy: Legacy, stream: int, only: int | None = None) -> None:
        """``stream`` carried its final response: forget its routing, remember (boundedly)
        that a resumption of it ends after the replay. ``only``: the one channel it had
        (a stream opened and ended in one response), so the others are not looked at."""
        legacy.live.pop(stream, None)
        if only is not None:
            del legacy.stream_of[only]
        else:
            for channel in [c for c, s in legacy.stream_of.items() if s == stream]:
                del legacy.stream_of[channel]
        legacy.finished_streams[stream] = None
        if len(legacy.finished_streams) > _FINISHED_STREAMS:
            legacy.finished_streams.popitem(last=False)

    def _start_sse(self, ex: Exchange, legacy: Legacy | None) -> None:
        """Open ``ex`` as an SSE stream; a handshake-era stream is resumable: it gets a
        stream number and begins with a priming event (an id, the retry hint, no data)."""
        self.http.start_stream(ex.id, 200, SSE_HEAD if legacy is None else legacy.sse_head)
        ex.mode = Mode.SSE
        if legacy is None:
            return
        stream = self._open_stream(ex, legacy)
        priming = self._append(legacy, stream, b"", False, ex.request_id)
        if priming is not None:
            self.http.send(ex.id, self._priming(priming))

    def _open_stream(self, ex: Exchange, legacy: Legacy) -> int:
        """The stream number of ``ex``'s response (a new one unless it is the GET stream's),
        now carried by ``ex``."""
        stream = legacy.stream_of.get(ex.id)
        if stream is None:
            legacy.next_stream += 1
            stream = legacy.stream_of[ex.id] = legacy.next_stream
        legacy.live[stream] = ex.id
        return stream

    def _priming(self, event_id: str) -> bytes:
        """The priming event of a resumable stream: its id and the retry hint, no data."""
        return b"id: " + event_id.encode() + self._retry

    def _append(self, legacy: Legacy, stream: int, data: bytes, final: bool,
                request_id: int | str | None = None) -> str | None:
        """Keep an event for resumption; its id, or ``None`` when the store failed (the
        event is still sent, without an id: that stream cannot be resumed past it)."""
        try:
            event_id = self.event_store.append(legacy.id, stream, data, final, request_id)
        except StoreUnavailable:
            return None
        self._kept(legacy, stream, event_id)
        return event_id

    def _extend(self, legacy: Legacy, stream: int, events: Sequence[tuple[bytes, bool]],
                request_id: int | str | None) -> list[str] | None:
        """Keep several events for resumption in one store call; their ids, or ``None``
        when the store failed."""
        try:
            ids = self.event_store.extend(legacy.id, stream, events, request_id)
        except StoreUnavailable:
            return None
        self._kept(legacy, stream, ids[0])
        return ids

    def _kept(self, legacy: Legacy, stream: int, event_id: str) -> None:
        """``legacy``'s first event in a shared store marks where its inbox begins."""
        if self.event_store.shared and legacy.inbox_after is None and stream != INBOX_STREAM:
            legacy.inbox_after = event_id  # the client's answers to what we send come after it
            self._inboxes[legacy.id] = None

    def _headers(self, legacy: Legacy | None) -> list[Header]:
        return [] if legacy is None else legacy.head

    def _plain(self, req: RequestReceived, status: int, text: str, now: float) -> None:
        self.http.respond(req.exchange, status, [("content-type", "text/plain; charset=utf-8")],
                          text.encode() + b"\n", now=now)

    def _error(self, req: RequestReceived, status: int, rid: int | str | None, code: int, message: str,
               now: float) -> None:
        self.http.respond(req.exchange, status, [JSON], jsonrpc.encode_error(rid, code, message), now=now)
