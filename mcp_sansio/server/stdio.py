"""The stdio transport of a server: newline-delimited JSON-RPC on stdin and stdout.

``StdioServer`` is one :class:`ServerSession` behind a bounded line buffer (MCP "stdio":
one message per line, no embedded newlines). A line over ``max_line_bytes`` is answered
with an error and skipped, and reading resumes after its end, so a hostile client cannot
exhaust memory nor stop the server. End of input closes the session. Output waiting for
a client that does not read stdout is bounded as ``flow.py`` says: handlers wait over
``high_water_bytes``; past ``max_buffer_bytes``, or congested for ``stall_timeout``, the
session ends as if the client had left (calls cancelled, ``ConnectionTerminated``), and
what comes after is discarded: stdio has no second stream to resume on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .. import jsonrpc
from ..events import DiscardReason, MessageDiscarded
from ..framing import LineBuffer
from .endpoint import Endpoint
from .flow import AT_ONCE, Backlog, FlowLimits
from .session import ServerSession

if TYPE_CHECKING:
    from .app import MCPServer

__all__ = ["StdioServer"]


class StdioServer(Endpoint):
    """A server speaking to one client over a pair of byte streams.

    Driver contract: feed what stdin yields to :meth:`receive_data` (``b""`` at EOF),
    run the handlers :meth:`next_event` asks for and answer them, write
    :meth:`data_to_send` to stdout when it can take more (not before, and never into a
    buffer of its own: unread output is what the backpressure bounds count), and call
    :meth:`handle_timeout` at :meth:`next_deadline`. After ``receive_data(b"")`` (a
    ``ConnectionTerminated`` event follows) the driver finishes writing and exits. A
    ``ConnectionTerminated`` before end of input means the client stopped reading
    (:attr:`abandoned`): nothing more will be answered, so the driver stops reading and
    exits at once, writing nothing more (its input may never end).

    Args:
        app: what the server offers.
        secret: see :class:`Endpoint`.
        entropy: see :class:`Endpoint`.
        wall_offset: see :class:`Endpoint`.
        flow: the bounds of output waiting for the client.
    """

    def __init__(self, app: MCPServer, *, secret: bytes, entropy: bytes, wall_offset: float = 0.0,
                 flow: FlowLimits | None = None) -> None:
        super().__init__(app, secret=secret, entropy=entropy, wall_offset=wall_offset)
        self.flow = flow or FlowLimits()
        self._backlog = Backlog()
        self._dropped = False  # the client stopped reading: the session ended
        self._overflowed = False  # ... past max_buffer_bytes: end it at the next timeout (at once)
        self.session = ServerSession(app, self)
        self._max_line = app.config.max_line_bytes
        self._lines = LineBuffer(self._max_line)
        self._skipping = False  # the rest of an oversized line is being dropped
        self._out: list[bytes] = []

    def receive_data(self, data: bytes, now: float) -> None:
        """Bytes from the client's stdin; ``b""`` at end of input.

        Raises:
            LocalProtocolError: the input already ended.

        Events: those of :meth:`ServerSession.receive_message`, ``MessageDiscarded`` for
        an oversized line, and at EOF ``CallCancelled`` for calls still running and
        ``ConnectionTerminated``.
        """
        session = self.session
        if self._dropped:
            return  # the session ended: input is read and discarded until EOF
        if not data:
            for line in ([] if self._skipping else self._lines.close()):
                session.receive_message(line, now)
            session.close(now, "the client closed its end of the stream")
            return
        sole = None if self._skipping else self._lines.sole_line(data)
        if sole is not None:
            if sole:
                session.receive_message(sole, now)
            return
        self._feed(data, now)

    @property
    def abandoned(self) -> bool:
        """The session ended because the client stopped reading: what waits for it is
        discarded, so a driver ending at EOF does not wait to write it (it never would)."""
        return self._dropped

    def data_to_send(self) -> bytes:
        """What to write to stdout (drains it)."""
        out = self._out
        if not out:
            return b""
        data = b"".join(out)
        out.clear()
        self._backlog.taken(len(data), self.flow)
        return data

    def send(self, channel: int | None, data: bytes) -> None:
        """Queue one message as a line (every message shares the one stream)."""
        self._queue(data)

    def finish(self, channel: int | None, data: bytes, status: int, now: float) -> None:
        """Queue a response as a line."""
        self._queue(data)

    @property
    def flow_limits(self) -> FlowLimits:
        """The bounds of output waiting for the client."""
        return self.flow

    def congested(self, call: int) -> bool:
        """Whether stdout holds more than ``high_water_bytes`` the client has not read."""
        return self._backlog.congested(self.flow)

    def next_deadline(self) -> float | None:
        """The earliest deadline: the session's, or stdout's stall (at once when output
        passed ``max_buffer_bytes``: the driver's time ends the session); changes nothing."""
        if self._overflowed:
            return AT_ONCE
        deadlines = [d for d in (super().next_deadline(), self._backlog.deadline(self.flow))
                     if d is not None]
        return min(deadlines) if deadlines else None

    def handle_timeout(self, now: float) -> None:
        """Fire what is due; a client that left stdout congested for ``stall_timeout``, or
        past ``max_buffer_bytes``, ends the session.

        Events: those of :meth:`Endpoint.handle_timeout`; ``CallCancelled`` and
        ``ConnectionTerminated`` for a client that stopped reading.
        """
        if self._overflowed:
            self._overflowed = False
            self.session.close(now, "the client does not read its output")
        elif self._backlog.stamp(now, self.flow):
            self._drop(now)
        super().handle_timeout(now)

    def _queue(self, data: bytes) -> None:
        if self._dropped:
            return
        if not self._backlog.fits(len(data) + 1, self.flow):  # the session ends at the next
            self._overflowed = True  # timeout, not while it is busy sending
            self._discard()
            return
        self._out.append(data + b"\n")
        self._backlog.add(len(data) + 1)

    def _discard(self) -> None:
        self._dropped = True
        self._out.clear()
        self._backlog = Backlog()

    def _drop(self, now: float) -> None:
        """The client does not read: end the session, forget what waits for it."""
        self._discard()
        self.session.close(now, "the client does not read its output")

    def sessions(self) -> Iterable[ServerSession]:
        """The one session."""
        return (self.session,)

    def _feed(self, data: bytes, now: float) -> None:
        if self._skipping:
            newline = data.find(b"\n")
            if newline < 0:
                return
            self._skipping = False
            data = data[newline + 1:]
        for line in self._lines.feed(data):
            self.session.receive_message(line, now)
        if self._lines.overflow is None:
            return
        # Lines after the oversized one in this read are lost with it; reading resumes at
        # the next newline, which the next read may bring.
        size = self._lines.overflow
        self._lines = LineBuffer(self._max_line)
        self._skipping = not data.endswith(b"\n")
        message = f"Invalid request: a message of {size} bytes or more exceeds the limit of {self._max_line}"
        self.finish(None, jsonrpc.encode_error(None, jsonrpc.INVALID_REQUEST, message), 400, now)
        self.emit(MessageDiscarded(reason=DiscardReason.NOT_JSON_RPC, detail=message, excerpt=b""))
