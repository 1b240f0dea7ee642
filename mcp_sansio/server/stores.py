"""What a multi-worker HTTP deployment must share: sessions and resumable stream events.

A handshake-era session lives on the worker that opened it, but its identity (version,
client, capabilities, log level, subscriptions) can be kept in a :class:`SessionStore`
so that any worker can serve its next request; SSE events kept in an
:class:`EventStore` let a client resume a broken stream (``Last-Event-ID``) on any
worker. Stateless 2026-07-28 requests need neither. The stores are called by the core
and so are synchronous; the in-memory defaults serve one process. A shared store must
answer quickly (local shared memory, an embedded database), since it runs on the loop.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Protocol

import msgspec

from ..types import ClientCapabilities, Implementation, LoggingLevel

__all__ = ["EventStore", "MemoryEventStore", "MemorySessionStore", "SessionRecord", "SessionStore"]


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


class SessionStore(Protocol):
    """Where sessions are kept."""

    def save(self, record: SessionRecord) -> None:
        """Store or replace ``record``."""
        ...

    def load(self, session_id: str) -> SessionRecord | None:
        """The session ``session_id``, if it is known."""
        ...

    def delete(self, session_id: str) -> None:
        """Forget ``session_id`` (terminated or expired)."""
        ...


class EventStore(Protocol):
    """Where the events of resumable SSE streams are kept."""

    def append(self, session_id: str, stream: int, data: bytes) -> str:
        """Keep one event (the JSON of a message) of ``stream``; its event id."""
        ...

    def replay(self, session_id: str, last_event_id: str) -> tuple[int, list[tuple[str, bytes]]] | None:
        """The stream ``last_event_id`` belongs to and its events after it, or ``None``
        when the id is unknown (forgotten, or never issued)."""
        ...

    def forget(self, session_id: str) -> None:
        """Drop every event of ``session_id``."""
        ...


class MemorySessionStore:
    """Sessions in this process's memory, at most ``max_sessions`` (the oldest goes)."""

    def __init__(self, max_sessions: int = 10_000) -> None:
        self._records: OrderedDict[str, SessionRecord] = OrderedDict()
        self._max = max_sessions

    def save(self, record: SessionRecord) -> None:
        """Store or replace ``record``."""
        self._records[record.session_id] = record
        self._records.move_to_end(record.session_id)
        while len(self._records) > self._max:
            self._records.popitem(last=False)

    def load(self, session_id: str) -> SessionRecord | None:
        """The session ``session_id``, if it is known."""
        return self._records.get(session_id)

    def delete(self, session_id: str) -> None:
        """Forget ``session_id``."""
        self._records.pop(session_id, None)


class MemoryEventStore:
    """Events in this process's memory: the last ``max_events`` of each session.

    Event ids are ``<stream>-<sequence>``, opaque to clients.
    """

    def __init__(self, max_events: int = 1000) -> None:
        self._events: dict[str, deque[tuple[int, int, bytes]]] = {}
        self._next: dict[str, int] = {}
        self._max = max_events

    def append(self, session_id: str, stream: int, data: bytes) -> str:
        """Keep one event; its id."""
        seq = self._next.get(session_id, 0) + 1
        self._next[session_id] = seq
        events = self._events.setdefault(session_id, deque(maxlen=self._max))
        events.append((stream, seq, data))
        return f"{stream}-{seq}"

    def replay(self, session_id: str, last_event_id: str) -> tuple[int, list[tuple[str, bytes]]] | None:
        """The stream of ``last_event_id`` and its later events, or ``None``."""
        stream_text, _, seq_text = last_event_id.partition("-")
        if not stream_text.isdigit() or not seq_text.isdigit():
            return None
        stream, seq = int(stream_text), int(seq_text)
        events = self._events.get(session_id)
        if events is None or not any(s == stream and n == seq for s, n, _ in events):
            return None
        return stream, [(f"{s}-{n}", data) for s, n, data in events if s == stream and n > seq]

    def forget(self, session_id: str) -> None:
        """Drop every event of ``session_id``."""
        self._events.pop(session_id, None)
        self._next.pop(session_id, None)
