"""``mcp-sansio serve``: what a user meets first (bad targets and ports), and a served file
answering over stdio and Streamable HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from peer_servers import free_port, running_http_server

from mcp_sansio.types import TextContent
from mcp_sansio_sync import connect_http

SERVER = '''
from mcp_sansio import MCPServer

app = MCPServer("served", version="2.0")
other = 42


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b
'''


def serve(*args: str, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "mcp_sansio_cli", "serve", *args], input=stdin, cwd=cwd,
                          capture_output=True, timeout=30, check=False)


@pytest.fixture
def server_file(tmp_path: Path) -> Path:
    path = tmp_path / "served.py"
    path.write_text(SERVER)
    return path


@pytest.mark.parametrize(("target", "message"), [
    ("missing.py", "missing.py: no such file"),
    ("served.py:nothing", "served.py defines no 'nothing' (name the server: served.py:NAME)"),
    ("served.py:other", "served.py:other: 'other' is int, not an MCPServer"),
])
def test_a_target_that_holds_no_server_exits_2_saying_why(server_file: Path, target: str,
                                                          message: str) -> None:
    done = serve(target, cwd=server_file.parent)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == f"mcp-sansio serve: error: {message}"


def test_a_file_that_fails_to_import_names_the_error(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import not_a_module_anywhere\n")
    done = serve("broken.py", cwd=tmp_path)
    assert done.returncode == 2
    assert b"broken.py: ModuleNotFoundError: No module named 'not_a_module_anywhere'" in done.stderr


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(server_file: Path, port: str) -> None:
    done = serve(str(server_file), "--http", port)
    assert done.returncode == 2
    assert b"is not a port (0 to 65535)" in done.stderr and b"Traceback" not in done.stderr


def test_stdio_answers_until_its_input_ends(server_file: Path) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": 2, "b": 40},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}
    done = serve(str(server_file), stdin=b"not json\n" + json.dumps(call).encode() + b"\n")
    assert done.returncode == 0
    parse_error, answer = (json.loads(line) for line in done.stdout.splitlines())
    assert parse_error["error"]["code"] == -32700
    assert answer["result"]["content"] == [{"type": "text", "text": "42"}]


def test_http_serves_the_file_and_a_taken_port_is_reported(server_file: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "mcp_sansio_cli", "serve", f"{server_file}:app", "--http", str(port)]
    with running_http_server(command[0], command[1:], None, port, "/mcp") as url:
        with connect_http(url) as client:
            assert client.server_info.name == "served"
            assert client.call_tool("add", {"a": 1, "b": 2}).content == [TextContent(text="3")]
        taken = serve(str(server_file), "--http", str(port))
    assert taken.returncode == 1
    assert b"address already in use" in taken.stderr.lower() and b"Traceback" not in taken.stderr


def test_an_ipv6_bind_announces_a_url_a_client_can_use(server_file: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mcp_sansio_cli", "serve", str(server_file),
                             "--http", str(port), "--host", "::1"], stderr=subprocess.PIPE)
    assert proc.stderr is not None
    try:
        announced = proc.stderr.readline().decode().strip()
        assert announced == f"mcp-sansio serve: Streamable HTTP at http://[::1]:{port}/mcp"
        with connect_http(announced.rsplit(" ", 1)[1]) as client:
            assert client.call_tool("add", {"a": 1, "b": 2}).content == [TextContent(text="3")]
    finally:
        proc.terminate()
        proc.wait(10)
        proc.stderr.close()
