"""The client side of an MCP session: lifecycle, request table, deadlines. No transport.

Messages go in as JSON texts (:meth:`ClientSession.receive_message`) and come out as
encoded JSON texts handed to the transport's :class:`Link` (or queued for
:meth:`~ClientSession.messages_to_send` when there is none). A transport owns a session
and talks to it through its public methods, each of which takes the clock; the session
talks back only through the link. Implements the MCP "Lifecycle", "Cancellation",
"Progress" and "Pagination" sections of every revision, 2024-11-05 to 2026-07-28.
"""

from __future__ import annotations

import enum
import heapq
import logging
import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from heapq import heappop, heappush
from typing import Final, NamedTuple, get_args

import msgspec
from msgspec import UNSET, Raw

from . import jsonrpc, modern
from .calls import Calls
from .capabilities import SERVER_REQUESTS, listen_filter, required_capability, server_offers
from .config import ClientConfig
from .discards import DiscardLog, undecodable, undecodable_answer, whole_but_undecodable
from .errors import LocalProtocolError
from .events import (
    ClientEvent,
    ConnectionTerminated,
    DiscardReason,
    ErrorData,
    FailureReason,
    InitializeCompleted,
    InitializeFailed,
    MessageDiscarded,
    NotificationReceived,
    PeerErrorReceived,
    ProgressReceived,
    RequestFailed,
    RequestId,
    ResponseReceived,
    ServerRequestReceived,
)
from .jsonrpc import Envelope, Kind
from .machines import step
from .negotiation import Adopt, Decision, Negotiation, SendDiscover, SendInitialize
from .requests import (
    CLIENT_RESULTS,
    LIST_FIELDS,
    SAFE_TO_REPEAT,
    InputRounds,
    OutgoingRequest,
    Paging,
    Params,
    input_event,
    with_progress_token,
)
from .types import (
    NOTIFICATION_PARAMS,
    REQUEST_PARAMS,
    CancelledNotificationParams,
    ClientCapabilities,
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    LoggingLevel,
    PaginatedRequestParams,
    ProgressNotificationParams,
    ServerCapabilities,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
    WireStruct,
)
from .versions import VersionRules

__all__ = ["LIST_FIELDS", "PEER_TRIGGERS", "TRANSITIONS", "ClientSession", "Link", "Params", "Phase",
           "Trigger", "server_offers"]

log = logging.getLogger(__name__)


class Phase(enum.Enum):
    """Where the session is in its lifecycle."""

    NEW = "new"
    INITIALIZING = "initializing"
    READY = "ready"
    EXPIRED = "expired"
    FAILED = "failed"
    CLOSED = "closed"


# Hot paths compare against this alias: in CPython 3.11 looking up an enum member costs
# about as much as a function call (the metaclass's attribute access).
_READY: Final = Phase.READY


class Trigger(enum.Enum):
    """What moves the session between phases; ``RECV_*`` come from the peer."""

    SEND_INITIALIZE = "send-initialize"
    RETRY_INITIALIZE = "retry-initialize"
    RECV_INITIALIZE_RESULT = "recv-initialize-result"
    RECV_INITIALIZE_FAILURE = "recv-initialize-failure"
    RECV_SESSION_EXPIRED = "recv-session-expired"
    CONNECTION_LOST = "connection-lost"


PEER_TRIGGERS: Final = frozenset({Trigger.RECV_INITIALIZE_RESULT, Trigger.RECV_INITIALIZE_FAILURE,
                                   Trigger.RECV_SESSION_EXPIRED})
"""The triggers the peer causes (an illegal one is a ``RemoteProtocolError``)."""

TRANSITIONS: Final[Mapping[tuple[Phase, Trigger], Phase]] = {
    (Phase.NEW, Trigger.SEND_INITIALIZE): Phase.INITIALIZING,
    # A retry with another version after the server listed what it supports.
    (Phase.INITIALIZING, Trigger.RETRY_INITIALIZE): Phase.INITIALIZING,
    (Phase.INITIALIZING, Trigger.RECV_INITIALIZE_RESULT): Phase.READY,
    (Phase.INITIALIZING, Trigger.RECV_INITIALIZE_FAILURE): Phase.FAILED,
    # The server forgot the session (HTTP): a new handshake, pending requests kept.
    (Phase.READY, Trigger.RECV_SESSION_EXPIRED): Phase.EXPIRED,
    (Phase.EXPIRED, Trigger.SEND_INITIALIZE): Phase.INITIALIZING,
    **{(p, Trigger.CONNECTION_LOST): Phase.CLOSED for p in Phase},
}


class Link(NamedTuple):
    """What a session asks of the transport that carries it; every call gets the clock.

    The transport builds one from its own methods and hands it to the session it owns.
    """

    send: Callable[[bytes, int | None, float], None]
    """Carry one encoded message; the request id it carries, or ``None`` (an answer, a
    notification)."""
    ready: Callable[[float], None] | None = None
    """The handshake (the first, or one after an expiry) has just completed."""
    ended: Callable[[int, FailureReason | None, float], None] | None = None
    """A request left the table: answered (``None``: a result or the next page under a
    new id) or failed for the reason given."""
    stall: Callable[[], str] | None = None
    """Where the handshake's request stands (``"; ..."``), for a timeout's message."""
    vet: Callable[[str, msgspec.Struct, float], msgspec.Struct] | None = None
    """Check a result before it is delivered (method, result); returns what to deliver."""
    garbage: Callable[[DiscardReason, str, float], bool] | None = None
    """A message that is no JSON arrived; ``True``: the transport failed the connection
    over it (stdio: the stream is broken), so it is not reported as a discard."""


_RESULT_DECODERS: Final[Mapping[str, msgspec.json.Decoder[WireStruct]]] = {
    method: kind.decoder for method, kind in CLIENT_RESULTS.items()
}
_PARAMS_DECODERS: Final[Mapping[str, msgspec.json.Decoder[msgspec.Struct]]] = {
    method: msgspec.json.Decoder(tp) for method, tp in {**REQUEST_PARAMS, **NOTIFICATION_PARAMS}.items()
}
_HEAD_DECODER: Final = msgspec.json.Decoder(modern.ResultHead)


