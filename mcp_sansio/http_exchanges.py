"""The HTTP client's table of exchanges, and when a failed one goes again.

State held: the connection pool (:class:`~mcp_sansio.http11.HttpPool`) and the exchanges
it carries, by the id of their current attempt; the exchanges waiting to be sent again
(a heap by time: retries, reconnections, resumptions) with the jitter generator that
spreads them; the exchanges held until an authorization under way ends; and the
:class:`Authorizer` that decides the holding. These are the bookkeeping of requests in
flight, apart from what the client does with their answers
(:class:`~mcp_sansio.http_transport.HttpClient`), so that every place an exchange can
wait is in one object: closing, expiry and a late pool event each find it here.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import NamedTuple, Protocol

from .config import ClientConfig
from .connections import ConnectFailure
from .events import ClientEvent, FailureReason
from .http11 import Header, HttpPool, HttpRequest, PoolEvent, Progress
from .http_exchange import Exchange, ExchangeKind, ExchangeStage, ExchangeTrigger
from .retry import GiveUp, RetryPolicy, decide
from .urls import Url

__all__ = ["AuthPort", "Authorizer", "ExchangeTable"]


class AuthPort(NamedTuple):
    """What an :class:`Authorizer` may ask of the client it authorizes (its own methods,
    handed over when it is bound)."""

    side_request: Callable[[str, str, tuple[Header, ...], bytes, float], int]
    """Send an HTTP request outside MCP (method, URL, headers, body, now); its tag."""
    release: Callable[[float], None]
    """Send the held requests again, with fresh authorization."""
    fail: Callable[[FailureReason, str, float], None]
    """Fail the held requests."""
    extend_handshake: Callable[[float], None]
    """Let the handshake under way run until at least then (the user is authorizing)."""
    add_event: Callable[[ClientEvent], None]
    """Queue an event for the app, in order with the session's."""


