"""``serve_stdio``, ``serve_http`` and ``serve_websocket`` in every driver (asyncio, anyio on
asyncio and on trio, blocking), run through ``mcp-sansio serve --driver D`` and met by our
client, the official SDK's client, and hostile raw-socket clients. Every driver must behave
the same."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from peer_servers import free_port, running_http_server

from mcp_sansio import ClientConfig
from mcp_sansio.types import ElicitRequestParams, ElicitResult
from mcp_sansio_sync import connect_http, connect_stdio, connect_websocket

APP = str(Path(__file__).parent.parent / "servers" / "served_app.py")
SERVER_DRIVERS = ["asyncio", "anyio", "trio", "sync"]
HANDSHAKE = ClientConfig(protocol="2025-11-25")
SERVE = [sys.executable, "-m", "mcp_sansio_cli", "serve", APP]


@pytest.fixture(scope="module", params=SERVER_DRIVERS)
def server_driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def http_url(server_driver: str) -> Iterator[str]:
    port = free_port()
    with running_http_server(SERVE[0], [*SERVE[1:], "--driver", server_driver, "--http", str(port)], None,
                             port, "/mcp") as url:
        yield url


def name_ada(params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


def text(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined, no-any-return]


@pytest.mark.parametrize("config", [ClientConfig(), HANDSHAKE], ids=["2026-07-28", "2025-11-25"])
def test_stdio_serves_every_feature(server_driver: str, config: ClientConfig) -> None:
    seen: list[float] = []
    with connect_stdio(SERVE[0], [*SERVE[1:], "--driver", server_driver], config=config,
                       on_elicitation=name_ada) as client:
        assert client.server_info.name == "served-by-every-driver"
        assert [tool.name for tool in client.list_tools()] == ["add", "ask", "progress", "give_up",
                                                               "give_up_at_once", "exits"]
        assert text(client.call_tool("add", {"a": 2, "b": 40})) == "42"
        assert text(client.call_tool("ask", {})) == "hello Ada"
        progressed = client.call_tool("progress", {"steps": 2}, on_progress=lambda p, t, m: seen.append(p))
        assert text(progressed) == "did 2 steps"
        assert client.read_resource("served://hello").contents[0].text == "hello, resource"
        assert client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]
    assert seen == [1, 2]


@pytest.mark.parametrize("config", [ClientConfig(), HANDSHAKE], ids=["2026-07-28", "2025-11-25"])
def test_http_serves_both_eras(http_url: str, config: ClientConfig) -> None:
    with connect_http(http_url, config=config, on_elicitation=name_ada) as client:
        assert client.protocol_version == config.protocol if config.protocol != "auto" else "2026-07-28"
        assert (client.session_id is None) == (config.protocol == "auto")
        assert text(client.call_tool("add", {"a": 1, "b": 2})) == "3"
        assert text(client.call_tool("ask", {})) == "hello Ada"


@pytest.mark.parametrize(("tool", "error"), [
    ("give_up", "CancelledError"), ("give_up_at_once", "CancelledError"), ("exits", "SystemExit: 3")])
def test_a_handler_raising_a_cancellation_or_an_exit_fails_its_call_and_the_server_goes_on(
        http_url: str, tool: str, error: str) -> None:
    with connect_http(http_url, config=HANDSHAKE) as client:
        result = client.call_tool(tool, {})
        assert result.is_error and text(result) == error
        assert text(client.call_tool("add", {"a": 1, "b": 2})) == "3"


def test_websocket_serves_a_call(server_driver: str) -> None:
    port = free_port()
    command = [*SERVE[1:], "--driver", server_driver, "--websocket", str(port)]
    with running_http_server(SERVE[0], command, None, port, "/"), \
            connect_websocket(f"ws://127.0.0.1:{port}/") as client:
        assert text(client.call_tool("add", {"a": 5, "b": 5})) == "10"


@pytest.mark.peer
@pytest.mark.parametrize(("mode", "version"), [("None", "2026-07-28"), ("'legacy'", "2025-11-25")])
def test_the_official_sdk_client_calls_over_http(http_url: str, mode: str, version: str) -> None:
    script = f"""
import anyio
from mcp import Client

