"""What the core asks a driver to do with sockets, what the driver tells the core when a
socket fails, and what the core makes of that.

The core asks with actions: :class:`OpenConnection`, :class:`StartTls` on an open one (a
tunnel through a proxy), :class:`CloseConnection`; the HTTP pool and the WebSocket client
both use them.

The driver reports a failed socket as data (:class:`SocketFailure`: the stage and the
OS's or TLS library's words), never as an exception or a free-form string, so the core
alone decides what a failure means: a connection that could not be opened
(:class:`ConnectFailure`, which names where it was to go) fails the handshake at once
and is retried within a request's deadline later; a broken open connection is a lost
connection.
"""

from __future__ import annotations

import enum

import msgspec

from .events import Action

__all__ = ["CloseConnection", "ConnectFailure", "OpenConnection", "SocketFailure", "SocketStage", "StartTls"]


class SocketStage(enum.Enum):
    """Where a socket failed."""

    RESOLVE = "resolve"  # looking the host name up (DNS)
    CONNECT = "connect"  # the TCP connect: refused, unreachable, timed out
    TLS = "tls"  # the TLS handshake, certificate checks included
    TRANSFER = "transfer"  # reading or writing a connection that was open


class SocketFailure(msgspec.Struct, frozen=True, kw_only=True):
    """A failed socket, as the driver saw it.

    Attributes:
        stage: where it failed.
        cause: what the OS or the TLS library said (``"Connection refused"``).
        errno: the OS error number, when there is one.
    """

    stage: SocketStage
    cause: str
    errno: int | None = None


class ConnectFailure(msgspec.Struct, frozen=True, kw_only=True):
    """A connection that could not be opened: where it was to go, and why.

    Attributes:
        host: the host name or address connected to (the proxy's, through a proxy).
        port: the port.
        failure: what the driver reported.
        proxy: ``host`` and ``port`` are those of the HTTP proxy, not of the server.
    """

    host: str
    port: int
    failure: SocketFailure
    proxy: bool = False

    @property
    def message(self) -> str:
        """The failure for people: where to, at which stage, and the OS's words."""
        where = f"{'the proxy ' if self.proxy else ''}{self.host}:{self.port}"
        stage = self.failure.stage
        what = ("the name lookup failed: " if stage is SocketStage.RESOLVE
                else "the TLS handshake failed: " if stage is SocketStage.TLS else "")
        return f"cannot connect to {where}: {what}{self.failure.cause}"

    def detail(self) -> dict[str, str]:
        """The fields of ``RequestFailed.detail`` / ``InitializeFailed.detail``."""
        errno = self.failure.errno
        return {"host": self.host, "port": str(self.port), "cause": self.failure.cause,
                "stage": self.failure.stage.value, "errno": "" if errno is None else str(errno)}


class OpenConnection(Action, frozen=True, kw_only=True):
    """Open a TCP connection (with TLS when ``tls``), then call ``connection_made``.

    Through a proxy, ``host`` and ``port`` are the proxy's and ``tls`` is false: TLS with
    the target, if any, comes later with :class:`StartTls`.
    """

    connection: int
    host: str
    port: int
    tls: bool
    server_hostname: str


class StartTls(Action, frozen=True, kw_only=True):
    """Start TLS with ``server_hostname`` on the open ``connection`` (a tunnel through a
    proxy), verifying its certificate; then call ``tls_started``, or ``connection_failed``.

    Until then, read nothing from the connection: the handshake's bytes are the TLS layer's.
    """

    connection: int
    server_hostname: str


class CloseConnection(Action, frozen=True, kw_only=True):
    """Close the connection; the pool has forgotten it. Each opened one gets exactly one."""

    connection: int
