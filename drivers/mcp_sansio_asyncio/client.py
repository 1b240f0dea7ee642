"""The async client API shared by the asyncio and anyio drivers.

It turns each call into a core request and awaits the event that ends it; it owns no
I/O and imports no event loop, so both drivers subclass it and supply the primitives
(clock, waiter, task spawning, flushing the core's output).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol, TypeVar, cast

import msgspec

from mcp_sansio.errors import McpSansioError
from mcp_sansio.events import (
    ConnectionTerminated,
    Event,
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
)
from mcp_sansio.handlers import NO_HANDLER, answer, handler_for, roots_result
from mcp_sansio.session import ClientSession, Phase
from mcp_sansio.skills import GetSkillResult, ListSkillsResult, LoadedSkill, Skill, check_entry, load_skill
from mcp_sansio.types import (
    CallToolResult,
    CompleteResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    GetPromptResult,
    Implementation,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsResult,
    ListToolsResult,
    Prompt,
    PromptReference,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    Root,
    ServerCapabilities,
    Tool,
)

__all__ = [
    "AsyncClient",
    "ElicitationHandler",
    "NotificationHandler",
    "ProgressCallback",
    "SamplingHandler",
]

log = logging.getLogger("mcp_sansio.client")

T = TypeVar("T")
SamplingHandler = Callable[
    [CreateMessageRequestParams], Awaitable[CreateMessageResult | Mapping[str, object]]
]
ElicitationHandler = Callable[[ElicitRequestParams], Awaitable[ElicitResult | Mapping[str, object]]]
NotificationHandler = Callable[[NotificationReceived], Awaitable[None]]
ProgressCallback = Callable[[float, float | None, str | None], object]
RootsArg = Sequence[Root | Mapping[str, object]]


class Waiter(Protocol):
    """What a driver's future must offer (``asyncio.Future`` does)."""

    def done(self) -> bool: ...
    def set_result(self, result: msgspec.Struct, /) -> None: ...
    def set_exception(self, exc: BaseException, /) -> None: ...