class _Sent(msgspec.Struct):
    """The params of a request we sent, read back to send it again."""

    params: dict[str, object] = msgspec.field(default_factory=dict)


_SENT_DECODER: Final = msgspec.json.Decoder(_Sent)
# Result of a method the types do not know: only ``_meta``; the event's ``raw`` has the JSON.
_OPAQUE_DECODER: Final[msgspec.json.Decoder[WireStruct]] = msgspec.json.Decoder(EmptyResult)
# The requests a server may answer with ``resultType: "input_required"``.
_INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_LOG_LEVELS: Final = frozenset(get_args(LoggingLevel))
_EMPTY: Final[dict[str, object]] = {}
_EXCERPT: Final = 200
# From this size on, a message goes first through ``_take_result``, which skips the
# envelope pass: finding the result by its frame costs a few Python steps, the envelope
# pass a scan of the whole result (they break even at about 1.4 KB).
_SLICE_FROM: Final = 1536


class ClientSession(Calls):
    """Transport-agnostic MCP client state machine.

    A transport owns one, passing a :class:`Link` for what goes out, and feeds it each
    incoming JSON text with :meth:`receive_message`; without a link, messages queue for
    :meth:`messages_to_send`. Every local call returns at once; answers arrive as events
    from :meth:`next_event`.
    """

    def __init__(self, config: ClientConfig, capabilities: ClientCapabilities,
                 link: Link | None = None) -> None:
        self.config = config
        self.capabilities = capabilities
        self._outgoing: list[bytes] = []
        link = link or Link(send=self._queue)
        self._transmit = link.send
        self._link = link
        self._phase = Phase.NEW
        self._next_id = 0
        self._pending: dict[int, OutgoingRequest] = {}
        self._aliases: dict[int, int] = {}  # origin id of a paged list -> current page id
        self._heap: list[tuple[float, int]] = []
        self._events: deque[ClientEvent] = deque()
        self._inbound: set[RequestId] = set()  # server requests awaiting our answer
        self._cancelled: set[RequestId] = set()  # ... that the server has since cancelled
        self._init_id: int | None = None  # the handshake request out (discover or initialize)
        self._late_probe: int | None = None  # a blind probe that timed out: its late answer may decide
        self._negotiation = Negotiation(config)  # the handshake's sub-states and decisions
        self._result: InitializeResult | None = None
        self._allowed: set[str] = set()  # methods whose capability check passed
        self._rules: VersionRules | None = None
        self._client_info = Implementation(
            name=config.client_name, version=config.client_version, title=config.client_title
        )
        # The stateless era (2026-07-28): set once server/discover has been answered.
        self._modern_meta: dict[str, object] | None = None
        self._log_level: str | None = None
        self._mrtr: dict[str, tuple[int, str]] = {}  # input request id -> (request id, key)
        self._listen_id: int | None = None  # the open subscriptions/listen request
        self._subscriptions: set[str] = set()
        self._reissued: set[int] = set()  # origins re-issued after a lost stream (once each)
        self._discards = DiscardLog()  # what the host hears of skipped messages
        self.outgoing_meta: Mapping[str, str] | None = None
        """Entries added to ``params._meta`` of every request sent while set, beside what the
        session puts there itself (the progress token, the stateless era's fields, which win
        a clash): the trace context (``traceparent``, ``tracestate``, ``baggage``) a driver's
        telemetry sets around one call."""

    # ------------------------------------------------------------------ queries

    @property
    def era(self) -> str | None:
        """``"legacy"`` (the ``initialize`` handshake) or ``"modern"`` (stateless), once known."""
        if self._rules is None:
            return None
        return "modern" if self._rules.request_meta else "legacy"

    @property
    def phase(self) -> Phase:
        """The lifecycle phase."""
        return self._phase

    @property
    def rules(self) -> VersionRules | None:
        """The negotiated revision's row, once the handshake is done."""
        return self._rules

    @property
    def protocol_version(self) -> str | None:
        """The negotiated revision."""
        return self._result.protocol_version if self._result else None

    @property
    def server_info(self) -> Implementation | None:
        """``serverInfo`` from the handshake."""
        return self._result.server_info if self._result else None

    @property
    def server_capabilities(self) -> ServerCapabilities | None:
        """What the server declared in the handshake."""
        return self._result.capabilities if self._result else None

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if any."""
        return self._result.instructions if self._result else None

    @property
    def negotiation(self) -> Negotiation:
        """The handshake's planner (its deadline, the probe under way), for transports."""
        return self._negotiation

    @property
    def handshake_id(self) -> int | None:
        """The id of the handshake request out (``server/discover`` or ``initialize``)."""
        return self._init_id

    def next_event(self) -> ClientEvent | None:
        """The oldest queued event, or ``None``."""
        return self._events.popleft() if self._events else None

    @property
    def next_request_id(self) -> int:
        """The id the next request sent will carry (telemetry names its span before sending)."""
        return self._next_id + 1

    def next_deadline(self) -> float | None:
        """The earliest armed deadline (it may be one that no longer matters: waking
        early is harmless, :meth:`handle_timeout` then does nothing)."""
        at = self._heap[0][0] if self._heap else None
        init = self._negotiation.deadline
        if init is not None and (at is None or init < at):
            at = init
        return at

    def pending_requests(self) -> list[RequestId]:
        """Ids the caller is still waiting on (origin ids for paged lists)."""
        return [p.origin for p in self._pending.values()]

    def messages_to_send(self) -> list[bytes]:
        """Drain the encoded messages queued when the session has no link."""
        out, self._outgoing = self._outgoing, []
        return out

    # ----------------------------------------------------------- the handshake

    def start(self, *, now: float) -> None:
        """Open the session the way ``config.protocol`` says.

        ``"auto"`` probes with ``server/discover`` at the preferred stateless revision
        and falls back to ``initialize`` on anything that is not positive evidence of a
        modern server (``-32022`` naming a mutual version is); a fixed revision speaks
        only that one. The decisions are :class:`~mcp_sansio.negotiation.Negotiation`'s.

        Raises:
            LocalProtocolError: the session has already started.
        Events: ``InitializeCompleted`` or ``InitializeFailed`` later.
        """
        self._take_step(self._negotiation.opening(), now)

    def initialize(self, *, now: float) -> None:
        """Send ``initialize`` offering the preferred revision.

        Raises:
            LocalProtocolError: the session is past its start.
        Events: ``InitializeCompleted`` or ``InitializeFailed`` later.
        """
        self._take_step(SendInitialize(version=self.config.protocol_versions[0]), now)

    def _take_step(self, step: Decision, now: float) -> None:
        """Carry out what the negotiation decided."""
        if isinstance(step, SendInitialize | SendDiscover):
            self._advance(Trigger.RETRY_INITIALIZE if step.retry else Trigger.SEND_INITIALIZE)
            self._negotiation.sent(step, now)
            rid = self._init_id = self._allocate_id()
            if isinstance(step, SendInitialize):
                params: object = InitializeRequestParams(protocol_version=step.version,
                                                         capabilities=self.capabilities,
                                                         client_info=self._client_info)
                self._transmit(jsonrpc.encode_request(rid, "initialize", params), rid, now)
            else:
                meta = modern.request_meta(step.version, self.capabilities, self._client_info, None)
                self._transmit(jsonrpc.encode_request(rid, "server/discover", {"_meta": meta}), rid, now)
        elif isinstance(step, Adopt):
            self._init_id = None
            self._negotiation.settled()
            result = step.result
            self._advance(Trigger.RECV_INITIALIZE_RESULT)
            self._result = result
            self._rules = step.rules
            self._allowed = set()
            if step.modern:
                self._modern_meta = modern.request_meta(result.protocol_version, self.capabilities,
                                                        self._client_info, None)
            else:
                self._transmit(jsonrpc.encode_notification("notifications/initialized", None), None, now)
            if self._link.ready is not None:
                self._link.ready(now)
            self._events.append(InitializeCompleted(
                protocol_version=result.protocol_version, server_info=result.server_info,
                capabilities=result.capabilities, instructions=result.instructions, result=result,
            ))
        else:
            self._initialize_failed(step.reason, step.message, error=step.error, offered=step.offered,
                                    received=step.received, now=now)

    def _initialize_failed(
        self, reason: FailureReason, message: str, *, now: float, error: ErrorData | None = None,
        offered: str = "", received: tuple[str, ...] = (), status: int | None = None,
        detail: dict[str, str] | None = None,
    ) -> None:
        self._init_id = None
        self._negotiation.settled()
        self._advance(Trigger.RECV_INITIALIZE_FAILURE)
        for pending in list(self._pending.values()):  # only after an expiry: requests waited
            self._fail(pending, FailureReason.SESSION_EXPIRED,
                       f"the session expired and a new one could not be opened: {message}", now)
        self._events.append(InitializeFailed(
            reason=reason, message=message, error=error, offered=offered, received=received,
            status=status, detail=detail,
        ))

    # ------------------------------------------------------------ local calls

    def request(
        self, method: str, params: Params = None, *, now: float, timeout: float | None = None,
        all_pages: bool = False,
    ) -> int:
        """Send any request; the typed helpers below are thin wrappers over this.

        Args:
            method: the JSON-RPC method.
            params: a params Struct or a wire-shape mapping; a progress token is added.
            now: the driver's clock.
            timeout: seconds until the request fails with TIMEOUT (default from config);
                progress moves the deadline on, never past ``max_request_timeout`` from
                now (or past ``timeout``, when that is the longer).
            all_pages: for list methods, follow ``nextCursor`` and answer once with
                every page merged.

        Returns:
            The request id; its answer arrives as ``ResponseReceived`` or ``RequestFailed``.

        Raises:
            LocalProtocolError: not ready, or the server did not declare the capability
                the method needs, or ``all_pages`` for a method that has no pages, or
                ``params`` hold a value JSON cannot represent.
        """
        return self._request(method, params, now, timeout, all_pages, fresh=False)

    def send_built(self, method: str, params: msgspec.Struct | None, now: float, timeout: float | None,
                   all_pages: bool) -> int:
        """:meth:`request` with params a typed helper just built, which the session may
        complete in place (the progress token) instead of copying: the typed helpers of
        the session and of every :class:`~mcp_sansio.front.SessionFront` end here."""
        return self._request(method, params, now, timeout, all_pages)

    _send_call = send_built

    def _request(self, method: str, params: Params, now: float, timeout: float | None,
                 all_pages: bool, *, fresh: bool = True, endless: bool = False) -> int:
        """:meth:`request`; ``fresh`` params were built here, so the token goes in place;
        an ``endless`` request (``subscriptions/listen``) has no deadline at all."""
        if self._phase is not _READY:
            self._check_phase(method)
        if method not in self._allowed:
            self._check_capability(method)  # raises when not declared
            self._allowed.add(method)
        field = LIST_FIELDS.get(method) if all_pages else None
        if all_pages and field is None:
            raise LocalProtocolError(f"{method} is not a paginated list")
        rid = self._next_id + 1
        # Encoded first, so params that JSON cannot represent fail before anything changes.
        extra = None if self._modern_meta is None else self._era_meta()
        if (trace := self.outgoing_meta) is not None:
            extra = dict(trace) if extra is None else {**trace, **extra}
        if fresh and extra is None and getattr(params, "meta", UNSET) is None:
            params.meta = {"progressToken": rid}  # type: ignore[union-attr]  # a Struct of ours with _meta
            wire = jsonrpc.encode_request(rid, method, params)
        else:
            wire = jsonrpc.encode_request(rid, method, with_progress_token(params, rid, extra))
        self._next_id = rid
        limit = self.config.max_request_timeout
        if endless:
            timeout = math.inf  # progress cannot arm a deadline either
        elif timeout is None:
            timeout = self.config.request_timeout
        elif limit is not None and timeout > limit:
            limit = timeout  # asked for by this call: its bound, not cut to the config's
        deadline = now + timeout
        limit_at = None
        if limit is not None and not endless:
            limit_at = now + limit
            deadline = min(deadline, limit_at)
        pending = OutgoingRequest(rid, method, timeout, deadline, limit_at, rid, wire)
        if field is not None:
            pending.paging = Paging(field)
        self._pending[rid] = pending
        if not endless:
            heappush(self._heap, (deadline, rid))
        self._transmit(wire, rid, now)
        return rid

    def subscribe_resource(self, uri: str, *, now: float, timeout: float | None = None) -> int:
        """``resources/subscribe``; updates arrive as ``NotificationReceived``.

        In the stateless era the URI joins the ``subscriptions/listen`` filter instead
        (the listen request is re-opened with it) and the call completes at once.
        """
        if self._rules is not None and not self._rules.subscribe:
            self._check_phase("resources/subscribe")
            self._check_capability("resources/subscribe")
            self._refilter(self._subscriptions | {uri}, now)
            return self._done_locally("resources/subscribe")
        return self._request("resources/subscribe", SubscribeRequestParams(uri=uri), now, timeout, False)

    def unsubscribe_resource(self, uri: str, *, now: float, timeout: float | None = None) -> int:
        """``resources/unsubscribe`` (in the stateless era: leave the listen filter)."""
        if self._rules is not None and not self._rules.subscribe:
            self._check_phase("resources/unsubscribe")
            self._refilter(self._subscriptions - {uri}, now)
            return self._done_locally("resources/unsubscribe")
        return self.request(
            "resources/unsubscribe", UnsubscribeRequestParams(uri=uri), now=now, timeout=timeout
        )

    def listen(self, *, now: float) -> None:
        """Stateless era: (re-)open ``subscriptions/listen`` for list changes and the
        subscribed resources, so notifications arrive as they do in the handshake era.
        A no-op in the handshake era, where the server sends them unasked.

        Raises:
            LocalProtocolError: the session has failed or is closed.
        """
        if self._rules is not None and not self._rules.subscribe:
            self._check_phase("subscriptions/listen")
            self._listen(now)

    def _refilter(self, uris: set[str], now: float) -> None:
        """Re-open the listen when the subscribed set changes, or when none is open."""
        if uris != self._subscriptions or self._listen_id is None or self._listen_id not in self._pending:
            self._subscriptions = uris
            self._listen(now)

    def _listen(self, now: float) -> None:
        old = self._pending.get(self._listen_id) if self._listen_id is not None else None
        if old is not None:
            self._complete(old, now)  # nobody waits on the old listen: no event for it
            self._send_cancelled(old, "the subscription filter changed", now)
        filt = listen_filter(self.server_capabilities, self._subscriptions)
        self._listen_id = self._request("subscriptions/listen", {"notifications": filt}, now, None, False,
                                        endless=True)

    def _era_meta(self) -> dict[str, object] | None:
        """The ``_meta`` every stateless-era request carries (``None`` in the handshake era)."""
        meta = self._modern_meta
        if meta is not None and self._log_level is not None:
            return {**meta, modern.LOG_LEVEL_KEY: self._log_level}
        return meta

    def _done_locally(self, method: str) -> int:
        """A call the stateless era answers without the server: an id and its answer."""
        rid = self._allocate_id()
        self._events.append(ResponseReceived(request_id=rid, method=method, result=EmptyResult(),
                                             raw=Raw(b"{}")))
        return rid

    def set_logging_level(self, level: str, *, now: float, timeout: float | None = None) -> int:
        """``logging/setLevel``; in the stateless era later requests carry the level in
        ``_meta`` instead, and the call completes at once.

        Raises:
            LocalProtocolError: not ready, or the server did not declare ``logging``, or
                (stateless era, where no server would say so) ``level`` is not a level.
        """
        if self._rules is not None and not self._rules.set_level:
            self._check_phase("logging/setLevel")
            self._check_capability("logging/setLevel")
            if level not in _LOG_LEVELS:
                raise LocalProtocolError(f"{level!r} is not a logging level: one of {sorted(_LOG_LEVELS)}")
            self._log_level = level
            return self._done_locally("logging/setLevel")
        return self.request("logging/setLevel", SetLevelRequestParams(level=level), now=now,  # type: ignore[arg-type]  # validated by the server; a Literal in the wire type
                            timeout=timeout)

    def ping(self, *, now: float, timeout: float | None = None) -> int:
        """``ping``; in the stateless era (no ``ping``) a ``server/discover`` round trip."""
        if self._rules is not None and not self._rules.ping:
            return self.request("server/discover", None, now=now, timeout=timeout)
        return self.request("ping", None, now=now, timeout=timeout)

    def notify(self, method: str, params: Params = None, *, now: float) -> None:
        """Send a notification, e.g. ``notifications/roots/list_changed``.

        Raises:
            LocalProtocolError: the session is not ready, or ``params`` hold a value JSON
                cannot represent.
        """
        if self._phase is not Phase.READY:
            raise LocalProtocolError(f"cannot send {method} while the session is {self._phase.value}")
        self._transmit(jsonrpc.encode_notification(method, params), None, now)

    def cancel(self, request_id: RequestId, *, now: float, reason: str | None = None) -> None:
        """Give up on a request: ``notifications/cancelled`` goes out, the request fails.

        Raises:
            LocalProtocolError: ``request_id`` is ``initialize`` (never cancelled) or
                is not pending.
        Events: ``RequestFailed(reason=CANCELLED)``.
        """
        if request_id == self._init_id:
            raise LocalProtocolError("initialize cannot be cancelled")
        pending = None
        if isinstance(request_id, int):  # str ids are never ours
            pending = self._pending.get(self._aliases.get(request_id, request_id))
        if pending is None:
            raise LocalProtocolError(f"request {request_id!r} is not pending")
        self._fail(pending, FailureReason.CANCELLED, reason or "cancelled by the client", now)
        self._send_cancelled(pending, reason or "cancelled by the client", now)

    def respond(self, request_id: RequestId, result: msgspec.Struct | Mapping[str, object], *,
                now: float) -> None:
        """Answer the server's request ``request_id`` (from ``ServerRequestReceived``).

        A request the server has since cancelled is silently not answered. In the
        stateless era the requests are a result's input requests (MRTR): once all of a
        round are answered, the original request goes again with the answers.

        Raises:
            LocalProtocolError: no such request is awaiting an answer, or ``result``
                holds a value JSON cannot represent (the request then still awaits one).
        """
        message = jsonrpc.encode_result(request_id, result)
        if self._take_inbound(request_id):
            if isinstance(request_id, str) and request_id in self._mrtr:
                # It encodes: checked above.
                self._input_answered(request_id, Raw(msgspec.json.encode(result)), now)
                return
            self._transmit(message, None, now)

    def respond_error(self, request_id: RequestId, code: int, message: str, data: object = None, *,
                      now: float) -> None:
        """Answer the server's request ``request_id`` with a JSON-RPC error.

        For an input request (stateless era) no error can be sent: the original request
        fails with this error instead.

        Raises:
            LocalProtocolError: no such request is awaiting an answer, or ``data`` holds
                a value JSON cannot represent.
        """
        encoded = jsonrpc.encode_error(request_id, code, message, data)
        if self._take_inbound(request_id):
            if isinstance(request_id, str) and request_id in self._mrtr:
                rid, _ = self._mrtr.pop(request_id)
                pending = self._pending.get(rid)
                if pending is not None:  # the input could not be given: the request fails
                    self._fail(pending, FailureReason.ERROR_RESPONSE, message, now,
                               ErrorData(code=code, message=message, data=data))
                return
            self._transmit(encoded, None, now)

    def connection_lost(self, message: str, *, now: float, returncode: int | None = None,
                        reason: FailureReason = FailureReason.CONNECTION_LOST,
                        detail: dict[str, str] | None = None) -> None:
        """The transport ended (or the client closed it): fail everything pending.

        A no-op once closed. ``detail`` goes to the handshake's ``InitializeFailed``.

        Events: ``RequestFailed`` for each pending request, ``InitializeFailed`` during
        the handshake, then ``ConnectionTerminated``.
        """
        if self._phase is Phase.CLOSED:
            return
        was_initializing = self._phase is Phase.INITIALIZING
        self._init_id = None
        self._negotiation.settled()
        self._advance(Trigger.CONNECTION_LOST)
        if was_initializing:
            self._events.append(InitializeFailed(reason=reason, message=message, detail=detail))
        for pending in list(self._pending.values()):
            self._fail(pending, reason, message, now)
        self._cancelled.update(self._inbound)
        self._inbound.clear()
        self._mrtr.clear()
        self._heap.clear()
        self._events.append(ConnectionTerminated(reason=reason, message=message, returncode=returncode,
                                                 warning=self._discards.summary()))

    # ------------------------------------------------------ the transport's side

    def awaiting(self, request_id: int) -> bool:
        """Whether ``request_id`` (the handshake's, or a request's current id) still
        waits for the server's answer (one gathering the app's input does not)."""
        if request_id == self._init_id:
            return True
        pending = self._pending.get(request_id)
        return pending is not None and not pending.awaiting_input

    def deadline_of(self, request_id: int) -> float | None:
        """When ``request_id`` (the handshake's included) times out, if it is pending."""
        if request_id == self._init_id:
            return self._negotiation.deadline
        pending = self._pending.get(request_id)
        return None if pending is None else pending.deadline

    def in_flight(self) -> list[tuple[int, bytes]]:
        """Each pending request's id and encoded message, oldest first, to send again."""
        return [(p.id, p.wire) for p in self._pending.values()]

    def reissue(self, request_ids: Iterable[int], now: float) -> bool:
        """A broken stream lost these requests (stateless era: no resumption): send them
        again under new ids if repeating every one is safe, once per request; ``False``
        when not (the transport then fails them)."""
        lost = [self._pending[rid] for rid in request_ids if rid in self._pending]
        if not lost or any(p.method not in SAFE_TO_REPEAT or p.origin in self._reissued for p in lost):
            return False
        for pending in lost:
            self._reissued.add(pending.origin)
            self._reissue(pending, now)
        return True

    def fail_request(self, request_id: int, reason: FailureReason, message: str, *, now: float,
                     status: int | None = None, detail: dict[str, str] | None = None) -> None:
        """The transport lost ``request_id`` (the handshake's fails the handshake); a no-op
        when it is no longer pending.

        Events: ``RequestFailed`` (or ``InitializeFailed``) with ``status`` and ``detail``.
        """
        if request_id == self._init_id:
            self._initialize_failed(reason, message, status=status, detail=detail, now=now)
            return
        pending = self._pending.get(request_id)
        if pending is not None:
            self._fail(pending, reason, message, now, status=status, detail=detail)

    def fail_handshake(self, reason: FailureReason, message: str, *, now: float,
                       status: int | None = None, detail: dict[str, str] | None = None) -> None:
        """The transport could not carry the handshake (a refused upgrade, a proxy's refusal).

        Events: ``InitializeFailed``.
        """
        self._initialize_failed(reason, message, status=status, detail=detail, now=now)

    def probe_failed(self, why: str, now: float) -> None:
        """The transport saw the probe fail without a JSON-RPC answer (e.g. HTTP 404)."""
        step = self._negotiation.probe_failed(why)
        if step is not None:
            self._init_id = None
            self._take_step(step, now)

    def session_expired(self, now: float) -> None:
        """The server forgot the session: handshake again.

        OutgoingRequest requests stay pending (the transport re-sends them once the new session
        is ready: :meth:`in_flight`); new requests are accepted meanwhile.
        """
        self._advance(Trigger.RECV_SESSION_EXPIRED)
        self._take_step(self._negotiation.restart(), now)

    def extend_handshake(self, until: float) -> None:
        """Let a handshake under way run until at least ``until`` (the user is authorizing)."""
        self._negotiation.extend(until)

    def add_event(self, event: ClientEvent) -> None:
        """Queue an event of the transport's, in order with the session's."""
        self._events.append(event)

    def discard(self, reason: DiscardReason, detail: str, data: bytes | memoryview) -> None:
        """Report something skipped (``MessageDiscarded``, rate-limited warnings)."""
        excerpt = bytes(data[:_EXCERPT])
        self._events.append(MessageDiscarded(reason=reason, detail=detail, excerpt=excerpt,
                                             warning=self._discards.note(reason, detail, excerpt)))

    # ----------------------------------------------------------------- timers

    def handle_timeout(self, now: float) -> None:
        """Fire every deadline at or before ``now``; a no-op when called early.

        Events: ``RequestFailed(reason=TIMEOUT)`` (with ``notifications/cancelled`` sent),
        ``InitializeFailed(reason=TIMEOUT)``.
        """
        negotiation = self._negotiation
        if negotiation.deadline is not None and negotiation.deadline <= now:
            probe = self._init_id
            step = negotiation.timed_out()  # a blind probe falls back: a legacy server may ignore it
            if step is not None:
                self._late_probe = probe
                self._take_step(step, now)
            else:
                stall = self._link.stall
                message = negotiation.timeout_message(now, stall() if stall is not None else "")
                self._initialize_failed(FailureReason.TIMEOUT, message, now=now)
        heap = self._heap
        while heap and heap[0][0] <= now:
            deadline, rid = heappop(heap)
            pending = self._pending.get(rid)
            if pending is None or pending.deadline != deadline:
                continue  # answered already, or the deadline moved on progress
            self._fail(pending, FailureReason.TIMEOUT,
                       f"{pending.method} got no answer within {pending.timeout:g} s", now)
            self._send_cancelled(pending, "request timed out", now)

    # --------------------------------------------------------------- receiving

    def receive_message(self, data: bytes | memoryview, now: float) -> None:
        """Process one JSON text from the peer (a stdio line, an HTTP body, SSE data).

        Events: any of those in :mod:`mcp_sansio.events`; garbage becomes
        ``MessageDiscarded``, never an exception.
        """
        if len(data) >= _SLICE_FROM and type(data) is bytes and self._take_result(data, now):
            return
        try:
            decoded = jsonrpc.decode(data)
        except (msgspec.DecodeError, RecursionError) as exc:
            self._discard_undecodable(bytes(data), exc, now)
            return
        if type(decoded) is Envelope:
            # Fast path: the answer to a plain pending request of ours.
            rid = decoded.id
            pending = self._pending.get(rid) if type(rid) is int else None
            if (pending is not None and pending.paging is None and decoded.method is UNSET
                    and decoded.error is UNSET and decoded.jsonrpc == "2.0"
                    and type(decoded.result) is Raw):
                self._on_result(pending, decoded.result, now)
                return
        if isinstance(decoded, list):
            if not decoded or self._rules is None or not self._rules.batches:
                self.discard(DiscardReason.BATCH_NOT_ALLOWED,
                             "JSON-RPC batches are not allowed in this protocol revision", data)
                return
            for env in decoded:
                self._dispatch(env, data, now)
        else:
            self._dispatch(decoded, data, now)

    def _dispatch(self, env: Envelope, data: bytes | memoryview, now: float) -> None:
        kind = jsonrpc.classify(env)
        if kind is Kind.RESULT or kind is Kind.ERROR:
            self._on_response(env, kind, data, now)
        elif kind is Kind.NOTIFICATION:
            self._on_notification(env, now)
        elif kind is Kind.REQUEST:
            self._on_request(env, now)
        else:
            self.discard(DiscardReason.NOT_JSON_RPC, "not a JSON-RPC 2.0 message", data)

    def _on_response(self, env: Envelope, kind: Kind, data: bytes | memoryview, now: float) -> None:
        rid = env.id
        if kind is Kind.ERROR and (rid is None or rid is UNSET):  # an error about no request
            err = env.error
            assert not isinstance(err, msgspec.UnsetType)  # classify() guarantees it
            self._events.append(PeerErrorReceived(
                error=ErrorData(code=err.code, message=err.message, data=err.data)
            ))
            return
        if rid == self._init_id and rid is not None:
            self._init_id = None
            self._take_step(self._negotiation.answered(env), now)
            return
        if rid == self._late_probe and rid is not None:
            self._late_probe = None
            if self._init_id is not None:
                self._negotiation.late_answer(env)
            return
        pending = self._pending.get(rid) if isinstance(rid, int) else None
        if pending is None:
            if isinstance(rid, int) and 0 < rid <= self._next_id:
                log.debug("ignoring a late answer to request %s", rid)
            else:
                self.discard(DiscardReason.UNKNOWN_ID, f"response to unknown request id {rid!r}", data)
            return
        if kind is Kind.ERROR:
            err = env.error
            assert not isinstance(err, msgspec.UnsetType)  # classify() guarantees it
            self._fail(pending, FailureReason.ERROR_RESPONSE, err.message, now,
                       ErrorData(code=err.code, message=err.message, data=err.data))
            return
        raw = env.result
        assert isinstance(raw, Raw)  # classify() guarantees it
        paging = pending.paging
        if paging is None:
            self._on_result(pending, raw, now)
            return
        try:
            result = _RESULT_DECODERS.get(pending.method, _OPAQUE_DECODER).decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:
            self._fail(pending, FailureReason.INVALID_RESULT, f"invalid {pending.method} result: {exc}", now)
            return
        self._on_page(pending, paging, result, raw, now)

    def _on_result(self, pending: OutgoingRequest, raw: Raw, now: float,
                   result: msgspec.Struct | None = None) -> None:
        """The result of a request that is not a paged list, decoded by method here unless
        :meth:`_take_result` has already."""
        if result is None:
            if (self._modern_meta is not None and pending.method in _INPUT_METHODS
                    and b'"input_required"' in bytes(raw)):
                try:
                    head = _HEAD_DECODER.decode(raw)
                except (msgspec.DecodeError, RecursionError) as exc:
                    self._fail(pending, FailureReason.INVALID_RESULT,
                               f"invalid {pending.method} result: {exc}", now)
                    return
                if head.result_type == "input_required":
                    self._on_input_required(pending, head, now)
                    return
            try:
                result = _RESULT_DECODERS.get(pending.method, _OPAQUE_DECODER).decode(raw)
            except (msgspec.DecodeError, RecursionError) as exc:
                self._fail(pending, FailureReason.INVALID_RESULT,
                           f"invalid {pending.method} result: {exc}", now)
                return
        if pending.rounds is not None and getattr(result, "ttl_ms", None):
            # A result reached through input rounds depends on the answers: never cached.
            result = msgspec.structs.replace(result, ttl_ms=0)
        self._complete(pending, now)
        self._deliver(pending, result, raw, now)

    def _take_result(self, data: bytes, now: float) -> bool:
        """A large answer to a plain pending request, its result decoded straight from its
        slice of ``data`` (see :func:`jsonrpc.result_span`); ``False`` leaves the message to
        the general path: another shape, a paged list, a result that may ask for input
        (stateless era), or a slice that does not decode (an invalid result, or no JSON)."""
        span = jsonrpc.result_span(data)
        if span is None:
            return False
        rid, start, end = span
        pending = self._pending.get(rid)
        if (pending is None or pending.paging is not None
                or (self._modern_meta is not None and b'"input_required"' in data)):
            return False
        raw = Raw(memoryview(data)[start:end])
        try:
            result = _RESULT_DECODERS.get(pending.method, _OPAQUE_DECODER).decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return False
        self._on_result(pending, raw, now, result)
        return True

    def _deliver(self, pending: OutgoingRequest, result: msgspec.Struct, raw: Raw, now: float) -> None:
        """Queue the answer to ``pending``, once the transport has vetted it."""
        vet = self._link.vet
        if vet is not None:
            result = vet(pending.method, result, now)
        self._events.append(ResponseReceived(
            request_id=pending.origin, method=pending.method, result=result, raw=raw
        ))

    def _on_input_required(self, pending: OutgoingRequest, head: modern.ResultHead, now: float) -> None:
        """MRTR: hand each input request to the app as a server request; once all are
        answered, the original request goes again with ``inputResponses``.

        The whole round is checked before any of it reaches the app: one input request
        the client cannot serve fails the original request.
        """
        rounds = pending.rounds = pending.rounds or InputRounds()
        if rounds.count >= self.config.max_input_rounds:
            self._fail(pending, FailureReason.PROTOCOL_ERROR,
                       f"{pending.method}: more than {self.config.max_input_rounds} rounds of input", now)
            return
        asked: list[tuple[str, ServerRequestReceived]] = []
        for key, raw_request in (head.input_requests or {}).items():
            event = input_event(pending.id, key, raw_request, self.capabilities)
            if isinstance(event, str):
                self._fail(pending, FailureReason.PROTOCOL_ERROR, f"{pending.method}: {event}", now)
                return
            asked.append((key, event))
        rounds.begin({key for key, _ in asked}, head.request_state)
        if not asked:  # only requestState: retry at once
            self._retry_with_input(pending, rounds, now)
            return
        for key, event in asked:
            self._mrtr[str(event.request_id)] = (pending.id, key)
            self._inbound.add(event.request_id)
            self._events.append(event)

    def _input_answered(self, input_id: str, response: Raw, now: float) -> None:
        rid, key = self._mrtr.pop(input_id)
        pending = self._pending.get(rid)
        if pending is None:
            return  # the request ended meanwhile (timeout, cancel, an input refused)
        rounds = pending.rounds
        assert rounds is not None  # set by _on_input_required
        if rounds.answered(key, response):
            self._retry_with_input(pending, rounds, now)

    def _retry_with_input(self, pending: OutgoingRequest, rounds: InputRounds, now: float) -> None:
        """MRTR's retry: the original request again, with the round's answers."""
        self._reissue(pending, now, rounds.retry_params(_SENT_DECODER.decode(pending.wire).params))

    def _reissue(self, pending: OutgoingRequest, now: float, params: dict[str, object] | None = None) -> None:
        """Send ``pending`` again under a new id: as it was sent, or with ``params``."""
        if params is None:
            params = _SENT_DECODER.decode(pending.wire).params
        rid = self._allocate_id()
        meta = params.get("_meta")
        params["_meta"] = {**(meta if isinstance(meta, dict) else {}), "progressToken": rid}
        self._complete(pending, now)
        again = OutgoingRequest(rid, pending.method, pending.timeout, pending.deadline, pending.limit_at,
                        pending.origin, jsonrpc.encode_request(rid, pending.method, params),
                        paging=pending.paging, rounds=pending.rounds)
        self._track(again, now)

    def _on_page(self, pending: OutgoingRequest, paging: Paging, result: msgspec.Struct, raw: Raw,
                 now: float) -> None:
        cursor = paging.add(result, now)
        if cursor is None:
            self._complete(pending, now)
            self._deliver(pending, paging.merged(result, now), raw, now)
            return
        refusal = paging.follow(pending.method, cursor, self.config.max_list_pages)
        if refusal is not None:
            self._fail(pending, FailureReason.PAGINATION, refusal, now)
            return
        # Next page: a new wire id, same origin, a fresh per-page deadline.
        self._complete(pending, now)
        rid = self._allocate_id()
        meta = {"progressToken": rid, **(self._era_meta() or {})}
        wire = jsonrpc.encode_request(rid, pending.method, PaginatedRequestParams(cursor=cursor, meta=meta))
        self._track(OutgoingRequest(rid, pending.method, pending.timeout, pending.deadline_from(now),
                            pending.limit_at, pending.origin, wire, paging=paging), now)

    def _track(self, pending: OutgoingRequest, now: float) -> None:
        """Table and send a request that continues an earlier one (a page, a re-issue)."""
        rid = pending.id
        self._pending[rid] = pending
        self._aliases[pending.origin] = rid
        heappush(self._heap, (pending.deadline, rid))
        self._transmit(pending.wire, rid, now)

    def _on_notification(self, env: Envelope, now: float) -> None:
        method = env.method
        assert isinstance(method, str)  # classify() guarantees it
        decoder = _PARAMS_DECODERS.get(method)
        raw = env.params if isinstance(env.params, Raw) else None
        params: object = raw
        if decoder is not None:
            try:
                params = decoder.decode(raw if raw is not None else b"{}")
            except (msgspec.DecodeError, RecursionError) as exc:
                self.discard(DiscardReason.INVALID_PARAMS, f"invalid {method} params: {exc}",
                             memoryview(raw) if raw is not None else b"")
                return
        if isinstance(params, ProgressNotificationParams):
            self._on_progress(params, now)
            return
        if isinstance(params, CancelledNotificationParams):
            cancelled = params.request_id
            if cancelled in self._inbound:
                self._inbound.discard(cancelled)
                self._cancelled.add(cancelled)
        self._events.append(NotificationReceived(method=method, params=params))

    def _on_progress(self, params: ProgressNotificationParams, now: float) -> None:
        token = params.progress_token
        pending = self._pending.get(token) if type(token) is int else None
        if pending is None:
            return  # progress for something already finished: harmless
        if self.config.reset_timeout_on_progress:
            deadline = pending.deadline_from(now)
            if deadline != pending.deadline:
                pending.deadline = deadline
                heappush(self._heap, (deadline, pending.id))
        self._events.append(ProgressReceived(
            request_id=pending.origin, progress=params.progress,
            total=params.total, message=params.message,
        ))

    def _on_request(self, env: Envelope, now: float) -> None:
        method = env.method
        rid = env.id
        assert isinstance(method, str) and isinstance(rid, int | str)  # classify() guarantees it
        # The stateless era has no server->client requests: they ride in results (MRTR).
        need = SERVER_REQUESTS.get(method) if self._modern_meta is None else None
        if need is None or (need and getattr(self.capabilities, need, None) is None):
            self._transmit(jsonrpc.encode_error(rid, jsonrpc.METHOD_NOT_FOUND, f"method not found: {method}"),
                           None, now)
            return
        if method == "ping":
            self._transmit(jsonrpc.encode_result(rid, _EMPTY), None, now)
            return
        raw = env.params if isinstance(env.params, Raw) else b"{}"
        try:
            params = _PARAMS_DECODERS[method].decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:
            error = jsonrpc.encode_error(rid, jsonrpc.INVALID_PARAMS, f"invalid params: {exc}")
            self._transmit(error, None, now)
            return
        self._inbound.add(rid)
        self._events.append(ServerRequestReceived(request_id=rid, method=method, params=params))

    # ---------------------------------------------------------------- helpers

    def _queue(self, message: bytes, request_id: int | None, now: float) -> None:
        """The sending end without a transport: :meth:`messages_to_send` drains it."""
        self._outgoing.append(message)

    def _allocate_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _advance(self, trigger: Trigger) -> None:
        """Move by ``TRANSITIONS``; an illegal move is blamed on whoever caused it: the peer
        for a ``RECV_*`` trigger, the caller otherwise."""
        self._phase = step(TRANSITIONS, self._phase, trigger, peer=PEER_TRIGGERS)

    def _check_phase(self, method: str) -> None:
        """Requests are accepted when ready, and while a lost session is re-opened."""
        if self._result is None:
            raise LocalProtocolError(f"cannot send {method} while the session is {self._phase.value}")
        if self._phase is Phase.FAILED or self._phase is Phase.CLOSED:
            raise LocalProtocolError(f"cannot send {method}: the session is {self._phase.value}")

    def _check_capability(self, method: str) -> None:
        if not server_offers(self.server_capabilities, method):
            raise LocalProtocolError(f"the server did not declare the {required_capability(method)!r}"
                                     f" capability needed by {method}")

    def _take_inbound(self, request_id: RequestId) -> bool:
        if request_id in self._inbound:
            self._inbound.discard(request_id)
            return self._phase is not Phase.CLOSED
        if request_id in self._cancelled:
            self._cancelled.discard(request_id)
            return False
        raise LocalProtocolError(f"no server request {request_id!r} is awaiting an answer")

    def _complete(self, pending: OutgoingRequest, now: float, reason: FailureReason | None = None) -> None:
        live = self._pending
        del live[pending.id]
        if pending.origin != pending.id:  # a later page of a "list everything"
            self._aliases.pop(pending.origin, None)
        heap = self._heap
        # Drop answered heads so the heap tracks live requests in the common FIFO case.
        while heap and heap[0][1] not in live:
            heappop(heap)
        if len(heap) > 64 and len(heap) > 4 * len(live):
            self._heap = [(p.deadline, p.id) for p in live.values()]
            heapq.heapify(self._heap)
        ended = self._link.ended
        if ended is not None:
            ended(pending.id, reason, now)

    def _fail(self, pending: OutgoingRequest, reason: FailureReason, message: str, now: float,
              error: ErrorData | None = None, *, status: int | None = None,
              detail: dict[str, str] | None = None) -> None:
        self._complete(pending, now, reason)
        self._events.append(RequestFailed(request_id=pending.origin, method=pending.method, reason=reason,
                                          message=message, error=error, status=status, detail=detail))

    def _send_cancelled(self, pending: OutgoingRequest, reason: str, now: float) -> None:
        """Tell the server to stop working on ``pending``; not when it already answered
        (with ``input_required``) and only the app's input was awaited."""
        if self._phase is Phase.READY and not pending.awaiting_input:
            self._transmit(jsonrpc.encode_notification(
                "notifications/cancelled", {"requestId": pending.id, "reason": reason}
            ), None, now)

    def _discard_undecodable(self, data: bytes, exc: Exception, now: float) -> None:
        if whole_but_undecodable(data, exc):
            rid = jsonrpc.recover_response_id(data)
            if rid is not None and self._fail_undecodable(rid, data, exc, now):
                return
        reason, detail = undecodable(data, exc)
        garbage = self._link.garbage
        if (garbage is None or reason is DiscardReason.NOT_JSON_RPC or self._phase is Phase.CLOSED
                or not garbage(reason, detail, now)):
            self.discard(reason, detail, data)

    def _fail_undecodable(self, rid: int | str, data: bytes, exc: Exception, now: float) -> bool:
        """Fail the request (or the handshake) whose answer is ``data``, which did not decode,
        rather than let it wait out its deadline; ``False`` when nothing awaits ``rid``."""
        cause = undecodable_answer(data, exc)
        if rid == self._init_id:
            self._initialize_failed(FailureReason.INVALID_RESULT, f"the answer to initialize {cause}",
                                    now=now)
            return True
        pending = self._pending.get(rid) if type(rid) is int else None
        if pending is None:
            return False
        self._fail(pending, FailureReason.INVALID_RESULT, f"the answer to {pending.method} {cause}", now)
        return True
