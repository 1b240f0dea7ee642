"""Sessions and SSE events in Redis or Valkey: the store several worker processes share.

``open_store("redis://host:6379/0")`` gives one :class:`RedisStore`, which is both the
``SessionStore`` and the ``EventStore`` of ``HttpServer`` (``rediss://`` for TLS;
``valkey://`` and ``valkeys://`` name the same protocol). It uses redis-py's blocking
client with short socket timeouts: the core calls a store synchronously, so each call is
one bounded round trip (a pipeline where it takes several commands), and a store that
does not answer in time raises ``StoreUnavailable`` (the request gets a 503) instead of
stalling the loop. The only call that waits, :meth:`RedisStore.follow` (``XREAD BLOCK``),
runs on a connection of its own and is made by the driver off its loop, so asyncio,
trio, the blocking driver and ASGI all share this one implementation.

A store that is down or stalled (refused, timed out, unreachable) is asked again only
after ``RETRY_AFTER`` seconds, or as soon as the relay's own calls (off the loop, every
second at least) find it answering: meanwhile the core's calls fail at once, so a stalled
Redis costs the loop one timeout, not one per request (the blocking driver has one
thread for every client). The relay's calls to a store that failed wait out their time
before they return, so that a relay loop does not spin against it. The outage and the
recovery are logged once each (``mcp_sansio.store``, with the password masked); clients
are told only that the session store did not answer.

Layout, under a key prefix (``mcp:`` by default, ``?prefix=`` in the URL):

- ``<prefix>s:<session id>``: the ``SessionRecord`` as JSON, with a TTL (``?session_ttl=``
  seconds, default 1800) that every request restarts (``EXPIRE``/``GETEX``).
- ``<prefix>e:<session id>``: a Redis Stream of the session's SSE events (fields ``s``: the
  SSE stream number, ``d``: the data, ``f``: present on a stream's final event), bounded
  by length (``XADD MAXLEN ~``, ``?max_events=``, default 1000) and age (``XTRIM MINID ~``
  and the key's TTL, ``?event_ttl=`` seconds, default 3600). An event id is
  ``<stream>.<entry id>``: opaque to clients.
- ``<prefix>i:<session id>``: the session's inbox (``INBOX_STREAM``: the client's answers and
  cancellations, for the worker whose call waits), bounded alike. A key of its own, so that a
  worker following it is not woken by the session's SSE events; since entry ids are times on
  the one Redis clock, a position in the events reads the inbox from 1 ms before it (a
  message read twice is harmless: an answer or cancellation of no pending request is dropped).
- ``<prefix>r:<session id>``: stream number -> ``[worker, request id]``: who produces each
  request's stream; ``<prefix>w:<worker>``: that worker's heartbeat (a key with a 5 s TTL its
  relay renews every second). A worker following a stream whose producer's heartbeat is gone
  reports it abandoned, and the core answers the request with an error for the dead worker.
- ``<prefix>t:<task id>``: a task (the ``TaskStore``): a hash of its status ``st``, times ``c``
  and ``u``, owner ``o``, message ``m``, inlined result ``r`` or error ``e``, and the worker
  ``w`` running it; ``<prefix>tp:<task id>``: its open questions (key -> request). Both
  expire with the task's TTL. ``<prefix>tq:<worker>``: a stream of the answers and
  cancellations other workers passed to that worker's tasks (fields ``t``: the task, ``k``:
  the question's key, absent for a cancellation, ``a``: the answer). Every change is one Lua
  script (one round trip, atomic: a task that ended never changes again); a task whose
  worker's heartbeat is gone is reported not ``alive`` and the core fails it. The scripts
  name the worker's key from the task's hash: one Redis (or a primary), not Redis Cluster.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar, cast
from urllib.parse import parse_qs, urlsplit

import msgspec
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from mcp_sansio.server.stores import (
    INBOX_STREAM,
    Follow,
    Relayed,
    Replay,
    SessionRecord,
    StoreUnavailable,
    TaskMessage,
    TaskSnapshot,
)

__all__ = ["RedisStore", "open_store"]

_log = logging.getLogger("mcp_sansio.store")

T = TypeVar("T")
Entries = list[tuple[bytes, dict[bytes, bytes]]]  # XRANGE's answer (redis-py types it loosely)

_SCHEMES: Final = {"redis": "redis", "rediss": "rediss", "valkey": "redis", "valkeys": "rediss",
                   "unix": "unix"}
_encode: Final = msgspec.json.Encoder().encode
_decode_record: Final = msgspec.json.Decoder(SessionRecord).decode
_decode_producer: Final = msgspec.json.Decoder(tuple[str, int | str]).decode
HEARTBEAT_TTL: Final = 5
"""Seconds a worker's heartbeat lives: how long a killed worker's streams wait for it."""
HEARTBEAT_EVERY: Final = 1.0
RETRY_AFTER: Final = 1.0
"""Seconds the core's calls fail at once after the store failed to answer (unless the
relay finds it answering sooner): one stalled call, not one per request."""
_DOWN: Final = (RedisConnectionError, RedisTimeoutError, OSError)
"""What says the store is unreachable (refused, timed out, not authenticated, loading),
rather than answering with an error of one command."""
MAX_TASK_MESSAGES: Final = 1000
"""Messages kept in a worker's task queue (``XADD MAXLEN ~``)."""

