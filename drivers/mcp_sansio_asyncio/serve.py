"""Serving an ``MCPServer`` on asyncio: ``serve_stdio``, ``serve_http``, ``serve_websocket``.

Each function owns the I/O (file descriptors or sockets), the clock and one timer, and
gives the transport's events to the shared :class:`~mcp_sansio_base.server.ServerRunner`;
every protocol decision is the core's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Awaitable, Callable
from typing import TypeVar

import msgspec

from mcp_sansio.events import Event
from mcp_sansio.server import StdioServer
from mcp_sansio.server.http import HttpServer
from mcp_sansio.server.websocket import WebSocketServer
from mcp_sansio_base._async.serve import Serving
from mcp_sansio_base.asyncio_loop import LoopParts
from mcp_sansio_base.fdout import FdOutput
from mcp_sansio_base.listening import ACCEPT_RETRY_DELAY, LINGER_SECONDS, Lingering, accept_ready, listen
from mcp_sansio_base.relay import relay_asyncio
from mcp_sansio_base.server import DEFAULT_HANDLER_THREADS, FutureLike, ServerRunner
from mcp_sansio_base.serving import peer_host

__all__ = ["serve_http", "serve_stdio", "serve_websocket"]

_READ = 65536
T = TypeVar("T")


class _Primitives(LoopParts):
    """The runner's primitives on an asyncio loop; ``write`` is the transport's flush; plain
    handlers run in a pool of ``threads`` worker threads."""

    def __init__(self, loop: asyncio.AbstractEventLoop, write: Callable[[], None],
                 threads: int | None = None) -> None:
        super().__init__(loop, DEFAULT_HANDLER_THREADS if threads is None else threads)
        self.write = write

    def call_soon_threadsafe(self, callback: Callable[[], None]) -> None:
        self._loop.call_soon_threadsafe(callback)

    def close(self) -> None:
        """Stop the handler pool (threads still running finish on their own)."""
        self._stop_handlers()

    def future(self) -> FutureLike[msgspec.Struct]:
        return self._loop.create_future()

    def run_blocking(self, fn: Callable[[], T]) -> Awaitable[T]:
        return self._loop.run_in_executor(None, fn)

    async def drain(self) -> None:
        """Wait for the handlers still running (they were cancelled) to end."""
        if self._tasks:
            await asyncio.wait(list(self._tasks))


async def _serve_stdio(endpoint: StdioServer, fd_in: int, fd_out: int,
                       on_event: Callable[[Event], None] | None, handler_threads: int | None) -> None:
    loop = asyncio.get_running_loop()
    out = _FdWriter(loop, fd_out, endpoint.data_to_send)
    primitives = _Primitives(loop, out.write, handler_threads)
    runner = ServerRunner(endpoint, primitives, on_event)
    out.taken = runner.wake
    done: asyncio.Future[None] = loop.create_future()
    ending: list[asyncio.Task[None]] = []

    async def end() -> None:
        await runner.settled()  # a plain def in flight, or a held result, is answered as if inline
        endpoint.receive_data(b"", loop.time())
        runner.pump()
        if not done.done():
            done.set_result(None)

    def ended() -> None:  # input ended, or the session was abandoned (input may never end)
        if not done.done():
            done.set_result(None)

    runner.on_terminated = ended

    def readable() -> None:
        if ending or done.done():
            return
        try:
            data = os.read(fd_in, _READ)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            ending.append(loop.create_task(end()))
            return
        endpoint.receive_data(data, loop.time())
        runner.pump()

    was_blocking = os.get_blocking(fd_in)
    try:
        os.set_blocking(fd_in, False)
        loop.add_reader(fd_in, readable)
    except (OSError, ValueError, NotImplementedError):  # a regular file: reads never block
        os.set_blocking(fd_in, was_blocking)
        reader: asyncio.Task[None] | None = loop.create_task(_read_file(fd_in, readable, done))
    else:
        reader = None
    try:
        await done
        await primitives.drain()
        if not endpoint.abandoned:  # a client that does not read would never take it
            await out.flush()
    finally:
        if reader is None:
            loop.remove_reader(fd_in)
            with contextlib.suppress(OSError):
                os.set_blocking(fd_in, was_blocking)
        runner.cancel_all()
        primitives.close()
        out.close()


async def _read_file(fd: int, readable: Callable[[], None], done: asyncio.Future[None]) -> None:
    """Feed a regular file as a pipe would: one read per loop iteration."""
    while not done.done():
        readable()
        await asyncio.sleep(0)


class _FdWriter(FdOutput):
    """Stdio output on the loop: ``add_writer`` waits for the descriptor."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, source: Callable[[], bytes]) -> None:
        super().__init__(fd, source)
        self._loop = loop
        self._watching = False
        self._idle: asyncio.Event = asyncio.Event()
        self._idle.set()

    def _wait_writable(self) -> None:
        self._idle.clear()
        if not self._watching:
            try:
                self._loop.add_writer(self._fd, self._on_writable)
                self._watching = True
            except (OSError, ValueError, NotImplementedError):  # a regular file: just block
                os.set_blocking(self._fd, True)
                os.write(self._fd, self._pending)
                self._pending.clear()
                self._idle.set()

    def _on_writable(self) -> None:
        self._writable()
        if not self._pending:
            self._loop.remove_writer(self._fd)
            self._watching = False
            self._idle.set()

    async def flush(self) -> None:
        self.write()
        await self._idle.wait()

    def close(self) -> None:
        if self._watching:
            self._loop.remove_writer(self._fd)
            self._watching = False
        with contextlib.suppress(OSError):
            os.set_blocking(self._fd, self._blocking)


