"""Asking the client in 2026-07-28: input_required results, retries, and the sealed requestState."""

from __future__ import annotations

from typing import Any

import pytest
from server_helpers import SECRET, modern_request, send, server_for, take, take_events

from mcp_sansio import LocalProtocolError
from mcp_sansio.server import (
    Answered,
    Ask,
    ClientCapabilityMissing,
    Deferred,
    HandlerCallReceived,
    MCPServer,
    PromptGetReceived,
    ResourceReadReceived,
    ToolCallReceived,
)
from mcp_sansio.server.mrtr import InvalidRequestState, SealedState, binding_digest, seal, unseal
from mcp_sansio.types import ElicitResult

CAPS: dict[str, object] = {"elicitation": {}, "sampling": {}, "roots": {}}
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "0.1.0"}}


def _app() -> MCPServer:
    app = MCPServer("s")
    app.add_tool(lambda who="x": who, name="greet")
    app.add_prompt(lambda: "p", name="prompt")
    app.add_resource("test://r", lambda: "r")
    app.add_completion(prompt="prompt", argument="a", fn=lambda value: [value])
    return app


def _call(server: Any, rid: int = 1, **params: Any) -> ToolCallReceived:
    send(server, modern_request(rid, "tools/call", {"name": "greet", **params}, capabilities=CAPS))
    [event] = take_events(server)
    assert isinstance(event, ToolCallReceived)
    return event


def _ask_name(server: Any, event: ToolCallReceived, key: str | None = "name") -> list[Any]:
    return server.ask(event.call, [Ask.elicit("Name?", {"type": "object"}, key=key)], now=0.0)  # type: ignore[no-any-return]


def _first_round(server: Any) -> dict[str, Any]:
    event = _call(server)
    _ask_name(server, event)
    server.input_required(event.call, {"step": 1}, now=0.0)
    [answer] = take(server)
    return answer["result"]  # type: ignore[no-any-return]


def test_a_missing_answer_is_deferred_under_its_key() -> None:
    server = server_for(_app())
    event = _call(server)
    assert _ask_name(server, event) == [Deferred("name")]
    assert take(server) == []  # nothing is sent to the client in this era


def test_asks_without_keys_are_numbered_in_order() -> None:
    server = server_for(_app())
    event = _call(server)
    asks = [Ask.elicit("a"), Ask.sample("b", max_tokens=1), Ask.list_roots()]
    outcomes = server.ask(event.call, asks, now=0.0)
    assert outcomes == [Deferred("elicitation-0"), Deferred("sampling-1"), Deferred("roots-2")]


def test_input_required_sends_the_questions_and_a_state() -> None:
    server = server_for(_app())
    result = _first_round(server)
    assert result["resultType"] == "input_required" and result["_meta"] == SERVER_INFO
    assert result["inputRequests"] == {"name": {"method": "elicitation/create", "params": {
        "message": "Name?", "requestedSchema": {"type": "object"}}}}
    assert isinstance(result["requestState"], str)
    assert "ttlMs" not in result  # interim results are not cacheable


def test_the_retry_brings_the_answer() -> None:
    server = server_for(_app())
    state = _first_round(server)["requestState"]
    event = _call(server, 2, inputResponses={"name": {"action": "accept", "content": {"n": "Ann"}}},
                  requestState=state)
    assert event.request.state == {"step": 1}
    assert _ask_name(server, event) == [Answered(ElicitResult(action="accept", content={"n": "Ann"}))]


def test_answers_without_a_state_are_used_too() -> None:
    server = server_for(_app())
    event = _call(server, inputResponses={"name": {"action": "decline"}, "extra": {"x": 1}})
    assert _ask_name(server, event) == [Answered(ElicitResult(action="decline"))]


def test_a_wrong_key_asks_again() -> None:
    server = server_for(_app())
    event = _call(server, inputResponses={"other": {"action": "accept"}})
    assert _ask_name(server, event) == [Deferred("name")]


def test_a_malformed_answer_asks_again() -> None:
    server = server_for(_app())
    event = _call(server, inputResponses={"name": {"action": 5}})
    assert _ask_name(server, event) == [Deferred("name")]


