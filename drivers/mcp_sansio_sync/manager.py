"""Many MCP servers at once, blocking: batched start-up, restarts, model-facing names.

:class:`ServerManager` gives the shared manager flow
(:class:`mcp_sansio_base._sync.manager.Manager`, generated from the async one) blocking
primitives. Connection attempts run in worker threads, one server each, because a
blocking handshake holds its thread; what they post is queued and taken on the caller's
thread, which alone touches the manager's state. What is posted on the caller's thread
(a server's notification, handled inline while a call waits) is done at once. A blocking
client reads nothing between calls, so the manager polls its connections before it relies
on them (``states``, ``connect``, the listings): a server that died or announced a change
while idle is noticed then, and restarted on its next use.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from mcp_sansio import ClientConfig
from mcp_sansio.hostconfig import StdioServerConfig, Transport
from mcp_sansio.manager_lifecycle import ConnectPlan
from mcp_sansio_base._sync.client import Client
from mcp_sansio_base._sync.handlers import Handlers
from mcp_sansio_base._sync.manager import Manager, Opened, ServerNotificationHandler

from ._loop import BlockingDriver
from .stdio import connect_stdio

__all__ = ["ServerManager", "ServerNotificationHandler"]

T = TypeVar("T")


class ServerManager(Manager):
    """Many MCP servers at once, blocking; ``with ServerManager(entries) as manager:``.

    The API is the async managers' without ``await``; handlers are plain callables.
    """

    _pool: ThreadPoolExecutor
    _running: set[Future[None]]
    _posted: queue.SimpleQueue[Callable[[], None]]
    _workers: threading.local

    def _init_driver(self) -> None:
        self._pool = ThreadPoolExecutor(thread_name_prefix="mcp-connect")
        self._running = set()
        self._posted = queue.SimpleQueue()
        self._workers = threading.local()  # .active: this thread is one of the pool's

    def __enter__(self) -> ServerManager:
        return self

    def _now(self) -> float:
        return time.monotonic()

    def _sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def _spawn(self, fn: Callable[[], None]) -> None:
        future = self._pool.submit(self._work, fn)
        self._running.add(future)
        future.add_done_callback(self._running.discard)

    def _work(self, fn: Callable[[], None]) -> None:
        self._workers.active = True
        fn()

    def _post(self, fn: Callable[[], None]) -> None:
        if getattr(self._workers, "active", False):
            self._posted.put(fn)  # for the caller's thread, which takes it in _settled
        else:
            fn()  # on the caller's thread already (nobody waits in _settled meanwhile)

    def _settled(self) -> None:
        self._posted.get()()

    def _stop_background(self) -> None:
        # Threads cannot be stopped: the handshakes under way end (within their timeout),
        # and what they opened is taken, so that it is closed with the rest.
        self._pool.shutdown(wait=True)
        with contextlib.suppress(queue.Empty):
            while True:
                self._posted.get_nowait()()

    def _run_all(self, fns: Sequence[Callable[[], None]]) -> None:
        for fn in fns:
            fn()

    def _in_thread(self, fn: Callable[[], T]) -> T:
        return fn()

    def _ended(self, client: Client) -> bool:
        assert isinstance(client, BlockingDriver)  # as every connection _open makes is
        client.poll()
        return client.closed

    def _open(self, plan: ConnectPlan, config: ClientConfig, handlers: Handlers) -> Opened:
        server = plan.config
        stack = contextlib.ExitStack()
        client: Client
        if isinstance(server, StdioServerConfig):
            client = stack.enter_context(connect_stdio(server.command, server.args, env=server.env,
                                                       cwd=server.cwd, config=config, handlers=handlers))
        elif server.transport is Transport.WS:
            from .websocket import connect_websocket

            client = stack.enter_context(connect_websocket(
                server.url, headers=server.headers, config=config, handlers=handlers))
        else:
            from .http import connect_http

            client = stack.enter_context(connect_http(
                server.url, headers=server.headers, config=config, handlers=handlers,
                transport="sse" if server.transport is Transport.SSE else "streamable-http"))
        return client, stack.close
