"""What a multi-worker HTTP deployment must share: sessions and resumable stream events.

A handshake-era session lives on the worker that opened it, but its identity (version,
client, capabilities, log level, subscriptions) can be kept in a :class:`SessionStore`
so that any worker can serve its next request; SSE events kept in an
:class:`EventStore` let a client resume a broken stream (``Last-Event-ID``) on any
worker. Stateless 2026-07-28 requests need neither. The stores are called by the core
and so are synchronous; the in-memory defaults serve one process. A *shared* store
(``shared = True``, e.g. Redis in ``mcp_sansio_base.redis_store``) answers in one short,
bounded round trip, keeps sessions alive by its own TTL (so a worker that saw a session
idle only forgets its copy), and lets a worker follow a stream another worker produces:
the driver calls :meth:`EventStore.follow` (which may block) off the loop, for what
``HttpServer.follows()`` names, and hands what it returns to ``HttpServer.receive_relayed``.

Tasks (the tasks extension) are kept in a :class:`TaskStore` when one is shared: any worker
answers ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` for a task another worker runs.
The store keeps each task's status, inlined result or error and open questions, and carries
answers and cancellations to the worker running the task (its driver takes them with
:meth:`TaskStore.task_messages` off the loop and hands them to
``HttpServer.receive_task_messages``). Without one, tasks live in the process that runs
them (``ServerSession.tasks``), as before.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable

import msgspec

from ..errors import McpSansioError
from ..types import ClientCapabilities, Implementation, LoggingLevel

__all__ = ["INBOX_STREAM", "EventStore", "Follow", "MemoryEventStore", "MemorySessionStore", "Relayed",
           "Replay", "SessionRecord", "SessionStore", "StoreUnavailable", "TaskMessage", "TaskSnapshot",
           "TaskStore"]


INBOX_STREAM: Final = 2**62
"""The stream number of a session's inbox: the client's answers and cancellations, which any
worker may receive, kept for the worker whose handler waits for them (never replayed to a
client; the SSE streams of a session are numbered below it)."""


class StoreUnavailable(McpSansioError):
    """A shared store did not answer in time; the request it served gets a 503."""


class SessionRecord(msgspec.Struct, kw_only=True):
    """A handshake-era session, as another worker needs it to go on serving it."""

    session_id: str
    protocol_version: str
    client_info: Implementation
    client_capabilities: ClientCapabilities
    log_level: LoggingLevel | None = None
    subscriptions: list[str] = msgspec.field(default_factory=list)
    owner: str | None = None
    """The ``Principal.identity`` it is bound to (auth on), else ``None``."""


class Replay(msgspec.Struct, frozen=True, kw_only=True):
    """What a ``Last-Event-ID`` resumes: its stream, the events after it, and whether the
    stream's final response was sent (then nothing more will come)."""

    stream: int
    events: list[tuple[str, bytes]]
    finished: bool = False
    request_id: int | str | None = None
    """The request the stream answers, when known."""


class Follow(msgspec.Struct, frozen=True, kw_only=True):
    """A stream this worker relays from the store: the events of ``stream`` of
    ``session_id`` after the event ``after``."""

    session_id: str
    stream: int
    after: str


class Relayed(msgspec.Struct, frozen=True, kw_only=True):
    """One event of a followed stream, as another worker stored it (``final``: the stream's
    last)."""

    session_id: str
    stream: int
    event_id: str
    data: bytes
    final: bool = False
    since: str = ""
    """The ``after`` of the :class:`Follow` it answers: a relay overtaken by a newer
    resumption of the stream is dropped."""
    abandoned: bool = False
    """The worker producing the stream is gone (no ``data``): nothing more will come."""
    lost: bool = False
    """With ``abandoned``: the store lost the stream instead (its events and producer are
    gone: restarted empty, evicted), so nothing more can come through it."""


class SessionStore(Protocol):
    """Where sessions are kept.

    Attributes:
        shared: other workers use it too, and it expires sessions by its own TTL.
    """

    shared: bool

    def save(self, record: SessionRecord) -> None:
        """Store or replace ``record``."""
        ...

    def load(self, session_id: str) -> SessionRecord | None:
        """The session ``session_id``, if it is known (a shared store restarts its TTL)."""
        ...

    def touch(self, session_id: str) -> bool:
        """A request of ``session_id`` came: restart its TTL; ``False`` when the store no
        longer has it (ended by another worker, or expired)."""
        ...

    def delete(self, session_id: str) -> None:
        """Forget ``session_id`` (terminated or expired)."""
        ...


