"""What a driver tells the core when a socket fails, and what the core makes of it.

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

__all__ = ["ConnectFailure", "SocketFailure", "SocketStage"]


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
