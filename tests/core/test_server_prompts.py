"""Prompts, completion and logging: served by handlers or by the core from static data."""

from __future__ import annotations

from typing import Any

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

from mcp_sansio import LocalProtocolError
from mcp_sansio.server import CompletionReceived, HandlerCallReceived, MCPServer
from mcp_sansio.types import (
    CompleteResult,
    Completion,
    GetPromptResult,
    ImageContent,
    PromptMessage,
    TextContent,
)


def _app() -> MCPServer:
    app = MCPServer("s")

    @app.prompt()
    def review(code: str, times: int = 1) -> str:
        """Review code."""
        return f"Review {code} x{times}"

    @app.completion(prompt="review", argument="code")
    def codes(value: str, context: dict[str, str]) -> list[str]:
        return [c for c in ("python", "pascal", "perl") if c.startswith(value)]

    app.add_completion(prompt="review", argument="times", values=["1", "2", "10"])
    return app


def _ready(app: MCPServer | None = None, version: str = "2025-11-25", **config: Any) -> Any:
    server = server_for(app or _app(), **config)
    handshake(server, version)
    return server


def _answer(server: Any, method: str, params: dict[str, object]) -> dict[str, Any]:
    send(server, request(1, method, params))
    run_handlers(server)
    [answer] = take(server)
    return answer


def test_prompts_list_names_the_arguments() -> None:
    server = _ready()
    send(server, request(1, "prompts/list"))
    assert take(server)[0]["result"]["prompts"] == [{
        "name": "review", "description": "Review code.",
        "arguments": [{"name": "code", "required": True}, {"name": "times", "required": False}],
    }]


def test_prompts_list_pages() -> None:
    app = _app()
    app.add_prompt(lambda: "x", name="second")
    server = _ready(app, page_size=1)
    send(server, request(1, "prompts/list"))
    first = take(server)[0]["result"]
    send(server, request(2, "prompts/list", {"cursor": first["nextCursor"]}))
    assert [p["name"] for p in take(server)[0]["result"]["prompts"]] == ["second"]


def test_a_prompt_renders_with_string_arguments_converted() -> None:
    params: dict[str, object] = {"name": "review", "arguments": {"code": "x", "times": "3"}}
    result = _answer(_ready(), "prompts/get", params)["result"]
    assert result == {"description": "Review code.",
                      "messages": [{"role": "user", "content": {"type": "text", "text": "Review x x3"}}]}


def test_a_prompt_missing_an_argument_is_invalid_params() -> None:
    error = _answer(_ready(), "prompts/get", {"name": "review"})["error"]
    assert error["code"] == -32602 and "`code`" in error["message"]


def test_an_unknown_prompt_is_invalid_params() -> None:
    assert _answer(_ready(), "prompts/get", {"name": "nope"})["error"] == {
        "code": -32602, "message": "Unknown prompt: nope"}


def test_a_server_without_prompts_has_no_prompts_list() -> None:
    server = _ready(MCPServer("empty"))
    send(server, request(1, "prompts/list"))
    assert take(server)[0]["error"]["code"] == -32601


@pytest.mark.parametrize(("value", "messages"), [
    (PromptMessage(role="assistant", content=TextContent(text="a")),
     [{"role": "assistant", "content": {"type": "text", "text": "a"}}]),
    ([ImageContent(data="AA==", mime_type="image/png"), "then"],
     [{"role": "user", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}},
      {"role": "user", "content": {"type": "text", "text": "then"}}]),
    ({"role": "user", "content": {"type": "text", "text": "wire"}},
     [{"role": "user", "content": {"type": "text", "text": "wire"}}]),
    (GetPromptResult(messages=[]), []),
])
def test_what_a_prompt_returns_becomes_messages(value: object, messages: list[object]) -> None:
    app = MCPServer("s")
    app.add_prompt(lambda: value, name="p")
    assert _answer(_ready(app), "prompts/get", {"name": "p"})["result"]["messages"] == messages


@pytest.mark.parametrize("value", [5, {"role": "robot", "content": {}}])
def test_a_prompt_value_that_is_no_message_cannot_be_sent(value: object) -> None:
    app = MCPServer("s")
    app.add_prompt(lambda: value, name="p")
    server = _ready(app)
    send(server, request(1, "prompts/get", {"name": "p"}))
    [event] = take_events(server, HandlerCallReceived)
    with pytest.raises(LocalProtocolError):
        server.respond(event.call, value, now=0.0)


def test_a_failing_prompt_is_an_internal_error() -> None:
    app = MCPServer("s")

    def broken() -> str:
        raise RuntimeError

    app.add_prompt(broken, name="p")
    error = _answer(_ready(app), "prompts/get", {"name": "p"})["error"]
    assert error == {"code": -32603, "message": "RuntimeError"}


def test_static_completions_are_filtered_by_the_core() -> None:
    server = _ready()
    send(server, request(1, "completion/complete", {"ref": {"type": "ref/prompt", "name": "review"},
                                                    "argument": {"name": "times", "value": "1"}}))
    assert take_events(server) == []
    assert take(server)[0]["result"] == {"completion": {"values": ["1", "10"], "total": 2, "hasMore": False}}


def test_a_completion_handler_gets_the_value_and_context() -> None:
    server = _ready()
    send(server, request(1, "completion/complete", {
        "ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "code", "value": "p"},
        "context": {"arguments": {"times": "2"}}}))
    [event] = take_events(server)
    assert isinstance(event, CompletionReceived)
    assert event.arguments == {"value": "p", "context": {"times": "2"}}
    server.respond(event.call, event.handler.fn(**event.arguments), now=0.0)
    assert take(server)[0]["result"]["completion"]["values"] == ["python", "pascal", "perl"]


