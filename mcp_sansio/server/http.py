"""The Streamable HTTP server: MCP over HTTP/1.1, both eras on one endpoint.

``HttpServer`` owns the HTTP connections (``http11.py``), one shared
:class:`ServerSession` for stateless 2026-07-28 requests (every POST a channel of its
own: its response is that request's JSON body or SSE stream, and closing it cancels the
request), and one session per ``Mcp-Session-Id`` for the handshake era (POST, the GET
stream for messages no request owns, DELETE; SSE event ids and ``Last-Event-ID``
resumption; sessions expire when idle). A response is JSON when the request's only
message is its answer, SSE once anything precedes it (``response_mode`` can force
either). Requests are checked before any MCP processing: ``Host``/``Origin`` against
allow-lists, ``Accept``, ``Content-Type``, and in 2026-07-28 the headers mirroring the
body (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``). See MCP
"Streamable HTTP" (2025-11-25 and 2026-07-28).
"""

from __future__ import annotations

import hashlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Final, Literal

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .. import jsonrpc
from ..errors import LocalProtocolError
from ..events import Event
from ..modern import HEADER_MISMATCH, PROTOCOL_VERSION_KEY
from ..versions import VERSIONS
from . import tasks as run_tasks
from .authz import (
    Allowed,
    AuthGate,
    Principal,
    Refusal,
    TokenVerdict,
    protected_resource_metadata,
    protected_resource_paths,
)
from .endpoint import Endpoint
from .exchanges import HttpExchanges
from .http11 import CloseConnection, ExchangeClosed, HttpConnections, HttpLimits, RequestReceived
from .http_headers import (
    LOOPBACK_HOSTS,
    accepts,
    check_origins,
    host_allowed,
    origin_allowed,
    param_mismatch,
    standard_mismatch,
)
from .http_streams import Exchange, Legacy, LegacyHost, Mode, sse_event
from .phases import Phase
from .session import ServerSession, invalid_utf8
from .stores import (
    INBOX_STREAM,
    EventStore,
    Follow,
    MemoryEventStore,
    MemorySessionStore,
    Relayed,
    SessionRecord,
    SessionStore,
    StoreUnavailable,
    TaskMessage,
    TaskStore,
)

if TYPE_CHECKING:
    from .app import MCPServer

__all__ = ["HttpConfig", "HttpServer"]

Header = tuple[str, str]
_JSON: Final[Header] = ("content-type", "application/json")
_SSE: Final[list[Header]] = [("content-type", "text/event-stream"), ("cache-control", "no-cache"),
                             ("x-accel-buffering", "no")]
_SESSION_NOT_FOUND: Final = -32001
_FINISHED_STREAMS: Final = 1024


class HttpConfig(msgspec.Struct, frozen=True, kw_only=True):
    """The HTTP transport's settings.

    Attributes:
        path: the MCP endpoint's path.
        allowed_hosts: host names the ``Host`` header may name (any port); ``None``: any.
        allowed_origins: origins (``https://app.example.com``: scheme, host and port) a
            browser page calling the server may have; a request without ``Origin`` (not
            from a browser) always passes, and so does the server's own origin when
            ``allowed_hosts`` checks the ``Host``. Default: none. ``None``: any (an
            explicit opt-out of the spec's MUST).
        response_mode: ``"auto"`` (JSON when the answer is all there is, SSE otherwise),
            ``"json"`` or ``"sse"`` (always).
        max_connections: connections served at once. A connection past it takes the
            place of the connection idle longest (of the peer holding the most), and is
            closed at once only when none is idle.
        max_connections_per_peer: connections one peer (client address) may hold; past
            it, its own idle connection goes, or the new one.
        max_sessions: handshake-era sessions at once. Past it, an ``initialize`` ends
            the least recently active idle session that never served a request (an
            opened-and-abandoned one); a session in use is never ended for a new one:
            when none can go, ``initialize`` gets 503.
        max_sessions_per_peer: sessions one peer may hold; past it, an ``initialize``
            from it ends its own least recently active idle session (else 429), so one
            client cannot fill the table. With ``auth`` the peer is the principal (the
            token's issuer and subject), whatever address it comes from: users behind one
            NAT or proxy do not share a cap, and one user cannot escape it by moving.
        session_idle_timeout: seconds without a request after which a session ends.
        sse_retry_ms: the ``retry`` hint of the priming event of resumable streams.
        limits: the HTTP/1.1 bounds.
    """

    path: str = "/mcp"
    allowed_hosts: tuple[str, ...] | None = None
    allowed_origins: tuple[str, ...] | None = ()
    response_mode: Literal["auto", "json", "sse"] = "auto"
    max_connections: int = 1024
    max_connections_per_peer: int = 256
    max_sessions: int = 4096
    max_sessions_per_peer: int = 256
    session_idle_timeout: float = 1800.0
    sse_retry_ms: int = 1000
    limits: HttpLimits = HttpLimits()

    @classmethod
    def loopback(cls, **overrides: object) -> HttpConfig:
        """Settings for a server bound to loopback: DNS-rebinding protection on (only
        ``localhost``, ``127.0.0.1`` and ``[::1]`` as ``Host``, so only pages of this very
        server as ``Origin``, unless ``allowed_origins`` names more)."""
        fields: dict[str, object] = {"allowed_hosts": LOOPBACK_HOSTS}
        fields.update(overrides)
        return cls(**fields)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        check_origins(self.allowed_origins)


