"""Many stdio MCP servers at once, blocking: batched start-up, restarts, model-facing names.

:class:`ServerManager` performs the decisions of :class:`mcp_sansio.manager.ServerManagerCore`.
The attempts of a batch run in worker threads, one server each, because a blocking
handshake holds its thread; everything else (calls, listings, the core) stays on the
caller's thread. The blocking driver speaks stdio only, so remote servers are reported
failed. A blocking client does no I/O between calls, so a crash is noticed by the call
that meets it; the server is restarted on its next use.

Also the blocking helpers the async managers share: :func:`write_result_file`,
:func:`session_closed` and :func:`stderr_of`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Final, Literal, Protocol, TypeVar, cast

import msgspec

from mcp_sansio import ClientConfig
from mcp_sansio.errors import LocalProtocolError, McpSansioError, RequestError
from mcp_sansio.events import NotificationReceived
from mcp_sansio.hostconfig import ExpansionWarning, ServerEntry, StdioServerConfig, Transport
from mcp_sansio.listcache import ListKind
from mcp_sansio.manager import (
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

from .client import Client, ElicitationHandler, RootsArg, SamplingHandler
from .stdio import connect_stdio

__all__ = ["ServerManager", "ServerNotificationHandler", "session_closed", "stderr_of", "write_result_file"]

log = logging.getLogger("mcp_sansio.manager")

T = TypeVar("T")
R = TypeVar("R")
ServerNotificationHandler = Callable[[str, NotificationReceived], object]
"""Sees ``(server name, notification)`` for every notification of every server."""
Opened = tuple[Client, contextlib.ExitStack]
_RESULT_DIR: Final = "mcp-sansio-results"


class _Closable(Protocol):
    @property
    def closed(self) -> bool: ...


def session_closed(client: _Closable) -> bool:
    """Whether a client's connection has ended (process exited, socket closed, closed)."""
    return client.closed


def stderr_of(client: object) -> str:
    """What a stdio client's server last wrote to stderr; ``""`` for other clients."""
    tail = getattr(client, "stderr_tail", "")
    return tail if isinstance(tail, str) else ""


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


