"""What the server sends unasked: garbage, batches, notifications, and requests to the client."""

from __future__ import annotations

import msgspec
import pytest
from helpers import FIRST_REQUEST_ID, ScriptedServer, drain_events, ready_client, take_messages

from mcp_sansio import (
    DiscardReason,
    LocalProtocolError,
    MessageDiscarded,
    NotificationReceived,
    ResponseReceived,
    ServerRequestReceived,
    StdioClient,
)
from mcp_sansio.types import (
    CancelledNotificationParams,
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ListRootsResult,
    LoggingMessageNotificationParams,
    NotificationParams,
    RequestParams,
    Root,
    RootsCapability,
    SamplingMessage,
    TextContent,
)

SERVER = ScriptedServer()
EVERYTHING = ClientCapabilities(roots=RootsCapability(), sampling={}, elicitation={})
SAMPLING = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}


# ------------------------------------------------------------------ lines that are no message


def test_banner_line_is_discarded() -> None:
    client = ready_client()
    client.receive_data(b"Server listening on stdio\n", 0.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert (event.reason, event.excerpt) == (DiscardReason.NOT_JSON, b"Server listening on stdio")
    assert event.detail.startswith("not JSON: ")


def test_invalid_utf8_line_is_discarded() -> None:
    client = ready_client()
    client.receive_data(b"\xff\xfe garbage\n", 0.0)
    assert drain_events(client) == [MessageDiscarded(
        reason=DiscardReason.INVALID_UTF8, detail="the message is not valid UTF-8",
        excerpt=b"\xff\xfe garbage",
        warning="discarded a message from the server (invalid-utf8): the message is not valid UTF-8; "
                "it read '\ufffd\ufffd garbage' (more such messages are only counted)",
    )]


@pytest.mark.parametrize(
    "line", [b"42", b'"hello"', b"[1,2]", b'{"id":1.5}', b'{"jsonrpc":"1.0","id":2,"result":{}}']
)
def test_json_that_is_not_json_rpc_is_discarded(line: bytes) -> None:
    client = ready_client(version="2025-03-26")  # even where batches are allowed
    client.receive_data(line + b"\n", 0.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert (event.reason, event.excerpt) == (DiscardReason.NOT_JSON_RPC, line)


def test_excerpt_shows_only_the_start_of_a_discarded_line() -> None:
    client = ready_client()
    client.receive_data(b"x" * 5000 + b"\n", 0.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert event.excerpt == b"x" * 200


def test_discarded_lines_leave_the_session_working() -> None:
    client = ready_client()
    rid = client.ping(now=0.0)
    client.receive_data(b"noise\n" + SERVER.result(rid, {}), 0.0)
    assert [type(e) for e in drain_events(client)] == [MessageDiscarded, ResponseReceived]


# -------------------------------------------------------------------------------- batches


def test_batch_is_accepted_when_2025_03_26_was_negotiated() -> None:
    client = ready_client(version="2025-03-26")
    rid = client.ping(now=0.0)
    batch = b"[" + SERVER.result(rid, {}).rstrip() + b"," + SERVER.notification("vendor/n").rstrip() + b"]\n"
    client.receive_data(batch, 0.0)
    assert [type(e) for e in drain_events(client)] == [ResponseReceived, NotificationReceived]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_batch_is_discarded_in_other_revisions(version: str) -> None:
    client = ready_client(version=version)
    rid = client.ping(now=0.0)
    batch = b"[" + SERVER.result(rid, {}).rstrip() + b"]"
    client.receive_data(batch + b"\n", 0.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert event == MessageDiscarded(
        reason=DiscardReason.BATCH_NOT_ALLOWED,
        detail="JSON-RPC batches are not allowed in this protocol revision", excerpt=batch,
        warning=event.warning)
    assert event.warning is not None and event.warning.startswith(
        "discarded a message from the server (batch-not-allowed): JSON-RPC batches are not allowed")
    assert client.pending_requests() == [rid]


def test_empty_batch_is_discarded() -> None:
    client = ready_client(version="2025-03-26")
    client.receive_data(b"[]\n", 0.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert event.reason is DiscardReason.BATCH_NOT_ALLOWED


def test_invalid_member_of_a_batch_is_discarded_alone() -> None:
    client = ready_client(version="2025-03-26")
    client.receive_data(b'[{"jsonrpc":"2.0"},{"jsonrpc":"2.0","method":"vendor/n"}]\n', 0.0)
    assert [type(e) for e in drain_events(client)] == [MessageDiscarded, NotificationReceived]


# -------------------------------------------------------------------------- notifications


def test_known_notification_params_are_typed() -> None:
    client = ready_client()
    client.receive_data(SERVER.notification("notifications/message",
                                            {"level": "info", "logger": "db", "data": {"n": 1}}), 0.0)
    assert drain_events(client) == [NotificationReceived(
        method="notifications/message",
        params=LoggingMessageNotificationParams(level="info", logger="db", data={"n": 1}),
    )]


def test_known_notification_without_params_is_decoded_as_empty() -> None:
    client = ready_client()
    client.receive_data(SERVER.notification("notifications/tools/list_changed"), 0.0)
    assert drain_events(client) == [
        NotificationReceived(method="notifications/tools/list_changed", params=NotificationParams())
    ]


def test_unknown_notification_is_delivered_with_raw_params() -> None:
    client = ready_client()
    client.receive_data(SERVER.notification("vendor/event", {"x": [1]}), 0.0)
    assert drain_events(client) == [
        NotificationReceived(method="vendor/event", params=msgspec.Raw(b'{"x":[1]}'))
    ]


def test_unknown_notification_without_params_has_none() -> None:
    client = ready_client()
    client.receive_data(SERVER.notification("vendor/ping"), 0.0)
    assert drain_events(client) == [NotificationReceived(method="vendor/ping", params=None)]


def test_known_notification_with_invalid_params_is_discarded() -> None:
    client = ready_client()
    client.receive_data(SERVER.notification("notifications/message", {"level": "loud"}), 0.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert (event.reason, event.excerpt) == (DiscardReason.INVALID_PARAMS, b'{"level":"loud"}')
    assert event.detail.startswith("invalid notifications/message params: ")


def test_notification_params_that_are_null_are_invalid() -> None:
    client = ready_client()
    client.receive_data(b'{"jsonrpc":"2.0","method":"notifications/progress","params":null}\n', 0.0)
    [event] = drain_events(client)
    assert isinstance(event, MessageDiscarded)
    assert (event.reason, event.excerpt) == (DiscardReason.INVALID_PARAMS, b"null")


def test_notifications_arrive_before_the_handshake_completes() -> None:
    client = StdioClient()
    client.initialize(now=0.0)
    client.receive_data(SERVER.notification("notifications/message", {"level": "debug", "data": "x"}), 0.0)
    assert [type(e) for e in drain_events(client)] == [NotificationReceived]


# ------------------------------------------------------------------ requests to the client


def test_ping_is_answered_without_an_event() -> None:
    client = ready_client()
    client.receive_data(SERVER.request("p1", "ping"), 0.0)
    assert drain_events(client) == []
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": "p1", "result": {}}]


@pytest.mark.parametrize(
    ("method", "params"),
    [("roots/list", None), ("sampling/createMessage", SAMPLING), ("elicitation/create", {"message": "m"})],
)
def test_request_for_an_undeclared_capability_is_method_not_found(method: str, params: object) -> None:
    client = ready_client()  # declares nothing
    client.receive_data(SERVER.request(5, method, params), 0.0)
    assert drain_events(client) == []
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": 5, "error": {
        "code": -32601, "message": f"method not found: {method}"}}]


@pytest.mark.parametrize("method", ["vendor/ask", "tasks/get", "tools/call"])
def test_request_for_an_unknown_method_is_method_not_found(method: str) -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request(6, method, {}), 0.0)
    assert drain_events(client) == []
    assert take_messages(client)[0]["error"]["code"] == -32601


def test_roots_request_is_delivered_when_roots_were_declared() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request(7, "roots/list"), 0.0)
    assert drain_events(client) == [
        ServerRequestReceived(request_id=7, method="roots/list", params=RequestParams())
    ]
    assert take_messages(client) == []


def test_sampling_request_is_delivered_with_typed_params() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request("s", "sampling/createMessage", SAMPLING), 0.0)
    assert drain_events(client) == [ServerRequestReceived(
        request_id="s", method="sampling/createMessage",
        params=CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(text="hi"))], max_tokens=5
        ),
    )]


