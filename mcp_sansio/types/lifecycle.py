"""The ``initialize`` handshake: implementation info and capabilities.

Capability objects whose inner shape is open-ended or revision-specific (``sampling``,
``elicitation``, ``tasks``, ``logging``, ``completions``, ``experimental``) stay plain JSON
objects; presence is what matters to the session.
"""

import msgspec

from ._base import WireStruct
from .content import Icon

__all__ = [
    "ClientCapabilities",
    "Implementation",
    "InitializeRequestParams",
    "InitializeResult",
    "PromptsCapability",
    "ResourcesCapability",
    "RootsCapability",
    "ServerCapabilities",
    "ToolsCapability",
]


class Implementation(WireStruct, kw_only=True, omit_defaults=True):
    """The name and version of an MCP client or server.

    ``title`` appeared in 2025-06-18; ``description``, ``icons`` and ``website_url`` in
    2025-11-25.
    """

    name: str
    version: str
    title: str | None = None
    description: str | None = None
    icons: list[Icon] | None = None
    website_url: str | None = None


class RootsCapability(WireStruct, kw_only=True, omit_defaults=True):
    """The client offers ``roots/list``; ``list_changed``: it notifies changes."""

    list_changed: bool | None = None


class ClientCapabilities(WireStruct, kw_only=True, omit_defaults=True):
    """What a client supports.

    Attributes:
        sampling: Present if the client serves ``sampling/createMessage``; may hold
            ``context`` and ``tools`` (2025-11-25).
        elicitation: Present if the client serves ``elicitation/create`` (since 2025-06-18);
            may hold ``form`` and ``url`` (2025-11-25).
        tasks: Task support (2025-11-25): ``list``, ``cancel``, ``requests``.
        extensions: Extensions the client supports, by identifier, each with its settings
            (SEP-2133; in the schema since 2026-07-28).
    """

    experimental: dict[str, dict[str, object]] | None = None
    roots: RootsCapability | None = None
    sampling: dict[str, object] | None = None
    elicitation: dict[str, object] | None = None
    tasks: dict[str, object] | None = None
    extensions: dict[str, dict[str, object]] | None = None


class PromptsCapability(WireStruct, kw_only=True, omit_defaults=True):
    """The server offers prompts; ``list_changed``: it notifies changes to the list."""

    list_changed: bool | None = None


class ResourcesCapability(WireStruct, kw_only=True, omit_defaults=True):
    """The server offers resources; ``subscribe``: it supports ``resources/subscribe``."""

    subscribe: bool | None = None
    list_changed: bool | None = None


class ToolsCapability(WireStruct, kw_only=True, omit_defaults=True):
    """The server offers tools; ``list_changed``: it notifies changes to the list."""

    list_changed: bool | None = None


class ServerCapabilities(WireStruct, kw_only=True, omit_defaults=True):
    """What a server supports.

    Attributes:
        logging: Present if the server sends log messages and accepts ``logging/setLevel``.
        completions: Present if the server serves ``completion/complete`` (since 2025-03-26).
        tasks: Task support (2025-11-25): ``list``, ``cancel``, ``requests``.
        extensions: Extensions the server supports, by identifier, each with its settings
            (SEP-2133; in the schema since 2026-07-28).
    """

    experimental: dict[str, dict[str, object]] | None = None
    logging: dict[str, object] | None = None
    completions: dict[str, object] | None = None
    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None
    tasks: dict[str, object] | None = None
    extensions: dict[str, dict[str, object]] | None = None


class InitializeRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``initialize``: the newest protocol version the client supports, and more."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class InitializeResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``initialize``: the version the server chose, and its capabilities."""

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
