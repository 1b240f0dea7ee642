"""Serving an ``MCPServer`` on anyio (asyncio or trio): ``serve_stdio``, ``serve_http``,
``serve_websocket``.

Each function owns the I/O and one task group; handlers, timers and per-connection
writers are tasks in it, driven by the shared :class:`~mcp_sansio_base.server.ServerRunner`
through :class:`~mcp_sansio_base.anyio_runtime.AnyioPrimitives`. Every protocol decision
is the core's.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from typing import Final

import anyio
import anyio.abc

from mcp_sansio.events import Event
from mcp_sansio.server import StdioServer
from mcp_sansio.server.http import HttpServer
from mcp_sansio.server.websocket import WebSocketServer
from mcp_sansio_base._async.serve import Serving
from mcp_sansio_base.anyio_runtime import AnyioPrimitives
from mcp_sansio_base.fdout import FdOutput
from mcp_sansio_base.listening import ACCEPT_RETRY_DELAY, LINGER_SECONDS, Lingering, accept_ready, listen
from mcp_sansio_base.relay import relay_anyio
from mcp_sansio_base.server import ServerRunner
from mcp_sansio_base.serving import peer_host

__all__ = ["serve_http", "serve_stdio", "serve_websocket"]

_READ: Final = 65536
# A socket is received from in pieces as large as asyncio's transport reads (256 KiB): with
# smaller ones anyio queued the rest of each read and went on reading meanwhile (a client
# writing without end made it queue about 100 MB).
_RECEIVE: Final = 256 * 1024


async def _serve_stdio(endpoint: StdioServer, fd_in: int, fd_out: int,
                       on_event: Callable[[Event], None] | None, handler_threads: int | None) -> None:
    blocking = os.get_blocking(fd_in), os.get_blocking(fd_out)
    async with anyio.create_task_group() as group:
        out = _FdWriter(fd_out, endpoint.data_to_send, group)
        primitives = AnyioPrimitives(group, out.write, handler_threads)
        runner = ServerRunner(endpoint, primitives, on_event)
        out.taken = runner.wake
        reading = anyio.CancelScope()
        runner.on_terminated = reading.cancel  # input ended, or the session was abandoned
        try:
            os.set_blocking(fd_in, False)
            with reading:
                await _read(fd_in, endpoint, runner)
            await primitives.drain()
            if not endpoint.abandoned:  # a client that does not read would never take it
                await out.flush()
        finally:
            runner.cancel_all()
            primitives.stop_handlers()
            group.cancel_scope.cancel()
            for fd, was in zip((fd_in, fd_out), blocking, strict=True):
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, was)


async def _read(fd_in: int, endpoint: StdioServer, runner: ServerRunner) -> None:
    """Feed stdin to ``endpoint`` until it ends."""
    while True:
        try:
            data = os.read(fd_in, _READ)
        except BlockingIOError:
            await anyio.wait_readable(fd_in)
            continue
        except OSError:
            data = b""
        if not data:
            await runner.settled()  # a plain def in flight, or a held result: answered as if inline
        endpoint.receive_data(data, anyio.current_time())
        runner.pump()
        if not data:
            return
        await anyio.lowlevel.checkpoint()  # a regular file never blocks: let the handlers run


class _FdWriter(FdOutput):
    """Stdio output in the task group: a task waits for the descriptor."""

    def __init__(self, fd: int, source: Callable[[], bytes], group: anyio.abc.TaskGroup) -> None:
        super().__init__(fd, source)
        self._group = group
        self._idle = anyio.Event()
        self._idle.set()

    def _wait_writable(self) -> None:
        self._idle = anyio.Event()
        self._group.start_soon(self._drain)

    async def _drain(self) -> None:
        try:
            while self._pending and not self._closed:
                await anyio.wait_writable(self._fd)
                self._writable()
        finally:
            self._pending.clear()
            self._idle.set()

    async def flush(self) -> None:
        self.write()
        await self._idle.wait()


class _Conn:
    """One accepted connection: its stream, what waits to be written, whether to close."""

    __slots__ = ("closing", "id", "linger", "out", "read_all", "scope", "stream", "wake")

    def __init__(self, conn: int, stream: anyio.abc.SocketStream) -> None:
        self.id = conn
        self.stream = stream
        self.scope = anyio.CancelScope()  # its reader's and writer's: ends it past the linger
        self.out = bytearray()
        self.closing = False  # the core closed it (or it broke): write the rest, then close
        self.linger = True  # ... after ending our side and reading until the client's end
        self.wake = anyio.Event()
        self.read_all = anyio.Event()  # the client's side ended

    def abort(self) -> None:
        """End it now, reader and writer (past ``listening.MAX_LINGERING``)."""
        self.scope.cancel()


async def _serve_connections(endpoint: HttpServer | WebSocketServer, host: str, port: int,
                             on_event: Callable[[Event], None] | None,
                             ready: Callable[[int], None] | None, handler_threads: int | None) -> None:
    """Accept connections for a connection-oriented transport until cancelled."""
    conns: dict[int, _Conn] = {}
    lingering = Lingering()

    def write() -> None:
        for cid in endpoint.connections_with_data():
            conn = conns.get(cid)
            if conn is not None:
                conn.wake.set()  # its writer takes the bytes when the socket took the last ones
            else:
                endpoint.data_to_send(cid)  # nobody to write them to
        while (action := endpoint.next_action()) is not None:
            conn = conns.pop(action.connection, None)
            if conn is not None:
                conn.out += endpoint.data_to_send(action.connection)
                conn.closing = True
                conn.linger = action.linger
                conn.wake.set()
                # a client that does not read never lets its last bytes go: the connection
                # ends after the linger whatever its writer waits for
                conn.scope.deadline = min(conn.scope.deadline, anyio.current_time() + LINGER_SECONDS)
                lingering.add(conn.id, conn.abort)

    async def accept(listener: socket.socket) -> None:
        """Accept what waits on ``listener`` in batches, one task for each live connection."""
        while True:
            await anyio.wait_readable(listener)
            try:
                accepted = accept_ready(listener)
            except OSError:  # out of descriptors: accept again later
                await anyio.sleep(ACCEPT_RETRY_DELAY)
                continue
            for sock, _, sending in accepted:
                group.start_soon(adopt, sock, sending)

    async def adopt(sock: socket.socket, sending: bool) -> None:
        try:
            stream = await anyio.abc.SocketStream.from_socket(sock)
        except (OSError, ValueError):  # the client left meanwhile
            sock.close()
            return
        await serve(stream, sending)

    async def serve(stream: anyio.abc.SocketStream, sending: bool) -> None:
        peer = peer_host(stream.extra(anyio.abc.SocketAttribute.remote_address, None))
        conn = _Conn(endpoint.connection_made(anyio.current_time(), peer, sending=sending), stream)
        conns[conn.id] = conn
        runner.pump()
        try:
            await connection(conn)
        finally:
            lingering.discard(conn.id)

    async def connection(conn: _Conn) -> None:
        async with conn.stream as stream, anyio.create_task_group() as tasks:
            tasks.cancel_scope.deadline = conn.scope.deadline  # the core may have closed it already
            if conn.scope.cancel_called:
                tasks.cancel_scope.cancel()
            conn.scope = tasks.cancel_scope
            tasks.start_soon(writer, conn, tasks.cancel_scope)
            try:
                while True:
                    try:
                        data = await stream.receive(_RECEIVE)
                    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        data = b""
                    if not data:
                        conn.read_all.set()
                    if conn.id in conns:
                        endpoint.receive_data(conn.id, data, anyio.current_time())
                        runner.pump()
                    if not data:
                        break  # (what comes after the core closed it is read and dropped)
            finally:
                if conns.pop(conn.id, None) is not None:
                    endpoint.connection_lost(conn.id, anyio.current_time())
                    runner.pump()
                conn.closing = True
                conn.wake.set()

    async def writer(conn: _Conn, done: anyio.CancelScope) -> None:
        """Send what the core queued for ``conn``, taking it only once the socket took the
        last (a client that does not read holds only its own writer, and what waits stays
        counted by the core's backpressure); once it is closing, end our side and read what
        the client still sends for up to ``LINGER_SECONDS`` (``listening.LINGER_SECONDS``)."""
        # OSError: trio's send_eof on a socket the client reset (ENOTCONN) is no error of ours.
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            while True:
                await conn.wake.wait()
                conn.wake = anyio.Event()
                while True:
                    data = bytes(conn.out)
                    conn.out.clear()
                    if not conn.closing:
                        data += endpoint.data_to_send(conn.id)
                    if not data:
                        break
                    await conn.stream.send(data)
                    runner.wake()
                if conn.closing:
                    break
            if conn.linger:
                await conn.stream.send_eof()
                with anyio.move_on_after(LINGER_SECONDS):
                    await conn.read_all.wait()
        done.cancel()

    async with anyio.create_task_group() as group:
        primitives = AnyioPrimitives(group, write, handler_threads)
        runner = ServerRunner(endpoint, primitives, on_event)
        if isinstance(endpoint, HttpServer):
            group.start_soon(relay_anyio, endpoint, runner)
        listeners = listen(host, port)
        if ready is not None:
            ready(listeners[0].getsockname()[1])
        try:
            async with anyio.create_task_group() as accepting:
                for listener in listeners:
                    accepting.start_soon(accept, listener)
        finally:
            endpoint.close(anyio.current_time())
            runner.pump()
            runner.cancel_all()
            primitives.stop_handlers()
            for listener in listeners:
                anyio.notify_closing(listener)
                listener.close()
            group.cancel_scope.cancel()


SERVING = Serving(anyio.current_time, _serve_stdio, _serve_connections)
serve_stdio = SERVING.serve_stdio
serve_http = SERVING.serve_http
serve_websocket = SERVING.serve_websocket
