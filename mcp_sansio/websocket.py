"""MCP over WebSocket: one JSON-RPC message per text frame, with wsproto doing RFC 6455.

``WebSocketClient`` is the session over one TCP (or TLS) connection that it upgrades with
subprotocol ``mcp`` (RFC 6455 section 4), as the official Python SDK 1.x serves it
(``mcp.server.websocket``); the MCP specification itself defines no WebSocket transport.
Control frames (section 5.5) and the closing handshake (section 7) are handled here; the
driver only opens the socket it is told to and copies bytes. Through a proxy, the
connection is a CONNECT tunnel (:class:`~mcp_sansio.proxy.Tunnel`), with TLS started in
it for ``wss``. This is the only module that
imports wsproto. wsproto draws the handshake nonce and the frame masks from
``os.urandom`` itself, as section 10.3 requires a strong source: our output bytes are
therefore not reproducible, and tests decode them with a wsproto server instead.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Mapping
from typing import Final

import h11
from wsproto import ConnectionType, WSConnection
from wsproto import events as wsevents
from wsproto.connection import ConnectionState
from wsproto.frame_protocol import CloseReason
from wsproto.utilities import ProtocolError

from .config import ClientConfig
from .connections import CloseConnection, ConnectFailure, OpenConnection, SocketFailure, StartTls
from .errors import LocalProtocolError
from .events import Action, AuthorizationRequired, DiscardReason, FailureReason
from .front import SessionFront
from .machines import step
from .proxy import ProxySettings, Tunnel, TunnelFailed
from .session import ClientSession, Link
from .types import ClientCapabilities
from .urls import Url, parse_url
from .www_authenticate import parse_www_authenticate

__all__ = ["PEER_TRIGGERS", "TRANSITIONS", "State", "Trigger", "WebSocketClient", "parse_ws_url"]

_CONNECTION: Final = 1
_SUBPROTOCOL: Final = "mcp"
_SCHEMES: Final = {"ws": "http", "wss": "https"}
# Headers the handshake sets itself (RFC 6455 section 4.1), or that no GET upgrade carries.
_RESERVED: Final = frozenset({
    "host", "upgrade", "connection", "content-length", "transfer-encoding", "sec-websocket-key",
    "sec-websocket-version", "sec-websocket-protocol", "sec-websocket-extensions",
})
# How much of a refusal's body (or of a binary message) is kept, for the message.
_EXCERPT: Final = 2048
# The largest response head to the upgrade request (h11's default bound).
_MAX_HEAD: Final = 16 * 1024
# A UTF-8 decoder holds back at most the first 3 bytes of a character.
_UTF8_HELD: Final = 3
# wsproto connection states in which the frame we just read was a real Close frame.
_CLOSE_RECEIVED: Final = frozenset({ConnectionState.REMOTE_CLOSING, ConnectionState.CLOSED})


class State(enum.Enum):
    """Where the one connection is in its life."""

    NEW = "new"  # connect() not called yet
    CONNECTING = "connecting"  # OpenConnection issued
    TUNNELING = "tunneling"  # connected to a proxy, CONNECT out, awaiting its answer
    SECURING = "securing"  # the tunnel is open, StartTls issued
    UPGRADING = "upgrading"  # the upgrade request is out; awaiting 101
    REJECTED = "rejected"  # the server answered with another status: reading its body's start
    OPEN = "open"
    CLOSING = "closing"  # our Close frame is out; awaiting the server's (bounded)
    DRAINING = "draining"  # both Close frames exchanged; awaiting the server's EOF (bounded)
    DONE = "done"  # CloseConnection issued (or nothing was ever opened)


class Trigger(enum.Enum):
    """What moves the connection between states; ``RECV_*`` come from the peer."""

    CONNECT = "connect"
    CONNECTED = "connected"  # to the server: the upgrade goes out
    CONNECTED_TO_PROXY = "connected-to-proxy"  # CONNECT goes out
    RECV_TUNNEL = "recv-tunnel"  # the proxy opened the tunnel (plain ws): the upgrade goes out
    START_TLS = "start-tls"  # the proxy opened the tunnel (wss): TLS with the server first
    TLS_STARTED = "tls-started"
    RECV_ACCEPT = "recv-accept"  # 101
    RECV_REFUSAL = "recv-refusal"  # any other status
    SEND_CLOSE = "send-close"
    RECV_CLOSE = "recv-close"
    END = "end"  # CloseConnection (or nothing to close)


PEER_TRIGGERS: Final = frozenset({Trigger.RECV_TUNNEL, Trigger.RECV_ACCEPT, Trigger.RECV_REFUSAL,
                                   Trigger.RECV_CLOSE})
"""The triggers the peer causes (an illegal one is a ``RemoteProtocolError``)."""

TRANSITIONS: Final[Mapping[tuple[State, Trigger], State]] = {
    (State.NEW, Trigger.CONNECT): State.CONNECTING,
    (State.CONNECTING, Trigger.CONNECTED): State.UPGRADING,
    (State.CONNECTING, Trigger.CONNECTED_TO_PROXY): State.TUNNELING,
    (State.TUNNELING, Trigger.RECV_TUNNEL): State.UPGRADING,
    (State.TUNNELING, Trigger.START_TLS): State.SECURING,
    (State.SECURING, Trigger.TLS_STARTED): State.UPGRADING,
    (State.UPGRADING, Trigger.RECV_ACCEPT): State.OPEN,
    (State.UPGRADING, Trigger.RECV_REFUSAL): State.REJECTED,
    (State.OPEN, Trigger.SEND_CLOSE): State.CLOSING,
    # Both ends' Close frames are out: the server closes TCP first (RFC 6455 section 7.1.1).
    (State.OPEN, Trigger.RECV_CLOSE): State.DRAINING,
    (State.CLOSING, Trigger.RECV_CLOSE): State.DRAINING,
    **{(state, Trigger.END): State.DONE for state in State},
}
"""Every legal move of the connection (rendered in docs/state-machines.md)."""


# Nothing more the server sends is read: after both Close frames (RFC 6455 section 7.1.1) or the end.
_UNREAD: Final = frozenset({State.DRAINING, State.DONE})
# The connection is not open yet: initialize_timeout ends these.
_OPENING: Final = frozenset({State.CONNECTING, State.TUNNELING, State.SECURING, State.UPGRADING})
# Where an opening that timed out stalled, for the message.
_STALLED: Final = {
    State.CONNECTING: "the connection (TCP, and TLS for wss) did not open",
    State.TUNNELING: "the proxy did not answer CONNECT",
    State.SECURING: "the TLS handshake in the proxy's tunnel did not complete",
    State.UPGRADING: "the server did not answer the upgrade request",
}


def parse_ws_url(text: str) -> Url:
    """Parse a ``ws``/``wss`` URL into the URL of its upgrade request.

    RFC 6455 section 3 gives ``ws`` and ``wss`` the ports and syntax of ``http`` and
    ``https``, so the result has scheme ``http`` or ``https`` (``https`` means TLS).

    Raises:
        LocalProtocolError: the scheme is not ws or wss, or :func:`parse_url` refuses the rest.
    """
    scheme, colon, rest = text.partition(":")
    http = _SCHEMES.get(scheme.lower()) if colon else None
    if http is None:
        raise LocalProtocolError(f"invalid WebSocket URL {text[:200]!r}: the scheme must be ws or wss")
    return parse_url(f"{http}:{rest}")


class WebSocketClient(SessionFront):
    """An MCP client over one WebSocket connection.

    Driver contract (as :class:`~mcp_sansio.http_transport.HttpClient`): perform each
    :meth:`next_action` (``OpenConnection`` / ``StartTls`` / ``CloseConnection``; before
    closing, write what :meth:`data_to_send` still holds, such as our Close frame), report
    :meth:`connection_made` / :meth:`tls_started` / :meth:`connection_failed`, feed :meth:`receive_data`
    (``b""`` at EOF), write :meth:`data_to_send` for each of :meth:`connections_with_data`,
    and call :meth:`handle_timeout` at :meth:`next_deadline`. After :meth:`close`, stop
    once :attr:`finished` is true.

    ``initialize`` is queued by :meth:`connect` and goes out as soon as the upgrade
    completes, so ``initialize_timeout`` bounds the TCP connect, TLS, the upgrade and the
    ``initialize`` exchange together. ``close_timeout`` bounds the closing handshake.
    Keepalive pings are off unless ``ping_interval`` is set: then a Ping goes out that long
    after the connection opened or the last Pong came, and no Pong within
    ``ping_timeout`` means the connection is lost.
    """

    def __init__(
        self,
        url: str,
        *,
        config: ClientConfig | None = None,
        capabilities: ClientCapabilities | None = None,
        headers: Mapping[str, str] | None = None,
        max_message_bytes: int | None = None,
        ping_interval: float | None = None,
        ping_timeout: float | None = None,
        proxies: ProxySettings | None = None,
    ) -> None:
        """Create the client; nothing is sent until :meth:`connect`.

        Args:
            url: the ``ws://`` or ``wss://`` URL of the server.
            config: limits and timeouts.
            capabilities: what the client declares in ``initialize``.
            headers: extra headers for the upgrade request (API keys, ...).
            max_message_bytes: the largest message accepted from the server, however it
                is fragmented (default ``config.max_response_bytes``).
            ping_interval: seconds between keepalive pings; ``None`` sends none.
            ping_timeout: seconds a Pong may take (default ``ping_interval``).
            proxies: whether the connection goes through a CONNECT tunnel (``ws`` URLs
                use the ``http`` proxy, ``wss`` the ``https`` one); ``None``: directly.

        Raises:
            LocalProtocolError: ``url`` is not a ws(s) URL, a header is malformed or one
                the handshake sets itself, or a limit is not positive.
        """
        cfg = config or ClientConfig()
        target = parse_ws_url(url)
        super().__init__(ClientSession(cfg, capabilities or ClientCapabilities(), Link(send=self._send_text)))
        self.url = f"{'wss' if target.scheme == 'https' else 'ws'}://{target.authority}{target.target}"
        self._max_message = cfg.max_response_bytes if max_message_bytes is None else max_message_bytes
        timeout = ping_interval if ping_timeout is None else ping_timeout
        if self._max_message < 1 or any(t is not None and t <= 0 for t in (ping_interval, timeout)):
            raise LocalProtocolError("max_message_bytes, ping_interval and ping_timeout must be positive")
        # (interval, timeout) of the keepalive, when it is on.
        self._keepalive = None if ping_interval is None or timeout is None else (ping_interval, timeout)
        tls = target.scheme == "https"
        self._target = target
        proxy = None if proxies is None else proxies.select(target)
        if proxy is None:
            self._tunnel: Tunnel | None = None
            self._open = OpenConnection(connection=_CONNECTION, host=target.host, port=target.port,
                                        tls=tls, server_hostname=target.host)
        else:
            self._tunnel = Tunnel(proxy, target.host, target.port, tls=tls, max_header_bytes=_MAX_HEAD)
            self._open = OpenConnection(connection=_CONNECTION, host=proxy.host, port=proxy.port,
                                        tls=False, server_hostname=proxy.host)
        self._ws = WSConnection(ConnectionType.CLIENT)
        # Built now, so that a bad header fails here rather than once connected.
        self._upgrade = _upgrade_request(self._ws, target, headers or {}, cfg.user_agent)
        self._state = State.NEW  # moved only by _move, along TRANSITIONS
        self._subprotocol: str | None = None
        self._out = bytearray()  # bounded by config.max_send_queue_bytes (see _enqueue)
        self._pong: bytes | None = None  # the payload of the latest Ping, answered at the next write
        self._actions: deque[Action] = deque()
        self._held: list[bytes] = []  # messages sent before the upgrade completed
        self._message = bytearray()  # the text message being reassembled
        self._binary = bytearray()  # the start of the binary message being discarded
        self._head_room = _MAX_HEAD  # response head bytes still allowed
        self._status = 0  # of a refused upgrade
        self._auth: dict[str, str] = {}  # WWW-Authenticate parameters of a 401/403
        self._body = bytearray()  # the start of a refusal's body
        self._closing_at: float | None = None
        self._ping_at: float | None = None
        self._pong_by: float | None = None
        self._pings = 0
        self._ping_payload = b""

    # ------------------------------------------------------------------ queries

    @property
    def subprotocol(self) -> str | None:
        """The subprotocol the server accepted (``"mcp"``), once open; ``None`` if it named none."""
        return self._subprotocol

    @property
    def finished(self) -> bool:
        """The connection is closed (after :meth:`close`, or because it failed)."""
        return self._state is State.DONE

    def next_action(self) -> Action | None:
        """The connection to open or close, or ``None``."""
        return self._actions.popleft() if self._actions else None

    def data_to_send(self, connection: int) -> bytes:
        """Drain the bytes to write on ``connection`` (empty when there are none).

        Pings received since the last call are answered here, with one Pong for the latest
        (RFC 6455 section 5.5.3), so a server that floods pings and reads slowly gets one
        Pong per write, never a backlog. Call it when the socket can take more: what waits
        here is bounded by ``max_send_queue_bytes``, and nothing else is.

        Raises:
            LocalProtocolError: ``connection`` was never opened.
        """
        self._live(connection)
        pong, self._pong = self._pong, None
        data = bytes(self._out) if pong is None else self._ws.send(wsevents.Pong(payload=pong)) + self._out
        self._out.clear()
        return data

    def connections_with_data(self) -> list[int]:
        """The connections with bytes waiting in :meth:`data_to_send`; changes nothing."""
        return [_CONNECTION] if self._out or self._pong is not None else []

    def next_deadline(self) -> float | None:
        """The earliest of the session's deadlines, the keepalive and the close bound."""
        candidates = [d for d in (self._session.next_deadline(), self._ping_at, self._pong_by,
                                  self._closing_at) if d is not None]
        return min(candidates) if candidates else None

    # ------------------------------------------------------------- driver input

    def connect(self, *, now: float) -> None:
        """Open the connection; ``initialize`` follows the upgrade.

        Raises:
            LocalProtocolError: already connected, or closed.
        Actions: ``OpenConnection``.
        """
        if self._state is not State.NEW:
            raise LocalProtocolError(f"cannot connect: the connection is {self._state.value}")
        self._session.initialize(now=now)  # WebSocket is a handshake-era transport: no stateless probe
        self._move(Trigger.CONNECT)
        self._actions.append(self._open)

    def connection_made(self, connection: int, now: float) -> None:
        """The driver connected (TLS included): the upgrade request is queued (or the
        CONNECT, through a proxy).

        Raises:
            LocalProtocolError: ``connection`` was never opened, or is connected already.
        """
        if not self._live(connection):
            return
        if self._state is not State.CONNECTING:
            raise LocalProtocolError(f"connection {connection} is already connected")
        if self._tunnel is None:
            self._start_upgrade(Trigger.CONNECTED)
        else:
            self._move(Trigger.CONNECTED_TO_PROXY)
            self._out += self._tunnel.request

    def tls_started(self, connection: int, now: float) -> None:
        """The driver completed the TLS handshake ``StartTls`` asked for: the upgrade is queued.

        Raises:
            LocalProtocolError: ``connection`` was never opened, or no TLS was asked for.
        """
        if not self._live(connection):
            return
        if self._state is not State.SECURING:
            raise LocalProtocolError(f"connection {connection} is not starting TLS")
        self._start_upgrade(Trigger.TLS_STARTED)

    def connection_failed(self, connection: int, failure: SocketFailure, now: float) -> None:
        """Connecting, reading or writing failed.

        Raises:
            LocalProtocolError: ``connection`` was never opened.
        Events: ``InitializeFailed(reason=CONNECT_FAILED)`` when the connection could not be
        opened (name lookup, TCP connect, TLS); else ``RequestFailed(reason=CONNECTION_LOST)``
        for each pending request (or ``InitializeFailed``); then ``ConnectionTerminated``.
        Actions: ``CloseConnection``.
        """
        if not self._live(connection):
            return
        state = self._state
        if state is State.CONNECTING or state is State.SECURING:
            opened = self._open
            unreachable = (ConnectFailure(host=self._target.host, port=self._target.port, failure=failure)
                           if state is State.SECURING else  # TLS with the server, in the proxy's tunnel
                           ConnectFailure(host=opened.host, port=opened.port, failure=failure,
                                          proxy=self._tunnel is not None))
            self._abort(unreachable.message, now, FailureReason.CONNECT_FAILED, detail=unreachable.detail())
            return
        self._abort(f"the WebSocket connection to {self.url} failed: {failure.cause}", now)

    def receive_data(self, connection: int, data: bytes, now: float) -> None:
        """Bytes read from ``connection``; ``b""`` at EOF.

        Raises:
            LocalProtocolError: ``connection`` was never opened, or is not connected yet
                (or starting TLS).
        Events: whatever the messages cause; a proxy refusing the tunnel is
        ``InitializeFailed(reason=PROXY_ERROR)``; a refused upgrade is ``InitializeFailed``
        (HTTP_ERROR, or AUTHORIZATION_REQUIRED after ``AuthorizationRequired``); a message
        over ``max_message_bytes`` fails the connection with MESSAGE_TOO_LARGE, a protocol
        violation with PROTOCOL_ERROR, a drop with CONNECTION_LOST. Actions:
        ``CloseConnection`` once the connection is over.
        """
        if not self._live(connection):
            return
        if self._state is State.CONNECTING or self._state is State.SECURING:
            raise LocalProtocolError(f"connection {connection} is not connected yet")
        if self._state is State.TUNNELING:
            self._tunnel_data(data, now)
            return
        if not data:
            self._on_eof(now)
            return
        # Fed in slices so that what happens does not depend on how the bytes were split:
        # see _room.
        while data and self._state not in _UNREAD:
            size = self._room(len(data))
            self._feed(data[:size], now)
            data = data[size:]

    def handle_timeout(self, now: float) -> None:
        """Fire the session's deadlines, the keepalive and the close bound when due.

        Events: ``InitializeFailed(reason=TIMEOUT)`` when the connection did not open
        within ``initialize_timeout``; the session's timeouts; CONNECTION_LOST failures
        when a Pong is overdue. Actions: ``CloseConnection`` when the wait is over.
        """
        negotiation = self._session.negotiation
        init_at = negotiation.deadline
        if init_at is not None and init_at <= now:
            if self._state is State.REJECTED:
                self._rejected(now)  # report what the refusal said so far
            elif self._state in _OPENING:
                elapsed = now - negotiation.connect_at
                self._abort(f"could not open the WebSocket to {self.url} within {elapsed:.1f} s"
                            f" (initialize_timeout {self.config.initialize_timeout:g} s):"
                            f" {_STALLED[self._state]}", now, FailureReason.TIMEOUT)
        self._session.handle_timeout(now)
        keepalive = self._keepalive
        if keepalive is not None and self._pong_by is not None and self._pong_by <= now:
            self._abort(f"the server did not answer a ping within {keepalive[1]:g} s", now)
        elif keepalive is not None and self._ping_at is not None and self._ping_at <= now:
            self._pings += 1
            self._ping_payload = str(self._pings).encode()
            self._ping_at = None
            self._pong_by = now + keepalive[1]
            # Last: a server that stopped reading is dropped here, which disarms both.
            self._enqueue(self._ws.send(wsevents.Ping(payload=self._ping_payload)), now)
        if self._closing_at is not None and self._closing_at <= now:
            self._finish()

    def close(self, *, now: float, message: str = "the client closed the connection") -> None:
        """End the session: pending requests fail, then the closing handshake runs.

        Poll :attr:`finished`; :meth:`next_deadline` bounds the wait (``close_timeout``).
        A no-op once closing.

        Events: ``RequestFailed(reason=CONNECTION_LOST)`` for each pending request (or
        ``InitializeFailed`` during the handshake), ``ConnectionTerminated``. Actions:
        ``CloseConnection`` (at once unless open).
        """
        state = self._state
        if state in (State.CLOSING, State.DRAINING, State.DONE):
            return
        self._session.connection_lost(message, now=now)
        if state is not State.OPEN:
            self._finish()
            return
        self._out += self._ws.send(wsevents.CloseConnection(code=CloseReason.NORMAL_CLOSURE))
        self._move(Trigger.SEND_CLOSE)
        self._closing_at = now + self.config.close_timeout
        self._ping_at = self._pong_by = self._pong = None

    # -------------------------------------------------------- session hooks

    def _send_text(self, message: bytes, request_id: int | None, now: float) -> None:
        if self._state is State.OPEN:
            self._enqueue(self._ws.send(wsevents.TextMessage(data=message.decode())), now)
        else:  # only initialize, until the upgrade completes: once closed, the session sends nothing
            self._held.append(message)

    def _enqueue(self, frame: bytes, now: float) -> None:
        """Queue ``frame``, unless what already waits would pass ``max_send_queue_bytes``:
        then the server has stopped reading, and the connection is dropped."""
        limit = self.config.max_send_queue_bytes
        waiting = len(self._out)
        if waiting and waiting + len(frame) > limit:
            self._abort(f"the server stopped reading: {waiting} bytes wait to be sent and"
                        f" {len(frame)} more would pass max_send_queue_bytes ({limit})",
                        now, FailureReason.SEND_QUEUE_FULL)
            return
        self._out += frame

    # ------------------------------------------------------------------ proxy

    def _tunnel_data(self, data: bytes, now: float) -> None:
        """Feed the proxy's answer to CONNECT; once the tunnel is open, use it."""
        assert self._tunnel is not None  # TUNNELING has one
        outcome = self._tunnel.receive_data(data)
        if outcome is None:
            return
        if isinstance(outcome, TunnelFailed):
            if outcome.status is None:  # the proxy closed or spoke nonsense: a connection failure
                self._abort(outcome.message, now)
                return
            self._session.fail_handshake(FailureReason.PROXY_ERROR, outcome.message, now=now,
                                         status=outcome.status)
            self._abort(outcome.message, now, FailureReason.PROXY_ERROR)
            return
        self._tunnel = None
        if self._target.scheme == "https":
            self._move(Trigger.START_TLS)
            self._actions.append(StartTls(connection=_CONNECTION, server_hostname=self._target.host))
            return
        self._start_upgrade(Trigger.RECV_TUNNEL)
        if outcome.leftover:
            self.receive_data(_CONNECTION, outcome.leftover, now)

    def _start_upgrade(self, trigger: Trigger) -> None:
        self._move(trigger)
        self._out += self._upgrade

    # ------------------------------------------------------------ wsproto events

    def _room(self, size: int) -> int:
        """How many of ``size`` bytes wsproto may take at once, for split invariance.

        While open (and while upgrading, as frames may follow the head): so little that
        the message being read cannot pass ``max_message_bytes`` before an invalid UTF-8
        byte in the same slice is decoded (wsproto decodes a frame's bytes at once), minus
        the bytes of a character the decoder may hold back. While upgrading, also no more
        than the response head may still take, as h11 bounds only heads it has not seen
        whole.
        """
        state = self._state
        if state is State.OPEN or state is State.UPGRADING:
            room = max(1, self._max_message - len(self._message) - _UTF8_HELD)
            return room if state is State.OPEN else min(room, self._head_room)
        return size

    def _feed(self, data: bytes, now: float) -> None:
        """Give wsproto one slice and act on what it yields."""
        error = None
        try:
            self._ws.receive_data(data)
        except ProtocolError as exc:  # only while upgrading: wsproto wraps h11's errors there
            error = str(exc)
        for event in self._ws.events():  # those before an error too
            self._on_event(event, now)
            if self._state in _UNREAD:
                return
        if error is not None:
            self._on_bad_handshake(error, now)
        elif self._state is State.UPGRADING:
            self._head_room -= len(data)
            if not self._head_room:
                self._abort(f"the server's answer to the upgrade has a head over {_MAX_HEAD} bytes",
                            now, FailureReason.PROTOCOL_ERROR)

    def _on_event(self, event: wsevents.Event, now: float) -> None:
        if isinstance(event, wsevents.TextMessage):
            self._on_text(event, now)
        elif isinstance(event, wsevents.BytesMessage):
            self._on_binary(event)
        elif isinstance(event, wsevents.Ping):
            if self._state is State.OPEN:
                self._pong = event.payload  # answered by data_to_send: only the latest needs one
        elif isinstance(event, wsevents.Pong):
            keepalive = self._keepalive
            if keepalive is not None and self._pong_by is not None and event.payload == self._ping_payload:
                self._pong_by = None
                self._ping_at = now + keepalive[0]
        elif isinstance(event, wsevents.CloseConnection):
            self._on_close(event, now)
        elif isinstance(event, wsevents.AcceptConnection):
            self._on_accept(event, now)
        elif isinstance(event, wsevents.RejectConnection):
            self._on_refusal(event, now)
        else:
            assert isinstance(event, wsevents.RejectData)  # a client connection yields no other kind
            self._on_refusal_data(event, now)

    def _on_text(self, event: wsevents.TextMessage, now: float) -> None:
        if self._state is not State.OPEN:
            return  # closing: what else arrives no longer matters
        piece = event.data.encode()
        buf = self._message
        if len(buf) + len(piece) > self._max_message:
            # No size in the message: how much was seen depends on the chunking.
            self._fail_connection(
                f"the server sent a message larger than max_message_bytes ({self._max_message})",
                FailureReason.MESSAGE_TOO_LARGE, CloseReason.MESSAGE_TOO_BIG, now)
            return
        if not event.message_finished:
            buf += piece
        elif buf:
            buf += piece
            data = bytes(buf)
            buf.clear()
            self._session.receive_message(data, now)
        else:
            self._session.receive_message(piece, now)

    def _on_binary(self, event: wsevents.BytesMessage) -> None:
        if self._state is not State.OPEN:
            return
        self._binary += event.data[: _EXCERPT - len(self._binary)]
        if event.message_finished:
            self._session.discard(DiscardReason.NOT_JSON, "a binary message: MCP messages are JSON in text"
                                  " frames", bytes(self._binary))
            self._binary = bytearray()

    def _on_close(self, event: wsevents.CloseConnection, now: float) -> None:
        if self._ws.state not in _CLOSE_RECEIVED:
            # wsproto reports what it could not parse as a Close event, leaving its state.
            if self._state is State.OPEN:
                # The decoder's message names a position, which depends on the chunking.
                utf8 = event.code == CloseReason.INVALID_FRAME_PAYLOAD_DATA
                self._fail_connection(
                    f"the server broke the WebSocket protocol: {'invalid UTF-8' if utf8 else event.reason}",
                    FailureReason.PROTOCOL_ERROR, event.code, now)
            else:
                self._finish()
            return
        if self._state is State.OPEN:  # the server started the closing handshake
            why = f"the server closed the WebSocket ({_describe_close(event)})"
            self._session.connection_lost(why, now=now)
            self._out += self._ws.send(event.response())
            self._closing_at = now + self.config.close_timeout
            self._ping_at = self._pong_by = self._pong = None
        self._move(Trigger.RECV_CLOSE)

    def _on_accept(self, event: wsevents.AcceptConnection, now: float) -> None:
        self._move(Trigger.RECV_ACCEPT)
        self._subprotocol = event.subprotocol
        if self._keepalive is not None:
            self._ping_at = now + self._keepalive[0]
        held, self._held = self._held, []
        for message in held:
            self._send_text(message, None, now)

    def _on_refusal(self, event: wsevents.RejectConnection, now: float) -> None:
        self._move(Trigger.RECV_REFUSAL)
        self._status = event.status_code
        if event.status_code in (401, 403):
            header = b", ".join(v for k, v in event.headers if k.lower() == b"www-authenticate")
            challenges = parse_www_authenticate(header.decode("latin-1"))
            bearer = next((c for c in challenges if c.scheme == "bearer"), next(iter(challenges), None))
            self._auth = dict(bearer.params) if bearer is not None else {}
            self._session.add_event(AuthorizationRequired(
                status=event.status_code, scheme=bearer.scheme if bearer else "", params=self._auth))
        if not event.has_body:
            self._rejected(now)

    def _on_refusal_data(self, event: wsevents.RejectData, now: float) -> None:
        self._body += event.data[: _EXCERPT - len(self._body)]
        if event.body_finished or len(self._body) >= _EXCERPT:
            self._rejected(now)

    # ---------------------------------------------------------------- endings

    def _rejected(self, now: float) -> None:
        """Report the refused upgrade with the start of its body, and close."""
        status = self._status
        excerpt = bytes(self._body[:300]).decode("utf-8", "replace").strip()
        if status in (401, 403):
            reason = FailureReason.AUTHORIZATION_REQUIRED
            message = f"the server requires authorization (HTTP {status})"
            self._session.fail_handshake(reason, message, now=now, status=status, detail=self._auth)
        else:
            reason = FailureReason.HTTP_ERROR
            message = f"HTTP {status} from {self.url}" + (f": {' '.join(excerpt.split())}" if excerpt else "")
            self._session.fail_handshake(reason, message, now=now, status=status, detail={"body": excerpt})
        self._abort(message, now, reason)

    def _on_bad_handshake(self, detail: str, now: float) -> None:
        if self._state is State.REJECTED:
            self._rejected(now)  # a malformed refusal body: report what we have
        else:
            self._abort(f"the WebSocket handshake with {self.url} failed: {detail}", now,
                        FailureReason.PROTOCOL_ERROR)

    def _on_eof(self, now: float) -> None:
        state = self._state
        if state is State.UPGRADING:
            self._abort("the server closed the connection during the WebSocket handshake", now)
        elif state is State.REJECTED:
            self._rejected(now)
        elif state is State.OPEN:
            self._abort("the server closed the connection without a WebSocket Close frame", now)
        else:  # closing: the server's side is done
            self._finish()

    def _fail_connection(self, message: str, reason: FailureReason, code: int, now: float) -> None:
        """Fail the WebSocket connection (RFC 6455 section 7.1.7): a Close frame, then close."""
        self._session.connection_lost(message, now=now, reason=reason)
        self._out += self._ws.send(wsevents.CloseConnection(code=code))
        self._finish()

    def _abort(self, message: str, now: float, reason: FailureReason = FailureReason.CONNECTION_LOST, *,
               detail: dict[str, str] | None = None) -> None:
        self._session.connection_lost(message, now=now, reason=reason, detail=detail)
        self._finish()

    def _finish(self) -> None:
        if self._state is not State.NEW:
            self._actions.append(CloseConnection(connection=_CONNECTION))
        self._move(Trigger.END)
        self._closing_at = self._ping_at = self._pong_by = self._pong = None
        self._held.clear()

    def _move(self, trigger: Trigger) -> None:
        """Move by ``TRANSITIONS``; an illegal move is blamed on whoever caused it: the peer
        for a ``RECV_*`` trigger, the caller otherwise."""
        self._state = step(TRANSITIONS, self._state, trigger, peer=PEER_TRIGGERS,
                           subject="the connection is ")

    def _live(self, connection: int) -> bool:
        """Whether ``connection`` is still open; raise if it never was."""
        if connection != _CONNECTION or self._state is State.NEW:
            raise LocalProtocolError(f"connection {connection} was never opened")
        return self._state is not State.DONE


def _upgrade_request(ws: WSConnection, url: Url, headers: Mapping[str, str], user_agent: str) -> bytes:
    """The upgrade request: subprotocol ``mcp``, the user's headers, ``User-Agent`` unless set."""
    names = {name.strip().lower() for name in headers}
    clash = sorted(names & _RESERVED)
    if clash:
        raise LocalProtocolError(f"the WebSocket handshake sets the {clash[0]} header itself")
    pairs = dict(headers) if "user-agent" in names else {"user-agent": user_agent, **headers}
    try:
        extra = [(name.encode("ascii"), value.encode("ascii")) for name, value in pairs.items()]
        return ws.send(wsevents.Request(host=url.authority, target=url.target,
                                        subprotocols=[_SUBPROTOCOL], extra_headers=extra))
    except (h11.LocalProtocolError, UnicodeError) as exc:
        raise LocalProtocolError(f"invalid HTTP header: {exc}") from exc


def _describe_close(event: wsevents.CloseConnection) -> str:
    return f"code {event.code}: {event.reason}" if event.reason else f"code {event.code}"