class EventStore(Protocol):
    """Where the events of resumable SSE streams are kept.

    Attributes:
        shared: other workers use it too; :meth:`follow` relays what they append.
    """

    shared: bool

    def append(self, session_id: str, stream: int, data: bytes, final: bool = False,
               request_id: int | str | None = None) -> str:
        """Keep one event (the JSON of a message; ``final``: the stream's last) of
        ``stream``; its event id. ``request_id`` comes with a stream's first event: the
        request it answers (another worker relaying it answers for it if its producer dies)."""
        ...

    def extend(self, session_id: str, stream: int, events: Sequence[tuple[bytes, bool]],
               request_id: int | str | None = None) -> list[str]:
        """Keep several events of ``stream`` at once, as :meth:`append` would one by one
        (each a ``(data, final)`` pair); their ids. A whole SSE answer (its priming event
        and the answer) is kept this way: one round trip to a remote store, not two."""
        ...

    def replay(self, session_id: str, last_event_id: str) -> Replay | None:
        """The stream ``last_event_id`` belongs to and its events after it, or ``None``
        when the id is unknown (forgotten, or never issued)."""
        ...

    def forget(self, session_id: str) -> None:
        """Drop every event of ``session_id``."""
        ...

    def follow(self, wants: Sequence[Follow], timeout: float) -> list[Relayed]:
        """The events appended after each of ``wants``, waiting up to ``timeout`` seconds
        for one (a blocking call: the driver makes it off its loop; never the core)."""
        ...


class TaskSnapshot(msgspec.Struct, frozen=True, kw_only=True):
    """A task as the shared store keeps it (what ``tasks/get`` reports).

    Attributes:
        task_id: its unguessable id.
        status: a ``TaskState`` value.
        created_at: wall-clock creation time (seconds).
        updated_at: wall-clock time of the last status change.
        owner: the ``Principal.identity`` it is bound to (auth on), else ``None``.
        status_message: a message for people, if any.
        result: the JSON of the inlined result (completed).
        error: the JSON of the inlined JSON-RPC error object (failed).
        input_requests: open questions: key -> JSON of ``{"method", "params"}``.
        alive: whether the worker running it still beats (a store sets it on load).
    """

    task_id: str
    status: str
    created_at: float
    updated_at: float
    owner: str | None = None
    status_message: str | None = None
    result: bytes | None = None
    error: bytes | None = None
    input_requests: dict[str, bytes] = msgspec.field(default_factory=dict)
    alive: bool = True


class TaskMessage(msgspec.Struct, frozen=True, kw_only=True):
    """For the worker running ``task_id``: the client's answer (JSON) to the question
    ``key``, or (``key`` ``None``) a cancellation."""

    task_id: str
    key: str | None = None
    answer: bytes = b""


@runtime_checkable
class TaskStore(Protocol):
    """Where the tasks of a multi-worker deployment are kept (see the module docstring).
    Every call is one bounded round trip and may raise :class:`StoreUnavailable`, except
    :meth:`task_messages`, which a driver calls off its loop."""

    def create_task(self, task: TaskSnapshot, ttl: float) -> None:
        """Keep ``task`` (run by this worker) for ``ttl`` seconds."""
        ...

    def load_task(self, task_id: str) -> TaskSnapshot | None:
        """The task ``task_id``, or ``None`` (unknown, expired)."""
        ...

    def ask_task(self, task_id: str, key: str, request: bytes, wall: float) -> None:
        """The task waits for an answer to ``request`` (JSON of ``{"method", "params"}``)
        under ``key``: its status becomes ``input_required``."""
        ...

    def end_task(self, task_id: str, status: str, wall: float, result: bytes | None = None,
                 error: bytes | None = None) -> bool:
        """Move the task to a terminal ``status`` with its inlined result or error, unless it
        is terminal already; whether it moved."""
        ...

    def answer_task(self, task_id: str, answers: dict[str, bytes], wall: float) -> list[str]:
        """Pass the answers to open questions to the task's worker (the keys no longer
        open are left out); the keys passed. The status goes back to ``working`` when no
        question stays open."""
        ...

    def cancel_task(self, task_id: str, wall: float) -> bool:
        """Mark the task ``cancelled`` (unless it is terminal) and tell its worker; whether
        it was running."""
        ...

    def task_messages(self, timeout: float) -> list[TaskMessage]:
        """The answers and cancellations other workers passed to this one's tasks, waiting
        up to ``timeout`` seconds for the first (blocking: the driver calls it off its loop)."""
        ...


