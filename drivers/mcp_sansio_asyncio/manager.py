"""Many MCP servers at once on asyncio: started in batches, restarted when they fail, named for a model.

:class:`AsyncServerManager` performs the decisions of
:class:`mcp_sansio.manager.ServerManagerCore` on any async loop (the anyio driver
subclasses it too); :class:`ServerManager` supplies asyncio's tasks, sleep and threads and
opens stdio, Streamable HTTP, HTTP+SSE and WebSocket connections. A crashed or dropped
server is restarted on its next use, after the core's backoff; :attr:`states` checks every
connection first, so it always tells what is live.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Literal, Protocol, TypedDict, TypeVar, cast

import msgspec

from mcp_sansio import ClientConfig
from mcp_sansio.errors import McpSansioError, RequestError
from mcp_sansio.events import NotificationReceived
from mcp_sansio.hostconfig import ExpansionWarning, ServerEntry, StdioServerConfig, Transport
from mcp_sansio.listcache import ListKind
from mcp_sansio.manager import (
    ALL_TRANSPORTS,
    Connected,
    ConnectPlan,
    Failure,
    Join,
    ManagerConfig,
    NamedPrompt,
    NamedTool,
    RestartPolicy,
    ServerManagerCore,
    ServerResource,
    ServerResourceTemplate,
    ServerStatus,
    ServerUnavailable,
    ToolRoute,
    Unavailable,
    WaitUntil,
    elicitations_accepted,
    failure_from,
    is_connection_loss,
)
from mcp_sansio.naming import UnknownName
from mcp_sansio.result_policy import PersistResult, ResultPolicy
from mcp_sansio.session import server_offers
from mcp_sansio.types import CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, Tool
from mcp_sansio_sync.manager import session_closed, stderr_of, write_result_file

from .client import AsyncClient, ElicitationHandler, NotificationHandler, RootsArg, SamplingHandler
from .stdio import connect_stdio

__all__ = ["AsyncServerManager", "Handlers", "Opened", "ServerManager", "ServerNotificationHandler", "Signal"]

log = logging.getLogger("mcp_sansio.manager")

T = TypeVar("T")
R = TypeVar("R")
ServerNotificationHandler = Callable[[str, NotificationReceived], Awaitable[None]]
"""Sees ``(server name, notification)`` for every notification of every server."""
Closer = Callable[[], Awaitable[None]]
Opened = tuple[AsyncClient, Closer]


class Handlers(TypedDict):
    """What every connection gets to answer its server."""

    on_sampling: SamplingHandler | None
    on_elicitation: ElicitationHandler | None
    roots: RootsArg | None
    on_notification: NotificationHandler


class Signal(Protocol):
    """A one-shot flag a task can wait for (``asyncio.Event``, ``anyio.Event``)."""

    def set(self) -> None: ...
    async def wait(self) -> object: ...


class AsyncServerManager:
    """The server manager's async flow, loop-agnostic; a driver supplies the primitives.

    Subclasses implement :meth:`_now`, :meth:`_sleep`, :meth:`_signal`, :meth:`_spawn`,
    :meth:`_stop_background`, :meth:`_run_all`, :meth:`_in_thread` and :meth:`_open`, and
    may set up their own state in :meth:`_init_driver`.
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
        self._dead: list[AsyncClient] = []
        self._attempts: dict[str, Signal] = {}
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
                    raise self._unavailable(name, self._core.status(name, self._now()))
                case Unavailable(message=message):
                    state = self._core.status(name, self._now()).state
                    raise ServerUnavailable(message, server=name, state=state)

    async def aclose(self) -> None:
        """Close every connection and stop every attempt; no process is left behind."""
        if self._closed:
            return
        self._closed = True
        await self._stop_background()
        clients, self._clients = [*self._clients.values(), *self._dead], {}
        self._dead.clear()
        await self._run_all([partial(self._close_client, client) for client in clients])
        self._core.close()
        for signal in self._attempts.values():
            signal.set()

    async def __aenter__(self) -> AsyncServerManager:
        return self

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    # ------------------------------------------------------------- lists

    async def list_tools(self, name: str) -> list[Tool]:
        """The tools of ``name``, cached until they change or the connection ends, or for
        as long as the server's caching hints say (``ttlMs``, ``cacheScope``)."""
        return cast(list[Tool], await self._listed(name, ListKind.TOOLS))

    async def list_resources(self, name: str) -> list[Resource]:
        """The resources of ``name``, cached like :meth:`list_tools`."""
        return cast(list[Resource], await self._listed(name, ListKind.RESOURCES))

    async def list_prompts(self, name: str) -> list[Prompt]:
        """The prompts of ``name``, cached like :meth:`list_tools`."""
        return cast(list[Prompt], await self._listed(name, ListKind.PROMPTS))

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
        self, model_name: str, arguments: Mapping[str, object] | None = None, *, timeout: float | None = None
    ) -> CallToolResult:
        """Call a tool by its model-facing name, within its timeout and result budget.

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
                result = await client.call_tool(route.tool, arguments, timeout=route.timeout)
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
            self._signal_for(plan.name)
            self._spawn(partial(self._attempt, plan))

    def _signal_for(self, name: str) -> Signal:
        signal = self._attempts.get(name)
        if signal is None:
            signal = self._attempts[name] = self._signal()
        return signal

    async def _attempt_finished(self, name: str) -> None:
        if self._core.attempting(name):
            await self._signal_for(name).wait()

    async def _attempt(self, plan: ConnectPlan) -> None:
        config = msgspec.structs.replace(self._client_config, initialize_timeout=plan.timeout)
        handlers = Handlers(on_sampling=self._on_sampling, on_elicitation=self._on_elicitation,
                            roots=self._roots, on_notification=partial(self._notified, plan.name))
        try:
            client, closer = await self._open(plan, config, handlers)
        except Exception as exc:  # whatever stops one server is that server's failure
            if not isinstance(exc, McpSansioError | OSError):
                log.exception("connecting to %s failed", plan.name)
            self._core.connect_failed(plan.name, failure_from(exc), self._now(), random.random())
        else:
            self._clients[plan.name], self._closers[client] = client, closer
            self._core.connected(plan.name, self._now())
        finally:  # cancelled by aclose() too: its waiters must wake
            self._attempts.pop(plan.name).set()
        self._dispatch()

    async def _notified(self, name: str, notification: NotificationReceived) -> None:
        self._core.notification_received(name, notification.method)
        if self._on_notification is not None:
            await self._on_notification(name, notification)

    def _notice_losses(self) -> None:
        for name, client in list(self._clients.items()):
            if session_closed(client):
                self._lost(name, client, None)

    def _check_loss(self, name: str, client: AsyncClient, exc: McpSansioError) -> None:
        if is_connection_loss(exc) or session_closed(client):
            self._lost(name, client, exc)

    def _lost(self, name: str, client: AsyncClient, exc: McpSansioError | None) -> None:
        if self._clients.get(name) is not client:
            return  # noticed already
        del self._clients[name]
        tail = stderr_of(client)
        failure = Failure(message="the connection closed", stderr_tail=tail) if exc is None else (
            failure_from(exc, stderr_tail=tail))
        self._core.connection_lost(name, failure, self._now(), random.random())
        self._dead.append(client)
        self._spawn(partial(self._reap, client))

    async def _reap(self, client: AsyncClient) -> None:
        await self._close_client(client)
        if client in self._dead:
            self._dead.remove(client)

    async def _close_client(self, client: AsyncClient) -> None:
        closer = self._closers.pop(client, None)
        if closer is not None:
            await closer()

    def _unavailable(self, name: str, status: ServerStatus) -> ServerUnavailable:
        return ServerUnavailable(f"server {name!r} {status.state.value}: {status.error}", server=name,
                                 state=status.state)

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
        async def listing(name: str) -> None:
            try:
                for kind in kinds:
                    await self._listed(name, kind)
            except ServerUnavailable:
                pass
            except McpSansioError as exc:
                log.warning("listing the %s of %s failed: %s", kinds[0].value.split("/")[0], name, exc)

        await self._run_all([partial(listing, name) for name in names])

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

    def _signal(self) -> Signal:
        raise NotImplementedError

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` in the background until it ends or :meth:`_stop_background`."""
        raise NotImplementedError

    async def _stop_background(self) -> None:
        """Cancel everything :meth:`_spawn` started and wait until it has finished."""
        raise NotImplementedError

    async def _run_all(self, fns: Sequence[Callable[[], Awaitable[None]]]) -> None:
        """Run ``fns`` concurrently and wait for all of them."""
        raise NotImplementedError

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        raise NotImplementedError

    def _init_driver(self) -> None:
        """Set up the driver's own state (called at the end of ``__init__``)."""

    async def _open(self, plan: ConnectPlan, config: ClientConfig, handlers: Handlers) -> Opened:
        """Open the connection ``plan`` describes, through its handshake, or raise.

        Returns:
            The client, and how to close it (closing twice must be harmless).
        """
        raise NotImplementedError