class Authorizer(Protocol):
    """A component that authorizes an :class:`~mcp_sansio.http_transport.HttpClient`'s MCP
    requests (OAuth: :class:`~mcp_sansio.http_auth.OAuthAuthorizer`). Requests are held
    while it is busy and while it handles a refusal; every call gets the clock."""

    def bind(self, port: AuthPort, url: Url, config: ClientConfig) -> None:
        """Attach to the client (once, when the client is made)."""

    def headers(self, method: str, url: Url, now: float) -> list[Header]:
        """Headers that authorize one MCP request."""

    def credential(self, now: float) -> int:
        """Which credential :meth:`headers` adds now; it comes back with the answer."""

    def holding(self) -> bool:
        """Whether MCP requests should wait instead of going out unauthorized."""

    def answered(self, status: int, headers: tuple[Header, ...], credential: int, now: float) -> None:
        """An MCP request sent with ``credential`` got a status other than 401 and 403."""

    def refused(self, status: int, headers: tuple[Header, ...], credential: int, now: float) -> bool:
        """An MCP request sent with ``credential`` got 401 or 403; ``True`` keeps it held
        until the port's ``release`` or ``fail``, ``False`` fails it at once."""

    def side_answered(self, tag: int, status: int, headers: tuple[Header, ...], body: bytes,
                      now: float) -> bool:
        """A side request was answered; ``True`` if it was this component's."""

    def side_failed(self, tag: int, message: str, now: float) -> bool:
        """A side request got no answer; ``True`` if it was this component's."""

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timeout` is due."""

    def handle_timeout(self, now: float) -> None:
        """Renew, or give up waiting, when due."""


class ExchangeTable:
    """Every exchange the client has not finished with: in the pool, scheduled, or held."""

    __slots__ = ("_held", "_live", "_next_id", "_rng", "_scheduled", "auth", "pool")

    def __init__(self, pool: HttpPool, jitter_seed: int, authorizer: Authorizer | None) -> None:
        self.pool = pool
        self.auth = authorizer
        self._next_id = 0
        self._live: dict[int, Exchange] = {}  # in the pool, by the id of their attempt
        self._scheduled: list[tuple[float, int, Exchange]] = []  # (at, exchange id, exchange)
        self._held: list[Exchange] = []  # refused or deferred until authorization ends
        self._rng = (jitter_seed * 6364136223846793005 + 1442695040888963407) & (2**64 - 1) or 1

    # ------------------------------------------------------------------ queries

    def get(self, exchange_id: int) -> Exchange | None:
        """The live exchange whose current attempt is ``exchange_id``."""
        return self._live.get(exchange_id)

    def live(self) -> list[Exchange]:
        """The exchanges in the pool, oldest attempt first."""
        return list(self._live.values())

    def is_live(self, ex: Exchange) -> bool:
        """Whether ``ex`` is in the pool (not abandoned, not ended)."""
        return ex.id in self._live

    def scheduled(self) -> list[Exchange]:
        """The exchanges scheduled to go again."""
        return [ex for _, _, ex in self._scheduled]

    def waiting(self) -> Iterator[Exchange]:
        """The exchanges scheduled to go again, then those held for authorization."""
        yield from (ex for _, _, ex in self._scheduled)
        yield from self._held

    def progress(self, ex: Exchange) -> Progress:
        """How far the pool has got with the live ``ex``."""
        progress = self.pool.progress(ex.id)
        assert progress is not None  # what the table holds live is in the pool
        return progress

    def stall(self, handshake_id: int | None, *, legacy_stream: bool) -> str:
        """Where the exchange carrying ``handshake_id`` stands (connecting, waiting,
        reading, retrying), for a message; ``legacy_stream``: the legacy stream's, while
        it names no endpoint."""
        live = self._live.values()
        ex = next((e for e in live if handshake_id in e.request_ids), None)
        if ex is None and legacy_stream:
            ex = next((e for e in live if e.kind is ExchangeKind.LEGACY_STREAM), None)
        if ex is None:
            waiting = self.waiting()
            if any(handshake_id in e.request_ids or e.kind is ExchangeKind.LEGACY_STREAM for e in waiting):
                return "; its request was waiting to be sent again"
            return ""
        progress = self.progress(ex)
        what = ("the SSE stream sent no endpoint event"
                if ex.kind is ExchangeKind.LEGACY_STREAM and progress is Progress.RECEIVING
                else progress.value)
        return f"; {ex.method} {ex.url}: {what}"

    def next_deadline(self) -> float | None:
        """The first scheduled retry or pool timer."""
        first = self._scheduled[0][0] if self._scheduled else None
        pool = self.pool.next_deadline()
        if first is None or (pool is not None and pool < first):
            return pool
        return first

    # ------------------------------------------------------------------ moves

    def new(self, kind: ExchangeKind, method: str, url: Url, headers: tuple[Header, ...], body: bytes,
            ids: tuple[int, ...], last_event_id: str = "") -> Exchange:
        """A fresh exchange (not sent yet)."""
        self._next_id += 1
        ex = Exchange(self._next_id, kind, method, url, headers, body, ids)
        ex.last_event_id = last_event_id
        return ex

    def submit(self, ex: Exchange, now: float) -> None:
        """Hand ``ex`` to the pool, with the authorizer's headers, or hold it while the
        authorizer is busy (it would only be refused: it goes once authorized)."""
        auth = self.auth
        if ex.kind is not ExchangeKind.SIDE and ex.kind is not ExchangeKind.DELETE and auth is not None \
                and auth.holding():
            self.hold(ex)
            return
        ex.move(ExchangeTrigger.SUBMIT)
        self._next_id += 1  # a fresh id per attempt: late pool events of an old one are ignored
        ex.id = self._next_id
        self._live[ex.id] = ex
        ex.status = 0
        ex.sse = None
        ex.buffer = None
        headers = ex.headers
        if ex.kind is not ExchangeKind.SIDE and auth is not None:
            ex.credential = auth.credential(now)
            extra = auth.headers(ex.method, ex.url, now)
            if extra:
                headers = (*headers, *extra)
        short = ex.kind in (ExchangeKind.SIDE, ExchangeKind.DELETE) or (
            ex.kind in (ExchangeKind.POST, ExchangeKind.LEGACY_POST)
            and not ex.request_ids)  # answers and notifications
        self.pool.submit(HttpRequest(exchange=ex.id, method=ex.method, url=ex.url, headers=headers,
                                     body=ex.body, short=short), now)

    def side_request(self, method: str, url: Url, headers: tuple[Header, ...], body: bytes,
                     now: float) -> int:
        """Send a request outside MCP, read whole; its tag (the id of its first attempt)."""
        lowered = tuple((k.lower(), v) for k, v in headers)
        ex = Exchange(0, ExchangeKind.SIDE, method, url, lowered, body, ())
        ex.buffer = bytearray()
        self.submit(ex, now)
        ex.tag = ex.id
        return ex.tag

    def next_event(self) -> tuple[Exchange, PoolEvent] | None:
        """The pool's next event and the live exchange it is about, skipping events of
        abandoned ones (the pool dropped their queued events; these came after)."""
        while (event := self.pool.next_event()) is not None:
            ex = self._live.get(event.exchange)
            if ex is not None:
                return ex, event
        return None

    def ended(self, ex: Exchange, trigger: ExchangeTrigger) -> None:
        """The pool is done with ``ex`` (its response ended or broke)."""
        self._live.pop(ex.id, None)
        ex.move(trigger)

    def cancel(self, ex: Exchange, now: float) -> None:
        """Stop the pool's work on ``ex`` (if it still has it)."""
        if self._live.pop(ex.id, None) is not None:
            self.pool.cancel(ex.id, now)

    def abandon(self, ex: Exchange, now: float) -> None:
        """Give ``ex`` up: out of the pool, and done."""
        self.cancel(ex, now)
        ex.move(ExchangeTrigger.ABANDON)

    def abandon_all(self, now: float) -> None:
        """Give up every exchange: in flight, waiting for a retry, held for authorization."""
        for ex in [*self._live.values(), *self.waiting()]:
            self.abandon(ex, now)
        self._scheduled.clear()
        self._held.clear()

    def close(self) -> None:
        """Close the pool; every exchange in it is done."""
        self.pool.close()
        for ex in self._live.values():
            ex.move(ExchangeTrigger.ABANDON)
        self._live.clear()

    # ---------------------------------------------------------------- retries

    def schedule(self, ex: Exchange, policy: RetryPolicy, now: float, server_retry: float | None, *,
                 deadline: float | None = None) -> bool:
        """Retry ``ex`` later per ``policy``; False when the policy gives up, or when the
        retry would come at or after ``deadline`` (what waits on it would time out first)."""
        ex.attempt += 1
        decision = decide(policy, ex.attempt, now, server_retry, self._jitter())
        if isinstance(decision, GiveUp) or (deadline is not None and decision.at >= deadline):
            return False
        ex.move(ExchangeTrigger.RETRY)
        heapq.heappush(self._scheduled, (decision.at, ex.id, ex))
        return True

    def refused_by(self, now: float, deadline_of: Callable[[Exchange], float | None],
                   ) -> list[tuple[Exchange, ConnectFailure]]:
        """The exchanges retried after their connect failed whose deadline (by
        ``deadline_of``) came while they waited for the next attempt, or while it
        connected, with the refusal; off the schedule. They fail with the refusal, not a
        timeout: the last real cause is what the caller hears."""
        out = []
        for ex in [*self.scheduled(), *self._live.values()]:
            deadline = None if ex.refused is None else deadline_of(ex)
            if ex.refused is None or deadline is None or deadline > now:
                continue
            if ex.stage is ExchangeStage.SCHEDULED:
                self.unschedule(ex)
            out.append((ex, ex.refused))
        return out

    def submit_due(self, now: float, wanted: Callable[[Exchange], bool]) -> None:
        """Send every scheduled exchange due at or before ``now`` that is still
        ``wanted``; give up the others."""
        while self._scheduled and self._scheduled[0][0] <= now:
            self._resubmit(heapq.heappop(self._scheduled)[2], now, wanted)

    def _resubmit(self, ex: Exchange, now: float, wanted: Callable[[Exchange], bool]) -> None:
        if not wanted(ex):
            ex.move(ExchangeTrigger.ABANDON)
            return
        self.submit(ex, now)

    def unschedule(self, ex: Exchange) -> None:
        """Take the scheduled ``ex`` off the schedule."""
        self._scheduled = [entry for entry in self._scheduled if entry[2] is not ex]
        heapq.heapify(self._scheduled)

    def _jitter(self) -> float:
        # xorshift64: entropy came in once as the seed (STYLE.md section 1).
        x = self._rng
        x ^= (x << 13) & (2**64 - 1)
        x ^= x >> 7
        x ^= (x << 17) & (2**64 - 1)
        self._rng = x
        return (x >> 11) / float(1 << 53)

    # ---------------------------------------------------------- authorization

    def hold(self, ex: Exchange) -> None:
        """Hold ``ex`` until the authorization under way ends."""
        ex.move(ExchangeTrigger.HOLD)
        self._held.append(ex)

    def unhold(self, ex: Exchange) -> None:
        """``ex`` is not held after all."""
        self._held.remove(ex)

    def release_held(self, now: float, wanted: Callable[[Exchange], bool]) -> None:
        """Send every held exchange that is still ``wanted`` (with fresh authorization);
        give up the others."""
        for ex in self.take_held():
            self._resubmit(ex, now, wanted)

    def take_held(self) -> list[Exchange]:
        """Every held exchange, no longer held."""
        held, self._held = self._held, []
        return held
