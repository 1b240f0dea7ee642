# Generated from drivers/mcp_sansio_base/_async/serve.py by scripts/unasync.py: do not edit.
"""``serve_stdio``, ``serve_http`` and ``serve_websocket``, written once for every driver.

Each builds the transport's core from its arguments (:mod:`mcp_sansio_base.serving`
decides the secret, the settings a bind address implies, the protocol's stdout) and hands
it to the driver's loop, which owns the I/O, the clock and the handlers' tasks: a driver
gives :class:`Serving` its clock, its stdio loop and its accept loop, and exports the
three bound methods. The blocking driver's twin is generated from this file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Protocol

from mcp_sansio.events import Event
from mcp_sansio.server import MCPServer, StdioServer
from mcp_sansio.server.flow import FlowLimits
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio.server.websocket import WebSocketConfig, WebSocketServer

from ..serving import SharedStore, http_endpoint, protocol_stdout, stdio_endpoint, websocket_endpoint

__all__ = ["Serving", "Stop"]

OnEvent = Callable[[Event], None] | None
Ready = Callable[[int], None] | None
Threads = int


class Stop(Protocol):
    """What the blocking driver's ``stop=`` takes: a ``threading.Event`` does."""

    def is_set(self) -> bool:
        """Whether to stop now."""
        ...


class StdioLoop(Protocol):
    """A driver's stdio loop: serve ``endpoint`` on ``fd_in``/``fd_out`` until input ends."""

    def __call__(self, endpoint: StdioServer, fd_in: int, fd_out: int, on_event: OnEvent,
                 handler_threads: Threads) -> None: ...


class AcceptLoop(Protocol):
    """A driver's accept loop: serve ``endpoint`` at ``host:port`` until cancelled (or ``stop``)."""

    def __call__(self, endpoint: HttpServer | WebSocketServer, host: str, port: int, on_event: OnEvent,
                 ready: Ready, handler_threads: Threads,
                 stop: Stop | None,
                 ) -> None: ...


class Serving:
    """The ``serve_*`` functions over one driver's clock, stdio loop and accept loop."""

    def __init__(self, clock: Callable[[], float], stdio: StdioLoop, connections: AcceptLoop) -> None:
        self._clock = clock
        self._stdio = stdio
        self._connections = connections

    def serve_stdio(self, app: MCPServer, *, secret: bytes | None = None, stdin: int | None = None,
                          stdout: int | None = None, on_event: OnEvent = None,
                          flow: FlowLimits | None = None,
                          handler_threads: int = 0,
                          ) -> None:
        """Serve ``app`` on stdin/stdout until stdin closes (the arguments:
        :mod:`mcp_sansio_base.serving`)."""
        with protocol_stdout(stdout) as fd_out:
            fd_in = sys.stdin.fileno() if stdin is None else stdin
            endpoint = stdio_endpoint(app, secret, self._clock(), flow)
            self._stdio(endpoint, fd_in, fd_out, on_event, handler_threads)

    def serve_http(self, app: MCPServer, *, host: str = "127.0.0.1", port: int = 8000,
                         secret: bytes | None = None, config: HttpConfig | None = None,
                         on_event: OnEvent = None, ready: Ready = None,
                         handler_threads: int = 0, stop: Stop | None = None,
                         store: str | SharedStore | None = None) -> None:
        """Serve ``app`` over Streamable HTTP at ``http://host:port/mcp`` until cancelled
        (the blocking driver: until ``stop`` is set; the arguments:
        :mod:`mcp_sansio_base.serving`)."""
        endpoint = http_endpoint(app, host, secret, config, self._clock(), store)
        self._connections(endpoint, host, port, on_event, ready, handler_threads,
                                stop,
                                )

    def serve_websocket(self, app: MCPServer, *, host: str = "127.0.0.1", port: int = 8000,
                              secret: bytes | None = None, config: WebSocketConfig | None = None,
                              on_event: OnEvent = None, ready: Ready = None,
                              handler_threads: int = 0, stop: Stop | None = None,
                              ) -> None:
        """Serve ``app`` over WebSocket (subprotocol ``mcp``) at ``ws://host:port/`` until
        cancelled (the blocking driver: until ``stop`` is set; the arguments:
        :mod:`mcp_sansio_base.serving`)."""
        endpoint = websocket_endpoint(app, host, secret, config, self._clock())
        self._connections(endpoint, host, port, on_event, ready, handler_threads,
                                stop,
                                )
