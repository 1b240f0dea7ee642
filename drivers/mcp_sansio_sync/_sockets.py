"""The blocking driver for cores that speak over TCP/TLS connections (HTTP, WebSocket).

Non-blocking sockets, ``selectors`` and ``time.monotonic()`` on one thread, no threads:
a call runs the loop until its answer arrives. Each ``OpenConnection`` is a
non-blocking connect (trying each address in turn), then a non-blocking TLS handshake
when asked for (at once, or on ``StartTls`` in a tunnel through a proxy); the selector
waits on every socket with the core's next deadline as the timeout. Every protocol
decision stays in the core (STYLE.md section 8).
"""

from __future__ import annotations

import contextlib
import enum
import errno
import os
import selectors
import socket
import ssl
import time
from collections import deque
from typing import TYPE_CHECKING, Final, Protocol

from mcp_sansio.connections import CloseConnection, OpenConnection, SocketFailure, SocketStage, StartTls
from mcp_sansio.events import Action
from mcp_sansio_base._sync.handlers import Handlers
from mcp_sansio_base.failures import socket_failure
from mcp_sansio_base.socketpump import SocketPump

from ._loop import BlockingDriver

if TYPE_CHECKING:
    from mcp_sansio.http_transport import HttpClient
    from mcp_sansio.websocket import WebSocketClient

__all__ = ["SocketConnection", "Watched"]

_CHUNK: Final = 65536
_IN_PROGRESS: Final = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY})
_READ: Final = selectors.EVENT_READ
_AddrInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str,
                  tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]]
_WRITE: Final = selectors.EVENT_WRITE


class _State(enum.Enum):
    CONNECTING = "connecting"  # a non-blocking connect is under way
    HANDSHAKING = "handshaking"  # the TLS handshake is under way
    OPEN = "open"


class _Connection:
    """One socket the core asked for, and what the selector should wait for on it."""

    __slots__ = ("action", "addresses", "eof", "events", "sock", "state", "tunneled", "unsent", "want")

    def __init__(self, action: OpenConnection) -> None:
        self.action = action
        self.addresses: deque[_AddrInfo] = deque()  # those still to try
        self.sock: socket.socket | None = None
        self.state = _State.CONNECTING
        self.unsent = bytearray()
        self.eof = False  # the server closed its side: stop reading
        self.want = _WRITE  # what the TLS handshake waits for
        self.events = 0  # what the selector waits for now
        self.tunneled = False  # TLS was started by StartTls: report tls_started

    @property
    def id(self) -> int:
        return self.action.connection


class Watched(Protocol):
    """Another socket a subclass has the selector watch (the OAuth loopback redirect's):
    registered with itself as the key's data, told when the socket is ready."""

    def ready(self, mask: int) -> None:
        """``mask`` (``EVENT_READ``, ``EVENT_WRITE``) is ready; do nothing if already closed."""
        ...


