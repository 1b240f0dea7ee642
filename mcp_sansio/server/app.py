"""The application definition: :class:`MCPServer`, what people write to make a server.

Decorators (or the ``add_*`` methods, for those who prefer plain calls) register tools,
resources, resource templates, prompts and completions. Registration is pure data: it
reads signatures and docstrings, derives JSON Schemas with msgspec and records the function
as an opaque reference. Serving is done by the sessions and transports of this package,
driven by a driver (``mcp_sansio_asyncio.serve_stdio(app)``, ``mcp_sansio_asgi.AsgiApp(app)``, ...) that
runs the handlers; one ``MCPServer`` serves any number of connections in both eras.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Final, Protocol, TypedDict, TypeVar, Unpack, overload

import msgspec

from ..errors import LocalProtocolError
from ..modern import tool_header_paths
from ..types import (
    Annotations,
    Icon,
    Implementation,
    Prompt,
    PromptArgument,
    PromptsCapability,
    Resource,
    ResourcesCapability,
    ResourceTemplate,
    ServerCapabilities,
    Tool,
    ToolAnnotations,
    ToolExecution,
    ToolsCapability,
)
from .authz import AuthSettings, check_scopes
from .config import CacheScope, ServerConfig
from .registry import (
    ListKind,
    RegisteredCompletion,
    RegisteredPrompt,
    RegisteredResource,
    RegisteredTemplate,
    RegisteredTool,
    Registry,
    TaskSupport,
    UriTemplate,
)
from .results import wrap_output_schema
from .signature import inspect_handler
from .skill_files import add_skill

if TYPE_CHECKING:
    from ..skills import Skill
    from ..versions import VersionRules

__all__ = ["TASKS_EXTENSION", "Announced", "Listener", "MCPServer"]

F = TypeVar("F", bound=Callable[..., Any])


class Announced(Protocol):
    """What an app's announcements are applied to: a transport serving it (``Endpoint``)."""

    def notify_list_changed(self, kind: ListKind) -> None:
        """Tell its clients that the ``kind`` list changed."""
        ...

    def notify_resource_updated(self, uri: str) -> None:
        """Tell its clients subscribed to ``uri`` that it changed."""
        ...


Listener = Callable[[Callable[[Announced], None]], None]
"""A driver's receiver of announcements: it applies each to its transport on its loop."""

class _PromptOptions(TypedDict, total=False):
    """The keyword options of ``@app.prompt(...)`` (see :meth:`MCPServer.add_prompt`)."""

    title: str | None
    description: str | None
    icons: Sequence[Icon] | None
    meta: Mapping[str, object] | None


class _ToolOptions(_PromptOptions, total=False):
    """The keyword options of ``@app.tool(...)`` (see :meth:`MCPServer.add_tool`)."""

    scopes: Sequence[str]
    annotations: ToolAnnotations | None
    input_schema: Mapping[str, object] | None
    output_schema: Mapping[str, object] | None
    structured: bool | None
    task_support: TaskSupport


TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
_MODERN_ONLY: Final = frozenset({TASKS_EXTENSION})
DRIVER_ENTRY_POINTS: Final = "mcp_sansio.drivers"
"""The entry-point group where drivers offer themselves to the core (``asgi``)."""


