"""Sampling: the server asks the client's LLM for a completion (``sampling/createMessage``).

Tool use inside sampling (``tools``, ``tool_choice``, ``tool_use``/``tool_result`` content,
and a list of blocks as message content) appeared in MCP 2025-11-25.
"""

from typing import Literal, TypeAlias

import msgspec

from ._base import WireStruct
from .content import Role, SamplingContent
from .tasks import TaskMetadata
from .tools import Tool

__all__ = [
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "IncludeContext",
    "ModelHint",
    "ModelPreferences",
    "SamplingMessage",
    "ToolChoice",
]

IncludeContext: TypeAlias = Literal["none", "thisServer", "allServers"]
"""Which servers' context the client should add to the prompt."""


class ModelHint(WireStruct, kw_only=True, omit_defaults=True):
    """A model name or family (``"claude-3"``) the server would like; the client maps it."""

    name: str | None = None


class ModelPreferences(WireStruct, kw_only=True, omit_defaults=True):
    """The server's model wishes; each priority is from 0 (unimportant) to 1 (most)."""

    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


class ToolChoice(WireStruct, kw_only=True, omit_defaults=True):
    """Whether the model must, may or must not call tools (2025-11-25)."""

    mode: Literal["auto", "required", "none"] | None = None


class SamplingMessage(WireStruct, kw_only=True, omit_defaults=True):
    """One message of a sampling conversation; ``content`` may be a list since 2025-11-25."""

    role: Role
    content: SamplingContent | list[SamplingContent]
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class CreateMessageRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``sampling/createMessage``.

    Attributes:
        metadata: Provider-specific JSON passed through to the LLM provider.
        tools: Tools the model may call (2025-11-25).
        task: Asks for the request to run as a task (2025-11-25).
    """

    messages: list[SamplingMessage]
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: IncludeContext | None = None
    temperature: float | None = None
    max_tokens: int
    stop_sequences: list[str] | None = None
    metadata: dict[str, object] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    task: TaskMetadata | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class CreateMessageResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``sampling/createMessage``: the model's reply.

    ``stop_reason`` is any string: the schema names ``endTurn``, ``stopSequence``,
    ``maxTokens`` and ``toolUse`` but allows others.
    """

    role: Role
    content: SamplingContent | list[SamplingContent]
    model: str
    stop_reason: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