class SocketConnection(SocketPump, BlockingDriver):
    """A blocking client that opens the TCP/TLS connections its core asks for."""

    def __init__(self, core: HttpClient | WebSocketClient, handlers: Handlers,
                 ssl_context: ssl.SSLContext | None) -> None:
        super().__init__(core, handlers)
        self._net = core
        self._selector = selectors.DefaultSelector()
        self._connections: dict[int, _Connection] = {}
        self._failures: deque[tuple[int, SocketFailure]] = deque()  # found while performing actions
        self._ssl = ssl_context  # the system trust store unless given, made when first needed
        self._closed = False

    # ----------------------------------------------------------- lifecycle

    def _start(self) -> None:
        """Connect and complete the handshake; on failure, close everything and raise.

        Raises:
            McpSansioError: the handshake failed (the type says why).
        """
        self._handshake(lambda: self._net.connect(now=time.monotonic()))

    def close(self) -> None:
        """End the session (its ``DELETE`` or closing handshake, bounded by
        ``close_timeout``), then close every socket; no socket is left behind."""
        if self._closed:
            return
        self._closed = True
        try:
            self._net.close(now=time.monotonic())
            self._flush()
            while not self._net.finished:
                self._step()
        finally:  # also when interrupted (KeyboardInterrupt)
            for conn in list(self._connections.values()):
                self._drop(conn)
            self._selector.close()

    # -------------------------------------------------------- Client contract

    def _step(self, wait: bool = True) -> None:
        deadline = self._net.next_deadline()
        for key, mask in self._selector.select(self._timeout(deadline, wait)):
            watched: _Connection | Watched = key.data
            if isinstance(watched, _Connection):
                if self._connections.get(watched.id) is watched:  # not closed by an earlier one
                    self._ready(watched, mask)
                    self._flush()
            else:
                watched.ready(mask)
                self._flush()
        self._fire(deadline)

    def _pump(self) -> None:
        net = self._net
        while True:
            self._hand_out(net)
            if not self._failures:
                return
            connection, failure = self._failures.popleft()
            net.connection_failed(connection, failure, time.monotonic())

    # --------------------------------------------------------------- actions

    def _busy(self, connection: int) -> bool:
        conn = self._connections.get(connection)
        return conn is not None and bool(conn.unsent)

    def _take(self, connection: int, data: bytes) -> None:
        conn = self._connections.get(connection)
        if conn is not None:
            conn.unsent += data
            if conn.state is _State.OPEN:
                self._send(conn)

    def _perform(self, action: Action) -> None:
        if isinstance(action, OpenConnection):
            conn = self._connections[action.connection] = _Connection(action)
            try:
                infos = socket.getaddrinfo(action.host, action.port, type=socket.SOCK_STREAM)
            except OSError as exc:
                self._fail(conn, socket_failure(exc, SocketStage.RESOLVE))
                return
            conn.addresses.extend(infos)
            self._connect_next(conn, SocketFailure(stage=SocketStage.RESOLVE, cause="no address"))
        elif isinstance(action, StartTls):
            tunnel = self._connections.get(action.connection)
            if tunnel is not None and tunnel.sock is not None:
                tunnel.tunneled = True
                self._start_handshake(tunnel, action.server_hostname)
        elif isinstance(action, CloseConnection):
            closing = self._connections.get(action.connection)
            if closing is not None:
                # Its last bytes (a WebSocket Close frame) go out if the socket takes them now.
                closing.unsent += self._net.data_to_send(action.connection)
                if closing.unsent and closing.state is _State.OPEN and closing.sock is not None:
                    with contextlib.suppress(OSError):  # the core is done with it either way
                        closing.sock.send(closing.unsent)
                self._drop(closing)

    def _connect_next(self, conn: _Connection, error: SocketFailure) -> None:
        """Start connecting to the next address, or fail with the last ``error``."""
        while conn.addresses:
            family, kind, proto, _, address = conn.addresses.popleft()
            try:
                sock = socket.socket(family, kind, proto)
            except OSError as exc:  # out of descriptors, or no such address family here
                error = socket_failure(exc, SocketStage.CONNECT)
                continue
            sock.setblocking(False)
            code = sock.connect_ex(address)
            if code == 0 or code in _IN_PROGRESS:
                conn.sock = sock
                self._watch(conn)
                return
            sock.close()
            error = _refused(code)
        self._fail(conn, error)

    def _fail(self, conn: _Connection, failure: SocketFailure) -> None:
        """Report a failure to the core once the actions are performed; forget the socket."""
        self._drop(conn)
        self._failures.append((conn.id, failure))

    def _drop(self, conn: _Connection) -> None:
        """Stop watching ``conn`` and close its socket."""
        if self._connections.get(conn.id) is conn:
            del self._connections[conn.id]
        if conn.sock is not None:
            if conn.events:
                self._selector.unregister(conn.sock.fileno())
                conn.events = 0
            conn.sock.close()
            conn.sock = None

    def _watch(self, conn: _Connection) -> None:
        """Make the selector wait for what ``conn`` needs next."""
        assert conn.sock is not None  # only live sockets are watched
        if conn.state is _State.CONNECTING:
            events = _WRITE
        elif conn.state is _State.HANDSHAKING:
            events = conn.want
        else:
            events = (0 if conn.eof else _READ) | (_WRITE if conn.unsent else 0)
        if events == conn.events:
            return
        fd = conn.sock.fileno()
        if not conn.events:
            self._selector.register(fd, events, conn)
        elif not events:
            self._selector.unregister(fd)
        else:
            self._selector.modify(fd, events, conn)
        conn.events = events

    # ------------------------------------------------------------ readiness

    def _ready(self, conn: _Connection, mask: int) -> None:
        if conn.state is _State.CONNECTING:
            self._connected(conn)
        elif conn.state is _State.HANDSHAKING:
            self._handshake_step(conn)
        else:
            if mask & _WRITE:
                self._send(conn)
            if mask & _READ and self._connections.get(conn.id) is conn:
                self._receive(conn)

    def _connected(self, conn: _Connection) -> None:
        sock = conn.sock
        assert sock is not None
        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self._selector.unregister(sock.fileno())
            conn.events = 0
            sock.close()
            conn.sock = None
            self._connect_next(conn, _refused(code))
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        action = conn.action
        if not action.tls:
            self._made(conn)
            return
        self._start_handshake(conn, action.server_hostname)

    def _start_handshake(self, conn: _Connection, server_hostname: str) -> None:
        """Wrap the connected socket in TLS and start the non-blocking handshake."""
        sock = conn.sock
        assert sock is not None
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        # The TLS socket takes over the descriptor: watch it under its new owner.
        if conn.events:
            self._selector.unregister(sock.fileno())
            conn.events = 0
        conn.sock = self._ssl.wrap_socket(sock, server_hostname=server_hostname,
                                          do_handshake_on_connect=False)
        conn.state = _State.HANDSHAKING
        self._handshake_step(conn)

    def _handshake_step(self, conn: _Connection) -> None:
        sock = conn.sock
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            conn.want = _READ
        except ssl.SSLWantWriteError:
            conn.want = _WRITE
        except OSError as exc:  # ssl.SSLError included
            self._fail(conn, socket_failure(exc, SocketStage.TLS))
            return
        else:
            self._made(conn)
            return
        self._watch(conn)

    def _made(self, conn: _Connection) -> None:
        conn.state = _State.OPEN
        self._watch(conn)
        if conn.tunneled:
            self._net.tls_started(conn.id, time.monotonic())
        else:
            self._net.connection_made(conn.id, time.monotonic())

    def _receive(self, conn: _Connection) -> None:
        """Feed the core what has arrived (TLS may hold decrypted bytes beyond one read)."""
        sock = conn.sock
        assert sock is not None
        while True:
            try:
                data = sock.recv(_CHUNK)
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return
            except ssl.SSLEOFError:  # closed without close_notify: h11 and wsproto frame
                data = b""  # every message, so this is an EOF like any other
            except OSError as exc:
                self._fail(conn, socket_failure(exc, SocketStage.TRANSFER))
                return
            if not data:
                conn.eof = True
                self._watch(conn)
            self._net.receive_data(conn.id, data, time.monotonic())
            if not data or not isinstance(sock, ssl.SSLSocket) or not sock.pending():
                return
            if self._connections.get(conn.id) is not conn:
                return  # the core closed it

    def _send(self, conn: _Connection) -> None:
        """Write what the socket takes now; wait for writability for the rest."""
        sock = conn.sock
        assert sock is not None
        try:
            sent = sock.send(conn.unsent)
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            sent = 0
        except OSError as exc:
            self._fail(conn, socket_failure(exc, SocketStage.TRANSFER))
            return
        del conn.unsent[:sent]
        self._watch(conn)


def _refused(code: int) -> SocketFailure:
    return SocketFailure(stage=SocketStage.CONNECT, cause=os.strerror(code), errno=code)
