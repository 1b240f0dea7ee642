"""Tools: listing with pages, calling with validated arguments, results and errors by revision."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from server_helpers import (
    handshake,
    modern_request,
    request,
    run_handlers,
    send,
    server_for,
    take,
    take_events,
)

from mcp_sansio import LocalProtocolError, RequestError
from mcp_sansio.server import CallCancelled, HandlerCallReceived, MCPServer, ToolCallReceived, ToolError
from mcp_sansio.types import CallToolResult, ImageContent, TextContent


class Point(msgspec.Struct):
    x: int
    y: int


def _app() -> MCPServer:
    app = MCPServer("s")

    @app.tool()
    def add(a: int, b: int = 1) -> str:
        """Add."""
        return str(a + b)

    @app.tool()
    def where() -> Point:
        return Point(x=1, y=2)

    @app.tool()
    def boom() -> str:
        raise ValueError("it broke")

    return app


def _call(server: Any, name: str, arguments: object = None, rid: int = 1) -> dict[str, Any]:
    params: dict[str, object] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    send(server, request(rid, "tools/call", params))
    run_handlers(server)
    [answer] = take(server)
    return answer


def _ready(app: MCPServer | None = None, version: str = "2025-11-25", **config: Any) -> Any:
    server = server_for(app or _app(), **config)
    handshake(server, version)
    return server


def test_tools_list_gives_every_tool_in_registration_order() -> None:
    server = _ready()
    send(server, request(1, "tools/list"))
    assert [t["name"] for t in take(server)[0]["result"]["tools"]] == ["add", "where", "boom"]


def test_tools_list_pages_with_opaque_cursors() -> None:
    server = _ready(page_size=2)
    send(server, request(1, "tools/list"))
    first = take(server)[0]["result"]
    assert [t["name"] for t in first["tools"]] == ["add", "where"]
    send(server, request(2, "tools/list", {"cursor": first["nextCursor"]}))
    second = take(server)[0]["result"]
    assert [t["name"] for t in second["tools"]] == ["boom"] and "nextCursor" not in second


@pytest.mark.parametrize("cursor", ["garbage!", base64.urlsafe_b64encode(b"prompts:1").decode(),
                                    base64.urlsafe_b64encode(b"tools:99").decode(),
                                    base64.urlsafe_b64encode(b"tools:x").decode(), "\u00e9"])
def test_a_cursor_the_server_did_not_mint_is_invalid(cursor: str) -> None:
    server = _ready(page_size=2)
    send(server, request(1, "tools/list", {"cursor": cursor}))
    assert take(server)[0]["error"] == {"code": -32602, "message": "Invalid params: unknown cursor"}


def test_a_server_without_tools_has_no_tools_methods() -> None:
    server = _ready(MCPServer("empty"))
    send(server, request(1, "tools/list"))
    assert take(server)[0]["error"]["code"] == -32601


def test_a_call_runs_the_tool_with_validated_arguments() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "add", "arguments": {"a": 2}}))
    [event] = take_events(server)
    assert isinstance(event, ToolCallReceived)
    assert event.arguments == {"a": 2, "b": 1} and event.tool.name == "add" and event.request.request_id == 1
    server.respond(event.call, "3", now=0.0)
    text = [{"type": "text", "text": "3"}]
    assert take(server) == [{"jsonrpc": "2.0", "id": 1, "result": {"content": text}}]


def test_a_call_without_arguments_uses_the_defaults() -> None:
    app = MCPServer("s")
    app.add_tool(lambda n=3: str(n), name="n")
    server = _ready(app)
    assert _call(server, "n")["result"]["content"][0]["text"] == "3"
    assert _call(server, "n", None, rid=2)["result"]["content"][0]["text"] == "3"


def test_null_arguments_are_no_arguments() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "where", "arguments": None}))
    assert isinstance(take_events(server)[0], ToolCallReceived)


def test_an_unknown_tool_is_invalid_params() -> None:
    assert _call(_ready(), "nope")["error"] == {"code": -32602, "message": "Unknown tool: nope"}


@pytest.mark.parametrize("arguments", [[1], 5, "a"])
def test_arguments_that_are_no_object_are_invalid_params(arguments: object) -> None:
    assert _call(_ready(), "add", arguments)["error"]["code"] == -32602


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_invalid_arguments_are_a_tool_error_from_2025_11_25(version: str) -> None:
    server = server_for(_app())
    if version == "2025-11-25":
        handshake(server, version)
        send(server, request(1, "tools/call", {"name": "add", "arguments": {"a": "x"}}))
    else:
        send(server, modern_request(1, "tools/call", {"name": "add", "arguments": {"a": "x"}}))
    result = take(server)[0]["result"]
    assert result["isError"] is True
    expected = "Invalid arguments for tool add: Expected `int`, got `str` - at `$.a`"
    assert result["content"][0]["text"] == expected


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_invalid_arguments_are_invalid_params_before_2025_11_25(version: str) -> None:
    error = _call(_ready(version=version), "add", {"b": 2})["error"]
    assert error["code"] == -32602 and "required field `a`" in error["message"]


def test_a_structured_result_has_structured_content_and_its_text() -> None:
    result = _call(_ready(), "where")["result"]
    text = [{"type": "text", "text": '{"x":1,"y":2}'}]
    assert result == {"content": text, "structuredContent": {"x": 1, "y": 2}}


def test_a_structured_tool_returning_a_string_answers_text() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "where"}))
    [event] = take_events(server, HandlerCallReceived)
    server.respond(event.call, "plain", now=0.0)
    assert take(server)[0]["result"] == {"content": [{"type": "text", "text": "plain"}]}


@pytest.mark.parametrize(("value", "content"), [
    (None, []),
    ("text", [{"type": "text", "text": "text"}]),
    (TextContent(text="t"), [{"type": "text", "text": "t"}]),
    ([ImageContent(data="AA==", mime_type="image/png"), "and text", 5],
     [{"type": "image", "data": "AA==", "mimeType": "image/png"}, {"type": "text", "text": "and text"},
      {"type": "text", "text": "5"}]),
    ({"a": 1}, [{"type": "text", "text": '{"a":1}'}]),
    (CallToolResult(content=[TextContent(text="as is")], is_error=True),
     [{"type": "text", "text": "as is"}]),
])
def test_what_a_tool_returns_becomes_content(value: object, content: list[object]) -> None:
    app = MCPServer("s")
    app.add_tool(lambda: value, name="v")
    assert _call(_ready(app), "v")["result"]["content"] == content


def test_a_value_json_cannot_hold_cannot_be_sent() -> None:
    app = MCPServer("s")
    app.add_tool(lambda: {"ok": False}, name="v", structured=True)
    server = _ready(app)
    send(server, request(1, "tools/call", {"name": "v"}))
    [event] = take_events(server, HandlerCallReceived)
    with pytest.raises(LocalProtocolError, match="cannot be sent as JSON"):
        server.respond(event.call, object(), now=0.0)
    server.respond(event.call, {"ok": True}, now=0.0)  # still awaiting its answer
    assert take(server)[0]["result"]["structuredContent"] == {"ok": True}


def test_an_exception_in_a_tool_is_a_tool_error() -> None:
    result = _call(_ready(), "boom")["result"]
    assert result == {"content": [{"type": "text", "text": "it broke"}], "isError": True}


def test_an_exception_without_a_message_names_its_type() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "boom"}))
    [event] = take_events(server, HandlerCallReceived)
    server.fail(event.call, KeyError(), now=0.0)
    assert take(server)[0]["result"]["content"][0]["text"] == "KeyError"


def test_a_request_error_is_sent_as_that_json_rpc_error() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "boom"}))
    [event] = take_events(server, HandlerCallReceived)
    server.fail(event.call, RequestError(-32000, "quota", {"left": 0}), now=0.0)
    assert take(server)[0]["error"] == {"code": -32000, "message": "quota", "data": {"left": 0}}


def test_respond_error_answers_with_any_code() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "boom"}))
    [event] = take_events(server, HandlerCallReceived)
    server.respond_error(event.call, -32099, "custom", now=0.0)
    assert take(server)[0]["error"] == {"code": -32099, "message": "custom"}


def test_answering_an_unknown_call_is_a_local_error() -> None:
    server = _ready()
    answers: list[Callable[[], object]] = [
        lambda: server.respond(99, "x", now=0.0), lambda: server.fail(99, ValueError(), now=0.0),
        lambda: server.respond_error(99, 1, "m", now=0.0), lambda: server.input_required(99, {}, now=0.0),
        lambda: server.ask(99, [], now=0.0),
    ]
    for answer in answers:
        with pytest.raises(LocalProtocolError, match="call 99"):
            answer()


def test_answering_twice_is_a_local_error() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "add", "arguments": {"a": 1}}))
    [event] = take_events(server, HandlerCallReceived)
    server.respond(event.call, "2", now=0.0)
    with pytest.raises(LocalProtocolError):
        server.respond(event.call, "2", now=0.0)


def test_a_cancelled_call_is_silently_not_answered() -> None:
    server = _ready()
    send(server, request(1, "tools/call", {"name": "add", "arguments": {"a": 1}}),
         {"jsonrpc": "2.0", "method": "notifications/cancelled",
          "params": {"requestId": 1, "reason": "bored"}})
    call_event, cancelled = take_events(server)
    assert isinstance(call_event, ToolCallReceived) and isinstance(cancelled, CallCancelled)
    assert cancelled.call == call_event.call and cancelled.reason == "bored"
    assert server.is_cancelled(call_event.call)
    server.respond(call_event.call, "2", now=0.0)
    server.fail(call_event.call, ValueError(), now=0.0)
    server.respond_error(call_event.call, 1, "m", now=0.0)
    server.input_required(call_event.call, {}, now=0.0)
    assert take(server) == []


def test_progress_and_logs_of_a_finished_call_go_nowhere() -> None:
    server = _ready()
    params = {"name": "add", "arguments": {"a": 1}, "_meta": {"progressToken": 1}}
    send(server, request(1, "tools/call", params))
    [event] = take_events(server, HandlerCallReceived)
    server.respond(event.call, "2", now=0.0)
    take(server)
    server.send_progress(event.call, 1.0)
    server.send_log(event.call, "info", "late")
    assert take(server) == []


def test_the_old_arguments_error_mentions_invalid_params() -> None:
    error = _call(_ready(version="2025-06-18"), "add", {"a": "x"})["error"]
    assert error["message"].startswith("Invalid params: Invalid arguments for tool add")


# ---------------------------------------------------------------- FastMCP habits (#18)


def _plain_int_app(**kwargs: Any) -> MCPServer:
    app = MCPServer("s", **kwargs)

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    @app.tool(structured=True)
    def untyped(a: int):  # type: ignore[no-untyped-def]  # no annotation: a structured value all the same
        return [a, a]

    return app


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_a_plain_int_result_is_wrapped_as_an_object_before_2026(version: str) -> None:
    server = _ready(_plain_int_app(), version=version)
    assert _call(server, "add", {"a": 2, "b": 3})["result"] == {
        "content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}}
    assert _call(server, "untyped", {"a": 1}, rid=2)["result"]["structuredContent"] == {"result": [1, 1]}
    send(server, request(3, "tools/list"))
    listed = {tool["name"]: tool for tool in take(server)[0]["result"]["tools"]}
    assert listed["add"]["outputSchema"] == {"type": "object", "properties": {"result": {"type": "integer"}},
                                             "required": ["result"], "x-fastmcp-wrap-result": True}
    assert "outputSchema" not in listed["untyped"]


def test_a_plain_int_result_stays_bare_in_2026() -> None:
    server = server_for(_plain_int_app())
    send(server, modern_request(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))
    run_handlers(server)
    result = take(server)[0]["result"]
    assert result["structuredContent"] == 5 and result["content"] == [{"type": "text", "text": "5"}]
    send(server, modern_request(2, "tools/list"))
    [add, _] = take(server)[0]["result"]["tools"]
    assert add["outputSchema"] == {"type": "integer"}


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_an_unknown_argument_is_refused_naming_it(version: str) -> None:
    answer = _call(_ready(version=version), "add", {"a": 1, "bb": 2})
    if version == "2025-06-18":
        assert answer["error"]["code"] == -32602 and "unknown field `bb`" in answer["error"]["message"]
    else:  # 2025-11-25: input errors are tool execution errors the model can read (SEP-1303)
        assert answer["result"]["isError"] and "unknown field `bb`" in answer["result"]["content"][0]["text"]


def test_a_tool_taking_kwargs_gets_unknown_arguments() -> None:
    app = MCPServer("s")

    @app.tool
    def echo(a: int, **rest: object) -> str:
        return f"{a} {sorted(rest)}"

    assert _call(_ready(app), "echo", {"a": 1, "z": 2})["result"]["content"][0]["text"] == "1 ['z']"


def _failing_app(**kwargs: Any) -> MCPServer:
    app = MCPServer("s", **kwargs)

    @app.tool
    def secret() -> str:
        raise ValueError("secret internal detail /etc/passwd")

    @app.tool
    def refuse() -> str:
        raise ToolError("no such city: Atlantis")

    @app.tool
    def quota() -> str:
        raise RequestError(-32000, "quota exceeded", {"retry_after": 3})

    @app.prompt
    def broken() -> str:
        raise KeyError(99)

    return app


@pytest.mark.parametrize("mask", [False, True])
def test_a_tool_error_is_sent_as_raised_and_other_errors_are_masked_on_demand(mask: bool) -> None:
    server = _ready(_failing_app(mask_error_details=mask))
    secret = _call(server, "secret")["result"]
    text = "Error calling tool 'secret'" if mask else "secret internal detail /etc/passwd"
    assert secret == {"content": [{"type": "text", "text": text}], "isError": True}
    assert _call(server, "refuse", rid=2)["result"] == {
        "content": [{"type": "text", "text": "no such city: Atlantis"}], "isError": True}
    assert _call(server, "quota", rid=3)["error"] == {
        "code": -32000, "message": "quota exceeded", "data": {"retry_after": 3}}
    send(server, request(4, "prompts/get", {"name": "broken"}))
    run_handlers(server)
    error = take(server)[0]["error"]
    assert error == {"code": -32603, "message": "Internal error" if mask else "KeyError: 99"}
