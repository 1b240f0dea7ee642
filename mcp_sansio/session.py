"""The client side of an MCP session: lifecycle, request table, deadlines. No transport.

Messages go in as JSON texts (``receive_message``) and come out as encoded JSON texts
that a transport layer frames (stdio) or posts (HTTP). Implements the MCP "Lifecycle",
"Cancellation", "Progress" and "Pagination" sections of revisions 2024-11-05..2025-11-25.
"""

from __future__ import annotations

import enum
import heapq
import logging
import math
from collections import deque
from collections.abc import Mapping
from heapq import heappop, heappush
from typing import Final, get_args

import msgspec
from msgspec import UNSET, Raw

from . import jsonrpc, modern, skills
from .config import ClientConfig
from .discards import DiscardLog
from .errors import LocalProtocolError, RemoteProtocolError
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
from .negotiation import Adopt, Negotiation, SendDiscover, SendInitialize, Step
from .types import (
    NOTIFICATION_PARAMS,
    REQUEST_PARAMS,
    RESULT_TYPES,
    CallToolRequestParams,
    CancelledNotificationParams,
    ClientCapabilities,
    CompleteRequestParams,
    CompletionArgument,
    CompletionContext,
    EmptyResult,
    GetPromptRequestParams,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    LoggingLevel,
    PaginatedRequestParams,
    ProgressNotificationParams,
    PromptReference,
    ReadResourceRequestParams,
    ResourceTemplateReference,
    ServerCapabilities,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from .versions import VersionRules

__all__ = ["LIST_FIELDS", "PEER_TRIGGERS", "TRANSITIONS", "ClientSession", "Phase", "Trigger",
           "server_offers"]

log = logging.getLogger(__name__)

Params = msgspec.Struct | Mapping[str, object] | None


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

# Which server capability a request needs: (capability, sub-flag or "").
_REQUIRES: Final[Mapping[str, tuple[str, str]]] = {
    "tools/list": ("tools", ""),
    "tools/call": ("tools", ""),
    "resources/list": ("resources", ""),
    "resources/templates/list": ("resources", ""),
    "resources/read": ("resources", ""),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts", ""),
    "prompts/get": ("prompts", ""),
    "completion/complete": ("completions", ""),
    "logging/setLevel": ("logging", ""),
    "skills/list": ("extensions", skills.EXTENSION),
    "skills/get": ("extensions", skills.EXTENSION),
}

# Server -> client requests and the client capability each needs ("" = always allowed).
_SERVER_REQUESTS: Final[Mapping[str, str]] = {
    "ping": "",
    "roots/list": "roots",
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
}

# List methods that "list everything" can follow, and the field holding the items.
LIST_FIELDS: Final[Mapping[str, str]] = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resource_templates",
    "prompts/list": "prompts",
    "skills/list": "skills",
}

_RESULT_DECODERS: Final[Mapping[str, msgspec.json.Decoder[msgspec.Struct]]] = {
    method: msgspec.json.Decoder(tp) for method, tp in {
        **RESULT_TYPES, "skills/list": skills.ListSkillsResult, "skills/get": skills.GetSkillResult,
    }.items()
}
_PARAMS_DECODERS: Final[Mapping[str, msgspec.json.Decoder[msgspec.Struct]]] = {
    method: msgspec.json.Decoder(tp) for method, tp in {**REQUEST_PARAMS, **NOTIFICATION_PARAMS}.items()
}
_HEAD_DECODER: Final = msgspec.json.Decoder(modern.ResultHead)
_INPUT_DECODER: Final = msgspec.json.Decoder(modern.InputRequest)


class _Sent(msgspec.Struct):
    """The params of a request we sent, read back to send it again."""

    params: dict[str, object] = msgspec.field(default_factory=dict)


_SENT_DECODER: Final = msgspec.json.Decoder(_Sent)
# Result of a method the types do not know: only ``_meta``; the event's ``raw`` has the JSON.
_OPAQUE_DECODER: Final[msgspec.json.Decoder[msgspec.Struct]] = msgspec.json.Decoder(EmptyResult)
# Input requests a result may carry (MRTR) and the client capability each needs.
_INPUT_REQUESTS: Final[Mapping[str, str]] = {
    "roots/list": "roots",
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
}
# The requests a server may answer with ``resultType: "input_required"``.
_INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_LOG_LEVELS: Final = frozenset(get_args(LoggingLevel))
_EMPTY: Final[dict[str, object]] = {}
_EXCERPT: Final = 200
# From this size on, a message goes first through ``_take_result``, which skips the
# envelope pass: finding the result by its frame costs a few Python steps, the envelope
# pass a scan of the whole result (they break even at about 1.4 KB).
_SLICE_FROM: Final = 1536


