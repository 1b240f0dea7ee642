"""The stateless 2026-07-28 era: server/discover, per-request _meta, -32022, removed methods."""

from __future__ import annotations

import pytest
from server_helpers import (
    MODERN,
    handshake,
    meta,
    modern_request,
    request,
    run_handlers,
    send,
    server_for,
    take,
    take_events,
)

from mcp_sansio.server import MCPServer, Phase, ToolCallReceived
from mcp_sansio.types import ClientCapabilities, Implementation

SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1.0"}}


def _app() -> MCPServer:
    app = MCPServer("s", version="1.0", instructions="hi")
    app.add_tool(lambda: "done", name="work")
    return app


def test_discover_lists_the_versions_capabilities_identity_and_caching_hints() -> None:
    server = server_for(_app(), discover_ttl_ms=60_000)
    send(server, modern_request("d", "server/discover"))
    assert take(server) == [{"jsonrpc": "2.0", "id": "d", "result": {
        "supportedVersions": [MODERN], "capabilities": {"logging": {}, "tools": {"listChanged": True}},
        "instructions": "hi", "resultType": "complete", "_meta": SERVER_INFO, "ttlMs": 60_000,
        "cacheScope": "public",
    }}]
    assert server.session.handshake.phase is Phase.NEW  # no session was opened


def test_an_unsupported_version_is_refused_with_the_supported_ones() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "tools/list", version="1999-01-01"))
    assert take(server) == [{"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": [MODERN], "requested": "1999-01-01"},
    }}]


def test_a_handshake_version_in_meta_is_unsupported_there() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "tools/list", version="2025-11-25"))
    assert take(server)[0]["error"]["code"] == -32022


def test_missing_client_capabilities_are_invalid_params() -> None:
    server = server_for(_app())
    send(server, request(1, "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}))
    [answer] = take(server)
    assert answer["error"]["code"] == -32602 and "clientCapabilities" in answer["error"]["message"]


def test_malformed_client_capabilities_are_invalid_params() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "tools/list", capabilities={"sampling": 5}))
    assert take(server)[0]["error"]["code"] == -32602


@pytest.mark.parametrize("method", [
    "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
])
def test_methods_the_era_removed_are_not_found(method: str) -> None:
    server = server_for(_app())
    send(server, modern_request(1, method, {"uri": "x", "level": "info"}))
    assert take(server)[0]["error"] == {"code": -32601, "message": f"Method not found: {method}"}


def test_an_unknown_method_with_meta_is_not_found() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "nope/nope"))
    assert take(server)[0]["error"]["code"] == -32601


def test_stateless_requests_need_no_handshake_and_carry_their_identity() -> None:
    server = server_for(_app())
    send(server, modern_request(7, "tools/call", {"name": "work", "_meta": {"progressToken": "t"}},
                                capabilities={"sampling": {}},
                                **{"io.modelcontextprotocol/logLevel": "warning"}))
    [event] = take_events(server)
    assert isinstance(event, ToolCallReceived)
    info = event.request
    assert info.modern and info.protocol_version == MODERN and info.request_id == 7
    assert info.client_info == Implementation(name="tests", version="1")
    assert info.client_capabilities == ClientCapabilities(sampling={})
    assert (info.progress_token, info.log_level) == ("t", "warning")


def test_a_stateless_result_carries_its_type_and_the_server_identity() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "tools/call", {"name": "work"}))
    run_handlers(server)
    assert take(server) == [{"jsonrpc": "2.0", "id": 1, "result": {
        "content": [{"type": "text", "text": "done"}], "resultType": "complete", "_meta": SERVER_INFO}}]


def test_the_server_identity_can_be_left_out() -> None:
    server = server_for(_app(), server_info_in_results=False)
    send(server, modern_request(1, "tools/call", {"name": "work"}))
    run_handlers(server)
    text = [{"type": "text", "text": "done"}]
    assert take(server)[0]["result"] == {"content": text, "resultType": "complete"}


def test_a_result_meta_of_the_handler_is_kept_beside_the_identity() -> None:
    from mcp_sansio.types import CallToolResult

    app = _app()
    app.add_tool(lambda: CallToolResult(meta={"mine": 1}), name="meta")
    server = server_for(app)
    send(server, modern_request(1, "tools/call", {"name": "meta"}))
    run_handlers(server)
    assert take(server)[0]["result"]["_meta"] == {**SERVER_INFO, "mine": 1}


def test_lists_carry_caching_hints_in_the_stateless_era_only() -> None:
    server = server_for(_app(), list_ttl_ms=5000, list_cache_scope="private")
    send(server, modern_request(1, "tools/list"))
    result = take(server)[0]["result"]
    assert (result["ttlMs"], result["cacheScope"], result["resultType"]) == (5000, "private", "complete")
    handshake(server)
    send(server, request(2, "tools/list"))
    assert set(take(server)[0]["result"]) == {"tools"}


def test_both_eras_share_one_connection() -> None:
    server = server_for(_app())
    handshake(server)
    send(server, modern_request(1, "server/discover"), request(2, "ping"))
    first, second = take(server)
    assert first["result"]["supportedVersions"] == [MODERN] and second["result"] == {}


def test_meta_without_a_version_is_the_handshake_era() -> None:
    server = server_for(_app())
    send(server, request(1, "tools/list", {"_meta": {"progressToken": 1}}))
    assert "not initialized" in take(server)[0]["error"]["message"]


def test_the_request_meta_helper_builds_what_clients_send() -> None:
    assert meta()["io.modelcontextprotocol/protocolVersion"] == MODERN
