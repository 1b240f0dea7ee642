"""What a handler sees of its request: :class:`Context`, and the questions it may ask the client.

A handler that declares a parameter annotated ``Context`` gets one per request. Progress
and log messages are queued at once (synchronous calls: plain ``def`` handlers can use
them); what they return may be awaited, and waits while the client is slow to read the
stream they went to (backpressure, ``flow.py``): a handler producing many of them should
``await`` each, or its stream is dropped once ``max_buffer_bytes`` wait unread.
Asking the client (sampling, elicitation, roots) returns an awaitable: in the handshake era
the server sends a request and the awaitable resolves with the client's answer; in the
stateless 2026-07-28 era the answer comes with a retry of the client's request (multi
round-trip requests), so a missing answer ends this run of the handler with
:class:`InputRequired`, the server answers ``input_required``, and the handler runs again
when the client retries with the answers. The same handler code serves both eras; it must
therefore ask its questions in the same order on every run (keys tie answers to asks).

The core builds the requests and decides everything; the driver's :class:`HandlerRuntime`
only turns the core's decision into an awaitable (STYLE.md law 3: no ``async`` here).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import msgspec

from ..errors import LocalProtocolError
from ..types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    Implementation,
    ListRootsResult,
    LoggingLevel,
    ModelPreferences,
    RequestParams,
    SamplingMessage,
    TextContent,
    Tool,
    ToolChoice,
)
from .signature import ContextParameter

if TYPE_CHECKING:
    from .authz import Principal
    from .events import RequestInfo
    from .registry import ListKind

T = TypeVar("T")

__all__ = [
    "Answered",
    "AnswerPending",
    "Ask",
    "AskOutcome",
    "ClientCapabilityMissing",
    "Context",
    "Deferred",
    "ElicitAsk",
    "HandlerRuntime",
    "InputRequired",
    "RootsAsk",
    "SamplingAsk",
    "ToolError",
]


class InputRequired(BaseException):  # a signal, like CancelledError, not an error
    """Ends a handler's run in the stateless era: an answer it asked for is not there yet.

    A ``BaseException`` so that a handler's ``except Exception`` does not swallow it; the
    driver catches it and lets the core answer ``input_required``.
    """


class ToolError(Exception):
    """Raise it from a handler to fail with a message meant for the client.

    From a tool it is a tool execution error (``isError: true``) whose text is the message;
    from a prompt, resource or completion a JSON-RPC internal error (``-32603``) with the
    message. Unlike other exceptions it is sent as it is, even with
    ``MCPServer(mask_error_details=True)``. (For a specific JSON-RPC error, raise
    ``mcp_sansio.RequestError(code, message, data)``.)
    """


class ClientCapabilityMissing(LocalProtocolError):
    """A handler asked the client for something it did not declare it can do.

    Left uncaught, it answers the request with ``-32021`` (2026-07-28) or as the handler's
    failure (the handshake era has no code for it).

    Attributes:
        required: the capabilities missing, shaped like ``ClientCapabilities``
            (``{"sampling": {}}``).
    """

    def __init__(self, message: str, *, required: dict[str, object]) -> None:
        super().__init__(message)
        self.required = required


class Answered(msgspec.Struct, frozen=True):
    """The answer is already known (it came with the request): ``result``."""

    result: msgspec.Struct


class Deferred(msgspec.Struct, frozen=True):
    """Stateless era: the answer comes with a retry; this run must end (``InputRequired``)."""

    key: str


class AnswerPending(msgspec.Struct, frozen=True):
    """A request went to the client; ``AnswerReceived``/``AnswerFailed`` with ``ticket`` follows."""

    ticket: int


AskOutcome = Answered | Deferred | AnswerPending
"""What the core decided for one :class:`Ask`."""


class Ask(msgspec.Struct, frozen=True, kw_only=True):
    """One question for the client: a server->client request, built by the helpers below.

    Attributes:
        method: ``elicitation/create``, ``sampling/createMessage`` or ``roots/list``.
        params: its params.
        key: the ``inputRequests`` key naming it in the stateless era; ``None`` lets the
            core number the handler's asks in order.
    """

    method: str
    params: msgspec.Struct
    key: str | None = None

    @classmethod
    def elicit(cls, message: str, schema: Mapping[str, object] | type | None = None, *,
               key: str | None = None) -> ElicitAsk:
        """A form elicitation; ``schema`` is a JSON Schema object, or a Struct/dataclass/
        TypedDict type whose (flat, primitive) fields make the form."""
        requested = _form_schema(schema)
        return ElicitAsk(method="elicitation/create", key=key,
                         params=ElicitRequestParams(message=message, requested_schema=requested))

    @classmethod
    def elicit_url(cls, message: str, url: str, *, key: str | None = None) -> ElicitAsk:
        """A URL elicitation: the user should open ``url`` (the core adds the id the
        handshake era needs)."""
        return ElicitAsk(method="elicitation/create", key=key,
                         params=ElicitRequestParams(mode="url", message=message, url=url))

    @classmethod
    def sample(cls, messages: str | Sequence[SamplingMessage], *, max_tokens: int,
               system_prompt: str | None = None, temperature: float | None = None,
               stop_sequences: Sequence[str] | None = None,
               model_preferences: ModelPreferences | None = None,
               metadata: Mapping[str, object] | None = None, tools: Sequence[Tool] | None = None,
               tool_choice: ToolChoice | None = None, key: str | None = None) -> SamplingAsk:
        """A sampling request; a plain string is one user message."""
        if isinstance(messages, str):
            messages = [SamplingMessage(role="user", content=TextContent(text=messages))]
        params = CreateMessageRequestParams(
            messages=list(messages), max_tokens=max_tokens, system_prompt=system_prompt,
            temperature=temperature, stop_sequences=None if stop_sequences is None else list(stop_sequences),
            model_preferences=model_preferences, metadata=None if metadata is None else dict(metadata),
            tools=None if tools is None else list(tools), tool_choice=tool_choice,
        )
        return SamplingAsk(method="sampling/createMessage", key=key, params=params)

    @classmethod
    def list_roots(cls, *, key: str | None = None) -> RootsAsk:
        """A ``roots/list`` request."""
        return RootsAsk(method="roots/list", key=key, params=RequestParams())


class ElicitAsk(Ask, frozen=True, kw_only=True):
    """An ``elicitation/create`` question (:meth:`Ask.elicit`, :meth:`Ask.elicit_url`); the
    client answers an ``ElicitResult``."""

    params: ElicitRequestParams


class SamplingAsk(Ask, frozen=True, kw_only=True):
    """A ``sampling/createMessage`` question (:meth:`Ask.sample`); the client answers a
    ``CreateMessageResult``."""

    params: CreateMessageRequestParams


class RootsAsk(Ask, frozen=True, kw_only=True):
    """A ``roots/list`` question (:meth:`Ask.list_roots`); the client answers a
    ``ListRootsResult``."""

    params: RequestParams


class HandlerRuntime(Protocol):
    """What the driver running a handler provides its :class:`Context`."""

    def ask(self, call: int, asks: Sequence[Ask]) -> Awaitable[list[msgspec.Struct]]:
        """Ask the client ``asks`` for ``call``: the answers, in order, once all are in.

        The awaitable raises :class:`InputRequired` when the core defers to a retry, and
        whatever the core raises (``ClientCapabilityMissing``, ``RequestError``, ...).
        """
        ...

    def ask_one(self, call: int, ask: Ask) -> Awaitable[msgspec.Struct]:
        """:meth:`ask` for one question: its answer."""
        ...

    def flush(self) -> None:
        """Messages were queued (progress, logs): write them soon."""
        ...

    def drained(self, call: int) -> Awaitable[None]:
        """What awaits, if awaited, until ``call``'s stream is no longer congested
        (``Endpoint.congested``); nothing happens if it is never awaited."""
        ...

    def on_loop(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` (it touches the core) where the core lives, write what it queued, and
        return its value: a plain ``def`` handler running in a worker thread waits for the
        driver's loop to do it."""
        ...

    def now(self) -> float:
        """The driver's clock."""
        ...


