"""Many MCP servers at once on anyio (asyncio or trio): batched start-up, restarts, names.

The flow is :class:`mcp_sansio_base._async.manager.AsyncManager`'s; this module gives it
anyio's primitives. Each connection lives in a task of the manager's task group (an anyio
connection must be closed by the task that opened it), so the manager is used as
``async with ServerManager(entries) as manager:``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager as AsyncContextManager
from functools import partial
from types import TracebackType
from typing import TypeVar

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus

from mcp_sansio import ClientConfig
from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.hostconfig import ServerConfig, StdioServerConfig, Transport
from mcp_sansio.manager_lifecycle import ConnectPlan
from mcp_sansio_base._async.client import AsyncClient
from mcp_sansio_base._async.handlers import Handlers
from mcp_sansio_base._async.manager import AsyncManager, Opened
from mcp_sansio_base.changes import Changes

from .stdio import connect_stdio

__all__ = ["ServerManager"]

T = TypeVar("T")
log = logging.getLogger("mcp_sansio.manager")


class ServerManager(AsyncManager):
    """Many MCP servers at once on anyio; see ``AsyncManager`` for the API.

    Only ``async with ServerManager(entries, ...) as manager:`` starts it.
    """

    _tg: TaskGroup | None
    _scopes: set[anyio.CancelScope]
    _background: int
    _idle: anyio.Event
    _changes: Changes

    def _init_driver(self) -> None:
        self._tg = None
        self._scopes = set()
        self._background = 0
        self._idle = anyio.Event()
        self._changes = Changes(anyio.Event)

    async def __aenter__(self) -> ServerManager:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        return self

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        tg = self._tg
        try:
            with anyio.CancelScope(shield=True):
                await self.aclose()
        finally:
            if tg is not None:
                self._tg = None
                # Every task has ended: passing the body's exception would only wrap it.
                await tg.__aexit__(None, None, None)

    def _group(self) -> TaskGroup:
        if self._tg is None:
            raise LocalProtocolError("use the anyio ServerManager as `async with ServerManager(...)`")
        return self._tg

    def _now(self) -> float:
        return anyio.current_time()

    async def _sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)

    def _post(self, fn: Callable[[], None]) -> None:
        self._changes.post(fn)

    async def _settled(self) -> None:
        await self._changes.wait()

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        self._background += 1
        self._group().start_soon(self._scoped, fn)

    async def _scoped(self, fn: Callable[[], Awaitable[None]]) -> None:
        try:
            with anyio.CancelScope() as scope:
                self._scopes.add(scope)
                await fn()
        finally:
            self._scopes.discard(scope)
            self._background -= 1
            if not self._background:
                self._idle.set()

    async def _stop_background(self) -> None:
        for scope in self._scopes:
            scope.cancel()
        if self._background:
            self._idle = anyio.Event()
            await self._idle.wait()

    async def _run_all(self, fns: Sequence[Callable[[], Awaitable[None]]]) -> None:
        async with anyio.create_task_group() as tg:
            for fn in fns:
                tg.start_soon(_call, fn)

    async def _in_thread(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn)

    async def _open(self, plan: ConnectPlan, config: ClientConfig, handlers: Handlers) -> Opened:
        opened: Opened = await self._group().start(self._hold, plan.config, config, handlers)
        return opened

    async def _hold(self, server: ServerConfig, config: ClientConfig, handlers: Handlers, *,
                    task_status: TaskStatus[Opened]) -> None:
        """Open one connection and keep it, in this task, until its closer is called."""
        closing, closed = anyio.Event(), anyio.Event()
        started = False
        try:
            async with _connector(server, config, handlers) as client:
                task_status.started((client, partial(_release, closing, closed)))
                started = True
                await closing.wait()
        except Exception:
            if not started:
                raise  # to start(): the attempt failed
            # Once started, a failure must not take the manager's task group down with it.
            log.exception("the connection to %s failed while closing", _describe(server))
        finally:
            closed.set()


async def _call(fn: Callable[[], Awaitable[None]]) -> None:
    await fn()


async def _release(closing: anyio.Event, closed: anyio.Event) -> None:
    closing.set()
    await closed.wait()


def _connector(server: ServerConfig, config: ClientConfig,
               handlers: Handlers) -> AsyncContextManager[AsyncClient]:
    """The driver's ``connect_*`` for one configured server."""
    if isinstance(server, StdioServerConfig):
        return connect_stdio(server.command, server.args, env=server.env, cwd=server.cwd, config=config,
                             handlers=handlers)
    if server.transport is Transport.WS:
        from .websocket import connect_websocket

        return connect_websocket(server.url, headers=server.headers, config=config, handlers=handlers)
    from .http import connect_http

    return connect_http(server.url, headers=server.headers, config=config, handlers=handlers,
                        transport="sse" if server.transport is Transport.SSE else "streamable-http")


def _describe(server: ServerConfig) -> str:
    return server.command if isinstance(server, StdioServerConfig) else server.url
