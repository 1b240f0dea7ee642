"""The test peers work on their own: each answers a hand-written ``initialize``.

These tests use no mcp-sansio code, so when a client test against a peer fails,
this file tells whether the peer or the client is to blame.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO

import pytest
from peer_servers import (
    everything_http,
    everything_stdio,
    free_port,
    running_http_server,
    sdk_server,
    stop_process,
)

pytestmark = pytest.mark.peer

PROTOCOL_VERSION = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcp-sansio-smoke-test", "version": "0"},
    },
}
TIMEOUT = 30.0


class StdioPeer:
    """A peer process on pipes, with a bounded line reader."""

    def __init__(self, proc: subprocess.Popen[bytes], stderr: IO[bytes]) -> None:
        self.proc = proc
        self.stderr = stderr
        self.buffer = b""

    def send(self, message: object) -> None:
        """Write one JSON-RPC message as a line."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read_until_response(self, request_id: int) -> tuple[list[bytes], dict[str, object]]:
        """Read stdout until the response to ``request_id``.

        Returns:
            The other lines read before it (banners, notifications) and the response.
        """
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        other: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if isinstance(message, dict) and message.get("id") == request_id:
                    return other, message
                other.append(line)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                pytest.fail(f"no response to {request_id} in {TIMEOUT} s{self.stderr_text()}")
            chunk = os.read(fd, 65536)
            if not chunk:
                pytest.fail(f"stdout closed before response {request_id}{self.stderr_text()}")
            self.buffer += chunk

    def stderr_text(self) -> str:
        """The peer's stderr so far, for failure messages."""
        self.stderr.seek(0)
        return "; stderr:\n" + self.stderr.read().decode(errors="replace")


@contextmanager
def stdio_peer(command: str, args: Sequence[str]) -> Iterator[StdioPeer]:
    """Run a stdio peer; at the end close its stdin, then stop and reap it."""
    with (
        tempfile.TemporaryFile() as stderr,
        subprocess.Popen(
            [command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        ) as proc,
    ):
        try:
            yield StdioPeer(proc, stderr)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(2.0)
            except subprocess.TimeoutExpired:
                stop_process(proc)


def post_initialize(url: str) -> tuple[dict[str, object], str | None]:
    """POST ``initialize`` as Streamable HTTP says; accept a JSON or an SSE answer.

    Returns:
        The JSON-RPC response and the ``Mcp-Session-Id`` header, if any.
    """
    request = urllib.request.Request(
        url,
        data=json.dumps(INITIALIZE).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        session_id = response.headers.get("Mcp-Session-Id")
        if response.headers.get_content_type() == "application/json":
            return json.loads(response.read()), session_id
        assert response.headers.get_content_type() == "text/event-stream"
        for raw in response:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("data:") and line[5:].strip():
                message = json.loads(line[5:])
                if message.get("id") == 0:
                    return message, session_id
    pytest.fail(f"{url}: the event stream ended without an initialize response")


def assert_initialize_result(response: dict[str, object], server_name: str) -> None:
    """``response`` is a successful initialize result from ``server_name``."""
    result = response.get("result")
    assert isinstance(result, dict), response
    assert result["protocolVersion"] == PROTOCOL_VERSION
    assert "tools" in result["capabilities"]
    assert result["serverInfo"]["name"] == server_name


def stdio_initialize(command: str, args: Sequence[str]) -> tuple[list[bytes], dict[str, object]]:
    """Start a stdio peer, send ``initialize`` and return what came back."""
    with stdio_peer(command, args) as peer:
        peer.send(INITIALIZE)
        return peer.read_until_response(0)


def test_everything_server_answers_initialize_over_stdio() -> None:
    _, response = stdio_initialize(*everything_stdio())
    assert_initialize_result(response, "mcp-servers/everything")


def test_sdk_server_answers_initialize_over_stdio() -> None:
    _, response = stdio_initialize(*sdk_server("sdk_server"))
    assert_initialize_result(response, "mcp-sansio-sdk-test-server")


def test_paginated_sdk_server_answers_initialize_over_stdio() -> None:
    _, response = stdio_initialize(*sdk_server("sdk_lowlevel_paginated"))
    assert_initialize_result(response, "mcp-sansio-paginated-test-server")


def test_hostile_banner_lines_surround_the_initialize_result() -> None:
    before, response = stdio_initialize(*sdk_server("hostile", "banner"))
    assert before == [
        b"hostile MCP server 1.0 starting",
        b"*** this line is not JSON ***",
        b"[hostile] about to answer",
    ]
    assert_initialize_result(response, "hostile")


def test_everything_server_answers_initialize_over_streamable_http() -> None:
    port = free_port()
    with running_http_server(*everything_http("streamableHttp", port), port, "/mcp") as url:
        response, session_id = post_initialize(url)
    assert_initialize_result(response, "mcp-servers/everything")
    assert session_id


@pytest.mark.parametrize(
    ("flags", "stateful"),
    [([], True), (["--stateless", "--json-response"], False)],
    ids=["stateful-sse", "stateless-json"],
)
def test_sdk_server_answers_initialize_over_streamable_http(flags: list[str], stateful: bool) -> None:
    port = free_port()
    command, args = sdk_server("sdk_server", "--transport", "streamable-http", "--port", str(port), *flags)
    with running_http_server(command, args, None, port, "/mcp") as url:
        response, session_id = post_initialize(url)
    assert_initialize_result(response, "mcp-sansio-sdk-test-server")
    assert bool(session_id) is stateful
