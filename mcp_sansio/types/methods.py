"""Method tables: which wire type the params or result of each MCP method decode into.

The tables cover every method of MCP 2024-11-05 to 2025-11-25 in both directions; a
method both sides may send (``ping``, ``tasks/*``, ``notifications/cancelled``) appears
once. Which methods a negotiated revision allows is not decided here.

Each request's result type is written once, as a typed :class:`MethodResult` constant
(``TOOLS_CALL: MethodResult[CallToolResult]``): ``RESULT_TYPES`` is built from them, the
client session decodes with their decoders (:data:`mcp_sansio.requests.CLIENT_RESULTS`),
and a driver's ``call_tool`` returns ``TOOLS_CALL.of(result)``, which mypy knows is a
``CallToolResult``.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Generic, TypeVar

import msgspec

from ..errors import RemoteProtocolError
from ._base import WireStruct
from .common import EmptyResult, NotificationParams, PaginatedRequestParams, RequestParams
from .completion import CompleteRequestParams, CompleteResult
from .elicitation import ElicitationCompleteNotificationParams, ElicitRequestParams, ElicitResult
from .lifecycle import InitializeRequestParams, InitializeResult
from .prompts import GetPromptRequestParams, GetPromptResult, ListPromptsResult
from .resources import (
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourceUpdatedNotificationParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)
from .roots import ListRootsResult
from .sampling import CreateMessageRequestParams, CreateMessageResult
from .tasks import (
    CancelTaskRequestParams,
    CancelTaskResult,
    GetTaskPayloadRequestParams,
    GetTaskPayloadResult,
    GetTaskRequestParams,
    GetTaskResult,
    ListTasksResult,
    TaskStatusNotificationParams,
)
from .tools import CallToolRequestParams, CallToolResult, ListToolsResult
from .utilities import (
    CancelledNotificationParams,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    SetLevelRequestParams,
)

__all__ = [
    "CALL_TOOL",
    "CANCEL_TASK",
    "CLIENT_NOTIFICATION_METHODS",
    "CLIENT_REQUEST_METHODS",
    "COMPLETE",
    "CREATE_MESSAGE",
    "ELICIT",
    "GET_PROMPT",
    "GET_TASK",
    "GET_TASK_PAYLOAD",
    "INITIALIZE",
    "LIST_PROMPTS",
    "LIST_RESOURCES",
    "LIST_RESOURCE_TEMPLATES",
    "LIST_ROOTS",
    "LIST_TASKS",
    "LIST_TOOLS",
    "NOTIFICATION_PARAMS",
    "PING",
    "READ_RESOURCE",
    "REQUEST_PARAMS",
    "RESULTS",
    "RESULT_TYPES",
    "SERVER_NOTIFICATION_METHODS",
    "SERVER_REQUEST_METHODS",
    "SET_LEVEL",
    "SUBSCRIBE",
    "UNSUBSCRIBE",
    "MethodResult",
]

R_co = TypeVar("R_co", bound=WireStruct, covariant=True)


class MethodResult(Generic[R_co]):
    """A request method paired with the type its result decodes to (written once per method).

    Attributes:
        method: the JSON-RPC method.
        type: the result's wire type.
        decoder: a reusable decoder of that type.
    """

    __slots__ = ("decoder", "method", "type")

    def __init__(self, method: str, result_type: type[R_co]) -> None:
        self.method: Final = method
        self.type: Final = result_type
        self.decoder: Final = msgspec.json.Decoder(result_type)

    def of(self, result: msgspec.Struct) -> R_co:
        """``result`` (what the session decoded as this method's answer) as its type.

        Raises:
            RemoteProtocolError: it is another type (a core bug, never a peer's doing).
        """
        if isinstance(result, self.type):
            return result
        raise RemoteProtocolError(f"{self.method} answered with a {type(result).__name__}, "
                                  f"not a {self.type.__name__}")

    def __repr__(self) -> str:
        return f"MethodResult({self.method!r}, {self.type.__name__})"


_TASK_METHODS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})

CLIENT_REQUEST_METHODS: Final[frozenset[str]] = frozenset(
    {
        "initialize",
        "ping",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "tools/list",
        "tools/call",
        "logging/setLevel",
        "completion/complete",
        *_TASK_METHODS,
    }
)
"""Requests a client sends to a server."""

SERVER_REQUEST_METHODS: Final[frozenset[str]] = frozenset(
    {"ping", "sampling/createMessage", "roots/list", "elicitation/create", *_TASK_METHODS}
)
"""Requests a server sends to a client."""

CLIENT_NOTIFICATION_METHODS: Final[frozenset[str]] = frozenset(
    {
        "notifications/cancelled",
        "notifications/initialized",
        "notifications/progress",
        "notifications/roots/list_changed",
        "notifications/tasks/status",
    }
)
"""Notifications a client sends to a server."""

SERVER_NOTIFICATION_METHODS: Final[frozenset[str]] = frozenset(
    {
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/prompts/list_changed",
        "notifications/tools/list_changed",
        "notifications/elicitation/complete",
        "notifications/tasks/status",
    }
)
"""Notifications a server sends to a client."""

REQUEST_PARAMS: Final[Mapping[str, type[WireStruct]]] = MappingProxyType(
    {
        "initialize": InitializeRequestParams,
        "ping": RequestParams,
        "resources/list": PaginatedRequestParams,
        "resources/templates/list": PaginatedRequestParams,
        "resources/read": ReadResourceRequestParams,
        "resources/subscribe": SubscribeRequestParams,
        "resources/unsubscribe": UnsubscribeRequestParams,
        "prompts/list": PaginatedRequestParams,
        "prompts/get": GetPromptRequestParams,
        "tools/list": PaginatedRequestParams,
        "tools/call": CallToolRequestParams,
        "logging/setLevel": SetLevelRequestParams,
        "completion/complete": CompleteRequestParams,
        "sampling/createMessage": CreateMessageRequestParams,
        "roots/list": RequestParams,
        "elicitation/create": ElicitRequestParams,
        "tasks/get": GetTaskRequestParams,
        "tasks/result": GetTaskPayloadRequestParams,
        "tasks/list": PaginatedRequestParams,
        "tasks/cancel": CancelTaskRequestParams,
    }
)
"""Request method -> type of its ``params`` (decode ``b"{}"`` when ``params`` is absent)."""

INITIALIZE: Final = MethodResult("initialize", InitializeResult)
PING: Final = MethodResult("ping", EmptyResult)
LIST_RESOURCES: Final = MethodResult("resources/list", ListResourcesResult)
LIST_RESOURCE_TEMPLATES: Final = MethodResult("resources/templates/list", ListResourceTemplatesResult)
READ_RESOURCE: Final = MethodResult("resources/read", ReadResourceResult)
SUBSCRIBE: Final = MethodResult("resources/subscribe", EmptyResult)
UNSUBSCRIBE: Final = MethodResult("resources/unsubscribe", EmptyResult)
LIST_PROMPTS: Final = MethodResult("prompts/list", ListPromptsResult)
GET_PROMPT: Final = MethodResult("prompts/get", GetPromptResult)
LIST_TOOLS: Final = MethodResult("tools/list", ListToolsResult)
CALL_TOOL: Final = MethodResult("tools/call", CallToolResult)
SET_LEVEL: Final = MethodResult("logging/setLevel", EmptyResult)
COMPLETE: Final = MethodResult("completion/complete", CompleteResult)
CREATE_MESSAGE: Final = MethodResult("sampling/createMessage", CreateMessageResult)
LIST_ROOTS: Final = MethodResult("roots/list", ListRootsResult)
ELICIT: Final = MethodResult("elicitation/create", ElicitResult)
GET_TASK: Final = MethodResult("tasks/get", GetTaskResult)
GET_TASK_PAYLOAD: Final = MethodResult("tasks/result", GetTaskPayloadResult)
LIST_TASKS: Final = MethodResult("tasks/list", ListTasksResult)
CANCEL_TASK: Final = MethodResult("tasks/cancel", CancelTaskResult)

RESULTS: Final[Mapping[str, MethodResult[WireStruct]]] = MappingProxyType({r.method: r for r in (
    INITIALIZE,
    PING,
    LIST_RESOURCES,
    LIST_RESOURCE_TEMPLATES,
    READ_RESOURCE,
    SUBSCRIBE,
    UNSUBSCRIBE,
    LIST_PROMPTS,
    GET_PROMPT,
    LIST_TOOLS,
    CALL_TOOL,
    SET_LEVEL,
    COMPLETE,
    CREATE_MESSAGE,
    LIST_ROOTS,
    ELICIT,
    GET_TASK,
    GET_TASK_PAYLOAD,
    LIST_TASKS,
    CANCEL_TASK,
)})
"""Request method -> its :class:`MethodResult` (see ``RESULT_TYPES``)."""

RESULT_TYPES: Final[Mapping[str, type[WireStruct]]] = MappingProxyType(
    {method: r.type for method, r in RESULTS.items()}
)
"""Request method -> type of its ``result``.

A task-augmented request (params with ``task``) is answered with ``CreateTaskResult``
instead; a ``tasks/result`` payload has the type of the task's original request.
"""

NOTIFICATION_PARAMS: Final[Mapping[str, type[WireStruct]]] = MappingProxyType(
    {
        "notifications/cancelled": CancelledNotificationParams,
        "notifications/initialized": NotificationParams,
        "notifications/progress": ProgressNotificationParams,
        "notifications/roots/list_changed": NotificationParams,
        "notifications/message": LoggingMessageNotificationParams,
        "notifications/resources/list_changed": NotificationParams,
        "notifications/resources/updated": ResourceUpdatedNotificationParams,
        "notifications/prompts/list_changed": NotificationParams,
        "notifications/tools/list_changed": NotificationParams,
        "notifications/elicitation/complete": ElicitationCompleteNotificationParams,
        "notifications/tasks/status": TaskStatusNotificationParams,
    }
)
"""Notification method -> type of its ``params`` (decode ``b"{}"`` when ``params`` is absent)."""