class CallControl(Protocol):
    """What a :class:`Context` asks of the transport serving its call (an ``Endpoint``)."""

    def is_cancelled(self, call: int) -> bool:
        """The client gave up on ``call``."""
        ...

    def send_progress(self, call: int, progress: float, total: float | None = None,
                      message: str | None = None) -> None:
        """``notifications/progress`` for ``call``."""
        ...

    def send_log(self, call: int | None, level: LoggingLevel, data: object,
                 logger: str | None = None) -> None:
        """``notifications/message`` for ``call``."""
        ...

    def start_task(self, call: int, *, now: float, message: str | None = None) -> str | None:
        """Make ``call`` a task; its id, or ``None``."""
        ...

    def close_sse_stream(self, call: int, *, now: float) -> bool:
        """End ``call``'s response stream early; whether there was one."""
        ...

    def notify_list_changed(self, kind: ListKind) -> None:
        """Tell the clients that want to know that the ``kind`` list changed."""
        ...


class Context(ContextParameter):
    """One request as its handler sees it: who asked, and a way to talk back.

    Drivers build it; handlers receive it through a parameter annotated ``Context``.
    """

    __slots__ = ("_endpoint", "_runtime", "call", "request", "state", "task_id")

    def __init__(self, endpoint: CallControl, call: int, request: RequestInfo,
                 runtime: HandlerRuntime) -> None:
        self._endpoint = endpoint
        self._runtime = runtime
        self.call = call
        """The core's handle of this request (what ``respond`` takes)."""
        self.request = request
        """Who asked, and how (protocol version, client, progress token, log level)."""
        self.state: dict[str, object] = dict(request.state)
        self.task_id: str | None = request.task_id
        """The task this run belongs to, once :meth:`start_task` made it one."""
        """Values the handler keeps across the rounds of a stateless multi round-trip
        request (JSON-able; sealed into ``requestState``, so the client cannot alter them)."""

    @property
    def request_id(self) -> int | str:
        """The JSON-RPC id of the request."""
        return self.request.request_id

    @property
    def protocol_version(self) -> str:
        """The revision this request speaks."""
        return self.request.protocol_version

    @property
    def client_info(self) -> Implementation | None:
        """The client's name and version, if it said."""
        return self.request.client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared it can do (for this request, in the stateless era)."""
        return self.request.client_capabilities

    @property
    def principal(self) -> Principal | None:
        """Who the request's access token speaks for (subject, client, scopes, claims), when
        the server has ``auth``; ``None`` otherwise."""
        return self.request.principal

    @property
    def cancelled(self) -> bool:
        """The client cancelled this request: stop work, nothing will be sent for it. (An
        ``async def`` handler is also cancelled at its next ``await``; a plain ``def`` one
        in a worker thread runs on, so a long one should look here now and then.)"""
        return self._runtime.on_loop(lambda: self._endpoint.is_cancelled(self.call))

    def report_progress(self, progress: float, total: float | None = None,
                        message: str | None = None) -> Awaitable[None]:
        """Send ``notifications/progress`` if the client asked for progress (else nothing).

        Returns:
            An awaitable that waits while the client is slow to read this request's
            stream (backpressure); ignoring it is allowed (plain ``def`` handlers must).
        """
        self._runtime.on_loop(lambda: self._endpoint.send_progress(self.call, progress, total, message))
        return self._runtime.drained(self.call)

    def log(self, level: LoggingLevel, data: object, *, logger: str | None = None) -> Awaitable[None]:
        """Send ``notifications/message`` if the client's log level lets it through.

        Returns:
            As :meth:`report_progress`: await it to wait for a slow reader.
        """
        self._runtime.on_loop(lambda: self._endpoint.send_log(self.call, level, data, logger))
        return self._runtime.drained(self.call)

    def debug(self, data: object, *, logger: str | None = None) -> Awaitable[None]:
        """:meth:`log` at ``debug``."""
        return self.log("debug", data, logger=logger)

    def info(self, data: object, *, logger: str | None = None) -> Awaitable[None]:
        """:meth:`log` at ``info``."""
        return self.log("info", data, logger=logger)

    def warning(self, data: object, *, logger: str | None = None) -> Awaitable[None]:
        """:meth:`log` at ``warning``."""
        return self.log("warning", data, logger=logger)

    def error(self, data: object, *, logger: str | None = None) -> Awaitable[None]:
        """:meth:`log` at ``error``."""
        return self.log("error", data, logger=logger)

    def start_task(self, message: str | None = None) -> str | None:
        """Go on in the background as a task (tasks extension, 2026-07-28): the client gets
        the task's handle now and polls it. Later questions wait for ``tasks/update``.
        The task id, or ``None`` when the client cannot take a task (the call goes on).

        Raises:
            LocalProtocolError: this is no stateless-era call of a task-capable tool.
        """
        task_id = self._runtime.on_loop(
            lambda: self._endpoint.start_task(self.call, now=self._runtime.now(), message=message))
        if task_id is not None:
            self.task_id = task_id
        return task_id

    def close_sse_stream(self) -> bool:
        """End this request's HTTP response stream now (handshake era, resumable streams):
        the client reconnects and receives the rest (SSE polling). ``False`` where there is
        no such stream (stdio, WebSocket, JSON responses, 2026-07-28)."""
        return self._runtime.on_loop(
            lambda: self._endpoint.close_sse_stream(self.call, now=self._runtime.now()))

    def notify_list_changed(self, kind: ListKind) -> None:
        """Tell the clients that want to know that the ``kind`` list changed (after the
        handler changed the app's registrations)."""
        self._runtime.on_loop(lambda: self._endpoint.notify_list_changed(kind))

    def ask(self, *asks: Ask) -> Awaitable[list[msgspec.Struct]]:
        """Ask several questions at once (one round trip); the answers in the same order.

        Asking (this, :meth:`elicit`, :meth:`sample`, :meth:`list_roots`) needs an ``async
        def`` handler: the answer is awaited. What the awaitable gives is the client's
        result (``ElicitResult``: ``action`` accept/decline/cancel and ``content``;
        ``CreateMessageResult``: ``role``, ``content``, ``model``, ``stop_reason``;
        ``ListRootsResult``); it raises ``RequestError`` when the client answers with an
        error, ``ClientCapabilityMissing`` when it did not declare the capability."""
        return self._runtime.ask(self.call, asks)

    def elicit(self, message: str, schema: Mapping[str, object] | type | None = None, *,
               key: str | None = None) -> Awaitable[ElicitResult]:
        """Ask the user to fill in a form (see :meth:`Ask.elicit`)."""
        return cast("Awaitable[ElicitResult]", self._one(Ask.elicit(message, schema, key=key)))

    def elicit_url(self, message: str, url: str, *, key: str | None = None) -> Awaitable[ElicitResult]:
        """Ask the user to open ``url`` (URL mode elicitation)."""
        return cast("Awaitable[ElicitResult]", self._one(Ask.elicit_url(message, url, key=key)))

    def sample(self, messages: str | Sequence[SamplingMessage], *, max_tokens: int,
               system_prompt: str | None = None, temperature: float | None = None,
               key: str | None = None) -> Awaitable[CreateMessageResult]:
        """Ask the client's model for a completion (see :meth:`Ask.sample` for more options)."""
        ask = Ask.sample(messages, max_tokens=max_tokens, system_prompt=system_prompt,
                         temperature=temperature, key=key)
        return cast("Awaitable[CreateMessageResult]", self._one(ask))

    def list_roots(self, *, key: str | None = None) -> Awaitable[ListRootsResult]:
        """Ask the client for its roots."""
        return cast("Awaitable[ListRootsResult]", self._one(Ask.list_roots(key=key)))

    def _one(self, ask: Ask) -> Awaitable[msgspec.Struct]:
        return self._runtime.ask_one(self.call, ask)


def _form_schema(schema: Mapping[str, object] | type | None) -> dict[str, object]:
    """The ``requestedSchema`` of a form: as given, or derived from a type's fields."""
    if schema is None:
        return {"type": "object", "properties": {}}
    if isinstance(schema, Mapping):
        return dict(schema)
    (root,), defs = msgspec.json.schema_components([schema], ref_template="#/$defs/{name}")
    own = root.get("$ref", "").removeprefix("#/$defs/")
    body = dict(defs.get(own, root))
    body.pop("title", None)
    return body