def test_an_unknown_completion_target_gets_no_values() -> None:
    result = _answer(_ready(), "completion/complete", {"ref": {"type": "ref/resource", "uri": "x://{a}"},
                                                        "argument": {"name": "a", "value": ""}})["result"]
    assert result == {"completion": {"values": [], "total": 0, "hasMore": False}}


def test_a_template_completion_is_found_by_uri() -> None:
    app = MCPServer("s")
    app.add_completion(template="x://{a}", argument="a", values=["alpha", "beta"])
    result = _answer(_ready(app), "completion/complete", {"ref": {"type": "ref/resource", "uri": "x://{a}"},
                                                          "argument": {"name": "a", "value": "b"}})["result"]
    assert result["completion"]["values"] == ["beta"]


def test_a_server_without_completions_has_no_completion_method() -> None:
    server = _ready(MCPServer("empty"))
    send(server, request(1, "completion/complete", {"ref": {"type": "ref/prompt", "name": "x"},
                                                    "argument": {"name": "a", "value": ""}}))
    assert take(server)[0]["error"]["code"] == -32601


@pytest.mark.parametrize(("value", "completion"), [
    ([str(i) for i in range(150)], {"values": [str(i) for i in range(100)], "total": 150, "hasMore": True}),
    (Completion(values=["x"]), {"values": ["x"]}),
    (CompleteResult(completion=Completion(values=["y"], total=9)), {"values": ["y"], "total": 9}),
])
def test_what_a_completion_returns_becomes_at_most_100_values(value: object, completion: object) -> None:
    app = MCPServer("s")
    app.add_completion(prompt="p", argument="a", fn=lambda value: value)
    server = _ready(app)
    send(server, request(1, "completion/complete", {"ref": {"type": "ref/prompt", "name": "p"},
                                                    "argument": {"name": "a", "value": ""}}))
    [event] = take_events(server, HandlerCallReceived)
    server.respond(event.call, value, now=0.0)
    assert take(server)[0]["result"]["completion"] == completion


@pytest.mark.parametrize("value", ["abc", 5, [1]])
def test_a_completion_value_that_is_no_strings_cannot_be_sent(value: object) -> None:
    app = MCPServer("s")
    app.add_completion(prompt="p", argument="a", fn=lambda value: value)
    server = _ready(app)
    send(server, request(1, "completion/complete", {"ref": {"type": "ref/prompt", "name": "p"},
                                                    "argument": {"name": "a", "value": ""}}))
    [event] = take_events(server, HandlerCallReceived)
    with pytest.raises(LocalProtocolError, match="strings"):
        server.respond(event.call, value, now=0.0)


def test_set_level_filters_the_logs_of_the_session() -> None:
    app = MCPServer("s")
    app.add_tool(lambda: "", name="t")
    server = _ready(app)
    send(server, request(1, "logging/setLevel", {"level": "warning"}),
         request(2, "tools/call", {"name": "t"}))
    assert take(server) == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    [event] = take_events(server, HandlerCallReceived)
    server.send_log(event.call, "info", "quiet")
    server.send_log(event.call, "error", {"bad": True}, "db")
    server.send_log(None, "critical", "global")
    server.send_log(None, "debug", "global")
    assert take(server) == [
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": "error", "data": {"bad": True}, "logger": "db"}},
        {"jsonrpc": "2.0", "method": "notifications/message",
         "params": {"level": "critical", "data": "global"}},
    ]


def test_without_set_level_every_log_goes_out() -> None:
    app = MCPServer("s")
    app.add_tool(lambda: "", name="t")
    server = _ready(app)
    send(server, request(1, "tools/call", {"name": "t"}))
    [event] = take_events(server, HandlerCallReceived)
    server.send_log(event.call, "debug", "all")
    assert take(server)[0]["params"] == {"level": "debug", "data": "all"}


def test_a_session_log_before_the_handshake_goes_nowhere() -> None:
    server = server_for(_app())
    server.send_log(None, "emergency", "nobody")
    assert take(server) == []


def test_a_stateless_request_logs_only_at_the_level_it_set() -> None:
    app = MCPServer("s")
    app.add_tool(lambda: "", name="t")
    server = server_for(app)
    send(server, modern_request(1, "tools/call", {"name": "t"}),
         modern_request(2, "tools/call", {"name": "t"}, **{"io.modelcontextprotocol/logLevel": "notice"}))
    quiet, loud = take_events(server, HandlerCallReceived)
    server.send_log(quiet.call, "emergency", "never")
    server.send_log(loud.call, "info", "filtered")
    server.send_log(loud.call, "notice", "sent")
    assert [m["params"]["data"] for m in take(server)] == ["sent"]


def test_progress_goes_out_only_with_a_token() -> None:
    app = MCPServer("s")
    app.add_tool(lambda: "", name="t")
    server = _ready(app)
    send(server, request(1, "tools/call", {"name": "t"}),
         request(2, "tools/call", {"name": "t", "_meta": {"progressToken": "tok"}}))
    silent, tracked = take_events(server, HandlerCallReceived)
    server.send_progress(silent.call, 1)
    server.send_progress(tracked.call, 1, 10, "one")
    server.send_progress(tracked.call, 2)
    assert [m["params"] for m in take(server)] == [
        {"progressToken": "tok", "progress": 1, "total": 10, "message": "one"},
        {"progressToken": "tok", "progress": 2},
    ]
