"""The client's public surface, written once: every request method, typed results, and
the one dispatch of the core's events.

Each method turns a call into a core request and waits for the event that ends it.
The class owns no I/O and imports no event loop: a driver subclasses it and supplies
the primitives (:meth:`AsyncClient._now`, :meth:`AsyncClient._wait`,
:meth:`AsyncClient._spawn`, :meth:`AsyncClient._flush`), and calls
:meth:`AsyncClient._deliver_events` after every input.
"""

from __future__ import annotations

import inspect  # async-only
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol, TypeVar, assert_never

import msgspec

from mcp_sansio.errors import McpSansioError
from mcp_sansio.events import (
    AuthorizationCompleted,
    AuthorizationEvent,
    AuthorizationFailed,
    AuthorizationRedirect,
    AuthorizationRequired,
    ClientEvent,
    ConnectionTerminated,
    GetStreamAbandoned,
    InitializeCompleted,
    InitializeFailed,
    MessageDiscarded,
    NotificationReceived,
    PeerErrorReceived,
    ProgressReceived,
    RequestFailed,
    RequestId,
    ResponseReceived,
    ServerRequestReceived,
    SessionForgotten,
    SideRequestFailed,
    SideResponseReceived,
)
from mcp_sansio.front import SessionFront
from mcp_sansio.handlers import NO_HANDLER, answer, handler_for, roots_result
from mcp_sansio.session import Phase
from mcp_sansio.skills import GET_SKILL, LIST_SKILLS, LoadedSkill, Skill, check_entry, load_skill
from mcp_sansio.types import (
    CALL_TOOL,
    COMPLETE,
    GET_PROMPT,
    LIST_PROMPTS,
    LIST_RESOURCE_TEMPLATES,
    LIST_RESOURCES,
    LIST_TOOLS,
    READ_RESOURCE,
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    Implementation,
    ListRootsResult,
    MethodResult,
    Prompt,
    PromptReference,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    ServerCapabilities,
    Tool,
    WireStruct,
)

from ..telemetry import client_telemetry
from .handlers import Handlers, NotificationHandler, ProgressCallback, RootsArg

__all__ = ["AsyncClient", "Waiter"]

log = logging.getLogger("mcp_sansio.client")

R = TypeVar("R", bound=WireStruct)


class Waiter(Protocol):
    """Where one caller waits for its answer (``asyncio.Future`` is one)."""

    def done(self) -> bool: ...
    def set_result(self, result: msgspec.Struct, /) -> None: ...
    def set_exception(self, exc: BaseException, /) -> None: ...


