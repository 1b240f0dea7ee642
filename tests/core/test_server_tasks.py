"""The tasks extension (SEP-2663) server side: a call becomes a task, tasks/get, update, cancel."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pair import StepLoop
from server_helpers import handshake, modern_request, request, send, server_for, take, take_events

from mcp_sansio import LocalProtocolError, RequestError
from mcp_sansio.server import (
    TASKS_EXTENSION,
    Answered,
    AnswerPending,
    AnswerReceived,
    Ask,
    CallCancelled,
    Context,
    HandlerCallReceived,
    MCPServer,
    StdioServer,
    ToolCallReceived,
)
from mcp_sansio.types import ElicitResult
from mcp_sansio_base.server import ServerRunner

EXT: dict[str, object] = {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")


def _app() -> MCPServer:
    app = MCPServer("s")
    app.add_tool(lambda seconds=0: "done", name="slow", task_support="optional")
    app.add_tool(lambda: "", name="must", task_support="required")
    app.add_tool(lambda: "", name="plain")
    return app


def _call(server: StdioServer, name: str = "slow", rid: int = 1, capabilities: Any = None,
          **params: Any) -> ToolCallReceived:
    send(server, modern_request(rid, "tools/call", {"name": name, **params},
                                capabilities=EXT if capabilities is None else capabilities))
    [event] = take_events(server)
    assert isinstance(event, ToolCallReceived)
    return event


def _started(server: StdioServer, **kwargs: Any) -> tuple[ToolCallReceived, str]:
    event = _call(server, **kwargs)
    task_id = server.start_task(event.call, now=1.0, message="on it")
    assert task_id is not None
    take(server)
    return event, task_id


def _get(server: StdioServer, task_id: str, rid: int = 50) -> dict[str, Any]:
    send(server, modern_request(rid, "tasks/get", {"taskId": task_id}, capabilities=EXT))
    [answer] = take(server)
    return answer


def test_a_started_task_answers_its_request_with_a_flat_create_task_result() -> None:
    server = server_for(_app(), task_ttl_ms=60_000, task_poll_interval_ms=250)
    server.wall_offset = 1_700_000_000.0
    event = _call(server)
    task_id = server.start_task(event.call, now=1.0, message="on it")
    [answer] = take(server)
    result = answer["result"]
    assert answer["id"] == 1 and result["taskId"] == task_id
    assert (result["resultType"], result["status"], result["statusMessage"]) == ("task", "working", "on it")
    assert (result["ttlMs"], result["pollIntervalMs"]) == (60_000, 250)
    assert ISO.fullmatch(result["createdAt"]) and result["createdAt"] == result["lastUpdatedAt"]
    assert result["createdAt"] == "2023-11-14T22:13:21.000+00:00"
    assert not {"task", "result", "error", "inputRequests", "requestState", "ttl"} & set(result)


def test_task_ids_are_unguessable_and_distinct() -> None:
    server = server_for(_app())
    _, first = _started(server, rid=1)
    _, second = _started(server, rid=2)
    assert first != second and len(first) == 32


def test_starting_twice_keeps_the_task() -> None:
    server = server_for(_app())
    event, task_id = _started(server)
    assert server.start_task(event.call, now=2.0) == task_id
    assert take(server) == []


def test_a_client_without_the_extension_gets_no_task_and_a_plain_result() -> None:
    server = server_for(_app())
    event = _call(server, capabilities={})
    assert server.start_task(event.call, now=1.0) is None
    server.respond(event.call, "sync", now=1.0)
    assert take(server)[0]["result"]["content"] == [{"type": "text", "text": "sync"}]


def test_too_many_tasks_run_synchronously() -> None:
    server = server_for(_app(), max_tasks=1)
    _started(server, rid=1)
    event = _call(server, rid=2)
    assert server.start_task(event.call, now=1.0) is None


@pytest.mark.parametrize("name", ["plain"])
def test_only_a_task_capable_tool_can_become_a_task(name: str) -> None:
    server = server_for(_app())
    event = _call(server, name)
    with pytest.raises(LocalProtocolError, match="task-capable"):
        server.start_task(event.call, now=1.0)


def test_a_handshake_era_call_cannot_become_a_task() -> None:
    server = server_for(_app())
    handshake(server, capabilities=EXT)
    send(server, request(1, "tools/call", {"name": "slow"}))
    [event] = take_events(server, HandlerCallReceived)
    with pytest.raises(LocalProtocolError, match="task-capable"):
        server.start_task(event.call, now=1.0)


def test_starting_an_unknown_call_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError, match="call 5"):
        server_for(_app()).start_task(5, now=0.0)


def test_a_running_task_reports_working() -> None:
    server = server_for(_app())
    _, task_id = _started(server)
    result = _get(server, task_id)["result"]
    assert result["status"] == "working" and result["resultType"] == "complete"
    assert not {"result", "error", "inputRequests"} & set(result)


def test_a_finished_task_inlines_its_result() -> None:
    server = server_for(_app())
    event, task_id = _started(server)
    server.respond(event.call, "42", now=2.0)
    assert take(server) == []  # the request was answered long ago
    result = _get(server, task_id)["result"]
    assert result["status"] == "completed"
    assert result["result"] == {"content": [{"type": "text", "text": "42"}]}


def test_a_tool_error_completes_the_task_with_is_error() -> None:
    server = server_for(_app())
    event, task_id = _started(server)
    server.fail(event.call, ValueError("bad input"), now=2.0)
    result = _get(server, task_id)["result"]
    assert result["status"] == "completed" and result["result"]["isError"] is True


@pytest.mark.parametrize(("error", "inlined"), [
    (RequestError(-32603, "crashed"), {"code": -32603, "message": "crashed"}),
    (RequestError(-32000, "quota", {"left": 0}), {"code": -32000, "message": "quota", "data": {"left": 0}}),
])
def test_a_protocol_error_fails_the_task(error: RequestError, inlined: dict[str, object]) -> None:
    server = server_for(_app())
    event, task_id = _started(server)
    server.fail(event.call, error, now=2.0)
    result = _get(server, task_id)["result"]
    assert result["status"] == "failed" and result["error"] == inlined and "result" not in result


def test_unknown_tasks_are_invalid_params() -> None:
    server = server_for(_app())
    for method in ("tasks/get", "tasks/cancel", "tasks/update"):
        send(server, modern_request(1, method, {"taskId": "nope"}, capabilities=EXT))
        assert take(server)[0]["error"] == {"code": -32602, "message": "Unknown task: nope"}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_task_methods_need_the_extension(method: str) -> None:
    server = server_for(_app())
    send(server, modern_request(1, method, {"taskId": "x"}, capabilities={}))
    assert take(server)[0]["error"] == {
        "code": -32021, "message": f"the client did not declare the {TASKS_EXTENSION} extension",
        "data": {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}}


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
def test_methods_the_extension_removed_are_not_found(method: str) -> None:
    server = server_for(_app())
    send(server, modern_request(1, method, {"taskId": "x"}, capabilities=EXT))
    assert take(server)[0]["error"]["code"] == -32601


def test_a_required_task_tool_refuses_clients_without_the_extension() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "tools/call", {"name": "must"}, capabilities={}))
    assert take(server)[0]["error"] == {
        "code": -32021, "message": "tool must runs only as a task",
        "data": {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}}


def test_a_required_task_tool_runs_for_clients_with_it() -> None:
    server = server_for(_app())
    assert _call(server, "must").tool.name == "must"


def test_questions_of_a_task_wait_for_tasks_update() -> None:
    server = server_for(_app())
    event, task_id = _started(server)
    asks = [Ask.elicit("Sure?", key="confirm"), Ask.elicit("Really?", key="again")]
    outcomes = server.ask(event.call, asks, now=2.0)
    assert all(isinstance(o, AnswerPending) for o in outcomes)
    assert take(server) == []
    waiting = _get(server, task_id)["result"]
    assert waiting["status"] == "input_required"
    assert waiting["inputRequests"] == {
        "confirm": {"method": "elicitation/create", "params": {"message": "Sure?", "requestedSchema": {
            "type": "object", "properties": {}}}},
        "again": {"method": "elicitation/create", "params": {"message": "Really?", "requestedSchema": {
            "type": "object", "properties": {}}}},
    }
    send(server, modern_request(2, "tasks/update", {"taskId": task_id, "inputResponses": {
        "confirm": {"action": "accept"}, "unknown": {"action": "accept"}}}, capabilities=EXT))
    assert take(server)[0]["result"]["resultType"] == "complete"
    assert take_events(server) == [AnswerReceived(ticket=outcomes[0].ticket, method="elicitation/create",  # type: ignore[union-attr]
                                                  result=ElicitResult(action="accept"))]
    partial = _get(server, task_id)["result"]
    assert partial["status"] == "input_required" and list(partial["inputRequests"]) == ["again"]
    send(server, modern_request(3, "tasks/update", {"taskId": task_id, "inputResponses": {
        "again": {"action": "bogus"}}}, capabilities=EXT))
    take(server)
    assert take_events(server) == [] and _get(server, task_id)["result"]["status"] == "input_required"
    send(server, modern_request(4, "tasks/update", {"taskId": task_id, "inputResponses": {
        "again": {"action": "decline"}}}, capabilities=EXT))
    take(server)
    assert len(take_events(server)) == 1 and _get(server, task_id)["result"]["status"] == "working"


def test_answers_gathered_before_the_task_are_still_used() -> None:
    server = server_for(_app())
    event, _ = _started(server, inputResponses={"confirm": {"action": "accept"}})
    [outcome] = server.ask(event.call, [Ask.elicit("Sure?", key="confirm")], now=2.0)
    assert outcome == Answered(ElicitResult(action="accept"))


def test_cancelling_a_running_task_stops_its_handler() -> None:
    server = server_for(_app())
    event, task_id = _started(server)
    server.ask(event.call, [Ask.elicit("Sure?")], now=2.0)
    send(server, modern_request(2, "tasks/cancel", {"taskId": task_id}, capabilities=EXT))
    assert take(server)[0]["result"] == {"resultType": "complete", "_meta": {
        "io.modelcontextprotocol/serverInfo": {"name": "s", "version": "0.1.0"}}}
    assert take_events(server) == [CallCancelled(call=event.call, reason="the task was cancelled")]
    result = _get(server, task_id)["result"]
    assert result["status"] == "cancelled" and "inputRequests" not in result
    server.respond(event.call, "late", now=3.0)  # the handler did not stop in time: nothing happens
    assert _get(server, task_id)["result"]["status"] == "cancelled"


def test_cancelling_a_finished_task_is_acknowledged_and_changes_nothing() -> None:
    server = server_for(_app())
    event, task_id = _started(server)
    server.respond(event.call, "done", now=2.0)
    send(server, modern_request(2, "tasks/cancel", {"taskId": task_id}, capabilities=EXT))
    assert take(server)[0]["result"]["resultType"] == "complete"
    assert _get(server, task_id)["result"]["status"] == "completed"


def test_a_task_is_forgotten_when_its_ttl_ends() -> None:
    server = server_for(_app(), task_ttl_ms=10_000)
    event, task_id = _started(server)
    assert server.next_deadline() == 11.0
    server.handle_timeout(10.0)
    assert _get(server, task_id)["result"]["status"] == "working"
    server.handle_timeout(11.0)
    assert take_events(server) == [CallCancelled(call=event.call, reason="the task expired")]
    assert _get(server, task_id)["error"]["code"] == -32602
    assert server.next_deadline() is None


def test_a_finished_task_expires_without_cancelling_anything() -> None:
    server = server_for(_app(), task_ttl_ms=1000)
    event, _ = _started(server)
    server.respond(event.call, "x", now=1.5)
    server.handle_timeout(5.0)
    assert take_events(server) == []


def test_a_task_sends_no_progress_nor_logs_and_cannot_answer_input_required() -> None:
    server = server_for(_app())
    event, _ = _started(server, _meta={"progressToken": 1, "io.modelcontextprotocol/logLevel": "debug"})
    server.send_progress(event.call, 1)
    server.send_log(event.call, "info", "x")
    assert take(server) == []
    with pytest.raises(LocalProtocolError, match="tasks/update"):
        server.input_required(event.call, {}, now=2.0)


def test_a_task_frees_its_request_id() -> None:
    server = server_for(_app())
    _started(server)
    assert _call(server, rid=1).call > 0


def test_a_task_respond_error_fails_it() -> None:
    server = server_for(_app())
    event, task_id = _started(server)
    server.respond_error(event.call, -32001, "gone", now=2.0)
    assert _get(server, task_id)["result"]["error"] == {"code": -32001, "message": "gone"}


def test_a_handler_becomes_a_task_and_waits_for_its_answer() -> None:
    app = MCPServer("s")

    @app.tool(task_support="optional")
    async def confirm(ctx: Context) -> str:
        assert ctx.task_id is None
        task_id = ctx.start_task("waiting")
        answer = await ctx.elicit("Delete?", key="confirm")
        return f"{task_id == ctx.task_id} {answer.action}"

    server = server_for(app)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    send(server, modern_request(1, "tools/call", {"name": "confirm"}, capabilities=EXT))
    runner.pump()
    loop.run_ready()
    task_id = take(server)[0]["result"]["taskId"]
    assert _get(server, task_id)["result"]["status"] == "input_required"
    send(server, modern_request(2, "tasks/update", {"taskId": task_id, "inputResponses": {
        "confirm": {"action": "accept"}}}, capabilities=EXT))
    runner.pump()
    loop.run_ready()
    take(server)
    result = _get(server, task_id)["result"]
    assert result["status"] == "completed" and result["result"]["content"][0]["text"] == "True accept"


def test_a_task_without_a_message_has_no_status_message() -> None:
    server = server_for(_app())
    event = _call(server)
    server.start_task(event.call, now=1.0)
    assert "statusMessage" not in take(server)[0]["result"]


def test_a_handler_whose_client_takes_no_task_goes_on_synchronously() -> None:
    app = MCPServer("s")

    @app.tool(task_support="optional")
    async def job(ctx: Context) -> str:
        return f"task={ctx.start_task()} id={ctx.task_id}"

    server = server_for(app)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    send(server, modern_request(1, "tools/call", {"name": "job"}, capabilities={}))
    runner.pump()
    loop.run_ready()
    assert take(server)[0]["result"]["content"][0]["text"] == "task=None id=None"


def test_a_task_belongs_to_the_principal_whose_token_started_it() -> None:
    import json

    from mcp_sansio.server import Principal

    alice, bob = Principal(subject="alice", issuer="https://as"), Principal(subject="bob", issuer="https://as")
    server = server_for(_app())

    def receive(message: dict[str, object], principal: Principal) -> None:
        server.session.receive_message(json.dumps(message).encode(), 0.0, None, principal)

    receive(modern_request(1, "tools/call", {"name": "slow"}, capabilities=EXT), alice)
    [event] = take_events(server)
    assert isinstance(event, ToolCallReceived) and event.request.principal == alice
    task_id = server.start_task(event.call, now=1.0)
    take(server)
    for method in ("tasks/get", "tasks/cancel"):
        receive(modern_request(2, method, {"taskId": task_id}, capabilities=EXT), bob)
        assert take(server)[0]["error"] == {"code": -32602, "message": f"Unknown task: {task_id}"}
    receive(modern_request(3, "tasks/get", {"taskId": task_id}, capabilities=EXT), alice)
    assert take(server)[0]["result"]["status"] == "working"
