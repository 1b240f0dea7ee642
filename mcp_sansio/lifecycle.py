"""The client session's lifecycle: phases, the handshake and the era it settles on.

The second layer of :class:`~mcp_sansio.session.ClientSession`, over the request table.
It owns the phase (stepped only by ``TRANSITIONS``, MCP "Lifecycle"), the handshake
request under way and its :class:`~mcp_sansio.negotiation.Negotiation`, and what the
handshake settled: the server's answer, the revision's rules and the :class:`Era`, one
value set at each adoption. It also fires deadlines (the handshake's and the requests').
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from heapq import heappop
from typing import Final

from . import jsonrpc, modern
from .capabilities import required_capability, server_offers
from .config import ClientConfig
from .errors import LocalProtocolError
from .events import ErrorData, FailureReason, InitializeCompleted, InitializeFailed
from .machines import step
from .negotiation import Adopt, Decision, Negotiation, SendDiscover, SendInitialize
from .request_table import Link, RequestTable
from .requests import OutgoingRequest
from .types import (
    ClientCapabilities,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    ServerCapabilities,
)
from .versions import VersionRules

__all__ = ["PEER_TRIGGERS", "TRANSITIONS", "Era", "Lifecycle", "Phase", "Trigger"]


class Phase(enum.Enum):
    """Where the session is in its lifecycle."""

    NEW = "new"
    INITIALIZING = "initializing"
    READY = "ready"
    EXPIRED = "expired"
    FAILED = "failed"
    CLOSED = "closed"


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


class Era(enum.Enum):
    """The protocol family the handshake settled on; set once per handshake."""

    LEGACY = "legacy"
    """The ``initialize`` handshake (2024-11-05 to 2025-11-25)."""
    MODERN = "modern"
    """Stateless (2026-07-28, after ``server/discover``): every request carries ``_meta``
    with the version, capabilities and client info; server requests ride in results."""


# Hot paths compare against this alias: in CPython 3.11 looking up an enum member costs
# about as much as a function call (the metaclass's attribute access).
_MODERN: Final = Era.MODERN


class Lifecycle(RequestTable):
    """The phase, the handshake and the era of a session (see the module)."""

    def __init__(self, config: ClientConfig, capabilities: ClientCapabilities,
                 link: Link | None = None) -> None:
        super().__init__(config, capabilities, link)
        self._phase = Phase.NEW
        self._init_id: int | None = None  # the handshake request out (discover or initialize)
        self._late_probe: int | None = None  # a blind probe that timed out: its late answer may decide
        self._negotiation = Negotiation(config)  # the handshake's sub-states and decisions
        self._result: InitializeResult | None = None
        self._rules: VersionRules | None = None
        self._era: Era | None = None  # set with _result and _rules at each adoption
        self._request_meta: dict[str, object] = {}  # Era.MODERN: the _meta every request carries
        self._allowed: set[str] = set()  # methods whose capability check passed
        self._client_info = Implementation(
            name=config.client_name, version=config.client_version, title=config.client_title
        )
        self._log_level: str | None = None  # Era.MODERN: the level later requests carry

    # --------------------------------------------------------------- queries

    @property
    def era(self) -> str | None:
        """``"legacy"`` (the ``initialize`` handshake) or ``"modern"`` (stateless), once known."""
        return None if self._era is None else self._era.value

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

    def next_deadline(self) -> float | None:
        """The earliest armed deadline (it may be one that no longer matters: waking
        early is harmless, :meth:`handle_timeout` then does nothing)."""
        at = self._heap[0][0] if self._heap else None
        init = self._negotiation.deadline
        if init is not None and (at is None or init < at):
            at = init
        return at

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

    # --------------------------------------------------------- the handshake

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
        self._carry_out(self._negotiation.opening(), now)

    def initialize(self, *, now: float) -> None:
        """Send ``initialize`` offering the preferred revision.

        Raises:
            LocalProtocolError: the session is past its start.
        Events: ``InitializeCompleted`` or ``InitializeFailed`` later.
        """
        self._carry_out(SendInitialize(version=self.config.protocol_versions[0]), now)

    def _carry_out(self, decision: Decision, now: float) -> None:
        """Carry out what the negotiation decided."""
        if isinstance(decision, SendInitialize | SendDiscover):
            self._advance(Trigger.RETRY_INITIALIZE if decision.retry else Trigger.SEND_INITIALIZE)
            self._negotiation.sent(decision, now)
            rid = self._init_id = self._allocate_id()
            if isinstance(decision, SendInitialize):
                params: object = InitializeRequestParams(protocol_version=decision.version,
                                                         capabilities=self.capabilities,
                                                         client_info=self._client_info)
                self._transmit(jsonrpc.encode_request(rid, "initialize", params), rid, now)
            else:
                meta = modern.request_meta(decision.version, self.capabilities, self._client_info, None)
                self._transmit(jsonrpc.encode_request(rid, "server/discover", {"_meta": meta}), rid, now)
        elif isinstance(decision, Adopt):
            self._init_id = None
            self._negotiation.settled()
            result = decision.result
            self._advance(Trigger.RECV_INITIALIZE_RESULT)
            self._result = result
            self._rules = decision.rules
            self._allowed = set()
            self._era = _MODERN if decision.modern else Era.LEGACY
            if decision.modern:
                self._request_meta = modern.request_meta(result.protocol_version, self.capabilities,
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
            self._initialize_failed(decision.reason, decision.message, error=decision.error,
                                    offered=decision.offered, received=decision.received, now=now)

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
        decision = self._negotiation.probe_failed(why)
        if decision is not None:
            self._init_id = None
            self._carry_out(decision, now)

    def session_expired(self, now: float) -> None:
        """The server forgot the session: handshake again.

        OutgoingRequest requests stay pending (the transport re-sends them once the new session
        is ready: :meth:`in_flight`); new requests are accepted meanwhile.
        """
        self._advance(Trigger.RECV_SESSION_EXPIRED)
        self._carry_out(self._negotiation.restart(), now)

    def extend_handshake(self, until: float) -> None:
        """Let a handshake under way run until at least ``until`` (the user is authorizing)."""
        self._negotiation.extend(until)

    # ---------------------------------------------------------------- timers

    def handle_timeout(self, now: float) -> None:
        """Fire every deadline at or before ``now``; a no-op when called early.

        Events: ``RequestFailed(reason=TIMEOUT)`` (with ``notifications/cancelled`` sent),
        ``InitializeFailed(reason=TIMEOUT)``.
        """
        negotiation = self._negotiation
        if negotiation.deadline is not None and negotiation.deadline <= now:
            probe = self._init_id
            decision = negotiation.timed_out()  # a blind probe falls back: a legacy server may ignore it
            if decision is not None:
                self._late_probe = probe
                self._carry_out(decision, now)
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

    # --------------------------------------------------------------- helpers

    def _era_meta(self) -> dict[str, object] | None:
        """The ``_meta`` every stateless-era request carries (``None`` in the handshake era)."""
        if self._era is not _MODERN:
            return None
        meta = self._request_meta
        if self._log_level is not None:
            return {**meta, modern.LOG_LEVEL_KEY: self._log_level}
        return meta

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

    def _send_cancelled(self, pending: OutgoingRequest, reason: str, now: float) -> None:
        """Tell the server to stop working on ``pending``; not when it already answered
        (with ``input_required``) and only the app's input was awaited."""
        if self._phase is Phase.READY and not pending.awaiting_input:
            self._transmit(jsonrpc.encode_notification(
                "notifications/cancelled", {"requestId": pending.id, "reason": reason}
            ), None, now)
