"""Hostile or broken clients on stdio: every case gets a JSON-RPC error, and the server stays up."""

from __future__ import annotations

import pytest
from server_helpers import handshake, request, send, server_for, take, take_events

from mcp_sansio import DiscardReason, MessageDiscarded
from mcp_sansio.server import HandlerCallReceived, MCPServer, StdioServer, ToolCallReceived

PING = b'{"jsonrpc":"2.0","id":"after","method":"ping"}\n'
PONG = {"jsonrpc": "2.0", "id": "after", "result": {}}


def _ready(**config: int) -> StdioServer:
    app = MCPServer("s")
    app.add_tool(lambda: "", name="t")
    server = server_for(app, **config)
    handshake(server)
    return server


def _still_up(server: StdioServer) -> None:
    take(server)
    server.receive_data(PING, 9.0)
    assert take(server) == [PONG]


@pytest.mark.parametrize(("line", "code", "reason"), [
    (b"garbage", -32700, DiscardReason.NOT_JSON),
    (b"\xff\xfe{}", -32700, DiscardReason.NOT_JSON),
    (b'{"jsonrpc": "2.0", "id": 1', -32700, DiscardReason.NOT_JSON),
    (b"42", -32600, DiscardReason.NOT_JSON_RPC),
    (b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}', -32600, DiscardReason.NOT_JSON_RPC),
    (b"[" * 100_000, -32600, DiscardReason.NOT_JSON_RPC),
])
def test_a_line_that_is_no_message_gets_an_error_without_id(
    line: bytes, code: int, reason: DiscardReason
) -> None:
    server = _ready()
    server.receive_data(line + b"\n", 1.0)
    [answer] = take(server)
    assert answer["id"] is None and answer["error"]["code"] == code
    [event] = take_events(server)
    assert isinstance(event, MessageDiscarded) and event.reason is reason
    _still_up(server)


@pytest.mark.parametrize(("message", "rid"), [
    ({"jsonrpc": "1.0", "id": 3, "method": "ping"}, 3),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": 4, "method": "ping", "result": {}}, 4),
    ({"jsonrpc": "2.0"}, None),
])
def test_an_envelope_json_rpc_forbids_is_an_invalid_request(message: dict[str, object], rid: object) -> None:
    server = _ready()
    send(server, message)
    invalid = {"code": -32600, "message": "Invalid request"}
    assert take(server) == [{"jsonrpc": "2.0", "id": rid, "error": invalid}]
    _still_up(server)


def test_a_batch_is_refused_as_a_whole() -> None:
    server = _ready()
    server.receive_data(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n', 1.0)
    [answer] = take(server)
    assert answer["error"] == {"code": -32600, "message": "Invalid request: batches are not supported"}
    assert take_events(server, MessageDiscarded)[0].reason is DiscardReason.BATCH_NOT_ALLOWED
    _still_up(server)


def test_an_oversized_line_is_refused_and_reading_resumes_after_it() -> None:
    server = _ready(max_line_bytes=256)
    server.receive_data(b'{"pad":"' + b"x" * 300 + b'"}\n', 1.0)
    [answer] = take(server)
    assert answer["error"]["code"] == -32600 and "limit of 256" in answer["error"]["message"]
    _still_up(server)


def test_an_oversized_line_split_over_reads_is_skipped_to_its_end() -> None:
    server = _ready(max_line_bytes=256)
    server.receive_data(b"x" * 300, 1.0)
    assert take(server)[0]["error"]["code"] == -32600
    server.receive_data(b"y" * 1000, 1.1)  # still the same line: dropped, nothing buffered
    server.receive_data(b"z\n" + PING, 1.2)
    assert take(server) == [PONG]


def test_a_skipped_line_that_never_ends_is_dropped_at_eof() -> None:
    server = _ready(max_line_bytes=256)
    server.receive_data(b"x" * 300, 1.0)
    take(server)
    server.receive_data(b"", 2.0)
    assert [type(e).__name__ for e in take_events(server)][-1] == "ConnectionTerminated"
    assert take(server) == []


def test_a_duplicate_id_in_flight_is_refused() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "t"}), request(1, "tools/call", {"name": "t"}))
    assert take(server) == [{"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32600, "message": "Invalid request: id 1 is already in use"}}]
    assert len(take_events(server)) == 1


def test_an_id_can_be_reused_once_answered() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "t"}))
    [event] = take_events(server, HandlerCallReceived)
    server.respond(event.call, "", now=0.0)
    send(server, request(1, "tools/call", {"name": "t"}))
    assert isinstance(take_events(server)[0], ToolCallReceived)


def test_too_many_requests_in_flight_are_refused() -> None:
    server = _ready(max_in_flight=2)
    send(server, *[request(i, "tools/call", {"name": "t"}) for i in range(3)])
    assert take(server) == [{"jsonrpc": "2.0", "id": 2, "error": {
        "code": -32603, "message": "too many requests in progress (at most 2)"}}]


@pytest.mark.parametrize("params", [{"requestId": 999}, {"requestId": None}, {}, {"requestId": "nope"}])
def test_cancelling_what_is_not_in_flight_is_ignored(params: dict[str, object]) -> None:
    server = _ready()
    send(server, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})
    assert take(server) == [] and take_events(server) == []
    _still_up(server)


def test_a_malformed_cancellation_is_discarded() -> None:
    server = _ready()
    send(server, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}})
    [event] = take_events(server)
    assert isinstance(event, MessageDiscarded) and event.reason is DiscardReason.INVALID_PARAMS
    _still_up(server)


def test_blank_lines_are_ignored() -> None:
    server = _ready()
    server.receive_data(b"\n", 1.0)
    server.receive_data(b"\r\n\n", 1.0)
    assert take(server) == [] and take_events(server) == []


def test_messages_split_anywhere_are_reassembled() -> None:
    server = _ready()
    data = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
    for i in range(len(data)):
        server.receive_data(data[i:i + 1], 1.0)
    assert [m["id"] for m in take(server)] == [1, 2]


def test_requests_before_initialize_never_break_the_connection() -> None:
    server = server_for()
    for method in ("tools/list", "tools/call", "resources/read", "prompts/get"):
        send(server, request(method, method, {"name": "x", "uri": "y"}))
    assert all(m["error"]["code"] in (-32600, -32602) for m in take(server))
    handshake(server)
    send(server, request(1, "ping"))
    assert take(server) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
