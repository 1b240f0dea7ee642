"""The stdio transport: framing + session, plus the subprocess shutdown ladder as actions.

MCP "Transports / stdio": the client launches the server, writes messages to its stdin
and reads them from its stdout, one per line. Shutting down closes stdin, then escalates
to SIGINT, SIGTERM and SIGKILL on deadlines; the driver performs each step it is given.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Mapping
from typing import Final

from .config import ClientConfig
from .events import (
    Action,
    CloseInput,
    DiscardReason,
    FailureReason,
    InterruptProcess,
    KillProcess,
    TerminateProcess,
)
from .framing import LineBuffer
from .front import SessionFront
from .machines import step
from .session import ClientSession, Link
from .types import ClientCapabilities

__all__ = ["LADDER_TRANSITIONS", "Ladder", "LadderTrigger", "StdioClient"]

# How long after SIGKILL we stop waiting for the driver to report the exit.
_KILL_WAIT: Final = 1.0


class Ladder(enum.Enum):
    """Where the subprocess's shutdown stands: each rung has sent its signal."""

    IDLE = "idle"
    CLOSED_INPUT = "closed-input"
    INTERRUPTED = "interrupted"
    TERMINATED = "terminated"
    KILLED = "killed"
    DONE = "done"


class LadderTrigger(enum.Enum):
    """What moves the ladder: the client shuts down, a rung's deadline passes, the process exits."""

    SHUT_DOWN = "shut-down"
    DEADLINE = "deadline"
    EXITED = "process-exited"


_L, _T = Ladder, LadderTrigger
LADDER_TRANSITIONS: Final[Mapping[tuple[Ladder, LadderTrigger], Ladder]] = {
    (_L.IDLE, _T.SHUT_DOWN): _L.CLOSED_INPUT,
    (_L.CLOSED_INPUT, _T.DEADLINE): _L.INTERRUPTED,
    (_L.INTERRUPTED, _T.DEADLINE): _L.TERMINATED,
    (_L.TERMINATED, _T.DEADLINE): _L.KILLED,
    (_L.KILLED, _T.DEADLINE): _L.DONE,  # the exit was never reported: stop waiting for it
    **{(state, _T.EXITED): _L.DONE for state in Ladder},
}
_IDLE: Final = Ladder.IDLE  # for the receive path: enum member lookups are slow in 3.11


