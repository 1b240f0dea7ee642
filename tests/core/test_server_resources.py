"""Resources: lists, templates, reads (static, by handler, by template), not-found by revision,
subscriptions in the handshake era and subscriptions/listen in 2026-07-28."""

from __future__ import annotations

from typing import Any

import pytest
from server_helpers import (
    MODERN,
    handshake,
    modern_request,
    request,
    run_handlers,
    send,
    server_for,
    take,
    take_events,
)

from mcp_sansio.server import MCPServer, ResourceReadReceived, ResourceSubscribed, ResourceUnsubscribed
from mcp_sansio.types import ReadResourceResult, ResourceContents

SUB_ID = "io.modelcontextprotocol/subscriptionId"


def _app() -> MCPServer:
    app = MCPServer("s")
    app.add_resource("test://static-text", text="hello", mime_type="text/plain", name="static")
    app.add_resource("test://static-binary", blob=b"\x89PNG", mime_type="image/png")

    @app.resource("test://dynamic")
    def dynamic() -> str:
        return "live"

    @app.resource("test://template/{id}/data", mime_type="application/json", ttl_ms=1000,
                  cache_scope="public")
    def item(id: int) -> dict[str, object]:
        return {"id": id}

    return app


def _ready(app: MCPServer | None = None, version: str = "2025-11-25", **config: Any) -> Any:
    server = server_for(app or _app(), **config)
    handshake(server, version)
    return server


def _read(server: Any, uri: str) -> dict[str, Any]:
    send(server, request(1, "resources/read", {"uri": uri}))
    run_handlers(server)
    [answer] = take(server)
    return answer


def test_resources_list_gives_the_fixed_resources() -> None:
    server = _ready()
    send(server, request(1, "resources/list"))
    resources = take(server)[0]["result"]["resources"]
    assert [r["uri"] for r in resources] == ["test://static-text", "test://static-binary", "test://dynamic"]
    assert resources[0] == {"uri": "test://static-text", "name": "static", "mimeType": "text/plain",
                            "size": 5}


def test_templates_list_gives_the_templates() -> None:
    server = _ready()
    send(server, request(1, "resources/templates/list"))
    assert take(server)[0]["result"]["resourceTemplates"] == [
        {"uriTemplate": "test://template/{id}/data", "name": "item", "mimeType": "application/json"}]


def test_resource_lists_page() -> None:
    server = _ready(page_size=2)
    send(server, request(1, "resources/list"))
    cursor = take(server)[0]["result"]["nextCursor"]
    send(server, request(2, "resources/list", {"cursor": cursor}), request(3, "resources/templates/list",
                                                                          {"cursor": cursor}))
    second, templates = take(server)
    assert [r["uri"] for r in second["result"]["resources"]] == ["test://dynamic"]
    assert templates["error"]["code"] == -32602  # a resources cursor is no templates cursor


@pytest.mark.parametrize("method", ["resources/list", "resources/templates/list", "resources/read",
                                    "resources/subscribe"])
def test_a_server_without_resources_has_no_resources_methods(method: str) -> None:
    server = _ready(MCPServer("empty"))
    send(server, request(1, method, {"uri": "x"}))
    code = take(server)[0]["error"]["code"]
    assert code == (-32002 if method in ("resources/read", "resources/subscribe") else -32601)


def test_a_static_resource_is_read_by_the_core() -> None:
    server = _ready()
    send(server, request(1, "resources/read", {"uri": "test://static-binary"}))
    assert take_events(server) == []
    assert take(server)[0]["result"] == {"contents": [
        {"uri": "test://static-binary", "mimeType": "image/png", "blob": "iVBORw=="}]}


def test_a_resource_handler_reads_it() -> None:
    assert _read(_ready(), "test://dynamic")["result"] == {"contents": [
        {"uri": "test://dynamic", "mimeType": "text/plain", "text": "live"}]}


