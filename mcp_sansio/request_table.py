"""The client session's request table: ids, the requests awaiting answers, their deadlines.

The first layer of :class:`~mcp_sansio.session.ClientSession` (``RequestTable`` ->
``Lifecycle`` -> ``Inbound`` -> ``ClientSession``, each module holding its own state).
This one owns the outgoing side: the next id, every :class:`~mcp_sansio.requests.OutgoingRequest`
by wire id (and a paged list's origin id), the deadline heap, the event queue and the
:class:`Link` to the transport. A request leaves the table answered (:meth:`_complete`)
or failed (:meth:`_fail`, a ``RequestFailed`` event). No transport, no clock: every call
takes ``now``.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable
from heapq import heappop, heappush
from typing import Final, NamedTuple

import msgspec

from . import jsonrpc
from .config import ClientConfig
from .discards import DiscardLog
from .events import (
    ClientEvent,
    DiscardReason,
    ErrorData,
    FailureReason,
    MessageDiscarded,
    RequestFailed,
    RequestId,
)
from .requests import SAFE_TO_REPEAT, OutgoingRequest
from .types import ClientCapabilities

__all__ = ["Link", "RequestTable"]


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


class _Sent(msgspec.Struct):
    """The params of a request we sent, read back to send it again."""

    params: dict[str, object] = msgspec.field(default_factory=dict)


_SENT_DECODER: Final = msgspec.json.Decoder(_Sent)
_EXCERPT: Final = 200


class RequestTable:
    """The outgoing requests of a session, by id, with their deadlines (see the module)."""

    def __init__(self, config: ClientConfig, capabilities: ClientCapabilities,
                 link: Link | None = None) -> None:
        self.config = config
        self.capabilities = capabilities
        self._outgoing: list[bytes] = []
        link = link or Link(send=self._queue)
        self._transmit = link.send
        self._link = link
        self._next_id = 0
        self._pending: dict[int, OutgoingRequest] = {}
        self._aliases: dict[int, int] = {}  # origin id of a paged list -> current page id
        self._heap: list[tuple[float, int]] = []  # (deadline, wire id); stale entries are skipped
        self._events: deque[ClientEvent] = deque()
        self._reissued: set[int] = set()  # origins re-issued after a lost stream (once each)
        self._discards = DiscardLog()  # what the host hears of skipped messages

    # -------------------------------------- queries and the transport's side

    def next_event(self) -> ClientEvent | None:
        """The oldest queued event, or ``None``."""
        return self._events.popleft() if self._events else None

    @property
    def next_request_id(self) -> int:
        """The id the next request sent will carry (telemetry names its span before sending)."""
        return self._next_id + 1

    def pending_requests(self) -> list[RequestId]:
        """Ids the caller is still waiting on (origin ids for paged lists)."""
        return [p.origin for p in self._pending.values()]

    def messages_to_send(self) -> list[bytes]:
        """Drain the encoded messages queued when the session has no link."""
        out, self._outgoing = self._outgoing, []
        return out

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

    def add_event(self, event: ClientEvent) -> None:
        """Queue an event of the transport's, in order with the session's."""
        self._events.append(event)

    def discard(self, reason: DiscardReason, detail: str, data: bytes | memoryview) -> None:
        """Report something skipped (``MessageDiscarded``, rate-limited warnings)."""
        excerpt = bytes(data[:_EXCERPT])
        self._events.append(MessageDiscarded(reason=reason, detail=detail, excerpt=excerpt,
                                             warning=self._discards.note(reason, detail, excerpt)))

    # --------------------------------------------------------------- helpers

    def _queue(self, message: bytes, request_id: int | None, now: float) -> None:
        """The sending end without a transport: :meth:`messages_to_send` drains it."""
        self._outgoing.append(message)

    def _allocate_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _track(self, pending: OutgoingRequest, now: float) -> None:
        """Table and send a request that continues an earlier one (a page, a re-issue)."""
        rid = pending.id
        self._pending[rid] = pending
        self._aliases[pending.origin] = rid
        heappush(self._heap, (pending.deadline, rid))
        self._transmit(pending.wire, rid, now)

    def _reissue(self, pending: OutgoingRequest, now: float, params: dict[str, object] | None = None) -> None:
        """Send ``pending`` again under a new id: as it was sent, or with ``params``."""
        if params is None:
            params = self._sent_params(pending)
        rid = self._allocate_id()
        meta = params.get("_meta")
        params["_meta"] = {**(meta if isinstance(meta, dict) else {}), "progressToken": rid}
        self._complete(pending, now)
        again = OutgoingRequest(rid, pending.method, pending.timeout, pending.deadline, pending.limit_at,
                                pending.origin, jsonrpc.encode_request(rid, pending.method, params),
                                paging=pending.paging, rounds=pending.rounds)
        self._track(again, now)

    def _sent_params(self, pending: OutgoingRequest) -> dict[str, object]:
        """The params ``pending`` went out with, read back from its wire (a fresh dict)."""
        return _SENT_DECODER.decode(pending.wire).params

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
