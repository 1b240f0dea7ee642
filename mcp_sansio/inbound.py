"""The client session's receiving side: answers, notifications and the server's requests.

The third layer of :class:`~mcp_sansio.session.ClientSession`, over the lifecycle. It
owns the server requests awaiting the app's answer (and those the server cancelled since)
and the stateless era's input rounds (MRTR). It implements MCP "Cancellation",
"Progress" and "Pagination" on the receiving end.

How a ``tools/call`` result is decoded (all in this module but the last two steps):

1. :meth:`Inbound.receive_message` gets the JSON text from the transport;
2. its fast path decodes the envelope (:func:`mcp_sansio.jsonrpc.decode`), result as
   ``Raw``, and finds the :class:`~mcp_sansio.requests.OutgoingRequest` by id (a large
   message: :meth:`Inbound._take_result` slices the result out without the envelope pass);
3. :meth:`Inbound._on_result` decodes ``Raw`` with the method's decoder from
   ``CLIENT_RESULTS`` (:data:`mcp_sansio.types.CALL_TOOL`: ``CallToolResult``);
4. :meth:`Inbound._deliver` queues ``ResponseReceived(result=...)`` (after the link's
   ``vet``, which only the HTTP transport has, for ``tools/list``);
5. the driver's ``call_tool`` returns ``CALL_TOOL.of(result)``, typed ``CallToolResult``
   (``drivers/mcp_sansio_base/_async/client.py``, ``AsyncClient._call``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from heapq import heappush
from typing import Final

import msgspec
from msgspec import UNSET, Raw

from . import jsonrpc, modern
from .capabilities import SERVER_REQUESTS
from .config import ClientConfig
from .discards import undecodable, undecodable_answer, whole_but_undecodable
from .errors import LocalProtocolError
from .events import (
    DiscardReason,
    ErrorData,
    FailureReason,
    NotificationReceived,
    PeerErrorReceived,
    ProgressReceived,
    RequestId,
    ResponseReceived,
    ServerRequestReceived,
)
from .jsonrpc import Envelope, Kind
from .lifecycle import Era, Lifecycle, Phase
from .request_table import Link
from .requests import CLIENT_RESULTS, InputRounds, OutgoingRequest, Paging, input_event
from .types import (
    NOTIFICATION_PARAMS,
    REQUEST_PARAMS,
    CancelledNotificationParams,
    ClientCapabilities,
    EmptyResult,
    PaginatedRequestParams,
    ProgressNotificationParams,
    WireStruct,
)

__all__ = ["Inbound"]

log = logging.getLogger("mcp_sansio.session")

_RESULT_DECODERS: Final[Mapping[str, msgspec.json.Decoder[WireStruct]]] = {
    method: kind.decoder for method, kind in CLIENT_RESULTS.items()
}
_PARAMS_DECODERS: Final[Mapping[str, msgspec.json.Decoder[msgspec.Struct]]] = {
    method: msgspec.json.Decoder(tp) for method, tp in {**REQUEST_PARAMS, **NOTIFICATION_PARAMS}.items()
}
_HEAD_DECODER: Final = msgspec.json.Decoder(modern.ResultHead)


# Result of a method the types do not know: only ``_meta``; the event's ``raw`` has the JSON.
_OPAQUE_DECODER: Final[msgspec.json.Decoder[WireStruct]] = msgspec.json.Decoder(EmptyResult)
_MODERN: Final = Era.MODERN  # an alias for the hot path (see lifecycle.py)
# The requests a server may answer with ``resultType: "input_required"``.
_INPUT_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})
_EMPTY: Final[dict[str, object]] = {}
# From this size on, a message goes first through ``_take_result``, which skips the
# envelope pass: finding the result by its frame costs a few Python steps, the envelope
# pass a scan of the whole result (they break even at about 1.4 KB).
_SLICE_FROM: Final = 1536


class Inbound(Lifecycle):
    """What a session receives, and the server requests it owes answers (see the module)."""

    def __init__(self, config: ClientConfig, capabilities: ClientCapabilities,
                 link: Link | None = None) -> None:
        super().__init__(config, capabilities, link)
        self._inbound: set[RequestId] = set()  # server requests awaiting our answer
        self._cancelled: set[RequestId] = set()  # ... that the server has since cancelled
        self._mrtr: dict[str, tuple[int, str]] = {}  # input request id -> (request id, key)

    # --------------------------------------------------------------- answers

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
            self._carry_out(self._negotiation.answered(env), now)
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
            if (self._era is _MODERN and pending.method in _INPUT_METHODS
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
                or (self._era is _MODERN and b'"input_required"' in data)):
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

    # --------------------------------------------------- input rounds (MRTR)

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
        self._reissue(pending, now, rounds.retry_params(self._sent_params(pending)))

    # ------------------------------------- notifications and server requests

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
        need = SERVER_REQUESTS.get(method) if self._era is not _MODERN else None
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

    def _take_inbound(self, request_id: RequestId) -> bool:
        if request_id in self._inbound:
            self._inbound.discard(request_id)
            return self._phase is not Phase.CLOSED
        if request_id in self._cancelled:
            self._cancelled.discard(request_id)
            return False
        raise LocalProtocolError(f"no server request {request_id!r} is awaiting an answer")

    # --------------------------------------------------------------- garbage

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
