"""The client side of an MCP session: lifecycle, request table, deadlines. No transport.

Messages go in as JSON texts (:meth:`ClientSession.receive_message`) and come out as
encoded JSON texts handed to the transport's :class:`Link` (or queued for
:meth:`~ClientSession.messages_to_send` when there is none). A transport owns a session
and talks to it through its public methods, each of which takes the clock; the session
talks back only through the link. Implements the MCP "Lifecycle", "Cancellation",
"Progress" and "Pagination" sections of every revision, 2024-11-05 to 2026-07-28.

The session is four layers, one module each, each holding its own state:
:mod:`~mcp_sansio.request_table` (ids, pending requests, deadlines, events),
:mod:`~mcp_sansio.lifecycle` (phase, handshake, era), :mod:`~mcp_sansio.inbound`
(receiving; the server's requests) and this one (the local calls).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from heapq import heappush
from typing import Final, get_args

import msgspec
from msgspec import UNSET, Raw

from . import jsonrpc
from .calls import Calls
from .capabilities import listen_filter, server_offers
from .config import ClientConfig
from .errors import LocalProtocolError
from .events import ConnectionTerminated, FailureReason, InitializeFailed, RequestId, ResponseReceived
from .inbound import Inbound
from .lifecycle import PEER_TRIGGERS, TRANSITIONS, Era, Phase, Trigger
from .request_table import Link
from .requests import LIST_FIELDS, OutgoingRequest, Paging, Params, with_progress_token
from .types import (
    ClientCapabilities,
    EmptyResult,
    LoggingLevel,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

__all__ = ["LIST_FIELDS", "PEER_TRIGGERS", "TRANSITIONS", "ClientSession", "Era", "Link", "Params", "Phase",
           "Trigger", "server_offers"]

_LOG_LEVELS: Final = frozenset(get_args(LoggingLevel))
# Hot paths compare against these aliases (see lifecycle.py).
_READY: Final = Phase.READY
_MODERN: Final = Era.MODERN


class ClientSession(Inbound, Calls):
    """Transport-agnostic MCP client state machine.

    A transport owns one, passing a :class:`Link` for what goes out, and feeds it each
    incoming JSON text with :meth:`receive_message`; without a link, messages queue for
    :meth:`messages_to_send`. Every local call returns at once; answers arrive as events
    from :meth:`next_event`.
    """

    def __init__(self, config: ClientConfig, capabilities: ClientCapabilities,
                 link: Link | None = None) -> None:
        super().__init__(config, capabilities, link)
        self._listen_id: int | None = None  # the open subscriptions/listen request
        self._subscriptions: set[str] = set()
        self.outgoing_meta: Mapping[str, str] | None = None
        """Entries added to ``params._meta`` of every request sent while set, beside what the
        session puts there itself (the progress token, the stateless era's fields, which win
        a clash): the trace context (``traceparent``, ``tracestate``, ``baggage``) a driver's
        telemetry sets around one call."""

    # ----------------------------------------------------------- local calls

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
        extra = self._era_meta() if self._era is _MODERN else None
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
