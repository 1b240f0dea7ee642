"""The Redis store against a real redis-server: sessions with a TTL every request restarts,
events in a Redis Stream bounded by length, replays, blocking follows, and failures that
become ``StoreUnavailable`` (or nothing, for a follow) instead of stalling."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from peer_servers import free_port

from mcp_sansio.server.stores import Follow, SessionRecord, StoreUnavailable, TaskMessage, TaskSnapshot
from mcp_sansio.types import ClientCapabilities, Implementation
from mcp_sansio_base.redis_store import HEARTBEAT_TTL, RedisStore, open_store

from .cluster import Proc, redis_server


@pytest.fixture(scope="module")
def redis_proc() -> Iterator[Proc]:
    proc = redis_server()
    yield proc
    proc.stop()


@pytest.fixture
def store(redis_proc: Proc, request: pytest.FixtureRequest) -> Iterator[RedisStore]:
    opened = open_store(f"redis://127.0.0.1:{redis_proc.port}/0?prefix={request.node.name}:")
    yield opened
    opened.close()


def record(session_id: str) -> SessionRecord:
    return SessionRecord(session_id=session_id, protocol_version="2025-11-25",
                         client_info=Implementation(name="c", version="1"),
                         client_capabilities=ClientCapabilities())


def test_a_session_is_saved_loaded_touched_and_deleted(store: RedisStore) -> None:
    assert store.load("s1") is None and not store.touch("s1")
    store.save(record("s1"))
    assert store.load("s1") == record("s1") and store.touch("s1")
    store.delete("s1")
    assert store.load("s1") is None and not store.touch("s1")


def test_a_session_expires_by_its_ttl(redis_proc: Proc) -> None:
    store = open_store(f"redis://127.0.0.1:{redis_proc.port}/0?session_ttl=1&prefix=ttl:")
    store.save(record("s2"))
    raw = redis.Redis(port=redis_proc.port)
    deadline = time.monotonic() + 10
    while raw.exists("ttl:s:s2") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert store.load("s2") is None
    raw.close()
    store.close()


def test_events_replay_after_an_id_of_their_stream_and_know_a_finished_stream(store: RedisStore) -> None:
    priming = store.append("s3", 4, b"")
    first = store.append("s3", 4, b'{"a":1}')
    store.append("s3", 5, b'{"other":1}')
    last = store.append("s3", 4, b'{"a":2}', True)
    replay = store.replay("s3", priming)
    assert replay is not None and replay.stream == 4 and replay.events[-1] is not None
    assert replay.events == [(first, b'{"a":1}'), (last, b'{"a":2}')] and replay.finished
    after_last = store.replay("s3", last)
    assert after_last is not None and after_last.events == [] and after_last.finished
    assert store.replay("s3", "4.1-0") is None and store.replay("s3", "garbage") is None
    store.forget("s3")
    assert store.replay("s3", priming) is None


def test_several_events_are_kept_in_one_round_trip_and_replay_as_appended_ones(store: RedisStore) -> None:
    trips = store.round_trips
    priming, answer = store.extend("s6", 3, [(b"", False), (b'{"id":9}', True)], 9)
    assert store.round_trips == trips + 1
    replay = store.replay("s6", priming)
    assert replay is not None and replay.events == [(answer, b'{"id":9}')]
    assert replay.finished and replay.request_id == 9
    later = store.append("s6", 3, b'{"late":1}')
    assert store.extend("s6", 3, []) == []  # (nothing to keep: no event)
    replay = store.replay("s6", priming)
    assert replay is not None and [event_id for event_id, _ in replay.events] == [answer, later]


def test_events_are_bounded_by_length(redis_proc: Proc) -> None:
    store = open_store(f"redis://127.0.0.1:{redis_proc.port}/0?max_events=10&prefix=len:")
    first = store.append("s4", 1, b"{}")
    for _ in range(1000):
        store.append("s4", 1, b"{}")
    raw = redis.Redis(port=redis_proc.port)
    assert raw.xlen("len:e:s4") < 200
    assert store.replay("s4", first) is None
    raw.close()
    store.close()


def test_follow_waits_for_the_next_event_and_moves_past_other_streams(store: RedisStore) -> None:
    start = store.append("s5", 7, b"")
    want = Follow(session_id="s5", stream=7, after=start)
    assert store.follow([want], 0.05) == []
    later = threading.Timer(0.1, lambda: store.append("s5", 7, b'{"late":1}', True))
    later.start()
    got = store.follow([want], 0.25)
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        got = store.follow([want], 0.25)
    later.join()
    assert [(r.data, r.final, r.since) for r in got] == [(b'{"late":1}', True, start)]
    other = store.append("s5", 8, b'{"not":"ours"}')
    (moved,) = store.follow([Follow(session_id="s5", stream=7, after=got[0].event_id)], 0.05)
    assert moved.data == b"" and moved.event_id == f"7.{other.partition('.')[2]}"


def test_a_store_that_does_not_answer_fails_fast() -> None:
    down = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="failed"):
        down.load("s6")
    with pytest.raises(StoreUnavailable):
        down.append("s6", 1, b"{}")
    assert down.follow([Follow(session_id="s6", stream=1, after="1.1-0")], 0.05) == []
    assert time.monotonic() - started < 5.0
    down.close()


def test_a_valkey_url_names_the_same_protocol(redis_proc: Proc) -> None:
    store = open_store(f"valkey://127.0.0.1:{redis_proc.port}/1?prefix=vk:")
    store.save(record("s7"))
    assert store.load("s7") == record("s7")
    store.close()


def test_a_store_url_carries_its_settings() -> None:
    store = open_store("redis://u:pw@h:1/0?session_ttl=60&event_ttl=30&max_events=5&timeout=0.1&prefix=x:")
    assert (store.session_ttl, store.event_ttl, store.max_events, store.prefix) == (60, 30, 5, "x:")
    assert store.url == "redis://u:***@h:1/0" and "pw" not in repr(store)
    store.close()


def test_a_store_url_of_another_scheme_is_refused() -> None:
    with pytest.raises(ValueError, match="redis://"):
        open_store("memcached://h:1")


def test_a_stream_whose_producer_stopped_beating_is_abandoned(redis_proc: Proc) -> None:
    url = f"redis://127.0.0.1:{redis_proc.port}/0?prefix=beat:"
    producer, follower = open_store(url), open_store(url)
    priming = producer.append("s8", 3, b"", False, 7)
    assert producer.follow([], 0.0) == []  # renews its heartbeat
    want = Follow(session_id="s8", stream=3, after=priming)
    assert follower.follow([want], 0.05) == []  # alive: nothing yet
    replay = follower.replay("s8", priming)
    assert replay is not None and replay.request_id == 7
    raw = redis.Redis(port=redis_proc.port)
    raw.delete(f"beat:w:{producer.worker}")  # as if killed: its heartbeat lapses
    (gone,) = follower.follow([want], 0.05)
    assert gone.abandoned and gone.since == priming and gone.data == b""
    raw.close()
    producer.close()
    follower.close()


# ---------------------------------------------------------------- tasks


def task(task_id: str, owner: str | None = None) -> TaskSnapshot:
    return TaskSnapshot(task_id=task_id, status="working", created_at=1.5, updated_at=1.5, owner=owner,
                        status_message="on it")


@pytest.fixture
def workers(redis_proc: Proc, request: pytest.FixtureRequest) -> Iterator[tuple[RedisStore, RedisStore]]:
    url = f"redis://127.0.0.1:{redis_proc.port}/0?prefix={request.node.name}:"
    first, second = open_store(url), open_store(url)
    yield first, second
    first.close()
    second.close()


def test_a_task_is_read_back_at_another_worker_and_expires_by_its_ttl(
        workers: tuple[RedisStore, RedisStore]) -> None:
    runner, other = workers
    runner.create_task(task("t1", owner="alice"), ttl=0.3)
    assert other.load_task("t1") == task("t1", owner="alice")
    deadline = time.monotonic() + 10
    while other.load_task("t1") is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert other.load_task("t1") is None
    for forged in ("t2", "", "t1\x00", "*", "../t1", "x" * 1000):
        assert other.load_task(forged) is None


def test_answers_pass_to_the_running_worker_only_for_open_questions(
        workers: tuple[RedisStore, RedisStore]) -> None:
    runner, other = workers
    runner.create_task(task("t1"), ttl=60)
    runner.ask_task("t1", "a", b'{"method":"roots/list","params":{}}', 2.0)
    runner.ask_task("t1", "b", b'{"method":"roots/list","params":{}}', 2.5)
    asked = other.load_task("t1")
    assert asked is not None and (asked.status, asked.updated_at) == ("input_required", 2.0)
    assert set(asked.input_requests) == {"a", "b"}
    assert other.answer_task("t1", {"a": b'{"roots":[]}', "zzz": b"{}"}, 3.0) == ["a"]
    assert other.answer_task("t1", {"a": b'{"roots":[]}'}, 3.0) == []  # once
    still = other.load_task("t1")
    assert still is not None and still.status == "input_required" and set(still.input_requests) == {"b"}
    assert other.answer_task("t1", {"b": b'{"roots":[1]}'}, 4.0) == ["b"]
    moved = other.load_task("t1")
    assert moved is not None
    assert (moved.status, moved.updated_at, moved.input_requests) == ("working", 4.0, {})
    assert runner.task_messages(0.0) == [TaskMessage(task_id="t1", key="a", answer=b'{"roots":[]}'),
                                         TaskMessage(task_id="t1", key="b", answer=b'{"roots":[1]}')]
    assert other.task_messages(0.0) == [] and runner.task_messages(0.0) == []


def test_a_cancellation_reaches_the_running_worker_and_an_ended_task_never_changes(
        workers: tuple[RedisStore, RedisStore]) -> None:
    runner, other = workers
    runner.create_task(task("t1"), ttl=60)
    waiting = threading.Thread(target=lambda: got.extend(runner.task_messages(0.25)))
    got: list[TaskMessage] = []
    waiting.start()
    assert other.cancel_task("t1", 2.0)
    waiting.join()
    assert got == [TaskMessage(task_id="t1")]
    assert not other.cancel_task("t1", 3.0)
    assert not runner.end_task("t1", "completed", 4.0, result=b'{"content":[]}')
    runner.ask_task("t1", "a", b"{}", 5.0)
    assert other.answer_task("t1", {"a": b"{}"}, 6.0) == []
    ended = other.load_task("t1")
    assert ended is not None and (ended.status, ended.updated_at, ended.result, ended.input_requests) == (
        "cancelled", 2.0, None, {})
    assert runner.task_messages(0.0) == []


def test_a_task_whose_worker_stopped_beating_is_not_alive(workers: tuple[RedisStore, RedisStore],
                                                          redis_proc: Proc) -> None:
    runner, other = workers
    runner.create_task(task("t1"), ttl=60)  # beats from its first task on
    loaded = other.load_task("t1")
    assert loaded is not None and loaded.alive
    redis.Redis(port=redis_proc.port).delete(runner.prefix + "w:" + runner.worker)  # its heartbeat lapsed
    lost = other.load_task("t1")
    assert lost is not None and not lost.alive and lost.status == "working"
    error = b'{"code":-32603,"message":"stopped"}'
    assert other.end_task("t1", "failed", 9.0, error=error)
    failed = other.load_task("t1")
    assert failed is not None and (failed.status, failed.error) == ("failed", error)


def test_task_calls_to_a_store_that_does_not_answer_fail_fast() -> None:
    down = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    started = time.monotonic()
    for attempt in (lambda: down.create_task(task("t1"), ttl=60), lambda: down.load_task("t1"),
                    lambda: down.cancel_task("t1", 1.0), lambda: down.answer_task("t1", {"a": b"{}"}, 1.0)):
        with pytest.raises(StoreUnavailable):
            attempt()
    assert down.task_messages(0.1) == []  # (the relay asks again)
    assert time.monotonic() - started < 5.0
    down.close()


def test_a_relay_call_to_a_store_that_refuses_waits_out_its_wait_instead_of_returning_at_once() -> None:
    down = RedisStore(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    want = Follow(session_id="s8", stream=1, after="1.1-0")
    for relay_call in (lambda: down.follow([want], 0.2), lambda: down.follow([], 0.2),
                       lambda: down.task_messages(0.2)):
        started = time.monotonic()
        assert relay_call() == []
        assert time.monotonic() - started >= 0.2  # (a relay asking again at once would spin)
    down.close()


def test_a_stalled_store_is_asked_again_once_the_relay_finds_it_answering_not_by_every_request() -> None:
    proc = redis_server()
    store = RedisStore(f"redis://127.0.0.1:{proc.port}/0", timeout=0.3)
    raw = redis.Redis(port=proc.port)
    try:
        store.save(record("b1"))
        raw.config_set("maxmemory", "1")  # it answers, refusing writes: that is no outage
        with pytest.raises(StoreUnavailable, match="maxmemory"):
            store.save(record("b2"))
        assert store.load("b1") == record("b1")
        raw.config_set("maxmemory", "0")
        os.kill(proc.pid, signal.SIGSTOP)
        with pytest.raises(StoreUnavailable, match="Timeout"):
            store.load("b1")  # one call waits out the timeout ...
        started = time.monotonic()
        for _ in range(10):
            with pytest.raises(StoreUnavailable, match="Timeout"):
                store.load("b1")  # ... the next ones fail at once (10 timeouts: 3 s)
        assert time.monotonic() - started < 0.3
        os.kill(proc.pid, signal.SIGCONT)
        assert store.follow([], 0.05) == []  # the relay's heartbeat gets through
        assert store.load("b1") == record("b1")
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        raw.close()
        store.close()
        proc.stop()


def test_ids_no_redis_stream_can_hold_are_unknown_not_a_store_failure(store: RedisStore) -> None:
    priming = store.append("s9", 3, b"")
    assert store.replay("s9", priming) is not None
    for forged in ("3." + "9" * 30 + "-0", "3.1-" + "9" * 30, "3.18446744073709551616-0", "3.\u00b2-0",
                   "3.\u0661-0", "9" * 40 + ".1-0", "3.-0", "3.1-"):
        assert store.replay("s9", forged) is None, forged


def test_a_store_password_is_masked_wherever_the_url_is_shown() -> None:
    for url, shown in (("redis://u:pw@h:1/0", "redis://u:***@h:1/0"),
                       ("redis://:pw@h:1/0", "redis://:***@h:1/0"),
                       ("unix:///run/redis.sock?db=1&password=pw", "unix:///run/redis.sock?db=1&password=***")):
        assert open_store(url).url == shown
    for url in ("http://u:pw@h:1/0", "redis://u:p/wd@h:1/0", "redis://u:pwd@h:1/0?timeout=x",
                "redis://u:p/w#x?y@h:1/0"):  # (unencoded, where the password ends is unsure: all goes)
        with pytest.raises(ValueError) as refused:
            open_store(url)
        assert "pw" not in str(refused.value) and "wd" not in str(refused.value), refused.value
    with pytest.raises(ValueError, match=r"redis://\*\*\*@h:1/0 is no store URL"):
        open_store("redis://u:p/w#x?y@h:1/0")


def test_a_unix_socket_url_names_a_store(tmp_path: Path) -> None:
    socket_path = tmp_path / "redis.sock"
    proc = redis_server(options=["--unixsocket", str(socket_path)])
    try:
        store = open_store(f"unix://{socket_path}?prefix=unix:")
        store.save(record("u1"))
        assert store.load("u1") == record("u1")
        assert redis.Redis(port=proc.port).exists("unix:s:u1")
        store.close()
    finally:
        proc.stop()


def test_a_worker_beats_on_while_redis_is_full_and_its_relay_reads_on() -> None:
    proc = redis_server()
    store = RedisStore(f"redis://127.0.0.1:{proc.port}/0", timeout=0.5)
    raw = redis.Redis(port=proc.port)
    try:
        assert store.follow([], 0.05) == []  # the heartbeat starts
        priming = store.append("f1", 2, b"")
        raw.config_set("maxmemory", "1")  # full, noeviction: every SET, XADD, HSET is refused
        with pytest.raises(StoreUnavailable, match="maxmemory"):
            store.append("f1", 2, b'{"refused":1}')
        beat = f"mcp:w:{store.worker}"
        ends = time.monotonic() + HEARTBEAT_TTL + 1.0
        while time.monotonic() < ends:  # longer than a heartbeat lives unless renewed
            assert store.follow([Follow(session_id="f1", stream=2, after=priming)], 0.25) == []
        assert raw.exists(beat), "renewed (EXPIRE) though SET is refused: alive, not taken for dead"
        raw.config_set("maxmemory", "0")
        later = store.append("f1", 2, b'{"late":1}', True)
        (got,) = store.follow([Follow(session_id="f1", stream=2, after=priming)], 0.25)
        assert (got.event_id, got.data, got.final) == (later, b'{"late":1}', True)
    finally:
        raw.close()
        store.close()
        proc.stop()
