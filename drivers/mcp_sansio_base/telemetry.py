"""OpenTelemetry for every driver, by the OpenTelemetry semantic conventions for MCP.

The conventions (``docs/gen-ai/mcp.md``, status development; now kept in the
``semantic-conventions-genai`` repository) define what is emitted here:

* spans named ``{mcp.method.name} {target}`` (target: the tool or prompt name), kind
  ``CLIENT`` on the side that sends a request and ``SERVER`` on the side that handles it,
  with ``mcp.method.name``, ``jsonrpc.request.id``, ``mcp.session.id``,
  ``mcp.protocol.version``, ``gen_ai.tool.name`` / ``gen_ai.prompt.name`` /
  ``mcp.resource.uri``, ``gen_ai.operation.name`` (``execute_tool``), ``network.transport``,
  ``network.protocol.name``, ``server.address`` / ``server.port``, and on failure
  ``error.type`` (the JSON-RPC code, ``tool_error`` for a result with ``isError``, else
  the failure's reason) and ``rpc.response.status_code`` (the JSON-RPC code), status ERROR;
* the trace context (``traceparent``, ``tracestate``, ``baggage``) in ``params._meta`` of
  each request, injected by the client and extracted by the server with the global
  propagator;
* histograms ``mcp.client.operation.duration``, ``mcp.server.operation.duration``,
  ``mcp.client.session.duration`` and ``mcp.server.session.duration`` (seconds, buckets
  ``BUCKETS``).

Only ``opentelemetry-api`` is used (the ``otel`` extra), imported lazily.
A connection looks once, when it is made, for a configured provider (the global ones, or
those given to :func:`instrument`); without the API or a provider its telemetry is
``None`` and each call costs one ``is None`` test.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import msgspec

from mcp_sansio.events import (
    ConnectionTerminated,
    FailureReason,
    RequestFailed,
    RequestId,
    ResponseReceived,
    ServerRequestReceived,
)

if TYPE_CHECKING:
    from mcp_sansio.front import SessionFront
    from mcp_sansio.server import Ask, CallOutcome, Endpoint, HandlerCallReceived, RequestAnswered

__all__ = ["BUCKETS", "SERVER_NAME", "ClientTelemetry", "ServerTelemetry", "client_telemetry", "instrument",
           "server_telemetry", "uninstrument"]

BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
"""The explicit bucket boundaries the conventions give every MCP duration histogram."""

SERVER_NAME: Final = "mcp_sansio.server.name"
"""The attribute naming the server as the host configured it (not in the conventions)."""

_SCOPE: Final = "mcp-sansio"
_TOOL_CALL: Final = "tools/call"
_NAMED: Final = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_HTTP: Final = {"network.transport": "tcp", "network.protocol.name": "http",
                "network.protocol.version": "1.1"}  # h11 on both sides
_URI_METHODS: Final = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})


class _Otel:
    """The tracer, meter, instruments and API functions of one pair of providers."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        from opentelemetry import context, propagate, trace

        self.trace = trace
        self.context = context
        self.inject = propagate.inject
        self.extract = propagate.extract
        self.tracer = None if tracer_provider is None else tracer_provider.get_tracer(_SCOPE)
        self.client_op = self.server_op = self.client_session = self.server_session = None
        if meter_provider is not None:
            meter = meter_provider.get_meter(_SCOPE)

            def histogram(name: str, description: str) -> Any:
                return meter.create_histogram(name, unit="s", description=description,
                                              explicit_bucket_boundaries_advisory=BUCKETS)

            self.client_op = histogram("mcp.client.operation.duration",
                                       "The duration of the MCP request or notification as observed on "
                                       "the sender from the time it was sent until the response or ack "
                                       "is received.")
            self.server_op = histogram("mcp.server.operation.duration",
                                       "MCP request or notification duration as observed on the receiver "
                                       "from the time it was received until the result or ack is sent.")
            self.client_session = histogram("mcp.client.session.duration",
                                            "The duration of the MCP session as observed on the MCP client.")
            self.server_session = histogram("mcp.server.session.duration",
                                            "The duration of the MCP session as observed on the MCP server.")