def test_multi_round_answers_accumulate_in_the_state() -> None:
    server = server_for(_app())
    first = _first_round(server)
    event = _call(server, 2, inputResponses={"name": {"action": "accept", "content": {"n": "A"}}},
                  requestState=first["requestState"])
    _ask_name(server, event)
    server.ask(event.call, [Ask.elicit("Color?", key="color")], now=0.0)
    server.input_required(event.call, {"step": 2}, now=0.0)
    second = take(server)[0]["result"]
    assert list(second["inputRequests"]) == ["color"] and second["requestState"] != first["requestState"]
    final = _call(server, 3, inputResponses={"color": {"action": "accept", "content": {"c": "red"}}},
                  requestState=second["requestState"])
    outcomes = server.ask(final.call, [Ask.elicit("Name?", key="name"), Ask.elicit("Color?", key="color")],
                          now=0.0)
    assert outcomes == [Answered(ElicitResult(action="accept", content={"n": "A"})),
                        Answered(ElicitResult(action="accept", content={"c": "red"}))]
    assert final.request.state == {"step": 2}


def test_a_tampered_state_is_refused() -> None:
    server = server_for(_app())
    state = _first_round(server)["requestState"]
    send(server, modern_request(2, "tools/call", {"name": "greet", "requestState": state + "-TAMPERED",
                                                  "inputResponses": {"name": {"action": "accept"}}}))
    assert take(server)[0]["error"] == {"code": -32602,
                                        "message": "Invalid params: requestState integrity check failed"}
    assert take_events(server) == []


def test_a_state_for_other_arguments_is_refused() -> None:
    server = server_for(_app())
    state = _first_round(server)["requestState"]
    send(server, modern_request(2, "tools/call", {"name": "greet", "arguments": {"who": "y"},
                                                  "requestState": state}))
    assert take(server)[0]["error"]["message"] == "Invalid params: requestState belongs to another request"


def test_an_expired_state_is_refused() -> None:
    server = server_for(_app(), state_ttl=60.0)
    state = _first_round(server)["requestState"]
    send(server, modern_request(2, "tools/call", {"name": "greet", "requestState": state}), now=61.0)
    assert take(server)[0]["error"]["message"] == "Invalid params: requestState has expired"


@pytest.mark.parametrize("responses", [None, {"name": 12345}, {"name": "text"}, []])
def test_input_responses_that_are_no_objects_are_invalid_params(responses: object) -> None:
    server = server_for(_app())
    send(server, modern_request(1, "tools/call", {"name": "greet", "inputResponses": responses}))
    assert take(server)[0]["error"]["code"] == -32602


def test_a_prompt_can_ask_for_input() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "prompts/get", {"name": "prompt"}, capabilities=CAPS))
    [event] = take_events(server)
    assert isinstance(event, PromptGetReceived)
    server.ask(event.call, [Ask.elicit("Context?", key="ctx")], now=0.0)
    server.input_required(event.call, {}, now=0.0)
    assert list(take(server)[0]["result"]["inputRequests"]) == ["ctx"]


def test_a_resource_read_can_ask_for_input() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "resources/read", {"uri": "test://r"}, capabilities=CAPS))
    [event] = take_events(server)
    assert isinstance(event, ResourceReadReceived)
    server.ask(event.call, [Ask.list_roots(key="roots")], now=0.0)
    server.input_required(event.call, {}, now=0.0)
    assert take(server)[0]["result"]["inputRequests"] == {"roots": {"method": "roots/list", "params": {}}}


def test_input_required_with_a_state_only_carries_no_questions() -> None:
    server = server_for(_app())
    event = _call(server)
    server.input_required(event.call, {"poll": True}, now=0.0)
    result = take(server)[0]["result"]
    assert "inputRequests" not in result and result["requestState"]


def test_a_completion_cannot_ask_in_the_stateless_era() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "prompt"}, "argument": {"name": "a", "value": ""}}))
    [event] = take_events(server, HandlerCallReceived)
    with pytest.raises(LocalProtocolError, match="cannot ask"):
        server.ask(event.call, [Ask.list_roots()], now=0.0)
    with pytest.raises(LocalProtocolError, match="cannot answer input_required"):
        server.input_required(event.call, {}, now=0.0)


