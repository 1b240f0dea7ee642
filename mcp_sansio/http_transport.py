"""MCP over HTTP: Streamable HTTP (2025-03-26 .. 2025-11-25) and legacy HTTP+SSE (2024-11-05).

``HttpClient`` is the session plus every HTTP decision: which request to make, which
headers it carries, what each status and content type means, when a dropped stream is
resumed (``Last-Event-ID``), when a forgotten session is re-created, and when to fall
back to the legacy transport. Bytes move through :class:`~mcp_sansio.http11.HttpPool`;
the driver only opens sockets and copies bytes. See the "Transports" page of each
revision of the MCP specification.
"""

from __future__ import annotations

import enum
import heapq
import re
from collections.abc import Callable, Mapping
from typing import Final, Literal, NamedTuple, Protocol

import msgspec

from . import machines, modern
from .config import ClientConfig
from .connections import ConnectFailure, SocketFailure, SocketStage
from .errors import LocalProtocolError, MessageTooLarge, RemoteProtocolError
from .events import (
    Action,
    AuthorizationRequired,
    ClientEvent,
    DiscardReason,
    FailureReason,
    GetStreamAbandoned,
    SessionForgotten,
    SideRequestFailed,
    SideResponseReceived,
)
from .front import SessionFront
from .http11 import (
    ExchangeFailed,
    Header,
    HttpPool,
    HttpRequest,
    Progress,
    ResponseData,
    ResponseEnded,
    ResponseStarted,
)
from .proxy import ProxySettings
from .retry import GiveUp, decide
from .session import ClientSession, Link, Phase
from .sse import SseParser
from .types import ClientCapabilities
from .urls import Url, parse_url, resolve_url, same_origin
from .www_authenticate import parse_www_authenticate

__all__ = ["EXCHANGE_TRANSITIONS", "AuthPort", "Authorizer", "HttpClient", "Stage", "Step", "TransportMode"]

_ERROR_EXCERPT: Final = 2048
_JSON: Final = "application/json"
_SSE: Final = "text/event-stream"
_ACCEPT_BOTH: Final = "application/json, text/event-stream"
_FALLBACK_STATUSES: Final = frozenset({400, 404, 405})
# Headers that identify or authorize us; never sent to another origin after a redirect.
_PRIVATE: Final = frozenset({"authorization", "cookie", "proxy-authorization", "mcp-session-id"})
# Headers the pool or this module sets; a user's value would duplicate or contradict them.
_RESERVED: Final = frozenset({
    "host", "content-length", "transfer-encoding", "upgrade", "accept", "content-type", "user-agent",
    "mcp-session-id", "mcp-protocol-version", "last-event-id",
})
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a field name (RFC 9110 section 5.1)
# A field value h11 accepts: visible ASCII and inner spaces or tabs (RFC 9110 section 5.5).
_FIELD_VALUE: Final = re.compile(r"(?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?")
# An SSE event id we send back as Last-Event-ID: visible ASCII and inner spaces, no control
# character. The server chose it; one the header cannot carry as it came is dropped.
_EVENT_ID: Final = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")


class TransportMode(enum.Enum):
    """Which HTTP transport to speak; ``AUTO`` tries Streamable HTTP, then legacy SSE."""

    AUTO = "auto"
    STREAMABLE_HTTP = "streamable-http"
    SSE = "sse"


class _Kind(enum.Enum):
    POST = "post"              # a message POSTed (Streamable HTTP)
    GET_STREAM = "get-stream"  # the optional stream for server-initiated messages
    RESUME = "resume"          # GET with Last-Event-ID, continuing a dropped POST stream
    DELETE = "delete"          # ending the session
    LEGACY_STREAM = "legacy-stream"
    LEGACY_POST = "legacy-post"
    SIDE = "side"              # outside the MCP exchange (OAuth): the whole answer goes up


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


class Stage(enum.Enum):
    """Where one HTTP exchange of the client's is in its life."""

    NEW = "new"  # made, not sent yet
    SENT = "sent"  # in the pool: connecting, writing, or waiting for the response's head
    RECEIVING = "receiving"  # the head came: reading the body or the event stream
    SCHEDULED = "scheduled"  # waiting to be sent again (a retry, a reconnection, a resumption)
    HELD = "held"  # waiting for the authorization under way
    DONE = "done"  # answered, failed, or given up


class Step(enum.Enum):
    """What moves an exchange between stages (the pool's events included)."""

    SUBMIT = "submit"
    HOLD = "hold"
    HEAD = "head"  # ResponseStarted
    END = "end"  # ResponseEnded
    BREAK = "break"  # ExchangeFailed
    RETRY = "retry"
    REDIRECT = "redirect"  # 307/308: the same exchange goes to the new location
    ABANDON = "abandon"


EXCHANGE_TRANSITIONS: Final[Mapping[tuple[Stage, Step], Stage]] = {
    (Stage.NEW, Step.SUBMIT): Stage.SENT,
    (Stage.SCHEDULED, Step.SUBMIT): Stage.SENT,
    (Stage.HELD, Step.SUBMIT): Stage.SENT,
    # Sent while an authorization is under way, it would only be refused: it waits.
    (Stage.NEW, Step.HOLD): Stage.HELD,
    (Stage.SCHEDULED, Step.HOLD): Stage.HELD,
    (Stage.HELD, Step.HOLD): Stage.HELD,
    (Stage.DONE, Step.HOLD): Stage.HELD,  # refused with 401/403: it goes again once authorized
    (Stage.SENT, Step.HEAD): Stage.RECEIVING,
    (Stage.RECEIVING, Step.END): Stage.DONE,
    (Stage.SENT, Step.BREAK): Stage.DONE,
    (Stage.RECEIVING, Step.BREAK): Stage.DONE,
    (Stage.NEW, Step.RETRY): Stage.SCHEDULED,  # a reconnection or resumption, made to wait
    (Stage.DONE, Step.RETRY): Stage.SCHEDULED,  # a failed attempt, tried again
    (Stage.RECEIVING, Step.REDIRECT): Stage.NEW,
    **{(stage, Step.ABANDON): Stage.DONE for stage in Stage},
}
"""Every legal move of an exchange (rendered in docs/state-machines.md)."""


