"""The Streamable HTTP server's handshake-era sessions: the table and the routing to it.

:class:`SessionRouter` keeps one :class:`~.http_streams.Legacy` per ``Mcp-Session-Id``
(least recently active first, counted per peer so that one client cannot fill the
table), finds a session for a request (rebuilding one another worker saved in the
session store), makes room when the table is full, ends sessions, resumes their streams
from ``Last-Event-ID``, and follows streams and inboxes that other workers write to (a
shared store). It sits on :class:`~.http_respond.ResponseWriter` (the exchanges it
writes into) and under :class:`~.http.HttpServer` (the requests).
"""

from __future__ import annotations

import hashlib
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .. import jsonrpc
from .exchanges import HttpExchanges
from .http11 import RequestReceived
from .http_config import HttpConfig
from .http_respond import ResponseWriter
from .http_streams import Exchange, Legacy, LegacyHost, Mode, sse_event
from .session import ServerSession
from .stores import (
    INBOX_STREAM,
    EventStore,
    Follow,
    MemorySessionStore,
    Relayed,
    SessionRecord,
    SessionStore,
    StoreUnavailable,
)

if TYPE_CHECKING:
    from .app import MCPServer
    from .authz import Principal

__all__ = ["SessionRouter"]


class SessionRouter(ResponseWriter):
    """The handshake-era sessions of an HTTP server (see the module).

    Args:
        app, secret, entropy, wall_offset, config, events, exchanges: see
            :class:`~.http_respond.ResponseWriter`.
        sessions: where handshake-era sessions are kept (default: this process).
    """

    def __init__(self, app: MCPServer, *, secret: bytes, entropy: bytes, wall_offset: float,
                 config: HttpConfig | None, sessions: SessionStore | None, events: EventStore | None,
                 exchanges: HttpExchanges | None) -> None:
        super().__init__(app, secret=secret, entropy=entropy, wall_offset=wall_offset, config=config,
                         events=events, exchanges=exchanges)
        # this process's SSE streams and questions to clients are numbered from here: apart
        # from other workers' in a shared session (a random 32-bit base, 2**20 apart)
        self._stream_base = int.from_bytes(hashlib.sha256(b"streams/" + entropy).digest()[:4], "big") << 20
        self.session_store: SessionStore = sessions or MemorySessionStore()
        self._legacy: OrderedDict[str, Legacy] = OrderedDict()  # least recently active first
        self._peer_sessions: Counter[str | None] = Counter()
        self._following: dict[tuple[str, int], str] = {}  # (session, stream) -> last event relayed
        self._follow_request: dict[tuple[str, int], int | str | None] = {}  # ... -> the request it answers

    # ------------------------------------------------------------ streams other workers produce

    def follows(self) -> list[Follow]:
        """The streams resumed here whose requests run on another worker, and the inboxes
        of the sessions whose calls run here (answers and cancellations other workers
        received): the driver passes them to ``event_store.follow`` (off its loop) and what
        it returns to :meth:`receive_relayed`. Changes nothing."""
        follows = [Follow(session_id=sid, stream=stream, after=after)
                   for (sid, stream), after in self._following.items()]
        for sid in self._inboxes:
            legacy = self._legacy[sid]
            if legacy.session.calls and legacy.inbox_after is not None:
                follows.append(Follow(session_id=sid, stream=INBOX_STREAM, after=legacy.inbox_after))
        return follows

    def receive_relayed(self, relayed: Sequence[Relayed], now: float) -> None:
        """Events another worker stored for streams this one follows: each goes to the
        client once, in order; a final one ends its stream. Events of streams no longer
        followed (the client left again) are dropped: the store still has them."""
        start = dict(self._following)
        inboxes = {sid: self._legacy[sid].inbox_after for sid in self._inboxes}
        for item in relayed:
            key = (item.session_id, item.stream)
            if item.stream == INBOX_STREAM:
                if inboxes.get(item.session_id) == item.since:  # else: gone, or read for an earlier position
                    self._inbox_message(self._legacy[item.session_id], item, now)
                continue
            if start.get(key) != item.since or key not in self._following:
                continue  # read for an earlier position (resumed again since), or no longer followed
            legacy = self._legacy[item.session_id]  # followed: its session and exchange are here
            ex = self._exchanges[legacy.live[item.stream]]
            self._following[key] = item.event_id
            data, final = item.data, item.final
            event_id: str | None = item.event_id
            if item.abandoned:  # its worker died: answer for it, for this and any later resumption
                request_id = self._follow_request.get(key)
                why = ("the session store lost this request's stream" if item.lost
                       else "the server process running this request stopped")
                data = b"" if request_id is None else jsonrpc.encode_error(
                    request_id, jsonrpc.INTERNAL_ERROR, why)
                event_id, final = self._append(legacy, item.stream, data, True), True
            if data:
                self.http.send(ex.id, sse_event(data, event_id))
            if final:
                del self._following[key]
                self._follow_request.pop(key, None)
                self._exchanges.pop(ex.id, None)
                ex.mode = Mode.DONE
                self.http.end(ex.id, now=now)
                self._stream_done(legacy, item.stream)
        self._pump(now)

    def _inbox_message(self, legacy: Legacy, item: Relayed, now: float) -> None:
        """An answer or a cancellation another worker received for a session of ours."""
        legacy.inbox_after = item.event_id
        if item.data:  # (none: the store's position moved past events of other streams)
            legacy.session.receive_message(item.data, now, None)  # unknown ids: discarded (not ours)

    # ------------------------------------------------------------ sessions

    def _resume(self, req: RequestReceived, legacy: Legacy, last: str, now: float) -> None:
        replay = self.event_store.replay(legacy.id, last)
        if replay is None:
            self._plain(req, 404, "Not Found: unknown Last-Event-ID", now)
            return
        stream, events = replay.stream, replay.events
        produced_here = any(legacy.stream_of.get(-1 if c.channel is None else c.channel) == stream
                            for c in legacy.session.calls.values())
        ex = Exchange(req.exchange, legacy, False, True)
        self._exchanges[req.exchange] = ex
        self.http.start_stream(req.exchange, 200, legacy.sse_head)
        ex.mode = Mode.SSE
        for event_id, data in events:
            if data:
                self.http.send(req.exchange, sse_event(data, event_id))
        kept_final = False
        for session_id, kept_stream, data, final in self._unstored:
            if session_id == legacy.id and kept_stream == stream:  # what the store has not taken yet
                self.http.send(req.exchange, sse_event(data, None))
                kept_final = kept_final or final
        legacy.stream_of[req.exchange] = stream
        previous = legacy.live.get(stream)
        if previous is not None:  # a stale connection of the same stream: the new one takes over
            self._exchanges.pop(previous, None)
            self.http.abort(previous)
        legacy.live[stream] = req.exchange
        if stream == 0:
            legacy.get_exchange = req.exchange
        finished = replay.finished or stream in legacy.finished_streams or kept_final
        if finished:
            self.http.end(req.exchange, now=now)
            self._exchanges.pop(req.exchange, None)
            legacy.live.pop(stream, None)
        elif self.event_store.shared and stream != 0 and not produced_here:
            # another worker runs the request: relay what it stores from here on
            self._following[legacy.id, stream] = events[-1][0] if events else last
            self._follow_request[legacy.id, stream] = replay.request_id

    def _new_session(self, peer: str | None, now: float, principal: Principal | None) -> Legacy:
        session_id = self.new_id("session")
        legacy = Legacy(session_id, now + self.config.session_idle_timeout, peer)
        legacy.owner = None if principal is None else principal.identity
        legacy.next_stream = self._stream_base
        legacy.host = LegacyHost(self, legacy)
        legacy.session = ServerSession(self.app, legacy.host, first_request_id=self._stream_base,
                                       session_id=session_id)
        self._legacy[session_id] = legacy
        self._peer_sessions[peer] += 1
        return legacy

    def _touch(self, legacy: Legacy, now: float) -> None:
        """``legacy`` served a request: it expires later and is the most recently active."""
        legacy.expires_at = now + self.config.session_idle_timeout
        self._legacy.move_to_end(legacy.id)

    def _make_room(self, peer: str | None, now: float) -> tuple[int, str] | None:
        """Make room for a new session of ``peer``: end an idle session if the peer's or the
        server's limit is reached; the status and message to refuse with when none can go."""
        config = self.config
        if self._peer_sessions[peer] >= config.max_sessions_per_peer:
            victim = self._idle_session(lambda s: s.peer == peer and not s.used) or self._idle_session(
                lambda s: s.peer == peer)
            if victim is None:
                return 429, "Too Many Requests: this client holds too many sessions; end some (DELETE)"
            # (with a shared store only this worker's copy: it may be busy at another worker)
            self._end_session(victim, now, "its client opened too many sessions",
                              forget=not self.session_store.shared)
        elif len(self._legacy) >= config.max_sessions:
            victim = self._idle_session(lambda s: not s.used)
            if victim is None:
                return 503, "Service Unavailable: too many sessions"
            self._end_session(victim, now, "the server needed room for a new session",
                              forget=not self.session_store.shared)
        return None

    def _idle_session(self, which: Callable[[Legacy], bool]) -> Legacy | None:
        """The least recently active session ``which`` accepts that is idle (no request
        running, no stream open), or ``None``."""
        for legacy in self._legacy.values():
            if which(legacy) and not legacy.live and legacy.get_exchange is None and not legacy.session.calls:
                return legacy
        return None

    def _find(self, session_id: str, now: float, principal: Principal | None) -> Legacy | None:
        """The live session ``session_id``, or one rebuilt from the session store; ``None``
        also when the server checks tokens and the session belongs to another principal
        (as if it did not exist: 404, as the official SDK answers)."""
        owner = None if principal is None else principal.identity
        legacy = self._legacy.get(session_id)
        if legacy is not None:
            if legacy.owner != owner:
                return None
            # (one never saved, its store down at its initialize, is not missing there: it
            # was never there; the request saves it)
            store = self.session_store
            if store.shared and legacy.saved is not None and not store.touch(session_id):
                self._end_session(legacy, now, "the session ended", forget=False)  # by another worker
                return None
            return legacy
        record = self.session_store.load(session_id)
        if record is None or record.owner != owner or self._make_room(None, now) is not None:
            return None
        legacy = Legacy(session_id, now + self.config.session_idle_timeout, None)
        legacy.used = True
        legacy.owner = owner
        legacy.next_stream = self._stream_base
        legacy.host = LegacyHost(self, legacy)
        session = legacy.session = ServerSession(self.app, legacy.host, first_request_id=self._stream_base,
                                                 session_id=session_id)
        session.handshake.resume(protocol_version=record.protocol_version, client_info=record.client_info,
                                 client_capabilities=record.client_capabilities, log_level=record.log_level,
                                 subscriptions=set(record.subscriptions))
        legacy.saved = record
        self._legacy[session_id] = legacy
        self._peer_sessions[None] += 1
        return legacy

    def _remember(self, legacy: Legacy) -> None:
        """Keep the session's identity in the store when it changed."""
        session = legacy.session.handshake
        if legacy.saved_revision == session.revision:
            return  # nothing it keeps changed since it was saved (or found the same)
        if session.protocol_version is None or session.client_info is None:
            return
        saved = legacy.saved
        if (saved is not None and saved.client_info is session.client_info
                and saved.client_capabilities is session.client_capabilities
                and saved.protocol_version == session.protocol_version
                and saved.log_level == session.log_level
                and saved.owner == legacy.owner and len(saved.subscriptions) == len(session.subscriptions)
                and all(uri in session.subscriptions for uri in saved.subscriptions)):
            legacy.saved_revision = session.revision
            return  # (what each request would otherwise build and compare)
        record = SessionRecord(
            session_id=legacy.id, protocol_version=session.protocol_version, client_info=session.client_info,
            client_capabilities=session.client_capabilities, log_level=session.log_level,
            subscriptions=sorted(session.subscriptions), owner=legacy.owner,
        )
        if record != legacy.saved:
            try:
                self.session_store.save(record)
            except StoreUnavailable:
                return  # served here all the same; the next request tries again
            legacy.saved = record
        legacy.saved_revision = session.revision

    def _end_session(self, legacy: Legacy, now: float, reason: str, *, forget: bool = True) -> None:
        """End ``legacy`` here; ``forget``: in the stores too (else other workers go on
        serving it, and a shared store's TTL ends it)."""
        del self._legacy[legacy.id]
        self.untimed(legacy.session)
        self._peer_sessions[legacy.peer] -= 1
        if not self._peer_sessions[legacy.peer]:
            del self._peer_sessions[legacy.peer]
        legacy.session.close(now, reason)
        for key in [k for k in self._following if k[0] == legacy.id]:
            del self._following[key]
            self._follow_request.pop(key, None)
        self._inboxes.pop(legacy.id, None)
        if forget:
            if self._unstored:
                self._unstored = deque(event for event in self._unstored if event[0] != legacy.id)
            try:
                self.session_store.delete(legacy.id)
                self.event_store.forget(legacy.id)
            except StoreUnavailable:
                pass  # a shared store's TTL forgets it
        for exchange in [e for e, ex in self._exchanges.items() if ex.legacy is legacy]:
            del self._exchanges[exchange]
            self.http.abort(exchange)