class _PeekMeta(msgspec.Struct):
    protocol_version: str | None = msgspec.field(default=None, name=PROTOCOL_VERSION_KEY)


class _PeekParams(msgspec.Struct):
    meta: _PeekMeta | None = msgspec.field(default=None, name="_meta")
    name: object = None
    uri: object = None
    taskId: object = None  # the wire name
    arguments: Raw = Raw(b"null")


class _Peek(msgspec.Struct):
    """What routing needs of a message, before the session reads it."""

    id: int | str | UnsetType | None = UNSET
    method: object = None
    params: _PeekParams | None = None


_peek: Final = msgspec.json.Decoder(_Peek).decode


class HttpServer(Endpoint):
    """An MCP server behind one HTTP endpoint, for many clients.

    Driver contract: :meth:`connection_made` per accepted connection, its bytes to
    :meth:`receive_data` (``b""`` at EOF) and :meth:`connection_lost` when it breaks;
    write :meth:`data_to_send` of each of :meth:`connections_with_data` when the socket
    can take it; perform :meth:`next_action`; run the handlers :meth:`next_event` asks
    for (the :class:`Endpoint` API); call :meth:`handle_timeout` at :meth:`next_deadline`.

    Args:
        app: what the server offers.
        secret: see :class:`Endpoint`.
        entropy: see :class:`Endpoint` (session ids come from it).
        wall_offset: see :class:`Endpoint`.
        config: the HTTP settings (``HttpConfig.loopback()`` for a loopback bind).
        sessions: where handshake-era sessions are kept (default: this process).
        events: where resumable stream events are kept (default: this process).
        tasks: where tasks are shared with other workers (default: none, each task lives
            in the process running it).
        exchanges: take HTTP messages from a host server (ASGI) instead of bytes: the
            driver then feeds and drains these, and the byte-level methods refuse.
    """

    def __init__(self, app: MCPServer, *, secret: bytes, entropy: bytes, wall_offset: float = 0.0,
                 config: HttpConfig | None = None, sessions: SessionStore | None = None,
                 events: EventStore | None = None, exchanges: HttpExchanges | None = None,
                 tasks: TaskStore | None = None) -> None:
        super().__init__(app, secret=secret, entropy=entropy, wall_offset=wall_offset)
        # this process's SSE streams and questions to clients are numbered from here: apart
        # from other workers' in a shared session (a random 32-bit base, 2**20 apart)
        self._stream_base = int.from_bytes(hashlib.sha256(b"streams/" + entropy).digest()[:4], "big") << 20
        self.config = config or HttpConfig()
        self._wire: HttpConnections | None = None  # None: a host server (ASGI) owns the bytes
        self.http: HttpConnections | HttpExchanges
        if exchanges is None:
            self.http = self._wire = HttpConnections(self.config.limits)
        else:
            self.http = exchanges
        self.modern = ServerSession(app, self, channel_ids=True)
        self.modern.task_store = tasks
        self.session_store: SessionStore = sessions or MemorySessionStore()
        self.event_store: EventStore = events or MemoryEventStore()
        self._legacy: OrderedDict[str, Legacy] = OrderedDict()  # least recently active first
        self._peer_sessions: Counter[str | None] = Counter()
        self._following: dict[tuple[str, int], str] = {}  # (session, stream) -> last event relayed
        self._follow_request: dict[tuple[str, int], int | str | None] = {}  # ... -> the request it answers
        self._inboxes: dict[str, None] = {}  # the sessions whose inbox may matter here (a shared store)
        self._exchanges: dict[int, Exchange] = {}
        self._peers: dict[int, str | None] = {}  # open connection -> its peer
        self._peer_connections: Counter[str | None] = Counter()
        self._now = 0.0  # the latest time the server was told: for requests that wait their turn
        auth = app.auth
        self.gate: AuthGate[RequestReceived] | None = None
        """The bearer check (``None``: the app has no ``auth``)."""
        self._metadata_paths: frozenset[str] = frozenset()
        if auth is not None:
            self.gate = AuthGate(auth, app.registry, wall_offset, self.new_ticket, self.emit)
            self._metadata_paths = protected_resource_paths(auth, self.config.path)

    # ------------------------------------------------------------ driver: connections

    def connection_made(self, now: float, peer: str | None = None) -> int:
        """A client connected from ``peer`` (its address, if known); its connection id.

        Past ``max_connections_per_peer`` the peer's own idle connection is closed, past
        ``max_connections`` the idle one of the peer holding the most; if none is idle,
        the new connection is closed at once. A flood of connections thus displaces idle
        ones, never a request in progress.

        Actions: ``CloseConnection``.
        """
        wire = self._bytes()
        conn = wire.connection_made(now, peer)
        self._peers[conn] = peer
        self._peer_connections[peer] += 1
        config = self.config
        if self._peer_connections[peer] > config.max_connections_per_peer:
            among: list[int] = [c for c, p in self._peers.items() if p == peer and c != conn]
        elif len(self._peers) > config.max_connections:
            heaviest = max(self._peer_connections, key=lambda p: self._peer_connections[p])
            among = [c for c, p in self._peers.items() if p == heaviest and c != conn]
        else:
            return conn
        wire.close(wire.idle_connection(among) or conn)
        self._pump(now)
        return conn

    def receive_data(self, connection: int, data: bytes, now: float) -> None:
        """Bytes from ``connection`` (``b""`` at EOF).

        Raises:
            LocalProtocolError: the connection was never made.
        """
        self._bytes().receive_data(connection, data, now)
        self._pump(now)

    def connection_lost(self, connection: int, now: float) -> None:
        """``connection`` broke: its request is cancelled (stateless era) or its stream
        left to be resumed (handshake era)."""
        self._bytes().connection_lost(connection, now)
        self._pump(now)

    def data_to_send(self, connection: int) -> bytes:
        """What to write on ``connection`` (drains it)."""
        return self._bytes().data_to_send(connection)

    def connections_with_data(self) -> list[int]:
        """The connections with bytes waiting; changes nothing."""
        return self._bytes().connections_with_data()

    def next_action(self) -> CloseConnection | None:
        """The next connection to close."""
        action = None if self._wire is None else self._wire.next_action()
        if action is not None and action.connection in self._peers:
            peer = self._peers.pop(action.connection)
            self._peer_connections[peer] -= 1
            if not self._peer_connections[peer]:
                del self._peer_connections[peer]
        return action

    def next_deadline(self) -> float | None:
        """The earliest deadline: connections, sessions, questions, tasks, token verdicts;
        changes nothing."""
        gate = None if self.gate is None else self.gate.next_deadline()
        deadlines = [d for d in (super().next_deadline(), self.http.next_deadline(), gate) if d is not None]
        if self._legacy:  # least recently active first: the first expires first
            deadlines.append(next(iter(self._legacy.values())).expires_at)
        return min(deadlines) if deadlines else None

    def handle_timeout(self, now: float) -> None:
        """Fire what is due: slow requests (408), idle sessions, unanswered questions,
        overdue token verdicts (503)."""
        self.http.handle_timeout(now)
        if self.gate is not None:
            for req, refusal in self.gate.handle_timeout(now):
                self._refuse(req, refusal, now)
        while self._legacy and (legacy := next(iter(self._legacy.values()))).expires_at <= now:
            self._end_session(legacy, now, "the session expired", forget=not self.session_store.shared)
        super().handle_timeout(now)
        self._pump(now)

    def close(self, now: float) -> None:
        """Shut down: every session ends, every connection closes.

        Events: ``CallCancelled`` for running calls. Actions: ``CloseConnection``.
        """
        for legacy in list(self._legacy.values()):
            self._end_session(legacy, now, "the server is shutting down",
                              forget=not self.session_store.shared)
        self.modern.close(now, "the server is shutting down")
        for exchange in list(self._exchanges):
            self.http.abort(exchange)
        self._exchanges.clear()

    def token_verified(self, ticket: int, verdict: TokenVerdict, *, now: float) -> None:
        """The verifier's ``verdict`` on the token of ``TokenVerificationRequired`` ``ticket``:
        the requests that waited for it go on, or get 401/403/503 (a late or unknown
        ticket is ignored)."""
        if self.gate is not None:
            for req, outcome in self.gate.verified(ticket, verdict, now):
                self._admit(req, outcome, now)
        self._pump(now)

    def exchanges_changed(self, now: float) -> None:
        """The driver fed the exchanges (a request completed, a client left): act on it."""
        self._pump(now)

    def _bytes(self) -> HttpConnections:
        if self._wire is None:
            raise LocalProtocolError("this server takes HTTP messages (its exchanges), not bytes")
        return self._wire

    # ------------------------------------------------------------ Endpoint

    def sessions(self) -> Iterable[ServerSession]:
        """The stateless session and every handshake-era one."""
        return [self.modern, *(legacy.session for legacy in self._legacy.values())]

    def send(self, channel: int | None, data: bytes) -> None:
        """A stateless-era message for the request of ``channel`` (none other exist)."""
        ex = None if channel is None else self._exchanges.get(channel)
        if ex is not None:
            self._emit(ex, data, None, 200, None)

    def finish(self, channel: int | None, data: bytes, status: int, now: float) -> None:
        """A stateless-era response."""
        ex = None if channel is None else self._exchanges.get(channel)
        if ex is not None:
            self._emit(ex, data, None, status, now)

    def close_sse_stream(self, call: int, *, now: float) -> bool:
        """End the SSE stream of a handshake-era ``call`` now (SSE polling, SEP-1699): the
        client reconnects with ``Last-Event-ID`` and gets the rest; ``False`` if the call
        has no resumable stream to end."""
        session = self._calls.get(call)
        legacy = next((s for s in self._legacy.values() if s.session is session), None)
        if legacy is None or session is None:
            return False
        channel = session.calls[call].channel
        stream = None if channel is None else legacy.stream_of.get(channel)
        exchange = channel if stream is None else legacy.live.get(stream)  # a resumption's, perhaps
        ex = None if exchange is None else self._exchanges.get(exchange)
        if ex is None:
            return False
        if ex.mode is Mode.PENDING:
            self._start_sse(ex, legacy)
        self.http.end(ex.id, now=now)
        del self._exchanges[ex.id]
        legacy.live.pop(legacy.stream_of[ex.id], None)
        self._pump(now)
        return True

    # ------------------------------------------------------------ streams other workers produce

    def follows(self) -> list[Follow]:
        """The streams resumed here whose requests run on another worker, and the inboxes
        of the sessions whose calls run here (answers and cancellations other workers
        received): the driver passes them to ``event_store.follow`` (off its loop) and what
        it returns to :meth:`receive_relayed`. Changes nothing."""
        follows = [Follow(session_id=sid, stream=stream, after=after)
                   for (sid, stream), after in self._following.items()]
        for sid in self._inboxes:
            legacy = self._legacy[sid]
            if legacy.session.calls and legacy.inbox_after is not None:
                follows.append(Follow(session_id=sid, stream=INBOX_STREAM, after=legacy.inbox_after))
        return follows

    def receive_relayed(self, relayed: Sequence[Relayed], now: float) -> None:
        """Events another worker stored for streams this one follows: each goes to the
        client once, in order; a final one ends its stream. Events of streams no longer
        followed (the client left again) are dropped: the store still has them."""
        start = dict(self._following)
        inboxes = {sid: self._legacy[sid].inbox_after for sid in self._inboxes}
        for item in relayed:
            key = (item.session_id, item.stream)
            if item.stream == INBOX_STREAM:
                if inboxes.get(item.session_id) == item.since:  # else: gone, or read for an earlier position
                    self._inbox_message(self._legacy[item.session_id], item, now)
                continue
            if start.get(key) != item.since or key not in self._following:
                continue  # read for an earlier position (resumed again since), or no longer followed
            legacy = self._legacy[item.session_id]  # followed: its session and exchange are here
            ex = self._exchanges[legacy.live[item.stream]]
            self._following[key] = item.event_id
            data, final = item.data, item.final
            event_id: str | None = item.event_id
            if item.abandoned:  # its worker died: answer for it, for this and any later resumption
                request_id = self._follow_request.get(key)
                data = b"" if request_id is None else jsonrpc.encode_error(
                    request_id, jsonrpc.INTERNAL_ERROR, "the server process running this request stopped")
                event_id, final = self._append(legacy, item.stream, data, True), True
            if data:
                self.http.send(ex.id, sse_event(data, event_id))
            if final:
                del self._following[key]
                self._follow_request.pop(key, None)
                self._exchanges.pop(ex.id, None)
                ex.mode = Mode.DONE
                self.http.end(ex.id, now=now)
                self._stream_done(legacy, item.stream)
        self._pump(now)

    def receive_task_messages(self, messages: list[TaskMessage], now: float) -> None:
        """Answers and cancellations other workers passed (through the shared task store)
        to the tasks running here: the driver takes them with ``TaskStore.task_messages``
        off its loop while :meth:`runs_tasks` says so."""
        run_tasks.receive_messages(self.modern, messages, now)
        self._pump(now)

    def runs_tasks(self) -> bool:
        """Whether a task runs here whose messages a shared task store may carry."""
        return self.modern.task_store is not None and run_tasks.running(self.modern)

    def _inbox_message(self, legacy: Legacy, item: Relayed, now: float) -> None:
        """An answer or a cancellation another worker received for a session of ours."""
        legacy.inbox_after = item.event_id
        if item.data:  # (none: the store's position moved past events of other streams)
            legacy.session.receive_message(item.data, now, None)  # unknown ids: discarded (not ours)

    def congested(self, call: int) -> bool:
        """Whether the response stream ``call`` writes to is congested (see ``flow.py``)."""
        session = self._calls.get(call)
        record = None if session is None else session.calls.get(call)
        if session is None or record is None:
            return False
        if isinstance(session.host, LegacyHost):
            return session.host.congested(record.channel)
        return record.channel is not None and self.http.congested(record.channel)

    # ------------------------------------------------------------ legacy session host

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
        elif stream is not None:  # its stream broke: keep the event for a resumption
            self._append(legacy, stream, data, final)
            if final:
                self._stream_done(legacy, stream)

    # ------------------------------------------------------------ requests

    def next_event(self) -> Event | None:
        """The oldest queued event, or ``None`` (a request that waited behind a response
        just sent, or a stream dropped while being written, is taken in first)."""
        self._pump(self._now)
        return super().next_event()

    def _pump(self, now: float) -> None:
        self._now = now
        while (event := self.http.next_event()) is not None:
            if isinstance(event, RequestReceived):
                self._request(event, now)
            else:
                self._closed(event, now)

    def _request(self, req: RequestReceived, now: float) -> None:
        config = self.config
        path = req.target.partition("?")[0]
        if path != config.path and path not in self._metadata_paths:
            self._plain(req, 404, "Not Found", now)
        elif not host_allowed(host := req.header("host"), config.allowed_hosts):
            self._plain(req, 421, "Misdirected Request: the Host header names another server", now)
        elif path != config.path:
            self._metadata(req, now)
        elif not origin_allowed(req.header("origin"), config.allowed_origins, host=host,
                                host_checked=config.allowed_hosts is not None):
            self._error(req, 403, None, jsonrpc.INVALID_REQUEST, "Forbidden: the Origin is not allowed", now)
        elif self.gate is None:
            self._guarded(req, None, now)
        else:
            credentials = [value for name, value in req.headers if name == "authorization"]
            outcome = self.gate.check(credentials, req, now)
            if outcome is not None:  # else held until its token's verdict
                self._admit(req, outcome, now)

    def _metadata(self, req: RequestReceived, now: float) -> None:
        """The protected resource metadata (RFC 9728), public: no token, any origin."""
        gate = self.gate
        assert gate is not None  # only a gate makes metadata paths (both are set at construction)
        if req.method != "GET":
            self.http.respond(req.exchange, 405, [("allow", "GET")], now=now)
            return
        body = protected_resource_metadata(gate.settings, self.app.registry)
        headers = [_JSON, ("access-control-allow-origin", "*"), ("cache-control", "max-age=300")]
        self.http.respond(req.exchange, 200, headers, body, now=now)

    def _admit(self, req: RequestReceived, outcome: Allowed | Refusal, now: float) -> None:
        if isinstance(outcome, Refusal):
            self._refuse(req, outcome, now)
        else:
            self._guarded(req, outcome.principal, now)

    def _refuse(self, req: RequestReceived, refusal: Refusal, now: float) -> None:
        self.http.respond(req.exchange, refusal.status, list(refusal.headers), refusal.body, now=now)

    def _guarded(self, req: RequestReceived, principal: Principal | None, now: float) -> None:
        try:
            self._dispatch(req, principal, now)
        except StoreUnavailable as exc:  # from a session lookup or a replay: nothing was answered yet
            self._plain(req, 503, f"Service Unavailable: {exc}", now)

    def _dispatch(self, req: RequestReceived, principal: Principal | None, now: float) -> None:
        if req.method == "POST":
            self._post(req, principal, now)
        elif req.method == "GET":
            self._get(req, principal, now)
        elif req.method == "DELETE":
            self._delete(req, principal, now)
        else:
            self.http.respond(req.exchange, 405, [("allow", "GET, POST, DELETE")], now=now)

    def _post(self, req: RequestReceived, principal: Principal | None, now: float) -> None:
        wants_json, wants_sse = accepts(req.header("accept"))
        if not wants_json and not wants_sse:
            self._plain(req, 406, "Not Acceptable: accept application/json or text/event-stream", now)
            return
        content_type = (req.header("content-type") or "").partition(";")[0].strip().lower()
        if content_type != "application/json":
            self._plain(req, 415, "Unsupported Media Type: send application/json", now)
            return
        problem = invalid_utf8(req.body)
        if problem is not None:
            self._error(req, 400, None, jsonrpc.PARSE_ERROR, f"Parse error: {problem}", now)
            return
        try:
            peek = _peek(req.body)
        except (msgspec.DecodeError, RecursionError) as exc:
            parse = not isinstance(exc, msgspec.ValidationError | RecursionError)
            code = jsonrpc.PARSE_ERROR if parse else jsonrpc.INVALID_REQUEST
            self._error(req, 400, None, code, f"{'Parse error' if parse else 'Invalid request'}: {exc}", now)
            return
        rid = peek.id if isinstance(peek.id, int | str) else None
        if principal is not None and self._lacks_tool_scope(req, peek, principal, now):
            return
        meta = None if peek.params is None else peek.params.meta
        version = None if meta is None else meta.protocol_version
        session_id = req.header("mcp-session-id")
        if version is not None and isinstance(peek.method, str):
            self._post_modern(req, peek, rid, version, wants_json, wants_sse, principal, now)
        elif session_id is not None:
            legacy = self._find(session_id, now, principal)
            if legacy is None:
                self._error(req, 404, rid, _SESSION_NOT_FOUND, "Session not found", now)
                return
            header = req.header("mcp-protocol-version")
            if header is not None and header.strip() not in self.app.config.protocol_versions:
                # Any revision the server speaks passes (as the SDKs check it); an unknown one is refused.
                self._error(req, 400, rid, jsonrpc.INVALID_REQUEST,
                            f"Bad Request: unsupported MCP-Protocol-Version {header.strip()!r}", now)
                return
            self._route(req, legacy, peek, wants_json, wants_sse, principal, now)
        elif peek.method == "initialize" and rid is not None:
            peer = req.peer if principal is None else principal.identity  # who the session counts against
            refusal = self._make_room(peer, now)
            if refusal is not None:
                self._error(req, refusal[0], rid, jsonrpc.INTERNAL_ERROR, refusal[1], now)
                return
            self._route(req, self._new_session(peer, now, principal), peek, wants_json, wants_sse,
                        principal, now)
        elif (req.header("mcp-protocol-version") or "").strip() in self.app.config.modern_versions:
            message = "Invalid params: a request of this revision needs _meta with its protocol version"
            self._error(req, 400, rid, jsonrpc.INVALID_PARAMS, message, now)
        else:
            message = "Bad Request: no valid Mcp-Session-Id (send initialize first)"
            self._error(req, 400, rid, -32000, message, now)

    def _post_modern(self, req: RequestReceived, peek: _Peek, rid: int | str | None, version: str,
                     wants_json: bool, wants_sse: bool, principal: Principal | None, now: float) -> None:
        problem = self._header_problem(req, peek, version)
        if problem is not None:
            self._error(req, 400, rid, HEADER_MISMATCH, f"Header mismatch: {problem}", now)
            return
        self._route(req, None, peek, wants_json, wants_sse, principal, now)

    def _lacks_tool_scope(self, req: RequestReceived, peek: _Peek, principal: Principal, now: float) -> bool:
        """Refuse (403 ``insufficient_scope``) a call of a tool whose scopes the token lacks."""
        name = None if peek.params is None else peek.params.name
        called = peek.method == "tools/call" and isinstance(name, str)
        tool = self.app.registry.tools.get(name) if called and isinstance(name, str) else None
        refusal = None if tool is None or self.gate is None else self.gate.scope_check(principal, tool.scopes)
        if refusal is not None:
            self._refuse(req, refusal, now)
        return refusal is not None

    def _header_problem(self, req: RequestReceived, peek: _Peek, version: str) -> str | None:
        """Why the headers of a stateless-era message do not match its body, or ``None``."""
        header = req.header("mcp-protocol-version")
        if header is None:
            return "the MCP-Protocol-Version header is missing"
        if header.strip() != version:
            return f"MCP-Protocol-Version {header.strip()!r} differs from the request's {version!r}"
        rules = VERSIONS.get(version)
        if rules is None or not rules.standard_headers or peek.id is UNSET:
            return None  # an unsupported version is the session's to refuse; notifications carry none
        headers = dict(req.headers)
        params = peek.params or _PeekParams()
        method = peek.method
        assert isinstance(method, str)  # checked by the caller
        named = {"name": params.name, "uri": params.uri, "taskId": params.taskId}
        problem = standard_mismatch(method, named, headers)
        if problem is not None or method != "tools/call" or not isinstance(params.name, str):
            return problem
        tool = self.app.registry.tools.get(params.name)
        if tool is None or not tool.header_paths:
            return None
        arguments = msgspec.json.decode(params.arguments)  # a Raw span holds valid JSON
        return param_mismatch(tool.header_paths, arguments, headers)

    def _route(self, req: RequestReceived, legacy: Legacy | None, peek: _Peek, wants_json: bool,
               wants_sse: bool, principal: Principal | None, now: float) -> None:
        """Hand a message to its session, with this exchange as its channel."""
        ex = Exchange(req.exchange, legacy, wants_json, wants_sse)
        ex.request_id = peek.id if isinstance(peek.id, int | str) and isinstance(peek.method, str) else None
        self._exchanges[req.exchange] = ex
        if legacy is None:
            self.modern.receive_message(req.body, now, req.exchange, principal)
        else:
            self._touch(legacy, now)
            if peek.id is not UNSET and isinstance(peek.method, str) and peek.method != "initialize":
                legacy.used = True
            legacy.session.receive_message(req.body, now, req.exchange, principal)
            self._remember(legacy)
            if self.event_store.shared and (peek.method == "notifications/cancelled" or (
                    peek.id is not UNSET and not isinstance(peek.method, str))):
                self._append(legacy, INBOX_STREAM, req.body, False)  # for the worker it concerns
        if ex.mode is Mode.PENDING and (peek.id is UNSET or not isinstance(peek.method, str)):
            del self._exchanges[req.exchange]  # a notification or a response: accepted, no body
            self.http.respond(req.exchange, 202, self._headers(legacy), now=now)

    def _get(self, req: RequestReceived, principal: Principal | None, now: float) -> None:
        if not accepts(req.header("accept"))[1]:
            self._plain(req, 406, "Not Acceptable: the GET stream is text/event-stream", now)
            return
        session_id = req.header("mcp-session-id")
        if session_id is None:
            self.http.respond(req.exchange, 405, [("allow", "POST")], now=now)  # no GET stream statelessly
            return
        legacy = self._find(session_id, now, principal)
        if legacy is None:
            self._error(req, 404, None, _SESSION_NOT_FOUND, "Session not found", now)
            return
        self._touch(legacy, now)
        legacy.used = True
        last = req.header("last-event-id")
        if last is not None:
            self._resume(req, legacy, last.strip(), now)
            return
        if legacy.get_exchange is not None:
            self._plain(req, 409, "Conflict: this session already has a GET stream", now)
            return
        ex = Exchange(req.exchange, legacy, False, True)
        self._exchanges[req.exchange] = ex
        legacy.get_exchange = req.exchange
        legacy.stream_of[req.exchange] = 0
        self._start_sse(ex, legacy)

    def _resume(self, req: RequestReceived, legacy: Legacy, last: str, now: float) -> None:
        replay = self.event_store.replay(legacy.id, last)
        if replay is None:
            self._plain(req, 404, "Not Found: unknown Last-Event-ID", now)
            return
        stream, events = replay.stream, replay.events
        produced_here = any(legacy.stream_of.get(-1 if c.channel is None else c.channel) == stream
                            for c in legacy.session.calls.values())
        ex = Exchange(req.exchange, legacy, False, True)
        self._exchanges[req.exchange] = ex
        self.http.start_stream(req.exchange, 200, [*_SSE, *self._headers(legacy)])
        ex.mode = Mode.SSE
        for event_id, data in events:
            if data:
                self.http.send(req.exchange, sse_event(data, event_id))
        legacy.stream_of[req.exchange] = stream
        previous = legacy.live.get(stream)
        if previous is not None:  # a stale connection of the same stream: the new one takes over
            self._exchanges.pop(previous, None)
            self.http.abort(previous)
        legacy.live[stream] = req.exchange
        if stream == 0:
            legacy.get_exchange = req.exchange
        finished = replay.finished or stream in legacy.finished_streams
        if finished:
            self.http.end(req.exchange, now=now)
            self._exchanges.pop(req.exchange, None)
            legacy.live.pop(stream, None)
        elif self.event_store.shared and stream != 0 and not produced_here:
            # another worker runs the request: relay what it stores from here on
            self._following[legacy.id, stream] = events[-1][0] if events else last
            self._follow_request[legacy.id, stream] = replay.request_id

    def _delete(self, req: RequestReceived, principal: Principal | None, now: float) -> None:
        session_id = req.header("mcp-session-id")
        if session_id is None:
            self.http.respond(req.exchange, 405, [("allow", "POST")], now=now)
            return
        legacy = self._find(session_id, now, principal)
        if legacy is None:
            self._error(req, 404, None, _SESSION_NOT_FOUND, "Session not found", now)
            return
        self._end_session(legacy, now, "the client ended the session")
        self.http.respond(req.exchange, 200, [], now=now)

    def _closed(self, event: ExchangeClosed, now: float) -> None:
        ex = self._exchanges.pop(event.exchange, None)
        if ex is None:
            if self.gate is not None:  # perhaps a request waiting for its token's verdict
                self.gate.discard(lambda req: req.exchange == event.exchange)
            return
        legacy = ex.legacy
        if legacy is None:
            self.modern.cancel_channel(ex.id, now, event.reason)
            return
        if legacy.get_exchange == ex.id:
            legacy.get_exchange = None
        stream = legacy.stream_of.get(ex.id)
        if stream is not None and legacy.live.get(stream) == ex.id:
            del legacy.live[stream]
            self._following.pop((legacy.id, stream), None)
            self._follow_request.pop((legacy.id, stream), None)

    # ------------------------------------------------------------ responses

    def _emit(self, ex: Exchange, data: bytes, legacy: Legacy | None, status: int, now: float | None) -> None:
        """Write one message on ``ex`` (the response that ends it when ``now`` is given):
        as its JSON body, or as an SSE event."""
        mode = self.config.response_mode
        if now is not None:
            self._now = now
        if ex.mode is Mode.PENDING:
            if now is not None and ex.wants_json and (mode != "sse" or not ex.wants_sse):
                del self._exchanges[ex.id]
                ex.mode = Mode.DONE
                self.http.respond(ex.id, status, [_JSON, *self._headers(legacy)], data, now=now)
                return
            if now is None and (not ex.wants_sse or mode == "json"):
                if legacy is not None:
                    self.legacy_send(legacy, None, data, False, status, None)  # the GET stream takes it
                return  # no stream to carry a stateless notification: dropped
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

    def _stream_done(self, legacy: Legacy, stream: int) -> None:
        """``stream`` carried its final response: forget its routing, remember (boundedly)
        that a resumption of it ends after the replay."""
        legacy.live.pop(stream, None)
        for channel in [c for c, s in legacy.stream_of.items() if s == stream]:
            del legacy.stream_of[channel]
        legacy.finished_streams[stream] = None
        if len(legacy.finished_streams) > _FINISHED_STREAMS:
            legacy.finished_streams.popitem(last=False)

    def _start_sse(self, ex: Exchange, legacy: Legacy | None) -> None:
        """Open ``ex`` as an SSE stream; a handshake-era stream is resumable: it gets a
        stream number and begins with a priming event (an id, the retry hint, no data)."""
        self.http.start_stream(ex.id, 200, [*_SSE, *self._headers(legacy)])
        ex.mode = Mode.SSE
        if legacy is None:
            return
        stream = legacy.stream_of.get(ex.id)
        if stream is None:
            legacy.next_stream += 1
            stream = legacy.stream_of[ex.id] = legacy.next_stream
        legacy.live[stream] = ex.id
        priming = self._append(legacy, stream, b"", False, ex.request_id)
        if priming is not None:
            self.http.send(ex.id, f"id: {priming}\nretry: {self.config.sse_retry_ms}\ndata: \n\n".encode())

    def _append(self, legacy: Legacy, stream: int, data: bytes, final: bool,
                request_id: int | str | None = None) -> str | None:
        """Keep an event for resumption; its id, or ``None`` when the store failed (the
        event is still sent, without an id: that stream cannot be resumed past it)."""
        try:
            event_id = self.event_store.append(legacy.id, stream, data, final, request_id)
        except StoreUnavailable:
            return None
        if self.event_store.shared and legacy.inbox_after is None and stream != INBOX_STREAM:
            legacy.inbox_after = event_id  # the client's answers to what we send come after it
            self._inboxes[legacy.id] = None
        return event_id

    def _headers(self, legacy: Legacy | None) -> list[Header]:
        return [] if legacy is None else [("mcp-session-id", legacy.id)]

    def _plain(self, req: RequestReceived, status: int, text: str, now: float) -> None:
        self.http.respond(req.exchange, status, [("content-type", "text/plain; charset=utf-8")],
                          text.encode() + b"\n", now=now)

    def _error(self, req: RequestReceived, status: int, rid: int | str | None, code: int, message: str,
               now: float) -> None:
        self.http.respond(req.exchange, status, [_JSON], jsonrpc.encode_error(rid, code, message), now=now)

    # ------------------------------------------------------------ sessions

    def _new_session(self, peer: str | None, now: float, principal: Principal | None) -> Legacy:
        session_id = self.new_id("session")
        legacy = Legacy(session_id, now + self.config.session_idle_timeout, peer)
        legacy.owner = None if principal is None else principal.identity
        legacy.next_stream = self._stream_base
        legacy.host = LegacyHost(self, legacy)
        legacy.session = ServerSession(self.app, legacy.host, first_request_id=self._stream_base)
        legacy.session.session_id = session_id
        self._legacy[session_id] = legacy
        self._peer_sessions[peer] += 1
        return legacy

    def _touch(self, legacy: Legacy, now: float) -> None:
        """``legacy`` served a request: it expires later and is the most recently active."""
        legacy.expires_at = now + self.config.session_idle_timeout
        self._legacy.move_to_end(legacy.id)

    def _make_room(self, peer: str | None, now: float) -> tuple[int, str] | None:
        """Make room for a new session of ``peer``: end an idle session if the peer's or the
        server's limit is reached; the status and message to refuse with when none can go."""
        config = self.config
        if self._peer_sessions[peer] >= config.max_sessions_per_peer:
            victim = self._idle_session(lambda s: s.peer == peer and not s.used) or self._idle_session(
                lambda s: s.peer == peer)
            if victim is None:
                return 429, "Too Many Requests: this client holds too many sessions; end some (DELETE)"
            # (with a shared store only this worker's copy: it may be busy at another worker)
            self._end_session(victim, now, "its client opened too many sessions",
                              forget=not self.session_store.shared)
        elif len(self._legacy) >= config.max_sessions:
            victim = self._idle_session(lambda s: not s.used)
            if victim is None:
                return 503, "Service Unavailable: too many sessions"
            self._end_session(victim, now, "the server needed room for a new session",
                              forget=not self.session_store.shared)
        return None

    def _idle_session(self, which: Callable[[Legacy], bool]) -> Legacy | None:
        """The least recently active session ``which`` accepts that is idle (no request
        running, no stream open), or ``None``."""
        for legacy in self._legacy.values():
            if which(legacy) and not legacy.live and legacy.get_exchange is None and not legacy.session.calls:
                return legacy
        return None

    def _find(self, session_id: str, now: float, principal: Principal | None) -> Legacy | None:
        """The live session ``session_id``, or one rebuilt from the session store; ``None``
        also when the server checks tokens and the session belongs to another principal
        (as if it did not exist: 404, as the official SDK answers)."""
        owner = None if principal is None else principal.identity
        legacy = self._legacy.get(session_id)
        if legacy is not None:
            if legacy.owner != owner:
                return None
            if self.session_store.shared and not self.session_store.touch(session_id):
                self._end_session(legacy, now, "the session ended", forget=False)  # by another worker
                return None
            return legacy
        record = self.session_store.load(session_id)
        if record is None or record.owner != owner or self._make_room(None, now) is not None:
            return None
        legacy = Legacy(session_id, now + self.config.session_idle_timeout, None)
        legacy.used = True
        legacy.owner = owner
        legacy.next_stream = self._stream_base
        legacy.host = LegacyHost(self, legacy)
        session = legacy.session = ServerSession(self.app, legacy.host, first_request_id=self._stream_base)
        session.session_id = session_id
        session.phase = Phase.READY
        session.protocol_version = record.protocol_version
        session.rules = VERSIONS.get(record.protocol_version)
        session.client_info, session.client_capabilities = record.client_info, record.client_capabilities
        session.log_level, session.subscriptions = record.log_level, set(record.subscriptions)
        legacy.saved = record
        self._legacy[session_id] = legacy
        self._peer_sessions[None] += 1
        return legacy

    def _remember(self, legacy: Legacy) -> None:
        """Keep the session's identity in the store when it changed."""
        session = legacy.session
        if session.protocol_version is None or session.client_info is None:
            return
        record = SessionRecord(
            session_id=legacy.id, protocol_version=session.protocol_version, client_info=session.client_info,
            client_capabilities=session.client_capabilities, log_level=session.log_level,
            subscriptions=sorted(session.subscriptions), owner=legacy.owner,
        )
        if record != legacy.saved:
            try:
                self.session_store.save(record)
            except StoreUnavailable:
                return  # served here all the same; the next request tries again
            legacy.saved = record

    def _end_session(self, legacy: Legacy, now: float, reason: str, *, forget: bool = True) -> None:
        """End ``legacy`` here; ``forget``: in the stores too (else other workers go on
        serving it, and a shared store's TTL ends it)."""
        del self._legacy[legacy.id]
        self._timed.discard(legacy.session)
        self._peer_sessions[legacy.peer] -= 1
        if not self._peer_sessions[legacy.peer]:
            del self._peer_sessions[legacy.peer]
        legacy.session.close(now, reason)
        for key in [k for k in self._following if k[0] == legacy.id]:
            del self._following[key]
            self._follow_request.pop(key, None)
        self._inboxes.pop(legacy.id, None)
        if forget:
            try:
                self.session_store.delete(legacy.id)
                self.event_store.forget(legacy.id)
            except StoreUnavailable:
                pass  # a shared store's TTL forgets it
        for exchange in [e for e, ex in self._exchanges.items() if ex.legacy is legacy]:
            del self._exchanges[exchange]
            self.http.abort(exchange)
