"""Multi round-trip requests (MRTR, 2026-07-28 "basic/patterns/mrtr"): an
``input_required`` result becomes ``ServerRequestReceived`` events; once the app answers
them all, the request goes again under a new id with ``inputResponses`` and the server's
``requestState``, and its answer reaches the caller under the original id.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from helpers import drain_events, ready_client, take_messages
from modern_helpers import MODERN_SERVER, Json, modern_client, modern_meta

from mcp_sansio import (
    ErrorData,
    FailureReason,
    LocalProtocolError,
    ProgressReceived,
    RequestFailed,
    ResponseReceived,
    ServerRequestReceived,
    StdioClient,
)
from mcp_sansio.types import (
    CallToolResult,
    ClientCapabilities,
    CreateMessageRequestParams,
    ElicitRequestParams,
    ListRootsResult,
    ReadResourceResult,
    RequestParams,
    Root,
    TextContent,
)

SERVER = MODERN_SERVER
ELICIT: Json = {"mode": "form", "message": "Your GitHub login?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}
SAMPLE: Json = {"messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
                "maxTokens": 100}
INPUTS: Json = {"k1": {"method": "elicitation/create", "params": ELICIT},
                "k2": {"method": "sampling/createMessage", "params": SAMPLE}}
ELICIT_ANSWER: Json = {"action": "accept", "content": {"name": "octocat"}}
SAMPLE_ANSWER: Json = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
DONE: Json = {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}


def _input_required(request_id: int, inputs: Json | None = INPUTS, state: str | None = "opaque",
                    **extra: Any) -> bytes:
    result: Json = {"resultType": "input_required", **extra}
    if inputs is not None:
        result["inputRequests"] = inputs
    if state is not None:
        result["requestState"] = state
    return SERVER.result(request_id, result)


def _asked(**config: Any) -> StdioClient:
    """``tools/call`` (id 2) answered with the two inputs of :data:`INPUTS`, events drained."""
    client = modern_client(**config)
    client.call_tool("t", {"a": 1}, now=1.0)
    client.data_to_send()
    client.receive_data(_input_required(2), 2.0)
    drain_events(client)
    return client


def _answered(**config: Any) -> StdioClient:
    """:func:`_asked`, both inputs answered: the retry (id 3) is out, its line taken."""
    client = _asked(**config)
    client.respond("input:2:k1", ELICIT_ANSWER, now=0.0)
    client.respond("input:2:k2", SAMPLE_ANSWER, now=0.0)
    client.data_to_send()
    return client


def _call(request_id: int, **params: object) -> Json:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
        "name": "t", "arguments": {"a": 1}, "_meta": modern_meta(progress_token=request_id), **params}}


def _failure(client: StdioClient) -> RequestFailed:
    (event,) = drain_events(client)
    assert isinstance(event, RequestFailed), event
    return event


# -- asking the app ---------------------------------------------------------------------------


def test_input_required_result_asks_the_app_for_each_input() -> None:
    client = modern_client()
    client.call_tool("t", {"a": 1}, now=1.0)
    client.receive_data(_input_required(2), 2.0)
    assert drain_events(client) == [
        ServerRequestReceived(request_id="input:2:k1", method="elicitation/create",
                              params=msgspec.convert(ELICIT, ElicitRequestParams)),
        ServerRequestReceived(request_id="input:2:k2", method="sampling/createMessage",
                              params=msgspec.convert(SAMPLE, CreateMessageRequestParams)),
    ]


def test_roots_input_without_params_is_asked() -> None:
    client = modern_client()
    client.call_tool("t", {"a": 1}, now=1.0)
    client.receive_data(_input_required(2, {"r": {"method": "roots/list"}}), 2.0)
    assert drain_events(client) == [
        ServerRequestReceived(request_id="input:2:r", method="roots/list", params=RequestParams())]


def test_nothing_is_sent_until_every_input_is_answered() -> None:
    client = _asked()
    client.respond("input:2:k1", ELICIT_ANSWER, now=0.0)
    assert take_messages(client) == []
    assert client.pending_requests() == [2]


def test_answering_every_input_reissues_the_request_with_a_new_id() -> None:
    client = _asked()
    client.respond("input:2:k2", SAMPLE_ANSWER, now=0.0)
    client.respond("input:2:k1", ELICIT_ANSWER, now=0.0)
    assert take_messages(client) == [_call(
        3, inputResponses={"k1": ELICIT_ANSWER, "k2": SAMPLE_ANSWER}, requestState="opaque")]


def test_answer_structs_are_sent_as_their_json() -> None:
    client = modern_client()
    client.call_tool("t", {"a": 1}, now=1.0)
    client.receive_data(_input_required(2, {"r": {"method": "roots/list"}}, None), 2.0)
    client.data_to_send()
    client.respond("input:2:r", ListRootsResult(roots=[Root(uri="file:///w")]), now=1.0)
    assert take_messages(client) == [_call(3, inputResponses={"r": {"roots": [{"uri": "file:///w"}]}})]


def test_final_result_reaches_the_caller_under_the_original_id() -> None:
    client = _answered()
    client.receive_data(SERVER.result(3, DONE), 3.0)
    assert drain_events(client) == [ResponseReceived(
        request_id=2, method="tools/call",
        result=CallToolResult(content=[TextContent(text="done")]),
        raw=msgspec.Raw(msgspec.json.encode(DONE)),
    )]
    assert client.pending_requests() == []
    assert client.next_deadline() is None


def test_request_state_is_echoed_exactly() -> None:
    state = 'AEAD blob: {"not": "json"} \u00e9\u2603 =?base64?x?='
    client = modern_client()
    client.call_tool("t", {"a": 1}, now=1.0)
    client.receive_data(_input_required(2, {"r": {"method": "roots/list"}}, state), 2.0)
    client.data_to_send()
    client.respond("input:2:r", {"roots": []}, now=1.0)
    (message,) = take_messages(client)
    assert message["params"]["requestState"] == state


def test_retry_without_request_state_leaves_it_out() -> None:
    client = modern_client()
    client.call_tool("t", {"a": 1}, now=1.0)
    client.receive_data(_input_required(2, {"r": {"method": "roots/list"}}, None), 2.0)
    client.data_to_send()
    client.respond("input:2:r", {"roots": []}, now=1.0)
    assert take_messages(client) == [_call(3, inputResponses={"r": {"roots": []}})]


def test_only_request_state_retries_at_once() -> None:
    client = modern_client()
    client.call_tool("t", {"a": 1}, now=1.0)
    client.data_to_send()
    client.receive_data(_input_required(2, None, "s1"), 2.0)
    assert drain_events(client) == []
    assert take_messages(client) == [_call(3, requestState="s1")]


def test_empty_input_requests_retry_at_once() -> None:
    client = modern_client()
    client.call_tool("t", {"a": 1}, now=1.0)
    client.data_to_send()
    client.receive_data(_input_required(2, {}, "s1"), 2.0)
    assert take_messages(client) == [_call(3, requestState="s1")]


def test_a_second_round_replaces_the_first_rounds_input() -> None:
    client = _answered()
    client.receive_data(_input_required(3, {"k3": {"method": "roots/list"}}, None), 3.0)
    (event,) = drain_events(client)
    assert event == ServerRequestReceived(request_id="input:3:k3", method="roots/list",
                                          params=RequestParams())
    client.respond("input:3:k3", {"roots": []}, now=0.0)
    assert take_messages(client) == [_call(4, inputResponses={"k3": {"roots": []}})]


def test_a_round_without_input_drops_the_previous_answers() -> None:
    client = _answered()
    client.receive_data(_input_required(3, None, "s2"), 3.0)
    assert take_messages(client) == [_call(4, requestState="s2")]


def test_rounds_are_bounded_by_max_input_rounds() -> None:
    client = modern_client(max_input_rounds=2)
    client.call_tool("t", {"a": 1}, now=1.0)
    client.receive_data(_input_required(2, None, "s"), 2.0)
    client.receive_data(_input_required(3, None, "s"), 2.0)
    client.data_to_send()
    client.receive_data(_input_required(4, None, "s"), 2.0)
    assert _failure(client) == RequestFailed(
        request_id=2, method="tools/call", reason=FailureReason.PROTOCOL_ERROR,
        message="tools/call: more than 2 rounds of input")
    assert take_messages(client) == []
    assert client.pending_requests() == []


@pytest.mark.parametrize(("call", "params"), [
    (lambda c: c.get_prompt("p", {"x": "1"}, now=1.0), {"name": "p", "arguments": {"x": "1"}}),
    (lambda c: c.read_resource("file:///a", now=1.0), {"uri": "file:///a"}),
], ids=["prompts/get", "resources/read"])
def test_prompts_and_resources_may_ask_for_input_too(call: Any, params: Json) -> None:
    client = modern_client()
    call(client)
    (sent,) = take_messages(client)
    client.receive_data(_input_required(2, {"r": {"method": "roots/list"}}), 2.0)
    asked = [e.request_id for e in drain_events(client) if isinstance(e, ServerRequestReceived)]
    assert asked == ["input:2:r"]
    client.respond("input:2:r", {"roots": []}, now=0.0)
    assert take_messages(client) == [{**sent, "id": 3, "params": {
        **params, "_meta": modern_meta(progress_token=3), "inputResponses": {"r": {"roots": []}},
        "requestState": "opaque"}}]


def test_a_result_reached_through_input_rounds_is_never_cacheable() -> None:
    client = modern_client()
    client.read_resource("file:///a", now=1.0)
    client.data_to_send()
    client.receive_data(_input_required(2, {"r": {"method": "roots/list"}}), 2.0)
    drain_events(client)
    client.respond("input:2:r", {"roots": []}, now=1.0)
    client.data_to_send()
    client.receive_data(SERVER.result(3, {"resultType": "complete", "contents": [],
                                          "ttlMs": 60000, "cacheScope": "public"}), 3.0)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.result == ReadResourceResult(contents=[], ttl_ms=0, cache_scope="public")


def test_a_direct_result_keeps_its_caching_hints() -> None:
    client = modern_client()
    client.read_resource("file:///a", now=1.0)
    client.receive_data(SERVER.result(2, {"contents": [], "ttlMs": 60000, "cacheScope": "public"}), 2.0)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.result == ReadResourceResult(contents=[], ttl_ms=60000, cache_scope="public")


# -- what ends a request --------------------------------------------------------------------------


def test_respond_error_on_an_input_fails_the_original_request() -> None:
    client = _asked()
    client.respond_error("input:2:k1", -1, "the user declined", {"why": "busy"}, now=0.0)
    assert _failure(client) == RequestFailed(
        request_id=2, method="tools/call", reason=FailureReason.ERROR_RESPONSE, message="the user declined",
        error=ErrorData(code=-1, message="the user declined", data={"why": "busy"}))
    assert take_messages(client) == []
    client.respond("input:2:k2", SAMPLE_ANSWER, now=0.0)  # the other input: accepted, and moot
    assert (take_messages(client), drain_events(client)) == ([], [])


def test_respond_error_after_the_request_ended_is_accepted_and_moot() -> None:
    client = _asked()
    client.cancel(2, now=3.0)
    drain_events(client)
    client.respond_error("input:2:k1", -1, "declined", now=3.0)
    assert (take_messages(client), drain_events(client)) == ([], [])


def test_input_for_an_undeclared_capability_fails_the_request() -> None:
    client = modern_client(capabilities=ClientCapabilities(elicitation={}))
    client.call_tool("t", {"a": 1}, now=1.0)
    client.data_to_send()
    client.receive_data(_input_required(2), 2.0)
    assert _failure(client) == RequestFailed(
        request_id=2, method="tools/call", reason=FailureReason.PROTOCOL_ERROR,
        message="tools/call: the server asked for 'sampling/createMessage', which needs the 'sampling' "
                "capability this client did not declare")
    assert take_messages(client) == []
    with pytest.raises(LocalProtocolError, match="awaiting"):  # k1 never reached the app
        client.respond("input:2:k1", ELICIT_ANSWER, now=2.0)


@pytest.mark.parametrize("method", ["ping", "tools/call", "notifications/progress"])
def test_input_request_of_another_method_fails_the_request(method: str) -> None:
    client = modern_client()
    client.call_tool("t", now=1.0)
    client.receive_data(_input_required(2, {"k": {"method": method}}), 2.0)
    event = _failure(client)
    assert event.reason is FailureReason.PROTOCOL_ERROR
    assert event.message == f"tools/call: the server asked for {method!r}, which is not an input request"


@pytest.mark.parametrize("entry", [5, {"params": {}},
                                   {"method": "elicitation/create", "params": {"message": 5}},
                                   {"method": "sampling/createMessage", "params": []}],
                         ids=["not-an-object", "no-method", "bad-params", "params-not-an-object"])
def test_malformed_input_request_fails_the_request(entry: object) -> None:
    client = modern_client()
    client.call_tool("t", now=1.0)
    client.receive_data(_input_required(2, {"k": entry}), 2.0)
    event = _failure(client)
    assert event.reason is FailureReason.PROTOCOL_ERROR
    assert event.message.startswith("tools/call: invalid input request 'k': ")


@pytest.mark.parametrize("result", [
    {"resultType": "input_required", "requestState": 5},
    {"resultType": "input_required", "inputRequests": ["x"]},
    {"resultType": 7, "note": "input_required"},
], ids=["state-not-a-string", "requests-not-an-object", "type-not-a-string"])
def test_malformed_input_required_result_is_an_invalid_result(result: Json) -> None:
    client = modern_client()
    client.call_tool("t", now=1.0)
    client.receive_data(SERVER.result(2, result), 2.0)
    event = _failure(client)
    assert event.reason is FailureReason.INVALID_RESULT
    assert event.message.startswith("invalid tools/call result: ")


def test_timeout_while_gathering_input_fails_without_cancelling_an_answered_request() -> None:
    client = _asked()
    client.handle_timeout(61.0)
    assert _failure(client) == RequestFailed(
        request_id=2, method="tools/call", reason=FailureReason.TIMEOUT,
        message="tools/call got no answer within 60 s")
    assert take_messages(client) == []
    client.respond("input:2:k1", ELICIT_ANSWER, now=0.0)  # too late: accepted, nothing sent
    client.respond("input:2:k2", SAMPLE_ANSWER, now=0.0)
    assert (take_messages(client), drain_events(client)) == ([], [])


def test_cancel_while_gathering_input_fails_without_notifying_the_server() -> None:
    client = _asked()
    client.cancel(2, now=3.0, reason="user gave up")
    assert _failure(client) == RequestFailed(
        request_id=2, method="tools/call", reason=FailureReason.CANCELLED, message="user gave up")
    assert take_messages(client) == []


def test_cancel_after_the_retry_cancels_the_retry_id() -> None:
    client = _answered()
    client.cancel(2, now=3.0)
    assert _failure(client).request_id == 2
    assert take_messages(client) == [{"jsonrpc": "2.0", "method": "notifications/cancelled",
                                      "params": {"requestId": 3, "reason": "cancelled by the client"}}]


def test_retry_keeps_the_original_deadline() -> None:
    client = _answered()  # sent at 1.0 with the default 60 s
    assert client.next_deadline() == 61.0
    assert client.pending_requests() == [2]


def test_progress_on_the_retry_reports_the_original_id() -> None:
    client = _answered()
    client.receive_data(SERVER.progress(3, 0.5, 1.0), 3.0)
    assert drain_events(client) == [ProgressReceived(request_id=2, progress=0.5, total=1.0, message=None)]


def test_connection_lost_while_gathering_fails_the_request_and_moots_the_inputs() -> None:
    client = _asked()
    client.session.connection_lost("gone", now=0.0)
    assert isinstance(drain_events(client)[0], RequestFailed)
    client.respond("input:2:k1", ELICIT_ANSWER, now=0.0)
    client.respond_error("input:2:k2", -1, "no", now=0.0)
    assert (take_messages(client), drain_events(client)) == ([], [])


def test_unencodable_answer_is_refused_and_the_input_still_awaits() -> None:
    client = _asked()
    with pytest.raises(LocalProtocolError):
        client.respond("input:2:k1", {"action": object()}, now=0.0)
    client.respond("input:2:k1", ELICIT_ANSWER, now=0.0)
    client.respond("input:2:k2", SAMPLE_ANSWER, now=0.0)
    (message,) = take_messages(client)
    assert message["id"] == 3


def test_answering_an_input_twice_is_refused() -> None:
    client = _asked()
    client.respond("input:2:k1", ELICIT_ANSWER, now=0.0)
    with pytest.raises(LocalProtocolError, match="awaiting"):
        client.respond("input:2:k1", ELICIT_ANSWER, now=0.0)


# -- results that are complete -------------------------------------------------------------------


@pytest.mark.parametrize("result", [
    {"content": [{"type": "text", "text": "done"}]},
    DONE,
    {"resultType": "complete", "content": [{"type": "text", "text": "input_required"}]},
], ids=["no-result-type", "complete", "complete-mentioning-input_required"])
def test_complete_results_are_delivered(result: Json) -> None:
    client = modern_client()
    client.call_tool("t", now=1.0)
    client.receive_data(SERVER.result(2, result), 2.0)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.result == CallToolResult(content=[TextContent(text=result["content"][0]["text"])])


def test_input_required_on_a_method_that_cannot_ask_is_an_ordinary_result() -> None:
    client = modern_client()
    client.list_tools(now=1.0, all_pages=False)
    client.receive_data(_input_required(2, tools=[]), 2.0)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.method == "tools/list"


def test_input_required_in_the_legacy_era_is_an_ordinary_result() -> None:
    client = ready_client(capabilities=ClientCapabilities(elicitation={}))
    client.call_tool("t", now=1.0)
    client.receive_data(_input_required(2, content=[]), 2.0)
    (event,) = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.result == CallToolResult(content=[])
