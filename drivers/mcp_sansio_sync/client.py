"""The blocking client API: the methods of ``AsyncClient`` without ``async``.

Each call turns into a core request, then the transport's loop runs until the event
that ends it. Server requests and notifications are handled inline, during that loop,
by plain callables. The class owns no I/O: a transport subclass supplies the clock,
one round of its loop (:meth:`Client._step`) and the pump (:meth:`Client._flush`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import cast

import msgspec

from mcp_sansio.errors import McpSansioError
from mcp_sansio.events import (
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
    "Client",
    "ElicitationHandler",
    "NotificationHandler",
    "ProgressCallback",
    "RootsArg",
    "SamplingHandler",
]

log = logging.getLogger("mcp_sansio.client")

SamplingHandler = Callable[[CreateMessageRequestParams], CreateMessageResult | Mapping[str, object]]
ElicitationHandler = Callable[[ElicitRequestParams], ElicitResult | Mapping[str, object]]
NotificationHandler = Callable[[NotificationReceived], object]
ProgressCallback = Callable[[float, float | None, str | None], object]
RootsArg = Sequence[Root | Mapping[str, object]]


class Client:
    """A connected MCP client; every method sends one request and blocks for its answer.

    Handlers run inline while a call waits, so a slow handler delays that call.
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
        self._outcomes: dict[RequestId, msgspec.Struct | McpSansioError] = {}
        self._progress: dict[RequestId, ProgressCallback] = {}
        self._handshake: InitializeCompleted | McpSansioError | None = None

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

    def list_tools(self, *, timeout: float | None = None) -> list[Tool]:
        """Every tool, following pagination."""
        rid = self._core.list_tools(now=self._now(), timeout=timeout)
        return cast(ListToolsResult, self._wait(rid)).tools

    def call_tool(
        self, name: str, arguments: Mapping[str, object] | None = None, *,
        timeout: float | None = None, on_progress: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Call a tool; ``on_progress(progress, total, message)`` sees its progress."""
        rid = self._core.call_tool(name, arguments, now=self._now(), timeout=timeout)
        return cast(CallToolResult, self._wait(rid, on_progress))

    def list_resources(self, *, timeout: float | None = None) -> list[Resource]:
        """Every resource, following pagination."""
        rid = self._core.list_resources(now=self._now(), timeout=timeout)
        return cast(ListResourcesResult, self._wait(rid)).resources

    def list_resource_templates(self, *, timeout: float | None = None) -> list[ResourceTemplate]:
        """Every resource template, following pagination."""
        rid = self._core.list_resource_templates(now=self._now(), timeout=timeout)
        return cast(ListResourceTemplatesResult, self._wait(rid)).resource_templates

    def read_resource(self, uri: str, *, timeout: float | None = None) -> ReadResourceResult:
        """The contents of one resource."""
        rid = self._core.read_resource(uri, now=self._now(), timeout=timeout)
        return cast(ReadResourceResult, self._wait(rid))

    def list_skills(self, *, timeout: float | None = None) -> list[Skill]:
        """Every skill the server lists (Skills extension), following pagination; no file is read."""
        rid = self._core.list_skills(now=self._now(), timeout=timeout)
        return cast(ListSkillsResult, self._wait(rid)).skills

    def get_skill(self, uri: str, *, timeout: float | None = None) -> Skill:
        """The entry of the skill whose ``SKILL.md`` is ``uri`` (``skills/get``)."""
        rid = self._core.get_skill(uri, now=self._now(), timeout=timeout)
        return cast(GetSkillResult, self._wait(rid)).skill

    def load_skill(self, skill: Skill | str, *, timeout: float | None = None) -> LoadedSkill:
        """Load a skill from its entry (fetched with ``skills/get`` when given a URI): its
        ``SKILL.md`` is read now, and verified against the entry (size, digest, frontmatter).

        Raises:
            InvalidSkillEntry: the entry cannot be loaded (malformed, over the limits).
            SkillVerificationError: ``SKILL.md`` is not what the entry describes.
        """
        entry = skill if isinstance(skill, Skill) else self.get_skill(skill, timeout=timeout)
        config = self._core.config
        check_entry(entry, max_files=config.max_skill_files, max_bytes=config.max_skill_bytes)
        return load_skill(entry, self.read_resource(entry.uri, timeout=timeout),
                          max_bytes=config.max_skill_bytes)

    def read_skill_file(self, skill: LoadedSkill, path: str, *, timeout: float | None = None) -> bytes:
        """One file of a loaded skill, by path from its root or by URI, verified against the
        held entry.

        Raises:
            SkillFileNotListed: the entry does not list it (nothing is read).
            SkillVerificationError: the content is not what the entry describes.
        """
        uri = skill.resolve(path)
        return skill.verify(uri, self.read_resource(uri, timeout=timeout))

    def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri``."""
        self._wait(self._core.subscribe_resource(uri, now=self._now(), timeout=timeout))

    def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Stop the updates about ``uri``."""
        self._wait(self._core.unsubscribe_resource(uri, now=self._now(), timeout=timeout))

    def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]:
        """Every prompt, following pagination."""
        rid = self._core.list_prompts(now=self._now(), timeout=timeout)
        return cast(ListPromptsResult, self._wait(rid)).prompts

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> GetPromptResult:
        """A prompt rendered with ``arguments``."""
        rid = self._core.get_prompt(name, arguments, now=self._now(), timeout=timeout)
        return cast(GetPromptResult, self._wait(rid))

    def complete(
        self, ref: PromptReference | ResourceTemplateReference | Mapping[str, object],
        argument_name: str, value: str, *, context_arguments: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> CompleteResult:
        """Completion candidates for one argument of a prompt or resource template."""
        rid = self._core.complete(ref, argument_name, value, now=self._now(),
                                  context_arguments=context_arguments, timeout=timeout)
        return cast(CompleteResult, self._wait(rid))

    def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Ask the server to send log messages at ``level`` and above."""
        self._wait(self._core.set_logging_level(level, now=self._now(), timeout=timeout))

    def ping(self, *, timeout: float | None = None) -> None:
        """Round-trip a ``ping``."""
        self._wait(self._core.ping(now=self._now(), timeout=timeout))

    def request(
        self, method: str, params: msgspec.Struct | Mapping[str, object] | None = None, *,
        timeout: float | None = None, all_pages: bool = False,
    ) -> msgspec.Struct:
        """Any request by method name; the result is typed when the method is known.
        ``all_pages`` follows a list's pages into one result (with merged caching hints)."""
        rid = self._core.request(method, params, now=self._now(), timeout=timeout, all_pages=all_pages)
        return self._wait(rid)

    def set_roots(self, roots: RootsArg) -> None:
        """Replace the roots offered to the server and tell it they changed."""
        roots_result(roots)  # validate before changing anything
        self._roots = list(roots)
        self._core.notify("notifications/roots/list_changed")
        self._flush()

    # ------------------------------------------------------- driver contract

    def _now(self) -> float:
        raise NotImplementedError

    def _step(self) -> None:
        """Block for one round of input (or the next deadline), feed it to the core, pump."""
        raise NotImplementedError

    def _flush(self) -> None:
        """The pump: deliver events, perform actions, write what the core queued."""
        raise NotImplementedError

    def _failure(self, event: RequestFailed | InitializeFailed) -> McpSansioError:
        """The exception for a failed request (transports add exit status and stderr)."""
        return event.to_exception()

    # -------------------------------------------------------------- waiting

    def _initialize(self) -> None:
        """Run the handshake to its end.

        Raises:
            McpSansioError: the handshake failed (the type says why).
        """
        self._core.start(now=self._now())
        self._flush()
        while self._handshake is None:
            self._step()
        if isinstance(self._handshake, McpSansioError):
            raise self._handshake

    def _wait(self, request_id: RequestId, on_progress: ProgressCallback | None = None) -> msgspec.Struct:
        """Send the request and run the loop until its outcome arrives."""
        if on_progress is not None:
            self._progress[request_id] = on_progress
        try:
            self._flush()
            while request_id not in self._outcomes:
                self._step()
        finally:
            self._progress.pop(request_id, None)
            if request_id not in self._outcomes:  # interrupted (KeyboardInterrupt): give up on it
                with contextlib.suppress(McpSansioError):  # the connection is gone: nothing to cancel
                    self._core.cancel(request_id, now=self._now(), reason="cancelled by the caller")
                    self._flush()
            outcome = self._outcomes.pop(request_id, None)
        if isinstance(outcome, McpSansioError):
            raise outcome
        return cast(msgspec.Struct, outcome)

    def _deliver_events(self) -> None:
        """Record outcomes and run handlers for every queued core event."""
        core = self._core
        while (event := core.next_event()) is not None:
            if isinstance(event, ResponseReceived):
                self._outcomes[event.request_id] = event.result
            elif isinstance(event, RequestFailed):
                self._outcomes[event.request_id] = self._failure(event)
            elif isinstance(event, ProgressReceived):
                callback = self._progress.get(event.request_id)
                if callback is not None:
                    _guarded(callback, event.progress, event.total, event.message)
            elif isinstance(event, ServerRequestReceived):
                self._answer(event)
            elif isinstance(event, NotificationReceived):
                if self._on_notification is not None:
                    _guarded(self._on_notification, event)
            elif isinstance(event, InitializeCompleted):
                self._handshake = event
            elif isinstance(event, InitializeFailed):
                self._handshake = self._failure(event)
            else:
                self._deliver_other(event)

    def _deliver_other(self, event: Event) -> None:
        """An event no call waits for; a transport subclass takes its own (OAuth's) first."""
        if isinstance(event, MessageDiscarded):
            log.warning("discarded a message from the server (%s): %s", event.reason.value, event.detail)
        elif isinstance(event, PeerErrorReceived):
            log.warning("the server reported an error: %s (%s)", event.error.message, event.error.code)
        elif isinstance(event, GetStreamAbandoned):
            log.warning("%s", event.message)

    def _answer(self, event: ServerRequestReceived) -> None:
        """Run the application's handler for a server request and queue its answer."""
        handler: Callable[[msgspec.Struct], object] | None = handler_for(
            event.method, roots=None if self._roots is None else self._list_roots,
            sampling=self._on_sampling, elicitation=self._on_elicitation)
        outcome: object = NO_HANDLER
        if handler is not None:
            try:
                outcome = handler(event.params)
            except Exception as exc:  # an application bug must still answer the server
                if not isinstance(exc, McpSansioError):
                    log.exception("the %s handler raised", event.method)
                outcome = exc
        answer(self._core, event, outcome)

    def _list_roots(self) -> ListRootsResult:
        return roots_result(self._roots or ())


def _guarded(callback: Callable[..., object], *args: object) -> None:
    """Call an application callback; its bug is logged, never fatal to the connection."""
    try:
        callback(*args)
    except Exception:
        log.exception("a callback of the MCP client raised")