_TERMINAL_LUA: Final = ("local function ended(st) return st == 'completed' or st == 'failed' "
                        "or st == 'cancelled' end\n")
_LOAD_TASK: Final = """
local task = redis.call('HGETALL', KEYS[1])
if #task == 0 then return false end
local worker = redis.call('HGET', KEYS[1], 'w') or '?'
return {task, redis.call('HGETALL', KEYS[2]), redis.call('EXISTS', ARGV[1] .. worker)}
"""
_ASK_TASK: Final = _TERMINAL_LUA + """
local st = redis.call('HGET', KEYS[1], 'st')
if not st or ended(st) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], math.max(1, redis.call('PTTL', KEYS[1])))
if st ~= 'input_required' then redis.call('HSET', KEYS[1], 'st', 'input_required', 'u', ARGV[3]) end
return 1
"""
_END_TASK: Final = _TERMINAL_LUA + """
local st = redis.call('HGET', KEYS[1], 'st')
if not st or ended(st) then return 0 end
redis.call('HSET', KEYS[1], 'st', ARGV[1], 'u', ARGV[2], ARGV[3], ARGV[4])
redis.call('DEL', KEYS[2])
return 1
"""
_ANSWER_TASK: Final = _TERMINAL_LUA + """
local st = redis.call('HGET', KEYS[1], 'st')
if not st or ended(st) then return {} end
local queue = ARGV[2] .. (redis.call('HGET', KEYS[1], 'w') or '?')
local passed = {}
for i = 5, #ARGV, 2 do
  if redis.call('HDEL', KEYS[2], ARGV[i]) == 1 then
    redis.call('XADD', queue, 'MAXLEN', '~', ARGV[3], '*', 't', ARGV[4], 'k', ARGV[i], 'a', ARGV[i + 1])
    passed[#passed + 1] = ARGV[i]
  end
end
if #passed > 0 then redis.call('PEXPIRE', queue, math.max(1, redis.call('PTTL', KEYS[1]))) end
if st == 'input_required' and redis.call('HLEN', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[1], 'st', 'working', 'u', ARGV[1])
end
return passed
"""
_CANCEL_TASK: Final = _TERMINAL_LUA + """
local st = redis.call('HGET', KEYS[1], 'st')
if not st or ended(st) then return 0 end
redis.call('HSET', KEYS[1], 'st', 'cancelled', 'u', ARGV[1])
redis.call('DEL', KEYS[2])
local queue = ARGV[2] .. (redis.call('HGET', KEYS[1], 'w') or '?')
redis.call('XADD', queue, 'MAXLEN', '~', ARGV[3], '*', 't', ARGV[4])
redis.call('PEXPIRE', queue, math.max(1, redis.call('PTTL', KEYS[1])))
return 1
"""