class _State:
    """Which providers to use, and the telemetry made for them."""

    explicit: tuple[object, object] | None = None
    cache: tuple[tuple[int, int], _Otel] | None = None
    api_missing = False


_state: Final = _State()


def instrument(*, tracer_provider: object = None, meter_provider: object = None) -> None:
    """Use these providers instead of the global ones for connections made from now on
    (``None``: no spans, or no metrics). :func:`uninstrument` goes back to the globals."""
    _state.explicit = (tracer_provider, meter_provider)
    _state.cache = None


def uninstrument() -> None:
    """Back to the global providers (for connections made from now on)."""
    _state.explicit = _state.cache = None


def _current() -> _Otel | None:
    """The telemetry of the configured providers, or ``None`` when there is none."""
    state = _state
    if state.api_missing:
        return None
    if state.explicit is not None:
        tracer_provider, meter_provider = state.explicit
    elif "opentelemetry.trace" not in sys.modules and "opentelemetry.metrics" not in sys.modules:
        return None  # nobody imported the API, so nobody configured a provider: no import here
    else:
        try:
            from opentelemetry import metrics, trace
        except ImportError:
            state.api_missing = True
            return None
        tracer_provider, meter_provider = trace.get_tracer_provider(), metrics.get_meter_provider()
        # The API's own providers (proxy, no-op) are what "no provider configured" looks like.
        if type(tracer_provider).__module__.startswith("opentelemetry.trace"):
            tracer_provider = None
        if type(meter_provider).__module__.startswith("opentelemetry.metrics"):
            meter_provider = None
    if tracer_provider is None and meter_provider is None:
        return None
    key = (id(tracer_provider), id(meter_provider))
    if state.cache is None or state.cache[0] != key:
        state.cache = (key, _Otel(tracer_provider, meter_provider))
    return state.cache[1]


def _error_type(reason: FailureReason, code: int | None, status: int | None = None) -> str:
    """``error.type`` of a failure: the JSON-RPC code if one came, the HTTP status of an
    HTTP error, else the reason (``timeout``, ``cancelled``, ``connection_lost`` ...)."""
    if code is not None:
        return str(code)
    if reason is FailureReason.HTTP_ERROR and status is not None:
        return str(status)
    return reason.value.replace("-", "_")


class _Op:
    """One request in flight: its span, when it started, its metric attributes."""

    __slots__ = ("attrs", "parent", "span", "start")

    def __init__(self, span: Any, start: float, attrs: dict[str, Any], parent: Any = None) -> None:
        self.span = span
        self.start = start
        self.attrs = attrs
        self.parent = parent  # the context extracted from the peer's _meta (its baggage too)


def _operation_attrs(method: str, target: str | None, base: Mapping[str, Any]) -> dict[str, Any]:
    attrs = {"mcp.method.name": method, **base}
    if target is not None:
        key = _NAMED.get(method)
        if key is not None:
            attrs[key] = target
    if method == _TOOL_CALL:
        attrs["gen_ai.operation.name"] = "execute_tool"
    return attrs


def _span_name(method: str, target: str | None) -> str:
    return method if target is None or method not in _NAMED else f"{method} {target}"


class _Side:
    """What the client and the server telemetry share: ending an operation."""

    def __init__(self, otel: _Otel, base: dict[str, Any]) -> None:
        self.otel = otel
        self.base = base

    def _start_span(self, name: str, kind: Any, attrs: dict[str, Any], span_attrs: Mapping[str, Any],
                    context: Any = None) -> Any:
        tracer = self.otel.tracer
        if tracer is None:
            return None
        return tracer.start_span(name, context=context, kind=kind, attributes={**attrs, **span_attrs})

    def enter(self, op: _Op) -> object | None:
        """Make ``op``'s span current (its handler runs in it): the token for :meth:`leave`."""
        if op.span is None:
            return None
        otel = self.otel
        token: object = otel.context.attach(otel.trace.set_span_in_context(op.span, op.parent))
        return token

    def leave(self, token: object) -> None:
        """Undo :meth:`enter`."""
        self.otel.context.detach(token)

    def _end(self, op: _Op, histogram: Any, error_type: str | None = None, code: int | None = None,
             message: str | None = None) -> None:
        elapsed = time.perf_counter() - op.start
        attrs = op.attrs
        if error_type is not None:
            attrs = {**attrs, "error.type": error_type}
            if code is not None:
                attrs["rpc.response.status_code"] = str(code)
        span = op.span
        if span is not None:
            if error_type is not None:
                span.set_attribute("error.type", error_type)
                if code is not None:
                    span.set_attribute("rpc.response.status_code", str(code))
                span.set_status(self.otel.trace.Status(self.otel.trace.StatusCode.ERROR, message))
            span.end()
        if histogram is not None:
            histogram.record(elapsed, attrs)


