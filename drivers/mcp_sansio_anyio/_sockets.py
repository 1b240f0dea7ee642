"""The anyio driver for cores that speak over TCP/TLS connections (HTTP, WebSocket).

The core asks for connections with ``OpenConnection`` / ``CloseConnection``; each one
becomes a task of the driver's task group that connects (``anyio.connect_tcp``), then
reads and writes until the core closes it, all inside the connection's own cancel
scope. A ``StartTls`` (a tunnel through a proxy) wraps the stream in ``TLSStream``
between two reads. Every protocol decision stays in the core (STYLE.md section 8).
"""

from __future__ import annotations

import ssl
from functools import partial
from typing import TYPE_CHECKING, Final

import anyio
from anyio.abc import ByteStream
from anyio.streams.tls import TLSStream

from mcp_sansio.connections import CloseConnection, OpenConnection, SocketStage, StartTls
from mcp_sansio.events import Action, InitializeCompleted
from mcp_sansio_base._async.handlers import Handlers
from mcp_sansio_base.failures import socket_failure
from mcp_sansio_base.socketpump import SocketPump

from ._loop import AnyioDriver, Waiter

if TYPE_CHECKING:
    from mcp_sansio.http_transport import HttpClient
    from mcp_sansio.websocket import WebSocketClient

__all__ = ["SocketDriver"]

_CHUNK: Final = 65536
# What connecting, reading or writing a socket raises when the network or the peer fails.
_BROKEN: Final = (OSError, anyio.BrokenResourceError, anyio.EndOfStream, ssl.SSLError)


class _Connection:
    """One socket the core asked for: its scope, stream and the bytes not written yet."""

    __slots__ = ("closing", "scope", "stream", "tls_hostname", "unsent", "wake", "writing", "written")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()  # cancelled when the core closes the connection
        self.stream: ByteStream | None = None
        self.unsent = bytearray()
        self.wake = anyio.Event()  # set when unsent grows, or when closing
        self.closing = False  # closed by the core: write what is left, then end
        self.writing = False  # a send is under way: the core keeps what comes meanwhile
        self.written = anyio.Event()  # set when the send under way returns
        self.tls_hostname: str | None = None  # StartTls asked for, begun after the current read