class _Pending(msgspec.Struct):
    """One request awaiting its answer (a Struct: built in C, once per request)."""

    id: int
    method: str
    timeout: float
    deadline: float
    limit_at: float | None
    origin: int
    wire: bytes  # the encoded request, for a transport that must re-send it
    # Set only for "list everything" operations.
    pages: int = 0
    items: list[object] | None = None
    seen: set[str] | None = None
    hints: list[tuple[float, int | None, str | None]] | None = None  # per page: (now, ttlMs, cacheScope)
    # Set only in the stateless era, while gathering multi round-trip input (MRTR).
    rounds: int = 0
    awaiting: set[str] | None = None  # input keys the app has yet to answer
    responses: dict[str, Raw] | None = None
    state: str | None = None


class ClientSession:
    """Transport-agnostic MCP client state machine.

    Subclasses provide the transport by overriding :meth:`_send` (one encoded JSON-RPC
    message) and by calling :meth:`receive_message` with each incoming JSON text.
    Every local call returns at once; answers arrive as events from :meth:`next_event`.
    """

    def __init__(self, config: ClientConfig, capabilities: ClientCapabilities) -> None:
        self.config = config
        self.capabilities = capabilities
        self._phase = Phase.NEW
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        self._aliases: dict[int, int] = {}  # origin id of a paged list -> current page id
        self._heap: list[tuple[float, int]] = []
        self._events: deque[ClientEvent] = deque()
        self._outgoing: list[bytes] = []
        self._inbound: set[RequestId] = set()  # server requests awaiting our answer
        self._cancelled: set[RequestId] = set()  # ... that the server has since cancelled
        self._init_id: int | None = None  # the handshake request out (discover or initialize)
        self._negotiation = Negotiation(config)  # the handshake's sub-states and decisions
        # A transport's own next deadline, which :meth:`next_deadline` includes (stdio: the
        # shutdown ladder's next step): one call per I/O instead of an override's two.
        self._transport_at: float | None = None
        self._result: InitializeResult | None = None
        self._allowed: set[str] = set()  # methods whose capability check passed
        self._default_timeout = config.request_timeout
        self._max_request_timeout = config.max_request_timeout
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
        self._discards = DiscardLog()  # what the host hears of skipped messages

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

    def next_event(self) -> ClientEvent | None:
        """The oldest queued event, or ``None``."""
        return self._events.popleft() if self._events else None

    def next_deadline(self) -> float | None:
        """The earliest armed deadline (it may be one that no longer matters: waking
        early is harmless, :meth:`handle_timeout` then does nothing)."""
        at = self._heap[0][0] if self._heap else None
        init = self._negotiation.deadline
        if init is not None and (at is None or init < at):
            at = init
        own = self._transport_at
        if own is not None and (at is None or own < at):
            at = own
        return at

    def pending_requests(self) -> list[RequestId]:
        """Ids the caller is still waiting on (origin ids for paged lists)."""
        return [p.origin for p in self._pending.values()]

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

    def _take_step(self, step: Step, now: float) -> None:
        """Carry out what the negotiation decided."""
        if isinstance(step, SendInitialize | SendDiscover):
            self._advance(Trigger.RETRY_INITIALIZE if step.retry else Trigger.SEND_INITIALIZE)
            self._negotiation.sent(step, now)
            rid = self._init_id = self._allocate_id()
            if isinstance(step, SendInitialize):
                params: object = InitializeRequestParams(protocol_version=step.version,
                                                         capabilities=self.capabilities,
                                                         client_info=self._client_info)
                self._send_request(rid, jsonrpc.encode_request(rid, "initialize", params))
            else:
                meta = modern.request_meta(step.version, self.capabilities, self._client_info, None)
                self._send_request(rid, jsonrpc.encode_request(rid, "server/discover", {"_meta": meta}))
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
                self._send(jsonrpc.encode_notification("notifications/initialized", None))
            self._session_ready()
            self._events.append(InitializeCompleted(
                protocol_version=result.protocol_version, server_info=result.server_info,
                capabilities=result.capabilities, instructions=result.instructions, result=result,
            ))
        else:
            self._initialize_failed(step.reason, step.message, error=step.error, offered=step.offered,
                                    received=step.received)

    def _extend_handshake(self, until: float) -> None:
        """Let a handshake under way run until at least ``until`` (the user is authorizing)."""
        self._negotiation.extend(until)

    def _stall(self) -> str:
        """Hook: where the transport stands with the handshake request (``"; ..."``), if it knows."""
        return ""

    def _probe_failed(self, now: float, why: str) -> None:
        """The transport saw the probe fail without a JSON-RPC answer (e.g. HTTP 404)."""
        step = self._negotiation.probe_failed(why)
        if step is not None:
            self._init_id = None
            self._take_step(step, now)

    def _initialize_failed(
        self, reason: FailureReason, message: str, *, error: ErrorData | None = None,
        offered: str = "", received: tuple[str, ...] = (), status: int | None = None,
        detail: dict[str, str] | None = None,
    ) -> None:
        self._init_id = None
        self._negotiation.settled()
        self._advance(Trigger.RECV_INITIALIZE_FAILURE)
        for pending in list(self._pending.values()):  # only after an expiry: requests waited
            self._fail(pending, FailureReason.SESSION_EXPIRED,
                       f"the session expired and a new one could not be opened: {message}")
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
            timeout: seconds until the request fails with TIMEOUT (default from config;
                ``None`` in the config means no deadline).
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

    def _request(self, method: str, params: Params, now: float, timeout: float | None,
                 all_pages: bool, *, fresh: bool = True, endless: bool = False) -> int:
        """:meth:`request`; ``fresh`` params were built here, so the token goes in place;
        an ``endless`` request (``subscriptions/listen``) has no deadline at all."""
        if self._phase is not _READY:
            self._check_phase(method)
        if method not in self._allowed:
            self._check_capability(method)  # raises when not declared
            self._allowed.add(method)
        if all_pages and method not in LIST_FIELDS:
            raise LocalProtocolError(f"{method} is not a paginated list")
        rid = self._next_id + 1
        # Encoded first, so params that JSON cannot represent fail before anything changes.
        extra = None if self._modern_meta is None else self._era_meta()
        if fresh and extra is None and getattr(params, "meta", UNSET) is None:
            params.meta = {"progressToken": rid}  # type: ignore[union-attr]  # a Struct of ours with _meta
            wire = jsonrpc.encode_request(rid, method, params)
        else:
            wire = jsonrpc.encode_request(rid, method, _with_progress_token(params, rid, extra))
        self._next_id = rid
        if endless:
            timeout = math.inf  # progress cannot arm a deadline either
        elif timeout is None:
            timeout = self._default_timeout
        deadline = now + timeout
        limit = self._max_request_timeout
        limit_at = None
        if limit is not None and not endless:
            limit_at = now + limit
            deadline = min(deadline, limit_at)
        pending = _Pending(rid, method, timeout, deadline, limit_at, rid, wire)
        if all_pages:
            pending.items, pending.seen, pending.hints = [], set(), []
        self._pending[rid] = pending
        if not endless:
            heappush(self._heap, (deadline, rid))
        self._send_request(rid, wire)
        return rid

    def call_tool(
        self, name: str, arguments: Mapping[str, object] | None = None, *, now: float,
        timeout: float | None = None,
    ) -> int:
        """``tools/call``. See :meth:`request` for the rest."""
        args = arguments if arguments is None or isinstance(arguments, dict) else dict(arguments)
        params = CallToolRequestParams(name=name, arguments=args)
        return self._request("tools/call", params, now, timeout, False)

    def list_tools(self, *, now: float, cursor: str | None = None, all_pages: bool = True,
                   timeout: float | None = None) -> int:
        """``tools/list``, every page by default."""
        return self._list("tools/list", cursor, all_pages, now, timeout)

    def list_resources(self, *, now: float, cursor: str | None = None, all_pages: bool = True,
                       timeout: float | None = None) -> int:
        """``resources/list``, every page by default."""
        return self._list("resources/list", cursor, all_pages, now, timeout)

    def list_resource_templates(self, *, now: float, cursor: str | None = None,
                                all_pages: bool = True, timeout: float | None = None) -> int:
        """``resources/templates/list``, every page by default."""
        return self._list("resources/templates/list", cursor, all_pages, now, timeout)

    def list_prompts(self, *, now: float, cursor: str | None = None, all_pages: bool = True,
                     timeout: float | None = None) -> int:
        """``prompts/list``, every page by default."""
        return self._list("prompts/list", cursor, all_pages, now, timeout)

    def read_resource(self, uri: str, *, now: float, timeout: float | None = None) -> int:
        """``resources/read``."""
        return self._request("resources/read", ReadResourceRequestParams(uri=uri), now, timeout, False)

    def list_skills(self, *, now: float, cursor: str | None = None, all_pages: bool = True,
                    timeout: float | None = None) -> int:
        """``skills/list`` (Skills extension), every page by default; reads no skill file.

        Raises:
            LocalProtocolError: the server did not declare the extension (and see :meth:`request`).
        """
        return self._list("skills/list", cursor, all_pages, now, timeout)

    def get_skill(self, uri: str, *, now: float, timeout: float | None = None) -> int:
        """``skills/get`` (Skills extension): the entry of the skill whose ``SKILL.md`` is ``uri``.

        Raises:
            LocalProtocolError: the server did not declare the extension (and see :meth:`request`).
        """
        return self._request("skills/get", skills.GetSkillRequestParams(uri=uri), now, timeout, False)

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
            self._complete(old)  # nobody waits on the old listen: no event for it
            self._send_cancelled(old, "the subscription filter changed")
        caps = self.server_capabilities or ServerCapabilities()
        filt: dict[str, object] = {}
        if caps.tools is not None:
            filt["toolsListChanged"] = True
        if caps.prompts is not None:
            filt["promptsListChanged"] = True
        if caps.resources is not None:
            filt["resourcesListChanged"] = True
            if self._subscriptions:
                filt["resourceSubscriptions"] = sorted(self._subscriptions)
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

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None, *, now: float,
                   timeout: float | None = None) -> int:
        """``prompts/get``."""
        params = GetPromptRequestParams(name=name, arguments=dict(arguments) if arguments else None)
        return self._request("prompts/get", params, now, timeout, False)

    def complete(
        self, ref: PromptReference | ResourceTemplateReference | Mapping[str, object],
        argument_name: str, value: str, *, now: float,
        context_arguments: Mapping[str, str] | None = None, timeout: float | None = None,
    ) -> int:
        """``completion/complete`` for one argument of a prompt or resource template.

        Raises:
            LocalProtocolError: ``ref`` is not a prompt or resource-template reference.
        """
        if isinstance(ref, Mapping):
            try:
                ref = msgspec.convert(ref, PromptReference | ResourceTemplateReference)
            except msgspec.ValidationError as exc:
                raise LocalProtocolError(f"invalid completion ref: {exc}") from exc
        params = CompleteRequestParams(
            ref=ref,
            argument=CompletionArgument(name=argument_name, value=value),
            context=CompletionContext(arguments=dict(context_arguments)) if context_arguments else None,
        )
        return self._request("completion/complete", params, now, timeout, False)

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

    def notify(self, method: str, params: Params = None) -> None:
        """Send a notification, e.g. ``notifications/roots/list_changed``.

        Raises:
            LocalProtocolError: the session is not ready, or ``params`` hold a value JSON
                cannot represent.
        """
        if self._phase is not Phase.READY:
            raise LocalProtocolError(f"cannot send {method} while the session is {self._phase.value}")
        self._send(jsonrpc.encode_notification(method, params))

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
        self._fail(pending, FailureReason.CANCELLED, reason or "cancelled by the client")
        self._send_cancelled(pending, reason or "cancelled by the client")

    def respond(self, request_id: RequestId, result: msgspec.Struct | Mapping[str, object]) -> None:
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
                self._input_answered(request_id, Raw(msgspec.json.encode(result)))  # encodes: checked above
                return
            self._send(message)

    def respond_error(self, request_id: RequestId, code: int, message: str, data: object = None) -> None:
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
                    self._fail(pending, FailureReason.ERROR_RESPONSE, message,
                               ErrorData(code=code, message=message, data=data))
                return
            self._send(encoded)

    def connection_lost(self, message: str, *, returncode: int | None = None,
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
            self._fail(pending, reason, message)
        self._cancelled.update(self._inbound)
        self._inbound.clear()
        self._mrtr.clear()
        self._heap.clear()
        self._events.append(ConnectionTerminated(reason=reason, message=message, returncode=returncode,
                                                 warning=self._discards.summary()))

    # ----------------------------------------------------------------- timers

    def handle_timeout(self, now: float) -> None:
        """Fire every deadline at or before ``now``; a no-op when called early.

        Events: ``RequestFailed(reason=TIMEOUT)`` (with ``notifications/cancelled`` sent),
        ``InitializeFailed(reason=TIMEOUT)``.
        """
        negotiation = self._negotiation
        if negotiation.deadline is not None and negotiation.deadline <= now:
            step = negotiation.timed_out()  # a blind probe falls back: a legacy server may ignore it
            if step is not None:
                self._take_step(step, now)
            else:
                message = negotiation.timeout_message(now, self._stall())
                self._initialize_failed(FailureReason.TIMEOUT, message)
        heap = self._heap
        while heap and heap[0][0] <= now:
            deadline, rid = heappop(heap)
            pending = self._pending.get(rid)
            if pending is None or pending.deadline != deadline:
                continue  # answered already, or the deadline moved on progress
            self._fail(pending, FailureReason.TIMEOUT,
                       f"{pending.method} got no answer within {pending.timeout:g} s")
            self._send_cancelled(pending, "request timed out")

    # --------------------------------------------------------------- receiving

    def receive_message(self, data: bytes | memoryview, now: float) -> None:
        """Process one JSON text from the peer (a stdio line, an HTTP body, SSE data).

        Events: any of those in :mod:`mcp_sansio.events`; garbage becomes
        ``MessageDiscarded``, never an exception.
        """
        if len(data) >= _SLICE_FROM and type(data) is bytes and self._take_result(data):
            return
        try:
            decoded = jsonrpc.decode(data)
        except (msgspec.DecodeError, RecursionError) as exc:
            self._discard_undecodable(bytes(data), exc)
            return
        if type(decoded) is Envelope:
            # Fast path: the answer to a plain pending request of ours.
            rid = decoded.id
            pending = self._pending.get(rid) if type(rid) is int else None
            if (pending is not None and pending.items is None and decoded.method is UNSET
                    and decoded.error is UNSET and decoded.jsonrpc == "2.0"
                    and type(decoded.result) is Raw):
                self._on_result(pending, decoded.result)
                return
        if isinstance(decoded, list):
            if not decoded or self._rules is None or not self._rules.batches:
                self._discard(DiscardReason.BATCH_NOT_ALLOWED,
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
            self._on_request(env)
        else:
            self._discard(DiscardReason.NOT_JSON_RPC, "not a JSON-RPC 2.0 message", data)

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
        pending = self._pending.get(rid) if isinstance(rid, int) else None
        if pending is None:
            if isinstance(rid, int) and 0 < rid <= self._next_id:
                log.debug("ignoring a late answer to request %s", rid)
            else:
                self._discard(DiscardReason.UNKNOWN_ID, f"response to unknown request id {rid!r}", data)
            return
        if kind is Kind.ERROR:
            err = env.error
            assert not isinstance(err, msgspec.UnsetType)  # classify() guarantees it
            self._fail(pending, FailureReason.ERROR_RESPONSE, err.message,
                       ErrorData(code=err.code, message=err.message, data=err.data))
            return
        raw = env.result
        assert isinstance(raw, Raw)  # classify() guarantees it
        if pending.items is None:
            self._on_result(pending, raw)
            return
        try:
            result = _RESULT_DECODERS.get(pending.method, _OPAQUE_DECODER).decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:
            self._fail(pending, FailureReason.INVALID_RESULT, f"invalid {pending.method} result: {exc}")
            return
        self._on_page(pending, result, raw, now)

    def _on_result(self, pending: _Pending, raw: Raw, result: msgspec.Struct | None = None) -> None:
        """The result of a request that is not a paged list, decoded by method here unless
        :meth:`_take_result` has already."""
        if result is None:
            if (self._modern_meta is not None and pending.method in _INPUT_METHODS
                    and b'"input_required"' in bytes(raw)):
                try:
                    head = _HEAD_DECODER.decode(raw)
                except (msgspec.DecodeError, RecursionError) as exc:
                    self._fail(pending, FailureReason.INVALID_RESULT,
                               f"invalid {pending.method} result: {exc}")
                    return
                if head.result_type == "input_required":
                    self._on_input_required(pending, head)
                    return
            try:
                result = _RESULT_DECODERS.get(pending.method, _OPAQUE_DECODER).decode(raw)
            except (msgspec.DecodeError, RecursionError) as exc:
                self._fail(pending, FailureReason.INVALID_RESULT,
                           f"invalid {pending.method} result: {exc}")
                return
        if pending.rounds and getattr(result, "ttl_ms", None):
            # A result reached through input rounds depends on the answers: never cached.
            result = msgspec.structs.replace(result, ttl_ms=0)
        self._complete(pending)
        self._deliver(pending, result, raw)

    def _take_result(self, data: bytes) -> bool:
        """A large answer to a plain pending request, its result decoded straight from its
        slice of ``data`` (see :func:`jsonrpc.result_span`); ``False`` leaves the message to
        the general path: another shape, a paged list, a result that may ask for input
        (stateless era), or a slice that does not decode (an invalid result, or no JSON)."""
        span = jsonrpc.result_span(data)
        if span is None:
            return False
        rid, start, end = span
        pending = self._pending.get(rid)
        if (pending is None or pending.items is not None
                or (self._modern_meta is not None and b'"input_required"' in data)):
            return False
        raw = Raw(memoryview(data)[start:end])
        try:
            result = _RESULT_DECODERS.get(pending.method, _OPAQUE_DECODER).decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return False
        self._on_result(pending, raw, result)
        return True

    def _deliver(self, pending: _Pending, result: msgspec.Struct, raw: Raw) -> None:
        """Queue the answer to ``pending`` (a hook for transports that vet results)."""
        self._events.append(ResponseReceived(
            request_id=pending.origin, method=pending.method, result=result, raw=raw
        ))

    def _on_input_required(self, pending: _Pending, head: modern.ResultHead) -> None:
        """MRTR: hand each input request to the app as a server request; once all are
        answered, the original request goes again with ``inputResponses``.

        The whole round is checked before any of it reaches the app: one input request
        the client cannot serve fails the original request.
        """
        pending.rounds += 1
        if pending.rounds > self.config.max_input_rounds:
            self._fail(pending, FailureReason.PROTOCOL_ERROR,
                       f"{pending.method}: more than {self.config.max_input_rounds} rounds of input")
            return
        asked: list[tuple[str, ServerRequestReceived]] = []
        for key, raw_request in (head.input_requests or {}).items():
            event = self._input_request(pending, key, raw_request)
            if isinstance(event, str):
                self._fail(pending, FailureReason.PROTOCOL_ERROR, f"{pending.method}: {event}")
                return
            asked.append((key, event))
        pending.state = head.request_state
        pending.responses = {}
        if not asked:  # only requestState: retry at once
            self._retry_with_input(pending)
            return
        pending.awaiting = {key for key, _ in asked}
        for key, event in asked:
            self._mrtr[str(event.request_id)] = (pending.id, key)
            self._inbound.add(event.request_id)
            self._events.append(event)

    def _input_request(self, pending: _Pending, key: str, raw: Raw) -> ServerRequestReceived | str:
        """One entry of ``inputRequests`` as the event for the app, or why it cannot be one."""
        try:
            request = _INPUT_DECODER.decode(raw)
            need = _INPUT_REQUESTS.get(request.method)
            if need is None:
                return f"the server asked for {request.method!r}, which is not an input request"
            if getattr(self.capabilities, need, None) is None:
                return (f"the server asked for {request.method!r}, which needs the {need!r} "
                        "capability this client did not declare")
            params = _PARAMS_DECODERS[request.method].decode(request.params)
        except (msgspec.DecodeError, RecursionError) as exc:
            return f"invalid input request {key!r}: {exc}"
        return ServerRequestReceived(request_id=f"input:{pending.id}:{key}", method=request.method,
                                     params=params)

    def _input_answered(self, input_id: str, response: Raw) -> None:
        rid, key = self._mrtr.pop(input_id)
        pending = self._pending.get(rid)
        if pending is None:
            return  # the request ended meanwhile (timeout, cancel, an input refused)
        responses, awaiting = pending.responses, pending.awaiting
        assert responses is not None and awaiting is not None  # set by _on_input_required
        responses[key] = response
        awaiting.discard(key)
        if not awaiting:
            self._retry_with_input(pending)

    def _retry_with_input(self, pending: _Pending) -> None:
        """MRTR's retry: the original request with this round's answers and the server's
        ``requestState`` echoed (either left out when the server gave none)."""
        params = _SENT_DECODER.decode(pending.wire).params
        params.pop("inputResponses", None)
        params.pop("requestState", None)
        if pending.responses:
            params["inputResponses"] = pending.responses
        if pending.state is not None:
            params["requestState"] = pending.state
        self._reissue(pending, params)

    def _reissue(self, pending: _Pending, params: dict[str, object] | None = None) -> None:
        """Send ``pending`` again under a new id: as it was sent, or with ``params``."""
        if params is None:
            params = _SENT_DECODER.decode(pending.wire).params
        rid = self._allocate_id()
        meta = params.get("_meta")
        params["_meta"] = {**(meta if isinstance(meta, dict) else {}), "progressToken": rid}
        self._complete(pending)
        again = _Pending(rid, pending.method, pending.timeout, pending.deadline, pending.limit_at,
                         pending.origin, jsonrpc.encode_request(rid, pending.method, params),
                         pages=pending.pages, items=pending.items, seen=pending.seen,
                         hints=pending.hints, rounds=pending.rounds)
        self._pending[rid] = again
        self._aliases[pending.origin] = rid
        heappush(self._heap, (again.deadline, rid))
        self._send_request(rid, again.wire)

    def _on_page(self, pending: _Pending, result: msgspec.Struct, raw: Raw, now: float) -> None:
        field = LIST_FIELDS[pending.method]
        items, seen, hints = pending.items, pending.seen, pending.hints
        assert items is not None and seen is not None and hints is not None  # set together in request()
        items.extend(getattr(result, field))
        pending.pages += 1
        hints.append((now, getattr(result, "ttl_ms", None), getattr(result, "cache_scope", None)))
        cursor: str | None = getattr(result, "next_cursor", None)
        if not cursor:
            self._complete(pending)
            merged = msgspec.structs.replace(result, **{field: items, "next_cursor": None})
            if pending.pages > 1:
                merged = msgspec.structs.replace(merged, **_merged_hints(hints, now))
            self._deliver(pending, merged, raw)
            return
        if cursor in seen:
            self._fail(pending, FailureReason.PAGINATION,
                       f"{pending.method}: the server repeated cursor {cursor[:80]!r}")
            return
        if pending.pages >= self.config.max_list_pages:
            self._fail(pending, FailureReason.PAGINATION,
                       f"{pending.method}: gave up after {pending.pages} pages")
            return
        seen.add(cursor)
        # Next page: a new wire id, same origin, a fresh per-page deadline.
        self._complete(pending)
        rid = self._allocate_id()
        timeout = pending.timeout
        deadline = now + timeout
        if pending.limit_at is not None and pending.limit_at < deadline:
            deadline = pending.limit_at
        meta = {"progressToken": rid, **(self._era_meta() or {})}
        wire = jsonrpc.encode_request(rid, pending.method, PaginatedRequestParams(cursor=cursor, meta=meta))
        page = _Pending(rid, pending.method, timeout, deadline, pending.limit_at, pending.origin, wire,
                        pages=pending.pages, items=items, seen=seen, hints=hints)
        self._pending[rid] = page
        self._aliases[pending.origin] = rid
        heappush(self._heap, (deadline, rid))
        self._send_request(rid, wire)

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
                self._discard(DiscardReason.INVALID_PARAMS, f"invalid {method} params: {exc}",
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
            deadline = now + pending.timeout
            if pending.limit_at is not None and pending.limit_at < deadline:
                deadline = pending.limit_at
            if deadline != pending.deadline:
                pending.deadline = deadline
                heappush(self._heap, (deadline, pending.id))
        self._events.append(ProgressReceived(
            request_id=pending.origin, progress=params.progress,
            total=params.total, message=params.message,
        ))

    def _on_request(self, env: Envelope) -> None:
        method = env.method
        rid = env.id
        assert isinstance(method, str) and isinstance(rid, int | str)  # classify() guarantees it
        # The stateless era has no server->client requests: they ride in results (MRTR).
        need = _SERVER_REQUESTS.get(method) if self._modern_meta is None else None
        if need is None or (need and getattr(self.capabilities, need, None) is None):
            self._send(jsonrpc.encode_error(rid, jsonrpc.METHOD_NOT_FOUND, f"method not found: {method}"))
            return
        if method == "ping":
            self._send(jsonrpc.encode_result(rid, _EMPTY))
            return
        raw = env.params if isinstance(env.params, Raw) else b"{}"
        try:
            params = _PARAMS_DECODERS[method].decode(raw)
        except (msgspec.DecodeError, RecursionError) as exc:
            self._send(jsonrpc.encode_error(rid, jsonrpc.INVALID_PARAMS, f"invalid params: {exc}"))
            return
        self._inbound.add(rid)
        self._events.append(ServerRequestReceived(request_id=rid, method=method, params=params))

    # ---------------------------------------------------------------- helpers

    def _send(self, message: bytes) -> None:
        """Queue one encoded message; transports override this to frame or post it."""
        self._outgoing.append(message)

    def _session_ready(self) -> None:
        """Hook: the handshake (first or after expiry) has just completed."""

    def _restart(self, now: float) -> None:
        """The transport learned that the server forgot the session: handshake again.

        Pending requests stay pending (the transport re-sends them once the new session
        is ready); new requests are accepted meanwhile.
        """
        self._advance(Trigger.RECV_SESSION_EXPIRED)
        self._take_step(self._negotiation.restart(), now)

    def _send_request(self, request_id: int, message: bytes) -> None:
        """Queue an encoded request; transports that track requests per message override it."""
        self._send(message)

    def messages_to_send(self) -> list[bytes]:
        """Drain the encoded messages queued by the base implementation of ``_send``."""
        out, self._outgoing = self._outgoing, []
        return out

    def _allocate_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _advance(self, trigger: Trigger) -> None:
        """Move by ``TRANSITIONS``; an illegal move is blamed on whoever caused it: the peer
        for a ``RECV_*`` trigger, the caller otherwise."""
        new = TRANSITIONS.get((self._phase, trigger))
        if new is None:
            error = RemoteProtocolError if trigger in PEER_TRIGGERS else LocalProtocolError
            raise error(f"{trigger.value} is not allowed while {self._phase.value}")
        self._phase = new

    def _check_phase(self, method: str) -> None:
        """Requests are accepted when ready, and while a lost session is re-opened."""
        if self._result is None:
            raise LocalProtocolError(f"cannot send {method} while the session is {self._phase.value}")
        if self._phase is Phase.FAILED or self._phase is Phase.CLOSED:
            raise LocalProtocolError(f"cannot send {method}: the session is {self._phase.value}")

    def _check_capability(self, method: str) -> None:
        if not server_offers(self.server_capabilities, method):
            capability, flag = _REQUIRES[method]
            what = f"{capability}.{flag}" if flag else capability
            raise LocalProtocolError(f"the server did not declare the {what!r} capability needed by {method}")

    def _take_inbound(self, request_id: RequestId) -> bool:
        if request_id in self._inbound:
            self._inbound.discard(request_id)
            return self._phase is not Phase.CLOSED
        if request_id in self._cancelled:
            self._cancelled.discard(request_id)
            return False
        raise LocalProtocolError(f"no server request {request_id!r} is awaiting an answer")

    def _complete(self, pending: _Pending) -> None:
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

    def _fail(self, pending: _Pending, reason: FailureReason, message: str,
              error: ErrorData | None = None) -> None:
        self._complete(pending)
        self._events.append(RequestFailed(
            request_id=pending.origin, method=pending.method, reason=reason, message=message, error=error
        ))

    def _send_cancelled(self, pending: _Pending, reason: str) -> None:
        """Tell the server to stop working on ``pending``; not when it already answered
        (with ``input_required``) and only the app's input was awaited."""
        if self._phase is Phase.READY and not pending.awaiting:
            self._send(jsonrpc.encode_notification(
                "notifications/cancelled", {"requestId": pending.id, "reason": reason}
            ))

    def _discard(self, reason: DiscardReason, detail: str, data: bytes | memoryview) -> None:
        excerpt = bytes(data[:_EXCERPT])
        self._events.append(MessageDiscarded(reason=reason, detail=detail, excerpt=excerpt,
                                             warning=self._discards.note(reason, detail, excerpt)))

    def _discard_undecodable(self, data: bytes, exc: Exception) -> None:
        if isinstance(exc, msgspec.ValidationError | RecursionError):  # JSON, not an envelope
            self._discard(DiscardReason.NOT_JSON_RPC, f"not JSON-RPC: {exc}", data)
            return
        try:
            data.decode()
        except UnicodeDecodeError:
            self._discard(DiscardReason.INVALID_UTF8, "the message is not valid UTF-8", data)
            return
        self._discard(DiscardReason.NOT_JSON, f"not JSON: {exc}", data)

    def _list(self, method: str, cursor: str | None, all_pages: bool, now: float,
              timeout: float | None) -> int:
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        return self._request(method, params, now, timeout, all_pages)


def server_offers(capabilities: ServerCapabilities | None, method: str) -> bool:
    """Whether a server that declared ``capabilities`` may be sent ``method``: it declared
    the capability the method needs, and the setting (``resources.subscribe``) or the
    extension (in ``extensions``) it needs within it. Methods that need none are offered."""
    need = _REQUIRES.get(method)
    if need is None:
        return True
    capability, flag = need
    declared = getattr(capabilities, capability, None)
    if declared is None or not flag:
        return declared is not None
    return flag in declared if isinstance(declared, dict) else bool(getattr(declared, flag, None))


def _with_progress_token(params: Params, rid: int, extra: Mapping[str, object] | None) -> object:
    """``params`` with ``_meta.progressToken`` set to the request id (MCP "Progress"), plus
    the stateless era's per-request ``_meta`` when ``extra`` is given.

    A caller's Struct is copied, never changed (the session sets the token in place in
    the params it built itself, see ``ClientSession._request``).

    Raises:
        LocalProtocolError: (stateless era) ``params`` do not encode as a JSON object.
    """
    if params is None:
        return {"_meta": {"progressToken": rid, **(extra or {})}}
    if isinstance(params, msgspec.Struct):
        meta = getattr(params, "meta", UNSET)
        if extra is not None and (meta is UNSET or params.__struct_config__.array_like):
            return _with_progress_token(_json_object(params), rid, extra)
        if meta is UNSET:
            return params
        merged = {**(meta or {}), "progressToken": rid, **(extra or {})}
        return msgspec.structs.replace(params, meta=merged)
    meta = params.get("_meta")
    base = meta if isinstance(meta, Mapping) else {}
    return {**params, "_meta": {**base, "progressToken": rid, **(extra or {})}}


def _merged_hints(pages: list[tuple[float, int | None, str | None]], now: float) -> dict[str, object]:
    """The caching hints of a list gathered from several pages (MCP 2026-07-28 "Caching",
    "Interaction with Pagination"): fresh while every page is, each from when it arrived;
    ``public`` only if every page is; no hints at all if a page had none."""
    if any(ttl is None for _, ttl, _ in pages):
        return {"ttl_ms": None, "cache_scope": None}
    until = min(at * 1000 + max(ttl or 0, 0) for at, ttl, _ in pages)
    scopes = {scope for *_, scope in pages}
    scope = "public" if scopes == {"public"} else None if scopes == {None} else "private"
    return {"ttl_ms": max(0, math.floor(until - now * 1000)), "cache_scope": scope}


def _json_object(params: msgspec.Struct) -> dict[str, object]:
    """A Struct as the JSON object it encodes to, so a ``_meta`` member can join it.

    Raises:
        LocalProtocolError: it holds a value JSON cannot represent, or is no object.
    """
    try:
        value = msgspec.json.decode(msgspec.json.encode(params))
    except (TypeError, RecursionError) as exc:
        raise LocalProtocolError(f"cannot encode the params as JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise LocalProtocolError(f"the params must encode as a JSON object, not {type(value).__name__}")
    return value
