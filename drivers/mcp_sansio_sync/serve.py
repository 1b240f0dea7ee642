"""Serving an ``MCPServer`` from blocking code: ``serve_stdio``, ``serve_http``, ``serve_websocket``.

One thread, one ``selectors`` loop, no event loop: plain handlers run inline, ``async def``
handlers on :class:`~mcp_sansio_base.steploop.StepLoop` (they may await their
``Context``'s questions to the client, nothing else). Each function returns when its input
ends (stdio) or when ``stop`` says so (HTTP, WebSocket), or raises ``KeyboardInterrupt``
at Ctrl-C; sockets and file descriptors are closed on the way out either way.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import socket
import sys
import time
from collections.abc import Callable
from typing import Final, Protocol

from mcp_sansio.events import Event
from mcp_sansio.server import MCPServer
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio.server.websocket import WebSocketConfig, WebSocketServer
from mcp_sansio_base.relay import RelayThread
from mcp_sansio_base.server import ServerRunner
from mcp_sansio_base.serving import (
    LINGER_SECONDS,
    SharedStore,
    http_endpoint,
    peer_host,
    stdio_endpoint,
    websocket_endpoint,
)
from mcp_sansio_base.steploop import StepLoop

__all__ = ["serve_http", "serve_stdio", "serve_websocket"]

_READ: Final = 65536
_STOP_POLL: Final = 0.1  # how often ``stop`` is asked, at the most


class Stop(Protocol):
    """What ``stop=`` takes: a ``threading.Event`` does."""

    def is_set(self) -> bool:
        """Whether to stop now."""
        ...


def serve_stdio(app: MCPServer, *, secret: bytes | None = None, stdin: int | None = None,
                stdout: int | None = None, on_event: Callable[[Event], None] | None = None) -> None:
    """Serve ``app`` on stdin/stdout until stdin closes (the arguments:
    :mod:`mcp_sansio_base.serving`)."""
    fd_in = sys.stdin.fileno() if stdin is None else stdin
    fd_out = sys.stdout.fileno() if stdout is None else stdout
    endpoint = stdio_endpoint(app, secret, time.monotonic())

    def write() -> None:
        data = endpoint.data_to_send()
        with contextlib.suppress(OSError):  # the client is gone: the read side will see EOF
            while data:
                data = data[os.write(fd_out, data):]

    loop = StepLoop(time.monotonic, write)
    runner = ServerRunner(endpoint, loop, on_event)
    with selectors.DefaultSelector() as selector:
        with contextlib.suppress(OSError, ValueError):  # a regular file (never blocks) is not watched
            selector.register(fd_in, selectors.EVENT_READ)
        try:
            while True:
                _wait(selector, loop, None)
                try:
                    data = os.read(fd_in, _READ)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                endpoint.receive_data(data, time.monotonic())
                runner.pump()
                if not data:
                    break
            loop.run_ready()  # cancelled handlers end
        finally:
            runner.cancel_all()
            loop.run_ready()


def serve_http(app: MCPServer, *, host: str = "127.0.0.1", port: int = 8000, secret: bytes | None = None,
               config: HttpConfig | None = None, on_event: Callable[[Event], None] | None = None,
               ready: Callable[[int], None] | None = None, stop: Stop | None = None,
               store: str | SharedStore | None = None) -> None:
    """Serve ``app`` over Streamable HTTP at ``http://host:port/mcp`` until ``stop`` is set
    (the arguments: :mod:`mcp_sansio_base.serving`)."""
    endpoint = http_endpoint(app, host, secret, config, time.monotonic(), store)
    _serve_connections(endpoint, host, port, on_event, ready, stop)


def serve_websocket(app: MCPServer, *, host: str = "127.0.0.1", port: int = 8000,
                    secret: bytes | None = None, config: WebSocketConfig | None = None,
                    on_event: Callable[[Event], None] | None = None,
                    ready: Callable[[int], None] | None = None, stop: Stop | None = None) -> None:
    """Serve ``app`` over WebSocket (subprotocol ``mcp``) at ``ws://host:port/`` until
    ``stop`` is set (the arguments: :mod:`mcp_sansio_base.serving`)."""
    endpoint = websocket_endpoint(app, host, secret, config, time.monotonic())
    _serve_connections(endpoint, host, port, on_event, ready, stop)


def _wait(selector: selectors.BaseSelector, loop: StepLoop, stop: Stop | None,
          also: float | None = None) -> list[tuple[object, int]]:
    """Wait for I/O, the next timer, ``also`` (or ``stop``'s next look); fire what is due."""
    loop.run_ready()
    at = min((t for t in (loop.next_timer(), also) if t is not None), default=None)
    timeout = None if at is None else max(0.0, at - time.monotonic())
    if stop is not None:
        timeout = _STOP_POLL if timeout is None else min(timeout, _STOP_POLL)
    events = [(key.data, mask) for key, mask in selector.select(timeout)] if selector.get_map() else []
    loop.fire_due()
    loop.run_ready()
    return events


class _Conn:
    __slots__ = ("id", "linger_until", "out", "sock")

    def __init__(self, conn: int, sock: socket.socket) -> None:
        self.id = conn
        self.sock = sock
        self.out = bytearray()
        self.linger_until = math.inf  # finite once the core closed it: write the rest, drain, close


def _serve_connections(endpoint: HttpServer | WebSocketServer, host: str, port: int,
                       on_event: Callable[[Event], None] | None, ready: Callable[[int], None] | None,
                       stop: Stop | None) -> None:
    """Accept connections for a connection-oriented transport until ``stop``."""
    conns: dict[int, _Conn] = {}
    lingering: dict[int, _Conn] = {}
    selector = selectors.DefaultSelector()

    def watch(conn: _Conn) -> None:
        mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0)
        selector.modify(conn.sock, mask, conn)

    def flush(conn: _Conn) -> None:
        try:
            sent = conn.sock.send(conn.out)
        except BlockingIOError:
            sent = 0
        except OSError:
            close(conn)
            return
        del conn.out[:sent]
        if conn.linger_until < math.inf and not conn.out:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_WR)  # the client sees the end, then closes
        watch(conn)

    def close(conn: _Conn) -> None:
        if conns.pop(conn.id, None) is not None:
            endpoint.connection_lost(conn.id, time.monotonic())
        lingering.pop(conn.id, None)
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(conn.sock)
        conn.sock.close()

    def write() -> None:  # after every pump: the relay thread also learns what to follow now
        if relay is not None:
            relay.publish()
        for cid in endpoint.connections_with_data():
            conn = conns.get(cid)
            data = endpoint.data_to_send(cid)
            if conn is not None and data:
                conn.out += data
                flush(conn)
        while (action := endpoint.next_action()) is not None:
            conn = conns.pop(action.connection, None)
            if conn is not None:
                conn.out += endpoint.data_to_send(action.connection)
                conn.linger_until = time.monotonic() + LINGER_SECONDS
                lingering[conn.id] = conn
                flush(conn)

    def readable(conn: _Conn) -> None:
        try:
            chunk = conn.sock.recv(_READ)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if conn.linger_until < math.inf:  # discarded; the end closes it
            if not chunk:
                close(conn)
            return
        endpoint.receive_data(conn.id, chunk, time.monotonic())
        if not chunk:
            runner.pump()  # the core closes it (its CloseConnection), else:
            close(conn)

    relay: RelayThread | None = None
    loop = StepLoop(time.monotonic, write)
    runner = ServerRunner(endpoint, loop, on_event)
    listener = socket.create_server((host, port))
    listener.setblocking(False)
    selector.register(listener, selectors.EVENT_READ, None)
    wake_r, wake_w = socket.socketpair()  # the relay thread's doorbell
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    selector.register(wake_r, selectors.EVENT_READ, wake_r)

    def ring() -> None:
        with contextlib.suppress(OSError):  # full: the loop is already woken
            wake_w.send(b"x")

    relay = RelayThread(endpoint, runner, ring) if isinstance(endpoint, HttpServer) else None
    if ready is not None:
        ready(listener.getsockname()[1])
    try:
        while stop is None or not stop.is_set():
            due = min((c.linger_until for c in lingering.values()), default=None)
            for data, mask in _wait(selector, loop, stop, due):
                if data is None:
                    with contextlib.suppress(BlockingIOError):
                        sock, address = listener.accept()
                        sock.setblocking(False)
                        conn = _Conn(endpoint.connection_made(time.monotonic(), peer_host(address)), sock)
                        conns[conn.id] = conn
                        selector.register(sock, selectors.EVENT_READ, conn)
                elif isinstance(data, _Conn):
                    if mask & selectors.EVENT_WRITE and data.out:
                        flush(data)
                    if mask & selectors.EVENT_READ and (data.id in conns or data.id in lingering):
                        readable(data)
                elif relay is not None:
                    with contextlib.suppress(OSError):
                        wake_r.recv(4096)
                    relay.deliver(time.monotonic())
                runner.pump()
            now = time.monotonic()
            for conn in [c for c in lingering.values() if c.linger_until <= now]:
                close(conn)
    finally:
        if relay is not None:
            relay.close()
        endpoint.close(time.monotonic())
        runner.pump()
        runner.cancel_all()
        loop.run_ready()
        wake_r.close()
        wake_w.close()
        for conn in [*conns.values(), *lingering.values()]:
            conn.sock.close()
        selector.close()
        listener.close()