class RedisStore:
    """The ``SessionStore``, ``EventStore`` and ``TaskStore`` of every worker, in one Redis
    (or Valkey).

    Args:
        url: ``redis://[[user]:password@]host[:port][/db]`` (also ``rediss://``,
            ``valkey://``, ``valkeys://``, ``unix://``).
        prefix: prepended to every key (several deployments in one database).
        session_ttl: seconds a session lives without a request (match
            ``HttpConfig.session_idle_timeout``).
        max_events: events kept per session (the oldest go first).
        event_ttl: seconds an event is kept at most.
        timeout: seconds one store call may take before ``StoreUnavailable``.
        follow_timeout: the longest one :meth:`follow` waits.
    """

    shared = True

    def __init__(self, url: str, *, prefix: str = "mcp:", session_ttl: float = 1800.0,
                 max_events: int = 1000, event_ttl: float = 3600.0, timeout: float = 0.5,
                 follow_timeout: float = 0.25) -> None:
        self.url = _safe(url)
        """The store's URL, its password masked (``***``)."""
        self.prefix = prefix
        self.session_ttl = max(1, round(session_ttl))
        self.max_events = max_events
        self.event_ttl = max(1, round(event_ttl))
        self.follow_timeout = follow_timeout
        self.round_trips = 0
        """Round trips made for the core's calls (not :meth:`follow`): what a bench reports."""
        self.worker = os.urandom(8).hex()
        """This process's name in the store (its heartbeat, the producer of its streams)."""
        self._beat_at = 0.0
        self._down_until = 0.0  # (monotonic) the core's calls fail at once until then
        self._outage: str | None = None  # why the store failed, while it is down
        self._state = threading.Lock()  # the loop's thread and the relay's report outages
        real = _redis_url(url)
        try:
            self._client: redis.Redis = redis.Redis.from_url(
                real, socket_timeout=timeout, socket_connect_timeout=timeout, retry_on_timeout=False)
            self._follower: redis.Redis = redis.Redis.from_url(
                real, socket_timeout=follow_timeout + timeout, socket_connect_timeout=timeout)
        except ValueError:
            # redis-py's words may quote a piece of the password (a "/" in it ends the host)
            raise ValueError(f"{self.url} is no store URL redis-py can read (in a password, "
                             "percent-encode / # ? and @)") from None
        self._task_after = "0-0"  # the position in this worker's task queue
        self._load_task = self._client.register_script(_LOAD_TASK)
        self._ask_task = self._client.register_script(_ASK_TASK)
        self._end_task = self._client.register_script(_END_TASK)
        self._answer_task = self._client.register_script(_ANSWER_TASK)
        self._cancel_task = self._client.register_script(_CANCEL_TASK)

    def close(self) -> None:
        """Close the connections."""
        self._client.close()
        self._follower.close()

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r}, prefix={self.prefix!r})"

    def _call(self, fn: Callable[[], T]) -> T:
        self.round_trips += 1
        if self._down_until and time.monotonic() < self._down_until:
            raise StoreUnavailable(f"the session store at {self.url} failed: {self._outage}")
        try:
            answer = fn()
        except _DOWN as exc:
            self._failed(exc)
            raise StoreUnavailable(f"the session store at {self.url} failed: {exc}") from exc
        except RedisError as exc:  # it answered, with an error (out of memory, ...): it is up
            self._answered()
            raise StoreUnavailable(f"the session store at {self.url} failed: {exc}") from exc
        if self._outage is not None:
            self._answered()
        return answer

    def _failed(self, exc: BaseException) -> None:
        """The store did not answer: the core's calls fail at once for ``RETRY_AFTER``
        seconds; an outage is logged when it starts."""
        with self._state:
            self._down_until = time.monotonic() + RETRY_AFTER
            if self._outage is not None:
                return
            self._outage = str(exc) or type(exc).__name__
        _log.warning("the session store at %s failed (%s): requests that need it are answered 503 "
                     "until it answers", self.url, self._outage)

    def _answered(self) -> None:
        """The store answered: the core's calls go to it again; an outage's end is logged."""
        with self._state:
            self._down_until = 0.0
            if self._outage is None:
                return
            self._outage = None
        _log.warning("the session store at %s answers again", self.url)

    def _wait_out(self, exc: BaseException, timeout: float) -> None:
        """A relay call failed: note it and wait ``timeout`` (at most ``follow_timeout``), as a
        wait that found nothing would, so that a relay asking again does not spin."""
        if isinstance(exc, _DOWN):
            self._failed(exc)
        else:
            self._answered()
        time.sleep(max(0.0, min(timeout, self.follow_timeout)))

    # ------------------------------------------------------------ SessionStore

    def save(self, record: SessionRecord) -> None:
        """Store or replace ``record`` (its TTL starts again)."""
        key = self.prefix + "s:" + record.session_id
        self._call(lambda: self._client.set(key, _encode(record), ex=self.session_ttl))

    def load(self, session_id: str) -> SessionRecord | None:
        """The session ``session_id`` (its TTL starts again), or ``None``."""
        key = self.prefix + "s:" + session_id
        raw = cast("bytes | None", self._call(lambda: self._client.getex(key, ex=self.session_ttl)))
        if raw is None:
            return None
        try:
            return _decode_record(raw)
        except msgspec.DecodeError:
            return None  # written by an incompatible version: a new session is needed

    def touch(self, session_id: str) -> bool:
        """Restart the TTL of ``session_id``; whether the store still has it."""
        key = self.prefix + "s:" + session_id
        return bool(self._call(lambda: self._client.expire(key, self.session_ttl)))

    def delete(self, session_id: str) -> None:
        """Forget ``session_id`` and its events."""
        keys = [self.prefix + kind + session_id for kind in ("s:", "e:", "i:", "r:")]
        self._call(lambda: self._client.delete(*keys))

    # ------------------------------------------------------------ EventStore

    def append(self, session_id: str, stream: int, data: bytes, final: bool = False,
               request_id: int | str | None = None) -> str:
        """Keep one event of ``stream`` (one round trip); its id (``request_id``: with a
        stream's first event, the request it answers, produced by this worker)."""
        return self.extend(session_id, stream, ((data, final),), request_id)[0]

    def extend(self, session_id: str, stream: int, events: Sequence[tuple[bytes, bool]],
               request_id: int | str | None = None) -> list[str]:
        """Keep several events of ``stream``, in order, in one round trip; their ids."""
        if not events:
            return []
        key = self.prefix + ("i:" if stream == INBOX_STREAM else "e:") + session_id
        oldest = f"{int(time.time() * 1000) - self.event_ttl * 1000}-0"
        producers = self.prefix + "r:" + session_id

        def run() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            for data, final in events:
                fields: dict[Any, Any] = {"s": stream, "d": data}
                if final:
                    fields["f"] = 1
                pipe.xadd(key, fields, maxlen=self.max_events, approximate=True)
            pipe.xtrim(key, minid=oldest, approximate=True)
            pipe.expire(key, self.event_ttl)
            if request_id is not None:
                pipe.hset(producers, str(stream), _encode((self.worker, request_id)))
                pipe.expire(producers, self.event_ttl)
            return pipe.execute()

        entries = self._call(run)[:len(events)]
        return [f"{stream}.{_text(entry)}" for entry in entries]

    def replay(self, session_id: str, last_event_id: str) -> Replay | None:
        """The stream of ``last_event_id``, its later events, and whether it has ended."""
        parsed = _parse_id(last_event_id)
        if parsed is None:
            return None
        stream, entry = parsed
        key = self.prefix + "e:" + session_id

        def run() -> list[Any]:
            pipe = self._client.pipeline(transaction=False)
            pipe.xrange(key, min=entry)
            pipe.hget(self.prefix + "r:" + session_id, str(stream))
            return pipe.execute()

        answer = self._call(run)
        entries, producer = cast(Entries, answer[0]), cast("bytes | None", answer[1])
        if not entries or _text(entries[0][0]) != entry or _stream(entries[0][1]) != stream:
            return None  # forgotten (trimmed, expired) or never issued
        finished = b"f" in entries[0][1]
        events: list[tuple[str, bytes]] = []
        for entry_id, fields in entries[1:]:
            if _stream(fields) == stream:
                events.append((f"{stream}.{_text(entry_id)}", fields[b"d"]))
                finished = finished or b"f" in fields
        request_id = None if producer is None else _producer(producer)[1]
        return Replay(stream=stream, events=events, finished=finished, request_id=request_id)

    def forget(self, session_id: str) -> None:
        """Drop every event of ``session_id``."""
        keys = [self.prefix + kind + session_id for kind in ("e:", "i:", "r:")]
        self._call(lambda: self._client.delete(*keys))

    def follow(self, wants: Sequence[Follow], timeout: float) -> list[Relayed]:
        """The events stored after each of ``wants``, waiting up to ``timeout`` (at most
        ``follow_timeout``) for the first (``XREAD BLOCK`` on a connection of its own), and
        an ``abandoned`` mark for a stream whose producer's heartbeat is gone. Renews this
        worker's heartbeat (a driver calls it, with no ``wants`` too, at least every
        second). Blocking: a driver calls it off its loop. A store that does not answer
        costs the wait (``timeout``) and gives nothing."""
        try:
            self._heartbeat()
        except _DOWN as exc:
            self._wait_out(exc, timeout)
            return []
        except RedisError:
            pass  # it answered, refusing (the next call tries again): read all the same
        if not wants:
            return []
        after: dict[str, str] = {}
        streams: dict[str, dict[int, str]] = {}
        positions = {(w.session_id, w.stream): w.after for w in wants}
        for want in wants:
            parsed = _parse_id(want.after)
            if parsed is None:
                continue
            entry = parsed[1]
            if want.stream == INBOX_STREAM:
                key = self.prefix + "i:" + want.session_id
                ms, _, seq = entry.partition("-")
                if parsed[0] != INBOX_STREAM and int(ms):  # a position in the events: see the docstring
                    entry = f"{int(ms) - 1}-{seq}"
            else:
                key = self.prefix + "e:" + want.session_id
            if key not in after or _entry_key(entry) < _entry_key(after[key]):
                after[key] = entry
            streams.setdefault(key, {})[want.stream] = entry
        if not after:
            return []
        block = max(1, round(min(timeout, self.follow_timeout) * 1000))
        try:
            answer = cast("list[tuple[bytes, Entries]] | None",
                          self._follower.xread(cast(Any, after), block=block))  # str keys and ids
        except RedisError as exc:
            self._wait_out(exc, timeout)
            return []  # the driver asks again; nothing was consumed
        if self._outage is not None:
            self._answered()
        out: list[Relayed] = []
        for raw_key, entries in answer or []:
            key_text = _text(raw_key)
            wanted = streams.get(key_text, {})
            session_id = key_text[len(self.prefix) + 2:]
            last: dict[int, str] = {}
            for entry_id, fields in entries:
                stream = _stream(fields)
                entry = _text(entry_id)
                since = wanted.get(stream)
                if since is None or _entry_key(entry) <= _entry_key(since):
                    continue
                last[stream] = entry
                out.append(Relayed(session_id=session_id, stream=stream, event_id=f"{stream}.{entry}",
                                   data=fields[b"d"], final=b"f" in fields,
                                   since=positions[session_id, stream]))
            newest = _text(entries[-1][0]) if entries else None
            for stream, since in wanted.items():
                if newest is not None and _entry_key(newest) > _entry_key(last.get(stream, since)):
                    # only other streams' events came: move this one's position past them (no
                    # data, nothing is sent), or the next XREAD would return them at once again
                    out.append(Relayed(session_id=session_id, stream=stream, event_id=f"{stream}.{newest}",
                                       data=b"", since=positions[session_id, stream]))
        moved = {(r.session_id, r.stream) for r in out}
        quiet = [w for w in wants if w.stream != INBOX_STREAM and (w.session_id, w.stream) not in moved]
        return out + self._abandoned(quiet)

    # ------------------------------------------------------------ TaskStore

    def _task_keys(self, task_id: str) -> list[str]:
        return [self.prefix + "t:" + task_id, self.prefix + "tp:" + task_id]

    def create_task(self, task: TaskSnapshot, ttl: float) -> None:
        """Keep ``task``, run by this worker, for ``ttl`` seconds (one round trip; this
        worker's heartbeat starts now if its relay has not started it yet)."""
        key = self._task_keys(task.task_id)[0]
        fields: dict[Any, Any] = {"st": task.status, "c": repr(task.created_at), "u": repr(task.updated_at),
                                  "o": _encode(task.owner), "w": self.worker}
        if task.status_message is not None:
            fields["m"] = task.status_message

        def run() -> list[Any]:
            pipe = self._client.pipeline(transaction=True)
            pipe.hset(key, mapping=fields)
            pipe.pexpire(key, max(1, round(ttl * 1000)))
            pipe.set(self.prefix + "w:" + self.worker, b"1", ex=HEARTBEAT_TTL, nx=True)
            return pipe.execute()

        self._call(run)

    def load_task(self, task_id: str) -> TaskSnapshot | None:
        """The task ``task_id`` (``alive``: its worker still beats), or ``None`` (one round trip)."""
        answer = self._call(lambda: self._load_task(keys=self._task_keys(task_id), args=[self.prefix + "w:"]))
        if not answer:
            return None
        task, pending, alive = _pairs(answer[0]), _pairs(answer[1]), bool(answer[2])
        try:
            owner = msgspec.json.decode(task.get(b"o", b"null"), type=str | None)
            return TaskSnapshot(
                task_id=task_id, status=_text(task[b"st"]), created_at=float(task[b"c"]),
                updated_at=float(task[b"u"]), owner=owner,
                status_message=None if b"m" not in task else _text(task[b"m"]),
                result=task.get(b"r"), error=task.get(b"e"), alive=alive,
                input_requests={_text(k): v for k, v in pending.items()})
        except (KeyError, ValueError, msgspec.DecodeError):
            return None  # written by an incompatible version: as good as unknown

    def ask_task(self, task_id: str, key: str, request: bytes, wall: float) -> None:
        """The task waits for an answer to ``request`` under ``key`` (one round trip)."""
        self._call(lambda: self._ask_task(keys=self._task_keys(task_id), args=[key, request, repr(wall)]))

    def end_task(self, task_id: str, status: str, wall: float, result: bytes | None = None,
                 error: bytes | None = None) -> bool:
        """Move the task to a terminal ``status`` unless it ended already (one round trip)."""
        field, payload = ("e", error) if error is not None else ("r", result or b"null")
        args: list[Any] = [status, repr(wall), field, payload]
        return bool(self._call(lambda: self._end_task(keys=self._task_keys(task_id), args=args)))

    def answer_task(self, task_id: str, answers: dict[str, bytes], wall: float) -> list[str]:
        """Pass the answers to questions still open to the task's worker (one round trip)."""
        args: list[Any] = [repr(wall), self.prefix + "tq:", MAX_TASK_MESSAGES, task_id]
        for key, answer in answers.items():
            args += [key, answer]
        passed = self._call(lambda: self._answer_task(keys=self._task_keys(task_id), args=args))
        return [_text(key) for key in cast("list[bytes]", passed or [])]

    def cancel_task(self, task_id: str, wall: float) -> bool:
        """Mark the task cancelled and tell its worker, unless it ended (one round trip)."""
        args: list[Any] = [repr(wall), self.prefix + "tq:", MAX_TASK_MESSAGES, task_id]
        return bool(self._call(lambda: self._cancel_task(keys=self._task_keys(task_id), args=args)))

    def task_messages(self, timeout: float) -> list[TaskMessage]:
        """What other workers passed to this worker's tasks, waiting up to ``timeout`` (at
        most ``follow_timeout``; none: no wait) for the first. Blocking: a driver calls it
        off its loop."""
        block = None if timeout <= 0 else max(1, round(min(timeout, self.follow_timeout) * 1000))
        key = self.prefix + "tq:" + self.worker
        try:
            answer = cast("list[tuple[bytes, Entries]] | None",
                          self._follower.xread({key: self._task_after}, count=100, block=block))
        except RedisError as exc:
            self._wait_out(exc, timeout)
            return []  # the driver asks again; nothing was consumed
        out: list[TaskMessage] = []
        for _, entries in answer or []:
            for entry_id, fields in entries:
                self._task_after = _text(entry_id)
                if b"t" in fields:
                    out.append(TaskMessage(task_id=_text(fields[b"t"]),
                                           key=None if b"k" not in fields else _text(fields[b"k"]),
                                           answer=fields.get(b"a", b"")))
        return out

    def _heartbeat(self) -> None:
        """Renew this worker's heartbeat (at most every ``HEARTBEAT_EVERY`` seconds).

        Raises:
            RedisError: it failed (the next call tries again).
        """
        now = time.monotonic()
        if now - self._beat_at < HEARTBEAT_EVERY:
            return
        key = self.prefix + "w:" + self.worker
        # EXPIRE renews it even at maxmemory with noeviction, which refuses SET: a worker
        # alive is not taken for dead (its streams and tasks failed) while Redis is full
        if not self._follower.expire(key, HEARTBEAT_TTL):
            self._follower.set(key, b"1", ex=HEARTBEAT_TTL)
        self._beat_at = now
        if self._outage is not None:
            self._answered()

    def _abandoned(self, quiet: Sequence[Follow]) -> list[Relayed]:
        """``abandoned`` marks for the streams of ``quiet`` whose producer is gone, and
        ``lost`` ones too for those the store no longer has at all (neither the producer
        nor any event: it restarted empty, or evicted them), which nothing could end."""
        if not quiet:
            return []
        try:
            pipe = self._follower.pipeline(transaction=False)
            for want in quiet:
                pipe.hget(self.prefix + "r:" + want.session_id, str(want.stream))
                pipe.exists(self.prefix + "e:" + want.session_id)
            answers = pipe.execute()
            producers = cast("list[bytes | None]", answers[::2])
            kept = cast("list[int]", answers[1::2])
            workers = [None if p is None else _producer(p)[0] for p in producers]
            pipe = self._follower.pipeline(transaction=False)
            for worker in workers:
                pipe.exists(self.prefix + "w:" + (worker or "?"))
            alive = cast("list[int]", pipe.execute())
        except RedisError:
            return []
        out: list[Relayed] = []
        for want, worker, up, events in zip(quiet, workers, alive, kept, strict=True):
            lost = worker is None and not events
            if lost or (worker is not None and not up):
                out.append(Relayed(session_id=want.session_id, stream=want.stream, event_id=want.after,
                                   data=b"", since=want.after, abandoned=True, lost=lost))
        return out


