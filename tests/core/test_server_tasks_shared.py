"""Tasks in a shared ``TaskStore``: several servers (workers) see one task; the one running it
takes the answers and cancellations the others pass on; a task whose worker stopped beating
fails; a task belongs to its principal at every worker. The store here is a dict with the
contract of ``RedisStore`` (tests/deploy runs the real one behind HAProxy)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
from server_helpers import modern_request, server_for, take, take_events

from mcp_sansio.server import (
    TASKS_EXTENSION,
    AnswerPending,
    AnswerReceived,
    Ask,
    CallCancelled,
    MCPServer,
    Principal,
    StdioServer,
    ToolCallReceived,
)
from mcp_sansio.server.stores import StoreUnavailable, TaskMessage, TaskSnapshot
from mcp_sansio.server.tasks import WORKER_LOST, receive_messages
from mcp_sansio.types import ElicitResult

EXT: dict[str, object] = {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}
_TERMINAL = {"completed", "failed", "cancelled"}


class Shared:
    """One store every worker of a test shares."""

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        self.queues: dict[str, list[TaskMessage]] = {}
        self.beating: set[str] = set()
        self.down = False


class Tasks:
    """The ``TaskStore`` of worker ``name`` over :class:`Shared`."""

    def __init__(self, shared: Shared, name: str) -> None:
        self.shared, self.name = shared, name
        shared.beating.add(name)

    def _up(self) -> None:
        if self.shared.down:
            raise StoreUnavailable("down")

    def create_task(self, task: TaskSnapshot, ttl: float) -> None:
        self._up()
        self.shared.tasks[task.task_id] = {"snap": task, "worker": self.name, "pending": {}}

    def load_task(self, task_id: str) -> TaskSnapshot | None:
        self._up()
        entry = self.shared.tasks.get(task_id)
        if entry is None:
            return None
        snap: TaskSnapshot = entry["snap"]
        return msgspec.structs.replace(snap, input_requests=dict(entry["pending"]),
                                       alive=entry["worker"] in self.shared.beating)

    def ask_task(self, task_id: str, key: str, request: bytes, wall: float) -> None:
        self._up()
        entry = self.shared.tasks[task_id]
        entry["pending"][key] = request
        entry["snap"] = msgspec.structs.replace(entry["snap"], status="input_required", updated_at=wall)

    def end_task(self, task_id: str, status: str, wall: float, result: bytes | None = None,
                 error: bytes | None = None) -> bool:
        self._up()
        entry = self.shared.tasks[task_id]
        if entry["snap"].status in _TERMINAL:
            return False
        entry["snap"] = msgspec.structs.replace(entry["snap"], status=status, updated_at=wall, result=result,
                                                error=error)
        entry["pending"].clear()
        return True

    def answer_task(self, task_id: str, answers: dict[str, bytes], wall: float) -> list[str]:
        self._up()
        entry = self.shared.tasks[task_id]
        passed = [key for key in answers if entry["pending"].pop(key, None) is not None]
        queue = self.shared.queues.setdefault(entry["worker"], [])
        queue += [TaskMessage(task_id=task_id, key=key, answer=answers[key]) for key in passed]
        if not entry["pending"]:
            entry["snap"] = msgspec.structs.replace(entry["snap"], status="working", updated_at=wall)
        return passed

    def cancel_task(self, task_id: str, wall: float) -> bool:
        moved = self.end_task(task_id, "cancelled", wall)
        if moved:
            worker = self.shared.tasks[task_id]["worker"]
            self.shared.queues.setdefault(worker, []).append(TaskMessage(task_id=task_id))
        return moved

    def task_messages(self, timeout: float) -> list[TaskMessage]:
        messages, self.shared.queues[self.name] = self.shared.queues.get(self.name, []), []
        return messages


def _app() -> MCPServer:
    app = MCPServer("s")
    app.add_tool(lambda seconds=0: "done", name="slow", task_support="optional")
    return app


def _workers(shared: Shared, count: int = 2) -> list[StdioServer]:
    workers = []
    for number in range(count):
        server = server_for(_app())
        server.session.share_tasks(Tasks(shared, f"w{number}"))
        workers.append(server)
    return workers


def _send(server: StdioServer, message: dict[str, object], principal: Principal | None = None) -> list[Any]:
    server.session.receive_message(json.dumps(message).encode(), 0.0, None, principal)
    return take(server)


def _request(rid: int, method: str, params: dict[str, object]) -> dict[str, object]:
    return modern_request(rid, method, params, capabilities=EXT)


def _call_slow(server: StdioServer, principal: Principal | None = None) -> ToolCallReceived:
    message = json.dumps(_request(1, "tools/call", {"name": "slow"})).encode()
    server.session.receive_message(message, 0.0, None, principal)
    [event] = take_events(server)
    assert isinstance(event, ToolCallReceived)
    return event


def _start(server: StdioServer, principal: Principal | None = None) -> tuple[int, str]:
    event = _call_slow(server, principal)
    task_id = server.start_task(event.call, now=1.0, message="on it")
    assert task_id is not None
    [created] = take(server)
    assert created["result"]["taskId"] == task_id
    return event.call, task_id


def _get(server: StdioServer, task_id: str, principal: Principal | None = None) -> dict[str, Any]:
    [answer] = _send(server, _request(9, "tasks/get", {"taskId": task_id}), principal)
    assert isinstance(answer, dict)
    return answer


def _deliver(server: StdioServer) -> list[Any]:
    store = server.session.task_store
    assert isinstance(store, Tasks)
    receive_messages(server.session, store.task_messages(0.0), 2.0)
    return take_events(server)


def test_a_task_started_at_one_worker_is_reported_by_another_with_its_result() -> None:
    a, b = _workers(Shared())
    call, task_id = _start(a)
    working = _get(b, task_id)["result"]
    assert (working["status"], working["statusMessage"]) == ("working", "on it")
    assert working["resultType"] == "complete"
    a.respond(call, "finished", now=2.0)
    done = _get(b, task_id)["result"]
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "finished"}]
    assert done["lastUpdatedAt"] != done["createdAt"]


def test_a_task_cancelled_at_another_worker_stops_the_handler_at_its_own() -> None:
    a, b = _workers(Shared())
    call, task_id = _start(a)
    [ack] = _send(b, _request(2, "tasks/cancel", {"taskId": task_id}))
    assert ack["result"]["resultType"] == "complete"
    assert _get(b, task_id)["result"]["status"] == "cancelled"
    assert _deliver(a) == [CallCancelled(call=call, reason="the task was cancelled")]
    assert _get(a, task_id)["result"]["status"] == "cancelled"
    assert _deliver(a) == []  # once


def test_answers_given_at_another_worker_reach_the_waiting_handler() -> None:
    a, b = _workers(Shared())
    call, task_id = _start(a)
    [outcome] = a.ask(call, [Ask.elicit("Name?", key="who")], now=1.5)
    assert isinstance(outcome, AnswerPending)
    asked = _get(b, task_id)["result"]
    assert asked["status"] == "input_required"
    assert asked["inputRequests"]["who"]["method"] == "elicitation/create"
    wrong = {"who": {"action": "perhaps"}}
    _send(b, _request(3, "tasks/update", {"taskId": task_id, "inputResponses": wrong}))
    assert _get(b, task_id)["result"]["status"] == "input_required" and _deliver(a) == []
    right = {"who": {"action": "accept", "content": {"name": "Ada"}}}
    _send(b, _request(4, "tasks/update", {"taskId": task_id, "inputResponses": right}))
    assert _get(b, task_id)["result"]["status"] == "working"
    answer = ElicitResult(action="accept", content={"name": "Ada"})
    assert _deliver(a) == [AnswerReceived(ticket=outcome.ticket, method="elicitation/create", result=answer)]


def test_another_principals_task_is_unknown_at_every_worker() -> None:
    alice, bob = Principal(subject="alice", issuer="https://as"), Principal(subject="bob", issuer="https://as")
    a, b = _workers(Shared())
    _, task_id = _start(a, alice)
    for worker in (a, b):
        for method, params in (("tasks/get", {}), ("tasks/cancel", {}),
                               ("tasks/update", {"inputResponses": {"x": {"action": "decline"}}})):
            [answer] = _send(worker, _request(5, method, {"taskId": task_id, **params}), bob)
            assert answer["error"] == {"code": -32602, "message": f"Unknown task: {task_id}"}
    assert _get(b, task_id, alice)["result"]["status"] == "working"  # bob changed nothing
    assert _deliver(a) == []


def test_a_task_whose_worker_stopped_beating_fails_and_stays_failed() -> None:
    shared = Shared()
    a, b = _workers(shared)
    call, task_id = _start(a)
    shared.beating.discard("w0")  # killed: its heartbeat expired
    failed = _get(b, task_id)["result"]
    assert failed["status"] == "failed" and failed["error"] == {"code": -32603, "message": WORKER_LOST}
    assert "result" not in failed
    a.respond(call, "too late", now=3.0)  # (had it lived on) a late end changes nothing
    assert _get(b, task_id)["result"]["status"] == "failed"


def test_a_call_whose_task_the_store_cannot_keep_goes_on_and_answers_directly() -> None:
    shared = Shared()
    [a] = _workers(shared, 1)
    event = _call_slow(a)
    shared.down = True
    assert a.start_task(event.call, now=1.0) is None
    assert take(a) == [] and a.session.tasks == {}
    a.respond(event.call, "direct", now=2.0)
    [answer] = take(a)
    assert answer["result"]["content"][0]["text"] == "direct"


def test_a_task_end_the_store_cannot_keep_is_offered_to_it_until_it_does() -> None:
    shared = Shared()
    a, b = _workers(shared)
    call, task_id = _start(a)
    shared.down = True
    a.respond(call, "finished", now=2.0)  # its end reaches no store ...
    shared.down = False
    assert _get(b, task_id)["result"]["status"] == "working"  # (... and its worker beats on)
    assert a.session.next_deadline() == 3.0
    shared.down = True
    a.session.handle_timeout(3.0)  # still down: a second more
    assert a.session.next_deadline() == 4.0
    shared.down = False
    a.session.handle_timeout(4.0)
    done = _get(b, task_id)["result"]
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "finished"}]
    assert a.session.next_deadline() != 5.0