async def main():
    client = Client({http_url!r}) if {mode} is None else Client({http_url!r}, mode={mode})
    async with client:
        tools = await client.list_tools()
        result = await client.call_tool("add", {{"a": 20, "b": 22}})
        print(client.protocol_version, [t.name for t in tools.tools], result.content[0].text)

anyio.run(main)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    tools = ["add", "ask", "progress", "give_up", "give_up_at_once", "exits"]
    assert done.stdout.decode().strip() == f"{version} {tools} 42"


def test_a_client_that_resets_its_connection_leaves_the_server_serving(http_url: str) -> None:
    port = int(http_url.split(":")[2].split("/", maxsplit=1)[0])
    for _ in range(3):  # as a balancer's TCP health check does
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    time.sleep(0.2)
    with connect_http(http_url) as client:
        assert text(client.call_tool("add", {"a": 1, "b": 2})) == "3"


# ---------------------------------------------------------------- hostile clients


def raw(url: str, data: bytes, *, read_for: float = 2.0) -> bytes:
    """Send ``data`` on a fresh connection; what came back until it closed (or ``read_for``)."""
    port = int(url.split(":")[2].split("/", maxsplit=1)[0])
    with socket.create_connection(("127.0.0.1", port), timeout=read_for) as sock:
        sock.sendall(data)
        got = b""
        deadline = time.monotonic() + read_for
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            got += chunk
        return got


def post(body: bytes, *, extra: str = "") -> bytes:
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "c", "version": "1"}}}).encode()


def still_serves(url: str) -> None:
    with connect_http(url) as client:
        assert text(client.call_tool("add", {"a": 1, "b": 1})) == "2"


def test_garbage_gets_400_and_the_server_stays_up(http_url: str) -> None:
    assert raw(http_url, b"\x00\xff garbage \r\n\r\n").startswith(b"HTTP/1.1 400 ")
    still_serves(http_url)


def test_an_oversized_body_gets_413_and_the_server_stays_up(http_url: str) -> None:
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 999999999\r\n\r\n")
    assert raw(http_url, head).startswith(b"HTTP/1.1 413 ")
    still_serves(http_url)


def test_an_oversized_head_gets_431(http_url: str) -> None:
    head = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n"
    assert raw(http_url, head).startswith(b"HTTP/1.1 431 ")
    still_serves(http_url)


def test_bad_json_rpc_gets_json_rpc_errors(http_url: str) -> None:
    parse = raw(http_url, post(b"{not json"))
    assert parse.startswith(b"HTTP/1.1 400 ") and b"-32700" in parse
    before_init = raw(http_url, post(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
                                     extra="").replace(b"MCP-Protocol-Version: 2026-07-28\r\n", b""))
    assert before_init.startswith(b"HTTP/1.1 400 ")
    unknown_cancel = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
        "requestId": 999, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                    "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    assert raw(http_url, post(unknown_cancel)).startswith(b"HTTP/1.1 202 ")
    still_serves(http_url)


def test_a_repeated_origin_or_session_header_is_refused_and_the_server_stays_up(http_url: str) -> None:
    port = http_url.split(":")[2].split("/", maxsplit=1)[0]
    origins = f"Origin: http://evil.example\r\nOrigin: http://127.0.0.1:{port}\r\n"
    two_origins = raw(http_url, post(INIT, extra=origins))
    assert two_origins.startswith(b"HTTP/1.1 403 ") and b"Origin header is repeated" in two_origins
    two_sessions = raw(http_url, post(INIT, extra="Mcp-Session-Id: a\r\nMcp-Session-Id: b\r\n"))
    assert two_sessions.startswith(b"HTTP/1.1 400 ") and b"Mcp-Session-Id header is repeated" in two_sessions
    still_serves(http_url)


def test_a_flood_of_idle_connections_does_not_starve_a_real_client(http_url: str) -> None:
    port = int(http_url.split(":")[2].split("/", maxsplit=1)[0])
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
    try:
        still_serves(http_url)
    finally:
        for sock in idle:
            sock.close()
    still_serves(http_url)


def test_stdio_garbage_and_eof_end_cleanly(server_driver: str) -> None:
    ping = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}).encode()
    done = subprocess.run([*SERVE, "--driver", server_driver], input=b"\xff\xfe garbage\n" + ping + b"\n",
                          capture_output=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[0]["error"]["code"] == -32700
    assert answers[1] == {"jsonrpc": "2.0", "id": 7, "result": {}}
