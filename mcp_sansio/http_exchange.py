"""One HTTP exchange of the client's, and what a response to it means.

State held: an :class:`Exchange` is one request of ours (its kind, target, headers and
body, the MCP request ids it carries) plus what its response has told us so far (status,
the body or event stream read up to now, the resume point, the authorization challenge,
the retry count). It lives here, apart from :class:`~mcp_sansio.http_transport.HttpClient`,
so that its life (``EXCHANGE_TRANSITIONS``) is one table that a move can be checked
against, and a retried, redirected or held exchange keeps its own record. The functions
at the end read error bodies (session expiry, JSON-RPC errors); they hold nothing.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Final

import msgspec

from . import machines
from .connections import ConnectFailure
from .events import AuthorizationRequired
from .http11 import Header
from .sse import SseEvent, SseParser
from .urls import Url
from .www_authenticate import parse_www_authenticate

__all__ = [
    "EXCHANGE_TRANSITIONS",
    "Exchange",
    "ExchangeKind",
    "ExchangeStage",
    "ExchangeTrigger",
    "SSE",
    "is_error_response",
    "is_expiry",
    "resume_point",
    "visible_ascii",
]

# An SSE event id we send back as Last-Event-ID: visible ASCII and inner spaces, no control
# character. The server chose it; one the header cannot carry as it came is dropped.
_EVENT_ID: Final = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
_ERROR_EXCERPT: Final = 2048  # bytes of an error body kept for the message
SSE: Final = "text/event-stream"


class ExchangeKind(enum.Enum):
    """What an exchange is for; it decides its headers and what its response means."""

    POST = "post"              # a message POSTed (Streamable HTTP)
    GET_STREAM = "get-stream"  # the optional stream for server-initiated messages
    RESUME = "resume"          # GET with Last-Event-ID, continuing a dropped POST stream
    DELETE = "delete"          # ending the session
    LEGACY_STREAM = "legacy-stream"
    LEGACY_POST = "legacy-post"
    SIDE = "side"              # outside the MCP exchange (OAuth): the whole answer goes up


class ExchangeStage(enum.Enum):
    """Where one HTTP exchange of the client's is in its life."""

    NEW = "new"  # made, not sent yet
    SENT = "sent"  # in the pool: connecting, writing, or waiting for the response's head
    RECEIVING = "receiving"  # the head came: reading the body or the event stream
    SCHEDULED = "scheduled"  # waiting to be sent again (a retry, a reconnection, a resumption)
    HELD = "held"  # waiting for the authorization under way
    DONE = "done"  # answered, failed, or given up


class ExchangeTrigger(enum.Enum):
    """What moves an exchange between stages (the pool's events included)."""

    SUBMIT = "submit"
    HOLD = "hold"
    HEAD = "head"  # ResponseStarted
    END = "end"  # ResponseEnded
    BREAK = "break"  # ExchangeFailed
    RETRY = "retry"
    REDIRECT = "redirect"  # 307/308: the same exchange goes to the new location
    ABANDON = "abandon"


_S = ExchangeStage
_T = ExchangeTrigger
EXCHANGE_TRANSITIONS: Final[Mapping[tuple[ExchangeStage, ExchangeTrigger], ExchangeStage]] = {
    (_S.NEW, _T.SUBMIT): _S.SENT,
    (_S.SCHEDULED, _T.SUBMIT): _S.SENT,
    (_S.HELD, _T.SUBMIT): _S.SENT,
    # Sent while an authorization is under way, it would only be refused: it waits.
    (_S.NEW, _T.HOLD): _S.HELD,
    (_S.SCHEDULED, _T.HOLD): _S.HELD,
    (_S.HELD, _T.HOLD): _S.HELD,
    (_S.DONE, _T.HOLD): _S.HELD,  # refused with 401/403: it goes again once authorized
    (_S.SENT, _T.HEAD): _S.RECEIVING,
    (_S.RECEIVING, _T.END): _S.DONE,
    (_S.SENT, _T.BREAK): _S.DONE,
    (_S.RECEIVING, _T.BREAK): _S.DONE,
    (_S.NEW, _T.RETRY): _S.SCHEDULED,  # a reconnection or resumption, made to wait
    (_S.DONE, _T.RETRY): _S.SCHEDULED,  # a failed attempt, tried again
    (_S.RECEIVING, _T.REDIRECT): _S.NEW,
    **{(stage, _T.ABANDON): _S.DONE for stage in ExchangeStage},
}
"""Every legal move of an exchange (rendered in docs/state-machines.md)."""