def test_a_handshake_call_cannot_answer_input_required() -> None:
    from server_helpers import handshake, request

    server = server_for(_app())
    handshake(server)
    send(server, request(1, "tools/call", {"name": "greet"}))
    [event] = take_events(server, HandlerCallReceived)
    with pytest.raises(LocalProtocolError, match="cannot answer input_required"):
        server.input_required(event.call, {}, now=0.0)


def test_a_state_that_is_not_json_is_refused() -> None:
    server = server_for(_app())
    event = _call(server)
    with pytest.raises(LocalProtocolError, match="JSON"):
        server.input_required(event.call, {"bad": object()}, now=0.0)
    server.input_required(event.call, {}, now=0.0)  # the call still awaits its answer
    assert take(server)[0]["result"]["resultType"] == "input_required"


def test_a_missing_capability_is_minus_32021_with_what_is_required() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "tools/call", {"name": "greet"}, capabilities={}))
    [event] = take_events(server, HandlerCallReceived)
    with pytest.raises(ClientCapabilityMissing) as caught:
        server.ask(event.call, [Ask.sample("x", max_tokens=1)], now=0.0)
    server.fail(event.call, caught.value, now=0.0)
    assert take(server)[0]["error"] == {"code": -32021,
                                        "message": "the client did not declare the sampling capability",
                                        "data": {"requiredCapabilities": {"sampling": {}}}}


def test_a_missing_capability_in_the_handshake_era_is_a_tool_error() -> None:
    from server_helpers import handshake, request

    server = server_for(_app())
    handshake(server)
    send(server, request(1, "tools/call", {"name": "greet"}))
    [event] = take_events(server, HandlerCallReceived)
    missing = ClientCapabilityMissing("no sampling", required={"sampling": {}})
    server.fail(event.call, missing, now=0.0)
    text = [{"type": "text", "text": "no sampling"}]
    assert take(server)[0]["result"] == {"content": text, "isError": True}


# ------------------------------------------------------------------ the seal itself

KEY = b"k" * 32


def _sealed(**overrides: Any) -> SealedState:
    fields: dict[str, Any] = {"binding": "b", "expires_at": 100.0, "answers": {}, "state": {}}
    fields.update(overrides)
    return SealedState(**fields)


def test_a_sealed_state_round_trips() -> None:
    token = seal(KEY, _sealed(answers={"a": {"x": 1}}, state={"s": [1]}))
    assert unseal(KEY, token, binding="b", now_wall=50.0, max_bytes=4096) == _sealed(
        answers={"a": {"x": 1}}, state={"s": [1]})


@pytest.mark.parametrize(("token", "reason"), [
    ("no-dot", "malformed"),
    ("a.b.c", "malformed"),
    ("é.x", "malformed"),
    ("AAAA.AAAA", "integrity"),
])
def test_malformed_or_forged_tokens_are_refused(token: str, reason: str) -> None:
    with pytest.raises(InvalidRequestState, match=reason):
        unseal(KEY, token, binding="b", now_wall=0.0, max_bytes=4096)


def test_another_key_is_refused() -> None:
    token = seal(KEY, _sealed())
    with pytest.raises(InvalidRequestState, match="integrity"):
        unseal(b"other-key" * 4, token, binding="b", now_wall=0.0, max_bytes=4096)


def test_a_non_canonical_encoding_is_refused() -> None:
    payload, _, mac = seal(KEY, _sealed()).partition(".")
    with pytest.raises(InvalidRequestState, match="malformed"):
        unseal(KEY, f"{payload}=.{mac}", binding="b", now_wall=0.0, max_bytes=4096)


def test_an_oversized_token_is_refused_before_any_work() -> None:
    with pytest.raises(InvalidRequestState, match="over 10 bytes"):
        unseal(KEY, "x" * 11, binding="b", now_wall=0.0, max_bytes=10)


def test_the_binding_ignores_key_order_but_not_values() -> None:
    assert binding_digest("m", "t", {"a": 1, "b": 2}) == binding_digest("m", "t", {"b": 2, "a": 1})
    assert binding_digest("m", "t", {"a": 1}) != binding_digest("m", "t", {"a": 2})
    assert binding_digest("m", "t", {}) != binding_digest("n", "t", {})


def test_the_helpers_secret_is_what_servers_seal_with() -> None:
    assert len(SECRET) >= 16
