"""Asking the client in the handshake era: requests of the server's own, answers, failures."""

from __future__ import annotations

from typing import Any

import pytest
from server_helpers import handshake, request, send, server_for, take, take_events

from mcp_sansio import ConnectionClosed, FailureReason, LocalProtocolError, RequestError, RequestTimeout
from mcp_sansio.errors import RemoteProtocolError
from mcp_sansio.server import (
    AnswerFailed,
    AnswerPending,
    AnswerReceived,
    Ask,
    ClientCapabilityMissing,
    HandlerCallReceived,
    MCPServer,
)
from mcp_sansio.types import ElicitResult, ListRootsResult, Root

ALL: dict[str, object] = {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}}


def _ready(capabilities: dict[str, object] | None = None, **config: Any) -> tuple[Any, int]:
    app = MCPServer("s")
    app.add_tool(lambda: "", name="t")
    server = server_for(app, **config)
    handshake(server, capabilities=ALL if capabilities is None else capabilities)
    send(server, request(1, "tools/call", {"name": "t"}))
    [event] = take_events(server, HandlerCallReceived)
    return server, event.call


def test_an_elicitation_goes_out_as_a_request_of_the_server() -> None:
    server, call = _ready()
    [outcome] = server.ask(call, [Ask.elicit("Name?", {"type": "object"})], now=0.0)
    assert outcome == AnswerPending(ticket=1)
    assert take(server) == [{"jsonrpc": "2.0", "id": 1, "method": "elicitation/create",
                             "params": {"message": "Name?", "requestedSchema": {"type": "object"}}}]


def test_the_answer_arrives_as_an_event_for_the_ticket() -> None:
    server, call = _ready()
    server.ask(call, [Ask.list_roots()], now=0.0)
    take(server)
    send(server, {"jsonrpc": "2.0", "id": 1, "result": {"roots": [{"uri": "file:///a"}]}})
    assert take_events(server) == [AnswerReceived(
        ticket=1, method="roots/list", result=ListRootsResult(roots=[Root(uri="file:///a")]))]


def test_several_questions_go_out_at_once() -> None:
    server, call = _ready()
    outcomes = server.ask(call, [Ask.sample("hi", max_tokens=5), Ask.list_roots()], now=0.0)
    assert outcomes == [AnswerPending(ticket=1), AnswerPending(ticket=2)]
    first, second = take(server)
    assert first["method"] == "sampling/createMessage" and first["params"]["maxTokens"] == 5
    assert first["params"]["messages"] == [{"role": "user", "content": {"type": "text", "text": "hi"}}]
    assert second["method"] == "roots/list"


def test_a_url_elicitation_gets_an_id_in_the_handshake_era() -> None:
    server, call = _ready()
    server.ask(call, [Ask.elicit_url("Sign in", "https://example.com/login")], now=0.0)
    params = take(server)[0]["params"]
    assert params == {"mode": "url", "message": "Sign in", "url": "https://example.com/login",
                      "elicitationId": "elicitation-1"}


def test_a_form_schema_can_come_from_a_type() -> None:
    import msgspec

    class Person(msgspec.Struct):
        name: str
        age: int = 0

    ask = Ask.elicit("Who?", Person)
    assert ask.params.requested_schema == {
        "type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "default": 0}}}
    empty = Ask.elicit("Empty?").params
    assert empty.requested_schema == {"type": "object", "properties": {}}


def test_sampling_options_reach_the_request() -> None:
    from mcp_sansio.types import ModelPreferences, SamplingMessage, TextContent, ToolChoice

    ask = Ask.sample([SamplingMessage(role="user", content=TextContent(text="q"))], max_tokens=9,
                     system_prompt="sys", temperature=0.5, stop_sequences=["x"],
                     model_preferences=ModelPreferences(speed_priority=1.0), metadata={"a": 1}, tools=[],
                     tool_choice=ToolChoice(mode="auto"), key="k")
    params = ask.params
    assert ask.key == "k" and params.stop_sequences == ["x"] and params.metadata == {"a": 1}
    assert params.tools == [] and params.system_prompt == "sys"


@pytest.mark.parametrize(("capabilities", "ask", "required"), [
    ({}, Ask.sample("x", max_tokens=1), {"sampling": {}}),
    ({}, Ask.list_roots(), {"roots": {}}),
    ({}, Ask.elicit("x"), {"elicitation": {}}),
    ({"elicitation": {}}, Ask.elicit_url("x", "https://x"), {"elicitation": {"url": {}}}),
])
def test_a_question_the_client_cannot_answer_is_refused(
    capabilities: dict[str, object], ask: Ask, required: dict[str, object]
) -> None:
    server, call = _ready(capabilities)
    with pytest.raises(ClientCapabilityMissing) as caught:
        server.ask(call, [ask], now=0.0)
    assert caught.value.required == required
    assert take(server) == []


def test_a_refused_batch_sends_nothing() -> None:
    server, call = _ready({"roots": {}})
    with pytest.raises(ClientCapabilityMissing):
        server.ask(call, [Ask.list_roots(), Ask.sample("x", max_tokens=1)], now=0.0)
    assert take(server) == []


def test_only_client_requests_can_be_asked() -> None:
    server, call = _ready()
    with pytest.raises(LocalProtocolError, match="cannot ask"):
        server.ask(call, [Ask(method="tools/list", params=ElicitResult(action="accept"))], now=0.0)


def test_a_handler_may_ask_only_so_many_questions() -> None:
    server, call = _ready(max_input_requests=2)
    with pytest.raises(LocalProtocolError, match="at most 2"):
        server.ask(call, [Ask.list_roots()] * 3, now=0.0)


def test_an_error_answer_fails_the_ticket_with_the_error() -> None:
    server, call = _ready()
    server.ask(call, [Ask.list_roots()], now=0.0)
    take(server)
    send(server, {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "no", "data": 3}})
    [event] = take_events(server)
    assert isinstance(event, AnswerFailed) and event.reason is FailureReason.ERROR_RESPONSE
    error = event.to_exception()
    assert isinstance(error, RequestError) and (error.code, error.message, error.data) == (-1, "no", 3)


