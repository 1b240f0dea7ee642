"""The server core's remaining edges: config checks, channels, tombstones, signature details."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest
from server_helpers import SECRET, handshake, modern_request, request, send, server_for, take, take_events

from mcp_sansio import LocalProtocolError
from mcp_sansio.server import (
    CallCancelled,
    MCPServer,
    ServerConfig,
    ServerSession,
    StdioServer,
    ToolCallReceived,
)
from mcp_sansio.server.endpoint import _TOMBSTONES


@pytest.mark.parametrize("kwargs", [
    {"protocol_versions": ()},
    {"protocol_versions": ("2026-07-28",)},
    {"modern_versions": ("2025-11-25",)},
    {"page_size": 0},
    {"max_in_flight": 0},
    {"list_ttl_ms": -1},
    {"request_timeout": -1.0},
    {"state_ttl": 0.0},
])
def test_a_config_that_cannot_work_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(LocalProtocolError):
        ServerConfig(**kwargs)


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="16 bytes"):
        StdioServer(MCPServer("s"), secret=b"short", entropy=b"e" * 32)


def test_only_so_many_cancelled_calls_are_remembered() -> None:
    server = server_for()
    for call in range(_TOMBSTONES + 1):
        server.call_cancelled(call)
    assert not server.is_cancelled(0) and server.is_cancelled(_TOMBSTONES)
    with pytest.raises(LocalProtocolError):
        server.respond(0, "late", now=0.0)


def test_a_closed_channel_cancels_its_calls_and_ends_its_listens() -> None:
    app = MCPServer("s")
    app.add_tool(lambda: "", name="t")
    server = server_for(app)
    session = ServerSession(app, server, channel_ids=True)
    call = msgspec.json.encode(modern_request(1, "tools/call", {"name": "t"}))
    session.receive_message(call, 0.0, channel=7)
    session.receive_message(msgspec.json.encode(modern_request(2, "subscriptions/listen")), 0.0, channel=7)
    session.receive_message(call, 0.0, channel=8)  # the same id on another channel is another request
    events = take_events(server)
    take(server)
    assert isinstance(events[0], ToolCallReceived)
    session.cancel_channel(7, 1.0)
    [cancelled] = take_events(server)
    assert cancelled == CallCancelled(call=events[0].call, reason="the stream closed")
    assert session.listens == {} and len(session.calls) == 1


@pytest.mark.parametrize("method", ["prompts/list", "resources/list"])
def test_bad_cursors_are_refused_on_every_list(method: str) -> None:
    app = MCPServer("s")
    app.add_prompt(lambda: "", name="p")
    app.add_resource("a://x", text="x")
    server = server_for(app, page_size=1)
    handshake(server)
    send(server, request(1, method, {"cursor": "nope"}))
    assert take(server)[0]["error"]["code"] == -32602


@pytest.mark.parametrize(("method", "params"), [
    ("prompts/get", {"name": "p"}),
    ("resources/read", {"uri": "a://x"}),
])
def test_a_forged_state_is_refused_on_prompts_and_reads(method: str, params: dict[str, object]) -> None:
    app = MCPServer("s")
    app.add_prompt(lambda: "", name="p")
    app.add_resource("a://x", lambda: "x")
    server = server_for(app)
    send(server, modern_request(1, method, {**params, "requestState": "forged"}))
    assert take(server)[0]["error"]["code"] == -32602 and take_events(server) == []


def test_params_that_are_no_object_are_invalid() -> None:
    server = server_for()
    server.receive_data(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":5}\n', 0.0)
    assert take(server)[0]["error"]["code"] == -32602


def test_only_meta_descriptions_describe_a_parameter() -> None:
    app = MCPServer("s")

    def f(a: Annotated[int, "not meta", msgspec.Meta(ge=0)],
          b: Annotated[int, msgspec.Meta(description="b")]) -> str:
        return ""

    schema = app.add_tool(f).tool.input_schema
    assert schema["properties"] == {"a": {"type": "integer", "minimum": 0},
                                    "b": {"type": "integer", "description": "b"}}


def test_the_tests_share_one_secret() -> None:
    assert SECRET == b"server-tests-secret-0123456789ab"


def test_a_session_refuses_calls_it_does_not_hold() -> None:
    with pytest.raises(LocalProtocolError, match="call 9 is not in progress"):
        server_for().session.respond(9, "x", now=0.0)