async def _serve_connections(endpoint: HttpServer | WebSocketServer, host: str, port: int,
                             on_event: Callable[[Event], None] | None,
                             ready: Callable[[int], None] | None, handler_threads: int | None) -> None:
    """Accept connections for a connection-oriented transport until cancelled."""
    loop = asyncio.get_running_loop()
    links: dict[int, _Link] = {}
    lingering = Lingering()

    def write() -> None:
        for conn in endpoint.connections_with_data():
            link = links.get(conn)
            if link is not None and not link.paused:
                link.transport.write(endpoint.data_to_send(conn))
        while (action := endpoint.next_action()) is not None:
            link = links.pop(action.connection, None)
            if link is not None:  # its last bytes; lingering: our end, then read and drop until theirs
                transport = link.transport
                transport.write(endpoint.data_to_send(action.connection))
                if not (action.linger and transport.can_write_eof() and _half_close(transport)):
                    transport.close()
                # close() and write_eof() wait for the transport's buffer to drain, which a
                # client that does not read never lets happen: abort ends it after the linger
                loop.call_later(LINGER_SECONDS, transport.abort)
                lingering.add(action.connection, transport.abort)

    primitives = _Primitives(loop, write, handler_threads)
    runner = ServerRunner(endpoint, primitives, on_event)

    def factory(sending: bool) -> Callable[[], asyncio.Protocol]:
        return lambda: _ConnectionProtocol(endpoint, runner, links, lingering, loop, sending)

    adopting: set[asyncio.Task[None]] = set()

    def accept(listener: socket.socket) -> None:
        try:
            accepted = accept_ready(listener)
        except OSError:  # out of descriptors: accept again later
            loop.remove_reader(listener)
            loop.call_later(ACCEPT_RETRY_DELAY, resume, listener)
            return
        for sock, _, sending in accepted:
            task = loop.create_task(_adopt(loop, factory(sending), sock))
            adopting.add(task)
            task.add_done_callback(adopting.discard)

    def resume(listener: socket.socket) -> None:
        if listener.fileno() != -1:  # (else the server ended meanwhile)
            loop.add_reader(listener, accept, listener)

    listeners = listen(host, port)
    relay = loop.create_task(relay_asyncio(endpoint, runner)) if isinstance(endpoint, HttpServer) else None
    try:
        for listener in listeners:
            loop.add_reader(listener, accept, listener)
        if ready is not None:
            ready(listeners[0].getsockname()[1])
        await loop.create_future()  # until cancelled
    finally:
        if relay is not None:
            relay.cancel()
        for listener in listeners:
            loop.remove_reader(listener)
            listener.close()
        for task in adopting:
            task.cancel()
        endpoint.close(loop.time())
        runner.pump()
        runner.cancel_all()
        primitives.close()
        for link in links.values():
            link.transport.close()


async def _adopt(loop: asyncio.AbstractEventLoop, factory: Callable[[], asyncio.Protocol],
                 sock: socket.socket) -> None:
    """Give an accepted socket its transport and protocol (a client that left meanwhile: none)."""
    with contextlib.suppress(OSError):
        await loop.connect_accepted_socket(factory, sock)


def _half_close(transport: asyncio.Transport) -> bool:
    """End our side of ``transport``; ``False`` when the peer is gone already (a balancer
    that closed first: ``shutdown()`` fails with ENOTCONN, which must not reach a handler)."""
    try:
        transport.write_eof()
    except OSError:
        return False
    return True


class _Link:
    """One accepted connection's transport and write state."""

    __slots__ = ("paused", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.paused = False


class _ConnectionProtocol(asyncio.Protocol):
    """Feeds one connection's bytes to the transport's core and pumps the runner."""

    def __init__(self, endpoint: HttpServer | WebSocketServer, runner: ServerRunner,
                 links: dict[int, _Link], lingering: Lingering, loop: asyncio.AbstractEventLoop,
                 sending: bool) -> None:
        self._endpoint = endpoint
        self._sending = sending  # its client's bytes were waiting when it was accepted
        self._runner = runner
        self._links = links
        self._lingering = lingering
        self._loop = loop
        self._id = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)  # a stream server's transport
        self._id = self._endpoint.connection_made(self._loop.time(),
                                                  peer_host(transport.get_extra_info("peername")),
                                                  sending=self._sending)
        self._links[self._id] = _Link(transport)
        self._runner.pump()

    def data_received(self, data: bytes) -> None:
        self._endpoint.receive_data(self._id, data, self._loop.time())
        self._runner.pump()

    def eof_received(self) -> bool:
        self._endpoint.receive_data(self._id, b"", self._loop.time())
        self._runner.pump()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._lingering.discard(self._id)
        if self._links.pop(self._id, None) is not None:
            self._endpoint.connection_lost(self._id, self._loop.time())
            self._runner.pump()

    def pause_writing(self) -> None:
        link = self._links.get(self._id)
        if link is not None:
            link.paused = True

    def resume_writing(self) -> None:
        link = self._links.get(self._id)
        if link is not None:
            link.paused = False
            self._runner.flush()


SERVING = Serving(lambda: asyncio.get_running_loop().time(), _serve_stdio, _serve_connections)
serve_stdio = SERVING.serve_stdio
serve_http = SERVING.serve_http
serve_websocket = SERVING.serve_websocket