def test_elicitation_request_is_delivered_when_declared() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request(8, "elicitation/create", {"message": "name?"}), 0.0)
    assert drain_events(client) == [ServerRequestReceived(
        request_id=8, method="elicitation/create", params=ElicitRequestParams(message="name?")
    )]


def test_request_with_invalid_params_is_answered_invalid_params() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request(9, "sampling/createMessage", {"messages": "no"}), 0.0)
    assert drain_events(client) == []
    [answer] = take_messages(client)
    assert (answer["id"], answer["error"]["code"]) == (9, -32602)
    assert answer["error"]["message"].startswith("invalid params: ")


def test_respond_sends_the_result() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request(7, "roots/list"), 0.0)
    client.respond(7, ListRootsResult(roots=[Root(uri="file:///w", name="w")]), now=0.0)
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": 7, "result": {
        "roots": [{"uri": "file:///w", "name": "w"}]}}]


def test_respond_accepts_a_wire_shape_mapping() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request("s", "sampling/createMessage", SAMPLING), 0.0)
    client.respond("s", {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"},
                   now=0.0)
    assert take_messages(client)[0]["result"]["model"] == "m"


def test_respond_error_sends_the_error() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request(7, "roots/list"), 0.0)
    client.respond_error(7, -1, "user declined", {"why": "no"}, now=0.0)
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": 7, "error": {
        "code": -1, "message": "user declined", "data": {"why": "no"}}}]


