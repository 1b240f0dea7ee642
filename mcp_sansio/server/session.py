"""The server side of one MCP conversation, in both eras; transport-agnostic.

``ServerSession`` takes JSON-RPC messages (one JSON text each) tagged with the channel
they came on, answers what needs no user code itself (``initialize``, lists, ``ping``,
``server/discover``, static resources, subscriptions, ...) and turns the rest into events
for the driver. Each request picks its era: ``_meta`` naming a protocol version makes it a
stateless 2026-07-28 request, served on its own; anything else belongs to the handshake
era and needs ``initialize`` first (MCP "Lifecycle"; 2026-07-28 "Versioning"). Outgoing
messages go to the host (:class:`~mcp_sansio.server.endpoint.Endpoint`) with the channel
they relate to. The per-method logic lives in ``methods.py``; legality is the tables here.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

import msgspec
from msgspec import Raw

from .. import jsonrpc
from ..errors import LocalProtocolError, RequestError
from ..events import (
    ConnectionTerminated,
    DiscardReason,
    FailureReason,
    MessageDiscarded,
    NotificationReceived,
    RequestId,
)
from ..jsonrpc import Envelope, Kind
from ..modern import MISSING_CLIENT_CAPABILITY, SERVER_INFO_KEY, UNSUPPORTED_PROTOCOL_VERSION
from ..types import NOTIFICATION_PARAMS, LoggingLevel
from ..versions import LATEST_VERSION, VERSIONS, VersionRules
from . import methods, replies, tasks
from .authz import Principal
from .calls import Call, CallKind
from .context import Answered, AnswerPending, Ask, AskOutcome, ClientCapabilityMissing, Deferred, ToolError
from .deadlines import Deadlines
from .events import (
    AnswerFailed,
    CallCancelled,
    CallOutcome,
    RequestAnswered,
)
from .handshake import Handshake
from .phases import Phase, Trigger
from .questions import Questions, answer_event
from .results import completion_result, error_tool_result, prompt_result, read_result, tool_result
from .stores import StoreUnavailable
from .tasks import MAX_TASK_ENDS, TASK_END_RETRY, TaskEnd, TaskRecord
from .wire import CancelParams, Params, RequestMeta

if TYPE_CHECKING:
    from .app import MCPServer
    from .endpoint import ListKind, SessionHost
    from .stores import TaskStore

__all__ = ["Phase", "ServerSession", "Trigger"]

_log = logging.getLogger(__name__)


# Handshake-era requests each phase accepts (the stateless era needs no phase). Before
# initialize only ping (MCP "Lifecycle": nothing else until the client initialized);
# a second initialize is refused. Requests after initialize but before the client's
# notifications/initialized are served: clients pipeline them, and refusing gains nothing.
_LEGACY_BEFORE_INIT: Final = frozenset({"initialize", "ping"})
_LOG_ORDER: Final[Mapping[str, int]] = {
    name: i for i, name in
    enumerate(("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"))
}
_CANCEL_DECODER: Final = msgspec.json.Decoder(CancelParams)
_UNKNOWN: Final = methods.MethodSpec(msgspec.json.Decoder(Params), None, None)


class ServerSession:
    """One client's conversation with the server: handshake-era state and in-flight calls.

    Its state is private: the other modules read it through read-only views and change
    it only through the methods that move it (``handshake.initialize``, ``listen``,
    ``add_task``, ...).

    Args:
        app: what the server offers (and its :class:`ServerConfig`).
        host: the transport; it allocates call handles and carries messages and events.
        channel_ids: JSON-RPC ids are unique per channel rather than per session (the
            shared session of stateless HTTP requests, where every POST is a channel).
        first_request_id: our requests to the client are numbered after it (workers
            sharing a session number theirs apart).
        session_id: the ``Mcp-Session-Id`` of a handshake-era HTTP session.
    """

    def __init__(self, app: MCPServer, host: SessionHost, *, channel_ids: bool = False,
                 first_request_id: int = 0, session_id: str | None = None) -> None:
        self.app: Final = app
        self.config: Final = app.config
        self.host: Final = host
        self.handshake: Final = Handshake(session_id)
        """The handshake era's state: phase, negotiated revision, client, log level, subscriptions."""
        self._listens: dict[tuple[int | None, RequestId], methods.Listen] = {}
        self._calls: dict[int, Call] = {}
        self._tasks: dict[str, tasks.TaskRecord] = {}
        self._task_expiries: Deadlines[str] = Deadlines()
        self._task_store: TaskStore | None = None
        self._task_ends: deque[TaskEnd] = deque()  # ends the task store did not take, oldest first
        self._task_ends_at: float | None = None  # when they are offered to it again
        self._by_key: dict[tuple[int | None, RequestId], int] = {}
        self._channel_ids = channel_ids
        self._questions = Questions(first_request_id)
        self._server_meta: Final = {SERVER_INFO_KEY: msgspec.to_builtins(app.info)}

    # ---------------------------------------------------------------- state (read-only views)

    @property
    def listens(self) -> Mapping[tuple[int | None, RequestId], methods.Listen]:
        """The open ``subscriptions/listen`` streams, by (channel, request id)."""
        return self._listens

    @property
    def calls(self) -> Mapping[int, Call]:
        """The calls in flight, by handle."""
        return self._calls

    @property
    def task_store(self) -> TaskStore | None:
        """Where tasks are shared with other workers (``None``: in :attr:`tasks` only)."""
        return self._task_store

    @property
    def tasks(self) -> Mapping[str, TaskRecord]:
        """The tasks of this session, by id."""
        return self._tasks

    # ---------------------------------------------------------------- state transitions

    def listen(self, key: tuple[int | None, RequestId], listen: methods.Listen) -> None:
        """A ``subscriptions/listen`` stream opened under ``key``."""
        self._listens[key] = listen

    def share_tasks(self, store: TaskStore) -> None:
        """Keep this session's tasks in ``store``, shared with the other workers."""
        self._task_store = store

    def add_task(self, task: TaskRecord) -> None:
        """``task`` lives in this session now."""
        self._tasks[task.task_id] = task
        self._task_expiries.set(task.task_id, task.expires_at)

    def drop_task(self, task_id: str) -> None:
        """Forget the task ``task_id``."""
        del self._tasks[task_id]
        self._task_expiries.set(task_id, None)

    def keep_task_end(self, end: TaskEnd, retry_at: float) -> None:
        """A task's end the task store did not take: offered to it again from ``retry_at``
        until it does (at most ``MAX_TASK_ENDS`` kept: the oldest go), so that the task
        does not look ``working`` at every other worker until its TTL."""
        self._task_ends.append(end)
        if len(self._task_ends) > MAX_TASK_ENDS:
            self._task_ends.popleft()
        if self._task_ends_at is None:
            self._task_ends_at = retry_at
        self.timed()

    def _store_task_ends(self, now: float) -> None:
        store = self._task_store
        while self._task_ends and store is not None:
            task_id, status, wall, result, error = self._task_ends[0]
            try:
                store.end_task(task_id, status, wall, result=result, error=error)
            except StoreUnavailable:
                self._task_ends_at = now + TASK_END_RETRY
                return
            self._task_ends.popleft()
        self._task_ends.clear()
        self._task_ends_at = None

    # ---------------------------------------------------------------- input

    def receive_message(self, data: bytes, now: float, channel: int | None = None,
                        principal: Principal | None = None, *, utf8_checked: bool = False) -> None:
        """One JSON-RPC message (or batch) from the client, on ``channel``, on behalf of
        ``principal`` (the verified access token's, when the transport checks them);
        ``utf8_checked``: the transport found ``data`` valid UTF-8 already.

        Raises:
            LocalProtocolError: the session is closed.

        Events: ``HandlerCallReceived`` subclasses, ``CallCancelled``, ``AnswerReceived``,
        ``AnswerFailed``, ``ClientInitialized``, ``ResourceSubscribed``,
        ``ResourceUnsubscribed``, ``NotificationReceived``, ``MessageDiscarded``.
        """
        if self.handshake.phase is Phase.CLOSED:
            raise LocalProtocolError("the session is closed")
        problem = None if utf8_checked else invalid_utf8(data)
        if problem is not None:  # JSON text is UTF-8 (RFC 8259 section 8.1); the envelope's
            # decoder leaves params unread (Raw), so the whole message is checked here
            self.error(channel, None, jsonrpc.PARSE_ERROR, f"Parse error: {problem}", now=now)
            discarded = MessageDiscarded(reason=DiscardReason.NOT_JSON, detail=problem, excerpt=data[:200])
            self.host.emit(discarded)
            return
        try:
            decoded = jsonrpc.decode(data)
        except (msgspec.DecodeError, RecursionError) as exc:
            if isinstance(exc, msgspec.ValidationError | RecursionError):  # JSON, not an envelope
                code, reason, what = jsonrpc.INVALID_REQUEST, DiscardReason.NOT_JSON_RPC, "Invalid request"
            else:
                code, reason, what = jsonrpc.PARSE_ERROR, DiscardReason.NOT_JSON, "Parse error"
            self.error(channel, None, code, f"{what}: {exc}", now=now)
            self.host.emit(MessageDiscarded(reason=reason, detail=str(exc), excerpt=data[:200]))
            return
        if isinstance(decoded, list):
            # No MCP revision this server speaks lets a client batch requests to a server
            # that did not offer it (2025-03-26 allowed it; 2025-06-18 removed it).
            message = "Invalid request: batches are not supported"
            self.error(channel, None, jsonrpc.INVALID_REQUEST, message, now=now)
            self.host.emit(MessageDiscarded(reason=DiscardReason.BATCH_NOT_ALLOWED, detail=message,
                                            excerpt=data[:200]))
            return
        kind = jsonrpc.classify(decoded)
        if kind is Kind.REQUEST:
            self._on_request(decoded, now, channel, principal)
        elif kind is Kind.NOTIFICATION:
            self._on_notification(decoded, now, channel)
        elif kind is Kind.INVALID:
            rid = decoded.id if isinstance(decoded.id, int | str) else None
            self.error(channel, rid, jsonrpc.INVALID_REQUEST, "Invalid request", now=now)
            self.host.emit(MessageDiscarded(reason=DiscardReason.NOT_JSON_RPC,
                                            detail="not a JSON-RPC message", excerpt=data[:200]))
        else:
            self._on_response(decoded, now)

    def cancel_channel(self, channel: int, now: float, reason: str = "the stream closed") -> None:
        """``channel`` ended (an HTTP response stream closed): in the stateless era that
        cancels its requests (2026-07-28 "Cancellation"); its subscriptions end.

        Events: ``CallCancelled`` for each call on it.
        """
        for call in [c.call for c in self._calls.values() if c.channel == channel]:
            self._cancel(call, reason)
        for key in [k for k, listen in self._listens.items() if listen.channel == channel]:
            del self._listens[key]

    def close(self, now: float, message: str = "the client disconnected") -> None:
        """The connection is gone: every call is cancelled, every question fails.

        Events: ``CallCancelled``, ``AnswerFailed``, then ``ConnectionTerminated``.
        """
        if self.handshake.phase is Phase.CLOSED:
            return
        for call in list(self._calls):
            self._cancel(call, message)
        for rid in self._questions.ids():
            self._fail_outbound(rid, FailureReason.CONNECTION_LOST, message)
        self._listens.clear()
        self._tasks.clear()  # they lived in this connection
        self._task_expiries = Deadlines()
        self.handshake.advance(Trigger.CLOSE)
        self.host.emit(ConnectionTerminated(reason=FailureReason.CONNECTION_LOST, message=message,
                                            session_id=self.handshake.session_id))

    def handle_timeout(self, now: float) -> None:
        """Fail the questions to the client whose deadline passed (and tell the client).

        Events: ``AnswerFailed`` with reason ``TIMEOUT``.
        """
        for rid in self._questions.due(now):
            self._send_cancel(rid, "timed out")
            self._fail_outbound(rid, FailureReason.TIMEOUT, "the client did not answer in time")
        if self._tasks:
            tasks.expire(self, now)
        if self._task_ends_at is not None and now >= self._task_ends_at:
            self._store_task_ends(now)

    def next_deadline(self) -> float | None:
        """When the first question to the client times out, a task expires, or the task
        ends the store did not take are offered again; changes nothing."""
        earliest = None
        for deadline in (self._questions.next_deadline(), self._task_expiries.first(), self._task_ends_at):
            if deadline is not None and (earliest is None or deadline < earliest):
                earliest = deadline
        return earliest

    # ---------------------------------------------------------------- answers from the driver

    def respond(self, call: int, value: object, *, now: float) -> CallOutcome:
        """Answer ``call`` with its handler's return value (see :meth:`Endpoint.respond`)."""
        outcome, data = self.encode_answer(call, value, now=now)
        if data is not None:
            self.send_answer(call, data, now)
        return outcome

    def encode_answer(self, call: int, value: object, *, now: float) -> tuple[CallOutcome, bytes | None]:
        """The outcome and encoded response answering ``call`` with ``value``, not yet sent
        (:meth:`send_answer` sends it); for a task, no response: its result is stored."""
        rec = self._call(call)
        result = self._result_of(rec, value)
        outcome = replies.outcome_of(result)
        if rec.task is not None:
            self.finish_call(rec)
            tasks.finish(self, rec, now, result=msgspec.to_builtins(result))
            return outcome, None
        return outcome, self.encode_result(rec.request_id, result, rec.modern_rules, cache=rec.cache)

    def send_answer(self, call: int, data: bytes, now: float) -> None:
        """Send ``data``, the response :meth:`encode_answer` made, ending ``call`` (nothing
        when ``call`` ended meanwhile: cancelled, or its session closed)."""
        rec = self._calls.get(call)
        if rec is not None:
            self.finish_call(rec)
            self._deliver(rec, data, 200, now)

    def _result_of(self, rec: Call, value: object) -> msgspec.Struct:
        kind = rec.kind
        if kind is CallKind.TOOL:
            assert rec.tool is not None  # set for every TOOL call
            result: msgspec.Struct = tool_result(rec.tool, value, rec.rules)
        elif kind is CallKind.PROMPT:
            assert rec.prompt is not None  # set for every PROMPT call
            result = prompt_result(rec.prompt, value)
        elif kind is CallKind.READ:
            result = read_result(rec.uri, rec.mime_type, value)
        else:
            result = completion_result(value)
        return result

    def fail(self, call: int, error: BaseException, *, now: float) -> CallOutcome:
        """Answer ``call`` for a handler that raised ``error`` (see :meth:`Endpoint.fail`)."""
        rec = self._call(call)
        if isinstance(error, RequestError):
            try:
                return self.respond_error(call, error.code, error.message, error.data, now=now)
            except LocalProtocolError:  # its data is no JSON: the error goes without it
                return self.respond_error(call, error.code, error.message, now=now)
        text = _text(error)
        if isinstance(error, ClientCapabilityMissing) and rec.info.modern:
            required = {"requiredCapabilities": error.required}
            return self.respond_error(call, MISSING_CLIENT_CAPABILITY, text, required, now=now)
        if isinstance(error, ToolError):  # meant for the client
            message = text or type(error).__name__
        elif self.app.mask_error_details:
            message = f"Error calling tool {rec.tool.name!r}" if rec.tool is not None else "Internal error"
        elif rec.kind is CallKind.TOOL:
            message = text or type(error).__name__
            if text and not isinstance(error, Exception):  # SystemExit(2): "2" would say nothing
                message = f"{type(error).__name__}: {text}"
        else:
            message = f"{type(error).__name__}: {text}" if text else type(error).__name__
        if rec.kind is not CallKind.TOOL:
            return self.respond_error(call, jsonrpc.INTERNAL_ERROR, message, now=now)
        result = error_tool_result(message)
        self.finish_call(rec)
        if rec.task is not None:
            tasks.finish(self, rec, now, result=msgspec.to_builtins(result))
        else:
            self._deliver(rec, self.encode_result(rec.request_id, result, rec.modern_rules), 200, now)
        return CallOutcome(message=message, tool_error=True)

    def respond_error(self, call: int, code: int, message: str, data: object = None, *,
                      now: float) -> CallOutcome:
        """Answer ``call`` with a JSON-RPC error (see :meth:`Endpoint.respond_error`)."""
        rec = self._call(call)
        encoded = jsonrpc.encode_error(rec.request_id, code, message, data)
        self.finish_call(rec)
        if rec.task is not None:
            error = {"code": code, "message": message} if data is None else {
                "code": code, "message": message, "data": data}
            tasks.finish(self, rec, now, error=error)
        else:
            self._deliver(rec, encoded, replies.status(code, rec.info.modern), now)
        return CallOutcome(error_code=code, message=message)

    def input_required(self, call: int, state: Mapping[str, object], *, now: float) -> None:
        """End this round of ``call`` with ``input_required`` (see :meth:`Endpoint.input_required`)."""
        rec = self._call(call)
        if rec.task is not None:
            raise LocalProtocolError("a task waits for its answers (tasks/update): "
                                     "it cannot answer input_required")
        methods.input_required(self, rec, state, now)

    def start_task(self, call: int, *, now: float, message: str | None = None) -> str | None:
        """Make ``call`` a task (see :meth:`Endpoint.start_task`).

        Raises:
            LocalProtocolError: no such call, or it is no stateless-era call of a
                task-capable tool.
        """
        return tasks.start_task(self, self._call(call), now, message)

    def ask(self, call: int, asks: Sequence[Ask], *, now: float) -> list[AskOutcome]:
        """Decide each of ``asks`` for ``call`` (see :meth:`Endpoint.ask`)."""
        rec = self._call(call)
        if rec.info.modern and rec.round is None:
            raise LocalProtocolError(f"{rec.info.method} cannot ask the client anything in the stateless era "
                                     "(only tools/call, prompts/get and resources/read can)")
        if len(asks) + rec.asked > self.config.max_input_requests:
            raise LocalProtocolError(f"a handler may ask at most {self.config.max_input_requests} questions")
        for ask in asks:
            methods.check_capability(self, rec, ask)
        outcomes: list[AskOutcome] = []
        for ask in asks:
            key = ask.key or f"{ask.method.partition('/')[0]}-{rec.asked}"
            rec.asked += 1
            answer = None if rec.round is None else methods.known_answer(rec.round, key, ask.method)
            if answer is not None:
                outcomes.append(Answered(answer))
            elif rec.task is not None:
                outcomes.append(AnswerPending(tasks.task_ask(self, rec, key, ask, now)))
            elif rec.round is not None:
                rec.round.pending[key] = ask
                outcomes.append(Deferred(key))
            else:
                outcomes.append(AnswerPending(self._request(rec, ask, now)))
        return outcomes

    # ---------------------------------------------------------------- server-initiated traffic

    def send_progress(self, call: int, progress: float, total: float | None, message: str | None) -> None:
        """``notifications/progress`` for ``call`` if it carried a progress token."""
        rec = self._calls.get(call)
        if rec is None or rec.info.progress_token is None or rec.task is not None:
            return
        params: dict[str, object] = {"progressToken": rec.info.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.host.send(rec.channel, jsonrpc.encode_notification("notifications/progress", params))

    def send_log(self, call: int | None, level: LoggingLevel, data: object, logger: str | None) -> None:
        """``notifications/message`` if the level passes the request's (or session's) filter."""
        rec = None if call is None else self._calls.get(call)
        if rec is None:
            if call is not None or self.handshake.phase is not Phase.READY:
                return  # a finished call, or no handshake-era client to tell
            floor, channel = self.handshake.log_level, None
        elif rec.info.modern:
            floor, channel = rec.info.log_level, rec.channel
            if floor is None or rec.task is not None:
                return  # 2026-07-28: no log for a request that did not set a level, nor once answered
        else:
            floor, channel = self.handshake.log_level, rec.channel
        if floor is not None and _LOG_ORDER[level] < _LOG_ORDER[floor]:
            return
        params: dict[str, object] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.host.send(channel, jsonrpc.encode_notification("notifications/message", params))

    def notify_list_changed(self, kind: ListKind) -> None:
        """Tell this client a list changed: handshake era once initialized, stateless era on
        the ``subscriptions/listen`` streams that asked for it."""
        methods.notify_list_changed(self, kind)

    def notify_resource_updated(self, uri: str) -> None:
        """Tell this client ``uri`` changed, if it subscribed to it."""
        methods.notify_resource_updated(self, uri)

    # ---------------------------------------------------------------- internals

    def _on_request(self, env: Envelope, now: float, channel: int | None,
                    principal: Principal | None = None) -> None:
        method, rid = env.method, env.id
        assert isinstance(method, str) and isinstance(rid, int | str)  # classify() guarantees it
        key = (channel if self._channel_ids else None, rid)
        if key in self._by_key or key in self._listens:
            message = f"Invalid request: id {rid!r} is already in use"
            self.error(channel, rid, jsonrpc.INVALID_REQUEST, message, now=now)
            return
        spec = methods.METHODS.get(method, _UNKNOWN)
        raw = env.params if isinstance(env.params, Raw) else b"{}"
        try:
            params = spec.decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:
            if spec.modern is None and replies.names_a_version(raw):  # a method the stateless era removed
                self.error(channel, rid, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}", now=now,
                           modern=True)
            else:
                self.error(channel, rid, jsonrpc.INVALID_PARAMS, f"Invalid params: {exc}", now=now)
            return
        meta = params.meta
        version = None if meta is None else meta.protocol_version
        modern = version is not None
        handler = spec.modern if modern else spec.legacy
        # One connection's bound: the stateless HTTP session is every client's (each request
        # on a channel of its own, bounded by max_connections, tasks by max_tasks), where it
        # let one client's running tasks or slow calls refuse everyone else's requests.
        if not self._channel_ids and len(self._calls) >= self.config.max_in_flight:
            self.error(channel, rid, jsonrpc.INTERNAL_ERROR,
                       f"too many requests in progress (at most {self.config.max_in_flight})", now=now)
            return
        if modern:
            assert version is not None  # modern means it is set
            rules = self._modern_rules(channel, rid, version, meta, now)
            if rules is None:
                return
            if handler is None:
                self.error(channel, rid, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}", now=now,
                           modern=True)
                return
            request = methods.Request(rid, method, channel, key, params, rules, True, now, principal)
            handler(self, request, now)
            return
        if handler is None:
            if spec is _UNKNOWN:
                self.error(channel, rid, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}", now=now)
            else:  # a stateless-era method without its _meta
                self.error(channel, rid, jsonrpc.INVALID_PARAMS,
                           f"Invalid params: {method} needs _meta with the protocol version", now=now,
                           status=400)
            return
        if self.handshake.phase is Phase.NEW and method not in _LEGACY_BEFORE_INIT:
            self.error(channel, rid, jsonrpc.INVALID_REQUEST,
                       "Invalid request: the session is not initialized (send initialize first)", now=now)
            return
        if self.handshake.phase is not Phase.NEW and method == "initialize":
            self.error(channel, rid, jsonrpc.INVALID_REQUEST,
                       "Invalid request: the session is already initialized", now=now)
            return
        rules = self.handshake.rules or VERSIONS[LATEST_VERSION]
        handler(self, methods.Request(rid, method, channel, key, params, rules, False, now, principal), now)

    def _modern_rules(self, channel: int | None, rid: RequestId, version: str,
                      meta: RequestMeta | None, now: float) -> VersionRules | None:
        """The rules of a stateless request's version, or ``None`` after refusing it."""
        if version not in self.config.modern_versions:
            data = {"supported": list(self.config.modern_versions), "requested": version}
            self.error(channel, rid, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data,
                       modern=True, now=now)
            return None
        if meta is None or meta.client_capabilities is None:
            self.error(channel, rid, jsonrpc.INVALID_PARAMS,
                       "Invalid params: _meta lacks io.modelcontextprotocol/clientCapabilities", now=now,
                       status=400)
            return None
        return VERSIONS[version]

    def _on_notification(self, env: Envelope, now: float, channel: int | None) -> None:
        method = env.method
        assert isinstance(method, str)  # classify() guarantees it
        raw = env.params if isinstance(env.params, Raw) else b"{}"
        if method == "notifications/initialized":
            if self.handshake.advance(Trigger.RECV_INITIALIZED):
                methods.initialized(self)
            return
        if method == "notifications/cancelled":
            try:
                params = _CANCEL_DECODER.decode(raw)
            except (msgspec.DecodeError, RecursionError) as exc:
                self.host.emit(MessageDiscarded(reason=DiscardReason.INVALID_PARAMS, detail=str(exc),
                                                excerpt=bytes(raw)[:200]))
                return
            self._on_cancelled(params, channel)
            return
        tp = NOTIFICATION_PARAMS.get(method)
        decoded: object = raw
        if tp is not None:
            try:
                decoded = msgspec.json.decode(raw, type=tp)
            except (msgspec.DecodeError, RecursionError) as exc:
                self.host.emit(MessageDiscarded(reason=DiscardReason.INVALID_PARAMS, detail=str(exc),
                                                excerpt=bytes(raw)[:200]))
                return
        self.host.emit(NotificationReceived(method=method, params=decoded))

    def _on_cancelled(self, params: CancelParams, channel: int | None) -> None:
        """A request the client gave up on: its call, or a subscription it ends."""
        rid = params.request_id
        if rid is None:
            return
        key = (channel if self._channel_ids else None, rid)
        call = self._by_key.get(key)
        if call is not None:
            self._cancel(call, params.reason)
        else:
            self._listens.pop(key, None)  # unknown ids are ignored (MCP "Cancellation")

    def _on_response(self, env: Envelope, now: float) -> None:
        out = self._questions.answered(env.id)
        if out is None:
            self.host.emit(MessageDiscarded(reason=DiscardReason.UNKNOWN_ID, detail=f"no request {env.id!r}",
                                            excerpt=b""))
            return
        rec = self._calls.get(out.call)
        if rec is not None:
            rec.tickets.discard(out.ticket)
        self.host.emit(answer_event(out, env))

    def _request(self, rec: Call, ask: Ask, now: float) -> int:
        """Send ``ask`` to the client as a request of ours; its ticket."""
        ticket = self.host.new_ticket()
        params = methods.outbound_params(ask, ticket)
        rid = self._questions.open(ticket, ask.method, rec.call, now + self.config.request_timeout)
        rec.tickets.add(ticket)
        self.host.timed(self)
        self.host.send(rec.channel, jsonrpc.encode_request(rid, ask.method, params))
        return ticket

    def _send_cancel(self, rid: int, reason: str) -> None:
        """Tell the client we no longer want the answer to our request ``rid``."""
        rec = self._calls.get(self._questions.get(rid).call)
        channel = None if rec is None else rec.channel
        params = {"requestId": rid, "reason": reason}
        self.host.send(channel, jsonrpc.encode_notification("notifications/cancelled", params))

    def _fail_outbound(self, rid: int, reason: FailureReason, message: str) -> None:
        out = self._questions.close(rid)
        rec = self._calls.get(out.call)
        if rec is not None:
            rec.tickets.discard(out.ticket)
        self.host.emit(AnswerFailed(ticket=out.ticket, method=out.method, reason=reason, message=message))

    def new_call(self) -> int:
        """A fresh call handle from the transport, owned by this session."""
        return self.host.new_call(self)

    def timed(self) -> None:
        """This session armed a deadline: its transport watches it."""
        self.host.timed(self)

    def release_request(self, rec: Call) -> None:
        """``rec``'s request is answered while its call goes on (a task): the id is free."""
        self._by_key.pop(rec.key, None)

    def cancel_call(self, call: int, reason: str | None) -> None:
        """Stop ``call`` on the server's own initiative (an expired or cancelled task)."""
        self._cancel(call, reason)

    def _cancel(self, call: int, reason: str | None) -> None:
        rec = self._calls.pop(call)
        self._by_key.pop(rec.key, None)
        self.host.call_cancelled(call)
        for ticket in list(rec.tickets):
            rid = self._questions.of_ticket(ticket)
            self._send_cancel(rid, "the request it served was cancelled")
            self._questions.close(rid)
        self.host.emit(CallCancelled(call=call, reason=reason))

    def _call(self, call: int) -> Call:
        rec = self._calls.get(call)
        if rec is None:
            raise LocalProtocolError(f"call {call} is not in progress")
        return rec

    def start_call(self, rec: Call) -> None:
        """Record ``rec`` as in flight (``methods`` calls this before emitting its event)."""
        self._calls[rec.call] = rec
        self._by_key[rec.key] = rec.call

    def _deliver(self, rec: Call, data: bytes, status: int, now: float) -> None:
        """Send the response that ends ``rec``."""
        self.host.finish(rec.channel, data, status, now)

    def finish_call(self, rec: Call) -> None:
        """``rec`` is answered: forget it and the questions it still had open."""
        del self._calls[rec.call]
        self._by_key.pop(rec.key, None)
        self.host.call_done(rec.call)
        for ticket in rec.tickets:
            rid = self._questions.of_ticket(ticket)
            self._send_cancel(rid, "the request it served is complete")
            self._questions.close(rid)

    def error(self, channel: int | None, rid: RequestId | None, code: int, message: str, data: object = None,
              *, now: float, modern: bool = False, status: int | None = None) -> None:
        """Answer request ``rid`` on ``channel`` with a JSON-RPC error; ``status`` (the HTTP
        status of the exchange) follows from the code and era unless given."""
        if status is None:
            status = replies.status(code, modern)
        self.host.finish(channel, jsonrpc.encode_error(rid, code, message, data), status, now)

    def reject(self, request: methods.Request, code: int, message: str, data: object = None) -> None:
        """Answer ``request`` with a JSON-RPC error."""
        self.error(request.channel, request.request_id, code, message, data, now=request.now,
                   modern=request.modern)
        if self.app.report_answers:
            self._answered(request, code, message)

    def answer(self, request: methods.Request, result: msgspec.Struct, *,
               cache: tuple[int, str] | None = None) -> None:
        """Answer ``request`` with ``result`` (plus what its era adds)."""
        data = self.encode_result(request.request_id, result, request.rules if request.modern else None,
                                  cache=cache)
        self.host.finish(request.channel, data, 200, request.now)
        if self.app.report_answers:
            self._answered(request, None, None)

    def _answered(self, request: methods.Request, code: int | None, message: str | None) -> None:
        """Tell telemetry the core answered ``request`` itself (``RequestAnswered``)."""
        meta = getattr(request.params, "meta", None)
        version = request.rules.version if request.modern else self.handshake.protocol_version
        self.host.emit(RequestAnswered(
            method=request.method, request_id=request.request_id, protocol_version=version,
            session_id=self.handshake.session_id, error_code=code, message=message,
            trace_context=meta.trace_context() if isinstance(meta, RequestMeta) else None))

    def encode_result(self, rid: RequestId, result: msgspec.Struct | dict[str, object],
                      rules: VersionRules | None, *, cache: tuple[int, str] | None = None,
                      result_type: str = "complete") -> bytes:
        """The response for ``result`` in its era (see :func:`.replies.encode_result`)."""
        server_meta = self._server_meta if self.config.server_info_in_results else None
        return replies.encode_result(rid, result, rules, server_meta, cache=cache, result_type=result_type)


def _text(error: BaseException) -> str:
    """``str(error)``, or nothing when its ``__str__`` fails (a handler's exception may)."""
    try:
        return str(error)
    except Exception:
        return ""


def invalid_utf8(data: bytes) -> str | None:
    """Why ``data`` is not UTF-8, or ``None`` when it is (ASCII, the usual case, is
    checked without decoding a copy)."""
    if data.isascii():
        return None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start}"
    return None