class StdioClient(SessionFront):
    """An MCP client speaking to a subprocess over its stdin/stdout.

    Feed stdout bytes to :meth:`receive_data` (``b""`` at EOF) and report the exit with
    :meth:`process_exited`; write :meth:`data_to_send` to stdin; perform each
    :meth:`next_action`. Pending requests fail when the process has exited (so the
    failure carries its exit status), or at the latest when the ladder gives up.
    """

    def __init__(
        self, config: ClientConfig | None = None, capabilities: ClientCapabilities | None = None
    ) -> None:
        cfg = config or ClientConfig()
        super().__init__(ClientSession(cfg, capabilities or ClientCapabilities(),
                                       Link(send=self._frame, garbage=self._garbage)))
        self._lines = LineBuffer(cfg.max_line_bytes)
        self._out = bytearray()
        self._actions: deque[Action] = deque()
        self._ladder = Ladder.IDLE
        self._ladder_at: float | None = None  # when the shutdown ladder takes its next step

    # ------------------------------------------------------------ driver side

    def start(self, *, now: float) -> None:
        """Open the session (:meth:`ClientSession.start`): the process is running."""
        self._session.start(now=now)

    def initialize(self, *, now: float) -> None:
        """Send ``initialize`` (:meth:`ClientSession.initialize`), with no stateless probe."""
        self._session.initialize(now=now)

    # ------------------------------------------------------------ driver side

    def receive_data(self, data: bytes, now: float) -> None:
        """Bytes the server wrote to stdout; ``b""`` means EOF.

        Events: whatever the messages cause; a line over ``max_line_bytes`` fails the
        connection (pending requests fail with MESSAGE_TOO_LARGE) and starts shutdown.
        """
        if self._ladder is not _IDLE:
            return  # shutting down: whatever else arrives no longer matters
        receive = self._session.receive_message
        if not data:
            for line in self._lines.close():
                receive(line, now)
            self._begin_shutdown(now)
            return
        sole = self._lines.sole_line(data)
        if sole is not None:  # the usual read: one whole reply
            if sole:
                receive(sole, now)
            return
        for line in self._lines.feed(data):
            receive(line, now)
            if self._ladder is not _IDLE:
                return  # that line failed the connection: the rest of the chunk is moot
        if self._lines.overflow is not None:
            # No size in the message: how much was seen depends on the chunking.
            self._session.connection_lost(
                f"the server sent a line longer than max_line_bytes ({self.config.max_line_bytes})",
                now=now, reason=FailureReason.MESSAGE_TOO_LARGE,
            )
            self._begin_shutdown(now)

    def process_exited(self, returncode: int | None, now: float) -> None:
        """The server process is gone (reaped); requests still pending fail now.

        Events: ``RequestFailed(reason=CONNECTION_LOST)`` for each, ``ConnectionTerminated``.
        """
        self._ladder = step(LADDER_TRANSITIONS, self._ladder, LadderTrigger.EXITED)
        self._ladder_at = None
        self._session.connection_lost("the server process exited", now=now, returncode=returncode)

    def close(self, *, now: float, message: str = "the client closed the connection") -> None:
        """Close the connection: pending requests fail, then the shutdown ladder runs.

        Actions: ``CloseInput`` now; ``InterruptProcess``, ``TerminateProcess`` and
        ``KillProcess`` from :meth:`handle_timeout` while the process has not exited.
        """
        self._session.connection_lost(message, now=now)
        self._begin_shutdown(now)

    def data_to_send(self) -> bytes:
        """Bytes to write to the server's stdin (empty when there are none)."""
        if not self._out:
            return b""
        data = bytes(self._out)
        self._out.clear()
        return data

    def next_action(self) -> Action | None:
        """The next I/O step the driver must perform, or ``None``."""
        return self._actions.popleft() if self._actions else None

    def next_deadline(self) -> float | None:
        """The earliest of the session's deadlines and the shutdown ladder's next step."""
        at = self._session.next_deadline()
        own = self._ladder_at
        return own if own is not None and (at is None or own < at) else at

    def handle_timeout(self, now: float) -> None:
        """Fire request deadlines and the next ladder step when due."""
        self._session.handle_timeout(now)
        at = self._ladder_at
        if at is None or at > now:
            return
        cfg = self.config
        rung = self._climb(LadderTrigger.DEADLINE)
        if rung is Ladder.INTERRUPTED:
            self._act(InterruptProcess(), now + cfg.shutdown_interrupt_delay)
        elif rung is Ladder.TERMINATED:
            self._act(TerminateProcess(), now + cfg.shutdown_terminate_delay)
        elif rung is Ladder.KILLED:
            self._act(KillProcess(), now + _KILL_WAIT)
        else:
            self._ladder_at = None
            self._session.connection_lost("the server closed its stdout and did not exit after SIGKILL",
                                          now=now)

    # ------------------------------------------------------------ the link

    def _frame(self, message: bytes, request_id: int | None, now: float) -> None:
        out = self._out
        out += message
        out += b"\n"

    def _garbage(self, reason: DiscardReason, detail: str, now: float) -> bool:
        """A line that is no JSON: the stream is broken, unless told to skip such lines."""
        if self.config.skip_non_json_lines:
            return False
        self._session.connection_lost(f"the server wrote a line that is not JSON-RPC: {detail}", now=now,
                                      reason=FailureReason.PROTOCOL_ERROR)
        self._begin_shutdown(now)
        return True

    # ---------------------------------------------------------------- internals

    def _begin_shutdown(self, now: float) -> None:
        if self._ladder is _IDLE:
            self._climb(LadderTrigger.SHUT_DOWN)
            self._act(CloseInput(), now + self.config.shutdown_close_delay)

    def _climb(self, trigger: LadderTrigger) -> Ladder:
        self._ladder = step(LADDER_TRANSITIONS, self._ladder, trigger, subject="the shutdown ladder is ")
        return self._ladder

    def _act(self, action: Action, next_at: float) -> None:
        self._actions.append(action)
        self._ladder_at = next_at