def open_store(url: str) -> RedisStore:
    """The shared store a URL names: ``redis://``, ``rediss://``, ``valkey://``,
    ``valkeys://`` or ``unix://``, with optional query settings ``prefix``,
    ``session_ttl``, ``max_events``, ``event_ttl`` and ``timeout`` (see :class:`RedisStore`).

    Raises:
        ValueError: the scheme is not one of those, or a setting is not a number.
    """
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:  # (the scheme alone: the rest may hold a password)
        raise ValueError(f"--store takes redis://, rediss://, valkey:// or valkeys://, not {parts.scheme}://...")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    settings: dict[str, Any] = {}
    for name, kind in (("session_ttl", float), ("event_ttl", float), ("timeout", float), ("max_events", int)):
        if name in query:
            text = query.pop(name)
            try:
                settings[name] = kind(text)
            except ValueError:
                raise ValueError(f"--store's {name}= takes a number, not {text!r}") from None
    if "prefix" in query:
        settings["prefix"] = query.pop("prefix")
    rest = "&".join(f"{k}={v}" for k, v in query.items())
    if parts.query:  # (cut as text: urlunsplit would turn unix:///path into unix:/path)
        url = url.split("?", 1)[0] + (f"?{rest}" if rest else "")
    return RedisStore(url, **settings)


