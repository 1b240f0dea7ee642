"""Several HTTP servers over one shared store: any one serves any session, a stream resumed
at another server than the one running its request is relayed there, and a worker's local
idle expiry or shutdown leaves a shared session to the others."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pair import StepLoop
from server_http_helpers import MODERN_HEADERS, RawHttp, Response, modern_body

from mcp_sansio.server import TASKS_EXTENSION, Context, MCPServer, ToolCallReceived
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio.server.stores import (
    INBOX_STREAM,
    Follow,
    MemoryEventStore,
    MemorySessionStore,
    Relayed,
    SessionRecord,
    StoreUnavailable,
)
from mcp_sansio_base.server import ServerRunner

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "c", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SLOW = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow"}}


class Worker:
    """One server of a deployment, with its handlers run on a step loop."""

    def __init__(self, app: MCPServer, sessions: MemorySessionStore, events: MemoryEventStore,
                 key: bytes, **config: object) -> None:
        self.server = HttpServer(app, secret=b"k" * 32, config=HttpConfig.loopback(**config),
                                 sessions=sessions, events=events, entropy=key)
        self.loop = StepLoop(lambda: 0.0)
        self.runner = ServerRunner(self.server, self.loop)

    def relay(self, events: MemoryEventStore) -> None:
        """What the driver's relay task does once."""
        relayed = events.follow(self.server.follows(), 0.0)
        if relayed:
            self.server.receive_relayed(relayed, 0.0)
            self.runner.pump()


def _streams(server: HttpServer) -> list[Follow]:
    """What ``server`` follows, but the inboxes."""
    return [f for f in server.follows() if f.stream != INBOX_STREAM]


def _shared() -> tuple[MemorySessionStore, MemoryEventStore]:
    sessions, events = MemorySessionStore(), MemoryEventStore()
    sessions.shared = events.shared = True
    return sessions, events


def _open(worker: Worker) -> str:
    conn = RawHttp(worker.server)
    answer = conn.request(body=INIT)
    assert answer is not None and answer.status == 200
    session_id: str = answer.headers["mcp-session-id"]
    assert conn.request(body=INITIALIZED, headers={"mcp-session-id": session_id}) is not None
    return session_id


def _post(worker: Worker, session_id: str, body: object) -> tuple[RawHttp, Response | None]:
    conn = RawHttp(worker.server)
    return conn, conn.request(body=body, headers={"mcp-session-id": session_id})


def _resume(worker: Worker, session_id: str, last: str) -> tuple[RawHttp, Response | None]:
    conn = RawHttp(worker.server)
    return conn, conn.request("GET", headers={"mcp-session-id": session_id, "last-event-id": last},
                              accept="text/event-stream")


def test_sessions_opened_by_two_workers_get_different_ids() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    assert _open(one) != _open(two)