class _Exchange:
    """One HTTP request of ours and what we know about its response."""

    __slots__ = (
        "attempt", "body", "buffer", "challenge", "credential", "delivered", "headers", "id", "kind",
        "last_event_id", "method", "opened_at", "redirects", "refused", "request_ids", "response_headers",
        "retry", "sse", "stage", "status", "tag", "url",
    )

    def __init__(self, exchange_id: int, kind: _Kind, method: str, url: Url, headers: tuple[Header, ...],
                 body: bytes, request_ids: tuple[int, ...]) -> None:
        self.id = exchange_id
        self.kind = kind
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.request_ids = request_ids
        self.stage = Stage.NEW  # moved only by move(), along EXCHANGE_TRANSITIONS
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
        self.credential = 0  # what _credential() said when it was last sent
        self.opened_at = 0.0  # when its event stream started
        self.delivered = False  # its event stream carried a message
        self.refused: ConnectFailure | None = None  # why its last connect failed, while it is retried

    def move(self, step: Step) -> None:
        """Move along ``EXCHANGE_TRANSITIONS`` (an illegal move is a bug of the client's:
        ``LocalProtocolError``)."""
        self.stage = machines.step(EXCHANGE_TRANSITIONS, self.stage, step, subject="the exchange is ")


class AuthPort(NamedTuple):
    """What an :class:`Authorizer` may ask of the client it authorizes (its own methods,
    handed over when it is bound)."""

    side_request: Callable[[str, str, tuple[Header, ...], bytes, float], int]
    """Send an HTTP request outside MCP (method, URL, headers, body, now); its tag."""
    release: Callable[[float], None]
    """Send the held requests again, with fresh authorization."""
    fail: Callable[[FailureReason, str, float], None]
    """Fail the held requests."""
    extend_handshake: Callable[[float], None]
    """Let the handshake under way run until at least then (the user is authorizing)."""
    add_event: Callable[[ClientEvent], None]
    """Queue an event for the app, in order with the session's."""