def test_a_malformed_answer_fails_the_ticket() -> None:
    server, call = _ready()
    server.ask(call, [Ask.list_roots()], now=0.0)
    take(server)
    send(server, {"jsonrpc": "2.0", "id": 1, "result": {"roots": 5}})
    [event] = take_events(server)
    assert isinstance(event, AnswerFailed) and event.reason is FailureReason.INVALID_RESULT
    assert isinstance(event.to_exception(), RemoteProtocolError)


def test_an_unanswered_question_times_out_and_is_cancelled() -> None:
    server, call = _ready(request_timeout=10.0)
    server.ask(call, [Ask.list_roots()], now=1.0)
    take(server)
    assert server.next_deadline() == 11.0
    server.handle_timeout(10.9)
    assert take_events(server) == []
    server.handle_timeout(11.0)
    [event] = take_events(server)
    assert isinstance(event, AnswerFailed) and isinstance(event.to_exception(), RequestTimeout)
    assert take(server) == [{"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": 1, "reason": "timed out"}}]
    assert server.next_deadline() is None


def test_answers_to_unknown_requests_are_discarded() -> None:
    server, _ = _ready()
    send(server, {"jsonrpc": "2.0", "id": 42, "result": {}}, {"jsonrpc": "2.0", "id": "s", "result": {}})
    assert [type(e).__name__ for e in take_events(server)] == ["MessageDiscarded", "MessageDiscarded"]


def test_finishing_a_call_cancels_its_open_questions() -> None:
    server, call = _ready()
    server.ask(call, [Ask.list_roots()], now=0.0)
    take(server)
    server.respond(call, "done", now=0.0)
    cancel, result = take(server)
    assert cancel["method"] == "notifications/cancelled" and cancel["params"]["requestId"] == 1
    assert result["result"]["content"][0]["text"] == "done"
    send(server, {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}})
    assert type(take_events(server)[0]).__name__ == "MessageDiscarded"


def test_a_cancelled_call_cancels_its_open_questions() -> None:
    server, call = _ready()
    server.ask(call, [Ask.list_roots()], now=0.0)
    take(server)
    send(server, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert take(server)[0]["params"] == {"requestId": 1, "reason": "the request it served was cancelled"}
    with pytest.raises(LocalProtocolError, match="not in progress"):
        server.ask(call, [Ask.list_roots()], now=0.0)


def test_closing_fails_every_open_question() -> None:
    server, call = _ready()
    server.ask(call, [Ask.list_roots()], now=0.0)
    server.session.close(1.0)
    kinds = [type(e).__name__ for e in take_events(server)]
    assert kinds == ["CallCancelled", "ConnectionTerminated"]
    # The question was the call's: the cancellation took it with it.
    assert server.session.next_deadline() is None


def test_closing_fails_questions_of_finished_work() -> None:
    server, call = _ready()
    session = server.session
    session.ask(call, [Ask.list_roots()], now=0.0)
    rec = session._calls.pop(call)  # the call record is gone, its question is not (no public path)
    session.close(1.0)
    failed = [e for e in take_events(server) if isinstance(e, AnswerFailed)]
    assert len(failed) == 1 and isinstance(failed[0].to_exception(), ConnectionClosed)
    assert rec.call == call


def test_a_timed_out_question_of_a_finished_call_is_cancelled_on_no_channel() -> None:
    server, call = _ready(request_timeout=1.0)
    session = server.session
    session.ask(call, [Ask.list_roots()], now=0.0)
    take(server)
    session._calls.pop(call)  # a finished call whose question outlived it (no public path)
    server.handle_timeout(5.0)
    assert take(server)[0]["method"] == "notifications/cancelled"


def test_a_failed_answer_to_a_finished_call_is_still_reported() -> None:
    server, call = _ready()
    session = server.session
    session.ask(call, [Ask.list_roots()], now=0.0)
    take(server)
    session._calls.pop(call)  # a finished call whose question outlived it (no public path)
    send(server, {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x"}})
    assert isinstance(take_events(server)[0], AnswerFailed)