def test_a_template_read_passes_its_variables_converted() -> None:
    server = _ready()
    send(server, request(1, "resources/read", {"uri": "test://template/42/data"}))
    [event] = take_events(server)
    assert isinstance(event, ResourceReadReceived)
    assert event.arguments == {"id": 42} and event.uri == "test://template/42/data"
    server.respond(event.call, {"id": 42}, now=0.0)
    assert take(server)[0]["result"] == {"contents": [
        {"uri": "test://template/42/data", "mimeType": "application/json", "text": '{"id":42}'}]}


def test_a_template_variable_that_does_not_convert_is_invalid_params() -> None:
    assert _read(_ready(), "test://template/abc/data")["error"]["code"] == -32602


@pytest.mark.parametrize(("version", "code"), [("2025-06-18", -32002), ("2025-11-25", -32002)])
def test_an_unknown_resource_is_not_found_as_the_revision_spells_it(version: str, code: int) -> None:
    assert _read(_ready(version=version), "test://none")["error"] == {
        "code": code, "message": "Resource not found", "data": {"uri": "test://none"}}


def test_an_unknown_resource_is_invalid_params_in_2026_07_28() -> None:
    server = server_for(_app())
    send(server, modern_request(1, "resources/read", {"uri": "test://none"}))
    assert take(server)[0]["error"] == {"code": -32602, "message": "Resource not found",
                                        "data": {"uri": "test://none"}}


@pytest.mark.parametrize(("value", "contents"), [
    (b"\x00", [{"uri": "test://dynamic", "mimeType": "application/octet-stream", "blob": "AA=="}]),
    (ResourceContents(uri="x://other", text="t"), [{"uri": "x://other", "text": "t"}]),
    (["a", b"\x01"], [{"uri": "test://dynamic", "mimeType": "text/plain", "text": "a"},
                      {"uri": "test://dynamic", "mimeType": "application/octet-stream", "blob": "AQ=="}]),
    (ReadResourceResult(contents=[]), []),
])
def test_what_a_resource_handler_returns_becomes_contents(value: object, contents: list[object]) -> None:
    app = MCPServer("s")
    app.add_resource("test://dynamic", lambda: value)
    assert _read(_ready(app), "test://dynamic")["result"]["contents"] == contents


def test_a_failing_resource_handler_is_an_internal_error() -> None:
    app = MCPServer("s")

    def broken() -> str:
        raise OSError("disk gone")

    app.add_resource("test://broken", broken)
    assert _read(_ready(app), "test://broken")["error"] == {"code": -32603, "message": "OSError: disk gone"}


def test_reads_carry_the_resource_caching_hints_in_2026_07_28() -> None:
    server = server_for(_app(), read_ttl_ms=10, read_cache_scope="private")
    send(server, modern_request(1, "resources/read", {"uri": "test://static-text"}),
         modern_request(2, "resources/read", {"uri": "test://template/1/data"}))
    static = take(server)[0]["result"]
    assert (static["ttlMs"], static["cacheScope"]) == (10, "private")
    run_handlers(server)
    templated = take(server)[0]["result"]
    assert (templated["ttlMs"], templated["cacheScope"]) == (1000, "public")


def test_subscribe_and_unsubscribe_in_the_handshake_era() -> None:
    server = _ready()
    send(server, request(1, "resources/subscribe", {"uri": "test://dynamic"}),
         request(2, "resources/subscribe", {"uri": "test://dynamic"}))
    assert [a["result"] for a in take(server)] == [{}, {}]
    assert take_events(server) == [ResourceSubscribed(uri="test://dynamic")]
    server.notify_resource_updated("test://dynamic")
    server.notify_resource_updated("test://static-text")
    assert take(server) == [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                             "params": {"uri": "test://dynamic"}}]
    send(server, request(3, "resources/unsubscribe", {"uri": "test://dynamic"}),
         request(4, "resources/unsubscribe", {"uri": "test://dynamic"}))
    assert [a["result"] for a in take(server)] == [{}, {}]
    assert take_events(server) == [ResourceUnsubscribed(uri="test://dynamic")]
    server.notify_resource_updated("test://dynamic")
    assert take(server) == []