class SocketDriver(SocketPump, AnyioDriver):
    """A driver that opens the TCP/TLS connections its core asks for and moves bytes."""

    def __init__(self, core: HttpClient | WebSocketClient, handlers: Handlers,
                 ssl_context: ssl.SSLContext | None) -> None:
        super().__init__(core, handlers)
        self._net = core
        self._connections: dict[int, _Connection] = {}
        self._finished = anyio.Event()
        self._ssl = ssl_context  # the system trust store unless given, made when first needed
        self._opened = False

    # ----------------------------------------------------------- lifecycle

    async def _start(self) -> None:
        """Connect and complete the handshake; on failure, close everything and raise."""
        await self._enter()
        self._opened = True
        try:
            waiter = Waiter()
            self._init_waiter = waiter
            self._net.connect(now=anyio.current_time())
            self._pump()
            event = await waiter.wait()
        except BaseException:
            await self.aclose()
            raise
        assert isinstance(event, InitializeCompleted)

    async def aclose(self) -> None:
        """End the session (shielded from cancellation), then stop every socket and task."""
        if not self._opened:
            return
        self._opened = False
        with anyio.CancelScope(shield=True):
            self._net.close(now=anyio.current_time())
            self._pump()
            await self._finished.wait()  # close_timeout bounds it
        await self._exit()  # each connection task closes its socket as it is cancelled

    # ------------------------------------------------------------- the pump

    def _pump(self) -> None:
        net = self._net
        self._hand_out(net)
        if net.finished:
            self._finished.set()
        self._arm(net.next_deadline())

    def _busy(self, connection: int) -> bool:
        conn = self._connections.get(connection)
        return conn is not None and bool(conn.unsent or conn.writing)

    def _take(self, connection: int, data: bytes) -> None:
        conn = self._connections.get(connection)
        if conn is not None:
            conn.unsent += data
            conn.wake.set()

    def _perform(self, action: Action) -> None:
        if isinstance(action, OpenConnection):
            conn = self._connections[action.connection] = _Connection()
            self._start_task(partial(self._serve, action, conn))
        elif isinstance(action, StartTls):
            tunnel = self._connections.get(action.connection)
            if tunnel is not None:
                tunnel.tls_hostname = action.server_hostname
        elif isinstance(action, CloseConnection):
            closed = self._connections.pop(action.connection, None)
            if closed is None:
                return
            # Its last bytes (a WebSocket Close frame) go out before the socket closes.
            closed.unsent += self._net.data_to_send(action.connection)
            if closed.unsent and closed.stream is not None:
                closed.closing = True
                closed.wake.set()
            else:
                closed.scope.cancel()

    def _live(self, connection: int, conn: _Connection) -> bool:
        return self._connections.get(connection) is conn

    def _failed(self, connection: int, conn: _Connection, exc: BaseException, stage: SocketStage) -> None:
        if self._live(connection, conn):
            self._net.connection_failed(connection, socket_failure(exc, stage), anyio.current_time())
            self._pump()

    # ------------------------------------------------------ connection tasks

    async def _serve(self, action: OpenConnection, conn: _Connection) -> None:
        """Connect, then read (and write, in a second task) until the core closes it."""
        connection = action.connection
        with conn.scope:
            try:
                stream = await self._connect(action)
            except _BROKEN as exc:
                self._failed(connection, conn, exc, SocketStage.CONNECT)
                return
            conn.stream = stream
            try:
                self._net.connection_made(connection, anyio.current_time())
                self._pump()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._write, connection, conn)
                    await self._read(connection, conn)
                    await anyio.sleep_forever()  # the writer goes on until the core closes it
            finally:
                await anyio.aclose_forcefully(conn.stream or stream)  # TLSStream closes what it wraps

    async def _read(self, connection: int, conn: _Connection) -> None:
        net = self._net
        try:
            while True:
                stream = conn.stream
                assert stream is not None  # connected before reading
                data = await stream.receive(_CHUNK)
                if not self._live(connection, conn):
                    return
                net.receive_data(connection, data, anyio.current_time())
                self._pump()
                if conn.tls_hostname is not None:
                    await self._start_tls(connection, conn, stream)
        except anyio.EndOfStream:
            if self._live(connection, conn):
                net.receive_data(connection, b"", anyio.current_time())
                self._pump()
        except _BROKEN as exc:
            self._failed(connection, conn, exc, SocketStage.TRANSFER)

    async def _start_tls(self, connection: int, conn: _Connection, stream: ByteStream) -> None:
        """TLS on the open connection (a tunnel); nothing else reads it meanwhile."""
        hostname, conn.tls_hostname = conn.tls_hostname, None
        if conn.writing:  # the CONNECT's send may not have returned yet, and TLS writes next
            await conn.written.wait()
        try:
            conn.stream = await TLSStream.wrap(stream, hostname=hostname, ssl_context=self._context(),
                                               standard_compatible=False)
        except anyio.EndOfStream:
            raise anyio.BrokenResourceError("the connection closed during the TLS handshake") from None
        if self._live(connection, conn):
            self._net.tls_started(connection, anyio.current_time())
            self._pump()

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    async def _write(self, connection: int, conn: _Connection) -> None:
        while True:
            await conn.wake.wait()
            conn.wake = anyio.Event()
            while conn.unsent:
                data = bytes(conn.unsent)
                conn.unsent.clear()
                stream = conn.stream
                assert stream is not None  # connected before writing
                conn.writing, conn.written = True, anyio.Event()
                try:
                    await stream.send(data)
                except _BROKEN as exc:
                    self._failed(connection, conn, exc, SocketStage.TRANSFER)
                    return
                conn.writing = False
                conn.written.set()
                if self._live(connection, conn):
                    self._pump()  # take what the core held back meanwhile
            if conn.closing:
                conn.scope.cancel()  # everything is written
                return

    async def _connect(self, action: OpenConnection) -> ByteStream:
        if not action.tls:
            return await anyio.connect_tcp(action.host, action.port)
        # h11 and wsproto frame every message themselves, so an EOF without TLS
        # close_notify is an EOF like any other (as HTTP clients treat it).
        return await anyio.connect_tcp(action.host, action.port, ssl_context=self._context(),
                                       tls_hostname=action.server_hostname, tls_standard_compatible=False)

