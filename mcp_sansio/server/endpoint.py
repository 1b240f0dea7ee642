"""What every server transport shares: the call table, the event queue, and the runner API.

A transport (stdio, Streamable HTTP, WebSocket) owns one or more :class:`ServerSession`
objects and is their host: sessions allocate call handles and tickets here, queue their
events here, and hand their outgoing messages to the transport's :meth:`Endpoint.send`
with the channel they belong to. A driver talks to the transport only: it drains
:meth:`next_event`, runs handlers, and answers by call handle, whichever session the call
came from. This is the whole interface a handler runner needs (``mcp_sansio_base``).
"""

from __future__ import annotations

import abc
import base64
import hashlib
import hmac
from collections import OrderedDict, deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Protocol

from ..errors import LocalProtocolError
from ..types import LoggingLevel
from .context import Ask, AskOutcome
from .deadlines import Deadlines
from .events import CallOutcome, ServerEvent
from .flow import FlowLimits
from .port import Outlet
from .registry import ListKind

if TYPE_CHECKING:
    from .app import MCPServer
    from .authz import TokenVerdict
    from .session import ServerSession

__all__ = ["Endpoint", "ListKind", "SessionHost"]


_TOMBSTONES: Final = 4096  # cancelled calls remembered, so a late respond() is no error


class SessionHost(Outlet, Protocol):
    """What a :class:`ServerSession` needs of the transport it lives in."""

    def new_call(self, session: ServerSession) -> int:
        """A fresh call handle, owned by ``session``."""
        ...

    def call_done(self, call: int) -> None:
        """``call`` was answered."""
        ...

    def call_cancelled(self, call: int) -> None:
        """``call`` was cancelled."""
        ...

    def timed(self, session: ServerSession) -> None:
        """``session`` armed a deadline (a question to the client, a task)."""
        ...


class SubHost:
    """The host a session of a many-session transport sees: calls, tickets and events go
    to the transport's :class:`Endpoint`; a subclass says where ``send`` and ``finish``
    write (an SSE stream, a WebSocket connection)."""

    __slots__ = ("_server", "secret", "wall_offset")

    def __init__(self, server: Endpoint) -> None:
        self._server = server
        self.secret = server.secret
        self.wall_offset = server.wall_offset

    def new_call(self, session: ServerSession) -> int:
        """A call handle from the server."""
        return self._server.new_call(session)

    def call_done(self, call: int) -> None:
        """Forget ``call``."""
        self._server.call_done(call)

    def call_cancelled(self, call: int) -> None:
        """``call`` was cancelled."""
        self._server.call_cancelled(call)

    def new_ticket(self) -> int:
        """A ticket from the server."""
        return self._server.new_ticket()

    def new_id(self, kind: str) -> str:
        """An unguessable id from the server."""
        return self._server.new_id(kind)

    def timed(self, session: ServerSession) -> None:
        """``session`` armed a deadline: the server watches it."""
        self._server.timed(session)

    def emit(self, event: ServerEvent) -> None:
        """Queue ``event`` on the server."""
        self._server.emit(event)


