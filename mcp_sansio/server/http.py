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

Layers, each holding its own state: ``http_respond.ResponseWriter`` (the exchange table
and what is written into it), ``http_sessions.SessionRouter`` (the handshake-era session
table, resumption, relays), and here the driver's side and the requests. No clock is
kept: every input carries ``now``, a response that lets in a request sent early acts on
it at that response's ``now``, and a stream a write had to drop (a write carries no
time) asks for a timeout at once (``flow.AT_ONCE``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .. import jsonrpc
from ..errors import LocalProtocolError
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
from .exchanges import HttpExchanges
from .flow import AT_ONCE
from .http11 import CloseConnection, ExchangeClosed, HttpConnections, RequestReceived
from .http_config import HttpConfig
from .http_headers import (
    accepts,
    host_allowed,
    origin_allowed,
    param_mismatch,
    repeated_header,
    single_headers,
    standard_mismatch,
)
from .http_respond import JSON
from .http_sessions import SessionRouter
from .http_streams import Exchange, Legacy, Mode
from .session import ServerSession, invalid_utf8
from .stores import (
    INBOX_STREAM,
    EventStore,
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
_SESSION_NOT_FOUND: Final = -32001
_STORE_UNAVAILABLE: Final = b"Service Unavailable: the session store did not answer; try again\n"
_ADMISSIONS: Final = 1024  # (Host, Origin) verdicts remembered
_FINISHED_STREAMS: Final = 1024
_GATED: Final = frozenset({"authorization"})


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


class HttpServer(SessionRouter):
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
        super().__init__(app, secret=secret, entropy=entropy, wall_offset=wall_offset, config=config,
                         sessions=sessions, events=events, exchanges=exchanges)
        self.modern = ServerSession(app, self, channel_ids=True)
        if tasks is not None:
            self.modern.share_tasks(tasks)
        self._peers: dict[int, str | None] = {}  # open connection -> its peer
        self._peer_connections: Counter[str | None] = Counter()
        self._pumping = False  # in _pump: a response sent meanwhile leaves the next request to it
        self._hosts = None if self.config.allowed_hosts is None else frozenset(
            name.lower() for name in self.config.allowed_hosts)
        self._admission: dict[tuple[str | None, str | None], int] = {}  # (Host, Origin) -> 0 or a status
        self._accepted: dict[str | None, tuple[bool, bool]] = {}  # Accept -> (JSON, SSE)
        auth = app.auth
        self.gate: AuthGate[RequestReceived] | None = None
        """The bearer check (``None``: the app has no ``auth``)."""
        self._metadata_paths: frozenset[str] = frozenset()
        if auth is not None:
            self.gate = AuthGate(auth, app.registry, wall_offset, self.new_ticket, self.emit)
            self._metadata_paths = protected_resource_paths(auth, self.config.path)

    # ------------------------------------------------------------ driver: connections

    def connection_made(self, now: float, peer: str | None = None, *, sending: bool = False) -> int:
        """A client connected from ``peer`` (its address, if known); its connection id.
        ``sending``: the driver saw bytes of it waiting already (a request arriving: never
        closed for being idle, as a client that connects and sends at once would be when
        connections accepted after it are counted before its bytes are read).

        Past ``max_connections_per_peer`` the peer's own idle connection is closed, past
        ``max_connections`` the idle one of the peer holding the most or, when it has none
        idle and the new connection is another client's, its request still arriving
        closest to its deadline (a slowloris flood locks nobody else out); else the new
        connection is closed at once. A request being answered is never cut.

        Actions: ``CloseConnection``.
        """
        wire = self._bytes()
        conn = wire.connection_made(now, peer, sending=sending)
        self._peers[conn] = peer
        self._peer_connections[peer] += 1
        config = self.config
        if self._peer_connections[peer] > config.max_connections_per_peer:
            among: list[int] = [c for c, p in self._peers.items() if p == peer and c != conn]
            arriving = False
        elif len(self._peers) > config.max_connections:
            heaviest = max(self._peer_connections, key=lambda p: self._peer_connections[p])
            among = [c for c, p in self._peers.items() if p == heaviest and c != conn]
            arriving = heaviest != peer
        else:
            return conn
        wire.close(wire.idle_connection(among, arriving=arriving) or conn)
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
        http = self.http
        if http.has_events():  # a stream dropped while written to: acted on at the driver's time
            return AT_ONCE
        earliest = super().next_deadline()
        if self._legacy:  # least recently active first: the first expires first
            expires = next(iter(self._legacy.values())).expires_at
            earliest = expires if earliest is None or expires < earliest else earliest
        for deadline in (http.next_deadline(), None if self.gate is None else self.gate.next_deadline(),
                         self._unstored_deadline()):
            if deadline is not None and (earliest is None or deadline < earliest):
                earliest = deadline
        return earliest

    def handle_timeout(self, now: float) -> None:
        """Fire what is due: slow requests (408), idle sessions, unanswered questions,
        overdue token verdicts (503), streams dropped since the last input, and events of
        broken streams the store did not take, offered again."""
        self.http.handle_timeout(now)
        if self.gate is not None:
            for req, refusal in self.gate.handle_timeout(now):
                self._refuse(req, refusal, now)
        while self._legacy and (legacy := next(iter(self._legacy.values()))).expires_at <= now:
            self._end_session(legacy, now, "the session expired", forget=not self.session_store.shared)
        super().handle_timeout(now)
        self._store_unstored(now)
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

    def close_sse_stream(self, call: int, *, now: float) -> bool:
        """End the SSE stream of a handshake-era ``call`` now (SSE polling, SEP-1699): the
        client reconnects with ``Last-Event-ID`` and gets the rest; ``False`` if the call
        has no resumable stream to end."""
        session = self._calls.get(call)
        sid = None if session is None else session.handshake.session_id
        legacy = None if sid is None else self._legacy.get(sid)
        if legacy is None or session is None or legacy.session is not session:
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

    def receive_task_messages(self, messages: list[TaskMessage], now: float) -> None:
        """Answers and cancellations other workers passed (through the shared task store)
        to the tasks running here: the driver takes them with ``TaskStore.task_messages``
        off its loop while :meth:`runs_tasks` says so."""
        run_tasks.receive_messages(self.modern, messages, now)
        self._pump(now)

    def runs_tasks(self) -> bool:
        """Whether a task runs here whose messages a shared task store may carry."""
        return self.modern.task_store is not None and run_tasks.running(self.modern)

    # ------------------------------------------------------------ requests

    def _pump(self, now: float) -> None:
        """Act on what the HTTP layer has (after every input that carries the time: a
        stream dropped by a write that does not waits for the next, see ``next_deadline``)."""
        if self._pumping:  # a response sent while acting: the loop below takes what it let in
            return
        self._pumping = True
        try:
            http = self.http
            while (event := http.next_event()) is not None:
                if isinstance(event, RequestReceived):
                    self._request(event, now)
                else:
                    self._closed(event, now)
        finally:
            self._pumping = False

    def _request(self, req: RequestReceived, now: float) -> None:
        config = self.config
        path = req.target.partition("?")[0]
        headers = dict(req.headers)
        if len(headers) != len(req.headers):  # a header repeated: ambiguous, or a list to join
            # with a gate, two Authorization fields get its RFC 6750 invalid_request challenge
            repeated = repeated_header(req.headers, _GATED if self.gate is not None else frozenset())
            if repeated is not None:
                self._repeated(req, repeated, now)
                return
            headers = single_headers(req.headers)
        if path != config.path and path not in self._metadata_paths:
            self._plain(req, 404, "Not Found", now)
            return
        host = headers.get("host")
        verdict = self._admit_origin(host, None if path != config.path else headers.get("origin"))
        if verdict == 421:
            self._plain(req, 421, "Misdirected Request: the Host header names another server", now)
        elif path != config.path:
            self._metadata(req, now)
        elif verdict == 403:
            self._error(req, 403, None, jsonrpc.INVALID_REQUEST, "Forbidden: the Origin is not allowed", now)
        elif self.gate is None:
            self._guarded(req, None, now, headers)
        else:
            credentials = [value for name, value in req.headers if name == "authorization"]
            outcome = self.gate.check(credentials, req, now)
            if outcome is not None:  # else held until its token's verdict
                self._admit(req, outcome, now)

    def _repeated(self, req: RequestReceived, name: str, now: float) -> None:
        """Refuse a request carrying ``name`` more than once: 403 for ``Origin`` (MCP
        "Streamable HTTP": an invalid Origin gets 403), 400 for any other."""
        label = "-".join(part.capitalize() for part in name.split("-"))
        if name == "origin":
            self._error(req, 403, None, jsonrpc.INVALID_REQUEST,
                        "Forbidden: the Origin header is repeated", now)
        else:
            self._error(req, 400, None, jsonrpc.INVALID_REQUEST,
                        f"Bad Request: the {label} header is repeated", now)

    def _admit_origin(self, host: str | None, origin: str | None) -> int:
        """0 when ``Host`` and ``Origin`` pass, else the status refusing them (421: the
        host, 403: the origin); remembered per pair (boundedly): a client sends the same
        ones on every request."""
        key = (host, origin)
        verdict = self._admission.get(key)
        if verdict is None:
            config = self.config
            if not host_allowed(host, self._hosts):
                verdict = 421
            elif not origin_allowed(origin, config.allowed_origins, host=host,
                                    host_checked=config.allowed_hosts is not None):
                verdict = 403
            else:
                verdict = 0
            if len(self._admission) >= _ADMISSIONS:
                self._admission.clear()
            self._admission[key] = verdict
        return verdict

    def _accepts(self, accept: str | None) -> tuple[bool, bool]:
        """``accepts(accept)``, remembered per value (boundedly)."""
        found = self._accepted.get(accept)
        if found is None:
            if len(self._accepted) >= _ADMISSIONS:
                self._accepted.clear()
            found = self._accepted[accept] = accepts(accept)
        return found

    def _metadata(self, req: RequestReceived, now: float) -> None:
        """The protected resource metadata (RFC 9728), public: no token, any origin."""
        gate = self.gate
        assert gate is not None  # only a gate makes metadata paths (both are set at construction)
        if req.method != "GET":
            self.http.respond(req.exchange, 405, [("allow", "GET")], now=now)
            return
        body = protected_resource_metadata(gate.settings, self.app.registry)
        headers = [JSON, ("access-control-allow-origin", "*"), ("cache-control", "max-age=300")]
        self.http.respond(req.exchange, 200, headers, body, now=now)

    def _admit(self, req: RequestReceived, outcome: Allowed | Refusal, now: float) -> None:
        if isinstance(outcome, Refusal):
            self._refuse(req, outcome, now)
        else:
            self._guarded(req, outcome.principal, now)

    def _refuse(self, req: RequestReceived, refusal: Refusal, now: float) -> None:
        self.http.respond(req.exchange, refusal.status, list(refusal.headers), refusal.body, now=now)

    def _guarded(self, req: RequestReceived, principal: Principal | None, now: float,
                 headers: dict[str, str] | None = None) -> None:
        try:
            self._dispatch(req, single_headers(req.headers) if headers is None else headers, principal, now)
        except StoreUnavailable:  # from a session lookup or a replay: nothing was answered yet
            # the client learns the cause, not the store's address or words (the store logs those)
            self.http.respond(req.exchange, 503, [("content-type", "text/plain; charset=utf-8"),
                                                  ("retry-after", "1")], _STORE_UNAVAILABLE, now=now)

    def _dispatch(self, req: RequestReceived, headers: dict[str, str], principal: Principal | None,
                  now: float) -> None:
        if req.method == "POST":
            self._post(req, headers, principal, now)
        elif req.method == "GET":
            self._get(req, headers, principal, now)
        elif req.method == "DELETE":
            self._delete(req, headers, principal, now)
        else:
            self.http.respond(req.exchange, 405, [("allow", "GET, POST, DELETE")], now=now)

    def _post(self, req: RequestReceived, headers: dict[str, str], principal: Principal | None,
              now: float) -> None:
        wants_json, wants_sse = self._accepts(headers.get("accept"))
        if not wants_json and not wants_sse:
            self._plain(req, 406, "Not Acceptable: accept application/json or text/event-stream", now)
            return
        content_type = headers.get("content-type")
        if content_type != "application/json" and (
                (content_type or "").partition(";")[0].strip().lower() != "application/json"):
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
        session_id = headers.get("mcp-session-id")
        if version is not None and isinstance(peek.method, str):
            self._post_modern(req, headers, peek, rid, version, wants_json, wants_sse, principal, now)
        elif session_id is not None:
            legacy = self._find(session_id, now, principal)
            if legacy is None:
                self._error(req, 404, rid, _SESSION_NOT_FOUND, "Session not found", now)
                return
            header = headers.get("mcp-protocol-version")
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
        elif (headers.get("mcp-protocol-version") or "").strip() in self.app.config.modern_versions:
            message = "Invalid params: a request of this revision needs _meta with its protocol version"
            self._error(req, 400, rid, jsonrpc.INVALID_PARAMS, message, now)
        else:
            message = "Bad Request: no valid Mcp-Session-Id (send initialize first)"
            self._error(req, 400, rid, -32000, message, now)

    def _post_modern(self, req: RequestReceived, headers: dict[str, str], peek: _Peek, rid: int | str | None,
                     version: str, wants_json: bool, wants_sse: bool, principal: Principal | None,
                     now: float) -> None:
        problem = self._header_problem(headers, peek, version)
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

    def _header_problem(self, headers: dict[str, str], peek: _Peek, version: str) -> str | None:
        """Why the headers of a stateless-era message do not match its body, or ``None``."""
        header = headers.get("mcp-protocol-version")
        if header is None:
            return "the MCP-Protocol-Version header is missing"
        if header.strip() != version:
            return f"MCP-Protocol-Version {header.strip()!r} differs from the request's {version!r}"
        rules = VERSIONS.get(version)
        if rules is None or not rules.standard_headers or peek.id is UNSET:
            return None  # an unsupported version is the session's to refuse; notifications carry none
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
            self.modern.receive_message(req.body, now, req.exchange, principal, utf8_checked=True)
        else:
            self._touch(legacy, now)
            if peek.id is not UNSET and isinstance(peek.method, str) and peek.method != "initialize":
                legacy.used = True
            legacy.session.receive_message(req.body, now, req.exchange, principal, utf8_checked=True)
            self._remember(legacy)
            if self.event_store.shared and (peek.method == "notifications/cancelled" or (
                    peek.id is not UNSET and not isinstance(peek.method, str))):
                self._append(legacy, INBOX_STREAM, req.body, False)  # for the worker it concerns
        if ex.mode is Mode.PENDING and (peek.id is UNSET or not isinstance(peek.method, str)):
            del self._exchanges[req.exchange]  # a notification or a response: accepted, no body
            self.http.respond(req.exchange, 202, self._headers(legacy), now=now)

    def _get(self, req: RequestReceived, headers: dict[str, str], principal: Principal | None,
             now: float) -> None:
        if not self._accepts(headers.get("accept"))[1]:
            self._plain(req, 406, "Not Acceptable: the GET stream is text/event-stream", now)
            return
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            self.http.respond(req.exchange, 405, [("allow", "POST")], now=now)  # no GET stream statelessly
            return
        legacy = self._find(session_id, now, principal)
        if legacy is None:
            self._error(req, 404, None, _SESSION_NOT_FOUND, "Session not found", now)
            return
        self._touch(legacy, now)
        legacy.used = True
        last = headers.get("last-event-id")
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

    def _delete(self, req: RequestReceived, headers: dict[str, str], principal: Principal | None,
                now: float) -> None:
        session_id = headers.get("mcp-session-id")
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
