"""Tasks: requests that run in the background and are polled (MCP 2025-11-25, experimental).

A requester adds ``task`` (``TaskMetadata``) to a task-capable request, gets
``CreateTaskResult`` back at once, then uses ``tasks/get``, ``tasks/result``, ``tasks/list``
and ``tasks/cancel``, and may receive ``notifications/tasks/status``.
"""

from typing import Literal, TypeAlias

import msgspec

from ._base import WireStruct, required_list

__all__ = [
    "CancelTaskRequestParams",
    "CancelTaskResult",
    "CreateTaskResult",
    "GetTaskPayloadRequestParams",
    "GetTaskPayloadResult",
    "GetTaskRequestParams",
    "GetTaskResult",
    "ListTasksResult",
    "RelatedTaskMetadata",
    "Task",
    "TaskMetadata",
    "TaskStatus",
    "TaskStatusNotificationParams",
]

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""The state of a task."""


class TaskMetadata(WireStruct, kw_only=True, omit_defaults=True):
    """Asks for a request to run as a task; ``ttl`` is the wanted lifetime in milliseconds."""

    ttl: int | None = None


class RelatedTaskMetadata(WireStruct, kw_only=True, omit_defaults=True):
    """The value of ``_meta["io.modelcontextprotocol/related-task"]``: the task a message is for."""

    task_id: str


class Task(WireStruct, kw_only=True, omit_defaults=True):
    """The state of a task; also the result of ``tasks/get`` and ``tasks/cancel``.

    Attributes:
        created_at: ISO 8601 creation time.
        last_updated_at: ISO 8601 time of the last status change.
        ttl: Lifetime in milliseconds from creation; ``None`` means unlimited. The schema
            requires the key even when null, so it has no default and is always encoded.
        poll_interval: Suggested polling interval in milliseconds.
    """

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None
    poll_interval: int | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


GetTaskResult: TypeAlias = Task
"""The result of ``tasks/get``."""

CancelTaskResult: TypeAlias = Task
"""The result of ``tasks/cancel``."""

TaskStatusNotificationParams: TypeAlias = Task
"""The params of ``notifications/tasks/status``."""


class CreateTaskResult(WireStruct, kw_only=True, omit_defaults=True):
    """The immediate result of a task-augmented request, instead of its normal result."""

    task: Task
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class GetTaskRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``tasks/get``."""

    task_id: str
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class GetTaskPayloadRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``tasks/result``."""

    task_id: str
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class GetTaskPayloadResult(WireStruct, kw_only=True, omit_defaults=True):
    """The part of a ``tasks/result`` result that every payload shares.

    The payload itself is the result of the task's original request (``CallToolResult``,
    ``CreateMessageResult`` or ``ElicitResult``); decode the raw result with that method's
    entry in ``RESULT_TYPES`` to read it.
    """

    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class CancelTaskRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``tasks/cancel``."""

    task_id: str
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ListTasksResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``tasks/list``: one page of tasks."""

    tasks: list[Task] = required_list()
    next_cursor: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