class ServerManager:
    """Many MCP servers at once, blocking; ``with ServerManager(entries) as manager:``.

    The API is the async managers' without ``await``; handlers are plain callables.
    """

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
        """Set the servers up; see ``mcp_sansio_asyncio.manager.AsyncServerManager``.

        Raises:
            LocalProtocolError: two entries share a name, or a limit is invalid.
        """
        config = ManagerConfig(max_local=max_local, max_remote=max_remote, restart=restart or RestartPolicy(),
                               result_policy=result_policy or ResultPolicy())
        self._core = ServerManagerCore(entries, env=env, config=config)
        self._max_local = max_local
        self._client_config = client_config or ClientConfig()
        self._on_sampling = on_sampling
        self._on_elicitation = on_elicitation
        self._roots = roots
        self._on_notification = on_notification
        self._result_dir = None if result_dir is None else Path(result_dir)
        self._clients: dict[str, Client] = {}
        self._stacks: dict[Client, contextlib.ExitStack] = {}
        self._closed = False

    @property
    def states(self) -> dict[str, ServerStatus]:
        """Every server's status, by name, after noticing connections known to have ended."""
        self._notice_losses()
        return self._core.statuses(time.monotonic())

    @property
    def warnings(self) -> list[ExpansionWarning]:
        """What ``${VAR}`` expansion could not fill in the entries."""
        return list(self._core.warnings)

    # ------------------------------------------------------- connections

    def connect_all(self) -> None:
        """Connect to every server not tried yet, batched; return once each attempt ended."""
        self._run_attempts(self._core.queue_all())

    def connect(self, name: str) -> Client:
        """The live client of ``name``, connecting (or restarting) it first if needed.

        Raises:
            UnknownServer: no such server.
            ServerUnavailable: it is disabled, failed to connect, or is not stdio.
        """
        self._notice_losses()
        while True:
            match self._core.use(name, time.monotonic()):
                case Connected():
                    return self._clients[name]
                case WaitUntil(at=at):
                    time.sleep(max(at - time.monotonic(), 0.0))
                case Join():
                    self._run_attempts([name])
                    if name in self._clients:
                        return self._clients[name]
                    status = self._core.status(name, time.monotonic())
                    raise ServerUnavailable(f"server {name!r} {status.state.value}: {status.error}",
                                            server=name, state=status.state)
                case Unavailable(message=message):
                    state = self._core.status(name, time.monotonic()).state
                    raise ServerUnavailable(message, server=name, state=state)

    def close(self) -> None:
        """Close every connection; no process is left behind."""
        if self._closed:
            return
        self._closed = True
        stacks, self._stacks, self._clients = list(self._stacks.values()), {}, {}
        try:
            for stack in stacks:
                stack.close()
        finally:
            self._core.close()

    def __enter__(self) -> ServerManager:
        return self

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------- lists

    def list_tools(self, name: str) -> list[Tool]:
        """The tools of ``name``, cached until they change or the connection ends, or for
        as long as the server's caching hints say (``ttlMs``, ``cacheScope``)."""
        return cast(list[Tool], self._listed(name, ListKind.TOOLS))

    def list_resources(self, name: str) -> list[Resource]:
        """The resources of ``name``, cached like :meth:`list_tools`."""
        return cast(list[Resource], self._listed(name, ListKind.RESOURCES))

    def list_prompts(self, name: str) -> list[Prompt]:
        """The prompts of ``name``, cached like :meth:`list_tools`."""
        return cast(list[Prompt], self._listed(name, ListKind.PROMPTS))

    def read_resource(self, name: str, uri: str) -> ReadResourceResult:
        """One resource of ``name``, served again from the cache while its ``ttlMs`` hint
        says it is fresh (never cached without one)."""
        client = self.connect(name)
        cached = self._core.cached_read(name, uri, time.monotonic())
        if cached is not None:
            return cached
        token = self._core.begin_list(name, ListKind.RESOURCE_READ)
        try:
            result = client.read_resource(uri, timeout=self._core.request_timeout(name))
        except McpSansioError as exc:
            self._check_loss(name, client, exc)
            raise
        self._core.store_read(name, uri, result, token, time.monotonic())
        return result

    def tools(self) -> list[NamedTool]:
        """Every tool of every connected server, under its model-facing name."""
        self._notice_losses()
        self._list_each(self._core.connected_names(), ListKind.TOOLS)
        return self._core.named_tools()

    def prompts(self) -> list[NamedPrompt]:
        """Every prompt of every connected server, named like the tools (``mcp__<server>__<prompt>``)."""
        self._notice_losses()
        self._list_each(self._core.connected_names(), ListKind.PROMPTS)
        return self._core.named_prompts()

    def resources(self) -> list[ServerResource | ServerResourceTemplate]:
        """Every resource and resource template of every connected server, with its server."""
        self._notice_losses()
        self._list_each(self._core.connected_names(), ListKind.RESOURCES, ListKind.RESOURCE_TEMPLATES)
        return self._core.named_resources()

    def get_prompt(self, model_name: str, arguments: Mapping[str, str] | None = None, *,
                   timeout: float | None = None) -> GetPromptResult:
        """Get a prompt by its model-facing name (see :meth:`prompts`).

        Raises:
            UnknownPromptName: no prompt has that name.
            ServerUnavailable: its server cannot be connected.
            RequestError, RequestTimeout, ConnectionClosed: the request failed.
        """
        route = self._routed(model_name, ListKind.PROMPTS,
                             partial(self._core.route_prompt, model_name, timeout))
        client = self.connect(route.server)
        try:
            return client.get_prompt(route.prompt, arguments, timeout=route.timeout)
        except McpSansioError as exc:
            self._check_loss(route.server, client, exc)
            raise

    def call_tool(
        self, model_name: str, arguments: Mapping[str, object] | None = None, *, timeout: float | None = None
    ) -> CallToolResult:
        """Call a tool by its model-facing name (see the async managers' ``call_tool``).

        Raises:
            UnknownToolName: no tool has that name.
            ServerUnavailable: its server cannot be connected.
            RequestError, RequestTimeout, ConnectionClosed: the call failed.
        """
        route = self._routed(model_name, ListKind.TOOLS, partial(self._core.route, model_name, timeout))
        client = self.connect(route.server)
        retries = 0
        while True:
            try:
                result = client.call_tool(route.tool, arguments, timeout=route.timeout)
                break
            except RequestError as exc:
                elicitations = self._core.elicitation_retry(exc, retries)
                if elicitations is None or self._on_elicitation is None:
                    raise
                if not elicitations_accepted([self._on_elicitation(item) for item in elicitations]):
                    raise
                retries += 1
            except McpSansioError as exc:
                self._check_loss(route.server, client, exc)
                raise
        decision = self._core.shape_result(route, result)
        path = write_result_file(self._result_dir, decision) if isinstance(decision, PersistResult) else None
        return self._core.final_result(result, decision, path)

    # ----------------------------------------------------------- helpers

    def _run_attempts(self, names: Collection[str]) -> None:
        """Run attempts, a batch at a time in threads, until none of ``names`` is pending."""
        if self._closed:
            raise LocalProtocolError("the server manager is closed")
        running: dict[Future[Opened], str] = {}
        with ThreadPoolExecutor(max_workers=self._max_local, thread_name_prefix="mcp-connect") as pool:
            try:
                while True:
                    for plan in self._core.start_due():
                        running[pool.submit(self._open, plan)] = plan.name
                    if not running:
                        break
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in done:
                        self._settle(running.pop(future), future)
            finally:  # interrupted (Ctrl-C): the handshakes under way still end and are kept
                for future, name in running.items():
                    self._settle(name, future)

    def _settle(self, name: str, future: Future[Opened]) -> None:
        try:
            client, stack = future.result()
        except Exception as exc:  # whatever stops one server is that server's failure
            if not isinstance(exc, McpSansioError | OSError):
                log.exception("connecting to %s failed", name)
            self._core.connect_failed(name, failure_from(exc), time.monotonic(), random.random())
        else:
            self._clients[name], self._stacks[client] = client, stack
            self._core.connected(name, time.monotonic())

    def _open(self, plan: ConnectPlan) -> Opened:
        server = plan.config
        config = msgspec.structs.replace(self._client_config, initialize_timeout=plan.timeout)
        notified = partial(self._notified, plan.name)
        sampling, elicitation, roots = self._on_sampling, self._on_elicitation, self._roots
        stack = contextlib.ExitStack()
        client: Client
        if isinstance(server, StdioServerConfig):
            client = stack.enter_context(connect_stdio(
                server.command, server.args, env=server.env, cwd=server.cwd, config=config,
                on_sampling=sampling, on_elicitation=elicitation, roots=roots, on_notification=notified))
        elif server.transport is Transport.WS:
            from .websocket import connect_websocket

            client = stack.enter_context(connect_websocket(
                server.url, headers=server.headers, config=config,
                on_sampling=sampling, on_elicitation=elicitation, roots=roots, on_notification=notified))
        else:
            from .http import connect_http

            mode: Literal["sse", "streamable-http"] = (
                "sse" if server.transport is Transport.SSE else "streamable-http")
            client = stack.enter_context(connect_http(
                server.url, headers=server.headers, transport=mode, config=config,
                on_sampling=sampling, on_elicitation=elicitation, roots=roots, on_notification=notified))
        return client, stack

    def _notified(self, name: str, notification: NotificationReceived) -> None:
        self._core.notification_received(name, notification.method)
        if self._on_notification is not None:
            self._on_notification(name, notification)

    def _notice_losses(self) -> None:
        for name, client in list(self._clients.items()):
            if session_closed(client):
                self._lost(name, client, None)

    def _check_loss(self, name: str, client: Client, exc: McpSansioError) -> None:
        if is_connection_loss(exc) or session_closed(client):
            self._lost(name, client, exc)

    def _lost(self, name: str, client: Client, exc: McpSansioError | None) -> None:
        if self._clients.get(name) is not client:
            return  # noticed already
        connection = self._clients.pop(name)
        tail = stderr_of(connection)
        failure = Failure(message="the connection closed", stderr_tail=tail) if exc is None else (
            failure_from(exc, stderr_tail=tail))
        self._core.connection_lost(name, failure, time.monotonic(), random.random())
        self._stacks.pop(connection).close()

    def _routed(self, model_name: str, kind: ListKind, route: Callable[[], R]) -> R:
        """``route()``; if the name is unknown, first list ``kind`` on the servers it may
        belong to (starting them: only those), and fail as the core says if still unknown."""
        try:
            return route()
        except UnknownName:
            pass
        self._list_each(self._core.servers_for(model_name), kind)
        try:
            return route()
        except UnknownName:
            raise self._core.unroutable(model_name, kind, time.monotonic()) from None

    def _list_each(self, names: Sequence[str], *kinds: ListKind) -> None:
        """List ``kinds`` on each of ``names`` (connecting it if needed); a server that
        cannot be used or listed is left out (its state, or the log, says why)."""
        for name in names:
            try:
                for kind in kinds:
                    self._listed(name, kind)
            except ServerUnavailable:
                pass
            except McpSansioError as exc:
                log.warning("listing the %s of %s failed: %s", kinds[0].value.split("/")[0], name, exc)

    def _listed(self, name: str, kind: ListKind) -> list[object]:
        client = self.connect(name)
        while True:  # again while the core finds the listing overtaken by a list_changed
            cached = self._core.cached(name, kind, time.monotonic())
            if cached is not None:
                return cached
            token = self._core.begin_list(name, kind)
            result = None
            try:
                if server_offers(client.server_capabilities, kind.value):
                    result = client.request(kind.value, timeout=self._core.request_timeout(name),
                                            all_pages=True)
            except McpSansioError as exc:
                self._check_loss(name, client, exc)
                raise
            items = self._core.store_result(name, kind, result, token, time.monotonic())
            if items is not None:
                return items
