"""What every driver's ``serve_*`` decides the same way: the server's secret, the transport
settings a bind address implies (DNS-rebinding protection on loopback), and the endpoint
(how they hold their sockets: :mod:`mcp_sansio_base.listening`).

The arguments of ``serve_stdio`` / ``serve_http`` / ``serve_websocket``, in every driver:

- ``app``: the ``MCPServer``.
- ``secret``: the key sealing ``requestState`` (default: the ``MCP_SANSIO_SECRET``
  environment variable, else 32 random bytes, this process only; give every worker of one
  deployment the same).
- ``stdin`` / ``stdout`` (stdio): the file descriptors (default: the process's).
- ``flow`` (stdio): the bounds of output a client that does not read may cost
  (``mcp_sansio.server.flow.FlowLimits``; HTTP and WebSocket take theirs in ``config``).
- ``host`` / ``port`` (HTTP, WebSocket): where to listen (loopback by default; port 0: any
  free one, which ``ready`` is told).
- ``config``: ``HttpConfig`` / ``WebSocketConfig`` (default: DNS-rebinding protection on a
  loopback bind).
- ``store`` (HTTP): where handshake-era sessions and stream events are kept so that any
  worker serves any session: a URL (``redis://``, ``rediss://``, ``valkey://``; see
  :mod:`mcp_sansio_base.redis_store`) or a store object that is both a ``SessionStore``
  and an ``EventStore`` (default: this process's memory).
- ``on_event``: receives the events the runner does not act on itself (``ClientInitialized``,
  ``ResourceSubscribed``, ...).
- ``ready``: called with the bound port once the server listens.
- ``stop`` (blocking driver): asked at least every 0.1 s; once set, the server returns.
- ``handler_threads``: how many plain ``def`` handlers run at once, each in a worker thread
  so that one that blocks stalls no other client (default: ``DEFAULT_HANDLER_THREADS``, 40,
  on asyncio, anyio and ASGI; 0 on the blocking driver, which then runs them inline on its
  one thread). ``async def`` handlers always run on the loop.

``serve_stdio`` on the process's own stdout keeps that file descriptor for the protocol
alone: while it serves, ``sys.stdout`` and file descriptor 1 go to stderr, so a handler's
``print()`` (or a library's, or a child process's) cannot corrupt the stream.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import sys
import time
from collections.abc import Iterator
from typing import Final, Protocol

from mcp_sansio.server import MCPServer, StdioServer
from mcp_sansio.server.flow import FlowLimits
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio.server.stores import EventStore, SessionStore, TaskStore
from mcp_sansio.server.websocket import WebSocketConfig, WebSocketServer
from mcp_sansio.urls import is_loopback_host

__all__ = ["SECRET_ENV", "STORE_ENV", "SharedStore", "environment_secret", "http_endpoint", "is_loopback",
           "open_shared", "peer_host", "protocol_stdout", "server_entropy", "server_secret", "shared_tasks",
           "stdio_endpoint", "websocket_endpoint"]

_log = logging.getLogger("mcp_sansio.serve")

SECRET_ENV: Final = "MCP_SANSIO_SECRET"
"""The environment variable every worker of a deployment reads its shared secret from."""
STORE_ENV: Final = "MCP_SANSIO_STORE"
"""The environment variable ``mcp-sansio serve --http`` reads its store's URL from when
``--store`` is not given (a password in it stays off the command line, which every local
user reads)."""
_MIN_SECRET: Final = 16  # bytes, as the server core requires


class SharedStore(SessionStore, EventStore, Protocol):
    """One store holding both sessions and events (as ``RedisStore`` does)."""



def environment_secret() -> bytes | None:
    """``$MCP_SANSIO_SECRET`` (UTF-8), or ``None`` when it is not set.

    Raises:
        ValueError: it is set but empty (what a compose file or a shell makes of an unset
            ``${MCP_SANSIO_SECRET}``: each worker would draw its own secret), or shorter
            than 16 bytes.
    """
    env = os.environ.get(SECRET_ENV)
    if env is None:
        return None
    secret = env.encode()
    if not secret:
        raise ValueError(f"${SECRET_ENV} is set but empty: give every worker the same secret of at least "
                         f"16 bytes, or unset it for a secret of this process alone")
    if len(secret) < _MIN_SECRET:
        raise ValueError(f"${SECRET_ENV} holds {len(secret)} bytes; the secret needs at least {_MIN_SECRET}")
    return secret


def server_secret(secret: bytes | None) -> bytes:
    """``secret``, else ``$MCP_SANSIO_SECRET`` (UTF-8), else 32 fresh random bytes (good for
    this process only).

    Raises:
        ValueError: ``$MCP_SANSIO_SECRET`` is set but empty or too short (:func:`environment_secret`).
    """
    if secret is not None:
        return secret
    return environment_secret() or secrets.token_bytes(32)


def open_shared(store: str | SharedStore | None) -> SharedStore | None:
    """The store ``store`` names (a URL opens a :class:`~mcp_sansio_base.redis_store.RedisStore`).

    Raises:
        ValueError: a URL of no store this knows.
    """
    if not isinstance(store, str):
        return store
    from .redis_store import open_store  # redis-py is needed only with a store

    return open_store(store)


def server_entropy() -> bytes:
    """32 fresh bytes from the OS's CSPRNG, this process's alone: session and task ids
    are drawn from them, so no two processes (workers, restarts) share a sequence."""
    return secrets.token_bytes(32)


def _warn_public_bind(host: str, origins: tuple[str, ...] | None) -> None:
    """Tell the operator what a public bind lets in from browsers (none, or everyone)."""
    if is_loopback(host):
        return
    if origins is None:
        _log.warning("serving on %s with allowed_origins=None: any web page may call this server", host)
    elif not origins:
        _log.warning("serving on %s with no allowed origins: requests from web pages (with an Origin "
                     "header) get 403; name the origins of your web clients (--allow-origin)", host)


def peer_host(address: object) -> str | None:
    """The host part of a socket's peer address (``("10.0.0.7", 51234)`` -> ``"10.0.0.7"``),
    which the server's per-client limits count by; ``None`` when there is none (a Unix
    socket)."""
    if isinstance(address, tuple | list) and address and isinstance(address[0], str):
        return address[0]
    return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback name or address in any spelling (DNS-rebinding
    protection applies), also those only the socket layer reads as an address, as the
    bind does (``127.1``, ``0x7f.0.0.1``, ``2130706433``: inet_aton's forms); no name is
    resolved."""
    if is_loopback_host(host):
        return True
    try:
        found = socket.getaddrinfo(host.strip().strip("[]"), None, type=socket.SOCK_STREAM,
                                   flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError, ValueError):
        return False
    return bool(found) and all(is_loopback_host(str(address[4][0])) for address in found)