class Authorizer(Protocol):
    """A component that authorizes an :class:`HttpClient`'s MCP requests (OAuth:
    :class:`~mcp_sansio.http_auth.OAuthAuthorizer`). Requests are held while it is busy
    and while it handles a refusal; every call gets the clock."""

    def bind(self, port: AuthPort, url: Url, config: ClientConfig) -> None:
        """Attach to the client (once, when the client is made)."""

    def headers(self, method: str, url: Url, now: float) -> list[Header]:
        """Headers that authorize one MCP request."""

    def credential(self, now: float) -> int:
        """Which credential :meth:`headers` adds now; it comes back with the answer."""

    def holding(self) -> bool:
        """Whether MCP requests should wait instead of going out unauthorized."""

    def answered(self, status: int, headers: tuple[Header, ...], credential: int, now: float) -> None:
        """An MCP request sent with ``credential`` got a status other than 401 and 403."""

    def refused(self, status: int, headers: tuple[Header, ...], credential: int, now: float) -> bool:
        """An MCP request sent with ``credential`` got 401 or 403; ``True`` keeps it held
        until the port's ``release`` or ``fail``, ``False`` fails it at once."""

    def side_answered(self, tag: int, status: int, headers: tuple[Header, ...], body: bytes,
                      now: float) -> bool:
        """A side request was answered; ``True`` if it was this component's."""

    def side_failed(self, tag: int, message: str, now: float) -> bool:
        """A side request got no answer; ``True`` if it was this component's."""

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timeout` is due."""

    def handle_timeout(self, now: float) -> None:
        """Renew, or give up waiting, when due."""


class HttpClient(SessionFront):
    """An MCP client over HTTP, with HTTP/1.1 connections managed in the core.

    Driver contract: perform each :meth:`next_action` (``OpenConnection`` / ``StartTls``
    / ``CloseConnection``), report :meth:`connection_made` / :meth:`tls_started` /
    :meth:`connection_failed`, feed :meth:`receive_data` (``b""`` at EOF), write
    :meth:`data_to_send` for each of :meth:`connections_with_data`, and call
    :meth:`handle_timeout` at :meth:`next_deadline`. After :meth:`close`, stop once
    :attr:`finished` is true.
    """

    def __init__(
        self,
        url: str,
        *,
        config: ClientConfig | None = None,
        capabilities: ClientCapabilities | None = None,
        headers: Mapping[str, str] | None = None,
        transport: TransportMode | Literal["auto", "streamable-http", "sse"] = TransportMode.AUTO,
        jitter_seed: int = 0,
        proxies: ProxySettings | None = None,
        authorizer: Authorizer | None = None,
    ) -> None:
        """Create the client; nothing is sent until :meth:`connect`.

        ``proxies`` says which connections go through a CONNECT tunnel (see
        :func:`~mcp_sansio.proxy.proxy_settings`); ``None`` connects directly.
        ``authorizer`` authorizes every MCP request (see :class:`Authorizer`).

        Raises:
            LocalProtocolError: ``url`` is not an http(s) URL, ``transport`` is unknown, or
                a header is malformed or one the client sets itself.
        """
        cfg = config or ClientConfig()
        link = Link(send=self._carry, ready=self._ready, ended=self._ended, stall=self._stall, vet=self._vet)
        super().__init__(ClientSession(cfg, capabilities or ClientCapabilities(), link))
        self.url = parse_url(url)
        try:
            self.mode = TransportMode(transport)
        except ValueError as exc:
            raise LocalProtocolError(f"unknown HTTP transport {transport!r}") from exc
        self._user_headers: tuple[Header, ...] = tuple(_checked_headers(headers or {}))
        self._pool = HttpPool(max_connections=cfg.max_connections, proxies=proxies)
        self._next_exchange = 0
        self._exchanges: dict[int, _Exchange] = {}
        self._scheduled: list[tuple[float, int, _Exchange]] = []  # (at, exchange id, exchange)
        self._held: list[tuple[int | None, bytes]] = []  # messages waiting for the session
        self._generation = 0
        self._session_id: str | None = None
        self._legacy_endpoint: Url | None = None
        self._legacy = self.mode is TransportMode.SSE
        self._fallback_status = 0
        self._init_wire = b""
        self._resent: set[int] = set()
        self._restarts = 0
        self._closing_at: float | None = None
        self._finished = False
        self._tool_headers: dict[str, dict[tuple[str, ...], str]] = {}  # x-mcp-header paths
        self._auth_held: list[_Exchange] = []  # refused or deferred until authorization ends
        self._rng = (jitter_seed * 6364136223846793005 + 1442695040888963407) & (2**64 - 1) or 1
        self._auth = authorizer
        if authorizer is not None:
            authorizer.bind(AuthPort(side_request=self._side_request, release=self._release_held,
                                     fail=self._fail_held, extend_handshake=self._session.extend_handshake,
                                     add_event=self._session.add_event), self.url, cfg)

    # ------------------------------------------------------------------ queries

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server gave us, if any."""
        return self._session_id

    @property
    def transport(self) -> str:
        """``"streamable-http"`` or ``"sse"`` (legacy), as chosen so far."""
        return "sse" if self._legacy else "streamable-http"

    @property
    def finished(self) -> bool:
        """After :meth:`close`: everything is done and every connection is closed."""
        return self._finished

    def next_action(self) -> Action | None:
        """The next connection to open or close."""
        return self._pool.next_action()

    def data_to_send(self, connection: int) -> bytes:
        """Bytes to write on ``connection``."""
        return self._pool.data_to_send(connection)

    def connections_with_data(self) -> list[int]:
        """Connections with bytes waiting to be written."""
        return self._pool.connections_with_data()

    def next_deadline(self) -> float | None:
        """The earliest of request deadlines, retries, pool timers and the close bound."""
        # Plain comparisons: this runs after every input, so it stays cheap.
        best = self._session.next_deadline()
        for d in (
            self._scheduled[0][0] if self._scheduled else None,
            self._pool.next_deadline(),
            self._closing_at,
            None if self._auth is None else self._auth.next_deadline(),
        ):
            if d is not None and (best is None or d < best):
                best = d
        return best

    # ------------------------------------------------------------- driver input

    def connect(self, *, now: float) -> None:
        """Start: the ``server/discover`` probe (``protocol="auto"``), the ``initialize``
        POST, or the legacy SSE GET.

        Raises:
            LocalProtocolError: already started.
        Events: ``InitializeCompleted`` or ``InitializeFailed`` later.
        """
        if self._legacy:
            self._session.initialize(now=now)  # first: it raises before anything changes
            self._open_legacy_stream(now)
        else:
            self._session.start(now=now)

    def connection_made(self, connection: int, now: float) -> None:
        """The driver connected ``connection`` (TLS done, if any); its request is queued.

        Raises:
            LocalProtocolError: the client never asked for ``connection``, or it is
                connected already.
        """
        self._pool.connection_made(connection, now)
        self._drain_pool(now)

    def tls_started(self, connection: int, now: float) -> None:
        """The driver completed the TLS handshake a ``StartTls`` asked for; the request is queued.

        Raises:
            LocalProtocolError: the client never asked for ``connection``, or for no TLS on it.
        """
        self._pool.tls_started(connection, now)
        self._drain_pool(now)

    def connection_failed(self, connection: int, failure: SocketFailure, now: float) -> None:
        """Connecting failed, or the connection broke with an error.

        A connection that could not be opened fails the handshake at once
        (``CONNECT_FAILED``: no server is there to answer); once the session is ready, a
        refused or unreachable server may be restarting, so the request is retried per
        ``config.retry`` while its deadline allows, and fails with the last refusal when
        it does not. Any other request that never left is retried likewise; one that may
        have reached the server fails rather than being sent twice.

        Raises:
            LocalProtocolError: the client never asked for ``connection``.
        Events: ``RequestFailed``, ``InitializeFailed``, ``ConnectionTerminated``.
        """
        self._pool.connection_failed(connection, failure, now)
        self._drain_pool(now)

    def receive_data(self, connection: int, data: bytes, now: float) -> None:
        """Bytes read from ``connection``; ``b""`` at EOF.

        Whatever the server sends becomes events, never an exception.

        Raises:
            LocalProtocolError: the client never asked for ``connection``, or it is not
                connected yet.
        Events: any of :mod:`mcp_sansio.events`, including ``SessionForgotten`` and
        ``AuthorizationRequired``.
        """
        self._pool.receive_data(connection, data, now)
        self._drain_pool(now)

    def handle_timeout(self, now: float) -> None:
        """Fire request deadlines, due retries, pool timers, the close bound and the
        authorizer's timers (a token's renewal, the bound on the browser's redirect).

        Events: ``RequestFailed(reason=TIMEOUT)`` (with ``notifications/cancelled``
        POSTed), ``InitializeFailed(reason=TIMEOUT)``.
        """
        self._refused_until_deadline(now)
        self._session.handle_timeout(now)
        self._pool.handle_timeout(now)
        while self._scheduled and self._scheduled[0][0] <= now:
            _, _, ex = heapq.heappop(self._scheduled)
            if self.phase is Phase.CLOSED or (ex.request_ids and not self._waiting_on(ex)):
                ex.move(Step.ABANDON)  # the session ended, or the requests it carries ended meanwhile
                continue
            self._submit(ex, now)
        if self._closing_at is not None and self._closing_at <= now:
            self._finish()
        self._drain_pool(now)
        if self._auth is not None:
            self._auth.handle_timeout(now)  # renewals and the redirect's bound, last

    def _refused_until_deadline(self, now: float) -> None:
        """A request retried after its connect failed, whose deadline came while it waited
        for its next attempt (or while that attempt connected), fails with the refusal,
        not a timeout: the last real cause is what the caller hears."""
        retried = [*(ex for _, _, ex in self._scheduled), *self._exchanges.values()]
        for ex in retried:
            deadline = None if ex.refused is None else self._deadline_of(ex)
            if ex.refused is None or deadline is None or deadline > now:
                continue
            if ex.stage is Stage.SCHEDULED:
                self._scheduled = [entry for entry in self._scheduled if entry[2] is not ex]
                heapq.heapify(self._scheduled)
            self._fail_exchange(ex, FailureReason.CONNECT_FAILED, ex.refused.message, now,
                                detail=ex.refused.detail())

    def close(self, *, now: float, message: str = "the client closed the connection") -> None:
        """End the session: pending requests fail, a ``DELETE`` ends it on the server.

        Poll :attr:`finished`; :meth:`next_deadline` bounds the wait (``close_timeout``).
        A second call does nothing.

        Events: ``RequestFailed`` for each pending request (or ``InitializeFailed``), then
        ``ConnectionTerminated``.
        """
        if self._closing_at is not None or self._finished:
            return
        self._session.connection_lost(message, now=now)
        self._abandon_all(now)
        if self._session_id is not None and not self._legacy:
            self._closing_at = now + self.config.close_timeout
            self._submit(self._exchange(_Kind.DELETE, "DELETE", self.url, b"", ()), now)
        else:
            self._finish()

    # ------------------------------------------------------------ the link

    def _carry(self, message: bytes, request_id: int | None, now: float) -> None:
        session = self._session
        if request_id is not None:
            if request_id == session.handshake_id:
                self._init_wire = message
            elif session.phase is not Phase.READY:
                self._held.append((request_id, message))
                return
        self._post(request_id, message, now)

    def _ready(self, now: float) -> None:
        held, self._held = self._held, []
        if self._generation:
            # A new session after expiry: re-send, once, what was in flight on the old one
            # (requests made meanwhile are held, and go out below).
            skip = self._resent | {rid for rid, _ in held}
            resend = [(rid, wire) for rid, wire in self._session.in_flight() if rid not in skip]
            self._resent.update(rid for rid, _ in resend)
            for rid, wire in resend:
                self._post(rid, wire, now)
        for held_id, message in held:
            self._post(held_id, message, now)
        rules = self.rules
        assert rules is not None  # set by the handshake that just completed
        if not self._legacy and self.config.open_get_stream and rules.streamable_http and rules.sessions:
            self._open_get_stream(now)

    def _ended(self, request_id: int, reason: FailureReason | None, now: float) -> None:
        self._resent.discard(request_id)
        if reason is None or reason is FailureReason.ERROR_RESPONSE:
            self._restarts = 0  # the server answered a request: the session works
            return
        # Free the connection of a request given up on (timeout, cancel) if nothing
        # else waits on its stream.
        for ex in list(self._exchanges.values()):
            if request_id in ex.request_ids and not self._waiting_on(ex):
                self._abandon(ex, now)

    def _vet(self, method: str, result: msgspec.Struct, now: float) -> msgspec.Struct:
        if method == "tools/list" and self.rules is not None and self.rules.standard_headers:
            return self._checked_tools(result)
        return result

    # ------------------------------------------------------------ exchanges

    def _post(self, request_id: int | None, message: bytes, now: float) -> None:
        ids = (request_id,) if request_id is not None else ()
        if self._legacy:
            if self._legacy_endpoint is None:
                self._held.append((request_id, message))  # until the endpoint event
                return
            self._submit(self._exchange(_Kind.LEGACY_POST, "POST", self._legacy_endpoint, message, ids), now)
            return
        self._submit(self._exchange(_Kind.POST, "POST", self.url, message, ids), now)

    def _exchange(self, kind: _Kind, method: str, url: Url, body: bytes, ids: tuple[int, ...],
                  last_event_id: str = "") -> _Exchange:
        self._next_exchange += 1
        ex = _Exchange(self._next_exchange, kind, method, url,
                       self._headers(kind, ids, last_event_id, body), body, ids)
        ex.last_event_id = last_event_id
        return ex

    def _headers(self, kind: _Kind, ids: tuple[int, ...], last_event_id: str,
                 body: bytes = b"") -> tuple[Header, ...]:
        headers: list[Header] = [("user-agent", self.config.user_agent)]
        if kind is _Kind.POST or kind is _Kind.LEGACY_POST:
            headers += [("accept", _ACCEPT_BOTH), ("content-type", _JSON)]
        elif kind is not _Kind.DELETE:
            headers.append(("accept", _SSE))
        if last_event_id:
            headers.append(("last-event-id", last_event_id))
        # The initialize POST goes without: no session exists and no version is agreed yet.
        is_init = kind is _Kind.POST and self._session.handshake_id in ids
        probe = self._session.negotiation.probing if is_init else None
        if probe is not None:  # the stateless era's discover probe: its version, its method
            headers += [("mcp-protocol-version", probe), ("mcp-method", "server/discover")]
        elif not self._legacy and not is_init:
            if self._session_id is not None:
                headers.append(("mcp-session-id", self._session_id))
            rules = self.rules
            if rules is not None and rules.protocol_version_header:
                headers.append(("mcp-protocol-version", rules.version))
            if rules is not None and rules.standard_headers and body:
                headers += self._standard_headers(body)
        headers += self._user_headers
        return tuple(headers)

    def _standard_headers(self, body: bytes) -> list[Header]:
        """``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` mirrored from a message body."""
        head = _OUTGOING.decode(body)  # a message this client encoded: always an object
        if head.method is None:
            return []  # a response or a batch: nothing to mirror
        headers = modern.standard_headers(head.method, head.params)
        if head.method == "tools/call" and head.params is not None:
            paths = self._tool_headers.get(str(head.params.get("name")))
            if paths:
                arguments = head.params.get("arguments")
                headers += modern.mcp_param_headers(paths, arguments if isinstance(arguments, dict) else None)
        return headers

    def _submit(self, ex: _Exchange, now: float) -> None:
        auth = self._auth
        if ex.kind is not _Kind.SIDE and ex.kind is not _Kind.DELETE and auth is not None and auth.holding():
            ex.move(Step.HOLD)  # it would only be refused: it goes once authorized
            self._auth_held.append(ex)
            return
        ex.move(Step.SUBMIT)
        self._next_exchange += 1  # a fresh id per attempt: late pool events of an old one are ignored
        ex.id = self._next_exchange
        self._exchanges[ex.id] = ex
        ex.status = 0
        ex.sse = None
        ex.buffer = None
        headers = ex.headers
        if ex.kind is not _Kind.SIDE and auth is not None:
            ex.credential = auth.credential(now)
            extra = auth.headers(ex.method, ex.url, now)
            if extra:
                headers = (*headers, *extra)
        short = ex.kind in (_Kind.SIDE, _Kind.DELETE) or (
            ex.kind in (_Kind.POST, _Kind.LEGACY_POST) and not ex.request_ids)  # answers and notifications
        self._pool.submit(HttpRequest(exchange=ex.id, method=ex.method, url=ex.url, headers=headers,
                                      body=ex.body, short=short), now)

    def _stall(self) -> str:
        """Where the handshake's request stands: connecting, waiting, reading, retrying."""
        init = self._session.handshake_id
        ex = next((e for e in self._exchanges.values() if init in e.request_ids), None)
        if ex is None and self._legacy and self._legacy_endpoint is None:
            ex = next((e for e in self._exchanges.values() if e.kind is _Kind.LEGACY_STREAM), None)
        if ex is None:
            waiting = [e for _, _, e in self._scheduled] + self._auth_held
            if any(init in e.request_ids or e.kind is _Kind.LEGACY_STREAM for e in waiting):
                return "; its request was waiting to be sent again"
            return ""
        progress = self._pool.progress(ex.id)
        assert progress is not None  # what _exchanges holds is in the pool
        what = ("the SSE stream sent no endpoint event"
                if ex.kind is _Kind.LEGACY_STREAM and progress is Progress.RECEIVING else progress.value)
        return f"; {ex.method} {ex.url}: {what}"

    def _abandon(self, ex: _Exchange, now: float) -> None:
        self._cancel(ex, now)
        ex.move(Step.ABANDON)

    def _cancel(self, ex: _Exchange, now: float) -> None:
        """Stop the pool's work on ``ex`` (if it still has it)."""
        if self._exchanges.pop(ex.id, None) is not None:
            self._pool.cancel(ex.id, now)

    def _abandon_all(self, now: float) -> None:
        """Give up every exchange: in flight, waiting for a retry, held for authorization."""
        for ex in [*self._exchanges.values(), *(e for _, _, e in self._scheduled), *self._auth_held]:
            self._abandon(ex, now)
        self._scheduled.clear()
        self._auth_held.clear()

    def _schedule(self, ex: _Exchange, now: float, server_retry: float | None, *,
                  deadline: float | None = None) -> bool:
        """Retry ``ex`` later per the policy; False when the policy gives up, or when the
        retry would come at or after ``deadline`` (what waits on it would time out first)."""
        ex.attempt += 1
        decision = decide(self.config.retry, ex.attempt, now, server_retry, self._jitter())
        if isinstance(decision, GiveUp) or (deadline is not None and decision.at >= deadline):
            return False
        ex.move(Step.RETRY)
        heapq.heappush(self._scheduled, (decision.at, ex.id, ex))
        return True

    def _deadline_of(self, ex: _Exchange) -> float | None:
        """The earliest deadline of the requests ``ex`` carries (the handshake's for its
        request), or ``None`` when it carries none."""
        deadlines = [self._session.deadline_of(rid) for rid in ex.request_ids]
        return min((d for d in deadlines if d is not None), default=None)

    def _jitter(self) -> float:
        # xorshift64: entropy came in once as the seed (STYLE.md section 1).
        x = self._rng
        x ^= (x << 13) & (2**64 - 1)
        x ^= x >> 7
        x ^= (x << 17) & (2**64 - 1)
        self._rng = x
        return (x >> 11) / float(1 << 53)

    # ------------------------------------------------------------- responses

    def _drain_pool(self, now: float) -> None:
        pool = self._pool
        while (event := pool.next_event()) is not None:
            ex = self._exchanges.get(event.exchange)
            if ex is None:
                continue  # abandoned: the pool dropped its queued events, this came after
            if isinstance(event, ResponseData):
                self._on_data(ex, event.data, now)
            elif isinstance(event, ResponseStarted):
                ex.move(Step.HEAD)
                self._on_started(ex, event, now)
            elif isinstance(event, ResponseEnded):
                self._exchanges.pop(ex.id, None)
                ex.move(Step.END)
                self._on_ended(ex, now)
            else:
                self._exchanges.pop(ex.id, None)
                ex.move(Step.BREAK)
                self._on_exchange_failed(ex, event, now)

    def _on_started(self, ex: _Exchange, event: ResponseStarted, now: float) -> None:
        status = ex.status = event.status
        ex.response_headers = event.headers
        if ex.kind is _Kind.SIDE:
            ex.buffer = bytearray()
            return
        if status not in (401, 403) and self._auth is not None:
            self._auth.answered(status, event.headers, ex.credential, now)
        headers = dict(event.headers)
        if status in (307, 308) and "location" in headers:
            self._redirect(ex, headers["location"], now)
            return
        init_id = self._session.handshake_id
        if init_id is not None and init_id in ex.request_ids:
            sid = headers.get("mcp-session-id")
            if sid is not None and 200 <= status < 300:
                self._session_id = _visible_ascii(sid)
        if 200 <= status < 300:
            if ex.kind is _Kind.LEGACY_POST or ex.kind is _Kind.DELETE:
                return  # nothing to read: legacy answers come on the stream
            ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if ctype == _SSE:
                ex.sse = SseParser(max_event_bytes=self.config.max_response_bytes)
                ex.opened_at = now
                ex.delivered = False
            elif status != 202 and ex.kind is _Kind.POST:
                ex.buffer = bytearray()
            return
        if status in (401, 403):
            self._on_unauthorized(ex, status, headers.get("www-authenticate", ""))
        ex.buffer = bytearray()  # keep the start of the error body, for the message

    def _on_data(self, ex: _Exchange, data: bytes, now: float) -> None:
        sse = ex.sse
        if sse is not None:
            limit = self.config.max_response_bytes
            # Fed at most ``limit`` bytes at a time, the parser cannot complete an event and
            # then overflow in the same feed (which loses the event), so what is delivered
            # never depends on how the reads were cut.
            for start in range(0, len(data), limit):
                if ex.id not in self._exchanges:
                    return  # abandoned by what an earlier piece caused: deliver nothing more
                self._on_sse_data(ex, sse, data[start : start + limit], now)
            return
        buf = ex.buffer
        if buf is None:
            return
        if 200 <= ex.status < 300 or ex.kind is _Kind.SIDE:
            if len(buf) + len(data) > self.config.max_response_bytes:
                self._too_large(ex, "the response", now)
                return
            buf += data
        elif len(buf) < _ERROR_EXCERPT:
            buf += data[: _ERROR_EXCERPT - len(buf)]

    def _on_sse_data(self, ex: _Exchange, sse: SseParser, data: bytes, now: float) -> None:
        """Parse one piece of an SSE body and act on its events."""
        try:
            events = sse.feed(data)
        except MessageTooLarge:
            # Not the parser's text: its "at least N bytes" depends on how reads were cut.
            self._too_large(ex, "an SSE event", now)
            return
        last = sse.last_event_id
        if last:  # a new stream starts with none: keep the resume point
            # An id no header can carry as sent (non-ASCII, control characters) is dropped:
            # resuming then goes as if the server had sent none.
            ex.last_event_id = last if _EVENT_ID.fullmatch(last) else ""
        if sse.retry is not None:
            ex.retry = sse.retry / 1000
        for sse_event in events:
            if ex.id not in self._exchanges:
                return  # abandoned by what an earlier event caused: deliver nothing more
            if ex.kind is _Kind.LEGACY_STREAM and sse_event.event == "endpoint":
                self._on_endpoint(ex, sse_event.text, now)
            elif sse_event.data and sse_event.event == "message":
                ex.delivered = True
                self._session.receive_message(sse_event.data, now)

    def _too_large(self, ex: _Exchange, what: str, now: float) -> None:
        if ex.kind is _Kind.SIDE:
            self._abandon(ex, now)
            self._side_failed(ex.tag, f"{what} is too large", now)
            return
        self._fail_exchange(ex, FailureReason.MESSAGE_TOO_LARGE,
                            f"{what} exceeds max_response_bytes ({self.config.max_response_bytes})", now)

    def _on_ended(self, ex: _Exchange, now: float) -> None:
        status = ex.status
        if ex.kind is _Kind.SIDE:
            self._side_answered(ex.tag, status, ex.response_headers, bytes(ex.buffer or b""), now)
            return
        if ex.kind is _Kind.DELETE:
            self._finish()
            return
        if not 200 <= status < 300:
            self._on_error_status(ex, now)
            return
        if ex.sse is not None:
            ex.sse.close()
            self._stream_ended(ex, now, "the SSE stream ended before the answer" if ex.request_ids
                               else "the server ended the SSE stream")
            return
        if ex.kind is not _Kind.POST and ex.kind is not _Kind.LEGACY_POST:
            self._fail_exchange(ex, FailureReason.PROTOCOL_ERROR,
                                f"the server answered a GET for an event stream with HTTP {status}"
                                " and no text/event-stream", now)
            return
        if not ex.buffer:
            return  # 202, or a legacy POST: answers come on a stream; deadlines bound the wait
        self._session.receive_message(bytes(ex.buffer), now)
        if self._waiting_on(ex):
            self._fail_ids(ex, FailureReason.PROTOCOL_ERROR,
                           f"the server's HTTP {status} response did not answer the request", now)

    def _stream_ended(self, ex: _Exchange, now: float, why: str) -> None:
        """An SSE stream ended or broke: resume it, reopen it, or fail who waited on it."""
        # A stream that worked starts the count of reconnections over; one that ends at
        # once (even after a 200) does not, so the backoff grows and the policy bounds it.
        worked = ex.delivered or (ex.sse is not None and now - ex.opened_at >= self.config.retry.max_delay)
        if ex.kind is _Kind.GET_STREAM:
            again = self._exchange(_Kind.GET_STREAM, "GET", self.url, b"", (),
                                   last_event_id=ex.last_event_id)
            again.attempt = 0 if worked else ex.attempt
            if not self._schedule(again, now, ex.retry):
                self._abandon_get_stream(again.attempt - 1, why)
            return
        if ex.kind is _Kind.LEGACY_STREAM:
            self._session.connection_lost(f"the legacy SSE stream ended: {why}", now=now)
            return
        if not self._waiting_on(ex):
            return
        rules = self.rules
        if rules is not None and rules.request_meta and self._session.reissue(ex.request_ids, now):
            return
        if ex.last_event_id and rules is not None and rules.resumable_streams:
            resume = self._exchange(_Kind.RESUME, "GET", self.url, b"", self._waiting_ids(ex),
                                    last_event_id=ex.last_event_id)
            resume.attempt = ex.attempt if ex.kind is _Kind.RESUME and not worked else 0
            if self._schedule(resume, now, ex.retry):
                return
        self._fail_ids(ex, FailureReason.CONNECTION_LOST, why, now)

    def _abandon_get_stream(self, attempts: int, why: str) -> None:
        """Stop reopening the GET stream: it kept failing. The session goes on without it."""
        times = f" after {attempts} reconnection{'' if attempts == 1 else 's'} in a row" if attempts else ""
        self._session.add_event(GetStreamAbandoned(
            attempts=attempts,
            message=f"gave up the event stream for server-initiated messages from {self.url}{times}: {why}"))

    def _on_exchange_failed(self, ex: _Exchange, event: ExchangeFailed, now: float) -> None:
        if ex.kind is _Kind.SIDE:
            self._side_failed(ex.tag, event.message, now)
            return
        if ex.kind is _Kind.DELETE:
            self._finish()
            return
        if event.proxy_status is not None and ex.kind is not _Kind.GET_STREAM:
            # The proxy's answer is deliberate, as a server's status is: no retry.
            self._fail_exchange(ex, FailureReason.PROXY_ERROR, event.message, now, status=event.proxy_status)
            return
        if event.connect_failure is not None:
            self._unreachable(ex, event.connect_failure, now)
            return
        deadline = self._deadline_of(ex)
        if ex.sse is not None or ex.kind in (_Kind.GET_STREAM, _Kind.RESUME, _Kind.LEGACY_STREAM):
            if (not event.sent and ex.kind is not _Kind.GET_STREAM
                    and self._schedule(ex, now, None, deadline=deadline)):
                return
            self._stream_ended(ex, now, event.message)
            return
        if not event.sent and self._schedule(ex, now, None, deadline=deadline):
            return  # nothing reached the server: safe to send again
        self._fail_exchange(ex, FailureReason.CONNECTION_LOST, f"HTTP request failed: {event.message}", now)

    def _unreachable(self, ex: _Exchange, failure: ConnectFailure, now: float) -> None:
        """The connection for ``ex`` could not be opened.

        During the handshake no server is there to answer: fail at once with what the OS
        said. In a ready session a refused or unreachable server may be restarting, so a
        TCP connect that failed is retried per the policy while the deadline of what
        waits allows (a failed name lookup or TLS handshake would fail the same way).
        """
        retry = self.phase is Phase.READY and failure.failure.stage is SocketStage.CONNECT
        if retry and self._schedule(ex, now, None, deadline=self._deadline_of(ex)):
            ex.refused = failure  # if the deadline comes first, this is what the caller hears
            return
        if ex.kind is _Kind.GET_STREAM:
            self._abandon_get_stream(ex.attempt - retry, failure.message)
            return
        self._fail_exchange(ex, FailureReason.CONNECT_FAILED, failure.message, now, detail=failure.detail())

    def _on_error_status(self, ex: _Exchange, now: float) -> None:
        status = ex.status
        body = bytes(ex.buffer or b"")
        if ex.kind is _Kind.GET_STREAM:
            return  # 405: the server offers no such stream; any other status: do without it too
        if status in (401, 403):
            ex.move(Step.HOLD)
            self._auth_held.append(ex)
            if self._auth is not None and self._auth.refused(status, ex.response_headers, ex.credential, now):
                return  # held (or already re-sent, or failed) by the authorization
            self._auth_held.remove(ex)
            ex.move(Step.ABANDON)
            self._fail_ids(ex, FailureReason.AUTHORIZATION_REQUIRED,
                           f"the server requires authorization (HTTP {status})", now,
                           status=status, detail=ex.challenge)
            return
        init_id = self._session.handshake_id
        if init_id in ex.request_ids and self._session.negotiation.probing is not None:
            if _is_error_response(body, init_id):
                self._session.receive_message(body, now)  # -32022 and friends: the session decides
            else:
                self._session.probe_failed(f"HTTP {status} to server/discover from {ex.url}", now)
            return
        if (init_id in ex.request_ids and self.mode is TransportMode.AUTO and not self._legacy
                and self.rules is None and status in _FALLBACK_STATUSES):
            # The spec's backwards compatibility rule, before any session existed: try the
            # 2024-11-05 HTTP+SSE transport.
            self._fallback_status = status
            self._legacy = True
            self._held.insert(0, (init_id, self._init_wire))
            self._open_legacy_stream(now)
            return
        if ex.kind is _Kind.LEGACY_STREAM and self._fallback_status:
            status = self._fallback_status  # report what the Streamable HTTP attempt said
        carried_session = any(k == "mcp-session-id" for k, _ in ex.headers)
        # Only a ready session can expire: during a handshake the answer is an ordinary error.
        if carried_session and self.phase is Phase.READY and _is_expiry(status, body):
            self._expire(status, now)
            return
        answered = any(_is_error_response(body, rid) for rid in ex.request_ids)
        if answered and ex.kind is not _Kind.LEGACY_STREAM:
            # A JSON-RPC error that answers the request (-32021 on a missing capability, ...):
            # the server's own words, as over stdio, rather than the status and the raw body.
            self._session.receive_message(body, now)
        excerpt = body[:300].decode("utf-8", "replace").strip()
        message = f"HTTP {status} from {ex.url}" + (f": {' '.join(excerpt.split())}" if excerpt else "")
        if ex.kind is _Kind.LEGACY_STREAM:
            self._session.connection_lost(message, now=now, reason=FailureReason.HTTP_ERROR)
            return
        self._fail_ids(ex, FailureReason.HTTP_ERROR, message, now, status=status, detail={"body": excerpt})

    def _on_unauthorized(self, ex: _Exchange, status: int, header: str) -> None:
        challenges = parse_www_authenticate(header)
        bearer = next((c for c in challenges if c.scheme == "bearer"), challenges[0] if challenges else None)
        params = dict(bearer.params) if bearer is not None else {}
        ex.challenge = params
        self._session.add_event(AuthorizationRequired(
            status=status, scheme=bearer.scheme if bearer else "", params=params))

    def _redirect(self, ex: _Exchange, location: str, now: float) -> None:
        if ex.redirects >= self.config.max_redirects:
            self._fail_exchange(ex, FailureReason.HTTP_ERROR,
                                f"more than {self.config.max_redirects} redirects from {self.url}", now)
            return
        try:
            target = resolve_url(ex.url, location)
        except RemoteProtocolError as exc:
            self._fail_exchange(ex, FailureReason.PROTOCOL_ERROR, f"bad redirect: {exc}", now)
            return
        self._cancel(ex, now)
        ex.move(Step.REDIRECT)
        if not same_origin(ex.url, target):
            user = {name for name, _ in self._user_headers}
            ex.headers = tuple(h for h in ex.headers if h[0] not in _PRIVATE and h[0] not in user)
        ex.url = target
        ex.redirects += 1
        self._submit(ex, now)  # the same exchange, so a resume keeps its Last-Event-ID

    def _expire(self, status: int, now: float) -> None:
        """The server forgot the session: drop everything of it, then open a new one or give up."""
        restart = self.config.reinitialize_on_expiry and self._restarts < self.config.max_session_restarts
        self._session.add_event(SessionForgotten(status=status, reinitializing=restart))
        old, self._session_id = self._session_id, None  # nothing more goes out with it, not even DELETE
        # Late answers of the old session are never read; what waited carries the old session
        # id (the requests still pending are re-sent on the new one).
        self._abandon_all(now)
        if not restart:
            self._session.connection_lost(f"the server no longer knows session {old!r} (HTTP {status})",
                                          now=now, reason=FailureReason.SESSION_EXPIRED)
            return
        self._restarts += 1
        self._generation += 1
        for rid in list(self._resent):
            self._session.fail_request(rid, FailureReason.SESSION_EXPIRED, "the request was re-sent on a new"
                                       " session, and that session expired too", now=now)
        self._session.session_expired(now)

    # ---------------------------------------------------------- authorization

    def _release_held(self, now: float) -> None:
        """Send every held request again (with fresh authorization headers)."""
        held, self._auth_held = self._auth_held, []
        for ex in held:
            if self.phase is Phase.CLOSED or (ex.request_ids and not self._waiting_on(ex)):
                ex.move(Step.ABANDON)  # the session ended, or the requests it carries ended meanwhile
                continue
            self._submit(ex, now)

    def _fail_held(self, reason: FailureReason, message: str, now: float) -> None:
        """Fail every held request with ``reason``."""
        held, self._auth_held = self._auth_held, []
        for ex in held:
            ex.move(Step.ABANDON)
            if ex.kind is _Kind.LEGACY_STREAM:
                self._session.connection_lost(message, now=now, reason=reason)
                continue
            self._fail_ids(ex, reason, message, now, status=ex.status or None, detail=ex.challenge)

    def _side_answered(self, tag: int, status: int, headers: tuple[Header, ...], body: bytes,
                       now: float) -> None:
        """A side request was answered: the authorizer's, or the app's."""
        if self._auth is None or not self._auth.side_answered(tag, status, headers, body, now):
            self._session.add_event(SideResponseReceived(tag=tag, status=status, headers=headers, body=body))

    def _side_failed(self, tag: int, message: str, now: float) -> None:
        """A side request got no answer: the authorizer's, or the app's."""
        if self._auth is None or not self._auth.side_failed(tag, message, now):
            self._session.add_event(SideRequestFailed(tag=tag, message=message))

    def side_request(self, method: str, url: str, headers: tuple[Header, ...], body: bytes, *,
                     now: float) -> int:
        """Send an HTTP request outside the MCP exchange (OAuth metadata, tokens, ...).

        Redirects are not followed. The answer arrives as ``SideResponseReceived`` (or
        ``SideRequestFailed``) carrying the returned tag.

        Raises:
            LocalProtocolError: ``url`` is not an http(s) URL or a header is malformed.
        """
        return self._side_request(method, url, headers, body, now)

    def _side_request(self, method: str, url: str, headers: tuple[Header, ...], body: bytes,
                      now: float) -> int:
        target = parse_url(url)
        ex = _Exchange(0, _Kind.SIDE, method, target, tuple((k.lower(), v) for k, v in headers), body, ())
        ex.buffer = bytearray()
        self._submit(ex, now)
        ex.tag = ex.id
        return ex.tag

    def _checked_tools(self, result: msgspec.Struct) -> msgspec.Struct:
        """Drop tools whose ``x-mcp-header`` annotations are invalid (the spec's rule)."""
        tools = getattr(result, "tools", [])
        kept = []
        for tool in tools:
            try:
                paths = modern.tool_header_paths(tool.input_schema)
            except ValueError as exc:
                self._session.discard(DiscardReason.INVALID_PARAMS, f"tool {tool.name!r} rejected: {exc}",
                                      tool.name.encode())
                continue
            self._tool_headers[tool.name] = paths
            kept.append(tool)
        return msgspec.structs.replace(result, tools=kept) if len(kept) != len(tools) else result

    # -------------------------------------------------------------- legacy SSE

    def _open_legacy_stream(self, now: float) -> None:
        self._submit(self._exchange(_Kind.LEGACY_STREAM, "GET", self.url, b"", ()), now)

    def _on_endpoint(self, ex: _Exchange, data: str, now: float) -> None:
        try:
            endpoint = resolve_url(ex.url, data.strip())
        except RemoteProtocolError as exc:
            self._fail_exchange(ex, FailureReason.PROTOCOL_ERROR,
                                f"the SSE endpoint event is not a URL: {exc}", now)
            return
        if not same_origin(endpoint, ex.url):
            self._fail_exchange(ex, FailureReason.PROTOCOL_ERROR,
                                f"the SSE endpoint {endpoint} is on another origin than {ex.url}", now)
            return
        first = self._legacy_endpoint is None
        self._legacy_endpoint = endpoint
        if first:
            held, self._held = self._held, []
            for rid, message in held:
                self._post(rid, message, now)

    def _open_get_stream(self, now: float) -> None:
        self._submit(self._exchange(_Kind.GET_STREAM, "GET", self.url, b"", ()), now)

    # ------------------------------------------------------------------ helpers

    def _waiting_ids(self, ex: _Exchange) -> tuple[int, ...]:
        return tuple(rid for rid in ex.request_ids if self._session.awaiting(rid))

    def _waiting_on(self, ex: _Exchange) -> bool:
        return any(self._session.awaiting(rid) for rid in ex.request_ids)

    def _fail_exchange(self, ex: _Exchange, reason: FailureReason, message: str, now: float, *,
                       status: int | None = None, detail: dict[str, str] | None = None) -> None:
        self._abandon(ex, now)
        if ex.kind is _Kind.LEGACY_STREAM:
            self._session.connection_lost(message, now=now, reason=reason, detail=detail)
            return
        self._fail_ids(ex, reason, message, now, status=status, detail=detail)

    def _fail_ids(self, ex: _Exchange, reason: FailureReason, message: str, now: float, *,
                  status: int | None = None, detail: dict[str, str] | None = None) -> None:
        for rid in ex.request_ids:
            self._session.fail_request(rid, reason, message, now=now, status=status, detail=detail)

    def _finish(self) -> None:
        """Closing is done (it runs once: everything that calls it is gone afterwards)."""
        self._closing_at = None
        self._finished = True
        self._pool.close()
        for ex in self._exchanges.values():
            ex.move(Step.ABANDON)
        self._exchanges.clear()


