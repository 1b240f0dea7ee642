"""The records behind the Streamable HTTP server: exchanges, handshake-era sessions, SSE.

An :class:`Exchange` is one HTTP request awaiting (or streaming) its response. A
:class:`Legacy` session numbers its SSE streams (0 is the GET stream) so that events keep
their stream across a reconnection, and knows which exchange carries each stream now.
:class:`LegacyHost` is the host such a session sees: everything goes to the server, with
the session's identity attached.
"""

from __future__ import annotations

import enum
from collections import OrderedDict
from typing import TYPE_CHECKING, Final

from .endpoint import SubHost

if TYPE_CHECKING:
    from .http_respond import ResponseWriter
    from .session import ServerSession
    from .stores import SessionRecord

__all__ = ["JSON_HEAD", "SSE_ANSWER_HEAD", "SSE_HEAD", "Exchange", "Legacy", "LegacyHost", "Mode",
           "sse_event"]

Header = tuple[str, str]
JSON_HEAD: Final[list[Header]] = [("content-type", "application/json")]
"""The headers of a JSON response (built once; never mutated)."""
SSE_HEAD: Final[list[Header]] = [("content-type", "text/event-stream"), ("cache-control", "no-cache"),
                                 ("x-accel-buffering", "no")]
"""The headers of an SSE stream (built once; never mutated)."""
SSE_ANSWER_HEAD: Final[list[Header]] = [("content-type", "text/event-stream")]
"""The headers of an SSE response written whole, with its length: no proxy buffering or
caching to turn off for a response that is complete when its head goes out (a POST's
response is not cached anyway), and each header costs h11 a check per response."""


class Mode(enum.Enum):
    """Where an exchange's response is."""

    PENDING = "pending"  # nothing sent yet
    SSE = "sse"  # a stream of events is under way
    DONE = "done"


class Exchange:
    """One HTTP request and its response.

    Attributes:
        id: the HTTP layer's exchange id (also the MCP channel of its message).
        legacy: the handshake-era session it belongs to (``None``: stateless).
        wants_json: its ``Accept`` takes JSON.
        wants_sse: its ``Accept`` takes an event stream.
        mode: what was sent so far.
        request_id: the JSON-RPC id of the request it carries, if it is one.
    """

    __slots__ = ("id", "legacy", "mode", "request_id", "wants_json", "wants_sse")

    def __init__(self, exchange: int, legacy: Legacy | None, wants_json: bool, wants_sse: bool) -> None:
        self.id = exchange
        self.legacy = legacy
        self.wants_json = wants_json
        self.wants_sse = wants_sse
        self.mode = Mode.PENDING
        self.request_id: int | str | None = None


class Legacy:
    """A handshake-era session of the HTTP server.

    Attributes:
        id: its ``Mcp-Session-Id``.
        session: its MCP state.
        host: what the session sends through.
        expires_at: when it ends unless a request comes.
        get_exchange: the exchange carrying its GET stream, if one is open.
        stream_of: channel (exchange) -> SSE stream number.
        live: stream number -> the exchange carrying it now.
        finished_streams: the latest streams whose final response was sent (bounded).
        next_stream: the last stream number given.
        saved: what the session store holds of it.
        saved_revision: the handshake's ``revision`` ``saved`` matches (``-1``: none yet).
        peer: the client address that opened it, or its principal's identity with auth
            (``None``: unknown, or rebuilt from a store).
        used: it served a request beyond ``initialize`` (or a stream): one never used is
            the first to go when the server needs room.
        owner: the ``Principal.identity`` that opened it (auth on), else ``None``.
        inbox_after: where this worker reads the session's inbox from (a shared store).
        head: the headers of its responses (``Mcp-Session-Id``); ``json_head``,
            ``sse_head`` and ``sse_answer_head`` with the content type (and for a stream,
            its other headers): built once, never mutated.
    """

    __slots__ = ("expires_at", "finished_streams", "get_exchange", "head", "host", "id", "inbox_after",
                 "json_head", "live", "next_stream", "owner", "peer", "saved", "saved_revision", "session",
                 "sse_answer_head", "sse_head", "stream_of", "used")

    def __init__(self, session_id: str, expires_at: float, peer: str | None) -> None:
        self.id = session_id
        self.head: list[Header] = [("mcp-session-id", session_id)]
        self.json_head = [*JSON_HEAD, *self.head]
        self.sse_head = [*SSE_HEAD, *self.head]
        self.sse_answer_head = [*SSE_ANSWER_HEAD, *self.head]
        self.expires_at = expires_at
        self.peer = peer
        self.used = False
        self.session: ServerSession
        self.host: LegacyHost
        self.get_exchange: int | None = None
        self.stream_of: dict[int, int] = {}
        self.live: dict[int, int] = {}
        self.finished_streams: OrderedDict[int, None] = OrderedDict()
        self.next_stream = 0
        self.saved: SessionRecord | None = None
        self.saved_revision = -1
        self.owner: str | None = None
        self.inbox_after: str | None = None


class LegacyHost(SubHost):
    """The host of one handshake-era session: the server's, with its messages tagged."""

    __slots__ = ("_http", "_legacy")

    def __init__(self, server: ResponseWriter, legacy: Legacy) -> None:
        super().__init__(server)
        self._http = server
        self._legacy = legacy

    def send(self, channel: int | None, data: bytes) -> None:
        """A message of this session that ends nothing."""
        self._http.legacy_send(self._legacy, channel, data, False, 200, None)

    def finish(self, channel: int | None, data: bytes, status: int, now: float) -> None:
        """A response of this session."""
        self._http.legacy_send(self._legacy, channel, data, True, status, now)

    def congested(self, channel: int | None) -> bool:
        """Whether the stream ``channel``'s messages go to is congested."""
        return self._http.legacy_congested(self._legacy, channel)


def sse_event(data: bytes, event_id: str | None) -> bytes:
    """One SSE ``message`` event carrying ``data`` (compact JSON: no line breaks)."""
    if event_id is None:
        return b"event: message\ndata: " + data + b"\n\n"
    return b"id: " + event_id.encode() + b"\nevent: message\ndata: " + data + b"\n\n"