def _redis_url(url: str) -> str:
    """``url`` in a scheme redis-py reads (``valkey`` is ``redis``)."""
    scheme, colon, rest = url.partition(":")
    return _SCHEMES.get(scheme, scheme) + colon + rest


_PASSWORD_SETTING: Final = re.compile(r"(?i)([?&]password=)[^&#]*")


def _safe_authority(url: str) -> str:
    """``url`` without the password of its authority: everything between ``://`` and the last ``@`` of the
    authority but the user name is masked, and so is all of it where a password holding
    ``/``, ``?`` or ``#`` unencoded makes the URL's parts uncertain."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    if any(c in rest.rpartition("@")[0] for c in "/?#"):
        return f"{scheme}://***@{rest.rpartition('@')[2]}"  # where the password ended is unsure
    userinfo, _, hostpart = rest.rpartition("@")
    user, colon, _ = userinfo.partition(":")
    return f"{scheme}://{user}:***@{hostpart}" if colon else f"{scheme}://***@{hostpart}"


def _safe(url: str) -> str:
    """``url`` without its password (in the authority or a ``password=`` setting)."""
    return _PASSWORD_SETTING.sub(r"\1***", _safe_authority(url))


def _producer(raw: bytes) -> tuple[str, int | str | None]:
    """``(worker, request id)`` of a stream, as stored (an unreadable one: nobody's)."""
    try:
        return _decode_producer(raw)
    except msgspec.DecodeError:
        return "?", None


def _pairs(flat: list[bytes]) -> dict[bytes, bytes]:
    """A Lua script's ``HGETALL`` answer (a flat list) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _stream(fields: dict[bytes, bytes]) -> int:
    try:
        return int(fields.get(b"s", b"-1"))
    except ValueError:
        return -1


_ENTRY_BOUND: Final = 2**64
"""Redis Stream entry ids are two unsigned 64-bit numbers."""


def _digits(text: str) -> bool:
    """Whether ``text`` is 1-20 ASCII digits (``str.isdigit`` alone also takes ``"²"``)."""
    return 0 < len(text) <= 20 and text.isascii() and text.isdigit()


def _parse_id(event_id: str) -> tuple[int, str] | None:
    """``(stream, entry id)`` of an event id this store issued, or ``None`` (also for one
    no Redis Stream could hold: digits other than ASCII, numbers past 64 bits, which a
    client may send and Redis would refuse)."""
    stream_text, dot, entry = event_id.partition(".")
    ms, dash, seq = entry.partition("-")
    if not dot or not dash or not all(_digits(t) for t in (stream_text, ms, seq)):
        return None
    if int(ms) >= _ENTRY_BOUND or int(seq) >= _ENTRY_BOUND or int(stream_text) > INBOX_STREAM:
        return None
    return int(stream_text), entry


def _entry_key(entry: str) -> tuple[int, int]:
    ms, _, seq = entry.partition("-")
    return int(ms), int(seq)