class ServerManager(AsyncServerManager):
    """Many MCP servers at once on asyncio; see :class:`AsyncServerManager` for the API.

    ``async with ServerManager(entries) as manager:`` closes everything at the end;
    without ``async with``, call :meth:`aclose`.
    """

    _tasks: set[asyncio.Task[None]]

    def _init_driver(self) -> None:
        self._tasks = set()

    async def __aenter__(self) -> ServerManager:
        return self

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def _signal(self) -> Signal:
        return asyncio.Event()

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        task = asyncio.get_running_loop().create_task(_run(fn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _stop_background(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run_all(self, fns: Sequence[Callable[[], Awaitable[None]]]) -> None:
        await asyncio.gather(*(fn() for fn in fns))

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        return await asyncio.to_thread(fn)

    async def _open(self, plan: ConnectPlan, config: ClientConfig, handlers: Handlers) -> Opened:
        server = plan.config
        if isinstance(server, StdioServerConfig):
            stdio = await connect_stdio(server.command, server.args, env=server.env, cwd=server.cwd,
                                        config=config, **handlers).__aenter__()
            return stdio, stdio.aclose
        if server.transport is Transport.WS:
            from .websocket import connect_websocket

            ws = await connect_websocket(server.url, headers=server.headers, config=config,
                                         **handlers).__aenter__()
            return ws, ws.aclose
        from .http import connect_http

        sse = server.transport is Transport.SSE
        mode: Literal["sse", "streamable-http"] = "sse" if sse else "streamable-http"
        http = await connect_http(server.url, headers=server.headers, transport=mode, config=config,
                                  **handlers).__aenter__()
        return http, http.aclose


async def _run(fn: Callable[[], Awaitable[None]]) -> None:
    await fn()
