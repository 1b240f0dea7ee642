"""Handler return values into wire results: what ``respond(call, value)`` accepts.

Handlers return what is natural (a ``str``, content blocks, a Struct, ``bytes``, a list of
candidates); these functions make the result the method needs, by the registration's
rules (a structured tool answers ``structuredContent`` and its JSON as text). A handler
may also return the wire result itself (``CallToolResult``, ``GetPromptResult``, ...),
which passes through untouched.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Final

import msgspec

from ..errors import LocalProtocolError
from ..types import (
    AudioContent,
    CallToolResult,
    CompleteResult,
    Completion,
    ContentBlock,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    PromptMessage,
    ReadResourceResult,
    ResourceContents,
    ResourceLink,
    TextContent,
)
from ..versions import VersionRules
from .registry import RegisteredPrompt, RegisteredTool

__all__ = ["completion_result", "error_tool_result", "prompt_result", "read_result", "tool_result",
           "wrap_output_schema"]

_BLOCKS: Final = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
_MAX_COMPLETIONS: Final = 100  # the spec's bound on values per completion result
_encoder: Final = msgspec.json.Encoder()


def tool_result(entry: RegisteredTool, value: object, rules: VersionRules) -> CallToolResult:
    """The ``tools/call`` result for what ``entry``'s handler returned, to a client of
    ``rules.version``: before 2026-07-28 ``structuredContent`` is an object, so another
    value goes as ``{"result": value}`` (what the wrapped ``outputSchema`` describes); the
    text is the value's JSON either way.

    Raises:
        LocalProtocolError: ``value`` cannot be represented as JSON.
    """
    if isinstance(value, CallToolResult):
        return value
    if isinstance(value, str):
        return CallToolResult(content=[TextContent(text=value)])
    if entry.structured:
        structured = _builtins(value)
        text = _json(structured)
        if not rules.structured_any_value and (entry.wrapped is not None or not isinstance(structured, dict)):
            structured = {"result": structured}
        return CallToolResult(content=[TextContent(text=text)], structured_content=structured)
    return CallToolResult(content=_content(value))


def wrap_output_schema(schema: Mapping[str, object]) -> dict[str, object]:
    """``schema`` of a value other than an object, as the object ``{"result": value}``
    (``$defs`` stay at the root, so references still resolve; the marker tells FastMCP's
    client to unwrap it)."""
    inner = {k: v for k, v in schema.items() if k != "$defs"}
    wrapped: dict[str, object] = {"type": "object", "properties": {"result": inner}, "required": ["result"],
                                  "x-fastmcp-wrap-result": True}
    if "$defs" in schema:
        wrapped["$defs"] = schema["$defs"]
    return wrapped


def error_tool_result(message: str) -> CallToolResult:
    """A tool execution error: ``isError`` and the message as text."""
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


def prompt_result(entry: RegisteredPrompt, value: object) -> GetPromptResult:
    """The ``prompts/get`` result for what ``entry``'s handler returned: a string (one user
    message), a message or content block, or a list of them.

    Raises:
        LocalProtocolError: an item is no message, content block or string.
    """
    if isinstance(value, GetPromptResult):
        return value
    items = value if isinstance(value, list | tuple) else [value]
    return GetPromptResult(description=entry.prompt.description, messages=[_message(item) for item in items])


def read_result(uri: str, mime_type: str | None, value: object) -> ReadResourceResult:
    """The ``resources/read`` result for what a resource's handler returned: ``str`` (text),
    ``bytes`` (a blob), ``ResourceContents``, a list of those, or any JSON value.

    Raises:
        LocalProtocolError: ``value`` cannot be represented as JSON.
    """
    if isinstance(value, ReadResourceResult):
        return value
    items = value if isinstance(value, list | tuple) else [value]
    return ReadResourceResult(contents=[_contents(uri, mime_type, item) for item in items])


def completion_result(value: object) -> CompleteResult:
    """The ``completion/complete`` result for the candidates a handler returned (at most
    100 are sent, ``total`` and ``hasMore`` tell the rest).

    Raises:
        LocalProtocolError: ``value`` is not strings.
    """
    if isinstance(value, CompleteResult):
        return value
    if isinstance(value, Completion):
        return CompleteResult(completion=value)
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise LocalProtocolError(f"a completion handler returns strings, not {type(value).__name__}")
    values = list(value)
    if not all(isinstance(v, str) for v in values):
        raise LocalProtocolError("a completion handler returns strings")
    return CompleteResult(completion=Completion(
        values=values[:_MAX_COMPLETIONS], total=len(values), has_more=len(values) > _MAX_COMPLETIONS,
    ))


def _content(value: object) -> list[ContentBlock]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [_block(item) for item in value]
    return [_block(value)]


def _block(item: object) -> ContentBlock:
    if isinstance(item, _BLOCKS):
        return item
    if isinstance(item, str):
        return TextContent(text=item)
    return TextContent(text=_json(_builtins(item)))


def _message(item: object) -> PromptMessage:
    if isinstance(item, PromptMessage):
        return item
    if isinstance(item, str):
        return PromptMessage(role="user", content=TextContent(text=item))
    if isinstance(item, _BLOCKS):
        return PromptMessage(role="user", content=item)
    if isinstance(item, Mapping):
        try:
            return msgspec.convert(item, PromptMessage)
        except msgspec.ValidationError as exc:
            raise LocalProtocolError(f"a prompt message in wire shape is invalid: {exc}") from exc
    raise LocalProtocolError(f"a prompt handler returns messages or strings, not {type(item).__name__}")


def _contents(uri: str, mime_type: str | None, item: object) -> ResourceContents:
    if isinstance(item, ResourceContents):
        return item
    if isinstance(item, str):
        return ResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=item)
    if isinstance(item, bytes | bytearray | memoryview):
        return ResourceContents(uri=uri, mime_type=mime_type or "application/octet-stream",
                                blob=base64.b64encode(item).decode("ascii"))
    return ResourceContents(uri=uri, mime_type=mime_type or "application/json", text=_json(_builtins(item)))


def _builtins(value: object) -> object:
    try:
        return msgspec.to_builtins(value)
    except (TypeError, ValueError, RecursionError) as exc:  # RecursionError: a cycle, or nested too deep
        raise LocalProtocolError(f"the handler's value cannot be sent as JSON: {exc}") from exc


def _json(value: object) -> str:
    return _encoder.encode(value).decode()
