"""Shared helpers for the core tests: drain a core object, parse what it sent, script a server.

Time in these tests is a plain float that starts at 0.0 and is moved by hand; nothing here
opens a socket or a process (STYLE.md section 10).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Protocol

from mcp_sansio import LATEST_VERSION, Action, ClientConfig, Event, InitializeCompleted, StdioClient
from mcp_sansio.connections import SocketFailure, SocketStage
from mcp_sansio.server import StdioServer
from mcp_sansio.session import ClientSession
from mcp_sansio.types import ClientCapabilities

__all__ = [
    "FIRST_REQUEST_ID",
    "REFUSED",
    "SERVER_CAPABILITIES",
    "Json",
    "ScriptedServer",
    "broken",
    "drain_actions",
    "drain_events",
    "ready_client",
    "take_messages",
]

Json = dict[str, Any]
"""A decoded JSON object; ``Any`` so tests can index into nested members."""

SERVER_CAPABILITIES: Final[Json] = {
    "tools": {},
    "resources": {"subscribe": True},
    "prompts": {},
    "completions": {},
    "logging": {},
}
"""What the server of :func:`ready_client` declares: every feature the client can gate."""

FIRST_REQUEST_ID: Final = 2
"""The id of the first request after the handshake (``initialize`` took 1)."""

REFUSED: Final = SocketFailure(stage=SocketStage.CONNECT, cause="Connection refused", errno=111)
"""What a driver reports when nothing listens on the port."""


def broken(cause: str, stage: SocketStage = SocketStage.TRANSFER) -> SocketFailure:
    """What a driver reports for a socket that failed with ``cause`` (by default while open)."""
    return SocketFailure(stage=stage, cause=cause)


class _EventSource(Protocol):
    def next_event(self) -> Event | None: ...


class _ActionSource(Protocol):
    def next_action(self) -> Action | None: ...


def drain_events(core: _EventSource) -> list[Event]:
    """Every event queued on ``core``, oldest first."""
    events = []
    while (event := core.next_event()) is not None:
        events.append(event)
    return events


def drain_actions(core: _ActionSource) -> list[Action]:
    """Every action queued on ``core``, oldest first."""
    actions = []
    while (action := core.next_action()) is not None:
        actions.append(action)
    return actions


def take_messages(core: ClientSession | StdioClient | StdioServer) -> list[Json]:
    """Drain what ``core`` queued to send and parse each message, so key order never matters.

    A :class:`StdioClient` or :class:`StdioServer` is read through ``data_to_send()``
    (every message must end with a newline); a bare :class:`ClientSession` through
    ``messages_to_send()``.
    """
    if isinstance(core, StdioClient | StdioServer):
        data = core.data_to_send()
        if data and not data.endswith(b"\n"):
            raise AssertionError(f"output does not end with a newline: {data[-80:]!r}")
        texts = data.splitlines()
    else:
        texts = core.messages_to_send()
    return [json.loads(text) for text in texts]


class ScriptedServer:
    """Builds the exact lines a server writes: each method returns one JSON line, ``\\n`` included."""

    def __init__(self, *, version: str = LATEST_VERSION, capabilities: Json | None = None) -> None:
        self.version = version
        self.capabilities = SERVER_CAPABILITIES if capabilities is None else capabilities

    @staticmethod
    def line(message: Mapping[str, object]) -> bytes:
        """Any JSON object as one compact line."""
        return json.dumps(message, separators=(",", ":")).encode() + b"\n"

    def initialize_result(
        self, request_id: int = 1, *, version: str | None = None, instructions: str | None = None
    ) -> bytes:
        """The answer to ``initialize``, choosing ``version`` (default: the server's)."""
        result: Json = {
            "protocolVersion": version or self.version,
            "capabilities": self.capabilities,
            "serverInfo": {"name": "scripted", "version": "1.0"},
        }
        if instructions is not None:
            result["instructions"] = instructions
        return self.result(request_id, result)

    def result(self, request_id: int | str, result: object) -> bytes:
        """A successful response."""
        return self.line({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: int | str | None, code: int, message: str, data: object = None) -> bytes:
        """An error response (``request_id`` ``None`` writes ``"id": null``)."""
        error: Json = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        return self.line({"jsonrpc": "2.0", "id": request_id, "error": error})

    def notification(self, method: str, params: object = None) -> bytes:
        """A notification; ``params`` ``None`` leaves the member out."""
        message: Json = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return self.line(message)

    def request(self, request_id: int | str, method: str, params: object = None) -> bytes:
        """A server-to-client request; ``params`` ``None`` leaves the member out."""
        message: Json = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        return self.line(message)

    def progress(
        self, token: int | str, progress: float, total: float | None = None, message: str | None = None
    ) -> bytes:
        """``notifications/progress`` for the request that carried ``token``."""
        params: Json = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self.notification("notifications/progress", params)

    def text_result(self, request_id: int, text: str) -> bytes:
        """A ``tools/call`` answer holding one text block."""
        return self.result(request_id, {"content": [{"type": "text", "text": text}]})


def ready_client(
    *,
    version: str | None = None,
    server: ScriptedServer | None = None,
    capabilities: ClientCapabilities | None = None,
    **config: Any,
) -> StdioClient:
    """A :class:`StdioClient` past the handshake at ``now=0.0``, with its queues drained.

    ``server`` (default: a :class:`ScriptedServer` declaring :data:`SERVER_CAPABILITIES`)
    answers with ``version``, or its own when ``None``; ``config`` goes to
    :class:`ClientConfig`. The next request id is :data:`FIRST_REQUEST_ID`.
    """
    client = StdioClient(ClientConfig(**config), capabilities)
    client.initialize(now=0.0)
    client.receive_data((server or ScriptedServer()).initialize_result(version=version), 0.0)
    events = drain_events(client)
    if len(events) != 1 or not isinstance(events[0], InitializeCompleted):
        raise AssertionError(f"the handshake did not complete: {events}")
    client.data_to_send()
    return client
