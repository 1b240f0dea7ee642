"""Tools: ``tools/list`` and ``tools/call`` (MCP server feature "Tools").

Tool schemas are kept as the exact JSON objects the server sent (``$ref``, ``$defs`` and
2020-12 keywords included), never re-modelled.
"""

from typing import Literal

import msgspec

from ._base import WireStruct, required_list
from .content import ContentBlock, Icon
from .tasks import TaskMetadata

__all__ = [
    "CallToolRequestParams",
    "CallToolResult",
    "ListToolsResult",
    "Tool",
    "ToolAnnotations",
    "ToolExecution",
]


class ToolAnnotations(WireStruct, kw_only=True, omit_defaults=True):
    """Untrusted hints about a tool's behaviour (since 2025-03-26)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class ToolExecution(WireStruct, kw_only=True, omit_defaults=True):
    """How a tool may be run (2025-11-25): whether it can run as a task."""

    task_support: Literal["forbidden", "optional", "required"] | None = None


class Tool(WireStruct, kw_only=True, omit_defaults=True):
    """A tool the server offers.

    Attributes:
        input_schema: JSON Schema of the arguments, exactly as sent.
        output_schema: JSON Schema of ``structured_content`` (since 2025-06-18), as sent.
        title: Display name (since 2025-06-18).
    """

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, object]
    output_schema: dict[str, object] | None = None
    annotations: ToolAnnotations | None = None
    execution: ToolExecution | None = None
    icons: list[Icon] | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ListToolsResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``tools/list``: one page of tools; ``ttl_ms`` and ``cache_scope`` are
    the caching hints of 2026-07-28 ("Caching"), absent from older servers."""

    tools: list[Tool] = required_list()
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class CallToolRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``tools/call``; ``task`` asks for it to run as a task (2025-11-25)."""

    name: str
    arguments: dict[str, object] | None = None
    task: TaskMetadata | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class CallToolResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``tools/call``.

    ``is_error`` means the tool itself failed (a result, not a JSON-RPC error);
    ``structured_content`` (since 2025-06-18) conforms to the tool's ``output_schema``: an
    object before 2026-07-28, any JSON value from 2026-07-28 on (a number, a list, ...).
    """

    content: list[ContentBlock] = required_list()
    structured_content: object | None = None
    is_error: bool = False
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
