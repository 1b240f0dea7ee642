"""The Streamable HTTP server on raw HTTP: routing, checks, sessions, JSON and SSE, resumption."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pair import StepLoop
from server_http_helpers import MODERN_HEADERS, RawHttp, Response, http_server, modern_body

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.server import CallCancelled, Context, MCPServer, ToolCallReceived
from mcp_sansio.server.flow import AT_ONCE
from mcp_sansio.server.http import HttpConfig, HttpServer
from mcp_sansio.server.http11 import HttpLimits
from mcp_sansio.server.stores import MemoryEventStore, MemorySessionStore
from mcp_sansio_base.server import ServerRunner

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "c", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _app() -> MCPServer:
    app = MCPServer("s")
    app.add_tool(lambda: "done", name="work")
    app.add_resource("test://r", text="r")
    return app


def _session(server: HttpServer) -> tuple[RawHttp, str]:
    """A connection with an initialized handshake-era session, and its id."""
    conn = RawHttp(server)
    answer = conn.request(body=INIT)
    assert answer is not None and answer.status == 200
    session_id = answer.headers["mcp-session-id"]
    assert _status(conn.request(body=INITIALIZED, headers=_sid(session_id))) == 202
    return conn, session_id


def _get(server: HttpServer, session_id: str, last: str | None = None, conn: RawHttp | None = None
         ) -> Response | None:
    """A GET stream request of ``session_id`` (resuming after ``last``)."""
    headers = {"mcp-session-id": session_id} if last is None else {"mcp-session-id": session_id,
                                                                     "last-event-id": last}
    return (conn or RawHttp(server)).request("GET", headers=headers, accept="text/event-stream")


def _status(answer: Response | None) -> int:
    assert answer is not None
    return answer.status


def _sid(session_id: str) -> dict[str, str]:
    return {"mcp-session-id": session_id}


def _modern_headers(method: str, **extra: str) -> dict[str, str]:
    return {**MODERN_HEADERS, "mcp-method": method, **extra}


def test_initialize_opens_a_session_with_a_visible_ascii_id() -> None:
    server = http_server(_app())
    conn = RawHttp(server)
    answer = conn.request(body=INIT)
    assert answer is not None and answer.status == 200 and answer.complete
    assert answer.headers["content-type"] == "application/json"
    session_id = answer.headers["mcp-session-id"]
    assert all(0x21 <= ord(c) <= 0x7E for c in session_id) and len(session_id) == 32
    assert answer.json()["result"]["protocolVersion"] == "2025-11-25"


def test_session_ids_never_repeat_across_workers_or_restarts_sharing_a_secret() -> None:
    # Two workers (or one restarted) with the deployment's one secret: ids come from each
    # process's own entropy, so an id seen before names nothing in another process.
    def ids(entropy: bytes) -> list[str]:
        server = HttpServer(_app(), secret=b"k" * 32, entropy=entropy, config=HttpConfig.loopback())
        return [_session(server)[1] for _ in range(3)]

    first, second = ids(b"a" * 32), ids(b"b" * 32)
    assert len(set(first + second)) == 6


def test_the_entropy_must_be_long_and_not_the_secret() -> None:
    with pytest.raises(LocalProtocolError, match="entropy"):
        HttpServer(_app(), secret=b"k" * 32, entropy=b"k" * 32)
    with pytest.raises(LocalProtocolError, match="entropy"):
        HttpServer(_app(), secret=b"k" * 32, entropy=b"e" * 31)


def test_a_session_serves_its_requests_as_json() -> None:
    server = http_server(_app())
    conn, session_id = _session(server)
    answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                          headers={"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"})
    assert answer is not None and answer.json()["result"]["tools"][0]["name"] == "work"


def test_a_request_of_no_session_is_refused() -> None:
    conn = RawHttp(http_server(_app()))
    answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert answer is not None and answer.status == 400 and answer.json()["error"]["code"] == -32000


def test_an_unknown_session_is_not_found() -> None:
    conn = RawHttp(http_server(_app()))
    answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                          headers={"mcp-session-id": "nope"})
    assert answer is not None and answer.status == 404
    assert answer.json() == {"jsonrpc": "2.0", "id": 2,
                             "error": {"code": -32001, "message": "Session not found"}}


def test_an_unsupported_protocol_version_header_is_refused_in_a_session() -> None:
    server = http_server(_app())
    conn, session_id = _session(server)
    answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                          headers={"mcp-session-id": session_id, "mcp-protocol-version": "1999-01-01"})
    assert answer is not None and answer.status == 400


def test_delete_ends_the_session() -> None:
    server = http_server(_app())
    conn, session_id = _session(server)
    assert _status(conn.request("DELETE", headers=_sid(session_id))) == 200
    answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=_sid(session_id))
    assert answer is not None and answer.status == 404
    assert _status(conn.request("DELETE", headers=_sid(session_id))) == 404


def test_delete_and_get_without_a_session_are_not_allowed() -> None:
    conn = RawHttp(http_server(_app()))
    assert conn.request("DELETE").status == 405  # type: ignore[union-attr]
    answer = conn.request("GET", accept="text/event-stream")
    assert answer is not None and answer.status == 405 and answer.headers["allow"] == "POST"


@pytest.mark.parametrize(("method", "status"), [("PUT", 405), ("PATCH", 405)])
def test_other_methods_are_not_allowed(method: str, status: int) -> None:
    answer = RawHttp(http_server(_app())).request(method)
    assert answer is not None and answer.status == status and answer.headers["allow"] == "GET, POST, DELETE"


def test_another_path_is_not_found() -> None:
    assert _status(RawHttp(http_server(_app())).request(body=INIT, target="/other")) == 404


@pytest.mark.parametrize(("headers", "status"), [
    ({"host": "evil.example.com"}, 421),
    ({"origin": "http://evil.example.com"}, 403),
    ({"origin": "null"}, 403),
    ({"origin": "ftp://localhost"}, 403),
    ({"origin": "http://localhost/path"}, 403),
])
def test_dns_rebinding_is_refused(headers: dict[str, Any], status: int) -> None:
    answer = RawHttp(http_server(_app())).request(body=INIT, headers=headers)
    assert answer is not None and answer.status == status


def test_a_repeated_origin_is_refused_whichever_comes_last() -> None:
    # A proxy judging the first Origin and a server reading the last would disagree.
    for origins in (["http://evil.example", "http://localhost"], ["http://localhost", "http://evil.example"]):
        answer = RawHttp(http_server(_app())).request(
            body=INIT, repeated=[("origin", value) for value in origins])
        assert answer is not None and answer.status == 403
        assert answer.json()["error"]["code"] == -32600
        assert "Origin header is repeated" in answer.json()["error"]["message"]


@pytest.mark.parametrize(("name", "value"), [
    ("mcp-session-id", "x"), ("mcp-protocol-version", "2025-11-25"),
    ("authorization", "Bearer t"), ("last-event-id", "1"), ("content-type", "application/json"),
    ("mcp-method", "initialize"), ("mcp-name", "x"), ("mcp-param-region", "x"),
])
def test_a_header_naming_one_thing_repeated_gets_400_naming_it(name: str, value: str) -> None:
    answer = RawHttp(http_server(_app())).request(body=INIT, headers={name: value}, repeated=[(name, value)])
    assert answer is not None and answer.status == 400
    error = answer.json()["error"]
    assert error["code"] == -32600 and f"{name} header is repeated" in error["message"].lower()


def test_a_repeated_host_over_bytes_gets_400_from_h11() -> None:
    conn = RawHttp(http_server(_app()))
    conn.send_raw(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n")
    assert conn.server.data_to_send(conn.id).startswith(b"HTTP/1.1 400 ")


def test_a_list_valued_header_repeated_is_joined_not_refused() -> None:
    answer = RawHttp(http_server(_app())).request(body=INIT, accept="application/json",
                                                  repeated=[("accept", "text/event-stream")])
    assert answer is not None and answer.status == 200


def test_repeated_identical_content_lengths_reach_the_server_as_one() -> None:
    # h11 folds equal Content-Length fields into one and refuses differing ones (400).
    conn = RawHttp(http_server(_app()))
    body = json.dumps(INIT).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()
    conn.send_raw(head + body)
    answer = conn.read()
    assert answer is not None and answer.status == 200
    other = RawHttp(http_server(_app()))
    other.send_raw(head.replace(f"Content-Length: {len(body)}\r\n\r\n".encode(), b"Content-Length: 1\r\n\r\n")
                   + body)
    assert other.server.data_to_send(other.id).startswith(b"HTTP/1.1 400 ")


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1", "[::1]:1234", "LOCALHOST"])
def test_loopback_names_are_accepted(host: str) -> None:
    answer = RawHttp(http_server(_app())).request(body=INIT, headers={"host": host,
                                                                      "origin": f"http://{host}"})
    assert answer is not None and answer.status == 200


def test_without_allow_lists_any_host_passes_but_no_foreign_origin() -> None:
    server = HttpServer(_app(), secret=b"s" * 16, entropy=b"e" * 32, config=HttpConfig())
    plain = RawHttp(server).request(body=INIT, headers={"host": "example.com"})
    assert plain is not None and plain.status == 200
    foreign = RawHttp(server).request(body=INIT, headers={"host": "example.com", "origin": "https://x.example"})
    assert foreign is not None and foreign.status == 403


def test_a_public_bind_refuses_even_its_own_origin_when_the_host_is_unchecked() -> None:
    # With no Host allow-list, a page "of this server" may be a DNS-rebinding page.
    server = HttpServer(_app(), secret=b"s" * 16, entropy=b"e" * 32, config=HttpConfig())
    answer = RawHttp(server).request(body=INIT, headers={"host": "evil.example", "origin": "http://evil.example"})
    assert answer is not None and answer.status == 403


@pytest.mark.parametrize(("origin", "status"), [
    ("https://app.example.com", 200),
    ("HTTPS://App.Example.com:443", 200),
    ("https://app.example.com:8443", 403),
    ("http://app.example.com", 403),
    ("https://app.example.com.evil.example", 403),
])
def test_allowed_origins_compare_scheme_host_and_port(origin: str, status: int) -> None:
    config = HttpConfig(allowed_origins=("https://app.example.com",))
    answer = RawHttp(HttpServer(_app(), secret=b"s" * 16, entropy=b"e" * 32, config=config)).request(
        body=INIT, headers={"host": "mcp.example.com", "origin": origin})
    assert answer is not None and answer.status == status


@pytest.mark.parametrize("origin", ["https://localhost:1", "http://localhost:3000", "http://127.0.0.1:9",
                                    "https://localhost"])
def test_loopback_refuses_a_page_on_another_loopback_port_or_scheme(origin: str) -> None:
    answer = RawHttp(http_server(_app())).request(body=INIT, headers={"host": "localhost:8000",
                                                                      "origin": origin})
    assert answer is not None and answer.status == 403


def test_allowed_origins_none_is_an_explicit_opt_out() -> None:
    server = HttpServer(_app(), secret=b"s" * 16, entropy=b"e" * 32, config=HttpConfig(allowed_origins=None))
    answer = RawHttp(server).request(body=INIT, headers={"host": "example.com", "origin": "https://x.example"})
    assert answer is not None and answer.status == 200


@pytest.mark.parametrize("entry", ["localhost", "https://app.example.com/path", "null", "ftp://x.example"])
def test_an_allowed_origin_that_is_no_origin_is_refused_at_configuration(entry: str) -> None:
    with pytest.raises(LocalProtocolError, match="allowed_origins takes origins"):
        HttpConfig(allowed_origins=(entry,))


@pytest.mark.parametrize(("accept", "status"), [("text/html", 406), ("image/*", 406)])
def test_a_client_that_takes_neither_json_nor_sse_is_refused(accept: str, status: int) -> None:
    assert _status(RawHttp(http_server(_app())).request(body=INIT, accept=accept)) == status


def test_a_body_that_is_not_json_content_is_refused() -> None:
    answer = RawHttp(http_server(_app())).request(body=INIT, headers={"content-type": "text/plain"})
    assert answer is not None and answer.status == 415


@pytest.mark.parametrize(("raw", "code"), [
    (b"{not json", -32700), (b"[1]", -32600), (b'{"params": 5}', -32600)])
def test_a_body_that_is_no_message_is_a_bad_request(raw: bytes, code: int) -> None:
    answer = RawHttp(http_server(_app())).request(raw_body=raw)
    assert answer is not None and answer.status == 400 and answer.json()["error"]["code"] == code


def test_accept_star_takes_json() -> None:
    answer = RawHttp(http_server(_app())).request(body=INIT, accept="*/*")
    assert answer is not None and answer.headers["content-type"] == "application/json"


def test_a_client_taking_only_sse_gets_sse_with_a_priming_event() -> None:
    answer = RawHttp(http_server(_app(), sse_retry_ms=2500)).request(body=INIT, accept="text/event-stream")
    assert answer is not None and answer.headers["content-type"] == "text/event-stream" and answer.complete
    assert answer.events[0] is None and b"retry: 2500" in answer.body
    assert answer.events[1]["result"]["protocolVersion"] == "2025-11-25"


def test_response_mode_sse_streams_every_answer() -> None:
    answer = RawHttp(http_server(_app(), response_mode="sse")).request(body=INIT)
    assert answer is not None and answer.headers["content-type"] == "text/event-stream"


def test_a_stateless_request_is_served_without_a_session() -> None:
    conn = RawHttp(http_server(_app()))
    answer = conn.request(body=modern_body(1, "tools/list"), headers=_modern_headers("tools/list"))
    assert answer is not None and answer.status == 200 and "mcp-session-id" not in answer.headers
    assert answer.json()["result"]["resultType"] == "complete"


@pytest.mark.parametrize(("headers", "problem"), [
    ({"mcp-method": "tools/list"}, "MCP-Protocol-Version header is missing"),
    ({**MODERN_HEADERS, "mcp-protocol-version": "2025-11-25", "mcp-method": "tools/list"}, "differs"),
    (MODERN_HEADERS, "Mcp-Method header is missing"),
    ({**MODERN_HEADERS, "mcp-method": "TOOLS/LIST"}, "does not match the method"),
])
def test_stateless_headers_must_match_the_body(headers: dict[str, str], problem: str) -> None:
    answer = RawHttp(http_server(_app())).request(body=modern_body(1, "tools/list"), headers=headers)
    assert answer is not None and answer.status == 400
    error = answer.json()["error"]
    assert error["code"] == -32020 and problem in error["message"]


def test_header_names_are_case_insensitive_and_values_trimmed() -> None:
    server = http_server(_app())
    conn = RawHttp(server)
    body = json.dumps(modern_body(1, "tools/list")).encode()
    conn.send_raw(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                  b"MCP-PROTOCOL-VERSION: 2026-07-28\r\nMCP-METHOD:   tools/list  \r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    answer = conn.read()
    assert answer is not None and answer.status == 200


@pytest.mark.parametrize(("name", "ok"), [("work", True), ("=?base64?d29yaw==?=", True), ("other", False),
                                          ("=?base64?d29yaw?=", False), (None, False)])
def test_the_name_header_is_checked_decoded(name: str | None, ok: bool) -> None:
    headers = _modern_headers("tools/call")
    if name is not None:
        headers["mcp-name"] = name
    server, _, runner = _running(_app())
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/call", {"name": "work"}), headers=headers)
    runner.pump()
    answer = conn.read()
    assert answer is not None and (answer.status == 200) is ok


def _header_tool() -> MCPServer:
    app = MCPServer("s")
    app.add_tool(lambda **arguments: "ok", name="q", input_schema={"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"}}})
    return app


@pytest.mark.parametrize(("arguments", "headers", "ok"), [
    ({"region": "eu"}, {"mcp-param-region": "eu"}, True),
    ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVsbG8=?="}, True),
    ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVsbG8?="}, False),
    ({"region": "Hello"}, {"mcp-param-region": "=?base64?SGVs!!!bG8=?="}, False),
    ({"region": "eu"}, {}, False),
    ({"region": "eu"}, {"mcp-param-region": "us"}, False),
    ({"region": None}, {}, True),
    ({}, {}, True),
    ({"count": 42}, {"mcp-param-count": "42.0"}, True),
    ({"count": 42}, {"mcp-param-count": "x"}, False),
    ({"count": 2**60}, {"mcp-param-count": str(2**60)}, False),
    ({"flag": True}, {"mcp-param-flag": "true"}, True),
    ({"flag": False}, {"mcp-param-flag": "true"}, False),
    ({"region": 5}, {"mcp-param-region": "5"}, True),  # the header mirrors the value as sent
])
def test_param_headers_mirror_annotated_arguments(arguments: dict[str, object], headers: dict[str, str],
                                                  ok: bool) -> None:
    server, _, runner = _running(_header_tool())
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/call", {"name": "q", "arguments": arguments}),
                 headers={**_modern_headers("tools/call", **{"mcp-name": "q"}), **headers})
    runner.pump()
    answer = conn.read()
    assert answer is not None and (answer.status < 400) is ok


def test_a_stateless_request_without_meta_but_the_header_is_invalid_params() -> None:
    conn = RawHttp(http_server(_app()))
    answer = conn.request(body={"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}},
                          headers=_modern_headers("server/discover"))
    assert answer is not None and answer.status == 400 and answer.json()["error"]["code"] == -32602


def test_an_unsupported_stateless_version_is_the_sessions_to_refuse() -> None:
    body = modern_body(1, "tools/list")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"  # type: ignore[index]
    answer = RawHttp(http_server(_app())).request(body=body, headers={
        "mcp-protocol-version": "2099-01-01", "mcp-method": "tools/list"})
    assert answer is not None and answer.status == 400 and answer.json()["error"]["code"] == -32022


def test_a_removed_method_is_a_404_in_the_stateless_era() -> None:
    answer = RawHttp(http_server(_app())).request(body=modern_body(1, "ping"),
                                                  headers=_modern_headers("ping"))
    assert answer is not None and answer.status == 404 and answer.json()["error"]["code"] == -32601


def test_a_notification_is_accepted_with_202() -> None:
    server = http_server(_app())
    conn, session_id = _session(server)
    answer = conn.request(body={"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                          headers=_sid(session_id))
    assert answer is not None and answer.status == 202 and answer.body == b""


def test_an_invalid_envelope_in_a_session_gets_its_error() -> None:
    server = http_server(_app())
    conn, session_id = _session(server)
    answer = conn.request(body={"jsonrpc": "1.0", "method": 5}, headers=_sid(session_id))
    assert answer is not None and answer.status == 400


def _running(app: MCPServer) -> tuple[HttpServer, StepLoop, ServerRunner]:
    server = http_server(app)
    loop = StepLoop(lambda: 0.0)
    return server, loop, ServerRunner(server, loop)


@pytest.mark.parametrize(("accept", "kind", "events"), [
    ("application/json, text/event-stream", "text/event-stream", ["notifications/progress", "result"]),
    ("application/json", "application/json", []),  # a JSON-only client loses progress, gets its answer
])
def test_progress_before_the_answer_makes_the_response_sse_where_the_client_takes_it(
        accept: str, kind: str, events: list[str]) -> None:
    app = MCPServer("s")

    @app.tool()
    def counted(ctx: Context) -> str:
        ctx.report_progress(1, 2)
        return "done"

    server, _, runner = _running(app)
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/call", {"name": "counted", "_meta": {"progressToken": "t"}}),
                 headers=_modern_headers("tools/call", **{"mcp-name": "counted"}), accept=accept)
    runner.pump()
    answer = conn.read()
    assert answer is not None and answer.headers["content-type"] == kind and answer.complete
    assert [e.get("method", "result") for e in answer.events] == events
    if not events:
        assert answer.json()["result"]["content"][0]["text"] == "done"


def test_closing_a_stateless_stream_cancels_its_request() -> None:
    server = http_server(_app())
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/call", {"name": "work"}),
                 headers=_modern_headers("tools/call", **{"mcp-name": "work"}))
    call_event = server.next_event()
    assert isinstance(call_event, ToolCallReceived)
    server.connection_lost(conn.id, 1.0)
    assert server.next_event() == CallCancelled(call=call_event.call, reason="the connection was lost")


def test_a_handshake_era_stream_left_open_is_not_cancelled() -> None:
    server = http_server(_app())
    conn, session_id = _session(server)
    while server.next_event() is not None:
        pass  # the handshake's
    conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "work"}},
                 headers=_sid(session_id))
    call_event = server.next_event()
    assert isinstance(call_event, ToolCallReceived)
    server.receive_data(conn.id, b"", 1.0)
    assert server.next_event() is None
    server.respond(call_event.call, "late", now=2.0)  # nowhere to go, and no error


def test_the_get_stream_carries_messages_of_no_request() -> None:
    server = http_server(_app())
    _, session_id = _session(server)
    stream = RawHttp(server)
    answer = _get(server, session_id, conn=stream)
    assert answer is not None and answer.status == 200 and answer.events == [None] and answer.last_id
    server.notify_list_changed("tools")
    stream.read()
    assert answer.events[1:] == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    second = _get(server, session_id)
    assert second is not None and second.status == 409


def test_a_get_needs_an_event_stream_accept() -> None:
    server = http_server(_app())
    _, session_id = _session(server)
    answer = RawHttp(server).request("GET", headers=_sid(session_id), accept="application/json")
    assert answer is not None and answer.status == 406


def test_a_get_for_an_unknown_session_is_not_found() -> None:
    answer = RawHttp(http_server(_app())).request("GET", headers={"mcp-session-id": "x"},
                                                  accept="text/event-stream")
    assert answer is not None and answer.status == 404


def test_a_closed_get_stream_frees_its_place() -> None:
    server = http_server(_app())
    _, session_id = _session(server)
    stream = RawHttp(server)
    _get(server, session_id, conn=stream)
    server.connection_lost(stream.id, 1.0)
    again = _get(server, session_id)
    assert again is not None and again.status == 200


def _slow(app: MCPServer) -> None:
    @app.tool()
    async def slow(ctx: Context) -> str:
        ctx.close_sse_stream()
        return "after the reconnection"


def test_a_closed_stream_is_resumed_with_last_event_id() -> None:
    app = _app()
    _slow(app)
    server, loop, runner = _running(app)
    conn, session_id = _session(server)
    call = conn.request(body={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow"}},
                        headers=_sid(session_id))
    runner.pump()
    assert call is None
    loop.run_ready()
    first = conn.read()
    assert first is not None and first.complete and first.events == [None] and first.last_id
    resumed = _get(server, session_id, first.last_id)
    assert resumed is not None and resumed.complete
    assert resumed.events[-1]["result"]["content"][0]["text"] == "after the reconnection"


def test_a_resumption_before_the_answer_gets_it_live() -> None:
    app = _app()
    server, loop, runner = _running(app)
    gate = loop.future()

    @app.tool()
    async def slow(ctx: Context) -> str:
        ctx.close_sse_stream()
        await gate
        return "after the reconnection"

    conn, session_id = _session(server)
    conn.request(body={"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow"}},
                 headers=_sid(session_id))
    runner.pump()
    loop.run_ready()
    first = conn.read()
    assert first is not None
    resumed_conn = RawHttp(server)
    resumed = _get(server, session_id, first.last_id, conn=resumed_conn)
    assert resumed is not None and not resumed.complete
    gate.set_result(None)
    loop.run_ready()
    runner.pump()
    resumed_conn.read()
    assert resumed.complete and resumed.events[-1]["id"] == 7


def test_an_unknown_last_event_id_is_not_found() -> None:
    server = http_server(_app())
    _, session_id = _session(server)
    for last in ("9-9", "garbage"):
        answer = _get(server, session_id, last)
        assert answer is not None and answer.status == 404


def test_closing_a_stream_that_is_not_sse_says_so() -> None:
    app = MCPServer("s")

    @app.tool()
    def tries(ctx: Context) -> str:
        return f"closed={ctx.close_sse_stream()}"

    server, _, runner = _running(app)
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/call", {"name": "tries"}),
                 headers=_modern_headers("tools/call", **{"mcp-name": "tries"}))
    runner.pump()
    answer = conn.read()
    assert answer is not None and answer.json()["result"]["content"][0]["text"] == "closed=False"


def test_an_idle_session_expires() -> None:
    server = http_server(_app(), session_idle_timeout=10.0)
    conn, session_id = _session(server)
    assert server.next_deadline() is not None
    server.handle_timeout(11.0)
    answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=_sid(session_id),
                          now=11.0)
    assert answer is not None and answer.status == 404


def _opened(server: HttpServer, peer: str | None = None, *, use: bool = False) -> str:
    """A session opened from ``peer`` (and used: one ping) on a connection of its own."""
    conn = RawHttp(server, peer=peer)
    answer = conn.request(body=INIT)
    assert answer is not None and answer.status == 200, answer and answer.body
    session_id = answer.headers["mcp-session-id"]
    if use:
        assert _status(conn.request(body={"jsonrpc": "2.0", "id": 9, "method": "ping"},
                                    headers=_sid(session_id))) == 200
    return session_id


def _ping(server: HttpServer, session_id: str, peer: str | None = None) -> int:
    return _status(RawHttp(server, peer=peer).request(body={"jsonrpc": "2.0", "id": 5, "method": "ping"},
                                                      headers=_sid(session_id)))


def test_an_abandoned_session_gives_its_place_to_a_new_client() -> None:
    server = http_server(_app(), max_sessions=1)
    abandoned = _opened(server, "10.0.0.1")
    fresh = _opened(server, "10.0.0.2")
    assert _ping(server, abandoned) == 404 and _ping(server, fresh) == 200


def test_a_session_in_use_is_never_ended_for_a_new_one() -> None:
    server = http_server(_app(), max_sessions=1)
    used = _opened(server, "10.0.0.1", use=True)
    answer = RawHttp(server, peer="10.0.0.2").request(body=INIT)
    assert answer is not None and answer.status == 503
    assert _ping(server, used) == 200


def test_a_thousand_abandoned_initializes_lock_nobody_out() -> None:
    server = http_server(_app())
    for _ in range(1100):
        _opened(server, "10.6.6.6")
    assert _ping(server, _opened(server, "10.0.0.2", use=True)) == 200


def test_one_peer_past_its_limit_ends_its_own_oldest_idle_session_not_others() -> None:
    server = http_server(_app(), max_sessions_per_peer=3)
    other = _opened(server, "10.0.0.2", use=True)
    mine = [_opened(server, "10.6.6.6", use=True) for _ in range(3)]
    newest = _opened(server, "10.6.6.6")
    assert [_ping(server, s) for s in mine] == [404, 200, 200]
    assert _ping(server, newest) == 200 and _ping(server, other) == 200


def test_a_peer_whose_sessions_are_all_busy_gets_429() -> None:
    app = _app()

    @app.tool()
    async def wait() -> str:
        raise AssertionError("never completes in this test")

    server = http_server(app, max_sessions_per_peer=1)
    session_id = _opened(server, "10.6.6.6")
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
    RawHttp(server, peer="10.6.6.6").request(body=call, headers=_sid(session_id))
    answer = RawHttp(server, peer="10.6.6.6").request(body=INIT)
    assert answer is not None and answer.status == 429
    assert "too many sessions" in answer.json()["error"]["message"]


def test_a_new_connection_past_the_limit_displaces_the_idle_one() -> None:
    server = http_server(_app(), max_connections=1)
    idle = RawHttp(server)
    fresh = RawHttp(server)
    idle.read()
    assert idle.closed and _status(fresh.request(body=INIT)) == 200


def test_a_new_connection_past_the_limit_is_closed_when_none_is_idle() -> None:
    server = http_server(_app(), max_connections=1)
    busy = RawHttp(server)
    busy.send_raw(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 10\r\n\r\n{")
    extra = RawHttp(server)
    extra.read()
    busy.read()
    assert extra.closed and not busy.closed


def test_slow_requests_of_the_peer_holding_the_most_connections_make_room_for_another_client() -> None:
    # slowloris: every connection of the flood is still sending its head (or body), so none is
    # idle; another client's connection takes the place of the flood's oldest, not the flood's.
    server = http_server(_app(), max_connections=3)
    flood = [RawHttp(server, peer="10.6.6.6") for _ in range(3)]
    flood[0].send_raw(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 10\r\n\r\n{")
    for conn in flood[1:]:
        conn.send_raw(b"POST /mcp HTTP/1.1\r\nX-Slow: ")
    victim = RawHttp(server, peer="10.0.0.2")
    for conn in [victim, *flood]:
        conn.read()
    assert not victim.closed and [conn.closed for conn in flood] == [False, True, False]
    assert _status(victim.request(body=INIT)) == 200


def test_a_request_being_answered_is_never_cut_for_another_client() -> None:
    server = http_server(_app(), max_connections=1)
    busy = RawHttp(server, peer="10.6.6.6")
    busy.request(body=modern_body(1, "tools/call", {"name": "work"}),
                 headers=_modern_headers("tools/call", **{"mcp-name": "work"}))
    victim = RawHttp(server, peer="10.0.0.2")
    victim.read()
    busy.read()
    assert victim.closed and not busy.closed


def test_a_connection_flood_from_one_peer_displaces_only_its_own_idle_connections() -> None:
    server = http_server(_app(), max_connections_per_peer=2)
    victim = RawHttp(server, peer="10.0.0.2")
    flood = [RawHttp(server, peer="10.6.6.6") for _ in range(50)]
    for conn in [victim, *flood]:
        conn.read()
    assert not victim.closed and sum(not conn.closed for conn in flood) == 2
    assert _status(victim.request(body=INIT)) == 200


def test_a_client_whose_bytes_wait_is_not_displaced_by_connections_accepted_after_it() -> None:
    # A client sharing its address with a flood connects and sends at once; the driver
    # accepts it, then more of the flood (accepted in the same batch, or whose handshake the
    # kernel completed late), before its bytes are read. Its bytes were seen waiting, so it
    # is no idle connection: the flood's own go first.
    server = http_server(_app(), max_connections_per_peer=2)
    flood = [RawHttp(server, peer="10.6.6.6") for _ in range(2)]
    victim = RawHttp(server, peer="10.6.6.6", sending=True)
    flood += [RawHttp(server, peer="10.6.6.6") for _ in range(5)]
    for conn in [victim, *flood]:
        conn.read()
    assert not victim.closed and sum(not conn.closed for conn in flood) == 1
    assert _status(victim.request(body=INIT)) == 200


def test_a_session_is_rebuilt_from_a_shared_store() -> None:
    store, events = MemorySessionStore(), MemoryEventStore()
    first = HttpServer(_app(), secret=b"k" * 32, entropy=b"e" * 32, config=HttpConfig.loopback(),
                       sessions=store, events=events)
    _, session_id = _session(first)
    other = HttpServer(_app(), secret=b"k" * 32, entropy=b"f" * 32, config=HttpConfig.loopback(),
                       sessions=store, events=events)
    answer = RawHttp(other).request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                                    headers=_sid(session_id))
    assert answer is not None and answer.status == 200 and answer.json()["result"]["tools"]
    assert store.load(session_id) is not None


def test_a_stored_session_is_not_rebuilt_past_the_limit() -> None:
    store = MemorySessionStore()
    first = HttpServer(_app(), secret=b"k" * 32, entropy=b"e" * 32, config=HttpConfig.loopback(),
                       sessions=store)
    _, session_id = _session(first)
    full = HttpServer(_app(), secret=b"k" * 32, entropy=b"f" * 32,
                      config=HttpConfig.loopback(max_sessions=0), sessions=store)
    answer = RawHttp(full).request(body={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                                   headers=_sid(session_id))
    assert answer is not None and answer.status == 404


def test_close_ends_every_session_and_connection() -> None:
    server = http_server(_app())
    _, session_id = _session(server)
    stream = RawHttp(server)
    _get(server, session_id, conn=stream)
    server.close(5.0)
    stream.read()
    assert stream.closed
    assert list(server.sessions()) == [server.modern]


def test_close_drops_a_stateless_request_under_way() -> None:
    server = http_server(_app())
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/call", {"name": "work"}),
                 headers=_modern_headers("tools/call", **{"mcp-name": "work"}))
    assert conn.id in server.connections_with_data() or server.connections_with_data() == []
    server.close(1.0)
    conn.read()
    assert conn.closed


def test_messages_for_a_gone_exchange_are_dropped() -> None:
    server = http_server(_app())
    server.send(None, b"{}")
    server.send(99, b"{}")
    server.finish(None, b"{}", 200, 0.0)
    server.finish(99, b"{}", 200, 0.0)
    assert server.connections_with_data() == []


def test_a_stream_can_be_closed_again_after_its_resumption() -> None:
    app = _app()
    server, loop, runner = _running(app)
    gate = loop.future()
    closed: list[bool] = []

    @app.tool()
    async def polled(ctx: Context) -> str:
        ctx.report_progress(1)  # the stream is SSE already
        closed.append(ctx.close_sse_stream())
        await gate
        closed.append(ctx.close_sse_stream())
        return "done"

    conn, session_id = _session(server)
    conn.request(body={"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "polled", "_meta": {"progressToken": "p"}}},
                 headers=_sid(session_id))
    runner.pump()
    loop.run_ready()
    first = conn.read()
    assert first is not None and first.complete and first.events[1]["method"] == "notifications/progress"
    again = RawHttp(server)
    resumed = _get(server, session_id, first.last_id, conn=again)
    assert resumed is not None and not resumed.complete
    gate.set_result(None)
    loop.run_ready()
    runner.pump()
    again.read()
    assert closed == [True, True] and resumed.complete and resumed.events == []
    last = _get(server, session_id, first.last_id)
    assert last is not None and last.complete and last.events[-1]["result"]["content"][0]["text"] == "done"


def test_a_stream_cannot_be_closed_once_its_connection_is_gone() -> None:
    app = _app()
    server, loop, runner = _running(app)
    gate = loop.future()
    closed: list[bool] = []

    @app.tool()
    async def late(ctx: Context) -> str:
        ctx.report_progress(1)
        await gate
        ctx.report_progress(2)  # kept for a resumption
        closed.append(ctx.close_sse_stream())
        return "done"

    conn, session_id = _session(server)
    conn.request(body={"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                       "params": {"name": "late", "_meta": {"progressToken": "p"}}},
                 headers=_sid(session_id))
    runner.pump()
    loop.run_ready()
    first = conn.read()
    assert first is not None
    server.connection_lost(conn.id, 1.0)
    gate.set_result(None)
    loop.run_ready()
    runner.pump()
    assert closed == [False]
    resumed = _get(server, session_id, first.last_id)
    assert resumed is not None and resumed.complete
    assert [e["params"]["progress"] if "method" in e else e["id"] for e in resumed.events] == [2, 7]


def test_the_get_stream_is_resumed_and_a_stale_one_replaced() -> None:
    server = http_server(_app())
    _, session_id = _session(server)
    first = RawHttp(server)
    opened = _get(server, session_id, conn=first)
    assert opened is not None
    primed = opened.last_id
    server.notify_list_changed("tools")
    server.connection_lost(first.id, 1.0)
    second = RawHttp(server)
    _get(server, session_id, conn=second)  # primes again
    server.notify_list_changed("resources")
    third = RawHttp(server)
    resumed = _get(server, session_id, primed, conn=third)
    assert resumed is not None and not resumed.complete
    assert [e["method"] for e in resumed.events] == ["notifications/tools/list_changed",
                                                     "notifications/resources/list_changed"]
    second.read()
    assert second.closed  # the stale stream gave way
    server.notify_list_changed("tools")
    third.read()
    assert len(resumed.events) == 3 and resumed.events[-1]["method"] == "notifications/tools/list_changed"


def test_a_stream_dropped_for_not_reading_ends_quietly() -> None:
    app = MCPServer("s")

    @app.tool()
    def big(ctx: Context) -> str:
        ctx.report_progress(1)  # the stream begins: the answer is not all there is
        return "x" * 5000

    server = http_server(app, response_mode="sse", limits=HttpLimits(max_buffer_bytes=1000))
    conn, session_id = _session(server)
    while server.next_event() is not None:
        pass
    runner = ServerRunner(server, StepLoop(lambda: 0.0))
    params = {"name": "big", "_meta": {"progressToken": 1}}
    conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params},
                 headers=_sid(session_id))
    runner.pump()
    conn.read()
    assert conn.closed


def test_a_json_only_handshake_client_gets_progress_on_its_get_stream() -> None:
    app = MCPServer("s")

    @app.tool()
    def counted(ctx: Context) -> str:
        ctx.report_progress(1)
        return "done"

    server, _, runner = _running(app)
    conn, session_id = _session(server)
    stream = RawHttp(server)
    opened = _get(server, session_id, conn=stream)
    assert opened is not None
    answer = conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                "params": {"name": "counted", "_meta": {"progressToken": 1}}},
                          headers=_sid(session_id), accept="application/json")
    runner.pump()
    answer = conn.read()
    stream.read()
    assert answer is not None and answer.json()["result"]["content"][0]["text"] == "done"
    assert opened.events[-1]["method"] == "notifications/progress"


def test_finished_streams_are_remembered_boundedly() -> None:
    server = http_server(_app(), response_mode="sse")
    conn, session_id = _session(server)
    for rid in range(1030):
        answer = conn.request(body={"jsonrpc": "2.0", "id": rid + 2, "method": "ping"},
                              headers=_sid(session_id))
        assert answer is not None and answer.complete
    legacy = next(iter(server._legacy.values()))
    assert len(legacy.finished_streams) == 1024


def test_a_failed_initialize_stores_nothing() -> None:
    store = MemorySessionStore()
    server = HttpServer(_app(), secret=b"k" * 32, entropy=b"e" * 32, config=HttpConfig.loopback(),
                        sessions=store)
    answer = RawHttp(server).request(body={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert answer is not None and "error" in answer.json()
    assert store._records == {}


def test_the_memory_session_store_keeps_the_newest() -> None:
    from mcp_sansio.server.stores import SessionRecord
    from mcp_sansio.types import ClientCapabilities, Implementation

    store = MemorySessionStore(max_sessions=2)
    for name in "abc":
        store.save(SessionRecord(session_id=name, protocol_version="2025-11-25",
                                 client_info=Implementation(name="c", version="1"),
                                 client_capabilities=ClientCapabilities()))
    assert store.load("a") is None and store.load("c") is not None


def test_a_request_sent_behind_a_late_answer_is_served_after_it() -> None:
    app = MCPServer("s")
    server, loop, runner = _running(app)
    gate = loop.future()

    @app.tool()
    async def waits() -> str:
        await gate
        return "first"

    conn = RawHttp(server)
    first = modern_body(1, "tools/call", {"name": "waits"})
    second = modern_body(2, "ping")
    wire = b""
    for body, method, extra in ((first, "tools/call", {"mcp-name": "waits"}), (second, "ping", {})):
        data = json.dumps(body).encode()
        head = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: application/json\r\n"
        head += "content-type: application/json\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in _modern_headers(method, **extra).items())
        wire += head.encode() + f"content-length: {len(data)}\r\n\r\n".encode() + data
    conn.send_raw(wire)
    runner.pump()
    assert server.data_to_send(conn.id) == b""
    gate.set_result(None)
    loop.run_ready()
    out = server.data_to_send(conn.id)
    assert out.count(b"HTTP/1.1 ") == 2 and out.index(b'"id":1') < out.index(b'"id":2')


def test_a_tool_name_that_is_no_string_is_the_sessions_to_refuse() -> None:
    server = http_server(_app())
    answer = RawHttp(server).request(body=modern_body(1, "tools/call", {"name": 5}),
                                     headers=_modern_headers("tools/call", **{"mcp-name": "5"}))
    assert answer is not None and answer.json()["error"]["code"] == -32602


def test_a_handshake_session_asks_on_the_request_stream_and_takes_the_answer_by_post() -> None:
    app = MCPServer("s")
    server, loop, runner = _running(app)

    @app.tool()
    async def confirm(ctx: Context) -> str:
        result = await ctx.elicit("sure?", {"type": "object", "properties": {}})
        return result.action

    conn, session_id = _session(server)
    conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "confirm"}},
                 headers=_sid(session_id))
    runner.pump()
    loop.run_ready()
    stream = conn.read()
    assert stream is not None and stream.events[-1]["method"] == "elicitation/create"
    question = stream.events[-1]["id"]
    other = RawHttp(server)
    answer = {"jsonrpc": "2.0", "id": question, "result": {"action": "accept", "content": {}}}
    posted = other.request(body=answer,
                           headers=_sid(session_id))
    assert posted is not None and posted.status == 202
    runner.pump()
    loop.run_ready()
    conn.read()
    assert stream.complete and stream.events[-1]["result"]["content"][0]["text"] == "accept"


def test_a_handshake_call_is_cancelled_by_notification() -> None:
    app = MCPServer("s")
    server, loop, runner = _running(app)
    gate = loop.future()

    @app.tool()
    async def hangs() -> str:
        await gate
        return "never"

    conn, session_id = _session(server)
    conn.request(body={"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hangs"}},
                 headers=_sid(session_id))
    runner.pump()
    assert runner.running == 1
    RawHttp(server).request(body={"jsonrpc": "2.0", "method": "notifications/cancelled",
                                  "params": {"requestId": 2}}, headers=_sid(session_id))
    runner.pump()
    loop.run_ready()
    assert runner.running == 0


def test_an_sse_answer_that_is_all_there_is_is_one_response_of_known_length() -> None:
    answer = RawHttp(http_server(_app(), response_mode="sse")).request(body=INIT)
    assert answer is not None and answer.complete and answer.headers["content-type"] == "text/event-stream"
    assert answer.headers["content-length"] == str(len(answer.body))
    assert "transfer-encoding" not in answer.headers
    assert answer.events[0] is None and answer.events[1]["result"]["protocolVersion"] == "2025-11-25"
    assert answer.ids[1] and answer.ids[0] != answer.ids[1]  # the priming event's id, then the answer's


def test_a_request_sent_early_is_taken_in_when_the_response_before_it_is_written() -> None:
    server = http_server(_app())
    conn, session_id = _session(server)
    while server.next_event() is not None:
        pass
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "work"}}
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    wire = b""
    for body in (call, ping):  # two requests in one write: the second waits its turn
        data = json.dumps(body).encode()
        head = (f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                f"accept: application/json\r\nmcp-session-id: {session_id}\r\n"
                f"content-length: {len(data)}\r\n\r\n")
        wire += head.encode() + data
    conn.send_raw(wire, 1.0)
    event = server.next_event()
    assert isinstance(event, ToolCallReceived) and server.next_event() is None
    server.respond(event.call, "done", now=2.0)
    data = server.data_to_send(conn.id)  # the ping was answered as the call's response went out:
    assert 0 < data.find(b'"id":2') < data.find(b'"id":3')  # no next_event() was needed


def test_a_stream_dropped_by_a_write_asks_for_a_timeout_at_once_and_cancels_its_request() -> None:
    app = MCPServer("s")

    @app.tool()
    def chatty(ctx: Context) -> str:
        return "done"

    server = http_server(app, limits=HttpLimits(max_buffer_bytes=300))
    conn = RawHttp(server)
    conn.request(body=modern_body(1, "tools/call", {"name": "chatty", "_meta": {"progressToken": "t"}}),
                 headers=_modern_headers("tools/call", **{"mcp-name": "chatty"}), accept="text/event-stream")
    event = server.next_event()
    assert isinstance(event, ToolCallReceived)
    server.send_progress(event.call, 1, message="x" * 100)  # the stream begins; the client reads nothing
    server.send_progress(event.call, 2, message="x" * 400)  # past max_buffer_bytes: dropped
    assert server.next_event() is None and server.next_deadline() == AT_ONCE
    server.handle_timeout(5.0)
    assert server.next_event() == CallCancelled(call=event.call, reason="the client does not read its stream")
    assert server.next_deadline() != AT_ONCE


def test_host_and_origin_verdicts_hold_for_every_pair_however_many_a_client_sends() -> None:
    conn = RawHttp(http_server(_app()))
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}  # no session: 400 once Host and Origin pass
    for i in range(1500):  # more pairs than the server remembers verdicts for
        headers, status = [({"host": f"localhost:{i + 1}"}, 400),
                           ({"host": f"evil{i}.example"}, 421),
                           ({"host": "localhost:8000", "origin": f"http://evil{i}.example"}, 403)][i % 3]
        assert _status(conn.request(body=ping, headers=headers)) == status


def test_one_clients_running_tasks_do_not_refuse_another_clients_stateless_requests() -> None:
    # max_in_flight bounds one connection's requests; every stateless request shares one
    # session, so counting them there let one client's tasks lock out everyone else.
    from mcp_sansio.server import TASKS_EXTENSION, ServerConfig

    app = MCPServer("s", config=ServerConfig(max_in_flight=4))
    app.add_tool(lambda: "done", name="slow", task_support="optional")
    app.add_tool(lambda: "ok", name="add")
    server = http_server(app)

    def post(conn: RawHttp, rid: int, name: str, capabilities: dict[str, Any] | None = None) -> None:
        conn.request(body=modern_body(rid, "tools/call", {"name": name}, capabilities=capabilities),
                     headers=MODERN_HEADERS | {"mcp-method": "tools/call", "mcp-name": name})

    tasks = RawHttp(server, peer="10.0.0.1")
    for rid in range(1, 5):
        post(tasks, rid, "slow", {"extensions": {TASKS_EXTENSION: {}}})
        [event] = [e for e in iter(server.next_event, None) if isinstance(e, ToolCallReceived)]
        assert server.start_task(event.call, now=0.0) is not None
        tasks.read()  # the task's handle
    other = RawHttp(server, peer="10.0.0.2")
    post(other, 9, "add")
    [event] = [e for e in iter(server.next_event, None) if isinstance(e, ToolCallReceived)]
    server.respond(event.call, "ok", now=0.0)
    answer = other.read()
    assert answer is not None and "result" in answer.json()
