"""The minimal server role: negotiation, requests as events, answers, notifications, cancellation."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from helpers import Json, drain_events, take_messages

from mcp_sansio import (
    ClientRequestReceived,
    DiscardReason,
    ErrorData,
    FailureReason,
    InitializeCompleted,
    LocalProtocolError,
    MessageDiscarded,
    NotificationReceived,
    ProgressReceived,
    RequestFailed,
    ResponseReceived,
    ServerSession,
    StdioClient,
)
from mcp_sansio.types import (
    CallToolRequestParams,
    CallToolResult,
    CancelledNotificationParams,
    ClientCapabilities,
    EmptyResult,
    Implementation,
    ListRootsResult,
    ReadResourceRequestParams,
    Root,
    RootsCapability,
    ServerCapabilities,
    TextContent,
    ToolsCapability,
)

INFO = Implementation(name="srv", version="2")
CAPS = ServerCapabilities(tools=ToolsCapability())


def _line(message: Json) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _request(request_id: int | str, method: str, params: object = None) -> bytes:
    message: Json = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return _line(message)


def _initialize(version: str) -> bytes:
    return _request(0, "initialize", {"protocolVersion": version, "capabilities": {},
                                      "clientInfo": {"name": "c", "version": "1"}})


def _server(**kwargs: Any) -> ServerSession:
    return ServerSession(INFO, CAPS, **kwargs)


def test_initialize_accepts_a_version_it_supports() -> None:
    server = _server(instructions="hello")
    server.receive_data(_initialize("2025-06-18"))
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": 0, "result": {
        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
        "serverInfo": {"name": "srv", "version": "2"}, "instructions": "hello"}}]
    assert server.protocol_version == "2025-06-18"
    assert server.client_info == Implementation(name="c", version="1")
    assert drain_events(server) == []


def test_initialize_answers_its_preferred_version_for_an_unknown_one() -> None:
    server = _server(protocol_versions=("2025-03-26", "2024-11-05"))
    server.receive_data(_initialize("2030-01-01"))
    assert take_messages(server)[0]["result"]["protocolVersion"] == "2025-03-26"


def test_initialize_with_invalid_params_is_invalid_params() -> None:
    server = _server()
    server.receive_data(_request(0, "initialize", {"protocolVersion": 1}))
    assert take_messages(server)[0]["error"]["code"] == -32602
    assert server.protocol_version is None


def test_initialized_notification_is_recorded() -> None:
    server = _server()
    server.receive_data(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert server.initialized
    assert [type(e) for e in drain_events(server)] == [NotificationReceived]


def test_request_becomes_an_event_with_its_progress_token() -> None:
    server = _server()
    server.receive_data(_request(5, "tools/call", {"name": "add", "_meta": {"progressToken": "tok"}}))
    assert drain_events(server) == [ClientRequestReceived(
        request_id=5, method="tools/call",
        params=CallToolRequestParams(name="add", meta={"progressToken": "tok"}), progress_token="tok",
    )]


@pytest.mark.parametrize(("meta", "token"), [(None, None), ({}, None), ({"progressToken": 7}, 7),
                                             ({"progressToken": [1]}, None)])
def test_progress_token_is_read_from_meta(meta: Json | None, token: object) -> None:
    server = _server()
    params: Json = {"uri": "u"} if meta is None else {"uri": "u", "_meta": meta}
    server.receive_data(_request(1, "resources/read", params))
    [event] = drain_events(server)
    assert isinstance(event, ClientRequestReceived)
    assert event.progress_token == token
    assert isinstance(event.params, ReadResourceRequestParams)


def test_request_without_params_is_decoded_as_empty() -> None:
    server = _server()
    server.receive_data(_request(1, "tools/list"))
    [event] = drain_events(server)
    assert isinstance(event, ClientRequestReceived)
    assert event.progress_token is None


def test_respond_sends_the_result() -> None:
    server = _server()
    server.receive_data(_request(5, "tools/call", {"name": "add"}))
    server.respond(5, CallToolResult(content=[TextContent(text="3")]))
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": 5, "result": {
        "content": [{"type": "text", "text": "3"}]}}]


def test_respond_error_sends_the_error() -> None:
    server = _server()
    server.receive_data(_request("a", "tools/call", {"name": "add"}))
    server.respond_error("a", -32000, "failed", {"x": 1})
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": "a", "error": {
        "code": -32000, "message": "failed", "data": {"x": 1}}}]


def test_respond_to_an_unknown_request_is_a_local_error() -> None:
    server = _server()
    with pytest.raises(LocalProtocolError, match="no client request"):
        server.respond(1, {})
    with pytest.raises(LocalProtocolError):
        server.respond_error(1, -1, "x")


def test_ping_is_answered_without_an_event() -> None:
    server = _server()
    server.receive_data(_request(3, "ping"))
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
    assert drain_events(server) == []


def test_unknown_method_is_method_not_found() -> None:
    server = _server()
    server.receive_data(_request(4, "vendor/do"))
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": 4, "error": {
        "code": -32601, "message": "method not found: vendor/do"}}]


def test_request_with_invalid_params_is_invalid_params() -> None:
    server = _server()
    server.receive_data(_request(4, "tools/call", {"name": 5}))
    [answer] = take_messages(server)
    assert (answer["id"], answer["error"]["code"]) == (4, -32602)
    assert drain_events(server) == []


def test_cancelled_request_is_silently_not_answered() -> None:
    server = _server()
    server.receive_data(_request(5, "tools/call", {"name": "slow"}))
    server.receive_data(_line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": 5, "reason": "user"}}))
    assert drain_events(server)[1] == NotificationReceived(
        method="notifications/cancelled", params=CancelledNotificationParams(request_id=5, reason="user")
    )
    server.respond(5, CallToolResult())
    assert take_messages(server) == []
    with pytest.raises(LocalProtocolError):
        server.respond(5, CallToolResult())


def test_cancellation_of_an_unknown_request_is_just_delivered() -> None:
    server = _server()
    server.receive_data(_line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": 99}}))
    assert [type(e) for e in drain_events(server)] == [NotificationReceived]


def test_unknown_notification_keeps_raw_params() -> None:
    server = _server()
    server.receive_data(_line({"jsonrpc": "2.0", "method": "vendor/n", "params": {"a": 1}}))
    assert drain_events(server) == [NotificationReceived(method="vendor/n", params=msgspec.Raw(b'{"a": 1}'))]


def test_notification_with_invalid_params_is_dropped() -> None:
    server = _server()
    server.receive_data(_line({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": [1]}}))
    assert drain_events(server) == []
    assert take_messages(server) == []


def test_line_that_is_not_json_is_a_parse_error() -> None:
    server = _server()
    server.receive_data(b"hello\n")
    [answer] = take_messages(server)
    assert (answer["id"], answer["error"]["code"]) == (None, -32700)
    [event] = drain_events(server)
    assert isinstance(event, MessageDiscarded)
    assert (event.reason, event.excerpt) == (DiscardReason.NOT_JSON, b"hello")


@pytest.mark.parametrize("line", [b"42", b'{"id":1.5}', b"[" * 5000 + b"]" * 5000])
def test_json_that_is_no_envelope_is_an_invalid_request(line: bytes) -> None:
    server = _server()
    server.receive_data(line + b"\n")
    assert take_messages(server)[0]["error"]["code"] == -32600
    [event] = drain_events(server)
    assert isinstance(event, MessageDiscarded)
    assert event.reason is DiscardReason.NOT_JSON_RPC


def test_envelope_of_no_valid_kind_is_an_invalid_request() -> None:
    server = _server()
    server.receive_data(b'{"jsonrpc":"2.0","id":1}\n')
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "invalid request"}}]


def test_batch_members_are_each_handled() -> None:
    server = _server()
    server.receive_data(b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"vendor/n"}]\n')
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    assert [type(e) for e in drain_events(server)] == [NotificationReceived]


def test_final_unterminated_line_is_handled_at_eof() -> None:
    server = _server()
    server.receive_data(_request(1, "ping").rstrip())
    assert take_messages(server) == []
    server.receive_data(b"")
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


def test_notify_progress_and_log_send_notifications() -> None:
    server = _server()
    server.notify("notifications/tools/list_changed")
    server.send_progress("tok", 1, 2, "half")
    server.send_log("info", {"k": 1}, logger="db")
    assert take_messages(server) == [
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "tok", "progress": 1, "total": 2, "message": "half"}},
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": "info", "logger": "db", "data": {"k": 1}}},
    ]


def test_request_to_the_client_is_answered_as_an_event() -> None:
    server = _server()
    assert server.request("roots/list") == 1
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": 1, "method": "roots/list"}]
    server.receive_data(b'{"jsonrpc":"2.0","id":1,"result":{"roots":[{"uri":"file:///a"}]}}\n')
    assert drain_events(server) == [ResponseReceived(
        request_id=1, method="roots/list", result=ListRootsResult(roots=[Root(uri="file:///a")]),
        raw=msgspec.Raw(b'{"roots":[{"uri":"file:///a"}]}'),
    )]


def test_answer_to_an_unknown_method_is_decoded_as_an_empty_result() -> None:
    server = _server()
    rid = server.request("vendor/ask", {"q": 1})
    server.receive_data(_line({"jsonrpc": "2.0", "id": rid, "result": {"a": 1}}))
    [event] = drain_events(server)
    assert isinstance(event, ResponseReceived)
    assert event.result == EmptyResult()


def test_error_answer_from_the_client_fails_the_request() -> None:
    server = _server()
    rid = server.request("sampling/createMessage", {"messages": [], "maxTokens": 1})
    server.receive_data(_line({"jsonrpc": "2.0", "id": rid, "error": {"code": -1, "message": "declined"}}))
    assert drain_events(server) == [RequestFailed(
        request_id=rid, method="sampling/createMessage", reason=FailureReason.ERROR_RESPONSE,
        message="declined", error=ErrorData(code=-1, message="declined"),
    )]


def test_invalid_answer_from_the_client_fails_the_request() -> None:
    server = _server()
    rid = server.request("roots/list")
    server.receive_data(_line({"jsonrpc": "2.0", "id": rid, "result": {"roots": 5}}))
    [event] = drain_events(server)
    assert isinstance(event, RequestFailed)
    assert event.reason is FailureReason.INVALID_RESULT


@pytest.mark.parametrize("request_id", [99, "1"])
def test_answer_to_an_unknown_request_is_ignored(request_id: int | str) -> None:
    server = _server()
    server.request("roots/list")
    server.receive_data(_line({"jsonrpc": "2.0", "id": request_id, "result": {}}))
    assert drain_events(server) == []


def test_client_and_server_talk_in_memory() -> None:
    caps = ClientCapabilities(roots=RootsCapability())
    client, server = StdioClient(capabilities=caps), _server()
    client.initialize(now=0.0)
    server.receive_data(client.data_to_send())
    client.receive_data(server.data_to_send(), 0.0)
    assert [type(e) for e in drain_events(client)] == [InitializeCompleted]
    rid = client.call_tool("add", {"a": 1}, now=0.0)
    server.receive_data(client.data_to_send())
    assert server.initialized
    request = drain_events(server)[-1]
    assert isinstance(request, ClientRequestReceived)
    assert request.progress_token == rid
    server.send_progress(rid, 0.5)
    server.respond(request.request_id, CallToolResult(content=[TextContent(text="1")]))
    client.receive_data(server.data_to_send(), 1.0)
    assert drain_events(client) == [
        ProgressReceived(request_id=rid, progress=0.5, total=None, message=None),
        ResponseReceived(request_id=rid, method="tools/call",
                         result=CallToolResult(content=[TextContent(text="1")]),
                         raw=msgspec.Raw(b'{"content":[{"type":"text","text":"1"}]}')),
    ]


def test_respond_with_a_result_json_cannot_hold_keeps_the_request_open() -> None:
    server = _server()
    server.receive_data(_request(5, "tools/call", {"name": "add"}))
    with pytest.raises(LocalProtocolError, match="cannot encode"):
        server.respond(5, {"content": [object()]})
    server.respond(5, CallToolResult())
    assert take_messages(server) == [{"jsonrpc": "2.0", "id": 5, "result": {"content": []}}]
