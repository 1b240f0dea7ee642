"""The server's side of the wire: params it decodes, and the era-specific results it writes.

Params are decoded once per request into these Structs (stage two of the two-stage decode,
STYLE.md section 5): tool arguments stay ``Raw`` until the tool's own decoder reads them,
and ``_meta`` is typed, carrying both the progress token of every era and the per-request
fields of 2026-07-28 (protocol version, client capabilities and identity, log level).
"""

from __future__ import annotations

from typing import Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ..modern import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION_KEY,
)
from ..types import (
    ClientCapabilities,
    CompletionArgument,
    CompletionContext,
    Implementation,
    LoggingLevel,
    PromptReference,
    ResourceTemplateReference,
)
from ..types._base import WireStruct

__all__ = [
    "SUBSCRIPTION_ID_KEY",
    "CallParams",
    "CancelParams",
    "CompleteParams",
    "InitParams",
    "InputResponses",
    "ListParams",
    "ListenFilter",
    "ListenParams",
    "PromptParams",
    "ReadParams",
    "RequestMeta",
    "SetLevelParams",
    "TaskParams",
    "TaskUpdateParams",
    "UriParams",
]

SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"

_NULL: Final = Raw(b"null")

InputResponses = dict[str, dict[str, object]]
"""``inputResponses``: the client's answers by key, each a JSON object (a result)."""


class RequestMeta(msgspec.Struct, kw_only=True):
    """A request's ``_meta``: the progress token, and the stateless era's per-request fields."""

    progress_token: str | int | None = msgspec.field(default=None, name="progressToken")
    protocol_version: str | None = msgspec.field(default=None, name=PROTOCOL_VERSION_KEY)
    client_capabilities: ClientCapabilities | None = msgspec.field(default=None, name=CLIENT_CAPABILITIES_KEY)
    client_info: Implementation | None = msgspec.field(default=None, name=CLIENT_INFO_KEY)
    log_level: LoggingLevel | None = msgspec.field(default=None, name=LOG_LEVEL_KEY)
    # W3C trace context and baggage, where the OpenTelemetry MCP conventions carry them; any
    # JSON is accepted (a bad value is ignored, never a reason to refuse the request).
    traceparent: object = None
    tracestate: object = None
    baggage: object = None

    def trace_context(self) -> dict[str, str] | None:
        """The string ones of ``traceparent``, ``tracestate`` and ``baggage`` (``None`` when
        neither ``traceparent`` nor ``baggage`` is a string)."""
        if not isinstance(self.traceparent, str) and not isinstance(self.baggage, str):
            return None
        found = {"traceparent": self.traceparent, "tracestate": self.tracestate, "baggage": self.baggage}
        return {key: value for key, value in found.items() if isinstance(value, str)}


class Params(msgspec.Struct, kw_only=True):
    """Params of any request: ``_meta`` only (``ping``, ``server/discover``, unknown fields)."""

    meta: RequestMeta | None = msgspec.field(default=None, name="_meta")


class RetryParams(Params, kw_only=True):
    """Params of a request that may be a retry with answers (multi round-trip requests)."""

    input_responses: InputResponses | UnsetType = msgspec.field(default=UNSET, name="inputResponses")
    request_state: str | UnsetType = msgspec.field(default=UNSET, name="requestState")


class CallParams(RetryParams, kw_only=True):
    """Params of ``tools/call``; ``arguments`` are decoded by the tool's own decoder."""

    name: str
    arguments: Raw = _NULL


class PromptParams(RetryParams, kw_only=True):
    """Params of ``prompts/get``."""

    name: str
    arguments: dict[str, str] | None = None


class ReadParams(RetryParams, kw_only=True):
    """Params of ``resources/read``."""

    uri: str


class UriParams(Params, kw_only=True):
    """Params of ``resources/subscribe`` and ``resources/unsubscribe``."""

    uri: str


class ListParams(Params, kw_only=True):
    """Params of the ``*/list`` requests."""

    cursor: str | None = None


class CompleteParams(Params, kw_only=True):
    """Params of ``completion/complete``."""

    ref: PromptReference | ResourceTemplateReference
    argument: CompletionArgument
    context: CompletionContext | None = None


class SetLevelParams(Params, kw_only=True):
    """Params of ``logging/setLevel``."""

    level: LoggingLevel


class ListenFilter(WireStruct, kw_only=True, omit_defaults=True):
    """What a ``subscriptions/listen`` stream asks for (and, echoed, what it gets)."""

    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    resource_subscriptions: list[str] | None = None


class ListenParams(Params, kw_only=True):
    """Params of ``subscriptions/listen``."""

    notifications: ListenFilter = msgspec.field(default_factory=ListenFilter)


class TaskParams(Params, kw_only=True):
    """Params of ``tasks/get`` and ``tasks/cancel`` (tasks extension)."""

    task_id: str = msgspec.field(name="taskId")


class TaskUpdateParams(TaskParams, kw_only=True):
    """Params of ``tasks/update``: answers to a task's input requests."""

    input_responses: InputResponses = msgspec.field(default_factory=dict, name="inputResponses")


class CancelParams(msgspec.Struct, kw_only=True):
    """Params of ``notifications/cancelled``."""

    request_id: int | str | None = msgspec.field(default=None, name="requestId")
    reason: str | None = None


class InitParams(Params, kw_only=True):
    """Params of ``initialize``."""

    protocol_version: str = msgspec.field(name="protocolVersion")
    capabilities: ClientCapabilities
    client_info: Implementation = msgspec.field(name="clientInfo")
