"""Helpers for the server core tests: build a server, send it messages, read what it sent.

Everything is in memory, on a clock that starts at 0.0 (STYLE.md section 10). Messages
are dicts, encoded compactly; what the server writes is parsed back, so key order never
matters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, TypeVar, overload

from mcp_sansio import Event
from mcp_sansio.server import HandlerCallReceived, MCPServer, ServerConfig, ServerEvent, StdioServer

__all__ = [
    "MODERN",
    "SECRET",
    "Json",
    "handshake",
    "meta",
    "modern_request",
    "request",
    "run_handlers",
    "send",
    "server_for",
    "take",
    "take_events",
]

Json = dict[str, Any]
SECRET: Final = b"server-tests-secret-0123456789ab"
ENTROPY: Final = b"server-tests-entropy-0123456789abcdef"
MODERN: Final = "2026-07-28"
E = TypeVar("E", bound=Event)


def server_for(app: MCPServer | None = None, **config: Any) -> StdioServer:
    """A stdio server for ``app`` (default: an empty one), ``config`` overriding its limits."""
    if app is None:
        app = MCPServer("test")
    if config:
        app.config = ServerConfig(**config)
    return StdioServer(app, secret=SECRET, entropy=ENTROPY)


def send(server: StdioServer, *messages: Mapping[str, object], now: float = 0.0) -> None:
    """Feed ``messages`` to ``server`` as lines, in one read."""
    data = b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in messages)
    server.receive_data(data, now)


def take(server: StdioServer) -> list[Json]:
    """Everything the server wrote, parsed."""
    data = server.data_to_send()
    assert not data or data.endswith(b"\n"), data[-80:]
    return [json.loads(line) for line in data.splitlines()]


@overload
def take_events(server: StdioServer) -> list[ServerEvent]: ...
@overload
def take_events(server: StdioServer, kind: type[E]) -> list[E]: ...
def take_events(server: StdioServer, kind: type[Event] = Event) -> list[Any]:
    """Every queued event, oldest first; each must be a ``kind`` (then typed as one)."""
    events = []
    while (event := server.next_event()) is not None:
        events.append(event)
    assert all(isinstance(event, kind) for event in events), events
    return events


def request(rid: int | str, method: str, params: Mapping[str, object] | None = None) -> Json:
    """A JSON-RPC request."""
    message: Json = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def meta(*, version: str = MODERN, capabilities: Mapping[str, object] | None = None, **extra: object) -> Json:
    """The ``_meta`` of a stateless-era request."""
    value: Json = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": dict(capabilities or {}),
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "1"},
    }
    value.update(extra)
    return value


def modern_request(rid: int | str, method: str, params: Mapping[str, object] | None = None,
                   **meta_fields: Any) -> Json:
    """A stateless-era request: ``params`` plus the per-request ``_meta``."""
    body = dict(params or {})
    extra = body.get("_meta")
    body["_meta"] = {**meta(**meta_fields), **(extra if isinstance(extra, dict) else {})}
    return request(rid, method, body)


def handshake(server: StdioServer, version: str = "2025-11-25",
              capabilities: Mapping[str, object] | None = None, *, now: float = 0.0) -> Json:
    """``initialize`` then ``notifications/initialized``; the initialize result."""
    send(server, request(0, "initialize", {
        "protocolVersion": version, "capabilities": dict(capabilities or {}),
        "clientInfo": {"name": "tests", "version": "1"},
    }), {"jsonrpc": "2.0", "method": "notifications/initialized"}, now=now)
    (answer,) = take(server)
    take_events(server)
    result: Json = answer["result"]
    return result


def run_handlers(server: StdioServer, *, now: float = 0.0) -> list[ServerEvent]:
    """Run every plain handler the events ask for and answer it; the other events."""
    others: list[ServerEvent] = []
    for event in take_events(server):
        if isinstance(event, HandlerCallReceived):
            try:
                value = event.handler.fn(**event.arguments)
            except Exception as exc:
                server.fail(event.call, exc, now=now)
            else:
                server.respond(event.call, value, now=now)
        else:
            others.append(event)
    return others