class MemorySessionStore:
    """Sessions in this process's memory, at most ``max_sessions`` (the oldest goes)."""

    def __init__(self, max_sessions: int = 10_000) -> None:
        self._records: OrderedDict[str, SessionRecord] = OrderedDict()
        self._max = max_sessions
        self.shared = False

    def save(self, record: SessionRecord) -> None:
        """Store or replace ``record``."""
        self._records[record.session_id] = record
        self._records.move_to_end(record.session_id)
        while len(self._records) > self._max:
            self._records.popitem(last=False)

    def load(self, session_id: str) -> SessionRecord | None:
        """The session ``session_id``, if it is known."""
        return self._records.get(session_id)

    def touch(self, session_id: str) -> bool:
        """Whether ``session_id`` is known."""
        return session_id in self._records

    def delete(self, session_id: str) -> None:
        """Forget ``session_id``."""
        self._records.pop(session_id, None)


class MemoryEventStore:
    """Events in this process's memory: the last ``max_events`` of each session, and no more
    than ``max_bytes`` of them (the oldest go first; a stream whose client stopped reading
    goes on here, so this bounds what it costs).

    Event ids are ``<stream>-<sequence>``, opaque to clients. ``follow`` answers at once
    (it never waits): enough for servers sharing one process, as the tests have them.
    """

    def __init__(self, max_events: int = 1000, max_bytes: int = 4 * 1024 * 1024) -> None:
        self._events: dict[str, deque[tuple[int, int, bytes, bool]]] = {}
        self._sizes: dict[str, int] = {}
        self._next: dict[str, int] = {}
        self._requests: dict[tuple[str, int], int | str] = {}  # of the streams with events kept
        self._last: dict[tuple[str, int], int] = {}  # (session, stream) -> its newest event's sequence
        self._max = max_events
        self._max_bytes = max_bytes
        self.shared = False

    def append(self, session_id: str, stream: int, data: bytes, final: bool = False,
               request_id: int | str | None = None) -> str:
        """Keep one event; its id."""
        return self.extend(session_id, stream, ((data, final),), request_id)[0]

    def extend(self, session_id: str, stream: int, events: Sequence[tuple[bytes, bool]],
               request_id: int | str | None = None) -> list[str]:
        """Keep several events of ``stream``, in order; their ids."""
        if not events:
            return []
        key = (session_id, stream)
        if request_id is not None:
            self._requests[key] = request_id
        kept = self._events.get(session_id)
        if kept is None:
            kept = self._events[session_id] = deque()
        seq = self._next.get(session_id, 0)
        size = self._sizes.get(session_id, 0)
        ids = []
        for data, final in events:
            seq += 1
            kept.append((stream, seq, data, final))
            size += len(data)
            ids.append(f"{stream}-{seq}")
        self._next[session_id] = seq
        last = self._last
        last[key] = seq
        while len(kept) > self._max or (size > self._max_bytes and len(kept) > 1):
            gone = kept.popleft()
            size -= len(gone[2])
            gone_key = (session_id, gone[0])
            if last.get(gone_key) == gone[1]:  # the stream's newest event went, so every one of them
                del last[gone_key]
                self._requests.pop(gone_key, None)
        self._sizes[session_id] = size
        return ids

    def replay(self, session_id: str, last_event_id: str) -> Replay | None:
        """The stream of ``last_event_id`` and its later events, or ``None``."""
        stream_text, _, seq_text = last_event_id.partition("-")
        if not stream_text.isdigit() or not seq_text.isdigit():
            return None
        stream, seq = int(stream_text), int(seq_text)
        events = self._events.get(session_id)
        seen = None if events is None else next((e for e in events if e[0] == stream and e[1] == seq), None)
        if events is None or seen is None:
            return None
        later = [e for e in events if e[0] == stream and e[1] > seq]
        return Replay(stream=stream, events=[(f"{s}-{n}", data) for s, n, data, _ in later],
                      finished=seen[3] or any(e[3] for e in later),
                      request_id=self._requests.get((session_id, stream)))

    def forget(self, session_id: str) -> None:
        """Drop every event of ``session_id``."""
        events = self._events.pop(session_id, None)
        self._sizes.pop(session_id, None)
        self._next.pop(session_id, None)
        for stream in {event[0] for event in events or ()}:  # the session's streams with events kept
            self._last.pop((session_id, stream), None)
            self._requests.pop((session_id, stream), None)

    def follow(self, wants: Sequence[Follow], timeout: float) -> list[Relayed]:
        """The events of each of ``wants``' stream stored after its position (at once:
        ``timeout`` is not waited)."""
        out: list[Relayed] = []
        for want in wants:
            after = int(want.after.rpartition("-")[2] or 0)
            for stream, seq, data, final in self._events.get(want.session_id, ()):
                if stream == want.stream and seq > after:
                    out.append(Relayed(session_id=want.session_id, stream=stream, event_id=f"{stream}-{seq}",
                                       data=data, final=final, since=want.after))
        return out
