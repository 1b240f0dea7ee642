"""asyncio driver for MCP over HTTP: TCP/TLS sockets, one timer, and the core's pump.

Every HTTP decision (connections, headers, statuses, retries, session expiry) is made
by :class:`mcp_sansio.http_transport.HttpClient`; this module only opens the sockets it
asks for and copies bytes both ways.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import ssl
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Literal

import msgspec

from mcp_sansio import ClientConfig
from mcp_sansio.errors import McpSansioError
from mcp_sansio.events import Action, InitializeCompleted, RequestId
from mcp_sansio.handlers import client_capabilities
from mcp_sansio.http11 import CloseConnection, OpenConnection
from mcp_sansio.http_transport import HttpClient, TransportMode

from .client import (
    AsyncClient,
    ElicitationHandler,
    NotificationHandler,
    ProgressCallback,
    RootsArg,
    SamplingHandler,
)

__all__ = ["HttpConnection", "connect_http"]

Transport = TransportMode | Literal["auto", "streamable-http", "sse"]


class _Socket(asyncio.Protocol):
    def __init__(self, owner: HttpConnection, connection: int) -> None:
        self._owner = owner
        self._connection = connection

    def data_received(self, data: bytes) -> None:
        self._owner._received(self._connection, data)

    def eof_received(self) -> bool:
        self._owner._received(self._connection, b"")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._lost(self._connection, exc)


class HttpConnection(AsyncClient):
    """A client connected to an MCP server over HTTP; use it through :func:`connect_http`."""

    def __init__(
        self, url: str, *, headers: Mapping[str, str] | None, transport: Transport,
        config: ClientConfig, on_sampling: SamplingHandler | None,
        on_elicitation: ElicitationHandler | None, roots: RootsArg | None,
        on_notification: NotificationHandler | None,
    ) -> None:
        caps = client_capabilities(sampling=on_sampling is not None,
                                   elicitation=on_elicitation is not None, roots=roots is not None)
        self._client = HttpClient(url, config=config, capabilities=caps, headers=headers,
                                  transport=transport, jitter_seed=random.getrandbits(64))
        super().__init__(self._client, on_sampling=on_sampling, on_elicitation=on_elicitation,
                         roots=roots, on_notification=on_notification)
        self._loop = asyncio.get_running_loop()
        self._sockets: dict[int, asyncio.Transport] = {}
        self._connecting: dict[int, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._flush_pending = False
        self._finished = self._loop.create_future()
        self._ssl: ssl.SSLContext | None = None

    @property
    def transport(self) -> str:
        """The HTTP transport in use: ``"streamable-http"`` or ``"sse"``."""
        return self._client.transport

    @property
    def session_id(self) -> str | None:
        """The server's ``Mcp-Session-Id``, if it gave one."""
        return self._client.session_id

    async def _start(self) -> None:
        waiter: asyncio.Future[msgspec.Struct] = self._loop.create_future()
        self._init_waiter = waiter
        self._client.connect(now=self._loop.time())
        self._pump()
        try:
            event = await waiter
        except BaseException:
            await self.aclose()
            raise
        assert isinstance(event, InitializeCompleted)

    async def aclose(self) -> None:
        """End the session (``DELETE``), close every socket, cancel every task."""
        self._client.close(now=self._loop.time())
        self._pump()
        try:
            await asyncio.shield(self._finished)
        finally:
            for task in [*self._tasks, *self._connecting.values()]:
                task.cancel()
            for sock in self._sockets.values():
                sock.abort()
            self._sockets.clear()
            if self._timer is not None:
                self._timer.cancel()

    # ------------------------------------------------------- AsyncClient API

    def _now(self) -> float:
        return self._loop.time()

    async def _wait(
        self, request_id: RequestId, on_progress: ProgressCallback | None = None
    ) -> msgspec.Struct:
        fut: asyncio.Future[msgspec.Struct] = self._loop.create_future()
        self._waiters[request_id] = fut
        if on_progress is not None:
            self._progress[request_id] = on_progress
        self._flush()
        try:
            return await fut
        except asyncio.CancelledError:
            if not fut.done():
                self._waiters.pop(request_id, None)
                self._progress.pop(request_id, None)
                with contextlib.suppress(McpSansioError):  # nothing left to cancel
                    self._client.cancel(request_id, now=self._loop.time(), reason="cancelled by the caller")
                self._pump()
            raise

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        task = self._loop.create_task(_run(fn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _flush(self) -> None:
        # A lone call goes out at once; calls started together go out in one write,
        # once per loop turn.
        if len(self._waiters) <= 1 and not self._flush_pending:
            self._pump()
        elif not self._flush_pending:
            self._flush_pending = True
            self._loop.call_soon(self._flush_now)

    def _flush_now(self) -> None:
        self._flush_pending = False
        self._pump()

    # ------------------------------------------------------------- the pump

    def _pump(self) -> None:
        client = self._client
        self._deliver_events()
        while (action := client.next_action()) is not None:
            self._perform(action)
        for connection in client.connections_with_data():
            data = client.data_to_send(connection)
            sock = self._sockets.get(connection)
            if sock is not None and data:
                sock.write(data)
        if client.finished and not self._finished.done():
            self._finished.set_result(None)
        deadline = client.next_deadline()
        if deadline is not None and (self._timer_at is None or deadline < self._timer_at):
            if self._timer is not None:
                self._timer.cancel()
            self._timer_at = deadline
            self._timer = self._loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        at = self._timer_at
        self._timer = self._timer_at = None
        self._client.handle_timeout(max(at or 0.0, self._loop.time()))
        self._pump()

    def _perform(self, action: Action) -> None:
        if isinstance(action, OpenConnection):
            task = self._loop.create_task(self._open(action))
            self._connecting[action.connection] = task
        elif isinstance(action, CloseConnection):
            pending = self._connecting.pop(action.connection, None)
            if pending is not None:
                pending.cancel()
            sock = self._sockets.pop(action.connection, None)
            if sock is not None:
                sock.close()

    async def _open(self, action: OpenConnection) -> None:
        conn = action.connection
        try:
            if action.tls and self._ssl is None:
                self._ssl = ssl.create_default_context()
            sock, _ = await self._loop.create_connection(
                lambda: _Socket(self, conn), action.host, action.port,
                ssl=self._ssl if action.tls else None,
                server_hostname=action.server_hostname if action.tls else None,
            )
        except (OSError, ssl.SSLError) as exc:
            self._connecting.pop(conn, None)
            self._client.connection_failed(conn, _describe(exc), self._loop.time())
            self._pump()
            return
        self._connecting.pop(conn, None)
        self._sockets[conn] = sock
        self._client.connection_made(conn, self._loop.time())
        self._pump()

    def _received(self, connection: int, data: bytes) -> None:
        if connection in self._sockets:
            self._client.receive_data(connection, data, self._loop.time())
            self._pump()

    def _lost(self, connection: int, exc: Exception | None) -> None:
        if self._sockets.pop(connection, None) is None:
            return  # we closed it
        if exc is None:
            self._client.receive_data(connection, b"", self._loop.time())
        else:
            self._client.connection_failed(connection, _describe(exc), self._loop.time())
        self._pump()


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


async def _run(fn: Callable[[], Awaitable[None]]) -> None:
    await fn()


class _Connect:
    def __init__(self, factory: Callable[[], HttpConnection]) -> None:
        self._factory = factory
        self._conn: HttpConnection | None = None

    async def __aenter__(self) -> HttpConnection:
        conn = self._factory()
        await conn._start()
        self._conn = conn
        return conn

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._conn is not None:
            await self._conn.aclose()


def connect_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    transport: Transport = "auto",
    config: ClientConfig | None = None,
    on_sampling: SamplingHandler | None = None,
    on_elicitation: ElicitationHandler | None = None,
    roots: RootsArg | None = None,
    on_notification: NotificationHandler | None = None,
) -> _Connect:
    """Speak MCP to the server at ``url`` over Streamable HTTP (or legacy HTTP+SSE).

    ``headers`` (API keys, ...) go on every request to that origin. ``transport`` is
    ``"auto"`` (Streamable HTTP, falling back to HTTP+SSE on 400/404/405),
    ``"streamable-http"`` or ``"sse"``.

    Raises (on entering):
        LocalProtocolError: ``url`` is not an http(s) URL.
        ConnectionClosed, HttpError, Unauthorized, RequestTimeout,
        UnsupportedProtocolVersion: the handshake failed.
    """
    cfg = config or ClientConfig()
    return _Connect(lambda: HttpConnection(
        url, headers=headers, transport=transport, config=cfg, on_sampling=on_sampling,
        on_elicitation=on_elicitation, roots=roots, on_notification=on_notification,
    ))
