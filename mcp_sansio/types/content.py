"""Content blocks: what tools, prompts, resources and sampling messages carry.

Content is a union tagged on ``type`` (schema ``ContentBlock``; ``SamplingMessageContentBlock``
in MCP 2025-11-25). ``audio`` appeared in 2025-03-26, ``resource_link`` in 2025-06-18, and
``tool_use``/``tool_result`` (sampling only) in 2025-11-25. Every tagged block also has its
tag as a read-only class attribute, ``block.type == "image"`` as in the official SDK (msgspec
keeps a ``tag_field`` out of the fields; a ``ClassVar`` costs decoding nothing).
"""

from typing import ClassVar, Literal, TypeAlias

import msgspec

from ._base import WireStruct, required_list

__all__ = [
    "Annotations",
    "AudioContent",
    "ContentBlock",
    "EmbeddedResource",
    "Icon",
    "ImageContent",
    "ResourceContents",
    "ResourceLink",
    "Role",
    "SamplingContent",
    "TextContent",
    "ToolResultContent",
    "ToolUseContent",
]

Role: TypeAlias = Literal["user", "assistant"]
"""The sender or recipient of a message."""


class Annotations(WireStruct, kw_only=True, omit_defaults=True):
    """Hints on how a client should use or display an object.

    Attributes:
        audience: Who the object is meant for.
        priority: Importance from 0 (optional) to 1 (required).
        last_modified: ISO 8601 timestamp (since 2025-06-18).
    """

    audience: list[Role] | None = None
    priority: float | None = None
    last_modified: str | None = None


class Icon(WireStruct, kw_only=True, omit_defaults=True):
    """An icon for display in a user interface (since 2025-11-25).

    Attributes:
        src: An ``https:`` or ``data:`` URI.
        sizes: Sizes such as ``"48x48"`` or ``"any"``.
        theme: The background the icon is designed for.
    """

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


class ResourceContents(WireStruct, kw_only=True, omit_defaults=True):
    """The contents of a resource: ``text`` for text, ``blob`` (base64) for binary data.

    The schema's ``TextResourceContents | BlobResourceContents`` is one struct here, since
    msgspec cannot tell untagged objects apart; exactly one of ``text`` and ``blob`` is set.
    """

    uri: str
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class TextContent(WireStruct, kw_only=True, omit_defaults=True, tag_field="type", tag="text"):
    """Text content."""

    type: ClassVar[Literal["text"]] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ImageContent(WireStruct, kw_only=True, omit_defaults=True, tag_field="type", tag="image"):
    """An image, base64-encoded in ``data``."""

    type: ClassVar[Literal["image"]] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class AudioContent(WireStruct, kw_only=True, omit_defaults=True, tag_field="type", tag="audio"):
    """Audio, base64-encoded in ``data`` (since 2025-03-26)."""

    type: ClassVar[Literal["audio"]] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ResourceLink(WireStruct, kw_only=True, omit_defaults=True, tag_field="type", tag="resource_link"):
    """A link to a resource the client may read; not its contents (since 2025-06-18)."""

    type: ClassVar[Literal["resource_link"]] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[Icon] | None = None
    annotations: Annotations | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class EmbeddedResource(WireStruct, kw_only=True, omit_defaults=True, tag_field="type", tag="resource"):
    """The contents of a resource, embedded in a prompt or tool result."""

    type: ClassVar[Literal["resource"]] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


ContentBlock: TypeAlias = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource
"""Any content a tool result or prompt message may hold."""


class ToolUseContent(WireStruct, kw_only=True, omit_defaults=True, tag_field="type", tag="tool_use"):
    """A model's request to call a tool, inside sampling (since 2025-11-25).

    Attributes:
        id: Matches the ``tool_use_id`` of the ``ToolResultContent`` that answers it.
        input: The tool arguments, as a JSON object.
    """

    type: ClassVar[Literal["tool_use"]] = "tool_use"
    id: str
    name: str
    input: dict[str, object]
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ToolResultContent(WireStruct, kw_only=True, omit_defaults=True, tag_field="type", tag="tool_result"):
    """The result of a tool use, sent back to the model in sampling (since 2025-11-25)."""

    type: ClassVar[Literal["tool_result"]] = "tool_result"
    tool_use_id: str
    content: list[ContentBlock] = required_list()
    structured_content: object | None = None  # any JSON value in 2026-07-28
    is_error: bool = False
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


SamplingContent: TypeAlias = TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent
"""Any content a sampling message may hold."""
