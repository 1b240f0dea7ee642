"""The asyncio driver for cores that speak over TCP/TLS connections (HTTP, WebSocket).

They ask for connections with ``OpenConnection`` / ``CloseConnection`` (and, in a tunnel
through a proxy, ``StartTls``: ``loop.start_tls`` on the same transport) and get bytes
back; every protocol decision stays in the core (STYLE.md section 8).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Protocol, cast

from mcp_sansio.connections import CloseConnection, OpenConnection, SocketFailure, SocketStage, StartTls
from mcp_sansio.events import Action, Event
from mcp_sansio.front import SessionFront
from mcp_sansio_base._async.handlers import Handlers
from mcp_sansio_base.failures import socket_failure
from mcp_sansio_base.socketpump import SocketPump

from ._loop import LoopDriver

__all__ = ["NetworkCore", "SocketDriver"]


class NetworkCore(Protocol):
    """The driver contract of the socket-based cores (HttpClient, WebSocketClient)."""

    finished: bool

    def connect(self, *, now: float) -> None: ...
    def close(self, *, now: float) -> None: ...
    def next_event(self) -> Event | None: ...
    def next_action(self) -> Action | None: ...
    def next_deadline(self) -> float | None: ...
    def connections_with_data(self) -> list[int]: ...
    def data_to_send(self, connection: int) -> bytes: ...
    def connection_made(self, connection: int, now: float) -> None: ...
    def tls_started(self, connection: int, now: float) -> None: ...
    def connection_failed(self, connection: int, failure: SocketFailure, now: float) -> None: ...
    def receive_data(self, connection: int, data: bytes, now: float) -> None: ...


class _Socket(asyncio.Protocol):
    def __init__(self, owner: SocketDriver, connection: int) -> None:
        self._owner = owner
        self._connection = connection
        self.paused = False  # the transport's buffer is over its high-water mark

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._owner._loop.call_soon(self._owner._pump)  # take what the core held back meanwhile

    def data_received(self, data: bytes) -> None:
        self._owner._received(self._connection, data)

    def eof_received(self) -> bool:
        self._owner._received(self._connection, b"")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._lost(self._connection, exc)


class SocketDriver(SocketPump, LoopDriver):
    """A driver that opens the TCP/TLS connections its core asks for and moves bytes."""

    def __init__(self, core: SessionFront, handlers: Handlers, ssl_context: ssl.SSLContext | None) -> None:
        super().__init__(core, handlers)
        self._net: NetworkCore = core  # type: ignore[assignment]  # HttpClient / WebSocketClient
        self._sockets: dict[int, asyncio.Transport] = {}
        self._connecting: dict[int, asyncio.Task[None]] = {}  # connecting, or starting TLS
        self._finished = self._loop.create_future()
        self._ssl = ssl_context  # the system trust store unless given, made when first needed

    async def _start(self) -> None:
        await self._handshake(lambda now: self._net.connect(now=now))

    async def aclose(self) -> None:
        """End the session, close every socket, cancel every task."""
        self._net.close(now=self._loop.time())
        self._pump()
        try:
            await asyncio.shield(self._finished)
        finally:
            for task in self._connecting.values():
                task.cancel()
            self._stop_tasks()
            for sock in self._sockets.values():
                sock.abort()
            self._sockets.clear()

    def _pump(self) -> None:
        net = self._net
        self._hand_out(net)
        if net.finished and not self._finished.done():
            self._finished.set_result(None)
        self._arm(net.next_deadline())

    def _busy(self, connection: int) -> bool:
        sock = self._sockets.get(connection)
        return sock is not None and cast(_Socket, sock.get_protocol()).paused

    def _take(self, connection: int, data: bytes) -> None:
        sock = self._sockets.get(connection)
        if sock is not None:
            sock.write(data)

    def _perform(self, action: Action) -> None:
        if isinstance(action, OpenConnection):
            self._connecting[action.connection] = self._loop.create_task(self._open(action))
        elif isinstance(action, StartTls):
            self._connecting[action.connection] = self._loop.create_task(self._start_tls(action))
        elif isinstance(action, CloseConnection):
            pending = self._connecting.pop(action.connection, None)
            if pending is not None:
                pending.cancel()
            sock = self._sockets.pop(action.connection, None)
            if sock is not None:
                data = self._net.data_to_send(action.connection)  # e.g. a WebSocket Close frame
                if data:
                    sock.write(data)
                sock.close()  # after the queued bytes are written

    async def _open(self, action: OpenConnection) -> None:
        conn = action.connection
        try:
            sock, _ = await self._loop.create_connection(
                lambda: _Socket(self, conn), action.host, action.port,
                ssl=self._context() if action.tls else None,
                server_hostname=action.server_hostname if action.tls else None,
            )
        except (OSError, ssl.SSLError) as exc:
            self._connecting.pop(conn, None)
            self._failed(conn, exc, SocketStage.CONNECT)
            return
        self._ready(conn, sock, self._net.connection_made)

    async def _start_tls(self, action: StartTls) -> None:
        """TLS on the open connection (a tunnel): the same protocol then reads plaintext."""
        conn = action.connection
        raw = self._sockets[conn]  # the core asked while reading from it
        try:
            tls = await self._loop.start_tls(raw, raw.get_protocol(), self._context(),
                                             server_hostname=action.server_hostname)
            if tls is None:
                raise ConnectionResetError("the connection closed during the TLS handshake")
        except (OSError, ssl.SSLError) as exc:
            self._connecting.pop(conn, None)
            if self._sockets.pop(conn, None) is not None:  # else connection_lost reported it
                raw.abort()
                self._failed(conn, exc, SocketStage.TLS)
            return
        self._ready(conn, tls, self._net.tls_started)

    def _failed(self, conn: int, exc: BaseException, stage: SocketStage) -> None:
        self._net.connection_failed(conn, socket_failure(exc, stage), self._loop.time())
        self._pump()

    def _ready(self, conn: int, sock: asyncio.Transport, report: Callable[[int, float], None]) -> None:
        """``conn`` is open (or its TLS is up) on ``sock``: ``report`` it to the core."""
        self._connecting.pop(conn, None)
        self._sockets[conn] = sock
        report(conn, self._loop.time())
        self._pump()

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    def _received(self, connection: int, data: bytes) -> None:
        if connection in self._sockets:
            self._net.receive_data(connection, data, self._loop.time())
            self._pump()

    def _lost(self, connection: int, exc: Exception | None) -> None:
        if self._sockets.pop(connection, None) is None:
            return  # we closed it
        if exc is None:
            self._net.receive_data(connection, b"", self._loop.time())
        else:
            failure = socket_failure(exc, SocketStage.TRANSFER)
            self._net.connection_failed(connection, failure, self._loop.time())
        self._pump()
