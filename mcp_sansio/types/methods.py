"""Method tables: which wire type the params or result of each MCP method decode into.

The tables cover every method of MCP 2024-11-05 to 2025-11-25 in both directions; a
method both sides may send (``ping``, ``tasks/*``, ``notifications/cancelled``) appears
once. Which methods a negotiated revision allows is not decided here.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

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
    "CLIENT_NOTIFICATION_METHODS",
    "CLIENT_REQUEST_METHODS",
    "NOTIFICATION_PARAMS",
    "REQUEST_PARAMS",
    "RESULT_TYPES",
    "SERVER_NOTIFICATION_METHODS",
    "SERVER_REQUEST_METHODS",
]

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

RESULT_TYPES: Final[Mapping[str, type[WireStruct]]] = MappingProxyType(
    {
        "initialize": InitializeResult,
        "ping": EmptyResult,
        "resources/list": ListResourcesResult,
        "resources/templates/list": ListResourceTemplatesResult,
        "resources/read": ReadResourceResult,
        "resources/subscribe": EmptyResult,
        "resources/unsubscribe": EmptyResult,
        "prompts/list": ListPromptsResult,
        "prompts/get": GetPromptResult,
        "tools/list": ListToolsResult,
        "tools/call": CallToolResult,
        "logging/setLevel": EmptyResult,
        "completion/complete": CompleteResult,
        "sampling/createMessage": CreateMessageResult,
        "roots/list": ListRootsResult,
        "elicitation/create": ElicitResult,
        "tasks/get": GetTaskResult,
        "tasks/result": GetTaskPayloadResult,
        "tasks/list": ListTasksResult,
        "tasks/cancel": CancelTaskResult,
    }
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