class ClientTelemetry(_Side):
    """The spans and metrics of one client connection (and of the server's requests to it)."""

    def __init__(self, otel: _Otel, base: dict[str, Any]) -> None:
        super().__init__(otel, base)
        self._ops: dict[RequestId, _Op] = {}
        self._attrs: dict[tuple[str, str | None, str | None], dict[str, Any]] = {}
        self._session_start: float | None = None
        self._protocol: str | None = None

    def name_server(self, name: str) -> None:
        """The host layer's name of the server: on every span and metric from now on."""
        self.base = {**self.base, SERVER_NAME: name}
        self._attrs.clear()

    def send(self, core: SessionFront, method: str, target: str | None, uri: str | None,
             send: Callable[[float], RequestId], now: float) -> RequestId:
        """Open the client span of ``method``, have the core carry its context in the
        request's ``_meta``, and send it with ``send(now)``."""
        otel = self.otel
        key = (method, target, core.protocol_version)
        attrs = self._attrs.get(key)
        if attrs is None:  # the metric's attributes: one dict per kind of call, reused
            if len(self._attrs) >= 1024:  # bounded, whatever names the caller uses
                self._attrs.clear()
            protocol = key[2]
            base = self.base if protocol is None else {**self.base, "mcp.protocol.version": protocol}
            attrs = self._attrs[key] = _operation_attrs(method, target, base)
        predicted = str(core.next_request_id)
        span_attrs: dict[str, Any] = {"jsonrpc.request.id": predicted}
        if uri is not None and method in _URI_METHODS:
            span_attrs["mcp.resource.uri"] = uri
        session_id = getattr(core, "session_id", None)
        if isinstance(session_id, str):
            span_attrs["mcp.session.id"] = session_id
        span = self._start_span(_span_name(method, target), otel.trace.SpanKind.CLIENT, attrs, span_attrs)
        op = _Op(span, time.perf_counter(), attrs)
        if span is not None:
            carrier: dict[str, str] = {}
            otel.inject(carrier, context=otel.trace.set_span_in_context(span))
            core.outgoing_meta = carrier or None
        try:
            rid = send(now)
        except BaseException as exc:
            self._end(op, None, type(exc).__qualname__, message=str(exc))
            raise
        finally:
            core.outgoing_meta = None
        if span is not None and str(rid) != predicted:  # a call that sent another request first
            span.set_attribute("jsonrpc.request.id", str(rid))
        self._ops[rid] = op
        return rid

    def answered(self, event: ResponseReceived) -> None:
        """The request ``event.request_id`` got its result (``isError``: ``tool_error``)."""
        op = self._ops.pop(event.request_id, None)
        if op is None:
            return
        result = event.result
        if getattr(result, "is_error", None) is True:
            self._end(op, self.otel.client_op, "tool_error")
        else:
            self._end(op, self.otel.client_op)

    def failed(self, event: RequestFailed) -> None:
        """The request ``event.request_id`` ended without a result."""
        op = self._ops.pop(event.request_id, None)
        if op is None:
            return
        code = None if event.error is None else event.error.code
        self._end(op, self.otel.client_op, _error_type(event.reason, code, event.status), code, event.message)

    def session_started(self, protocol_version: str | None) -> None:
        """The handshake completed: the session's clock starts (a session the server
        forgot, replaced by this one, ends here)."""
        if self._session_start is not None:
            self.session_ended()
        self._session_start = time.perf_counter()
        self._protocol = protocol_version

    def session_ended(self, event: ConnectionTerminated | None = None) -> None:
        """The session is over (closed or lost); recorded once."""
        start, self._session_start = self._session_start, None
        histogram = self.otel.client_session
        if start is None or histogram is None:
            return
        attrs = dict(self.base)
        if self._protocol is not None:
            attrs["mcp.protocol.version"] = self._protocol
        if event is not None and event.returncode not in (None, 0):
            attrs["error.type"] = _error_type(event.reason, None)
        histogram.record(time.perf_counter() - start, attrs)

    def serving(self, event: ServerRequestReceived) -> _Op:
        """The server asked us something (sampling, elicitation, roots): a SERVER span here,
        the child of the server's span whose context its ``_meta`` carries."""
        otel = self.otel
        meta = getattr(event.params, "meta", None)
        carrier = {k: v for k, v in meta.items() if isinstance(v, str)} if isinstance(meta, dict) else {}
        context = otel.extract(carrier) if carrier else None
        attrs = {"mcp.method.name": event.method, **self.base}
        span_attrs = {"jsonrpc.request.id": str(event.request_id)}
        span = self._start_span(event.method, otel.trace.SpanKind.SERVER, attrs, span_attrs, context)
        return _Op(span, time.perf_counter(), attrs, context)

    def served(self, op: _Op, error: BaseException | None) -> None:
        """Our answer to the server's request went out."""
        self._end(op, self.otel.server_op, None if error is None else type(error).__qualname__,
                  message=None if error is None else str(error))


