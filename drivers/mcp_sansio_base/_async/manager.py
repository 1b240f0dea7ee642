"""Many MCP servers at once: started in batches, restarted when they fail, named for a model.

:class:`AsyncManager` performs the decisions of
:class:`mcp_sansio.manager.ServerManagerCore`; a driver's ``ServerManager`` supplies its
loop's primitives and opens stdio, Streamable HTTP, HTTP+SSE and WebSocket connections.
Connection attempts run in the background (tasks, or the blocking driver's worker
threads); what they come to is handed back with :meth:`AsyncManager._post`, so the core
is only ever touched from where the manager is used. A crashed or dropped server is
restarted on its next use, after the core's backoff; :attr:`states` checks every
connection first, so it always tells what is live.
"""

from __future__ import annotations

import logging
import os
import random
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Final, TypeVar

import msgspec

from mcp_sansio import ClientConfig
from mcp_sansio.errors import McpSansioError, RequestError
from mcp_sansio.events import NotificationReceived
from mcp_sansio.hostconfig import ExpansionWarning, ServerEntry
from mcp_sansio.listcache import ListKind
from mcp_sansio.manager import (
    ALL_TRANSPORTS,
    ManagerConfig,
    NamedPrompt,
    NamedTool,
    ServerManagerCore,
    ServerResource,
    ServerResourceTemplate,
    ToolRoute,
    elicitations_accepted,
    failure_from,
    is_connection_loss,
)
from mcp_sansio.manager_lifecycle import (
    Connected,
    ConnectPlan,
    Failure,
    Join,
    RestartPolicy,
    ServerStatus,
    ServerUnavailable,
    Unavailable,
    WaitUntil,
)
from mcp_sansio.naming import UnknownName
from mcp_sansio.result_policy import PersistResult, ResultPolicy
from mcp_sansio.session import server_offers
from mcp_sansio.types import CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, Tool

from .client import AsyncClient
from .handlers import ElicitationHandler, Handlers, ProgressCallback, RootsArg, SamplingHandler

__all__ = ["AsyncManager", "Opened", "ServerNotificationHandler", "write_result_file"]

log = logging.getLogger("mcp_sansio.manager")

T = TypeVar("T")
R = TypeVar("R")
ServerNotificationHandler = Callable[[str, NotificationReceived], Awaitable[object]]
"""Sees ``(server name, notification)`` for every notification of every server."""
Closer = Callable[[], Awaitable[None]]
Opened = tuple[AsyncClient, Closer]
"""A connection through its handshake, and how to close it (twice is harmless)."""
_RESULT_DIR: Final = "mcp-sansio-results"


