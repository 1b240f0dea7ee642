"""What the server core reports: requests the application must run, and what else happened.

A request needing user code (a tool call, a prompt, a resource read, a completion) becomes
a :class:`HandlerCallReceived` carrying the resolved registration and the validated
arguments; the driver runs the handler and answers with ``respond()`` / ``fail()`` on the
``call`` handle. Everything the core can answer without user code it answers itself.
Events are frozen, keyword-only Structs (STYLE.md section 5); the shared client events
(``NotificationReceived``, ``MessageDiscarded``, ``ConnectionTerminated``) are reused.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, TypeAlias

import msgspec

from ..errors import ConnectionClosed, McpSansioError, RemoteProtocolError, RequestError, RequestTimeout
from ..events import (
    ConnectionTerminated,
    ErrorData,
    Event,
    FailureReason,
    MessageDiscarded,
    NotificationReceived,
    RequestId,
)
from ..types import (
    ClientCapabilities,
    CreateMessageResult,
    ElicitResult,
    Implementation,
    ListRootsResult,
    LoggingLevel,
)
from .authz import Principal, TokenVerificationRequired
from .registry import (
    RegisteredCompletion,
    RegisteredPrompt,
    RegisteredResource,
    RegisteredTemplate,
    RegisteredTool,
)
from .signature import HandlerSignature

__all__ = [
    "ANSWERED",
    "ANSWER_TYPES",
    "AnswerFailed",
    "AnswerReceived",
    "AnswerResult",
    "CallCancelled",
    "CallOutcome",
    "ClientInitialized",
    "CompletionReceived",
    "HandlerCallReceived",
    "PromptGetReceived",
    "RequestAnswered",
    "RequestInfo",
    "ResourceReadReceived",
    "ResourceSubscribed",
    "ResourceUnsubscribed",
    "ServerEvent",
    "ToolCallReceived",
]


class RequestInfo(msgspec.Struct, frozen=True, kw_only=True):
    """Who sent a request, and how: what a handler may want to know about it.

    Attributes:
        request_id: the JSON-RPC id.
        method: the request's method.
        protocol_version: the revision it speaks (per request in 2026-07-28; the
            negotiated one in the handshake era).
        modern: it is a stateless-era request (``_meta`` carried the version).
        client_info: the client's identity, if known.
        client_capabilities: what the client declared.
        progress_token: the token to report progress with, if the client asked.
        log_level: the least severe log level to send (``None``: every level in the
            handshake era until ``logging/setLevel``; no log at all in 2026-07-28).
        state: what the handler kept in ``ctx.state`` in the previous round of a
            multi round-trip request (empty on the first).
        task_id: the task this run belongs to (tasks extension), if any.
        session_id: the session it belongs to (``Mcp-Session-Id`` of a handshake-era HTTP
            session), if any.
        trace_context: the W3C trace context its ``_meta`` carried (``traceparent``,
            ``tracestate``, ``baggage``), if any: the parent of the server's span.
        principal: who the request's access token speaks for, when the server has
            ``auth`` (``None`` without it, and on stdio).
    """

    request_id: RequestId
    method: str
    protocol_version: str
    modern: bool
    client_info: Implementation | None
    client_capabilities: ClientCapabilities
    progress_token: str | int | None = None
    log_level: LoggingLevel | None = None
    state: Mapping[str, object] = msgspec.field(default_factory=dict)
    task_id: str | None = None
    session_id: str | None = None
    trace_context: Mapping[str, str] | None = None
    principal: Principal | None = None


class CallOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """How the server answered a call (what ``respond`` / ``fail`` sent): telemetry's input.

    Attributes:
        error_code: the JSON-RPC error code sent, if the answer was an error.
        message: that error's message (or the tool error's text).
        tool_error: the answer was a tool result with ``isError``.
    """

    error_code: int | None = None
    message: str | None = None
    tool_error: bool = False


ANSWERED: Final = CallOutcome()
"""The outcome of a call answered with a result."""


class RequestAnswered(Event, frozen=True, kw_only=True):
    """The core answered a request itself, no handler ran (``initialize``, the lists,
    ``ping``, an error): queued only while ``MCPServer.report_answers`` is set (telemetry).

    Attributes:
        method: the request's method.
        request_id: its JSON-RPC id.
        protocol_version: the revision it spoke, if known.
        session_id: its session (handshake-era HTTP), if any.
        trace_context: the W3C trace context its ``_meta`` carried, if any.
        error_code: the JSON-RPC error code it was answered with, if an error.
        message: that error's message.
    """

    method: str
    request_id: RequestId
    protocol_version: str | None = None
    session_id: str | None = None
    trace_context: Mapping[str, str] | None = None
    error_code: int | None = None
    message: str | None = None


class HandlerCallReceived(Event, frozen=True, kw_only=True):
    """A request the application must run: call ``handler.fn(**arguments)`` (adding the
    context under ``handler.context_param``), then ``respond(call, value)``.

    Attributes:
        call: the core's handle of this request (unique in its endpoint).
        request: who asked, and how.
        handler: the handler to run (its ``fn``, ``is_async`` and ``context_param``).
        arguments: the validated keyword arguments.
    """

    call: int
    request: RequestInfo
    handler: HandlerSignature
    arguments: dict[str, object]


class ToolCallReceived(HandlerCallReceived, frozen=True, kw_only=True):
    """``tools/call`` of a registered tool with valid arguments."""

    tool: RegisteredTool


class PromptGetReceived(HandlerCallReceived, frozen=True, kw_only=True):
    """``prompts/get`` of a registered prompt."""

    prompt: RegisteredPrompt


class ResourceReadReceived(HandlerCallReceived, frozen=True, kw_only=True):
    """``resources/read`` of a resource served by a handler (``arguments`` holds a
    template's variables)."""

    resource: RegisteredResource | RegisteredTemplate
    uri: str


class CompletionReceived(HandlerCallReceived, frozen=True, kw_only=True):
    """``completion/complete`` of an argument with a completion handler."""

    completion: RegisteredCompletion


class CallCancelled(Event, frozen=True, kw_only=True):
    """The client gave up on ``call`` (``notifications/cancelled``, a closed stream or
    connection): stop its handler; nothing will be sent for it."""

    call: int
    reason: str | None = None


AnswerResult: TypeAlias = ElicitResult | CreateMessageResult | ListRootsResult
"""What a client answers a server's question with."""

ANSWER_TYPES: Final[Mapping[str, type[AnswerResult]]] = MappingProxyType({
    "elicitation/create": ElicitResult,
    "sampling/createMessage": CreateMessageResult,
    "roots/list": ListRootsResult,
})
"""The one place pairing each question a server may ask with the type of its answer."""


class AnswerReceived(Event, frozen=True, kw_only=True):
    """The client answered the question ``ticket`` (a server->client request of the
    handshake era, or a task's input request) with ``result``, typed by method
    (:data:`ANSWER_TYPES`)."""

    ticket: int
    method: str
    result: AnswerResult


class AnswerFailed(Event, frozen=True, kw_only=True):
    """The question ``ticket`` got no usable answer (an error, a timeout, a bad result,
    the connection lost)."""

    ticket: int
    method: str
    reason: FailureReason
    message: str
    error: ErrorData | None = None

    def to_exception(self) -> McpSansioError:
        """What the handler that asked sees raised (the same in every driver)."""
        if self.error is not None:
            return RequestError(self.error.code, self.error.message, self.error.data)
        if self.reason is FailureReason.TIMEOUT:
            return RequestTimeout(self.message)
        if self.reason is FailureReason.CONNECTION_LOST:
            return ConnectionClosed(self.message)
        return RemoteProtocolError(self.message)


class ClientInitialized(Event, frozen=True, kw_only=True):
    """A handshake-era client finished ``initialize`` / ``notifications/initialized``
    (``session_id``: its ``Mcp-Session-Id`` over HTTP)."""

    protocol_version: str
    client_info: Implementation
    capabilities: ClientCapabilities
    session_id: str | None = None


class ResourceSubscribed(Event, frozen=True, kw_only=True):
    """A client subscribed to ``uri``: call ``notify_resource_updated`` when it changes."""

    uri: str


class ResourceUnsubscribed(Event, frozen=True, kw_only=True):
    """No client of this connection wants updates of ``uri`` any more."""

    uri: str


ServerEvent: TypeAlias = (
    ToolCallReceived | PromptGetReceived | ResourceReadReceived | CompletionReceived | CallCancelled
    | AnswerReceived | AnswerFailed | TokenVerificationRequired | ClientInitialized | ResourceSubscribed
    | ResourceUnsubscribed | RequestAnswered | NotificationReceived | MessageDiscarded | ConnectionTerminated
)
"""Everything a server transport's ``next_event()`` can return: a closed union, so a runner's
``match`` over it is checked for exhaustiveness (``assert_never``), as ``ClientEvent`` is for
the client. The four ``HandlerCallReceived`` kinds are its only handler calls."""