class MCPServer:
    """An MCP server's identity and everything it offers.

    ::

        app = MCPServer("weather", version="1.0.0", instructions="Ask me about the weather.")

        @app.tool()
        def forecast(city: str, days: int = 3) -> str:
            \"\"\"The forecast for a city.\"\"\"
            return f"Sunny in {city} for {days} days"

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: a display name.
        description: what the server is (2025-11-25 ``serverInfo.description``).
        instructions: guidance for the model, sent in ``initialize`` / ``server/discover``.
        website_url: ``serverInfo.websiteUrl``.
        icons: ``serverInfo.icons``.
        config: limits and protocol choices (:class:`ServerConfig`).
        mask_error_details: send a generic message ("Error calling tool 'name'", "Internal
            error") for a handler's exception instead of its text, and log the traceback
            (a ``ToolError`` or ``RequestError`` is still sent as raised).
        auth: protect the HTTP transports (Streamable HTTP, WebSocket) with OAuth bearer
            tokens (:class:`~mcp_sansio.server.authz.AuthSettings`); stdio is never
            protected (its client started the server).
    """

    def __init__(self, name: str, *, version: str = "0.1.0", title: str | None = None,
                 description: str | None = None, instructions: str | None = None,
                 website_url: str | None = None, icons: Sequence[Icon] | None = None,
                 config: ServerConfig | None = None, auth: AuthSettings | None = None,
                 mask_error_details: bool = False) -> None:
        self.info = Implementation(name=name, version=version, title=title, description=description,
                                   website_url=website_url, icons=None if icons is None else list(icons))
        self.instructions = instructions
        self.config = config or ServerConfig()
        self.auth = auth
        """How the HTTP transports are protected (``None``: they are not)."""
        self.registry = Registry()
        self.extensions: dict[str, dict[str, object]] = {}
        """Extensions the server declares (``capabilities.extensions``), by identifier."""
        self.report_answers = False
        """Queue ``RequestAnswered`` for every request the core answers itself (no handler
        runs: ``initialize``, the lists, ``ping``, errors): telemetry turns it on."""
        self.mask_error_details = mask_error_details
        self._listeners: list[Listener] = []

    # ------------------------------------------------------------------ serving

    def asgi(self, **options: Any) -> Callable[..., Awaitable[None]]:
        """This server as an ASGI 3 application: ``asgi = app.asgi(store="redis://...")`` for
        ``uvicorn module:asgi --workers 3``; the same as ``mcp_sansio_asgi.AsgiApp(app,
        **options)``, whose arguments these are (call it directly to have them type-checked).

        The ASGI driver is found through the ``asgi`` entry point of the ``mcp_sansio.drivers``
        group, so that the core names no driver (an installed alternative may take its place).

        Raises:
            LookupError: no ASGI driver is installed.
        """
        found = entry_points(group=DRIVER_ENTRY_POINTS, name="asgi")
        if not found:
            raise LookupError(f"no ASGI driver is installed (no 'asgi' entry point in {DRIVER_ENTRY_POINTS})")
        make: Callable[..., Callable[..., Awaitable[None]]] = next(iter(found)).load()
        return make(self, **options)

    # ------------------------------------------------------------------ announcing changes

    def notify_list_changed(self, kind: ListKind) -> None:
        """Tell every connected client that wants to know that the ``kind`` list
        (``"tools"``, ``"prompts"``, ``"resources"``) changed, on every transport serving
        this app: call it after ``add_tool``/``remove_tool`` & co. made outside a request
        (inside one, ``ctx.notify_list_changed`` does the same). Callable from any thread."""
        for listener in list(self._listeners):
            listener(lambda endpoint: endpoint.notify_list_changed(kind))

    def notify_resource_updated(self, uri: str) -> None:
        """Tell every client subscribed to ``uri`` that it changed (any thread)."""
        for listener in list(self._listeners):
            listener(lambda endpoint: endpoint.notify_resource_updated(uri))

    def add_listener(self, listener: Listener) -> None:
        """For drivers: ``listener`` receives each announcement as a function to apply to
        its transport (on its own loop's thread; it may be called from any thread)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """For drivers: stop giving ``listener`` announcements."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    # ------------------------------------------------------------------ tools

    @overload
    def tool(self, name: F, /) -> F: ...

    @overload
    def tool(self, name: str | None = None, **options: Unpack[_ToolOptions]) -> Callable[[F], F]: ...

    def tool(self, name: str | F | None = None, *, title: str | None = None, description: str | None = None,
             annotations: ToolAnnotations | None = None, input_schema: Mapping[str, object] | None = None,
             output_schema: Mapping[str, object] | None = None, structured: bool | None = None,
             task_support: TaskSupport = "forbidden", icons: Sequence[Icon] | None = None,
             meta: Mapping[str, object] | None = None,
             scopes: Sequence[str] = ()) -> Callable[[F], F] | F:
        """Register the decorated function as a tool (see :meth:`add_tool`): ``@app.tool``
        as it is, or ``@app.tool(...)`` with options."""
        if callable(name):  # the bare decorator: the function itself
            self.add_tool(name)
            return name

        def register(fn: F) -> F:
            self.add_tool(fn, name=name, title=title, description=description, annotations=annotations,
                          input_schema=input_schema, output_schema=output_schema, structured=structured,
                          task_support=task_support, icons=icons, meta=meta, scopes=scopes)
            return fn
        return register

    def add_tool(self, fn: Callable[..., Any], *, name: str | None = None, title: str | None = None,
                 description: str | None = None, annotations: ToolAnnotations | None = None,
                 input_schema: Mapping[str, object] | None = None,
                 output_schema: Mapping[str, object] | None = None, structured: bool | None = None,
                 task_support: TaskSupport = "forbidden", icons: Sequence[Icon] | None = None,
                 meta: Mapping[str, object] | None = None, scopes: Sequence[str] = ()) -> RegisteredTool:
        """Register ``fn`` (``def`` or ``async def``) as a tool.

        Args:
            fn: the handler; its typed parameters are the tool's arguments (a parameter
                annotated ``Context`` receives the request's context instead). It returns
                a ``str``, content blocks, a ``CallToolResult``, or a structured value.
            name: the tool's name (default: the function's).
            title: a display name.
            description: what it does (default: the docstring).
            annotations: behaviour hints.
            input_schema: the schema to advertise instead of the derived one (arguments
                are still validated against the parameters' types; ``**kwargs`` receives
                the rest).
            output_schema: the schema of ``structuredContent`` instead of the one derived
                from the return annotation.
            structured: answer ``structuredContent`` (default: when the return annotation
                is a Struct, dataclass, TypedDict, dict, number, boolean or list of values,
                or ``output_schema`` is given). Before 2026-07-28 a value other than an
                object goes as ``{"result": value}`` with the ``outputSchema`` wrapped to
                match (FastMCP's rule); 2026-07-28 clients get the value as it is.
            task_support: may it run as a task (tasks extension).
            icons: display icons.
            meta: the tool's ``_meta``.
            scopes: OAuth scopes a call needs when the server has ``auth`` (besides its
                required ones): a token lacking one gets 403 ``insufficient_scope`` naming
                them, so the client can step up. The tool is listed to every client.

        Returns:
            The registration.

        Raises:
            LocalProtocolError: the signature cannot be a tool's, an ``x-mcp-header``
                annotation in the schema breaks the spec's rules, or a scope is no OAuth
                scope token.
        """
        tool_name = name or fn.__name__
        if isinstance(scopes, str):
            raise LocalProtocolError(f"tool {tool_name!r}: scopes is a sequence of scopes, not one string")
        check_scopes(scopes)
        signature = inspect_handler(fn, name=tool_name, kind="tool")
        schema = dict(input_schema) if input_schema is not None else signature.input_schema()
        out = dict(output_schema) if output_schema is not None else None
        if out is None and structured is not False:
            out = signature.output_schema()
        is_structured = out is not None if structured is None else structured
        listed_out = out if is_structured else None
        try:
            header_paths = tool_header_paths(schema)
        except ValueError as exc:
            raise LocalProtocolError(f"tool {tool_name!r}: {exc}") from exc
        tool = Tool(
            name=tool_name, title=title, description=description or _doc(fn), input_schema=schema,
            output_schema=listed_out, annotations=annotations,
            execution=None if task_support == "forbidden" else ToolExecution(task_support=task_support),
            icons=None if icons is None else list(icons), meta=None if meta is None else dict(meta),
        )
        wrapped = None
        if listed_out is not None and listed_out.get("type") != "object":  # a number, an array, ...
            wrapped = msgspec.structs.replace(tool, output_schema=wrap_output_schema(listed_out))
        entry = RegisteredTool(tool=tool, signature=signature, structured=is_structured,
                               task_support=task_support, header_paths=header_paths, wrapped=wrapped,
                               scopes=tuple(scopes))
        self.registry.add_tool(entry)
        if task_support != "forbidden":
            self.extensions.setdefault(TASKS_EXTENSION, {})
        return entry

    def remove_tool(self, name: str) -> bool:
        """Stop offering the tool ``name``; whether it existed (tell connected clients with
        :meth:`notify_list_changed`, or ``ctx.notify_list_changed`` inside a handler)."""
        return self.registry.remove("tools", name)

    # ------------------------------------------------------------------ resources

    def resource(self, uri: str, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, mime_type: str | None = None, size: int | None = None,
                 annotations: Annotations | None = None, icons: Sequence[Icon] | None = None,
                 meta: Mapping[str, object] | None = None, ttl_ms: int | None = None,
                 cache_scope: CacheScope | None = None) -> Callable[[F], F]:
        """Register the decorated function as the resource ``uri``, or as a resource
        template when ``uri`` has ``{variables}`` (the function takes them as parameters).

        The function returns ``str`` (text), ``bytes`` (a blob), a ``ReadResourceResult``
        or a list of ``ResourceContents``.

        Raises:
            LocalProtocolError: used bare (``@app.resource`` without its URI).
        """
        if not isinstance(uri, str):
            what = getattr(uri, "__name__", type(uri).__name__)
            raise LocalProtocolError("@app.resource needs the resource's URI: write "
                                     f"@app.resource(\"scheme://...\") above {what!r}")

        def register(fn: F) -> F:
            kwargs: dict[str, Any] = {
                "name": name, "title": title, "description": description, "mime_type": mime_type,
                "annotations": annotations, "icons": icons, "meta": meta, "ttl_ms": ttl_ms,
                "cache_scope": cache_scope,
            }
            if UriTemplate(uri).variables:
                self.add_resource_template(uri, fn, **kwargs)
            else:
                self.add_resource(uri, fn, size=size, **kwargs)
            return fn
        return register

    def add_resource(self, uri: str, fn: Callable[..., Any] | None = None, *, text: str | None = None,
                     blob: bytes | None = None, name: str | None = None, title: str | None = None,
                     description: str | None = None, mime_type: str | None = None, size: int | None = None,
                     annotations: Annotations | None = None, icons: Sequence[Icon] | None = None,
                     meta: Mapping[str, object] | None = None, ttl_ms: int | None = None,
                     cache_scope: CacheScope | None = None) -> RegisteredResource:
        """Register the resource ``uri``: read by ``fn``, or static ``text`` or ``blob``
        (answered by the core without calling anything).

        Raises:
            LocalProtocolError: not exactly one of ``fn``, ``text`` and ``blob``; or ``fn``
                has parameters other than a ``Context``.
        """
        if sum(x is not None for x in (fn, text, blob)) != 1:
            raise LocalProtocolError(f"resource {uri!r} needs exactly one of fn, text and blob")
        signature = None
        if fn is not None:
            signature = inspect_handler(fn, name=uri, kind="resource")
            if signature.required:
                raise LocalProtocolError(f"resource {uri!r} has no URI variables for {signature.required}")
        if blob is not None and size is None:
            size = len(blob)
        elif text is not None and size is None:
            size = len(text.encode())
        resource = Resource(
            uri=uri, name=name or (fn.__name__ if fn is not None else uri), title=title,
            description=description or (_doc(fn) if fn is not None else None), mime_type=mime_type,
            size=size, annotations=annotations, icons=None if icons is None else list(icons),
            meta=None if meta is None else dict(meta),
        )
        entry = RegisteredResource(
            resource=resource, signature=signature, text=text,
            blob=None if blob is None else base64.b64encode(blob).decode("ascii"),
            ttl_ms=ttl_ms, cache_scope=cache_scope,
        )
        self.registry.add_resource(entry)
        return entry

    def add_resource_template(self, uri_template: str, fn: Callable[..., Any], *, name: str | None = None,
                              title: str | None = None, description: str | None = None,
                              mime_type: str | None = None, annotations: Annotations | None = None,
                              icons: Sequence[Icon] | None = None, meta: Mapping[str, object] | None = None,
                              ttl_ms: int | None = None,
                              cache_scope: CacheScope | None = None) -> RegisteredTemplate:
        """Register the resource template ``uri_template`` read by ``fn``, which takes its
        variables as parameters (converted to their annotated types).

        Raises:
            LocalProtocolError: the template is malformed, or ``fn`` requires a parameter
                that is no variable of it.
        """
        matcher = UriTemplate(uri_template)
        signature = inspect_handler(fn, name=uri_template, kind="resource template")
        unknown = [p for p in signature.required if p not in matcher.variables]
        if unknown:
            raise LocalProtocolError(f"template {uri_template!r} has no variables {unknown}")
        template = ResourceTemplate(
            uri_template=uri_template, name=name or fn.__name__, title=title,
            description=description or _doc(fn), mime_type=mime_type, annotations=annotations,
            icons=None if icons is None else list(icons), meta=None if meta is None else dict(meta),
        )
        entry = RegisteredTemplate(template=template, matcher=matcher, signature=signature, ttl_ms=ttl_ms,
                                   cache_scope=cache_scope)
        self.registry.add_template(entry)
        return entry

    def remove_resource(self, uri: str) -> bool:
        """Stop offering the resource (or template) ``uri``; whether it existed."""
        return self.registry.remove("resources", uri)

    # ------------------------------------------------------------------ prompts

    @overload
    def prompt(self, name: F, /) -> F: ...

    @overload
    def prompt(self, name: str | None = None, **options: Unpack[_PromptOptions]) -> Callable[[F], F]: ...

    def prompt(self, name: str | F | None = None, *, title: str | None = None, description: str | None = None,
               icons: Sequence[Icon] | None = None,
               meta: Mapping[str, object] | None = None) -> Callable[[F], F] | F:
        """Register the decorated function as a prompt (see :meth:`add_prompt`): ``@app.prompt``
        as it is, or ``@app.prompt(...)`` with options."""
        if callable(name):  # the bare decorator: the function itself
            self.add_prompt(name)
            return name

        def register(fn: F) -> F:
            self.add_prompt(fn, name=name, title=title, description=description, icons=icons, meta=meta)
            return fn
        return register

    def add_prompt(self, fn: Callable[..., Any], *, name: str | None = None, title: str | None = None,
                   description: str | None = None, icons: Sequence[Icon] | None = None,
                   meta: Mapping[str, object] | None = None) -> RegisteredPrompt:
        """Register ``fn`` as a prompt; its parameters are the prompt's arguments (strings on
        the wire, converted to the annotated types). It returns a ``str`` (one user
        message), ``PromptMessage`` objects or strings, or a ``GetPromptResult``.

        Raises:
            LocalProtocolError: the signature cannot be a prompt's.
        """
        prompt_name = name or fn.__name__
        signature = inspect_handler(fn, name=prompt_name, kind="prompt")
        arguments = [
            PromptArgument(name=arg, description=signature.descriptions.get(arg),
                           required=arg in signature.required)
            for arg in signature.names
        ]
        prompt = Prompt(name=prompt_name, title=title, description=description or _doc(fn),
                        arguments=arguments or None, icons=None if icons is None else list(icons),
                        meta=None if meta is None else dict(meta))
        entry = RegisteredPrompt(prompt=prompt, signature=signature)
        self.registry.add_prompt(entry)
        return entry

    def remove_prompt(self, name: str) -> bool:
        """Stop offering the prompt ``name``; whether it existed."""
        return self.registry.remove("prompts", name)

    # ------------------------------------------------------------------ completion

    def completion(self, *, argument: str, prompt: str | None = None,
                   template: str | None = None) -> Callable[[F], F]:
        """Register the decorated function as the completion of ``argument`` of a prompt or
        a resource template's variable. It takes ``value`` (the text typed so far) and,
        if it declares them, ``context`` (the arguments already chosen, a dict) and a
        ``Context``; it returns the candidate strings."""
        def register(fn: F) -> F:
            self.add_completion(argument=argument, prompt=prompt, template=template, fn=fn)
            return fn
        return register

    def add_completion(self, *, argument: str, prompt: str | None = None, template: str | None = None,
                       fn: Callable[..., Any] | None = None,
                       values: Sequence[str] | None = None) -> RegisteredCompletion:
        """Register completions for ``argument`` of ``prompt`` or of ``template``: by ``fn``
        (see :meth:`completion`), or from static ``values`` the core filters by prefix.

        Raises:
            LocalProtocolError: not exactly one of ``prompt`` and ``template``, or of
                ``fn`` and ``values``.
        """
        if (prompt is None) == (template is None) or (fn is None) == (values is None):
            raise LocalProtocolError("a completion names one prompt or template, and has fn or values")
        signature = None if fn is None else inspect_handler(fn, name=argument, kind="completion of")
        ref = prompt if prompt is not None else template
        assert ref is not None  # checked above
        entry = RegisteredCompletion(
            ref_type="ref/prompt" if prompt is not None else "ref/resource", ref=ref, argument=argument,
            signature=signature, values=tuple(values or ()),
        )
        self.registry.add_completion(entry)
        return entry

    # ------------------------------------------------------------------ capabilities

    def capabilities(self, rules: VersionRules) -> ServerCapabilities:
        """What the server declares to a client speaking ``rules.version``: a feature for
        each kind of thing registered, logging, and its extensions (2026-07-28 only)."""
        registry = self.registry
        resources = bool(registry.resources or registry.templates)
        return ServerCapabilities(
            tools=ToolsCapability(list_changed=True) if registry.tools else None,
            prompts=PromptsCapability(list_changed=True) if registry.prompts else None,
            # Subscriptions: resources/subscribe, or subscriptions/listen in 2026-07-28.
            resources=ResourcesCapability(subscribe=True, list_changed=True) if resources else None,
            completions={} if registry.completions else None,
            logging={},
            extensions=self._extensions(rules),
        )

    def _extensions(self, rules: VersionRules) -> dict[str, dict[str, object]] | None:
        """The extensions declared to a client of ``rules.version`` (tasks exist only in
        the stateless era; skills in both)."""
        declared = {name: settings for name, settings in self.extensions.items()
                    if rules.request_meta or name not in _MODERN_ONLY}
        return declared or None

    # ------------------------------------------------------------------ skills

    def add_skill(self, files: Mapping[str, bytes | str], *, path: str | None = None) -> Skill:
        """Serve a skill (the Skills extension, SEP-2640): ``files`` maps paths inside the
        skill to their content and holds ``SKILL.md``, whose YAML frontmatter names and
        describes it; ``path`` is its skill path (default: the name, which must be the
        last segment). Each file becomes a resource ``skill://<path>/<file>``.

        Raises:
            LocalProtocolError: the files do not make a valid skill.
        """
        return add_skill(self.registry, self.extensions, files, path=path)


def _doc(fn: Callable[..., Any] | None) -> str | None:
    """The first paragraph of ``fn``'s docstring, or ``None``."""
    doc = inspect.getdoc(fn) if fn is not None else None
    return doc.split("\n\n", 1)[0].strip() or None if doc else None
