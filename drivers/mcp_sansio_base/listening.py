"""How every driver's server holds its sockets: it listens with one backlog, accepts in
batches (closing at once the connections whose client is already gone), and after the
core closes a connection lingers boundedly: for ``LINGER_SECONDS`` at most, and only
``MAX_LINGERING`` connections at once.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from typing import Final

__all__ = ["ACCEPT_RETRY_DELAY", "LINGER_SECONDS", "LISTEN_BACKLOG", "MAX_LINGERING", "Lingering",
           "accept_ready", "listen"]

LISTEN_BACKLOG: Final = 1024
"""How many connections the kernel holds for a server before it accepts them, on every
driver (anyio asked for 65,536, asyncio's default is 100). A flood of connections keeps
this queue full; a client behind them waits until they are accepted, so every driver
accepts up to this many per wake-up (:func:`accept_ready`) and closes those already gone
without a task, a transport or a word to the core."""


def listen(host: str, port: int) -> list[socket.socket]:
    """Non-blocking listening sockets on every address ``host`` names (one port for all:
    with port 0 the first one's), each with a backlog of :data:`LISTEN_BACKLOG`.

    Raises:
        OSError: an address could not be resolved or bound (nothing is left open).
    """
    found = sorted({(info[0], info[4]) for info in socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)})
    sockets: list[socket.socket] = []
    try:
        for n, (family, address) in enumerate(found):
            try:
                sock = socket.create_server((address[0], port, *address[2:]), family=family,
                                            backlog=LISTEN_BACKLOG)
            except OSError as exc:  # a family this host has not enabled (as asyncio skips it)
                if exc.errno not in _NOT_HERE or (n == len(found) - 1 and not sockets):
                    raise
                continue
            sockets.append(sock)
            sock.setblocking(False)
            port = sock.getsockname()[1]
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


_NOT_HERE: Final = frozenset({errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT})


_OUT_OF_RESOURCES: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def accept_ready(listener: socket.socket) -> list[tuple[socket.socket, object, bool]]:
    """The connections waiting on ``listener`` (up to :data:`LISTEN_BACKLOG`), with their
    peer addresses and whether their client has sent bytes already (the core's
    ``connection_made(..., sending=True)``: a request arriving, not an idle connection to
    close first). Those whose client is already gone (it closed or reset without sending
    a byte: a connect-and-close flood) are closed here at once: there is nothing to answer.

    Raises:
        OSError: the process is out of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
            ENOMEM) and nothing was accepted: the driver waits ``ACCEPT_RETRY_DELAY``
            before it accepts again (the listener stays readable meanwhile).
    """
    accepted: list[tuple[socket.socket, object, bool]] = []
    for _ in range(LISTEN_BACKLOG):
        try:
            sock, address = listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            break
        except OSError as exc:
            if exc.errno in _OUT_OF_RESOURCES and not accepted:
                raise
            break
        sending = _sending(sock)
        if sending is None:
            sock.close()
        else:
            accepted.append((sock, address, sending))
    return accepted


ACCEPT_RETRY_DELAY: Final = 1.0
"""How long a driver waits to accept again when :func:`accept_ready` found the process out
of descriptors (as asyncio's own server does)."""


def _sending(sock: socket.socket) -> bool | None:
    """Whether the client of a just-accepted connection has sent bytes already; ``None``
    when it already left without a byte."""
    try:
        return bool(sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)) or None
    except (BlockingIOError, InterruptedError):
        return False
    except OSError:  # reset, or no longer connected
        return None


LINGER_SECONDS: Final = 2.0
"""How long a driver keeps reading (and discarding) from a connection the core closed after
its last bytes (a 400, 413 or 431 page) before it closes the socket: closing with unread
input makes the kernel send a reset, which can destroy that page before the client reads
it (the "lingering close" of RFC 9112 section 9.6). Only when the core's
``CloseConnection.linger`` says the client may still be sending; else it closes at once."""

MAX_LINGERING: Final = 128
"""How many connections the core closed a driver may still hold at once (lingering, or
writing their last bytes to a client that does not read them); they no longer count
against ``max_connections``, so past this the oldest is aborted (:class:`Lingering`)."""


class Lingering:
    """The connections the core closed that a driver still holds, oldest first, at most
    :data:`MAX_LINGERING`: a churn of clients that never close their side costs that
    many descriptors at most, not one for each per ``LINGER_SECONDS``."""

    def __init__(self) -> None:
        self._held: dict[int, Callable[[], None]] = {}

    def add(self, connection: int, abort: Callable[[], None]) -> None:
        """Hold ``connection`` until :meth:`discard`; past the bound, abort the oldest."""
        self._held[connection] = abort
        while len(self._held) > MAX_LINGERING:
            self._held.pop(next(iter(self._held)))()

    def discard(self, connection: int) -> None:
        """``connection`` is closed (no-op if it is not held)."""
        self._held.pop(connection, None)

    def __len__(self) -> int:
        return len(self._held)
