"""A minimal sans-IO MCP server role over stdio framing: bytes in, events out.

It answers ``initialize`` (negotiating the revision) and ``ping`` itself, and turns every
other request into a ``ClientRequestReceived`` event the application answers with
``respond()`` / ``respond_error()``. It can send progress, logging and other
notifications, and requests to the client (sampling, elicitation, roots). Enough for
the demo server and in-memory tests; not a full server framework.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Final

import msgspec
from msgspec import Raw

from . import jsonrpc
from .errors import LocalProtocolError
from .events import (
    DiscardReason,
    ErrorData,
    Event,
    FailureReason,
    MessageDiscarded,
    NotificationReceived,
    RequestFailed,
    RequestId,
    ResponseReceived,
)
from .framing import LineBuffer
from .jsonrpc import Envelope, Kind
from .types import (
    NOTIFICATION_PARAMS,
    REQUEST_PARAMS,
    RESULT_TYPES,
    CancelledNotificationParams,
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    ServerCapabilities,
)
from .versions import SUPPORTED_VERSIONS

__all__ = ["ClientRequestReceived", "ServerSession"]

_MIB: Final = 1024 * 1024


class ClientRequestReceived(Event, frozen=True, kw_only=True):
    """The client sent request ``request_id``; answer with ``respond()``."""

    request_id: RequestId
    method: str
    params: msgspec.Struct
    progress_token: str | int | None


class _ProgressMeta(msgspec.Struct):
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


_META_DECODER: Final = msgspec.json.Decoder(_ProgressMeta)


class ServerSession:
    """The server side of one MCP connection with newline-delimited framing.

    Feed the client's bytes to :meth:`receive_data`; write :meth:`data_to_send`.
    """

    def __init__(
        self,
        server_info: Implementation,
        capabilities: ServerCapabilities,
        *,
        instructions: str | None = None,
        protocol_versions: tuple[str, ...] = SUPPORTED_VERSIONS,
        max_line_bytes: int = 32 * _MIB,
    ) -> None:
        self.server_info = server_info
        self.capabilities = capabilities
        self.instructions = instructions
        self.protocol_versions = protocol_versions
        self.protocol_version: str | None = None
        self.client_info: Implementation | None = None
        self.initialized = False
        self._lines = LineBuffer(max_line_bytes)
        self._out = bytearray()
        self._events: deque[Event] = deque()
        self._inbound: set[RequestId] = set()
        self._cancelled: set[RequestId] = set()  # cancelled by the peer, not yet answered
        self._outbound: dict[int, str] = {}
        self._next_id = 0

    def receive_data(self, data: bytes) -> None:
        """Bytes from the client; ``b""`` at EOF.

        Events: ``ClientRequestReceived``, ``NotificationReceived``, ``ResponseReceived``,
        ``RequestFailed``, ``MessageDiscarded``.
        """
        lines = self._lines.close() if not data else self._lines.feed(data)
        for line in lines:
            self._receive_line(line)

    def next_event(self) -> Event | None:
        """The oldest queued event, or ``None``."""
        return self._events.popleft() if self._events else None

    def data_to_send(self) -> bytes:
        """Bytes to write to the client."""
        data = bytes(self._out)
        self._out.clear()
        return data

    def respond(self, request_id: RequestId, result: msgspec.Struct | Mapping[str, object]) -> None:
        """Answer the client's request ``request_id``.

        Raises:
            LocalProtocolError: no such request awaits an answer (a request the client
                cancelled is silently not answered), or ``result`` holds a value JSON
                cannot represent (the request then still awaits an answer).
        """
        message = jsonrpc.encode_result(request_id, result)
        if self._take(request_id):
            self._write(message)

    def respond_error(self, request_id: RequestId, code: int, message: str, data: object = None) -> None:
        """Answer the client's request with a JSON-RPC error.

        Raises:
            LocalProtocolError: no such request awaits an answer, or ``data`` holds a value
                JSON cannot represent.
        """
        encoded = jsonrpc.encode_error(request_id, code, message, data)
        if self._take(request_id):
            self._write(encoded)

    def notify(self, method: str, params: msgspec.Struct | Mapping[str, object] | None = None) -> None:
        """Send a notification (``notifications/tools/list_changed``, ...)."""
        self._write(jsonrpc.encode_notification(method, params))

    def send_progress(self, token: str | int, progress: float, total: float | None = None,
                      message: str | None = None) -> None:
        """``notifications/progress`` for the request that carried ``token``."""
        self.notify("notifications/progress", ProgressNotificationParams(
            progress_token=token, progress=progress, total=total, message=message
        ))

    def send_log(self, level: str, data: object, logger: str | None = None) -> None:
        """``notifications/message``."""
        self.notify("notifications/message", LoggingMessageNotificationParams(
            level=level, data=data, logger=logger  # type: ignore[arg-type]  # Literal checked by the client
        ))

    def request(self, method: str, params: msgspec.Struct | Mapping[str, object] | None = None) -> int:
        """Send a request to the client (``sampling/createMessage``, ``roots/list``, ...).

        Returns:
            Its id; the answer arrives as ``ResponseReceived`` or ``RequestFailed``.
        """
        self._next_id += 1
        self._outbound[self._next_id] = method
        self._write(jsonrpc.encode_request(self._next_id, method, params))
        return self._next_id

    # ---------------------------------------------------------------- internals

    def _receive_line(self, line: bytes) -> None:
        try:
            decoded = jsonrpc.decode(line)
        except (msgspec.DecodeError, RecursionError) as exc:
            if isinstance(exc, msgspec.ValidationError | RecursionError):  # JSON, not an envelope
                code, reason, what = jsonrpc.INVALID_REQUEST, DiscardReason.NOT_JSON_RPC, "invalid request"
            else:
                code, reason, what = jsonrpc.PARSE_ERROR, DiscardReason.NOT_JSON, "parse error"
            self._write(jsonrpc.encode_error(None, code, f"{what}: {exc}"))
            self._events.append(MessageDiscarded(reason=reason, detail=str(exc), excerpt=line[:200]))
            return
        for env in decoded if isinstance(decoded, list) else [decoded]:
            kind = jsonrpc.classify(env)
            if kind is Kind.REQUEST:
                self._on_request(env)
            elif kind is Kind.NOTIFICATION:
                self._on_notification(env)
            elif kind is Kind.RESULT or kind is Kind.ERROR:
                self._on_response(env)
            else:
                self._write(jsonrpc.encode_error(None, jsonrpc.INVALID_REQUEST, "invalid request"))

    def _on_request(self, env: Envelope) -> None:
        method, rid = env.method, env.id
        assert isinstance(method, str) and isinstance(rid, int | str)  # classify() guarantees it
        if method == "ping":
            self._write(jsonrpc.encode_result(rid, {}))
            return
        tp = REQUEST_PARAMS.get(method)
        if tp is None:
            self._write(jsonrpc.encode_error(rid, jsonrpc.METHOD_NOT_FOUND, f"method not found: {method}"))
            return
        raw = env.params if isinstance(env.params, Raw) else b"{}"
        try:
            params = msgspec.json.decode(raw, type=tp)
            token = (_META_DECODER.decode(raw).meta or {}).get("progressToken")
        except (msgspec.DecodeError, RecursionError) as exc:
            self._write(jsonrpc.encode_error(rid, jsonrpc.INVALID_PARAMS, f"invalid params: {exc}"))
            return
        if method == "initialize":
            assert isinstance(params, InitializeRequestParams)
            self._initialize(rid, params)
            return
        self._inbound.add(rid)
        self._events.append(ClientRequestReceived(
            request_id=rid, method=method, params=params,
            progress_token=token if isinstance(token, str | int) else None,
        ))

    def _initialize(self, rid: RequestId, params: InitializeRequestParams) -> None:
        asked = params.protocol_version
        version = asked if asked in self.protocol_versions else self.protocol_versions[0]
        self.protocol_version = version
        self.client_info = params.client_info
        self._write(jsonrpc.encode_result(rid, InitializeResult(
            protocol_version=version, capabilities=self.capabilities,
            server_info=self.server_info, instructions=self.instructions,
        )))

    def _on_notification(self, env: Envelope) -> None:
        method = env.method
        assert isinstance(method, str)  # classify() guarantees it
        if method == "notifications/initialized":
            self.initialized = True
        tp = NOTIFICATION_PARAMS.get(method)
        params: object = env.params if isinstance(env.params, Raw) else None
        if tp is not None:
            try:
                params = msgspec.json.decode(params if isinstance(params, Raw) else b"{}", type=tp)
            except (msgspec.DecodeError, RecursionError):
                return
        if isinstance(params, CancelledNotificationParams):
            cancelled = params.request_id
            if cancelled in self._inbound:
                self._inbound.discard(cancelled)
                self._cancelled.add(cancelled)
        self._events.append(NotificationReceived(method=method, params=params))

    def _on_response(self, env: Envelope) -> None:
        rid = env.id
        if not isinstance(rid, int):
            return  # we only send int ids
        method = self._outbound.pop(rid, None)
        if method is None:
            return
        if isinstance(env.error, jsonrpc.ErrorObject):
            err = env.error
            self._events.append(RequestFailed(
                request_id=rid, method=method, reason=FailureReason.ERROR_RESPONSE,
                message=err.message, error=ErrorData(code=err.code, message=err.message, data=err.data),
            ))
            return
        raw = env.result
        assert isinstance(raw, Raw)
        try:
            # A method the types do not know: only ``_meta``; the event's ``raw`` has the JSON.
            result = msgspec.json.decode(raw, type=RESULT_TYPES.get(method, EmptyResult))
        except (msgspec.DecodeError, RecursionError) as exc:
            self._events.append(RequestFailed(
                request_id=rid, method=method, reason=FailureReason.INVALID_RESULT,
                message=str(exc)))
            return
        self._events.append(ResponseReceived(request_id=rid, method=method, result=result, raw=raw))

    def _take(self, request_id: RequestId) -> bool:
        if request_id in self._inbound:
            self._inbound.discard(request_id)
            return True
        if request_id in self._cancelled:
            self._cancelled.discard(request_id)
            return False
        raise LocalProtocolError(f"no client request {request_id!r} is awaiting an answer")

    def _write(self, message: bytes) -> None:
        self._out += message
        self._out += b"\n"
