"""Serving an ``MCPServer`` from blocking code: ``serve_stdio``, ``serve_http``, ``serve_websocket``.

One thread, one ``selectors`` loop, no event loop: plain handlers run inline (or, with
``handler_threads=N``, in a pool of N worker threads, so that one that blocks stalls no
other client), ``async def`` handlers on :class:`~mcp_sansio_base.steploop.StepLoop` (they
may await their ``Context``'s questions to the client, nothing else). Each function returns when its input
ends (stdio) or when ``stop`` says so (HTTP, WebSocket), or raises ``KeyboardInterrupt``
at Ctrl-C; sockets and file descriptors are closed on the way out either way.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import selectors
import socket
import time
from collections.abc import Callable
from typing import Final

from mcp_sansio.events import Event
from mcp_sansio.server import StdioServer
from mcp_sansio.server.http import HttpServer
from mcp_sansio.server.websocket import WebSocketServer
from mcp_sansio_base._sync.serve import Serving, Stop
from mcp_sansio_base.listening import ACCEPT_RETRY_DELAY, LINGER_SECONDS, Lingering, accept_ready, listen
from mcp_sansio_base.relay import RelayThread
from mcp_sansio_base.server import ServerRunner
from mcp_sansio_base.serving import peer_host
from mcp_sansio_base.steploop import StepLoop

__all__ = ["serve_http", "serve_stdio", "serve_websocket"]

_READ: Final = 65536
_STOP_POLL: Final = 0.1  # how often ``stop`` is asked, at the most


def _serve_stdio(endpoint: StdioServer, fd_in: int, fd_out: int,
                 on_event: Callable[[Event], None] | None, handler_threads: int) -> None:

    out = _FdWriter(fd_out, endpoint.data_to_send)
    loop = StepLoop(time.monotonic, out.write, threads=handler_threads)
    runner = ServerRunner(endpoint, loop, on_event)
    with selectors.DefaultSelector() as selector, _Waker(selector, loop):
        watched = False
        with contextlib.suppress(OSError, ValueError):  # a regular file (never blocks) is not watched
            selector.register(fd_in, selectors.EVENT_READ, _IN)
            watched = True
        out.selector = selector
        try:
            while not runner.terminated:  # (the session was abandoned: its input may never end)
                events = _wait(selector, loop, None, None if watched else time.monotonic())
                _written(events, out, runner)
                if runner.terminated:
                    break
                if watched and not any(key is _IN for key, _ in events):
                    continue  # woken by a worker thread, a timer, or a writable stdout
                try:
                    data = os.read(fd_in, _READ)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data and runner.unsettled:  # a plain def in flight, or a held result, is
                    if watched:                    # answered as if inline
                        selector.unregister(fd_in)
                    while runner.unsettled:
                        _written(_wait(selector, loop, None, None), out, runner)
                endpoint.receive_data(data, time.monotonic())
                runner.pump()
                if not data:
                    break
            loop.run_ready()  # cancelled handlers end
        finally:
            runner.cancel_all()
            loop.run_ready()
            out.finish(write=not endpoint.abandoned)  # a client that does not read would never take it
            loop.close()


_IN: Final = "stdin"
_OUT: Final = "stdout"


def _written(events: list[tuple[object, int]], out: _FdWriter, runner: ServerRunner) -> None:
    """Stdout can take more: write, and let what waits for a drain go on."""
    if any(key is _OUT for key, _ in events):
        out.writable()
        runner.flush()


class _FdWriter:
    """Writes stdio output without blocking the loop, taking it from the core only when the
    last piece is written (what waits stays counted there, see ``mcp_sansio.server.flow``)."""

    def __init__(self, fd: int, source: Callable[[], bytes]) -> None:
        self._fd = fd
        self._source = source
        self._pending = bytearray()
        self._closed = False
        self._blocking = os.get_blocking(fd)
        self.selector: selectors.BaseSelector | None = None
        self._watching = False
        with contextlib.suppress(OSError):
            os.set_blocking(fd, False)

    def write(self) -> None:
        """Write what waits; once it is all written, take (and write) what the core holds."""
        while not self._closed:
            if not self._pending:
                self._pending += self._source()
                if not self._pending:
                    return
            self._push()
            if self._pending:
                return  # the pipe is full: the selector says when it takes more

    def writable(self) -> None:
        self._push()
        if not self._pending:
            self.write()

    def _push(self) -> None:
        while self._pending and not self._closed:
            try:
                written = os.write(self._fd, self._pending)
            except BlockingIOError:
                break
            except OSError:  # the client is gone: the read side will see EOF
                self._closed = True
                self._pending.clear()
                break
            del self._pending[:written]
        self._watch(bool(self._pending))

    def _watch(self, on: bool) -> None:
        if on == self._watching or self.selector is None:
            return
        try:
            if on:
                self.selector.register(self._fd, selectors.EVENT_WRITE, _OUT)
            else:
                self.selector.unregister(self._fd)
            self._watching = on
        except (OSError, ValueError, KeyError):  # a regular file: just block
            os.set_blocking(self._fd, True)
            self._push()

    def finish(self, *, write: bool = True) -> None:
        """Write what is left (blocking) unless told not to, and give the descriptor its mode back."""
        self._watch(False)
        with contextlib.suppress(OSError):
            if write:
                os.set_blocking(self._fd, True)
                self._pending += self._source()
                self._push()
            os.set_blocking(self._fd, self._blocking)


class _Waker:
    """A socket pair in the selector that worker threads write to, to end its wait."""

    def __init__(self, selector: selectors.BaseSelector, loop: StepLoop) -> None:
        self._selector = selector
        self._loop = loop
        self._pair: tuple[socket.socket, socket.socket] | None = None

    def __enter__(self) -> _Waker:
        if self._loop.threads:
            self._pair = socket.socketpair()
            for sock in self._pair:
                sock.setblocking(False)
            self._selector.register(self._pair[0], selectors.EVENT_READ, _WAKE)
            send = self._pair[1]

            def wake() -> None:
                with contextlib.suppress(OSError):  # full: a wake-up is pending anyway
                    send.send(b"\0")

            self._loop.wake = wake
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pair is not None:
            self._loop.wake = lambda: None
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(self._pair[0])
            for sock in self._pair:
                sock.close()


_WAKE: Final = "wake"


def _wait(selector: selectors.BaseSelector, loop: StepLoop, stop: Stop | None,
          also: float | None = None) -> list[tuple[object, int]]:
    """Wait for I/O, the next timer, ``also`` (or ``stop``'s next look); fire what is due."""
    loop.run_ready()
    at = min((t for t in (loop.next_timer(), also) if t is not None), default=None)
    timeout = None if at is None else max(0.0, at - time.monotonic())
    if stop is not None:
        timeout = _STOP_POLL if timeout is None else min(timeout, _STOP_POLL)
    events = []
    for key, mask in selector.select(timeout) if selector.get_map() else []:
        if key.data is _WAKE:  # drain the wake-ups; what woke us is in the loop's queue
            with contextlib.suppress(OSError):
                key.fileobj.recv(4096)  # type: ignore[union-attr]  # the waker's socket
        else:
            events.append((key.data, mask))
    loop.fire_due()
    loop.run_ready()
    return events


class _Listening:
    """A listening socket, and when to accept on it again after running out of descriptors."""

    __slots__ = ("paused_until", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.paused_until = math.inf


class _Conn:
    __slots__ = ("id", "linger", "linger_until", "out", "sock")

    def __init__(self, conn: int, sock: socket.socket) -> None:
        self.id = conn
        self.sock = sock
        self.out = bytearray()
        self.linger_until = math.inf  # finite once the core closed it: write the rest, (drain,) close
        self.linger = True  # drain: end our side and read until the client's end first


def _serve_connections(endpoint: HttpServer | WebSocketServer, host: str, port: int,
                       on_event: Callable[[Event], None] | None, ready: Callable[[int], None] | None,
                       handler_threads: int, stop: Stop | None) -> None:
    """Accept connections for a connection-oriented transport until ``stop``."""
    conns: dict[int, _Conn] = {}
    lingering: dict[int, _Conn] = {}
    held = Lingering()  # the same connections: at most MAX_LINGERING of them
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
            if not conn.linger:
                close(conn)
                return
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_WR)  # the client sees the end, then closes
        watch(conn)

    def close(conn: _Conn) -> None:
        if conns.pop(conn.id, None) is not None:
            endpoint.connection_lost(conn.id, time.monotonic())
        lingering.pop(conn.id, None)
        held.discard(conn.id)
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(conn.sock)
        conn.sock.close()

    def write() -> None:  # after every pump: the relay thread also learns what to follow now
        if relay is not None:
            relay.publish()
        for cid in endpoint.connections_with_data():
            conn = conns.get(cid)
            if conn is None:
                endpoint.data_to_send(cid)  # nobody to write them to
            elif not conn.out:  # taken only once the socket took the last (backpressure)
                conn.out += endpoint.data_to_send(cid)
                flush(conn)
        while (action := endpoint.next_action()) is not None:
            conn = conns.pop(action.connection, None)
            if conn is not None:
                conn.out += endpoint.data_to_send(action.connection)
                conn.linger_until = time.monotonic() + LINGER_SECONDS
                conn.linger = action.linger
                lingering[conn.id] = conn
                held.add(conn.id, functools.partial(close, conn))
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
    loop = StepLoop(time.monotonic, write, threads=handler_threads)
    runner = ServerRunner(endpoint, loop, on_event)
    waker = _Waker(selector, loop).__enter__()
    listeners = [_Listening(sock) for sock in listen(host, port)]
    for listening in listeners:
        selector.register(listening.sock, selectors.EVENT_READ, listening)
    wake_r, wake_w = socket.socketpair()  # the relay thread's doorbell
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    selector.register(wake_r, selectors.EVENT_READ, wake_r)

    def ring() -> None:
        with contextlib.suppress(OSError):  # full: the loop is already woken
            wake_w.send(b"x")

    relay = RelayThread(endpoint, runner, ring) if isinstance(endpoint, HttpServer) else None
    if ready is not None:
        ready(listeners[0].sock.getsockname()[1])
    try:
        while stop is None or not stop.is_set():
            due = min([c.linger_until for c in lingering.values()]
                      + [li.paused_until for li in listeners if li.paused_until < math.inf], default=None)
            for data, mask in _wait(selector, loop, stop, due):
                if isinstance(data, _Listening):
                    try:
                        accepted = accept_ready(data.sock)
                    except OSError:  # out of descriptors: accept again later
                        selector.unregister(data.sock)
                        data.paused_until = time.monotonic() + ACCEPT_RETRY_DELAY
                        accepted = []
                    for sock, address, sending in accepted:
                        sock.setblocking(False)
                        conn = _Conn(endpoint.connection_made(time.monotonic(), peer_host(address),
                                                              sending=sending), sock)
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
            for listening in listeners:
                if listening.paused_until <= now:
                    listening.paused_until = math.inf
                    selector.register(listening.sock, selectors.EVENT_READ, listening)
    finally:
        if relay is not None:
            relay.close()
        endpoint.close(time.monotonic())
        runner.pump()
        runner.cancel_all()
        loop.run_ready()
        loop.close()
        waker.__exit__()
        wake_r.close()
        wake_w.close()
        for conn in [*conns.values(), *lingering.values()]:
            conn.sock.close()
        selector.close()
        for listening in listeners:
            listening.sock.close()


SERVING = Serving(time.monotonic, _serve_stdio, _serve_connections)
serve_stdio = SERVING.serve_stdio
serve_http = SERVING.serve_http
serve_websocket = SERVING.serve_websocket