def _checked_headers(headers: Mapping[str, str]) -> list[Header]:
    """The user's headers, lower-cased; checked now so no later request can fail on them."""
    out: list[Header] = []
    for name, value in headers.items():
        lname = name.lower()
        if not _TOKEN.fullmatch(lname) or not _FIELD_VALUE.fullmatch(value):
            raise LocalProtocolError(f"invalid HTTP header {name!r}: {value!r}")
        if lname in _RESERVED:
            raise LocalProtocolError(f"the client sets the {name} header itself")
        out.append((lname, value))
    return out


def _visible_ascii(value: str) -> str | None:
    """A session id is visible ASCII (0x21-0x7E) per the spec; anything else is ignored."""
    return value if value and all(0x21 <= ord(c) <= 0x7E for c in value) else None


def _is_expiry(status: int, body: bytes) -> bool:
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



class _Outgoing(msgspec.Struct):
    """What the standard headers mirror from an outgoing message."""

    method: str | None = None
    params: dict[str, object] | None = None


_OUTGOING: Final = msgspec.json.Decoder(_Outgoing)


def _is_error_response(body: bytes, request_id: int) -> bool:
    """Whether ``body`` is a JSON-RPC error answering ``request_id`` (not noise, and not an
    error about no request in particular, as legacy servers send before a session)."""
    try:
        decoded = _ERROR_BODY.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return False
    return decoded.error is not None and decoded.id == request_id