def client_telemetry(core: SessionFront) -> ClientTelemetry | None:
    """The telemetry of a new client connection, or ``None`` when nothing is configured."""
    otel = _current()
    if otel is None:
        return None
    url = getattr(core, "url", None)
    base: dict[str, Any]
    if url is None:
        base = {"network.transport": "pipe"}
    elif isinstance(url, str):  # WebSocket: ws(s)://authority/target
        parts = urlsplit(url)
        base = {"network.transport": "tcp", "network.protocol.name": "websocket"}
        if parts.hostname:
            base["server.address"] = parts.hostname
            base["server.port"] = parts.port or (443 if parts.scheme == "wss" else 80)
    else:  # Streamable HTTP: a parsed Url
        base = {**_HTTP, "server.address": url.host, "server.port": url.port}
    return ClientTelemetry(otel, base)


class ServerTelemetry(_Side):
    """The spans and metrics of one server transport's handlers and sessions."""

    def __init__(self, otel: _Otel, base: dict[str, Any]) -> None:
        super().__init__(otel, base)
        self._ops: dict[int, _Op] = {}
        self._sessions: dict[str | None, tuple[float, str]] = {}

    def start(self, event: HandlerCallReceived) -> _Op:
        """Open the SERVER span of a handler's call, the child of the context the request's
        ``_meta`` carried (run the handler in it: :meth:`enter`)."""
        otel = self.otel
        info = event.request
        target = getattr(event, "uri", None)
        tool = getattr(event, "tool", None)
        if tool is not None:
            target = tool.tool.name
        prompt = getattr(event, "prompt", None)
        if prompt is not None:
            target = prompt.prompt.name
        attrs = _operation_attrs(info.method, target,
                                 {**self.base, "mcp.protocol.version": info.protocol_version})
        span_attrs: dict[str, Any] = {"jsonrpc.request.id": str(info.request_id)}
        if info.session_id is not None:
            span_attrs["mcp.session.id"] = info.session_id
        if info.method in _URI_METHODS and target is not None:
            span_attrs["mcp.resource.uri"] = target
        carrier = info.trace_context
        parent = otel.extract(carrier) if carrier else None
        span = self._start_span(_span_name(info.method, target), otel.trace.SpanKind.SERVER, attrs,
                                span_attrs, parent)
        op = self._ops[event.call] = _Op(span, time.perf_counter(), attrs, parent)
        return op

    def end(self, call: int, outcome: CallOutcome | None, cancelled: bool = False) -> None:
        """``call`` was answered with ``outcome`` (``None``: nothing was sent)."""
        op = self._ops.pop(call, None)
        if op is None:
            return
        histogram = self.otel.server_op
        if cancelled:
            self._end(op, histogram, "cancelled")
        elif outcome is None or (outcome.error_code is None and not outcome.tool_error):
            self._end(op, histogram)
        elif outcome.tool_error:
            self._end(op, histogram, "tool_error", message=outcome.message)
        else:
            self._end(op, histogram, str(outcome.error_code), outcome.error_code, outcome.message)

    def answered_by_core(self, event: RequestAnswered) -> None:
        """The core answered a request itself as it arrived: its SERVER span, parented on
        the context its ``_meta`` carried, and its duration (the time to answer it here)."""
        otel = self.otel
        base = self.base if event.protocol_version is None else {
            **self.base, "mcp.protocol.version": event.protocol_version}
        attrs = {"mcp.method.name": event.method, **base}
        span_attrs: dict[str, Any] = {"jsonrpc.request.id": str(event.request_id)}
        if event.session_id is not None:
            span_attrs["mcp.session.id"] = event.session_id
        carrier = event.trace_context
        parent = otel.extract(carrier) if carrier else None
        span = self._start_span(event.method, otel.trace.SpanKind.SERVER, attrs, span_attrs, parent)
        op = _Op(span, time.perf_counter(), attrs, parent)
        if event.error_code is None:
            self._end(op, otel.server_op)
        else:
            self._end(op, otel.server_op, str(event.error_code), event.error_code, event.message)

    def abandon(self) -> None:
        """The server is shutting down: every call still open ends as cancelled."""
        for call in list(self._ops):
            self.end(call, None, cancelled=True)

    def session_started(self, session_id: str | None, protocol_version: str) -> None:
        """A handshake-era session completed its handshake."""
        self._sessions[session_id] = (time.perf_counter(), protocol_version)
        if len(self._sessions) > 100_000:  # sessions that never ended: forget the oldest
            self._sessions.pop(next(iter(self._sessions)))

    def session_ended(self, session_id: str | None) -> None:
        """The session (the connection, for stdio and WebSocket) ended."""
        started = self._sessions.pop(session_id, None)
        histogram = self.otel.server_session
        if started is None or histogram is None:
            return
        histogram.record(time.perf_counter() - started[0],
                         {**self.base, "mcp.protocol.version": started[1]})


    def asking(self, asks: Sequence[Ask]) -> tuple[list[Ask], list[_Op]]:
        """A handler asks the client (sampling, elicitation, roots): a CLIENT span per
        question, the child of the handler's span, its context added to the question's
        ``_meta``; the questions to send and their operations for :meth:`asked`."""
        otel = self.otel
        sent: list[Ask] = []
        ops: list[_Op] = []
        for ask in asks:
            attrs = {"mcp.method.name": ask.method, **self.base}
            span = self._start_span(ask.method, otel.trace.SpanKind.CLIENT, attrs, {})
            ops.append(_Op(span, time.perf_counter(), attrs))
            params = ask.params
            if span is not None and hasattr(params, "meta"):
                carrier: dict[str, str] = {}
                otel.inject(carrier, context=otel.trace.set_span_in_context(span))
                meta = params.meta if isinstance(params.meta, dict) else {}
                traced = msgspec.structs.replace(params, meta={**meta, **carrier})
                sent.append(msgspec.structs.replace(ask, params=traced))
            else:
                sent.append(ask)
        return sent, ops

    def asked(self, op: object, error: BaseException | None) -> None:
        """The client answered a question (``error``: it failed)."""
        if not isinstance(op, _Op):
            return
        if error is None:
            self._end(op, self.otel.client_op)
            return
        code = getattr(error, "code", None)
        error_type = str(code) if isinstance(code, int) else type(error).__qualname__
        self._end(op, self.otel.client_op, error_type, code if isinstance(code, int) else None, str(error))


def server_telemetry(endpoint: Endpoint) -> ServerTelemetry | None:
    """The telemetry of a server transport, or ``None`` when nothing is configured."""
    otel = _current()
    if otel is None:
        return None
    from mcp_sansio.server import StdioServer
    from mcp_sansio.server.websocket import WebSocketServer

    if isinstance(endpoint, StdioServer):
        base: dict[str, Any] = {"network.transport": "pipe"}
    elif isinstance(endpoint, WebSocketServer):
        base = {"network.transport": "tcp", "network.protocol.name": "websocket"}
    else:
        base = dict(_HTTP)
    return ServerTelemetry(otel, base)
