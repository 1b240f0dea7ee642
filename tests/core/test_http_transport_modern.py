"""The stateless 2026-07-28 era over Streamable HTTP: the probe, the mirrored headers,
invalid ``x-mcp-header`` tools, and lost streams re-issued under new ids."""

from __future__ import annotations

import json

from helpers import drain_events
from http_helpers import URL, ReceivedRequest, ScriptedHttpServer, chunked_head, sse_event
from modern_helpers import discover_result

from mcp_sansio import ClientConfig, MessageDiscarded, ResponseReceived
from mcp_sansio.events import Event, InitializeCompleted
from mcp_sansio.http_transport import HttpClient
from mcp_sansio.types import ListToolsResult

_TOOLS = {
    "tools": [
        {"name": "sql", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"}}}},
        {"name": "broken", "inputSchema": {"type": "object", "properties": {
            "ratio": {"type": "number", "x-mcp-header": "Ratio"}}}},
    ],
    "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
}


def modern_http_client(**config: object) -> tuple[HttpClient, ScriptedHttpServer, list[Event]]:
    """A client that probed with server/discover at 0.0 and adopted 2026-07-28."""
    client = HttpClient(URL, config=ClientConfig(**config))  # type: ignore[arg-type]  # test-only kwargs
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (probe,) = server.pump(now=0.0)
    server.reply_json(probe, discover_result(probe.json()["id"]), now=0.0)
    return client, server, drain_events(client)


def result(request: ReceivedRequest, value: dict[str, object]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request.json()["id"], "result": value}).encode()


def test_the_probe_carries_its_version_and_method_headers() -> None:
    client = HttpClient(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (probe,) = server.pump(now=0.0)
    assert probe.rpc_method == "server/discover"
    assert probe.header("mcp-protocol-version") == "2026-07-28"
    assert probe.header("mcp-method") == "server/discover"


def test_a_discover_result_makes_the_session_modern_without_session_or_get_stream() -> None:
    client, server, events = modern_http_client()
    assert [type(e) for e in events] == [InitializeCompleted]
    assert client.era == "modern" and client.session_id is None
    assert server.pump(now=0.0) == []  # no notifications/initialized, no GET stream


def test_a_jsonrpc_error_answering_the_probe_is_handled_by_the_session() -> None:
    client = HttpClient(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (probe,) = server.pump(now=0.0)
    body = json.dumps({"jsonrpc": "2.0", "id": probe.json()["id"], "error": {
        "code": -32022, "message": "unsupported", "data": {"supported": ["2025-11-25"]}}}).encode()
    server.reply_json(probe, body, now=0.0, status=400)
    (fallback,) = server.pump(now=0.0)
    assert fallback.rpc_method == "initialize"  # only handshake-era versions listed


def test_a_refused_probe_without_a_jsonrpc_answer_falls_back_to_initialize() -> None:
    client = HttpClient(URL)
    server = ScriptedHttpServer(client)
    client.connect(now=0.0)
    (probe,) = server.pump(now=0.0)
    server.reply(probe, 404, b"not here", now=0.0)
    (fallback,) = server.pump(now=0.0)
    assert fallback.rpc_method == "initialize"


def test_requests_mirror_method_name_and_annotated_parameters_into_headers() -> None:
    client, server, _ = modern_http_client()
    client.list_tools(now=1.0)
    (listing,) = server.pump(now=1.0)
    assert listing.header("mcp-method") == "tools/list"
    server.reply_json(listing, result(listing, _TOOLS), now=1.0)
    drain_events(client)
    client.call_tool("sql", {"region": "us-west1", "limit": 5}, now=2.0)
    (call,) = server.pump(now=2.0)
    assert call.header("mcp-method") == "tools/call"
    assert call.header("mcp-name") == "sql"
    assert call.header("mcp-param-region") == "us-west1"
    assert call.header("mcp-param-limit") == "5"


def test_a_tool_with_an_invalid_x_mcp_header_is_dropped_and_named() -> None:
    client, server, _ = modern_http_client()
    rid = client.list_tools(now=1.0)
    (listing,) = server.pump(now=1.0)
    server.reply_json(listing, result(listing, _TOOLS), now=1.0)
    events = drain_events(client)
    (discarded,) = [e for e in events if isinstance(e, MessageDiscarded)]
    assert "broken" in discarded.detail
    (answer,) = [e for e in events if isinstance(e, ResponseReceived)]
    assert answer.request_id == rid
    assert isinstance(answer.result, ListToolsResult)
    assert [t.name for t in answer.result.tools] == ["sql"]


def test_an_answer_to_the_server_mirrors_no_method_headers() -> None:
    client, server, _ = modern_http_client()
    client.call_tool("anything", {}, now=1.0)
    (call,) = server.pump(now=1.0)
    asked = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "roots/list"}).encode()
    server.reply_sse(call, [sse_event(asked)], now=1.0, end=False)
    (answer,) = [r for r in server.pump(now=1.0) if r.method == "POST"]
    assert answer.json()["error"]["code"] == -32601  # no server requests in this era
    assert answer.header("mcp-method") is None


def test_a_lost_stream_of_a_safe_request_is_reissued_once_under_a_new_id() -> None:
    client, server, _ = modern_http_client()
    rid = client.list_tools(now=1.0)
    (first,) = server.pump(now=1.0)
    server.send(first, chunked_head() + b"5\r\n: hi\n\r\n", now=1.0)
    server.hang_up(first, now=1.0)
    (again,) = server.pump(now=1.0)
    assert again.rpc_method == "tools/list" and again.json()["id"] != first.json()["id"]
    server.hang_up(again, now=1.0)  # lost again: no third try
    assert server.pump(now=1.0) == []
    (failed,) = [e for e in drain_events(client) if getattr(e, "request_id", None) == rid]
    assert type(failed).__name__ == "RequestFailed"


def test_a_lost_stream_of_a_tool_call_is_not_repeated() -> None:
    client, server, _ = modern_http_client()
    client.call_tool("anything", {}, now=1.0)
    (call,) = server.pump(now=1.0)
    server.send(call, chunked_head() + b"".join([b"%x\r\n" % len(e) + e + b"\r\n"
                                                 for e in [sse_event(b"", id="1")]]), now=1.0)
    server.hang_up(call, now=1.0)
    assert server.pump(now=1.0) == []