def stdio_endpoint(app: MCPServer, secret: bytes | None, now: float,
                   flow: FlowLimits | None = None) -> StdioServer:
    """The stdio transport for ``app``; ``now`` is the driver's clock (for the wall offset)."""
    return StdioServer(app, secret=server_secret(secret), entropy=server_entropy(),
                       wall_offset=time.time() - now, flow=flow)


def http_endpoint(app: MCPServer, host: str, secret: bytes | None, config: HttpConfig | None,
                  now: float, store: str | SharedStore | None = None) -> HttpServer:
    """The Streamable HTTP transport for ``app`` bound to ``host`` (``config``, or loopback
    protection on a loopback bind), keeping sessions in ``store``; a public bind that lets no
    browser page in says so."""
    if config is None:
        config = HttpConfig.loopback() if is_loopback(host) else HttpConfig()
    _warn_public_bind(host, config.allowed_origins)
    shared = open_shared(store)
    return HttpServer(app, secret=server_secret(secret), entropy=server_entropy(),
                      wall_offset=time.time() - now, config=config, sessions=shared, events=shared,
                      tasks=shared_tasks(shared))


def shared_tasks(store: object) -> TaskStore | None:
    """``store`` as the task store too, when it is one (``RedisStore`` is)."""
    return store if isinstance(store, TaskStore) else None


def websocket_endpoint(app: MCPServer, host: str, secret: bytes | None, config: WebSocketConfig | None,
                       now: float) -> WebSocketServer:
    """The WebSocket transport for ``app`` bound to ``host``."""
    if config is None:
        config = WebSocketConfig.loopback() if is_loopback(host) else WebSocketConfig()
    _warn_public_bind(host, config.allowed_origins)
    return WebSocketServer(app, secret=server_secret(secret), entropy=server_entropy(),
                           wall_offset=time.time() - now, config=config)


@contextlib.contextmanager
def protocol_stdout(stdout: int | None) -> Iterator[int]:
    """The file descriptor a stdio server writes the protocol to: ``stdout`` when given;
    else a duplicate of the process's stdout, while ``sys.stdout`` and the stdout file
    descriptor itself are pointed at stderr (at ``os.devnull`` when there is no stderr)
    until the block ends (then restored)."""
    if stdout is not None:
        yield stdout
        return
    try:
        fd = sys.stdout.fileno()
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):  # no real stdout (replaced, closed): use it as is
        yield sys.stdout.fileno()
        return
    sink = _stderr_fd()
    real = os.dup(fd)
    saved = sys.stdout
    try:
        os.dup2(sink, fd)
        sys.stdout = sys.stderr  # (None without a stderr: then print() writes nothing)
        yield real
    finally:
        sys.stdout = saved
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()
        os.dup2(real, fd)
        os.close(real)


def _stderr_fd() -> int:
    """Where prints go while stdout carries the protocol: stderr, or ``os.devnull`` when the
    process has none (a closed file descriptor 2)."""
    try:
        err = sys.stderr.fileno()
        os.fstat(err)
    except (OSError, ValueError, AttributeError):
        return os.open(os.devnull, os.O_WRONLY)  # (it then takes the free descriptor 2)
    return err