def test_a_session_ended_at_one_worker_is_not_found_at_another_that_served_it() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    session_id = _open(one)
    assert _post(two, session_id, {"jsonrpc": "2.0", "id": 2, "method": "ping"})[1] is not None
    conn = RawHttp(one.server)
    deleted = conn.request("DELETE", headers={"mcp-session-id": session_id})
    assert deleted is not None and deleted.status == 200
    _, answer = _post(two, session_id, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert answer is not None and answer.status == 404


def test_a_shared_session_idle_at_one_worker_stays_in_the_store() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one = Worker(app, sessions, events, b"1" * 32, session_idle_timeout=10.0)
    session_id = _open(one)
    one.server.handle_timeout(11.0)
    assert sessions.load(session_id) is not None
    one.server.close(12.0)
    assert sessions.load(session_id) is not None


def test_an_unshared_session_idle_is_forgotten() -> None:
    sessions, events = MemorySessionStore(), MemoryEventStore()
    one = Worker(MCPServer("s"), sessions, events, b"1" * 32, session_idle_timeout=10.0)
    session_id = _open(one)
    one.server.handle_timeout(11.0)
    assert sessions.load(session_id) is None


def test_a_stream_resumed_at_another_worker_is_relayed_to_its_end_once() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    gate = one.loop.future()

    @app.tool()
    async def slow(ctx: Context) -> str:
        ctx.report_progress(1, 3)
        ctx.close_sse_stream()  # the client's connection drops here
        ctx.report_progress(2, 3)
        await gate
        return "done"

    session_id = _open(one)
    conn, _ = _post(one, session_id, {**SLOW, "params": {"name": "slow", "_meta": {"progressToken": "t"}}})
    one.runner.pump()
    one.loop.run_ready()
    first = conn.read()
    assert first is not None and first.complete
    assert [e["params"]["progress"] for e in first.events if e is not None] == [1]
    resumed_conn, resumed = _resume(two, session_id, first.last_id)
    assert resumed is not None and resumed.status == 200 and not resumed.complete
    assert [e["params"]["progress"] for e in resumed.events if e is not None] == [2]  # the replay
    assert two.server.follows()
    two.relay(events)
    two.relay(events)  # nothing new: nothing sent twice
    events.append(session_id, two.server.follows()[0].stream, b"")  # an event without data is not sent
    gate.set_result(None)
    one.loop.run_ready()
    one.runner.pump()
    two.relay(events)
    resumed_conn.read()
    assert resumed.complete
    texts = [e.get("result", {}).get("content", [{}])[0].get("text") for e in resumed.events if e]
    assert texts == [None, "done"]
    assert len(set(resumed.ids)) == len(resumed.ids)
    assert two.server.follows() == []


def test_a_relay_for_an_overtaken_position_is_dropped() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    gate, end = one.loop.future(), one.loop.future()

    @app.tool()
    async def slow(ctx: Context) -> str:
        ctx.close_sse_stream()
        await gate
        ctx.report_progress(1, 2)
        await end
        return "done"

    session_id = _open(one)
    conn, _ = _post(one, session_id, {**SLOW, "params": {"name": "slow", "_meta": {"progressToken": "t"}}})
    one.runner.pump()
    one.loop.run_ready()
    first = conn.read()
    assert first is not None
    _resume(two, session_id, first.last_id)
    gate.set_result(None)
    one.loop.run_ready()
    one.runner.pump()
    stale = events.follow(two.server.follows(), 0.0)  # read, then overtaken before it is handed over
    assert stale
    again_conn, again = _resume(two, session_id, first.last_id)  # the client came back (replays progress 1)
    assert again is not None and not again.complete
    two.server.receive_relayed(stale, 0.0)
    again_conn.read()
    assert [e["params"]["progress"] for e in again.events if e] == [1]


def test_a_stream_resumed_at_the_worker_running_it_is_not_followed() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one = Worker(app, sessions, events, b"1" * 32)
    gate = one.loop.future()

    @app.tool()
    async def slow(ctx: Context) -> str:
        ctx.close_sse_stream()
        await gate
        return "done"

    session_id = _open(one)
    conn, _ = _post(one, session_id, SLOW)
    one.runner.pump()
    one.loop.run_ready()
    first = conn.read()
    assert first is not None
    resumed_conn, resumed = _resume(one, session_id, first.last_id)
    assert _streams(one.server) == []
    gate.set_result(None)
    one.loop.run_ready()
    one.runner.pump()
    resumed_conn.read()
    assert resumed is not None and resumed.complete and resumed.events[-1]["id"] == 7


def test_leaving_a_followed_stream_stops_following_it() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    gate = one.loop.future()

    @app.tool()
    async def slow(ctx: Context) -> str:
        ctx.close_sse_stream()
        await gate
        return "done"

    session_id = _open(one)
    conn, _ = _post(one, session_id, SLOW)
    one.runner.pump()
    one.loop.run_ready()
    first = conn.read()
    assert first is not None
    resumed_conn, _ = _resume(two, session_id, first.last_id)
    assert _streams(two.server)
    two.server.connection_lost(resumed_conn.id, 1.0)
    assert _streams(two.server) == []


class _Down(MemorySessionStore):
    """A store that stopped answering (until ``up``): ``load`` and ``save`` fail."""

    up = False

    def load(self, session_id: str) -> SessionRecord | None:
        if not self.up:
            raise StoreUnavailable("the store at redis://x is down")
        return super().load(session_id)

    def save(self, record: SessionRecord) -> None:
        if not self.up:
            raise StoreUnavailable("the store at redis://x is down")
        super().save(record)


def test_a_request_the_store_cannot_serve_gets_503_naming_the_store_not_its_address() -> None:
    server = HttpServer(MCPServer("s"), secret=b"k" * 32, entropy=b"e" * 32, config=HttpConfig.loopback(),
                        sessions=_Down())
    answer = RawHttp(server).request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                     headers={"mcp-session-id": "abc"})
    assert answer is not None and answer.status == 503 and answer.headers["retry-after"] == "1"
    assert b"session store did not answer" in answer.body and b"redis://" not in answer.body