def write_result_file(result_dir: Path | None, decision: PersistResult) -> str:
    """Write an over-budget result where the model is told to find it.

    Args:
        result_dir: the directory, created if missing; ``None`` for ``mcp-sansio-results``
            in the temporary directory.
        decision: what to write, and under which name.

    Returns:
        The file's path.
    """
    directory = result_dir if result_dir is not None else Path(tempfile.gettempdir(), _RESULT_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / decision.suggested_filename
    path.write_bytes(decision.content_bytes)
    return str(path)


class AsyncManager:
    """The server manager, loop-agnostic; a driver supplies the primitives.

    Subclasses implement :meth:`_now`, :meth:`_sleep`, :meth:`_spawn`, :meth:`_post`,
    :meth:`_settled`, :meth:`_stop_background`, :meth:`_run_all`, :meth:`_in_thread`
    and :meth:`_open`, and may set up their own state in :meth:`_init_driver`.
    """

    TRANSPORTS: ClassVar[frozenset[str]] = ALL_TRANSPORTS
    """What the driver can open; servers of other transports are reported failed."""

    def __init__(
        self,
        entries: Sequence[ServerEntry],
        *,
        env: Mapping[str, str] = os.environ,
        max_local: int = 3,
        max_remote: int = 20,
        on_sampling: SamplingHandler | None = None,
        on_elicitation: ElicitationHandler | None = None,
        roots: RootsArg | None = None,
        result_dir: str | os.PathLike[str] | None = None,
        result_policy: ResultPolicy | None = None,
        on_notification: ServerNotificationHandler | None = None,
        restart: RestartPolicy | None = None,
        client_config: ClientConfig | None = None,
    ) -> None:
        """Set the servers up; nothing starts until :meth:`connect_all` or a use.

        Args:
            entries: the merged configuration; ``${VAR}`` placeholders are expanded from ``env``.
            env: the environment for placeholders, ``MCP_TIMEOUT`` (connect timeout, ms),
                ``MCP_TOOL_TIMEOUT`` (default request timeout, ms) and
                ``MAX_MCP_OUTPUT_TOKENS``. Children inherit the process environment plus
                their entry's ``env``.
            max_local: stdio servers starting at once.
            max_remote: remote servers connecting at once.
            on_sampling: answers ``sampling/createMessage`` from any server.
            on_elicitation: answers ``elicitation/create`` and the elicitations of a -32042.
            roots: the roots offered to every server.
            result_dir: where over-budget results are persisted (default: a
                ``mcp-sansio-results`` directory in the temporary directory).
            result_policy: how tool results are bounded.
            on_notification: sees every server's notifications.
            restart: when failed servers are tried again.
            client_config: the base of every connection's config; ``initialize_timeout``
                is replaced by the connect timeout.

        Raises:
            LocalProtocolError: two entries share a name, or a limit is invalid.
        """
        config = ManagerConfig(max_local=max_local, max_remote=max_remote, restart=restart or RestartPolicy(),
                               result_policy=result_policy or ResultPolicy())
        self._core = ServerManagerCore(entries, env=env, config=config, transports=self.TRANSPORTS)
        self._client_config = client_config or ClientConfig()
        self._on_sampling = on_sampling
        self._on_elicitation = on_elicitation
        self._roots = roots
        self._on_notification = on_notification
        self._result_dir = None if result_dir is None else Path(result_dir)
        self._clients: dict[str, AsyncClient] = {}
        self._closers: dict[AsyncClient, Closer] = {}
        self._closed = False
        self._init_driver()

    # ------------------------------------------------------------ status

    @property
    def states(self) -> dict[str, ServerStatus]:
        """Every server's status, by name, after noticing connections that ended."""
        self._notice_losses()
        return self._core.statuses(self._now())

    @property
    def warnings(self) -> list[ExpansionWarning]:
        """What ``${VAR}`` expansion could not fill in the entries."""
        return list(self._core.warnings)

    # ------------------------------------------------------- connections

    async def connect_all(self) -> None:
        """Connect to every server not tried yet, batched; return once each attempt ended."""
        names = self._core.queue_all()
        self._dispatch()
        for name in names:
            await self._attempt_finished(name)

    async def connect(self, name: str) -> AsyncClient:
        """The live client of ``name``, connecting (or restarting) it first if needed.

        Raises:
            UnknownServer: no such server.
            ServerUnavailable: it is disabled, needs authorization, or failed to connect.
        """
        self._notice_losses()
        while True:
            match self._core.use(name, self._now()):
                case Connected():
                    return self._clients[name]
                case WaitUntil(at=at):
                    await self._sleep(max(at - self._now(), 0.0))
                case Join():
                    self._dispatch()
                    await self._attempt_finished(name)
                    if name in self._clients:
                        return self._clients[name]
                    status = self._core.status(name, self._now())
                    raise ServerUnavailable(f"server {name!r} {status.state.value}: {status.error}",
                                            server=name, state=status.state)
                case Unavailable(message=message):
                    state = self._core.status(name, self._now()).state
                    raise ServerUnavailable(message, server=name, state=state)

    async def aclose(self) -> None:
        """Close every connection and stop every attempt; no process is left behind."""
        if self._closed:
            return
        self._closed = True
        await self._stop_background()
        # The live connections and the lost ones not closed yet (closing twice is harmless).
        closers, self._closers, self._clients = list(self._closers.values()), {}, {}
        await self._run_all(closers)
        self._core.close()
        self._post(_nothing)  # wakes whoever still waits for an attempt

    async def __aenter__(self) -> AsyncManager:
        return self

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    # ------------------------------------------------------------- lists

    async def list_tools(self, name: str) -> list[Tool]:
        """The tools of ``name``, cached until they change or the connection ends, or for
        as long as the server's caching hints say (``ttlMs``, ``cacheScope``)."""
        return [item for item in await self._listed(name, ListKind.TOOLS) if isinstance(item, Tool)]

    async def list_resources(self, name: str) -> list[Resource]:
        """The resources of ``name``, cached like :meth:`list_tools`."""
        return [item for item in await self._listed(name, ListKind.RESOURCES) if isinstance(item, Resource)]

    async def list_prompts(self, name: str) -> list[Prompt]:
        """The prompts of ``name``, cached like :meth:`list_tools`."""
        return [item for item in await self._listed(name, ListKind.PROMPTS) if isinstance(item, Prompt)]

    async def read_resource(self, name: str, uri: str) -> ReadResourceResult:
        """One resource of ``name``, served again from the cache while its ``ttlMs`` hint
        says it is fresh (never cached without one)."""
        client = await self.connect(name)
        cached = self._core.cached_read(name, uri, self._now())
        if cached is not None:
            return cached
        token = self._core.begin_list(name, ListKind.RESOURCE_READ)
        try:
            result = await client.read_resource(uri, timeout=self._core.request_timeout(name))
        except McpSansioError as exc:
            self._check_loss(name, client, exc)
            raise
        self._core.store_read(name, uri, result, token, self._now())
        return result

    async def tools(self) -> list[NamedTool]:
        """Every tool of every connected server, under its model-facing name.

        A server whose listing fails is left out (and marked failed if it is gone).
        """
        self._notice_losses()
        await self._list_each(self._core.connected_names(), ListKind.TOOLS)
        return self._core.named_tools()

    async def prompts(self) -> list[NamedPrompt]:
        """Every prompt of every connected server, named like the tools (``mcp__<server>__<prompt>``)."""
        self._notice_losses()
        await self._list_each(self._core.connected_names(), ListKind.PROMPTS)
        return self._core.named_prompts()

    async def resources(self) -> list[ServerResource | ServerResourceTemplate]:
        """Every resource and resource template of every connected server, with its server."""
        self._notice_losses()
        await self._list_each(self._core.connected_names(), ListKind.RESOURCES, ListKind.RESOURCE_TEMPLATES)
        return self._core.named_resources()

    async def get_prompt(self, model_name: str, arguments: Mapping[str, str] | None = None, *,
                         timeout: float | None = None) -> GetPromptResult:
        """Get a prompt by its model-facing name (see :meth:`prompts`).

        Raises:
            UnknownPromptName: no prompt has that name.
            ServerUnavailable: its server cannot be connected.
            RequestError, RequestTimeout, ConnectionClosed: the request failed.
        """
        route = await self._routed(model_name, ListKind.PROMPTS,
                                   partial(self._core.route_prompt, model_name, timeout))
        client = await self.connect(route.server)
        try:
            return await client.get_prompt(route.prompt, arguments, timeout=route.timeout)
        except McpSansioError as exc:
            self._check_loss(route.server, client, exc)
            raise

    async def call_tool(
        self, model_name: str, arguments: Mapping[str, object] | None = None, *, timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> CallToolResult:
        """Call a tool by its model-facing name, within its timeout and result budget;
        ``on_progress(progress, total, message)`` sees its progress.

        A -32042 answer hands its URL elicitations to ``on_elicitation`` and, once all are
        accepted, retries (at most 3 times). An over-budget result comes back truncated, or
        persisted to a file whose path replaces its text.

        Raises:
            UnknownToolName: no tool has that name.
            ServerUnavailable: its server cannot be connected.
            RequestError, RequestTimeout, ConnectionClosed: the call failed.
        """
        route = await self._routed(model_name, ListKind.TOOLS, partial(self._core.route, model_name, timeout))
        client = await self.connect(route.server)
        retries = 0
        while True:
            try:
                result = await client.call_tool(route.tool, arguments, timeout=route.timeout,
                                                on_progress=on_progress)
                break
            except RequestError as exc:
                elicitations = self._core.elicitation_retry(exc, retries)
                if elicitations is None or self._on_elicitation is None:
                    raise
                answers = [await self._on_elicitation(elicitation) for elicitation in elicitations]
                if not elicitations_accepted(answers):
                    raise
                retries += 1
            except McpSansioError as exc:
                self._check_loss(route.server, client, exc)
                raise
        return await self._finish(route, result)

    # ----------------------------------------------------------- helpers

    def _dispatch(self) -> None:
        """Start every attempt the core's batching allows now."""
        if self._closed:
            return
        for plan in self._core.start_due():
            self._spawn(partial(self._attempt, plan))

    async def _attempt_finished(self, name: str) -> None:
        while self._core.attempting(name):
            await self._settled()

    async def _attempt(self, plan: ConnectPlan) -> None:
        """Open one connection (in the background) and hand the outcome back."""
        config = msgspec.structs.replace(self._client_config, initialize_timeout=plan.timeout)
        handlers = Handlers(on_sampling=self._on_sampling, on_elicitation=self._on_elicitation,
                            roots=self._roots, on_notification=partial(self._notified, plan.name))
        outcome: Opened | Exception
        try:
            outcome = await self._open(plan, config, handlers)
        except Exception as exc:  # whatever stops one server is that server's failure
            if not isinstance(exc, McpSansioError | OSError):
                log.exception("connecting to %s failed", plan.name)
            outcome = exc
        self._post(partial(self._settle, plan.name, outcome))

    def _settle(self, name: str, outcome: Opened | Exception) -> None:
        """An attempt's outcome, where the manager is used: record it, start the next."""
        if isinstance(outcome, Exception):
            if not self._closed:
                self._core.connect_failed(name, failure_from(outcome), self._now(), random.random())
        elif self._closed:  # opened while aclose() stops the attempts: it closes this too
            self._closers[outcome[0]] = outcome[1]
        else:
            client, closer = outcome
            client.name_for_telemetry(name)
            self._clients[name], self._closers[client] = client, closer
            self._core.connected(name, self._now())
        self._dispatch()

    async def _notified(self, name: str, notification: NotificationReceived) -> None:
        self._post(partial(self._core.notification_received, name, notification.method))
        if self._on_notification is not None:
            await self._on_notification(name, notification)

    def _notice_losses(self) -> None:
        for name, client in list(self._clients.items()):
            if self._ended(client):
                self._lost(name, client, None)

    def _check_loss(self, name: str, client: AsyncClient, exc: McpSansioError) -> None:
        if is_connection_loss(exc) or client.closed:
            self._lost(name, client, exc)

    def _lost(self, name: str, client: AsyncClient, exc: McpSansioError | None) -> None:
        if self._clients.get(name) is not client:
            return  # noticed already
        del self._clients[name]
        tail = getattr(client, "stderr_tail", "")
        failure = Failure(message="the connection closed", stderr_tail=tail) if exc is None else (
            failure_from(exc, stderr_tail=tail))
        self._core.connection_lost(name, failure, self._now(), random.random())
        self._spawn(partial(self._reap, client))

    async def _reap(self, client: AsyncClient) -> None:
        """Close a lost connection; it is forgotten only once closed, so :meth:`aclose`
        closes it again if this was stopped."""
        closer = self._closers.get(client)
        if closer is not None:
            await closer()
            self._post(lambda: self._forget(client))

    def _forget(self, client: AsyncClient) -> None:
        self._closers.pop(client, None)

    async def _routed(self, model_name: str, kind: ListKind, route: Callable[[], R]) -> R:
        """``route()``; if the name is unknown, first list ``kind`` on the servers it may
        belong to (starting them: only those), and fail as the core says if still unknown."""
        try:
            return route()
        except UnknownName:
            pass
        await self._list_each(self._core.servers_for(model_name), kind)
        try:
            return route()
        except UnknownName:
            raise self._core.unroutable(model_name, kind, self._now()) from None

    async def _list_each(self, names: Sequence[str], *kinds: ListKind) -> None:
        """List ``kinds`` on each of ``names`` (connecting it if needed), concurrently; a
        server that cannot be used or listed is left out (its state, or the log, says why)."""
        await self._run_all([partial(self._listing, name, kinds) for name in names])

    async def _listing(self, name: str, kinds: Sequence[ListKind]) -> None:
        try:
            for kind in kinds:
                await self._listed(name, kind)
        except ServerUnavailable:
            pass
        except McpSansioError as exc:
            log.warning("listing the %s of %s failed: %s", kinds[0].value.split("/")[0], name, exc)

    async def _listed(self, name: str, kind: ListKind) -> list[object]:
        client = await self.connect(name)
        while True:  # again while the core finds the listing overtaken by a list_changed
            cached = self._core.cached(name, kind, self._now())
            if cached is not None:
                return cached
            token = self._core.begin_list(name, kind)
            result = None
            try:
                if server_offers(client.server_capabilities, kind.value):
                    result = await client.request(kind.value, timeout=self._core.request_timeout(name),
                                                  all_pages=True)
            except McpSansioError as exc:
                self._check_loss(name, client, exc)
                raise
            items = self._core.store_result(name, kind, result, token, self._now())
            while (warning := self._core.next_warning()) is not None:
                log.warning("%s", warning)
            if items is not None:
                return items

    async def _finish(self, route: ToolRoute, result: CallToolResult) -> CallToolResult:
        decision = self._core.shape_result(route, result)
        path = None
        if isinstance(decision, PersistResult):
            path = await self._in_thread(partial(write_result_file, self._result_dir, decision))
        return self._core.final_result(result, decision, path)

    # --------------------------------------------------- driver contract

    def _now(self) -> float:
        raise NotImplementedError

    async def _sleep(self, seconds: float) -> None:
        raise NotImplementedError

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` in the background until it ends or :meth:`_stop_background`."""
        raise NotImplementedError

    def _post(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` where the manager is used (at once on an event loop; on the caller's
        thread, from :meth:`_settled`, in the blocking driver) and wake :meth:`_settled`."""
        raise NotImplementedError

    async def _settled(self) -> None:
        """Wait until something was posted (and, in the blocking driver, run it)."""
        raise NotImplementedError

    async def _stop_background(self) -> None:
        """Stop everything :meth:`_spawn` started, wait until it has finished, and run what
        it posted."""
        raise NotImplementedError

    async def _run_all(self, fns: Sequence[Callable[[], Awaitable[None]]]) -> None:
        """Run ``fns`` (concurrently where the loop can) and wait for all of them."""
        raise NotImplementedError

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        raise NotImplementedError

    def _ended(self, client: AsyncClient) -> bool:
        """``client``'s connection has ended. An event loop reads every connection all the
        time, so ``closed`` is current; a blocking driver must look first."""
        return client.closed

    def _init_driver(self) -> None:
        """Set up the driver's own state (called at the end of ``__init__``)."""

    async def _open(self, plan: ConnectPlan, config: ClientConfig, handlers: Handlers) -> Opened:
        """Open the connection ``plan`` describes, through its handshake, or raise."""
        raise NotImplementedError


def _nothing() -> None:
    """A post that only wakes."""
