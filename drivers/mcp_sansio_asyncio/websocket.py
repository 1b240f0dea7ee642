"""asyncio driver for MCP over WebSocket: one TCP/TLS socket, one timer, and the core's pump.

Every WebSocket decision (the upgrade, frames, pings, the closing handshake, failures)
is made by :class:`mcp_sansio.websocket.WebSocketClient`; this module opens the socket it
asks for and copies bytes both ways (STYLE.md section 8).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType

import msgspec

from mcp_sansio import ClientConfig
from mcp_sansio.errors import McpSansioError
from mcp_sansio.events import Action, InitializeCompleted, RequestId
from mcp_sansio.handlers import client_capabilities
from mcp_sansio.http11 import CloseConnection, OpenConnection
from mcp_sansio.websocket import WebSocketClient

from .client import (
    AsyncClient,
    ElicitationHandler,
    NotificationHandler,
    ProgressCallback,
    RootsArg,
    SamplingHandler,
)

__all__ = ["WebSocketConnection", "connect_websocket"]


class _Socket(asyncio.Protocol):
    def __init__(self, owner: WebSocketConnection) -> None:
        self._owner = owner

    def data_received(self, data: bytes) -> None:
        self._owner._received(data)

    def eof_received(self) -> bool:
        self._owner._received(b"")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._lost(exc)


class WebSocketConnection(AsyncClient):
    """A client connected to an MCP server over WebSocket; use it through :func:`connect_websocket`."""

    def __init__(
        self, url: str, *, headers: Mapping[str, str] | None, config: ClientConfig,
        ping_interval: float | None, on_sampling: SamplingHandler | None,
        on_elicitation: ElicitationHandler | None, roots: RootsArg | None,
        on_notification: NotificationHandler | None,
    ) -> None:
        caps = client_capabilities(sampling=on_sampling is not None,
                                   elicitation=on_elicitation is not None, roots=roots is not None)
        self._client = WebSocketClient(url, config=config, capabilities=caps, headers=headers,
                                       ping_interval=ping_interval)
        super().__init__(self._client, on_sampling=on_sampling, on_elicitation=on_elicitation,
                         roots=roots, on_notification=on_notification)
        self._loop = asyncio.get_running_loop()
        self._sock: asyncio.Transport | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._finished = self._loop.create_future()

    @property
    def url(self) -> str:
        """The server's ``ws://`` or ``wss://`` URL, normalised."""
        return self._client.url

    @property
    def subprotocol(self) -> str | None:
        """The subprotocol the server accepted: ``"mcp"`` (or ``None`` if it named none)."""
        return self._client.subprotocol

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
        """Run the closing handshake (bounded by ``close_timeout``), then close the socket."""
        self._client.close(now=self._loop.time())
        self._pump()
        try:
            await asyncio.shield(self._finished)
        finally:
            for task in [*self._tasks, *([self._connecting] if self._connecting else [])]:
                task.cancel()
            if self._sock is not None:
                self._sock.abort()
                self._sock = None
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
        self._pump()
        try:
            return await fut
        except asyncio.CancelledError:
            # Cancelling the task cancels the future it awaits, so "done" is no test here.
            if not fut.done() or fut.cancelled():
                self._waiters.pop(request_id, None)
                self._progress.pop(request_id, None)
                with contextlib.suppress(McpSansioError):  # answered meanwhile, or the connection is gone
                    self._client.cancel(request_id, now=self._loop.time(), reason="cancelled by the caller")
                self._pump()
            raise

    def _spawn(self, fn: Callable[[], Awaitable[None]]) -> None:
        task = self._loop.create_task(_run(fn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _flush(self) -> None:
        self._pump()

    # ------------------------------------------------------------- the pump

    def _pump(self) -> None:
        client = self._client
        self._deliver_events()
        while (action := client.next_action()) is not None:
            self._perform(action)
        for connection in client.connections_with_data():
            data = client.data_to_send(connection)
            if self._sock is not None:
                self._sock.write(data)
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
            self._connecting = self._loop.create_task(self._open(action))
        elif isinstance(action, CloseConnection):
            if self._connecting is not None:
                self._connecting.cancel()
                self._connecting = None
            sock, self._sock = self._sock, None
            if sock is not None:
                sock.write(self._client.data_to_send(action.connection))  # our Close frame, say
                sock.close()  # after the buffer is flushed

    async def _open(self, action: OpenConnection) -> None:
        try:
            sock, _ = await self._loop.create_connection(
                lambda: _Socket(self), action.host, action.port,
                ssl=ssl.create_default_context() if action.tls else None,
                server_hostname=action.server_hostname if action.tls else None,
            )
        except (OSError, ssl.SSLError) as exc:
            self._connecting = None
            self._client.connection_failed(action.connection, str(exc) or type(exc).__name__,
                                           self._loop.time())
            self._pump()
            return
        self._connecting = None
        self._sock = sock
        self._client.connection_made(action.connection, self._loop.time())
        self._pump()

    def _received(self, data: bytes) -> None:
        if self._sock is not None:
            self._client.receive_data(1, data, self._loop.time())
            self._pump()

    def _lost(self, exc: Exception | None) -> None:
        if self._sock is None:
            return  # we closed it, or the core already knows
        if exc is None:
            self._client.receive_data(1, b"", self._loop.time())
        else:
            self._client.connection_failed(1, str(exc) or type(exc).__name__, self._loop.time())
        self._pump()


async def _run(fn: Callable[[], Awaitable[None]]) -> None:
    await fn()


class _Connect:
    """``async with connect_websocket(...) as client``."""

    def __init__(self, factory: Callable[[], WebSocketConnection]) -> None:
        self._factory = factory
        self._conn: WebSocketConnection | None = None

    async def __aenter__(self) -> WebSocketConnection:
        conn = self._factory()
        await conn._start()
        self._conn = conn
        return conn

    async def __aexit__(self, et: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._conn is not None:
            await self._conn.aclose()


def connect_websocket(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    config: ClientConfig | None = None,
    ping_interval: float | None = None,
    on_sampling: SamplingHandler | None = None,
    on_elicitation: ElicitationHandler | None = None,
    roots: RootsArg | None = None,
    on_notification: NotificationHandler | None = None,
) -> _Connect:
    """Speak MCP to the server at ``url`` (``ws://`` or ``wss://``) over one WebSocket.

    ``headers`` go on the upgrade request. ``ping_interval`` turns on keepalive pings
    (a missing Pong then fails the connection); the default sends none.

    Raises (on entering):
        LocalProtocolError: ``url`` is not a ws(s) URL, or a header is malformed.
        ConnectionClosed, HttpError, Unauthorized, RequestTimeout, RemoteProtocolError,
        UnsupportedProtocolVersion: the handshake failed.
    """
    cfg = config or ClientConfig()
    return _Connect(lambda: WebSocketConnection(
        url, headers=headers, config=cfg, ping_interval=ping_interval, on_sampling=on_sampling,
        on_elicitation=on_elicitation, roots=roots, on_notification=on_notification,
    ))