def test_a_session_the_store_cannot_save_is_served_here_and_saved_later() -> None:
    store = _Down()
    server = HttpServer(MCPServer("s"), secret=b"k" * 32, entropy=b"e" * 32, config=HttpConfig.loopback(),
                        sessions=store)
    conn = RawHttp(server)
    answer = conn.request(body=INIT)
    assert answer is not None and answer.status == 200
    session_id = answer.headers["mcp-session-id"]
    store.up = True
    assert _status(conn.request(body=INITIALIZED, headers={"mcp-session-id": session_id})) == 202
    assert store.load(session_id) is not None


def test_events_the_store_cannot_keep_are_sent_without_ids() -> None:
    class Down(MemoryEventStore):
        def extend(self, session_id: str, stream: int, events: Sequence[tuple[bytes, bool]],
                   request_id: int | str | None = None) -> list[str]:
            raise StoreUnavailable("down")

        def forget(self, session_id: str) -> None:
            raise StoreUnavailable("down")

    server = HttpServer(MCPServer("s"), secret=b"k" * 32, entropy=b"e" * 32,
                        config=HttpConfig.loopback(response_mode="sse"),
                        events=Down())
    conn = RawHttp(server)
    session_id = _open_on(conn)
    answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                          headers={"mcp-session-id": session_id})
    assert answer is not None and answer.complete
    assert answer.events == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
    assert answer.ids == [""]
    deleted = conn.request("DELETE", headers={"mcp-session-id": session_id})
    assert deleted is not None and deleted.status == 200


def test_a_whole_sse_answer_keeps_its_priming_event_and_answer_in_one_store_call() -> None:
    calls: list[tuple[str, int]] = []

    class Counting(MemoryEventStore):
        def append(self, session_id: str, stream: int, data: bytes, final: bool = False,
                   request_id: int | str | None = None) -> str:
            calls.append(("append", 1))
            return super().append(session_id, stream, data, final, request_id)

        def extend(self, session_id: str, stream: int, events: Sequence[tuple[bytes, bool]],
                   request_id: int | str | None = None) -> list[str]:
            calls.append(("extend", len(events)))
            return super().extend(session_id, stream, events, request_id)

    events = Counting()
    server = HttpServer(MCPServer("s"), secret=b"k" * 32, entropy=b"e" * 32,
                        config=HttpConfig.loopback(response_mode="sse"), events=events)
    conn = RawHttp(server)
    session_id = _open_on(conn)
    calls.clear()
    answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                          headers={"mcp-session-id": session_id})
    assert answer is not None and answer.complete
    assert calls == [("extend", 2)]  # (a remote store: one round trip, not one per event)
    priming, last = answer.ids
    assert priming and last and answer.events == [None, {"jsonrpc": "2.0", "id": 2, "result": {}}]
    replay = events.replay(session_id, priming)
    assert replay is not None and replay.finished and replay.request_id == 2
    assert replay.events == [(last, b'{"jsonrpc":"2.0","id":2,"result":{}}')]


def _open_on(conn: RawHttp) -> str:
    answer = conn.request(body=INIT)
    assert answer is not None and answer.complete
    session_id: str = answer.headers["mcp-session-id"]
    conn.request(body=INITIALIZED, headers={"mcp-session-id": session_id})
    return session_id


def _status(answer: Response | None) -> int:
    assert answer is not None
    return answer.status


def test_a_session_ended_while_followed_stops_its_relays() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    gate = one.loop.future()

    @app.tool()
    async def slow(ctx: Context) -> str:
        ctx.close_sse_stream()
        await gate
        return "done"

    session_id = _open(one)
    conn, _ = _post(one, session_id, SLOW)
    one.runner.pump()
    one.loop.run_ready()
    first = conn.read()
    assert first is not None
    _resume(two, session_id, first.last_id)
    wants = two.server.follows()
    deleted = RawHttp(two.server).request("DELETE", headers={"mcp-session-id": session_id})
    assert deleted is not None and deleted.status == 200
    assert two.server.follows() == []
    two.server.receive_relayed(events.follow(wants, 0.0), 0.0)  # the store forgot them anyway: nothing


def _asking(app: MCPServer, worker: Worker) -> tuple[str, RawHttp, Response]:
    """A session whose call ``ask`` runs at ``worker``, waiting for the client's answer."""

    @app.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Who?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"hello {answer.content['name'] if answer.content else '?'}"

    session_id = _open(worker)
    conn, _ = _post(worker, session_id, {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                         "params": {"name": "ask"}})
    worker.runner.pump()
    worker.loop.run_ready()
    response = conn.read()
    assert response is not None
    return session_id, conn, response