class Exchange:
    """One HTTP request of ours and what we know about its response."""

    __slots__ = (
        "attempt", "body", "buffer", "challenge", "credential", "delivered", "headers", "id", "kind",
        "last_event_id", "method", "opened_at", "redirects", "refused", "request_ids", "response_headers",
        "retry", "sse", "stage", "status", "tag", "url",
    )

    def __init__(self, exchange_id: int, kind: ExchangeKind, method: str, url: Url,
                 headers: tuple[Header, ...], body: bytes, request_ids: tuple[int, ...]) -> None:
        self.id = exchange_id
        self.kind = kind
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.request_ids = request_ids
        self.stage = ExchangeStage.NEW  # moved only by move(), along EXCHANGE_TRANSITIONS
        self.redirects = 0
        self.attempt = 0
        self.status = 0
        self.sse: SseParser | None = None
        self.buffer: bytearray | None = None  # JSON body, or the start of an error body
        self.last_event_id = ""
        self.retry: float | None = None
        self.challenge: dict[str, str] = {}  # WWW-Authenticate parameters of a 401/403
        self.tag = 0  # a side request's id for the caller
        self.response_headers: tuple[Header, ...] = ()
        self.credential = 0  # what the authorizer's credential() said when it was last sent
        self.opened_at = 0.0  # when its event stream started
        self.delivered = False  # its event stream carried a message
        self.refused: ConnectFailure | None = None  # why its last connect failed, while it is retried

    def move(self, trigger: ExchangeTrigger) -> None:
        """Move along ``EXCHANGE_TRANSITIONS`` (an illegal move is a bug of the client's:
        ``LocalProtocolError``)."""
        self.stage = machines.step(EXCHANGE_TRANSITIONS, self.stage, trigger, subject="the exchange is ")

    def redirect(self, target: Url, headers: tuple[Header, ...]) -> None:
        """Go again, to ``target`` with ``headers`` (a 307 or 308: the same exchange, so
        a resumption keeps its ``Last-Event-ID``)."""
        self.move(ExchangeTrigger.REDIRECT)
        self.headers = headers
        self.url = target
        self.redirects += 1

    def challenged(self, status: int, www_authenticate: str) -> AuthorizationRequired:
        """The response is 401 or 403 with ``www-authenticate``: keep the challenge's
        parameters (the Bearer one's, else the first's) and say so."""
        challenges = parse_www_authenticate(www_authenticate)
        bearer = next((c for c in challenges if c.scheme == "bearer"), challenges[0] if challenges else None)
        params = dict(bearer.params) if bearer is not None else {}
        self.challenge = params
        return AuthorizationRequired(status=status, scheme=bearer.scheme if bearer else "", params=params)

    def expect_body(self, content_type: str, max_event_bytes: int, now: float) -> None:
        """The head came (``status`` is set): get ready for its body. A success's is an
        event stream (starting ``now``) or a JSON answer, but a 202, a legacy POST's (the
        answers come on the stream) and a DELETE's are not read; of an error's, the start
        is kept for the message."""
        if not 200 <= self.status < 300:
            self.buffer = bytearray()
            return
        if self.kind is ExchangeKind.LEGACY_POST or self.kind is ExchangeKind.DELETE:
            return
        if content_type.split(";", 1)[0].strip().lower() == SSE:
            self.sse = SseParser(max_event_bytes=max_event_bytes)
            self.opened_at = now
            self.delivered = False
        elif self.status != 202 and self.kind is ExchangeKind.POST:
            self.buffer = bytearray()

    def read_events(self, sse: SseParser, data: bytes) -> list[SseEvent]:
        """Parse one piece of the event stream; keep its resume point and ``retry``.

        Raises:
            MessageTooLarge: an event passes the parser's bound.
        """
        events = sse.feed(data)
        last = sse.last_event_id
        if last:  # a new stream starts with none: keep the resume point
            self.last_event_id = resume_point(last)
        if sse.retry is not None:
            self.retry = sse.retry / 1000
        return events

    def read_body(self, data: bytes, limit: int) -> bool:
        """Keep ``data`` of a body being read: all of a success's (or a side request's),
        the start of an error's. ``False``: the body would pass ``limit`` bytes."""
        buf = self.buffer
        if buf is None:
            return True
        if 200 <= self.status < 300 or self.kind is ExchangeKind.SIDE:
            if len(buf) + len(data) > limit:
                return False
            buf += data
        elif len(buf) < _ERROR_EXCERPT:
            buf += data[: _ERROR_EXCERPT - len(buf)]
        return True


