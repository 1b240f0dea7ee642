"""What a server offers, as data: registered tools, resources, templates, prompts, completions.

Each registration pairs the wire definition a client lists (``Tool``, ``Resource``, ...)
with what the core needs to serve it: the handler's parsed signature (the function itself
is an opaque reference the core never calls), or static content the core answers itself.
Lists keep registration order, so ``tools/list`` is deterministic (2026-07-28 asks for it).
"""

from __future__ import annotations

import re
from typing import Final, Literal

import msgspec

from ..errors import LocalProtocolError
from ..skills import Skill
from ..types import Prompt, Resource, ResourceTemplate, Tool
from ..versions import VersionRules
from .config import CacheScope
from .signature import HandlerSignature

__all__ = [
    "ListKind",
    "RegisteredCompletion",
    "RegisteredPrompt",
    "RegisteredResource",
    "RegisteredTemplate",
    "RegisteredTool",
    "Registry",
    "TaskSupport",
    "UriTemplate",
]

TaskSupport = Literal["forbidden", "optional", "required"]
"""Whether a tool may run as a task (the tasks extension): never, when the client can, always."""

_VARIABLE: Final = re.compile(r"\{([+#]?)([A-Za-z0-9_.%]+)\*?\}")

ListKind = Literal["tools", "prompts", "resources"]
"""A list whose changes clients can be told of."""