def test_an_answer_posted_to_another_worker_reaches_the_waiting_handler() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    session_id, conn, response = _asking(app, one)
    question = next(e for e in response.events if e and e.get("method") == "elicitation/create")
    answer = {"jsonrpc": "2.0", "id": question["id"],
              "result": {"action": "accept", "content": {"name": "Ada"}}}
    _, accepted = _post(two, session_id, answer)
    assert accepted is not None and accepted.status == 202
    assert [f.stream for f in one.server.follows()] == [INBOX_STREAM]
    one.relay(events)
    one.loop.run_ready()
    one.runner.pump()
    conn.read()
    assert response.complete and response.events[-1]["result"]["content"][0]["text"] == "hello Ada"
    assert one.server.follows() == []  # no call runs here any more


def test_a_cancellation_posted_to_another_worker_reaches_the_call() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    session_id, _, _ = _asking(app, one)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    _post(two, session_id, {"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": "x", "progress": 1}})  # not for the inbox
    _post(two, session_id, cancel)
    one.relay(events)
    one.loop.run_ready()
    one.runner.pump()
    assert one.server.follows() == [] and one.runner.running == 0


def test_workers_number_their_questions_apart() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    session_id, _, first = _asking(app, one)
    conn, _ = _post(two, session_id, {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                                      "params": {"name": "ask"}})
    two.runner.pump()
    two.loop.run_ready()
    other = conn.read()
    assert other is not None
    ids = [next(e["id"] for e in r.events if e and e.get("method") == "elicitation/create")
           for r in (first, other)]
    assert ids[0] != ids[1]


def test_an_inbox_position_moves_past_other_streams_and_stale_reads_are_dropped() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one = Worker(app, sessions, events, b"1" * 32)
    session_id, _, _ = _asking(app, one)
    (want,) = one.server.follows()
    moved = Relayed(session_id=session_id, stream=INBOX_STREAM, event_id="9-99", data=b"", since=want.after)
    stale = Relayed(session_id=session_id, stream=INBOX_STREAM, event_id="9-98", data=b"{}", since="9-1")
    one.server.receive_relayed([moved, stale], 0.0)
    assert one.server.follows()[0].after == "9-99"


def _abandoning(events: MemoryEventStore) -> tuple[Worker, str, RawHttp, Response, str]:
    """A call running at worker one, its stream resumed at worker two (which follows it)."""
    sessions = MemorySessionStore()
    sessions.shared = True
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)

    @app.tool()
    async def slow(ctx: Context) -> str:
        ctx.close_sse_stream()
        await one.loop.future()  # never: its worker dies
        return "never"

    session_id = _open(one)
    conn, _ = _post(one, session_id, SLOW)
    one.runner.pump()
    one.loop.run_ready()
    first = conn.read()
    assert first is not None
    resumed_conn, resumed = _resume(two, session_id, first.last_id)
    assert resumed is not None
    return two, session_id, resumed_conn, resumed, first.last_id


def test_a_followed_stream_whose_worker_died_is_answered_with_an_error_for_every_resumption() -> None:
    events = MemoryEventStore()
    events.shared = True
    two, session_id, conn, resumed, last = _abandoning(events)
    (want,) = _streams(two.server)
    two.server.receive_relayed([Relayed(session_id=session_id, stream=want.stream, event_id=want.after,
                                        data=b"", since=want.after, abandoned=True)], 1.0)
    conn.read()
    assert resumed.complete and resumed.events[-1]["id"] == 7
    assert resumed.events[-1]["error"]["code"] == -32603
    _, again = _resume(two, session_id, last)  # the client comes back: the error, at once
    assert again is not None and again.complete and again.events[-1]["error"]["code"] == -32603


def test_an_abandoned_stream_of_no_known_request_just_ends() -> None:
    class Forgetful(MemoryEventStore):
        def extend(self, session_id: str, stream: int, events: Sequence[tuple[bytes, bool]],
                   request_id: int | str | None = None) -> list[str]:
            return super().extend(session_id, stream, events)

    events = Forgetful()
    events.shared = True
    two, session_id, conn, resumed, _ = _abandoning(events)
    (want,) = _streams(two.server)
    two.server.receive_relayed([Relayed(session_id=session_id, stream=want.stream, event_id=want.after,
                                        data=b"", since=want.after, abandoned=True)], 1.0)
    conn.read()
    assert resumed.complete and [e for e in resumed.events if e] == []


