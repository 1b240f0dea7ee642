"""MCP over HTTP: Streamable HTTP (2025-03-26 .. 2025-11-25) and legacy HTTP+SSE (2024-11-05).

``HttpClient`` is the session plus every HTTP decision: which request to make, what each
status and content type means, when a dropped stream is resumed (``Last-Event-ID``),
when a forgotten session is re-created, and when to fall back to the legacy transport.
Its state is in three parts: the exchanges in flight, scheduled or held
(:mod:`~mcp_sansio.http_exchanges`), the session's id, transport and held messages
(:mod:`~mcp_sansio.http_session`), and the headers (:mod:`~mcp_sansio.http_headers`).
Bytes move through :class:`~mcp_sansio.http11.HttpPool`; the driver only opens sockets
and copies bytes. See the "Transports" page of each revision of the MCP specification.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final, Literal

import msgspec

from .config import ClientConfig
from .connections import ConnectFailure, SocketFailure, SocketStage
from .errors import LocalProtocolError, MessageTooLarge, RemoteProtocolError
from .events import (
    Action,
    FailureReason,
    GetStreamAbandoned,
    SessionForgotten,
    SideRequestFailed,
    SideResponseReceived,
)
from .front import SessionFront
from .http11 import ExchangeFailed, Header, HttpPool, ResponseData, ResponseEnded, ResponseStarted
from .http_exchange import (
    Exchange,
    ExchangeKind,
    ExchangeTrigger,
    is_error_response,
    is_expiry,
    visible_ascii,
)
from .http_exchanges import Authorizer, AuthPort, ExchangeTable
from .http_headers import RequestHeaders
from .http_session import HttpSessionState, legacy_endpoint
from .proxy import ProxySettings
from .session import ClientSession, Link, Phase
from .sse import SseParser
from .types import ClientCapabilities
from .urls import Url, parse_url, resolve_url, same_origin

__all__ = ["HttpClient", "TransportMode"]

_FALLBACK_STATUSES: Final = frozenset({400, 404, 405})
_STREAMS: Final = (ExchangeKind.GET_STREAM, ExchangeKind.RESUME, ExchangeKind.LEGACY_STREAM)


class _Notification(msgspec.Struct):
    """What :func:`_cancels` reads of a notification."""

    method: str = ""
    params: dict[str, object] = msgspec.field(default_factory=dict)


_NOTIFICATION: Final = msgspec.json.Decoder(_Notification)


def _cancels(message: bytes, request_id: int) -> bool:
    """Whether ``message`` is the ``notifications/cancelled`` of request ``request_id``."""
    try:
        note = _NOTIFICATION.decode(message)
    except msgspec.DecodeError:
        return False
    return note.method == "notifications/cancelled" and note.params.get("requestId") == request_id


class TransportMode(enum.Enum):
    """Which HTTP transport to speak; ``AUTO`` tries Streamable HTTP, then legacy SSE."""

    AUTO = "auto"
    STREAMABLE_HTTP = "streamable-http"
    SSE = "sse"


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
        self._headers = RequestHeaders(cfg.user_agent, headers or {})
        self._table = ExchangeTable(HttpPool(max_connections=cfg.max_connections, proxies=proxies),
                                    jitter_seed, authorizer)
        self._pool = self._table.pool
        self._state = HttpSessionState(legacy=self.mode is TransportMode.SSE)
        self._closing_at: float | None = None
        self._finished = False
        self._unsent: int | None = None  # a held request that failed: its cancellation is not sent
        self._auth = authorizer
        if authorizer is not None:
            port = AuthPort(side_request=lambda method, url, headers, body, now: self.side_request(
                                method, url, headers, body, now=now),  # the port takes ``now`` by position
                            release=self._release_held, fail=self._fail_held,
                            extend_handshake=self._session.extend_handshake,
                            add_event=self._session.add_event)
            authorizer.bind(port, self.url, cfg)

    # ------------------------------------------------------------------ queries

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server gave us, if any."""
        return self._state.session_id

    @property
    def transport(self) -> str:
        """``"streamable-http"`` or ``"sse"`` (legacy), as chosen so far."""
        return "sse" if self._state.legacy else "streamable-http"

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
        """The earliest of request deadlines, retries, pool timers, the bound on the wait
        for the GET stream (``get_stream_wait``) and the close bound."""
        # Plain comparisons: this runs after every input, so it stays cheap.
        best = self._session.next_deadline()
        for d in (
            self._table.next_deadline(),
            self._closing_at,
            self._state.gate_until,
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
        if self._state.legacy:
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
        """Fire request deadlines, due retries, pool timers, the bound on the wait for the
        GET stream (what waited for it goes), the close bound and the authorizer's timers
        (a token's renewal, the bound on the browser's redirect).

        Events: ``RequestFailed(reason=TIMEOUT)`` (with ``notifications/cancelled``
        POSTed), ``InitializeFailed(reason=TIMEOUT)``.
        """
        self._refused_until_deadline(now)
        self._session.handle_timeout(now)  # first: a request that timed out while held stays unsent
        gate = self._state.gate_until
        if gate is not None and gate <= now:
            self._open_gate(now)  # the GET stream has no head yet: send what waited anyway
        self._pool.handle_timeout(now)
        self._table.submit_due(now, self._wanted)
        if self._closing_at is not None and self._closing_at <= now:
            self._finish()
        self._drain_pool(now)
        if self._auth is not None:
            self._auth.handle_timeout(now)  # renewals and the redirect's bound, last

    def _refused_until_deadline(self, now: float) -> None:
        """A request retried after its connect failed, whose deadline came while it waited
        for its next attempt (or while that attempt connected), fails with the refusal,
        not a timeout: the last real cause is what the caller hears."""
        for ex, refused in self._table.refused_by(now, self._deadline_of):
            detail = refused.detail()
            self._fail_exchange(ex, FailureReason.CONNECT_FAILED, refused.message, now, detail=detail)

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
        self._state.ungate()  # the requests held failed above; what else waited is not sent
        self._table.abandon_all(now)
        if self._state.session_id is not None and not self._state.legacy:
            self._closing_at = now + self.config.close_timeout
            self._table.submit(self._exchange(ExchangeKind.DELETE, "DELETE", self.url, b"", ()), now)
        else:
            self._finish()

    # ------------------------------------------------------------ the link

    def _carry(self, message: bytes, request_id: int | None, now: float) -> None:
        if self._unsent is not None:
            unsent, self._unsent = self._unsent, None
            if request_id is None and _cancels(message, unsent):
                return  # the server never saw the request: nothing to cancel
        session = self._session
        if self._state.carry(request_id, message, handshake_id=session.handshake_id,
                             ready=session.phase is Phase.READY):
            self._post(request_id, message, now)

    def _ready(self, now: float) -> None:
        """The handshake is done (``notifications/initialized`` is on its way): send what
        waited for it and open the GET stream. While that stream has no response head, the
        server may drop what it sends there (the TypeScript SDK does), so the app's messages
        wait for the head, ``get_stream_wait`` at most (see :meth:`_open_gate`)."""
        held = self._state.ready(self._session.in_flight)
        rules = self.rules
        assert rules is not None  # set by the handshake that just completed
        wait = self.config.get_stream_wait
        get_stream = (not self._state.legacy and self.config.open_get_stream and rules.streamable_http
                      and rules.sessions)
        if get_stream and wait > 0:
            self._open_get_stream(now)
            self._state.gate(now + wait, held)
            return
        for request_id, message in held:
            self._post(request_id, message, now)
        if get_stream:
            self._open_get_stream(now)

    def _open_gate(self, now: float) -> None:
        """The GET stream has its head (or failed, or the wait is over): send what waited,
        in order (nothing once the session is closed)."""
        for request_id, message in self._state.ungate():
            if self.phase is not Phase.CLOSED:
                self._post(request_id, message, now)

    def _ended(self, request_id: int, reason: FailureReason | None, now: float) -> None:
        answered = reason is None or reason is FailureReason.ERROR_RESPONSE
        self._state.ended(request_id, answered=answered)
        if answered:
            return
        if self._state.withdraw(request_id):
            self._unsent = request_id  # held, never sent: its notifications/cancelled (next) is not sent
            return
        # Free the connection of a request given up on (timeout, cancel) if nothing
        # else waits on its stream.
        for ex in self._table.live():
            if request_id in ex.request_ids and not self._waiting_on(ex):
                self._table.abandon(ex, now)

    def _vet(self, method: str, result: msgspec.Struct, now: float) -> msgspec.Struct:
        if method == "tools/list" and self.rules is not None and self.rules.standard_headers:
            return self._headers.checked_tools(result, self._session.discard)
        return result

    # ------------------------------------------------------------ exchanges

    def _post(self, request_id: int | None, message: bytes, now: float) -> None:
        ids = (request_id,) if request_id is not None else ()
        if self._state.legacy:
            endpoint = self._state.endpoint
            if endpoint is None:
                self._state.held.append((request_id, message))  # until the endpoint event
                return
            self._table.submit(self._exchange(ExchangeKind.LEGACY_POST, "POST", endpoint, message, ids), now)
            return
        self._table.submit(self._exchange(ExchangeKind.POST, "POST", self.url, message, ids), now)

    def _exchange(self, kind: ExchangeKind, method: str, url: Url, body: bytes, ids: tuple[int, ...],
                  last_event_id: str = "") -> Exchange:
        session = self._session
        is_init = kind is ExchangeKind.POST and session.handshake_id in ids
        probe = session.negotiation.probing if is_init else None
        headers = self._headers.for_request(kind, body, last_event_id, is_init=is_init, probe=probe,
                                            legacy=self._state.legacy, session_id=self._state.session_id,
                                            rules=self.rules)
        return self._table.new(kind, method, url, headers, body, ids, last_event_id)

    def _stall(self) -> str:
        """Where the handshake's request stands: connecting, waiting, reading, retrying."""
        legacy_stream = self._state.legacy and self._state.endpoint is None
        return self._table.stall(self._session.handshake_id, legacy_stream=legacy_stream)

    def _schedule(self, ex: Exchange, now: float, server_retry: float | None, *,
                  deadline: float | None = None) -> bool:
        """Retry ``ex`` later per the policy (see :meth:`ExchangeTable.schedule`)."""
        return self._table.schedule(ex, self.config.retry, now, server_retry, deadline=deadline)

    def _deadline_of(self, ex: Exchange) -> float | None:
        """The earliest deadline of the requests ``ex`` carries (the handshake's for its
        request), or ``None`` when it carries none."""
        deadlines = [self._session.deadline_of(rid) for rid in ex.request_ids]
        return min((d for d in deadlines if d is not None), default=None)

    # ------------------------------------------------------------- responses

    def _drain_pool(self, now: float) -> None:
        while (item := self._table.next_event()) is not None:
            ex, event = item
            if isinstance(event, ResponseData):
                self._on_data(ex, event.data, now)
            elif isinstance(event, ResponseStarted):
                ex.move(ExchangeTrigger.HEAD)
                self._on_started(ex, event, now)
            elif isinstance(event, ResponseEnded):
                self._table.ended(ex, ExchangeTrigger.END)
                self._on_ended(ex, now)
            else:
                self._table.ended(ex, ExchangeTrigger.BREAK)
                self._on_exchange_failed(ex, event, now)

    def _on_started(self, ex: Exchange, event: ResponseStarted, now: float) -> None:
        status = ex.status = event.status
        ex.response_headers = event.headers
        if ex.kind is ExchangeKind.SIDE:
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
                self._state.session_id = visible_ascii(sid)
        if status in (401, 403):
            self._session.add_event(ex.challenged(status, headers.get("www-authenticate", "")))
        ex.expect_body(headers.get("content-type", ""), self.config.max_response_bytes, now)
        if ex.kind is ExchangeKind.GET_STREAM and self._state.gate_until is not None:
            self._open_gate(now)  # the stream is open (or refused, 405): what waited for it goes

    def _on_data(self, ex: Exchange, data: bytes, now: float) -> None:
        sse = ex.sse
        if sse is not None:
            limit = self.config.max_response_bytes
            # Fed at most ``limit`` bytes at a time, the parser cannot complete an event and
            # then overflow in the same feed (which loses the event), so what is delivered
            # never depends on how the reads were cut.
            for start in range(0, len(data), limit):
                if not self._table.is_live(ex):
                    return  # abandoned by what an earlier piece caused: deliver nothing more
                self._on_sse_data(ex, sse, data[start : start + limit], now)
            return
        if not ex.read_body(data, self.config.max_response_bytes):
            self._too_large(ex, "the response", now)

    def _on_sse_data(self, ex: Exchange, sse: SseParser, data: bytes, now: float) -> None:
        """Parse one piece of an SSE body and act on its events."""
        try:
            events = ex.read_events(sse, data)
        except MessageTooLarge:
            # Not the parser's text: its "at least N bytes" depends on how reads were cut.
            self._too_large(ex, "an SSE event", now)
            return
        for sse_event in events:
            if not self._table.is_live(ex):
                return  # abandoned by what an earlier event caused: deliver nothing more
            if ex.kind is ExchangeKind.LEGACY_STREAM and sse_event.event == "endpoint":
                self._on_endpoint(ex, sse_event.text, now)
            elif sse_event.data and sse_event.event == "message":
                ex.delivered = True
                self._session.receive_message(sse_event.data, now)

    def _too_large(self, ex: Exchange, what: str, now: float) -> None:
        if ex.kind is ExchangeKind.SIDE:
            self._table.abandon(ex, now)
            self._side_failed(ex.tag, f"{what} is too large", now)
            return
        self._fail_exchange(ex, FailureReason.MESSAGE_TOO_LARGE,
                            f"{what} exceeds max_response_bytes ({self.config.max_response_bytes})", now)

    def _on_ended(self, ex: Exchange, now: float) -> None:
        status = ex.status
        if ex.kind is ExchangeKind.SIDE:
            self._side_answered(ex.tag, status, ex.response_headers, bytes(ex.buffer or b""), now)
            return
        if ex.kind is ExchangeKind.DELETE:
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
        if ex.kind is not ExchangeKind.POST and ex.kind is not ExchangeKind.LEGACY_POST:
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

    def _stream_ended(self, ex: Exchange, now: float, why: str) -> None:
        """An SSE stream ended or broke: resume it, reopen it, or fail who waited on it."""
        # A stream that worked starts the count of reconnections over; one that ends at
        # once (even after a 200) does not, so the backoff grows and the policy bounds it.
        worked = ex.delivered or (ex.sse is not None and now - ex.opened_at >= self.config.retry.max_delay)
        if ex.kind is ExchangeKind.GET_STREAM:
            again = self._exchange(ExchangeKind.GET_STREAM, "GET", self.url, b"", (),
                                   last_event_id=ex.last_event_id)
            again.attempt = 0 if worked else ex.attempt
            if not self._schedule(again, now, ex.retry):
                self._abandon_get_stream(again.attempt - 1, why)
            return
        if ex.kind is ExchangeKind.LEGACY_STREAM:
            self._session.connection_lost(f"the legacy SSE stream ended: {why}", now=now)
            return
        if not self._waiting_on(ex):
            return
        rules = self.rules
        if rules is not None and rules.request_meta and self._session.reissue(ex.request_ids, now):
            return
        if ex.last_event_id and rules is not None and rules.resumable_streams:
            waiting = tuple(rid for rid in ex.request_ids if self._session.awaiting(rid))
            resume = self._exchange(ExchangeKind.RESUME, "GET", self.url, b"", waiting,
                                    last_event_id=ex.last_event_id)
            resume.attempt = ex.attempt if ex.kind is ExchangeKind.RESUME and not worked else 0
            if self._schedule(resume, now, ex.retry):
                return
        self._fail_ids(ex, FailureReason.CONNECTION_LOST, why, now)

    def _abandon_get_stream(self, attempts: int, why: str) -> None:
        """Stop reopening the GET stream: it kept failing. The session goes on without it."""
        times = f" after {attempts} reconnection{'' if attempts == 1 else 's'} in a row" if attempts else ""
        self._session.add_event(GetStreamAbandoned(
            attempts=attempts,
            message=f"gave up the event stream for server-initiated messages from {self.url}{times}: {why}"))

    def _on_exchange_failed(self, ex: Exchange, event: ExchangeFailed, now: float) -> None:
        if ex.kind is ExchangeKind.GET_STREAM and self._state.gate_until is not None:
            self._open_gate(now)  # no stream to wait for (a retry of it holds nothing)
        if ex.kind is ExchangeKind.SIDE:
            self._side_failed(ex.tag, event.message, now)
            return
        if ex.kind is ExchangeKind.DELETE:
            self._finish()
            return
        if event.proxy_status is not None and ex.kind is not ExchangeKind.GET_STREAM:
            # The proxy's answer is deliberate, as a server's status is: no retry.
            self._fail_exchange(ex, FailureReason.PROXY_ERROR, event.message, now, status=event.proxy_status)
            return
        if event.connect_failure is not None:
            self._unreachable(ex, event.connect_failure, now)
            return
        deadline = self._deadline_of(ex)
        if ex.sse is not None or ex.kind in _STREAMS:
            if (not event.sent and ex.kind is not ExchangeKind.GET_STREAM
                    and self._schedule(ex, now, None, deadline=deadline)):
                return
            self._stream_ended(ex, now, event.message)
            return
        if not event.sent and self._schedule(ex, now, None, deadline=deadline):
            return  # nothing reached the server: safe to send again
        self._fail_exchange(ex, FailureReason.CONNECTION_LOST, f"HTTP request failed: {event.message}", now)

    def _unreachable(self, ex: Exchange, failure: ConnectFailure, now: float) -> None:
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
        if ex.kind is ExchangeKind.GET_STREAM:
            self._abandon_get_stream(ex.attempt - retry, failure.message)
            return
        self._fail_exchange(ex, FailureReason.CONNECT_FAILED, failure.message, now, detail=failure.detail())

    def _on_error_status(self, ex: Exchange, now: float) -> None:
        status = ex.status
        body = bytes(ex.buffer or b"")
        if ex.kind is ExchangeKind.GET_STREAM:
            return  # 405: the server offers no such stream; any other status: do without it too
        if status in (401, 403):
            self._table.hold(ex)
            if self._auth is not None and self._auth.refused(status, ex.response_headers, ex.credential, now):
                return  # held (or already re-sent, or failed) by the authorization
            self._table.unhold(ex)
            ex.move(ExchangeTrigger.ABANDON)
            self._fail_ids(ex, FailureReason.AUTHORIZATION_REQUIRED,
                           f"the server requires authorization (HTTP {status})", now,
                           status=status, detail=ex.challenge)
            return
        init_id = self._session.handshake_id
        if init_id in ex.request_ids and self._session.negotiation.probing is not None:
            if is_error_response(body, init_id):
                self._session.receive_message(body, now)  # -32022 and friends: the session decides
            else:
                self._session.probe_failed(f"HTTP {status} to server/discover from {ex.url}", now)
            return
        if (init_id in ex.request_ids and self.mode is TransportMode.AUTO and not self._state.legacy
                and self.rules is None and status in _FALLBACK_STATUSES):
            # The spec's backwards compatibility rule, before any session existed: try the
            # 2024-11-05 HTTP+SSE transport.
            self._state.fall_back(status, init_id)
            self._open_legacy_stream(now)
            return
        if ex.kind is ExchangeKind.LEGACY_STREAM and self._state.fallback_status:
            status = self._state.fallback_status  # report what the Streamable HTTP attempt said
        carried_session = any(k == "mcp-session-id" for k, _ in ex.headers)
        # Only a ready session can expire: during a handshake the answer is an ordinary error.
        if carried_session and self.phase is Phase.READY and is_expiry(status, body):
            self._expire(status, now)
            return
        answered = any(is_error_response(body, rid) for rid in ex.request_ids)
        if answered and ex.kind is not ExchangeKind.LEGACY_STREAM:
            # A JSON-RPC error that answers the request (-32021 on a missing capability, ...):
            # the server's own words, as over stdio, rather than the status and the raw body.
            self._session.receive_message(body, now)
        excerpt = body[:300].decode("utf-8", "replace").strip()
        message = f"HTTP {status} from {ex.url}" + (f": {' '.join(excerpt.split())}" if excerpt else "")
        if ex.kind is ExchangeKind.LEGACY_STREAM:
            self._session.connection_lost(message, now=now, reason=FailureReason.HTTP_ERROR)
            return
        self._fail_ids(ex, FailureReason.HTTP_ERROR, message, now, status=status, detail={"body": excerpt})

    def _redirect(self, ex: Exchange, location: str, now: float) -> None:
        if ex.redirects >= self.config.max_redirects:
            self._fail_exchange(ex, FailureReason.HTTP_ERROR,
                                f"more than {self.config.max_redirects} redirects from {self.url}", now)
            return
        try:
            target = resolve_url(ex.url, location)
        except RemoteProtocolError as exc:
            self._fail_exchange(ex, FailureReason.PROTOCOL_ERROR, f"bad redirect: {exc}", now)
            return
        self._table.cancel(ex, now)
        ex.redirect(target, self._headers.redirected(ex.headers, same_origin(ex.url, target)))
        self._table.submit(ex, now)  # the same exchange, so a resume keeps its Last-Event-ID

    def _expire(self, status: int, now: float) -> None:
        """The server forgot the session: drop everything of it, then open a new one or give up."""
        restart, old = self._state.expire(self.config)
        self._session.add_event(SessionForgotten(status=status, reinitializing=restart))
        # Late answers of the old session are never read; what waited carries the old session
        # id (the requests still pending are re-sent on the new one).
        self._table.abandon_all(now)
        if not restart:
            self._session.connection_lost(f"the server no longer knows session {old!r} (HTTP {status})",
                                          now=now, reason=FailureReason.SESSION_EXPIRED)
            return
        for rid in list(self._state.resent):
            self._session.fail_request(rid, FailureReason.SESSION_EXPIRED, "the request was re-sent on a new"
                                       " session, and that session expired too", now=now)
        self._session.session_expired(now)

    # ---------------------------------------------------------- authorization

    def _release_held(self, now: float) -> None:
        """Send every held request again (with fresh authorization headers)."""
        self._table.release_held(now, self._wanted)

    def _wanted(self, ex: Exchange) -> bool:
        """Whether the scheduled or held ``ex`` is still worth sending: the session goes
        on and, if it carries requests, one of them still waits."""
        return self.phase is not Phase.CLOSED and (not ex.request_ids or self._waiting_on(ex))

    def _fail_held(self, reason: FailureReason, message: str, now: float) -> None:
        """Fail every held request with ``reason``."""
        for ex in self._table.take_held():
            ex.move(ExchangeTrigger.ABANDON)
            if ex.kind is ExchangeKind.LEGACY_STREAM:
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
        return self._table.side_request(method, parse_url(url), headers, body, now)

    # -------------------------------------------------------------- legacy SSE

    def _open_legacy_stream(self, now: float) -> None:
        self._table.submit(self._exchange(ExchangeKind.LEGACY_STREAM, "GET", self.url, b"", ()), now)

    def _on_endpoint(self, ex: Exchange, data: str, now: float) -> None:
        endpoint = legacy_endpoint(ex.url, data)
        if isinstance(endpoint, str):
            self._fail_exchange(ex, FailureReason.PROTOCOL_ERROR, endpoint, now)
            return
        for rid, message in self._state.endpoint_known(endpoint):
            self._post(rid, message, now)

    def _open_get_stream(self, now: float) -> None:
        self._table.submit(self._exchange(ExchangeKind.GET_STREAM, "GET", self.url, b"", ()), now)

    # ------------------------------------------------------------------ helpers

    def _waiting_on(self, ex: Exchange) -> bool:
        return any(self._session.awaiting(rid) for rid in ex.request_ids)

    def _fail_exchange(self, ex: Exchange, reason: FailureReason, message: str, now: float, *,
                       status: int | None = None, detail: dict[str, str] | None = None) -> None:
        self._table.abandon(ex, now)
        if ex.kind is ExchangeKind.LEGACY_STREAM:
            self._session.connection_lost(message, now=now, reason=reason, detail=detail)
            return
        self._fail_ids(ex, reason, message, now, status=status, detail=detail)

    def _fail_ids(self, ex: Exchange, reason: FailureReason, message: str, now: float, *,
                  status: int | None = None, detail: dict[str, str] | None = None) -> None:
        for rid in ex.request_ids:
            self._session.fail_request(rid, reason, message, now=now, status=status, detail=detail)

    def _finish(self) -> None:
        """Closing is done (it runs once: everything that calls it is gone afterwards)."""
        self._closing_at = None
        self._finished = True
        self._table.close()
