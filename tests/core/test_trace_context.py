"""What the core gives telemetry (the OpenTelemetry MCP conventions): the trace context
joins ``params._meta`` of the requests a client sends, in both eras, beside the keys the
session puts there; the server hands the incoming context, the session id and how each
call was answered to its driver."""

from __future__ import annotations

from helpers import ready_client as handshake_client
from helpers import take_messages
from modern_helpers import modern_client
from server_helpers import handshake, modern_request, request, send, server_for, take, take_events

from mcp_sansio.server import CallOutcome, HandlerCallReceived, MCPServer, RequestAnswered

TRACE = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
         "tracestate": "rojo=00f067aa0ba902b7", "baggage": "userId=alice"}


def test_outgoing_meta_joins_a_handshake_era_request() -> None:
    client = handshake_client()
    client.outgoing_meta = TRACE
    assert client.outgoing_meta == TRACE
    rid = client.call_tool("add", {"a": 1}, now=1.0)
    client.outgoing_meta = None
    client.list_tools(now=1.0)
    first, second = take_messages(client)
    assert first["params"]["_meta"] == {**TRACE, "progressToken": rid}
    assert second["params"]["_meta"] == {"progressToken": second["id"]}


def test_outgoing_meta_keeps_the_stateless_eras_keys() -> None:
    client = modern_client()
    client.outgoing_meta = {**TRACE, "progressToken": "not-ours"}
    rid = client.call_tool("add", {"a": 1}, now=1.0)
    (message,) = take_messages(client)
    meta = message["params"]["_meta"]
    assert {key: meta[key] for key in TRACE} == TRACE
    assert meta["progressToken"] == rid  # the session's own keys win a clash
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert "io.modelcontextprotocol/clientCapabilities" in meta


def _adder() -> MCPServer:
    app = MCPServer("t")

    @app.tool()
    def add(a: int) -> int:
        return a

    @app.tool()
    def boom() -> int:
        raise ValueError("no")

    return app


def test_the_server_sees_the_trace_context_of_a_request_in_both_eras() -> None:
    server = server_for(_adder())
    handshake(server)
    send(server, request(1, "tools/call", {"name": "add", "arguments": {"a": 1}, "_meta": TRACE}))
    (event,) = take_events(server)
    assert isinstance(event, HandlerCallReceived)
    assert event.request.trace_context == TRACE
    assert event.request.session_id is None  # stdio has no session id

    modern = server_for(_adder())
    send(modern, modern_request(1, "tools/call", {"name": "add", "arguments": {"a": 1}},
                                traceparent=TRACE["traceparent"]))
    (event,) = take_events(modern)
    assert isinstance(event, HandlerCallReceived)
    assert event.request.trace_context == {"traceparent": TRACE["traceparent"]}


def test_a_request_without_trace_context_has_none() -> None:
    server = server_for(_adder())
    handshake(server)
    send(server, request(1, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    (event,) = take_events(server)
    assert isinstance(event, HandlerCallReceived)
    assert event.request.trace_context is None


def test_respond_and_fail_say_how_the_call_was_answered() -> None:
    server = server_for(_adder())
    handshake(server)
    send(server, request(1, "tools/call", {"name": "add", "arguments": {"a": 1}}),
         request(2, "tools/call", {"name": "boom", "arguments": {}}),
         request(3, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    first, second, third = take_events(server)
    assert isinstance(first, HandlerCallReceived) and isinstance(second, HandlerCallReceived)
    assert isinstance(third, HandlerCallReceived)
    assert server.respond(first.call, 1, now=0.0) == CallOutcome()
    assert server.fail(second.call, ValueError("no"), now=0.0) == CallOutcome(message="no", tool_error=True)
    assert server.respond_error(third.call, -32000, "nope", now=0.0) == CallOutcome(error_code=-32000,
                                                                                   message="nope")
    assert [m.get("error", {}).get("code") for m in take(server)] == [None, None, -32000]



def test_next_request_id_names_the_id_of_the_next_request_without_changing_anything() -> None:
    client = handshake_client()
    predicted = client.next_request_id
    assert client.next_request_id == predicted  # a query
    assert client.call_tool("add", {"a": 1}, now=1.0) == predicted
    assert client.next_request_id == predicted + 1


def test_a_trace_context_that_is_not_text_is_ignored_and_the_request_served() -> None:
    server = server_for(_adder())
    handshake(server)
    send(server, request(1, "tools/call", {"name": "add", "arguments": {"a": 1},
                                           "_meta": {"traceparent": 5, "tracestate": ["x"], "baggage": {}}}),
         request(2, "tools/call", {"name": "add", "arguments": {"a": 1},
                                   "_meta": {"traceparent": 5, "baggage": "k=v", "tracestate": 1}}))
    first, second = take_events(server)
    assert isinstance(first, HandlerCallReceived) and isinstance(second, HandlerCallReceived)
    assert first.request.trace_context is None
    assert second.request.trace_context == {"baggage": "k=v"}


def test_requests_the_core_answers_itself_are_reported_only_when_asked() -> None:
    quiet = server_for(_adder())
    handshake(quiet)
    send(quiet, request(1, "tools/list"))
    assert take_events(quiet) == []

    app = _adder()
    app.report_answers = True
    server = server_for(app)
    handshake(server)
    send(server, request(1, "tools/list", {"_meta": TRACE}), request(2, "prompts/list"))
    listed, unknown = take_events(server)
    assert listed == RequestAnswered(method="tools/list", request_id=1, protocol_version="2025-11-25",
                                     trace_context=TRACE)
    assert isinstance(unknown, RequestAnswered) and unknown.error_code == -32601
    assert unknown.trace_context is None

    modern = server_for(app)
    send(modern, modern_request(7, "tools/list"))
    (event,) = take_events(modern)
    assert event == RequestAnswered(method="tools/list", request_id=7, protocol_version="2026-07-28")