def test_workers_sharing_a_secret_name_their_tasks_apart() -> None:
    app = MCPServer("s")
    app.add_tool(lambda: "done", name="slow", task_support="optional")
    ids = []
    for key in (b"1" * 32, b"2" * 32):
        worker = HttpServer(app, secret=b"k" * 32, config=HttpConfig.loopback(), entropy=key)
        conn = RawHttp(worker)
        conn.request(body=modern_body(1, "tools/call", {"name": "slow"},
                                      capabilities={"extensions": {TASKS_EXTENSION: {}}}),
                     headers={**MODERN_HEADERS, "mcp-method": "tools/call", "mcp-name": "slow"})
        event = worker.next_event()
        assert isinstance(event, ToolCallReceived)
        ids.append(worker.start_task(event.call, now=1.0))
    assert None not in ids and ids[0] != ids[1]


@pytest.mark.parametrize("limits", [{"max_sessions": 1}, {"max_sessions_per_peer": 1}])
def test_a_worker_making_room_drops_only_its_copy_of_a_shared_session(limits: dict[str, int]) -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    one = Worker(app, sessions, events, b"1" * 32, **limits)
    two = Worker(app, sessions, events, b"2" * 32)
    first = _open(one)
    second = _open(one)  # the first, idle here, makes room
    assert first != second and sessions.load(first) is not None
    _, answer = _post(two, first, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert answer is not None and answer.status == 200  # it lives on elsewhere


def test_what_a_session_changes_after_it_was_saved_is_saved_again() -> None:
    sessions, events = _shared()
    app = MCPServer("s")
    worker = Worker(app, sessions, events, b"1" * 32)
    session_id = _open(worker)
    first = sessions.load(session_id)
    assert first is not None and first.log_level is None
    _post(worker, session_id, {"jsonrpc": "2.0", "id": 2, "method": "ping"})  # nothing changed: kept
    assert sessions.load(session_id) == first
    _post(worker, session_id, {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
                               "params": {"level": "error"}})
    _post(worker, session_id, {"jsonrpc": "2.0", "id": 4, "method": "ping"})
    saved = sessions.load(session_id)
    assert saved is not None and saved.log_level == "error"


def test_events_of_a_broken_stream_the_store_could_not_keep_are_kept_and_stored_once_it_answers() -> None:
    class Failing(MemoryEventStore):
        down = False

        def append(self, session_id: str, stream: int, data: bytes, final: bool = False,
                   request_id: int | str | None = None) -> str:
            if self.down:
                raise StoreUnavailable("down")
            return super().append(session_id, stream, data, final, request_id)

    sessions, events = MemorySessionStore(), Failing()
    sessions.shared = events.shared = True
    app = MCPServer("s")
    one, two = Worker(app, sessions, events, b"1" * 32), Worker(app, sessions, events, b"2" * 32)
    gate = one.loop.future()

    @app.tool()
    async def slow(ctx: Context) -> str:
        ctx.report_progress(1, 3)
        ctx.close_sse_stream()  # the client's connection drops here
        await gate
        ctx.report_progress(2, 3)
        return "done"

    session_id = _open(one)
    conn, _ = _post(one, session_id, {**SLOW, "params": {"name": "slow", "_meta": {"progressToken": "t"}}})
    one.runner.pump()
    one.loop.run_ready()
    first = conn.read()
    assert first is not None and first.complete
    events.down = True
    gate.set_result(None)
    one.loop.run_ready()
    one.runner.pump()  # the progress and the answer reach nobody, and no store
    assert one.server.next_deadline() == 0.0
    one.server.handle_timeout(10.0)  # (offered again in a second)
    assert one.server.next_deadline() == 11.0
    one.server.handle_timeout(11.0)  # still down: a second more
    assert one.server.next_deadline() == 12.0
    _, here = _resume(one, session_id, first.last_id)  # the worker keeping them has them at once
    assert here is not None and here.complete
    assert [e.get("params", {}).get("progress") or e["result"]["content"][0]["text"]
            for e in here.events if e] == [2, "done"]
    events.down = False
    one.server.handle_timeout(12.0)
    assert one.server.next_deadline() != 13.0
    _, resumed = _resume(two, session_id, first.last_id)
    assert resumed is not None and resumed.complete  # every event once, in order, the answer last
    assert [e.get("params", {}).get("progress") or e["result"]["content"][0]["text"]
            for e in resumed.events if e] == [2, "done"]