class Endpoint(abc.ABC):
    """Base of the server transports: the sessions' host and the driver's counterpart.

    Args:
        app: what the server offers.
        secret: the key sealing ``requestState``; at least 16 bytes of the driver's
            randomness, the same on every worker of a deployment.
        entropy: at least 32 bytes fresh from the operating system's CSPRNG for this
            process alone (``secrets.token_bytes(32)``), never shared and never the
            secret: session and task ids are HMAC-SHA256 of it over a counter, so they
            are unguessable without it and unique across workers and restarts (each
            draws its own), as MCP asks of session ids ("globally unique and
            cryptographically secure").
        wall_offset: add to ``now`` to get POSIX time (``time.time() - monotonic()``), for
            expiries that must hold across processes and for task timestamps.

    Raises:
        LocalProtocolError: ``secret`` is shorter than 16 bytes, or ``entropy`` shorter
            than 32 or equal to the secret.
    """

    def __init__(self, app: MCPServer, *, secret: bytes, entropy: bytes, wall_offset: float = 0.0) -> None:
        if len(secret) < 16:
            raise LocalProtocolError("the server secret must be at least 16 bytes")
        if len(entropy) < 32 or entropy == secret:
            raise LocalProtocolError("the server needs 32 or more bytes of its own entropy (not the secret)")
        self.app = app
        self.secret = secret
        self._entropy = entropy
        self._next_id = 0
        # the sessions that armed a deadline, by id(), with the earliest each had when it did
        # (a deadline gone since, an answered question, costs one early wake-up)
        self._timed: dict[int, ServerSession] = {}
        self._session_deadlines: Deadlines[int] = Deadlines()
        self.wall_offset = wall_offset
        self._events: deque[ServerEvent] = deque()
        self._calls: dict[int, ServerSession] = {}
        self._tombstones: OrderedDict[int, None] = OrderedDict()
        self._next_call = 0
        self._next_ticket = 0
        # Answers held, encoded, while their stream is congested (see ``hold``), oldest first
        # per stream (``answer_stream``): one client's congestion holds nobody else's answers.
        self._held: dict[Hashable, deque[tuple[int, bytes]]] = {}
        self._held_count = 0
        self._held_bytes = 0

    # ------------------------------------------------------------ host side (for sessions)

    def new_call(self, session: ServerSession) -> int:
        """A fresh call handle, owned by ``session``."""
        self._next_call += 1
        self._calls[self._next_call] = session
        return self._next_call

    def call_done(self, call: int) -> None:
        """``call`` was answered: forget it."""
        self._calls.pop(call, None)

    def call_cancelled(self, call: int) -> None:
        """``call`` was cancelled: forget it, but let a late answer pass silently."""
        self._calls.pop(call, None)
        self._tombstones[call] = None
        if len(self._tombstones) > _TOMBSTONES:
            self._tombstones.popitem(last=False)

    def new_ticket(self) -> int:
        """A fresh ticket for a question to the client."""
        self._next_ticket += 1
        return self._next_ticket

    def timed(self, session: ServerSession) -> None:
        """``session`` armed a deadline: only such sessions are asked for theirs, and only
        then, so the cost of a deadline query stays the same however many sessions wait."""
        key = id(session)  # (not reused while the session is kept here)
        self._timed[key] = session
        self._session_deadlines.set(key, session.next_deadline())

    def untimed(self, session: ServerSession) -> None:
        """``session`` ended: its deadlines are no longer watched."""
        if self._timed.pop(id(session), None) is not None:
            self._session_deadlines.set(id(session), None)

    def new_id(self, kind: str) -> str:
        """A fresh id for a ``kind`` of thing (``session``, ``task``): 192 bits of
        HMAC-SHA256 under this process's entropy, base64url (32 characters)."""
        self._next_id += 1
        digest = hmac.new(self._entropy, f"{kind}/{self._next_id}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:24]).decode("ascii")

    def emit(self, event: ServerEvent) -> None:
        """Queue ``event`` for :meth:`next_event`."""
        self._events.append(event)

    @abc.abstractmethod
    def send(self, channel: int | None, data: bytes) -> None:
        """Transmit one JSON-RPC message that does not end a request (a notification, a
        request of the server's own).

        Args:
            channel: what it relates to: the channel (stream, HTTP exchange) of the client
                request it belongs to; ``None`` for none (the GET stream).
            data: the encoded message.
        """

    @abc.abstractmethod
    def finish(self, channel: int | None, data: bytes, status: int, now: float) -> None:
        """Transmit the response that ends the client request of ``channel``.

        Args:
            channel: the request's channel.
            data: the encoded response.
            status: the HTTP status it would have on its own (HTTP only).
            now: the current time.
        """

    @abc.abstractmethod
    def sessions(self) -> Iterable[ServerSession]:
        """Every live session."""

    # ------------------------------------------------------------ driver side

    def next_event(self) -> ServerEvent | None:
        """The oldest queued event, or ``None``."""
        events = self._events
        return events.popleft() if events else None

    def respond(self, call: int, value: object, *, now: float) -> CallOutcome | None:
        """Answer ``call`` with what its handler returned (see ``server.results``).

        Raises:
            LocalProtocolError: no such call (a cancelled one is silently not answered),
                or ``value`` cannot be made into the method's result; nothing was sent.
        """
        session = self._owner(call)
        return None if session is None else session.respond(call, value, now=now)

    def fail(self, call: int, error: BaseException, *, now: float) -> CallOutcome | None:
        """Answer ``call`` for a handler that raised ``error``: a ``RequestError`` is sent as
        that JSON-RPC error; for a tool anything else is a tool error (``isError``); for the
        other methods an internal error. A ``ToolError``'s message is sent as it is; another
        exception's text too, unless the app masks error details (then a generic message:
        the driver logs the traceback).

        Raises:
            LocalProtocolError: no such call (a cancelled one is silently not answered).
        """
        session = self._owner(call)
        return None if session is None else session.fail(call, error, now=now)

    def respond_error(self, call: int, code: int, message: str, data: object = None, *,
                      now: float) -> CallOutcome | None:
        """Answer ``call`` with a JSON-RPC error.

        Raises:
            LocalProtocolError: no such call, or ``data`` is not JSON.
        """
        session = self._owner(call)
        return None if session is None else session.respond_error(call, code, message, data, now=now)

    def input_required(self, call: int, state: Mapping[str, object], *, now: float) -> None:
        """End this round of ``call`` (its handler raised ``InputRequired``): answer
        ``input_required`` with the questions it asked and ``state`` sealed for the retry.

        Raises:
            LocalProtocolError: no such call, or it is not a stateless-era request that
                may ask for input.
        """
        session = self._owner(call)
        if session is not None:
            session.input_required(call, state, now=now)

    def start_task(self, call: int, *, now: float, message: str | None = None) -> str | None:
        """Make ``call`` a task (tasks extension): its request is answered at once with the
        task's handle and the handler runs on; later questions wait for ``tasks/update``.
        The task's id, or ``None`` when the call cannot become one (the client did not
        declare the extension, or too many tasks exist): then it simply goes on.

        Raises:
            LocalProtocolError: no such call, or it is no stateless-era call of a
                task-capable tool.
        """
        session = self._calls.get(call)
        if session is None:
            raise LocalProtocolError(f"call {call} is not in progress")
        return session.start_task(call, now=now, message=message)

    def token_verified(self, ticket: int, verdict: TokenVerdict, *, now: float) -> None:  # noqa: B027
        """The verdict on the token of ``TokenVerificationRequired`` ``ticket`` (see
        ``server.authz``); a transport that checks no tokens (stdio) ignores it."""

    def close_sse_stream(self, call: int, *, now: float) -> bool:
        """End the response stream of ``call`` early so the client resumes it later (SSE
        polling); only the HTTP transport has such streams: here, ``False``."""
        return False

    def ask(self, call: int, asks: Sequence[Ask], *, now: float) -> list[AskOutcome]:
        """Ask the client ``asks`` on behalf of ``call``; the outcome of each, in order.

        Raises:
            ClientCapabilityMissing: the client did not declare what an ask needs.
            LocalProtocolError: no such call (or it was cancelled), or too many asks.
        """
        session = self._calls.get(call)
        if session is None:
            raise LocalProtocolError(f"call {call} is not in progress")
        return session.ask(call, asks, now=now)

    def send_progress(self, call: int, progress: float, total: float | None = None,
                      message: str | None = None) -> None:
        """``notifications/progress`` for ``call``, if its client asked for progress."""
        session = self._calls.get(call)
        if session is not None:
            session.send_progress(call, progress, total, message)

    def send_log(self, call: int | None, level: LoggingLevel, data: object,
                 logger: str | None = None) -> None:
        """``notifications/message`` about ``call`` (``None``: about nothing in particular,
        to every session that accepts the level), if the client's level lets it through."""
        if call is None:
            for session in self.sessions():
                session.send_log(None, level, data, logger)
            return
        owner = self._calls.get(call)
        if owner is not None:
            owner.send_log(call, level, data, logger)

    @property
    def flow_limits(self) -> FlowLimits:
        """The bounds of output waiting for a client (``flow.py``) on this transport."""
        return FlowLimits()

    @property
    def holding(self) -> bool:
        """Whether an answer is held for a congested stream (see :meth:`hold`)."""
        return bool(self._held)

    def hold(self, call: int, value: object, *, now: float) -> CallOutcome | None:
        """Answer ``call`` with its handler's return value as :meth:`respond` does, but
        hold the answer, encoded, while answers for the same stream are held already or
        ``call``'s stream is congested, so that pipelined calls finishing at once do not
        pile their results onto a stream a client reads slowly; :meth:`release` sends it
        when the stream can take it. Answers for other streams (other clients) are never
        held behind it. Held answers are bounded in bytes by ``flow_limits.max_held_bytes``
        (beyond one answer): an answer that would pass the bound sends every held one at
        once, and a stream that cannot take them passes its own ``max_buffer_bytes`` and
        is dropped, as a stream whose client stopped reading is (stdio: the session ends).

        Raises:
            LocalProtocolError: as :meth:`respond`; nothing was held or sent.
        """
        stream = self.answer_stream(call)
        if stream not in self._held and not self.congested(call):
            return self.respond(call, value, now=now)
        session = self._owner(call)
        if session is None:
            return None
        outcome, data = session.encode_answer(call, value, now=now)
        if data is None:  # a task's result: kept in its store, not written to a stream
            return outcome
        self._held.setdefault(stream, deque()).append((call, data))
        self._held_count += 1
        self._held_bytes += len(data)
        if self._held_count > 1 and self._held_bytes > self.flow_limits.max_held_bytes:
            self._send_held(now, everything=True)
        return outcome

    def release(self, now: float) -> bool:
        """Send the held answers whose stream can take them, oldest first per stream (those
        behind one whose stream is congested wait with it, so a stream's answers keep their
        order); whether any was sent (the driver writes, then calls again). Call it
        whenever the driver took output or a stream ended."""
        return self._send_held(now, everything=False)

    def _send_held(self, now: float, *, everything: bool) -> bool:
        sent = False
        for stream in list(self._held):
            held = self._held.get(stream)
            while held:
                call, data = held[0]
                session = self._calls.get(call)
                if session is not None and not everything and self.congested(call):
                    break
                held.popleft()
                self._held_count -= 1
                self._held_bytes -= len(data)
                if session is not None:  # (else cancelled, or its session ended: discarded)
                    session.send_answer(call, data, now)
                    sent = True
            if not held:
                self._held.pop(stream, None)
        if not self._held:
            self._held_count = self._held_bytes = 0
        return sent

    def answer_stream(self, call: int) -> Hashable:
        """What carries ``call``'s answer (a connection, a response stream): answers held for
        one stream keep their order and wait only for it. One stream here (stdio)."""
        return None

    def congested(self, call: int) -> bool:
        """Whether the stream ``call`` writes to holds more than its high-water mark of
        bytes the client has not read (``flow.py``): its handler should wait before it
        produces more (the runner parks an awaited ``ctx.report_progress``/``ctx.log``
        until this is ``False``); changes nothing."""
        return False

    def is_cancelled(self, call: int) -> bool:
        """The client gave up on ``call``."""
        return call in self._tombstones

    def notify_list_changed(self, kind: ListKind) -> None:
        """Tell every client that wants to know that a list changed."""
        for session in self.sessions():
            session.notify_list_changed(kind)

    def notify_resource_updated(self, uri: str) -> None:
        """Tell every client subscribed to ``uri`` that it changed."""
        for session in self.sessions():
            session.notify_resource_updated(uri)

    def next_deadline(self) -> float | None:
        """The earliest deadline of any session (perhaps one it no longer has: a wake-up
        early); changes nothing."""
        return self._session_deadlines.first()

    def handle_timeout(self, now: float) -> None:
        """Fire every session deadline due at ``now``; forget sessions with none left.

        Events: ``AnswerFailed`` (timeout) for questions the client left unanswered.
        """
        for key in self._session_deadlines.due(now):
            session = self._timed[key]
            session.handle_timeout(now)
            deadline = session.next_deadline()
            if deadline is None:
                del self._timed[key]
            else:
                self._session_deadlines.set(key, deadline)

    def _owner(self, call: int) -> ServerSession | None:
        session = self._calls.get(call)
        if session is None and call not in self._tombstones:
            raise LocalProtocolError(f"call {call} is not awaiting an answer")
        return session

