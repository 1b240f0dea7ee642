"""Many MCP servers at once on asyncio: :class:`ServerManager` gives the shared manager
(:class:`mcp_sansio_base._async.manager.AsyncManager`) asyncio's tasks, sleep and threads,
and opens stdio, Streamable HTTP, HTTP+SSE and WebSocket connections.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from mcp_sansio import ClientConfig
from mcp_sansio.hostconfig import StdioServerConfig, Transport
from mcp_sansio.manager_lifecycle import ConnectPlan
from mcp_sansio_base._async.handlers import Handlers
from mcp_sansio_base._async.manager import AsyncManager, Opened, ServerNotificationHandler
from mcp_sansio_base.changes import Changes

from .stdio import connect_stdio

__all__ = ["ServerManager", "ServerNotificationHandler"]

T = TypeVar("T")


class ServerManager(AsyncManager):
    """Many MCP servers at once on asyncio; see :class:`AsyncManager` for the API.

    ``async with ServerManager(entries) as manager:`` closes everything at the end;
    without ``async with``, call :meth:`aclose`.
    """

    _tasks: set[asyncio.Task[None]]
    _changes: Changes

    def _init_driver(self) -> None:
        self._tasks = set()
        self._changes = Changes(asyncio.Event)

    async def __aenter__(self) -> ServerManager:
        return self

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        task = asyncio.get_running_loop().create_task(_run(fn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _post(self, fn: Callable[[], None]) -> None:
        self._changes.post(fn)

    async def _settled(self) -> None:
        await self._changes.wait()

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
                                        config=config, handlers=handlers).__aenter__()
            return stdio, stdio.aclose
        if server.transport is Transport.WS:
            from .websocket import connect_websocket

            ws = await connect_websocket(server.url, headers=server.headers, config=config,
                                         handlers=handlers).__aenter__()
            return ws, ws.aclose
        from .http import connect_http

        http = await connect_http(server.url, headers=server.headers, config=config, handlers=handlers,
                                  transport="sse" if server.transport is Transport.SSE else "streamable-http",
                                  ).__aenter__()
        return http, http.aclose


async def _run(fn: Callable[[], Awaitable[None]]) -> None:
    await fn()
