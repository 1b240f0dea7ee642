"""Prompts: ``prompts/list`` and ``prompts/get`` (MCP server feature "Prompts")."""

import msgspec

from ._base import WireStruct, required_list
from .content import ContentBlock, Icon, Role

__all__ = [
    "GetPromptRequestParams",
    "GetPromptResult",
    "ListPromptsResult",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
]


class PromptArgument(WireStruct, kw_only=True, omit_defaults=True):
    """An argument a prompt template accepts."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


class Prompt(WireStruct, kw_only=True, omit_defaults=True):
    """A prompt or prompt template the server offers."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ListPromptsResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``prompts/list``: one page of prompts (caching hints as on
    :class:`~mcp_sansio.types.ListToolsResult`)."""

    prompts: list[Prompt] = required_list()
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class GetPromptRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``prompts/get``: the prompt name and its string arguments."""

    name: str
    arguments: dict[str, str] | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class PromptMessage(WireStruct, kw_only=True, omit_defaults=True):
    """One message of a prompt."""

    role: Role
    content: ContentBlock


class GetPromptResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``prompts/get``: the rendered messages."""

    description: str | None = None
    messages: list[PromptMessage] = required_list()
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