def test_subscribing_to_an_unknown_resource_is_not_found() -> None:
    server = _ready()
    send(server, request(1, "resources/subscribe", {"uri": "test://none"}))
    assert take(server)[0]["error"]["code"] == -32002


def test_subscriptions_are_bounded() -> None:
    server = _ready(max_subscriptions=1)
    send(server, request(1, "resources/subscribe", {"uri": "test://dynamic"}),
         request(2, "resources/subscribe", {"uri": "test://static-text"}))
    assert take(server)[1]["error"] == {"code": -32603, "message": "too many subscriptions"}


def test_list_changed_goes_to_an_initialized_client() -> None:
    server = server_for(_app())
    server.notify_list_changed("resources")
    assert take(server) == []  # nobody to tell yet
    handshake(server)
    server.notify_list_changed("resources")
    server.notify_list_changed("tools")  # no tools: no capability, no notification
    assert take(server) == [{"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}]


def test_listen_acknowledges_what_it_will_send() -> None:
    server = server_for(_app())
    send(server, modern_request("L", "subscriptions/listen", {"notifications": {
        "toolsListChanged": True, "resourcesListChanged": True, "resourceSubscriptions": ["test://dynamic"]}}))
    method = "notifications/subscriptions/acknowledged"
    assert take(server) == [{"jsonrpc": "2.0", "method": method, "params": {
        "_meta": {SUB_ID: "L"},
        "notifications": {"resourcesListChanged": True, "resourceSubscriptions": ["test://dynamic"]},
    }}]


def test_listen_streams_get_what_they_asked_for_tagged() -> None:
    server = server_for(_app())
    send(server, modern_request("L", "subscriptions/listen", {"notifications": {
        "resourcesListChanged": True, "resourceSubscriptions": ["test://dynamic"]}}),
        modern_request("M", "subscriptions/listen", {"notifications": {}}))
    take(server)
    server.notify_list_changed("resources")
    server.notify_resource_updated("test://dynamic")
    server.notify_resource_updated("test://static-text")
    assert take(server) == [
        {"jsonrpc": "2.0", "method": "notifications/resources/list_changed",
         "params": {"_meta": {SUB_ID: "L"}}},
        {"jsonrpc": "2.0", "method": "notifications/resources/updated",
         "params": {"uri": "test://dynamic", "_meta": {SUB_ID: "L"}}},
    ]


def test_cancelling_a_listen_ends_it() -> None:
    server = server_for(_app())
    listen = modern_request("L", "subscriptions/listen", {"notifications": {"resourcesListChanged": True}})
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "L"}}
    send(server, listen, cancel)
    take(server)
    server.notify_list_changed("resources")
    assert take(server) == []


def test_a_listen_id_in_use_is_refused() -> None:
    server = server_for(_app())
    send(server, modern_request("L", "subscriptions/listen"), modern_request("L", "subscriptions/listen"))
    assert take(server)[1]["error"]["code"] == -32600


def test_listens_are_bounded() -> None:
    server = server_for(_app(), max_subscriptions=1)
    send(server, modern_request(1, "subscriptions/listen"), modern_request(2, "subscriptions/listen"))
    assert take(server)[1]["error"] == {"code": -32603, "message": "too many subscriptions"}


def test_a_server_with_nothing_to_notify_has_no_listen() -> None:
    server = server_for(MCPServer("empty"))
    send(server, modern_request(1, "subscriptions/listen"))
    assert take(server)[0]["error"]["code"] == -32601


def test_the_modern_version_constant_is_the_listen_era() -> None:
    assert MODERN == "2026-07-28"