def resume_point(last_event_id: str) -> str:
    """The ``Last-Event-ID`` to resume from after the server sent ``last_event_id``: an id
    no header can carry as sent (non-ASCII, control characters) is dropped, and resuming
    then goes as if the server had sent none."""
    return last_event_id if _EVENT_ID.fullmatch(last_event_id) else ""


def visible_ascii(value: str) -> str | None:
    """A session id is visible ASCII (0x21-0x7E) per the spec; anything else is ignored."""
    return value if value and all(0x21 <= ord(c) <= 0x7E for c in value) else None


class _ExpirySign(msgspec.Struct, frozen=True):
    """A response that means "your session id is no longer valid"."""

    status: int
    codes: frozenset[int] | None  # JSON-RPC error codes in the body; None: any body
    needle: str  # lower-case text the error message must contain ("" = anything)


# The spec's rule is a 404 on a request carrying the session id (TS servers add -32001
# "Session not found", Python SDK servers -32600). Real servers also answer a stale id
# with 400: the TS SDK says -32000 "Bad Request: No valid session ID provided".
_EXPIRY_SIGNS: Final[tuple[_ExpirySign, ...]] = (
    _ExpirySign(404, None, ""),
    _ExpirySign(400, frozenset({-32000, -32001, -32600}), "session"),
)


class _ErrorBody(msgspec.Struct):
    error: _ErrorObject | None = None
    id: int | str | None = None


class _ErrorObject(msgspec.Struct):
    code: int = 0
    message: str = ""


_ERROR_BODY: Final = msgspec.json.Decoder(_ErrorBody)


def is_expiry(status: int, body: bytes) -> bool:
    """Whether ``status`` with ``body``, answering a request that carried the session id,
    means the server no longer knows the session."""
    code: int | None = None
    message = ""
    try:
        err = _ERROR_BODY.decode(body).error
    except (msgspec.DecodeError, RecursionError):  # skipped fields may nest past msgspec's limit
        err = None
    if err is not None:
        code, message = err.code, err.message.lower()
    for sign in _EXPIRY_SIGNS:
        if sign.status != status:
            continue
        if sign.codes is not None and code not in sign.codes:
            continue
        if sign.needle and sign.needle not in message:
            continue
        return True
    return False


def is_error_response(body: bytes, request_id: int) -> bool:
    """Whether ``body`` is a JSON-RPC error answering ``request_id`` (not noise, and not an
    error about no request in particular, as legacy servers send before a session)."""
    try:
        decoded = _ERROR_BODY.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return False
    return decoded.error is not None and decoded.id == request_id