class AsyncClient:
    """A connected MCP client; every method sends one request and waits for its answer."""

    def __init__(self, core: SessionFront, handlers: Handlers) -> None:
        self._core = core
        self._handlers = handlers
        self._roots = list(handlers.roots) if handlers.roots is not None else None
        self._waiters: dict[RequestId, Waiter] = {}
        self._progress: dict[RequestId, ProgressCallback] = {}
        self._init_waiter: Waiter | None = None
        self._telemetry = client_telemetry(core)
        self._notices: deque[NotificationReceived] = deque()  # for the handler: see _notify()
        self._noticing = False
        self._notices_dropped = 0

    # ------------------------------------------------------------ properties

    @property
    def server_info(self) -> Implementation:
        """``serverInfo`` of the server (``.name``, ``.version``, ``.title``)."""
        return self._core.server_info or Implementation(name="", version="")

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision."""
        return self._core.protocol_version or ""

    @property
    def server_capabilities(self) -> ServerCapabilities:
        """What the server declared."""
        return self._core.server_capabilities or ServerCapabilities()

    @property
    def instructions(self) -> str | None:
        """The server's instructions for the model, if any."""
        return self._core.instructions

    @property
    def era(self) -> str:
        """``"modern"`` (the stateless 2026-07-28 protocol) or ``"legacy"`` (``initialize``)."""
        return self._core.era or "legacy"

    @property
    def closed(self) -> bool:
        """The connection has ended (closed by us, or the server went away)."""
        return self._core.phase is Phase.CLOSED

    # ------------------------------------------------------------- requests

    async def list_tools(self, *, timeout: float | None = None) -> list[Tool]:
        """Every tool, following pagination."""
        result = await self._call(LIST_TOOLS, lambda now: self._core.list_tools(now=now, timeout=timeout))
        return result.tools

    async def call_tool(
        self, name: str, arguments: Mapping[str, object] | None = None, *,
        timeout: float | None = None, on_progress: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Call a tool; ``on_progress(progress, total, message)`` sees its progress."""
        return await self._call(CALL_TOOL,
                                lambda now: self._core.call_tool(name, arguments, now=now, timeout=timeout),
                                name, on_progress=on_progress)

    async def list_resources(self, *, timeout: float | None = None) -> list[Resource]:
        """Every resource, following pagination."""
        result = await self._call(LIST_RESOURCES,
                                  lambda now: self._core.list_resources(now=now, timeout=timeout))
        return result.resources

    async def list_resource_templates(self, *, timeout: float | None = None) -> list[ResourceTemplate]:
        """Every resource template, following pagination."""
        result = await self._call(LIST_RESOURCE_TEMPLATES,
                                  lambda now: self._core.list_resource_templates(now=now, timeout=timeout))
        return result.resource_templates

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult:
        """The contents of one resource."""
        return await self._call(READ_RESOURCE,
                                lambda now: self._core.read_resource(uri, now=now, timeout=timeout), uri=uri)

    async def list_skills(self, *, timeout: float | None = None) -> list[Skill]:
        """Every skill the server lists (Skills extension), following pagination; no file is read."""
        result = await self._call(LIST_SKILLS, lambda now: self._core.list_skills(now=now, timeout=timeout))
        return result.skills

    async def get_skill(self, uri: str, *, timeout: float | None = None) -> Skill:
        """The entry of the skill whose ``SKILL.md`` is ``uri`` (``skills/get``)."""
        result = await self._call(GET_SKILL, lambda now: self._core.get_skill(uri, now=now, timeout=timeout))
        return result.skill

    async def load_skill(self, skill: Skill | str, *, timeout: float | None = None) -> LoadedSkill:
        """Load a skill from its entry (fetched with ``skills/get`` when given a URI): its
        ``SKILL.md`` is read now, and verified against the entry (size, digest, frontmatter).

        Raises:
            InvalidSkillEntry: the entry cannot be loaded (malformed, over the limits).
            SkillVerificationError: ``SKILL.md`` is not what the entry describes.
        """
        entry = skill if isinstance(skill, Skill) else await self.get_skill(skill, timeout=timeout)
        config = self._core.config
        check_entry(entry, max_files=config.max_skill_files, max_bytes=config.max_skill_bytes)
        return load_skill(entry, await self.read_resource(entry.uri, timeout=timeout),
                          max_bytes=config.max_skill_bytes)

    async def read_skill_file(self, skill: LoadedSkill, path: str, *, timeout: float | None = None) -> bytes:
        """One file of a loaded skill, by path from its root or by URI, verified against the
        held entry.

        Raises:
            SkillFileNotListed: the entry does not list it (nothing is read).
            SkillVerificationError: the content is not what the entry describes.
        """
        uri = skill.resolve(path)
        return skill.verify(uri, await self.read_resource(uri, timeout=timeout))

    async def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri``."""
        rid = self._issue("resources/subscribe",
                          lambda now: self._core.subscribe_resource(uri, now=now, timeout=timeout), uri=uri)
        await self._wait(rid)

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Stop the updates about ``uri``."""
        rid = self._issue("resources/unsubscribe",
                          lambda now: self._core.unsubscribe_resource(uri, now=now, timeout=timeout), uri=uri)
        await self._wait(rid)

    async def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]:
        """Every prompt, following pagination."""
        result = await self._call(LIST_PROMPTS, lambda now: self._core.list_prompts(now=now, timeout=timeout))
        return result.prompts

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> GetPromptResult:
        """A prompt rendered with ``arguments``."""
        return await self._call(
            GET_PROMPT, lambda now: self._core.get_prompt(name, arguments, now=now, timeout=timeout), name)

    async def complete(
        self, ref: PromptReference | ResourceTemplateReference | Mapping[str, object],
        argument_name: str, value: str, *, context_arguments: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CompleteResult:
        """Completion candidates for one argument of a prompt or resource template."""
        return await self._call(COMPLETE, lambda now: self._core.complete(
            ref, argument_name, value, now=now, context_arguments=context_arguments, timeout=timeout))

    async def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Ask the server to send log messages at ``level`` and above."""
        rid = self._issue("logging/setLevel",
                          lambda now: self._core.set_logging_level(level, now=now, timeout=timeout))
        await self._wait(rid)

    async def ping(self, *, timeout: float | None = None) -> None:
        """Round-trip a ``ping``."""
        await self._wait(self._issue("ping", lambda now: self._core.ping(now=now, timeout=timeout)))

    async def request(
        self, method: str, params: msgspec.Struct | Mapping[str, object] | None = None, *,
        timeout: float | None = None, all_pages: bool = False,
    ) -> msgspec.Struct:
        """Any request by method name; the result is typed when the method is known
        (``EmptyResult`` with only ``_meta`` when it is not). ``all_pages`` follows a list's
        pages into one result (with merged caching hints)."""
        target = params.get("name") if isinstance(params, Mapping) else getattr(params, "name", None)
        rid = self._issue(method, lambda now: self._core.request(method, params, now=now, timeout=timeout,
                                                                  all_pages=all_pages),
                          target if isinstance(target, str) else None)
        return await self._wait(rid)

    async def set_roots(self, roots: RootsArg) -> None:
        """Replace the roots offered to the server and tell it they changed."""
        roots_result(roots)  # validate before changing anything
        self._roots = list(roots)
        self._core.notify("notifications/roots/list_changed", now=self._now())
        self._flush()

    def name_for_telemetry(self, name: str) -> None:
        """Label this connection's spans and metrics with the server's configured name
        (``mcp_sansio.server.name``: the host layer names its servers)."""
        if self._telemetry is not None:
            self._telemetry.name_server(name)

    async def _call(self, kind: MethodResult[R], send: Callable[[float], RequestId],
                    target: str | None = None, *, uri: str | None = None,
                    on_progress: ProgressCallback | None = None) -> R:
        """Send ``kind.method`` with ``send(now)`` (see :meth:`_issue`) and wait for its
        answer, typed as ``kind`` says (the core decoded it with ``kind.decoder``)."""
        return kind.of(await self._wait(self._issue(kind.method, send, target, uri=uri), on_progress))

    def _issue(self, method: str, send: Callable[[float], RequestId], target: str | None = None, *,
               uri: str | None = None) -> RequestId:
        """Send one request with ``send(now)``: with telemetry on, in its client span, the
        span's context carried in the request's ``_meta``."""
        telemetry = self._telemetry
        if telemetry is None:
            return send(self._now())
        return telemetry.send(self._core, method, target, uri, send, self._now())

    # ------------------------------------------------------- driver contract

    def _now(self) -> float:
        """The driver's monotonic clock."""
        raise NotImplementedError

    async def _wait(
        self, request_id: RequestId, on_progress: ProgressCallback | None = None
    ) -> msgspec.Struct:
        """Flush the request out and wait for its answer; a caller that gives up (cancelled,
        interrupted) cancels the request."""
        raise NotImplementedError

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` (a handler) without holding up the pump; its bug is logged."""
        raise NotImplementedError

    def _flush(self) -> None:
        """Deliver events, perform the core's actions, write what it queued, re-arm the timer."""
        raise NotImplementedError

    def _failure(self, event: RequestFailed | InitializeFailed) -> McpSansioError:
        """The exception for a failed request (stdio drivers add exit status and stderr)."""
        return event.to_exception()

    def _authorization(self, event: AuthorizationEvent) -> None:
        """An OAuth event (only a connection with ``auth=`` has them: it overrides this)."""
        log.debug("ignoring %s: this connection does not use OAuth", type(event).__name__)

    # ----------------------------------------------------------- dispatch

    def _deliver_events(self, event: ClientEvent | None = None) -> None:
        """Hand every queued core event to whoever waits for it, from ``event`` if given
        (the core's next one, already taken)."""
        next_event = self._core.next_event
        telemetry = self._telemetry
        if event is None:
            event = next_event()
        while event is not None:
            if type(event) is ResponseReceived:  # inline: the one event of every call
                if telemetry is not None:
                    telemetry.answered(event)
                rid = event.request_id
                waiter = self._waiters.pop(rid, None)
                if self._progress:
                    self._progress.pop(rid, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(event.result)
            else:
                self._deliver(event)
            event = next_event()

    def _deliver(self, event: ClientEvent) -> None:
        """One event to whoever it concerns; exhaustive over the core's events."""
        match event:
            case ResponseReceived(request_id=rid, result=result):
                if self._telemetry is not None:
                    self._telemetry.answered(event)
                self._settle(rid, result)
            case RequestFailed(request_id=rid):
                if self._telemetry is not None:
                    self._telemetry.failed(event)
                self._settle(rid, self._failure(event))
            case ProgressReceived():
                self._report_progress(event)
            case ServerRequestReceived():
                self._spawn(lambda: self._answer(event))
            case NotificationReceived():
                handler = self._handlers.on_notification
                if handler is not None:
                    self._notify(handler, event)
            case InitializeCompleted() | InitializeFailed():
                if self._telemetry is not None and isinstance(event, InitializeCompleted):
                    self._telemetry.session_started(self._core.protocol_version)
                waiter, self._init_waiter = self._init_waiter, None
                if waiter is not None and not waiter.done():
                    if isinstance(event, InitializeFailed):
                        waiter.set_exception(self._failure(event))
                    else:
                        waiter.set_result(event)
            case MessageDiscarded(warning=warning):
                if warning is not None:  # the core says when the host should hear of it
                    log.warning("%s", warning)
            case PeerErrorReceived(error=error):
                log.warning("the server reported an error: %s (%s)", error.message, error.code)
            case GetStreamAbandoned(message=message):
                log.warning("%s", message)
            case ConnectionTerminated(message=message, warning=warning):
                if self._telemetry is not None:
                    self._telemetry.session_ended(event)
                log.debug("connection terminated: %s", message)
                if warning is not None:  # how many messages were skipped since it last spoke
                    log.warning("%s", warning)
            case SessionForgotten(status=status, reinitializing=again):
                log.info("the server forgot the session (HTTP %s)%s", status,
                         "; opening a new one" if again else "")
            case AuthorizationRequired(status=status):
                log.debug("the server asked for authorization (HTTP %s)", status)
            case SideResponseReceived() | SideRequestFailed():
                log.debug("ignoring the answer to a side request nobody made here")
            case AuthorizationRedirect() | AuthorizationCompleted() | AuthorizationFailed():
                self._authorization(event)
            case _:  # pragma: no cover
                assert_never(event)

    def _settle(self, request_id: RequestId, outcome: msgspec.Struct | McpSansioError) -> None:
        waiter = self._waiters.pop(request_id, None)
        self._progress.pop(request_id, None)
        if waiter is not None and not waiter.done():
            if isinstance(outcome, McpSansioError):
                waiter.set_exception(outcome)
            else:
                waiter.set_result(outcome)

    def _report_progress(self, event: ProgressReceived) -> None:
        callback = self._progress.get(event.request_id)
        if callback is None:
            return
        try:
            outcome = callback(event.progress, event.total, event.message)  # async-only
            # sync-only: callback(event.progress, event.total, event.message)
        except Exception:  # an application bug must not abort the pump mid-way
            log.exception("the progress callback raised")
            return
        if inspect.isawaitable(outcome):  # async-only
            self._spawn(lambda: _awaited(outcome))  # async-only

    def _notify(self, handler: NotificationHandler, event: NotificationReceived) -> None:
        """Queue ``event`` for the application's handler, which sees notifications in order.

        One worker (one task of an async driver; the blocking driver's calls, inline) works
        through the queue, started when it fills from empty: never a task per notification,
        as a server may send thousands a second. Past ``max_queued_notifications`` waiting
        for a slow handler, new ones are dropped, with a warning.
        """
        queue = self._notices
        if len(queue) >= self._core.config.max_queued_notifications:
            if not self._notices_dropped:
                log.warning("the notification handler is %d notifications behind: dropping new ones until "
                            "it catches up (ClientConfig.max_queued_notifications)", len(queue))
            self._notices_dropped += 1
            return
        queue.append(event)
        if not self._noticing:
            self._noticing = True
            self._spawn(lambda: self._work_through_notices(handler))

    async def _work_through_notices(self, handler: NotificationHandler) -> None:
        queue = self._notices
        try:
            while queue:
                event = queue.popleft()
                try:
                    await handler(event)
                except Exception:  # an application bug: the next notification still gets its turn
                    log.exception("the notification handler raised")
        finally:
            self._noticing = False
            if self._notices_dropped:
                log.warning("dropped %d notifications while the handler was behind", self._notices_dropped)
                self._notices_dropped = 0

    async def _answer(self, event: ServerRequestReceived) -> None:
        """Run the application's handler for a server request and send its answer."""
        handlers = self._handlers
        handler: Callable[[msgspec.Struct], Awaitable[object]] | None = handler_for(
            event.method, roots=None if self._roots is None else self._list_roots,
            sampling=handlers.on_sampling, elicitation=handlers.on_elicitation)
        outcome: object = NO_HANDLER
        telemetry = self._telemetry
        op = None if telemetry is None else telemetry.serving(event)
        token = None if telemetry is None or op is None else telemetry.enter(op)
        try:
            if handler is not None:
                try:
                    outcome = await handler(event.params)
                except Exception as exc:  # an application bug must still answer the server
                    if not isinstance(exc, McpSansioError):
                        log.exception("the %s handler raised", event.method)
                    outcome = exc
        finally:
            if telemetry is not None and token is not None:
                telemetry.leave(token)
        answer(self._core, event, outcome, now=self._now())
        if telemetry is not None and op is not None:
            telemetry.served(op, outcome if isinstance(outcome, BaseException) else None)
        self._flush()

    async def _list_roots(self) -> ListRootsResult:
        return roots_result(self._roots or ())


async def _awaited(awaitable: Awaitable[object]) -> None:  # async-only
    await awaitable  # async-only