class AsyncClient:
    """A connected MCP client; every method sends one request and awaits its answer.

    Subclasses implement :meth:`_now`, :meth:`_wait`, :meth:`_spawn`, :meth:`_flush`
    and :meth:`_failure`, and call :meth:`_deliver_events` after every input (or, having
    taken the first event themselves, only when there is one).
    """

    def __init__(
        self,
        core: ClientSession,
        *,
        on_sampling: SamplingHandler | None = None,
        on_elicitation: ElicitationHandler | None = None,
        roots: RootsArg | None = None,
        on_notification: NotificationHandler | None = None,
    ) -> None:
        self._core = core
        self._on_sampling = on_sampling
        self._on_elicitation = on_elicitation
        self._roots = list(roots) if roots is not None else None
        self._on_notification = on_notification
        self._waiters: dict[RequestId, Waiter] = {}
        self._progress: dict[RequestId, ProgressCallback] = {}
        self._init_waiter: Waiter | None = None

    # ------------------------------------------------------------ properties

    @property
    def server_info(self) -> Implementation:
        """``serverInfo`` of the server (``.name``, ``.version``, ``.title``)."""
        return cast(Implementation, self._core.server_info)

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision."""
        return cast(str, self._core.protocol_version)

    @property
    def server_capabilities(self) -> ServerCapabilities:
        """What the server declared."""
        return cast(ServerCapabilities, self._core.server_capabilities)

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
        rid = self._core.list_tools(now=self._now(), timeout=timeout)
        return cast(ListToolsResult, await self._wait(rid)).tools

    async def call_tool(
        self, name: str, arguments: Mapping[str, object] | None = None, *,
        timeout: float | None = None, on_progress: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Call a tool; ``on_progress(progress, total, message)`` sees its progress."""
        rid = self._core.call_tool(name, arguments, now=self._now(), timeout=timeout)
        return await self._wait(rid, on_progress)  # type: ignore[return-value]  # the core decodes tools/call as CallToolResult; no cast(): a call per call

    async def list_resources(self, *, timeout: float | None = None) -> list[Resource]:
        """Every resource, following pagination."""
        rid = self._core.list_resources(now=self._now(), timeout=timeout)
        return cast(ListResourcesResult, await self._wait(rid)).resources

    async def list_resource_templates(self, *, timeout: float | None = None) -> list[ResourceTemplate]:
        """Every resource template, following pagination."""
        rid = self._core.list_resource_templates(now=self._now(), timeout=timeout)
        return cast(ListResourceTemplatesResult, await self._wait(rid)).resource_templates

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult:
        """The contents of one resource."""
        rid = self._core.read_resource(uri, now=self._now(), timeout=timeout)
        return cast(ReadResourceResult, await self._wait(rid))

    async def list_skills(self, *, timeout: float | None = None) -> list[Skill]:
        """Every skill the server lists (Skills extension), following pagination; no file is read."""
        rid = self._core.list_skills(now=self._now(), timeout=timeout)
        return cast(ListSkillsResult, await self._wait(rid)).skills

    async def get_skill(self, uri: str, *, timeout: float | None = None) -> Skill:
        """The entry of the skill whose ``SKILL.md`` is ``uri`` (``skills/get``)."""
        rid = self._core.get_skill(uri, now=self._now(), timeout=timeout)
        return cast(GetSkillResult, await self._wait(rid)).skill

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
        await self._wait(self._core.subscribe_resource(uri, now=self._now(), timeout=timeout))

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Stop the updates about ``uri``."""
        await self._wait(self._core.unsubscribe_resource(uri, now=self._now(), timeout=timeout))

    async def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]:
        """Every prompt, following pagination."""
        rid = self._core.list_prompts(now=self._now(), timeout=timeout)
        return cast(ListPromptsResult, await self._wait(rid)).prompts

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> GetPromptResult:
        """A prompt rendered with ``arguments``."""
        rid = self._core.get_prompt(name, arguments, now=self._now(), timeout=timeout)
        return cast(GetPromptResult, await self._wait(rid))

    async def complete(
        self, ref: PromptReference | ResourceTemplateReference | Mapping[str, object],
        argument_name: str, value: str, *, context_arguments: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CompleteResult:
        """Completion candidates for one argument of a prompt or resource template."""
        rid = self._core.complete(ref, argument_name, value, now=self._now(),
                                  context_arguments=context_arguments, timeout=timeout)
        return cast(CompleteResult, await self._wait(rid))

    async def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Ask the server to send log messages at ``level`` and above."""
        await self._wait(self._core.set_logging_level(level, now=self._now(), timeout=timeout))

    async def ping(self, *, timeout: float | None = None) -> None:
        """Round-trip a ``ping``."""
        await self._wait(self._core.ping(now=self._now(), timeout=timeout))

    async def request(
        self, method: str, params: msgspec.Struct | Mapping[str, object] | None = None, *,
        timeout: float | None = None, all_pages: bool = False,
    ) -> msgspec.Struct:
        """Any request by method name; the result is typed when the method is known.
        ``all_pages`` follows a list's pages into one result (with merged caching hints)."""
        rid = self._core.request(method, params, now=self._now(), timeout=timeout, all_pages=all_pages)
        return await self._wait(rid)

    async def set_roots(self, roots: RootsArg) -> None:
        """Replace the roots offered to the server and tell it they changed."""
        roots_result(roots)  # validate before changing anything
        self._roots = list(roots)
        self._core.notify("notifications/roots/list_changed")
        self._flush()

    # ------------------------------------------------------- driver contract

    def _now(self) -> float:
        raise NotImplementedError

    async def _wait(
        self, request_id: RequestId, on_progress: ProgressCallback | None = None
    ) -> msgspec.Struct:
        """Flush the request out and wait for its answer (cancelling it if cancelled)."""
        raise NotImplementedError

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        raise NotImplementedError

    def _flush(self) -> None:
        """Write what the core queued, perform its actions, re-arm the timer."""
        raise NotImplementedError

    def _failure(self, event: RequestFailed | InitializeFailed) -> McpSansioError:
        """The exception for a failed request (drivers add exit status and stderr)."""
        return event.to_exception()

    # ----------------------------------------------------------- event loop

    def _deliver_events(self, event: Event | None = None) -> None:
        """Hand every queued core event to whoever waits for it, from ``event`` if given
        (the core's next one, already taken)."""
        next_event = self._core.next_event
        if event is None:
            event = next_event()
        while event is not None:
            if type(event) is ResponseReceived:  # inline: the one event of every call
                rid = event.request_id
                waiter = self._waiters.pop(rid, None)
                if self._progress:
                    self._progress.pop(rid, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(event.result)
            elif type(event) is RequestFailed:
                self._reject(event)
            elif type(event) is ProgressReceived:
                self._report_progress(event)
            else:
                self._deliver_other(event)
            event = next_event()

    def _reject(self, event: RequestFailed) -> None:
        rid = event.request_id
        waiter = self._waiters.pop(rid, None)
        self._progress.pop(rid, None)
        if waiter is not None and not waiter.done():
            waiter.set_exception(self._failure(event))

    def _report_progress(self, event: ProgressReceived) -> None:
        callback = self._progress.get(event.request_id)
        if callback is None:
            return
        try:
            outcome = callback(event.progress, event.total, event.message)
        except Exception:  # an application bug must not abort the pump mid-way
            log.exception("the progress callback raised")
            return
        if inspect.isawaitable(outcome):
            awaitable = outcome

            async def run() -> None:
                await awaitable

            self._spawn(run)

    def _deliver_other(self, event: Event) -> None:
        if isinstance(event, ServerRequestReceived):
            self._spawn(lambda: self._answer(event))
        elif isinstance(event, NotificationReceived):
            handler = self._on_notification
            if handler is not None:
                self._spawn(lambda: handler(event))
        elif isinstance(event, InitializeCompleted | InitializeFailed):
            waiter, self._init_waiter = self._init_waiter, None
            if waiter is not None and not waiter.done():
                if isinstance(event, InitializeFailed):
                    waiter.set_exception(self._failure(event))
                else:
                    waiter.set_result(event)
        elif isinstance(event, MessageDiscarded):
            log.warning("discarded a message from the server (%s): %s", event.reason.value, event.detail)
        elif isinstance(event, PeerErrorReceived):
            log.warning("the server reported an error: %s (%s)", event.error.message, event.error.code)
        elif isinstance(event, GetStreamAbandoned):
            log.warning("%s", event.message)
        elif isinstance(event, ConnectionTerminated):
            log.debug("connection terminated: %s", event.message)

    async def _answer(self, event: ServerRequestReceived) -> None:
        """Run the application's handler for a server request and send its answer."""
        handler: Callable[[msgspec.Struct], Awaitable[object]] | None = handler_for(
            event.method, roots=None if self._roots is None else self._list_roots,
            sampling=self._on_sampling, elicitation=self._on_elicitation)
        outcome: object = NO_HANDLER
        if handler is not None:
            try:
                outcome = await handler(event.params)
            except Exception as exc:  # an application bug must still answer the server
                if not isinstance(exc, McpSansioError):
                    log.exception("the %s handler raised", event.method)
                outcome = exc
        answer(self._core, event, outcome)
        self._flush()

    async def _list_roots(self) -> ListRootsResult:
        return roots_result(self._roots or ())