class UriTemplate:
    """An RFC 6570 template (level 1 and 2 expressions) matched against concrete URIs.

    ``{var}`` matches one path segment (no ``/``, ``?`` or ``#``); ``{+var}`` and ``{#var}``
    match any run of characters (reserved expansion).
    """

    __slots__ = ("pattern", "template", "variables")

    def __init__(self, template: str) -> None:
        self.template = template
        parts: list[str] = []
        names: list[str] = []
        at = 0
        for match in _VARIABLE.finditer(template):
            parts.append(re.escape(template[at:match.start()]))
            operator, name = match.group(1), match.group(2)
            if name in names:
                raise LocalProtocolError(f"URI template {template!r} names {name!r} twice")
            names.append(name)
            prefix = "#" if operator == "#" else ""
            body = ".+?" if operator else "[^/?#]+"
            parts.append(f"{re.escape(prefix)}(?P<{name.replace('.', '_').replace('%', '_')}>{body})")
            at = match.end()
        parts.append(re.escape(template[at:]))
        self.variables = tuple(names)
        self.pattern = re.compile("".join(parts), re.DOTALL)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri`` if the template produces it, else ``None``."""
        found = self.pattern.fullmatch(uri)
        if found is None:
            return None
        return dict(zip(self.variables, found.groups(), strict=True))


class RegisteredTool(msgspec.Struct, frozen=True, kw_only=True):
    """A tool: its listed definition and its handler."""

    tool: Tool
    signature: HandlerSignature
    structured: bool
    task_support: TaskSupport = "forbidden"
    header_paths: dict[tuple[str, ...], str] = msgspec.field(default_factory=dict)
    """Arguments mirrored into ``Mcp-Param-*`` headers (``x-mcp-header``), by path."""
    scopes: tuple[str, ...] = ()
    """OAuth scopes a call needs (besides the server's required ones) when auth is on."""
    wrapped: Tool | None = None
    """The tool as revisions whose ``structuredContent`` is an object list it (its
    ``outputSchema`` wrapped as ``{"result": ...}``); ``None`` when its schema is an object."""

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.tool.name

    def listed(self, rules: VersionRules) -> Tool:
        """The definition ``tools/list`` gives a client of ``rules.version``."""
        if self.wrapped is None or rules.structured_any_value:
            return self.tool
        return self.wrapped


class RegisteredPrompt(msgspec.Struct, frozen=True, kw_only=True):
    """A prompt: its listed definition and its handler."""

    prompt: Prompt
    signature: HandlerSignature

    @property
    def name(self) -> str:
        """The prompt's name."""
        return self.prompt.name


class RegisteredResource(msgspec.Struct, frozen=True, kw_only=True):
    """A resource with a fixed URI: a handler, or static ``text``/``blob`` the core serves.

    ``ttl_ms`` and ``cache_scope`` override the config's caching hints for its reads; an
    unlisted resource is readable but not in ``resources/list`` (a skill's files).
    """

    resource: Resource
    signature: HandlerSignature | None = None
    text: str | None = None
    blob: str | None = None
    ttl_ms: int | None = None
    cache_scope: CacheScope | None = None
    listed: bool = True

    @property
    def uri(self) -> str:
        """The resource's URI."""
        return self.resource.uri


class RegisteredTemplate(msgspec.Struct, frozen=True, kw_only=True):
    """A family of resources named by a URI template; the handler takes its variables."""

    template: ResourceTemplate
    matcher: UriTemplate
    signature: HandlerSignature
    ttl_ms: int | None = None
    cache_scope: CacheScope | None = None


class RegisteredCompletion(msgspec.Struct, frozen=True, kw_only=True):
    """Completions for one argument of a prompt (``ref/prompt``) or template variable
    (``ref/resource``): a handler, or static ``values`` the core filters by prefix."""

    ref_type: Literal["ref/prompt", "ref/resource"]
    ref: str
    argument: str
    signature: HandlerSignature | None = None
    values: tuple[str, ...] = ()


class Registry:
    """Every registration of one server, in registration order.

    ``revision`` counts changes to each list, so a driver can tell sessions to announce
    ``list_changed`` after a change made while clients are connected.
    """

    __slots__ = ("completions", "prompts", "resources", "revision", "skills", "templates", "tools")

    def __init__(self) -> None:
        self.tools: dict[str, RegisteredTool] = {}
        self.prompts: dict[str, RegisteredPrompt] = {}
        self.resources: dict[str, RegisteredResource] = {}
        self.templates: dict[str, RegisteredTemplate] = {}
        self.completions: dict[tuple[str, str, str], RegisteredCompletion] = {}
        self.skills: dict[str, Skill] = {}  # by the URI of the skill's SKILL.md
        self.revision: dict[str, int] = {"tools": 0, "prompts": 0, "resources": 0}

    def add_tool(self, entry: RegisteredTool) -> None:
        """Register (or replace) a tool."""
        self.tools[entry.name] = entry
        self.revision["tools"] += 1

    def add_prompt(self, entry: RegisteredPrompt) -> None:
        """Register (or replace) a prompt."""
        self.prompts[entry.name] = entry
        self.revision["prompts"] += 1

    def add_resource(self, entry: RegisteredResource) -> None:
        """Register (or replace) a resource."""
        self.resources[entry.uri] = entry
        self.revision["resources"] += 1

    def add_template(self, entry: RegisteredTemplate) -> None:
        """Register (or replace) a resource template."""
        self.templates[entry.template.uri_template] = entry
        self.revision["resources"] += 1

    def add_completion(self, entry: RegisteredCompletion) -> None:
        """Register (or replace) the completion of one argument."""
        self.completions[entry.ref_type, entry.ref, entry.argument] = entry

    def remove(self, kind: Literal["tools", "prompts", "resources"], key: str) -> bool:
        """Forget a tool, prompt, or resource or template (by URI); whether it was there."""
        table: dict[str, object]
        if kind == "resources":
            table = self.resources if key in self.resources else self.templates  # type: ignore[assignment]
        else:
            table = self.tools if kind == "tools" else self.prompts  # type: ignore[assignment]
        if table.pop(key, None) is None:
            return False
        self.revision[kind] += 1
        return True

    def find_resource(
        self, uri: str
    ) -> tuple[RegisteredResource | RegisteredTemplate, dict[str, str]] | None:
        """The resource named ``uri``, or the first template producing it with its variables."""
        fixed = self.resources.get(uri)
        if fixed is not None:
            return fixed, {}
        for entry in self.templates.values():
            variables = entry.matcher.match(uri)
            if variables is not None:
                return entry, variables
        return None
