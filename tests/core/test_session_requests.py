"""The request table: ids, progress tokens, deadlines, cancellation, answers and gating."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest
from helpers import FIRST_REQUEST_ID, Json, ScriptedServer, drain_events, ready_client, take_messages

from mcp_sansio import (
    ClientConfig,
    DiscardReason,
    ErrorData,
    FailureReason,
    LocalProtocolError,
    MessageDiscarded,
    PeerErrorReceived,
    ProgressReceived,
    RequestCancelled,
    RequestError,
    RequestFailed,
    RequestTimeout,
    ResponseReceived,
    StdioClient,
    inbound,
)
from mcp_sansio.errors import RemoteProtocolError
from mcp_sansio.requests import CLIENT_RESULTS
from mcp_sansio.types import (
    CALL_TOOL,
    CallToolRequestParams,
    CallToolResult,
    EmptyResult,
    PromptReference,
    TextContent,
)

SERVER = ScriptedServer()
ID = FIRST_REQUEST_ID


def _cancelled(request_id: int, reason: str) -> Json:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason}}


def test_tool_result_is_matched_by_id() -> None:
    client = ready_client()
    assert client.call_tool("add", {"a": 1}, now=1.0, timeout=30.0) == ID
    assert take_messages(client) == [{
        "jsonrpc": "2.0", "id": ID, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1}, "_meta": {"progressToken": ID}},
    }]
    assert client.next_deadline() == 31.0
    client.receive_data(b'{"jsonrpc":"2.0","id":2,"result":{"content":[]}}\n', now=2.0)
    assert drain_events(client) == [ResponseReceived(
        request_id=ID, method="tools/call", result=CallToolResult(), raw=msgspec.Raw(b'{"content":[]}')
    )]
    assert client.next_deadline() is None
    assert client.pending_requests() == []


def test_typed_result_is_decoded() -> None:
    client = ready_client()
    rid = client.call_tool("echo", None, now=0.0)
    client.receive_data(SERVER.text_result(rid, "hi"), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert event.result == CallToolResult(content=[TextContent(text="hi")])


def test_request_ids_increase_and_are_never_reused() -> None:
    client = ready_client(request_timeout=1.0)
    first = client.ping(now=0.0)
    second = client.ping(now=0.0)
    client.cancel(first, now=0.0)
    client.handle_timeout(5.0)
    assert (first, second, client.ping(now=5.0)) == (ID, ID + 1, ID + 2)


def test_answers_arrive_in_any_order() -> None:
    client = ready_client()
    a, b = client.ping(now=0.0), client.ping(now=0.0)
    client.receive_data(SERVER.result(b, {}) + SERVER.result(a, {}), 0.0)
    assert [e.request_id for e in drain_events(client) if isinstance(e, ResponseReceived)] == [b, a]


def test_pending_requests_lists_what_is_awaited() -> None:
    client = ready_client()
    a, b = client.ping(now=0.0), client.ping(now=0.0)
    client.receive_data(SERVER.result(a, {}), 0.0)
    assert client.pending_requests() == [b]


_HELPERS: list[tuple[str, Callable[[StdioClient], int], Json]] = [
    ("ping", lambda c: c.ping(now=0.0), {}),
    ("tools/list", lambda c: c.list_tools(now=0.0), {}),
    ("resources/list", lambda c: c.list_resources(now=0.0), {}),
    ("resources/templates/list", lambda c: c.list_resource_templates(now=0.0), {}),
    ("prompts/list", lambda c: c.list_prompts(now=0.0), {}),
    ("tools/list", lambda c: c.list_tools(now=0.0, cursor="c", all_pages=False), {"cursor": "c"}),
    ("resources/read", lambda c: c.read_resource("file:///a", now=0.0), {"uri": "file:///a"}),
    ("resources/subscribe", lambda c: c.subscribe_resource("file:///a", now=0.0), {"uri": "file:///a"}),
    ("resources/unsubscribe", lambda c: c.unsubscribe_resource("file:///a", now=0.0), {"uri": "file:///a"}),
    ("prompts/get", lambda c: c.get_prompt("p", {"x": "1"}, now=0.0), {"name": "p", "arguments": {"x": "1"}}),
    ("prompts/get", lambda c: c.get_prompt("p", now=0.0), {"name": "p"}),
    ("logging/setLevel", lambda c: c.set_logging_level("debug", now=0.0), {"level": "debug"}),
    ("tools/call", lambda c: c.call_tool("t", now=0.0), {"name": "t"}),
    ("completion/complete",
     lambda c: c.complete(PromptReference(name="p"), "arg", "va", now=0.0),
     {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "arg", "value": "va"}}),
    ("completion/complete",
     lambda c: c.complete({"type": "ref/resource", "uri": "u://{x}"}, "x", "", now=0.0,
                          context_arguments={"y": "1"}),
     {"ref": {"type": "ref/resource", "uri": "u://{x}"}, "argument": {"name": "x", "value": ""},
      "context": {"arguments": {"y": "1"}}}),
]


@pytest.mark.parametrize(("method", "call", "params"), _HELPERS)
def test_typed_helpers_send_their_method_with_a_progress_token(
    method: str, call: Callable[[StdioClient], int], params: Json
) -> None:
    client = ready_client()
    rid = call(client)
    assert take_messages(client) == [{
        "jsonrpc": "2.0", "id": rid, "method": method,
        "params": {**params, "_meta": {"progressToken": rid}},
    }]


def test_call_tool_accepts_any_mapping_of_arguments() -> None:
    client = ready_client()
    client.call_tool("t", {"a": 1}.items().mapping, now=0.0)
    assert take_messages(client)[0]["params"]["arguments"] == {"a": 1}


def test_progress_token_is_merged_into_existing_meta() -> None:
    client = ready_client()
    client.request("x/y", {"a": 1, "_meta": {"trace": "t"}}, now=0.0)
    client.request("tools/call", CallToolRequestParams(name="t", meta={"trace": "u"}), now=0.0)
    client.request("x/z", {"_meta": "not a mapping"}, now=0.0)
    assert [m["params"] for m in take_messages(client)] == [
        {"a": 1, "_meta": {"trace": "t", "progressToken": ID}},
        {"name": "t", "_meta": {"trace": "u", "progressToken": ID + 1}},
        {"_meta": {"progressToken": ID + 2}},
    ]


def test_struct_params_without_meta_are_sent_as_they_are() -> None:
    class Custom(msgspec.Struct):
        q: int

    client = ready_client()
    client.request("x/custom", Custom(q=1), now=0.0)
    assert take_messages(client)[0]["params"] == {"q": 1}


def test_invalid_completion_ref_is_a_local_error() -> None:
    client = ready_client()
    with pytest.raises(LocalProtocolError, match="invalid completion ref"):
        client.complete({"type": "ref/nope"}, "a", "b", now=0.0)
    assert take_messages(client) == []


def test_params_json_cannot_hold_are_rejected_and_change_nothing() -> None:
    client = ready_client()
    with pytest.raises(LocalProtocolError, match="cannot encode"):
        client.call_tool("t", {"x": object()}, now=0.0)
    assert take_messages(client) == []
    assert client.pending_requests() == []
    assert client.next_deadline() is None
    assert client.ping(now=0.0) == ID


def test_progress_is_reported_for_its_request() -> None:
    client = ready_client()
    rid = client.call_tool("slow", now=0.0)
    client.receive_data(SERVER.progress(rid, 1, 4, "a quarter") + SERVER.progress(rid, 2), 1.0)
    assert drain_events(client) == [
        ProgressReceived(request_id=rid, progress=1.0, total=4.0, message="a quarter"),
        ProgressReceived(request_id=rid, progress=2.0, total=None, message=None),
    ]


@pytest.mark.parametrize("token", [999, "2"])
def test_progress_for_no_pending_request_is_ignored(token: object) -> None:
    client = ready_client()
    client.ping(now=0.0)
    client.receive_data(SERVER.notification("notifications/progress",
                                            {"progressToken": token, "progress": 1}), 0.0)
    assert drain_events(client) == []


def test_progress_moves_the_deadline() -> None:
    client = ready_client(request_timeout=10.0)
    rid = client.call_tool("slow", now=0.0)
    client.receive_data(SERVER.progress(rid, 1), 4.0)
    assert client.next_deadline() == 10.0  # the stale entry wakes the driver early, harmlessly
    client.handle_timeout(10.0)
    assert drain_events(client) == [ProgressReceived(request_id=rid, progress=1, total=None, message=None)]
    assert client.next_deadline() == 14.0
    client.handle_timeout(14.0)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed)
    assert event.reason is FailureReason.TIMEOUT


def test_progress_twice_at_the_same_time_arms_one_deadline() -> None:
    client = ready_client(request_timeout=10.0)
    rid = client.call_tool("slow", now=0.0)
    client.receive_data(SERVER.progress(rid, 1) + SERVER.progress(rid, 2), 3.0)
    client.handle_timeout(10.0)
    assert client.next_deadline() == 13.0


def test_progress_does_not_move_the_deadline_past_max_request_timeout() -> None:
    client = ready_client(request_timeout=10.0, max_request_timeout=15.0)
    rid = client.call_tool("slow", now=0.0)
    client.receive_data(SERVER.progress(rid, 1), 8.0)
    client.handle_timeout(10.0)
    assert client.next_deadline() == 15.0
    client.receive_data(SERVER.progress(rid, 2), 12.0)
    client.handle_timeout(15.0)
    assert [type(e) for e in drain_events(client)] == [ProgressReceived, ProgressReceived, RequestFailed]


def test_max_request_timeout_caps_the_first_deadline() -> None:
    client = ready_client(request_timeout=10.0, max_request_timeout=3.0)
    client.ping(now=1.0)
    assert client.next_deadline() == 4.0


def test_progress_every_second_cannot_keep_a_call_alive_past_ten_minutes_by_default() -> None:
    client = ready_client()  # the default config: a server that only ever reports progress
    rid = client.call_tool("slow", now=0.0, timeout=8.0)
    now = 0.0
    while not (events := [e for e in drain_events(client) if isinstance(e, RequestFailed)]):
        now += 1.0
        assert now <= 600.0, "progress kept the call alive past max_request_timeout"
        client.receive_data(SERVER.progress(rid, now), now)
        client.handle_timeout(now)
    assert now == 600.0 and events[0].reason is FailureReason.TIMEOUT


def test_a_call_timeout_longer_than_max_request_timeout_is_its_bound() -> None:
    client = ready_client(request_timeout=10.0, max_request_timeout=15.0)
    rid = client.call_tool("slow", now=0.0, timeout=40.0)
    assert client.next_deadline() == 40.0
    client.receive_data(SERVER.progress(rid, 1), 30.0)
    assert client.next_deadline() == 40.0  # progress moves it on, within the call's own 40 s


def test_max_request_timeout_none_lets_progress_keep_a_request_alive() -> None:
    client = ready_client(request_timeout=10.0, max_request_timeout=None)
    rid = client.call_tool("slow", now=0.0)
    for now in range(5, 5000, 5):
        client.receive_data(SERVER.progress(rid, now), float(now))
        client.handle_timeout(float(now))
    assert client.pending_requests() == [rid]  # alive after 83 minutes of progress


def test_max_request_timeout_must_be_positive() -> None:
    with pytest.raises(LocalProtocolError, match="max_request_timeout"):
        ClientConfig(max_request_timeout=0.0)


def test_progress_leaves_the_deadline_when_reset_is_off() -> None:
    client = ready_client(request_timeout=10.0, reset_timeout_on_progress=False)
    rid = client.call_tool("slow", now=0.0)
    client.receive_data(SERVER.progress(rid, 1), 8.0)
    client.handle_timeout(10.0)
    assert [type(e) for e in drain_events(client)] == [ProgressReceived, RequestFailed]


def test_per_call_timeout_overrides_the_config() -> None:
    client = ready_client(request_timeout=10.0)
    client.ping(now=1.0, timeout=2.5)
    assert client.next_deadline() == 3.5


def test_timeout_fails_the_request_and_cancels_it() -> None:
    client = ready_client(request_timeout=10.0)
    rid = client.call_tool("slow", now=0.0)
    take_messages(client)
    client.handle_timeout(10.0)
    assert drain_events(client) == [RequestFailed(
        request_id=rid, method="tools/call", reason=FailureReason.TIMEOUT,
        message="tools/call got no answer within 10 s",
    )]
    assert take_messages(client) == [_cancelled(rid, "request timed out")]
    assert client.next_deadline() is None


def test_timeout_fires_only_due_requests() -> None:
    client = ready_client()
    early = client.ping(now=0.0, timeout=1.0)
    late = client.ping(now=0.0, timeout=5.0)
    client.handle_timeout(2.0)
    assert [e.request_id for e in drain_events(client) if isinstance(e, RequestFailed)] == [early]
    assert client.pending_requests() == [late]
    assert client.next_deadline() == 5.0


def test_timeout_converts_to_request_timeout() -> None:
    client = ready_client()
    client.ping(now=0.0, timeout=1.0)
    client.handle_timeout(1.0)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed)
    exc = event.to_exception()
    assert isinstance(exc, RequestTimeout)
    assert isinstance(exc, TimeoutError)


def test_handle_timeout_early_is_a_no_op() -> None:
    client = ready_client()
    client.ping(now=0.0, timeout=5.0)
    take_messages(client)
    client.handle_timeout(4.999)
    assert drain_events(client) == []
    assert take_messages(client) == []
    assert client.next_deadline() == 5.0


def test_next_deadline_is_pure() -> None:
    client = ready_client()
    client.ping(now=0.0, timeout=5.0)
    client.ping(now=0.0, timeout=3.0)
    assert client.next_deadline() == client.next_deadline() == 3.0
    assert drain_events(client) == []
    assert take_messages(client) != []


def test_cancel_fails_the_request_and_notifies_the_server() -> None:
    client = ready_client()
    rid = client.call_tool("slow", now=0.0)
    take_messages(client)
    client.cancel(rid, now=1.0)
    assert drain_events(client) == [RequestFailed(
        request_id=rid, method="tools/call", reason=FailureReason.CANCELLED,
        message="cancelled by the client",
    )]
    assert take_messages(client) == [_cancelled(rid, "cancelled by the client")]
    assert client.next_deadline() is None


def test_cancel_carries_the_given_reason() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    take_messages(client)
    client.cancel(rid, now=0.0, reason="user pressed stop")
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed)
    assert event.message == "user pressed stop"
    assert isinstance(event.to_exception(), RequestCancelled)
    assert take_messages(client) == [_cancelled(rid, "user pressed stop")]


@pytest.mark.parametrize("request_id", [ID, "2", 999])
def test_cancel_of_a_request_not_pending_is_a_local_error(request_id: int | str) -> None:
    client = ready_client()
    with pytest.raises(LocalProtocolError, match="not pending"):
        client.cancel(request_id, now=0.0)
    assert take_messages(client) == []


def test_answer_after_a_timeout_is_ignored() -> None:
    client = ready_client()
    rid = client.ping(now=0.0, timeout=1.0)
    client.handle_timeout(1.0)
    drain_events(client)
    client.receive_data(SERVER.result(rid, {}) + SERVER.error(rid, -1, "late"), 2.0)
    assert drain_events(client) == []


def test_answer_after_a_cancel_is_ignored() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.cancel(rid, now=0.0)
    drain_events(client)
    client.receive_data(SERVER.result(rid, {}), 2.0)
    assert drain_events(client) == []


def test_second_answer_to_a_request_is_ignored() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.receive_data(SERVER.result(rid, {}) + SERVER.result(rid, {}), 0.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived]


@pytest.mark.parametrize("request_id", [0, -1, 3, 999, "2", "x"])
def test_answer_to_an_id_never_used_is_discarded(request_id: int | str) -> None:
    client = ready_client()
    line = SERVER.result(request_id, {})
    client.receive_data(line, 0.0)
    excerpt = line.rstrip(b"\n")
    assert drain_events(client) == [MessageDiscarded(
        reason=DiscardReason.UNKNOWN_ID, detail=f"response to unknown request id {request_id!r}",
        excerpt=excerpt, warning=f"discarded a message from the server (unknown-id): response to unknown "
                                 f"request id {request_id!r}; it read {excerpt.decode()!r} (more such "
                                 f"messages are only counted)",
    )]


def test_error_response_fails_the_request() -> None:
    client = ready_client()
    rid = client.call_tool("t", now=0.0)
    client.receive_data(SERVER.error(rid, -32000, "tool broke", {"why": "x"}), 0.0)
    error = ErrorData(code=-32000, message="tool broke", data={"why": "x"})
    assert drain_events(client) == [RequestFailed(
        request_id=rid, method="tools/call", reason=FailureReason.ERROR_RESPONSE,
        message="tool broke", error=error,
    )]
    assert client.next_deadline() is None


def test_error_response_converts_to_request_error() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.receive_data(SERVER.error(rid, -32601, "nope", [1]), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed)
    exc = event.to_exception()
    assert isinstance(exc, RequestError)
    assert (exc.code, exc.message, exc.data) == (-32601, "nope", [1])


def test_error_with_a_null_id_is_a_peer_error() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.receive_data(SERVER.error(None, -32700, "Parse error"), 0.0)
    assert drain_events(client) == [PeerErrorReceived(error=ErrorData(code=-32700, message="Parse error"))]
    assert client.pending_requests() == [rid]


def test_error_without_an_id_is_a_peer_error() -> None:
    client = ready_client()
    client.receive_data(b'{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid","data":1}}\n', 0.0)
    assert drain_events(client) == [
        PeerErrorReceived(error=ErrorData(code=-32600, message="Invalid", data=1))
    ]


def test_result_of_the_wrong_shape_fails_the_request() -> None:
    client = ready_client()
    rid = client.call_tool("t", now=0.0)
    client.receive_data(SERVER.result(rid, {"content": "not a list"}), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed)
    assert (event.request_id, event.reason) == (rid, FailureReason.INVALID_RESULT)
    assert event.message.startswith("invalid tools/call result: ")


def test_message_nested_too_deep_fails_its_request_at_once() -> None:
    client = ready_client()
    rid = client.call_tool("t", now=0.0)
    deep = b"[" * 100_000 + b"]" * 100_000
    answer = b'{"jsonrpc":"2.0","id":%d,"result":{"structuredContent":{"a":%s}}}\n' % (rid, deep)
    client.receive_data(answer, 0.0)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed) and event.reason is FailureReason.INVALID_RESULT
    assert client.pending_requests() == []


def test_message_nested_too_deep_for_no_pending_request_is_discarded() -> None:
    client = ready_client()
    rid = client.call_tool("t", now=0.0)
    deep = b"[" * 100_000 + b"]" * 100_000
    answer = b'{"jsonrpc":"2.0","id":77,"result":{"structuredContent":{"a":' + deep + b"}}}\n"
    client.receive_data(answer, 0.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert event.reason is DiscardReason.NOT_JSON_RPC
    assert client.pending_requests() == [rid]


class _TooDeep:
    """A stage-two decoder that hits the recursion limit (the envelope just fitted)."""

    def decode(self, data: bytes) -> msgspec.Struct:
        raise RecursionError("maximum recursion depth exceeded while deserializing an object")


def test_result_too_deep_for_its_type_fails_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(inbound._RESULT_DECODERS, "tools/call", _TooDeep())
    client = ready_client()
    rid = client.call_tool("t", now=0.0)
    client.receive_data(SERVER.result(rid, {"content": []}), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, RequestFailed)
    assert event.reason is FailureReason.INVALID_RESULT


def test_each_result_is_decoded_to_its_methods_result_type() -> None:
    client = ready_client()
    rid = client.call_tool("t", now=0.0)
    client.receive_data(SERVER.result(rid, {"content": [{"type": "text", "text": "hi"}]}), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, ResponseReceived)
    assert CALL_TOOL.of(event.result) == CallToolResult(content=[TextContent(text="hi")])
    assert CLIENT_RESULTS["tools/call"] is CALL_TOOL
    assert {"skills/list", "skills/get"} <= CLIENT_RESULTS.keys()


def test_a_result_of_another_type_is_refused_not_cast() -> None:
    with pytest.raises(RemoteProtocolError, match="tools/call answered with a EmptyResult"):
        CALL_TOOL.of(EmptyResult())


def test_result_of_an_unknown_method_keeps_its_raw_json() -> None:
    client = ready_client()
    rid = client.request("vendor/thing", {"q": 1}, now=0.0)
    client.receive_data(SERVER.result(rid, {"answer": 42, "_meta": {"m": 1}}), 0.0)
    assert drain_events(client) == [ResponseReceived(
        request_id=rid, method="vendor/thing", result=EmptyResult(meta={"m": 1}),
        raw=msgspec.Raw(b'{"answer":42,"_meta":{"m":1}}'),
    )]


@pytest.mark.parametrize(
    ("capabilities", "call"),
    [
        ({}, lambda c: c.list_tools(now=0.0)),
        ({}, lambda c: c.call_tool("t", now=0.0)),
        ({}, lambda c: c.request("tools/call", {"name": "t"}, now=0.0)),
        ({}, lambda c: c.list_resources(now=0.0)),
        ({}, lambda c: c.list_resource_templates(now=0.0)),
        ({}, lambda c: c.read_resource("u", now=0.0)),
        ({"resources": {}}, lambda c: c.subscribe_resource("u", now=0.0)),
        ({"resources": {"subscribe": False}}, lambda c: c.unsubscribe_resource("u", now=0.0)),
        ({}, lambda c: c.list_prompts(now=0.0)),
        ({}, lambda c: c.get_prompt("p", now=0.0)),
        ({}, lambda c: c.complete(PromptReference(name="p"), "a", "b", now=0.0)),
        ({}, lambda c: c.set_logging_level("info", now=0.0)),
    ],
)
def test_request_needing_an_undeclared_capability_is_rejected_and_changes_nothing(
    capabilities: Json, call: Callable[[StdioClient], int]
) -> None:
    client = ready_client(server=ScriptedServer(capabilities=capabilities))
    with pytest.raises(LocalProtocolError, match="did not declare"):
        call(client)
    assert take_messages(client) == []
    assert client.pending_requests() == []
    assert client.next_deadline() is None
    assert client.ping(now=0.0) == ID


def test_resources_without_subscribe_still_allow_reading() -> None:
    client = ready_client(server=ScriptedServer(capabilities={"resources": {}}))
    assert client.read_resource("u", now=0.0) == ID


def test_ungated_methods_need_no_capability() -> None:
    client = ready_client(server=ScriptedServer(capabilities={}))
    assert client.ping(now=0.0) == ID
    assert client.request("vendor/x", None, now=0.0) == ID + 1


def test_all_pages_for_a_method_without_pages_is_a_local_error() -> None:
    client = ready_client()
    with pytest.raises(LocalProtocolError, match="not a paginated list"):
        client.request("tools/call", {"name": "t"}, now=0.0, all_pages=True)
    assert take_messages(client) == []


def test_notify_sends_a_notification() -> None:
    client = ready_client()
    client.notify("notifications/roots/list_changed", now=0.0)
    client.notify("vendor/n", {"a": 1}, now=0.0)
    assert take_messages(client) == [
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "method": "vendor/n", "params": {"a": 1}},
    ]


def test_many_requests_answered_out_of_order_keep_their_deadlines() -> None:
    client = ready_client()
    ids = [client.ping(now=0.0, timeout=100.0 + i) for i in range(100)]
    for rid in reversed(ids[1:]):  # the oldest stays: answered heads cannot be dropped
        client.receive_data(SERVER.result(rid, {}), 1.0)
    assert client.next_deadline() == 100.0
    last = client.ping(now=1.0, timeout=1.0)
    assert client.next_deadline() == 2.0
    client.handle_timeout(100.0)
    failed = [e.request_id for e in drain_events(client) if isinstance(e, RequestFailed)]
    assert failed == [last, ids[0]]
    assert client.next_deadline() is None