@pytest.mark.parametrize("request_id", [7, "7", FIRST_REQUEST_ID])
def test_respond_to_an_unknown_request_is_a_local_error(request_id: int | str) -> None:
    client = ready_client(capabilities=EVERYTHING)
    with pytest.raises(LocalProtocolError, match="no server request"):
        client.respond(request_id, {}, now=0.0)
    with pytest.raises(LocalProtocolError):
        client.respond_error(request_id, -1, "x", now=0.0)
    assert take_messages(client) == []


def test_respond_twice_is_a_local_error() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request(7, "roots/list"), 0.0)
    client.respond(7, ListRootsResult(), now=0.0)
    with pytest.raises(LocalProtocolError):
        client.respond(7, ListRootsResult(), now=0.0)


def test_respond_with_a_result_json_cannot_hold_keeps_the_request_open() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request(7, "roots/list"), 0.0)
    with pytest.raises(LocalProtocolError, match="cannot encode"):
        client.respond(7, {"roots": [object()]}, now=0.0)
    assert take_messages(client) == []
    client.respond(7, ListRootsResult(), now=0.0)
    assert take_messages(client) == [{"jsonrpc": "2.0", "id": 7, "result": {"roots": []}}]


def test_request_the_server_cancelled_is_silently_not_answered() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request("s", "sampling/createMessage", SAMPLING), 0.0)
    cancelled = {"requestId": "s", "reason": "late"}
    client.receive_data(SERVER.notification("notifications/cancelled", cancelled), 1.0)
    assert drain_events(client)[1:] == [NotificationReceived(
        method="notifications/cancelled", params=CancelledNotificationParams(request_id="s", reason="late")
    )]
    client.respond("s", CreateMessageResult(role="assistant", content=TextContent(text="t"), model="m"),
                   now=0.0)
    assert take_messages(client) == []
    with pytest.raises(LocalProtocolError):
        client.respond("s", {}, now=0.0)


def test_cancellation_of_an_unknown_request_is_just_delivered() -> None:
    client = ready_client()
    client.receive_data(SERVER.notification("notifications/cancelled", {"requestId": 99}), 0.0)
    assert [type(e) for e in drain_events(client)] == [NotificationReceived]


def test_request_awaiting_an_answer_when_the_connection_ends_is_not_answered() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.receive_data(SERVER.request(7, "roots/list"), 0.0)
    client.close(now=1.0)
    client.respond(7, ListRootsResult(), now=1.0)
    assert take_messages(client) == []


def test_request_received_after_the_connection_ended_is_not_answered() -> None:
    client = ready_client(capabilities=EVERYTHING)
    client.session.connection_lost("gone", now=0.0)
    drain_events(client)
    client.session.receive_message(SERVER.request(7, "roots/list").rstrip(), 0.0)
    assert [type(e) for e in drain_events(client)] == [ServerRequestReceived]
    client.respond(7, ListRootsResult(), now=0.0)
    assert take_messages(client) == []
