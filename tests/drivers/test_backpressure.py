"""Backpressure on every server driver and as ASGI under uvicorn: a client that asks for a flood
of notifications and never reads costs bounded memory, the other clients are served
meanwhile, and nothing (task, descriptor) is left once it goes (``mcp_sansio.server.flow``).

Each server is a subprocess (``tests/servers/flood_server.py``) that reports its own
memory; the flooded client is a raw socket with a small receive buffer that never reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from peer_servers import free_port, running_http_server
from wsproto import ConnectionType, WSConnection
from wsproto import events as ws

from mcp_sansio import ClientConfig
from mcp_sansio_base.listening import MAX_LINGERING
from mcp_sansio_sync import connect_http

FLOOD = str(Path(__file__).parent.parent / "servers" / "flood_server.py")
DRIVERS = ["asyncio", "anyio", "trio", "sync", "asgi"]
MEGABYTES = 200
BOUND_KB = 64 * 1024  # what the flood may add to the server's peak memory (it asks for 200 MB)
PATIENCE = 90.0
CHURN = 1000
STATELESS: dict[str, object] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
             "io.modelcontextprotocol/clientCapabilities": {}}
HANDSHAKE = ClientConfig(protocol="2025-11-25")


@pytest.fixture(scope="module", params=DRIVERS)
def flood_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """The driver, and the URL of a flood server running on it."""
    port = free_port()
    with running_http_server(sys.executable, [FLOOD, str(request.param), "http", str(port)], None,
                             port, "/mcp") as url:
        yield str(request.param), url


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/", maxsplit=1)[0])


def _deaf(port: int) -> socket.socket:
    """A connection that will never read (its receive buffer as small as the kernel allows)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    return sock


def _post(port: int, body: dict[str, Any], headers: dict[str, str]) -> bytes:
    data = json.dumps(body).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{head}Content-Length: {len(data)}\r\n\r\n"
            ).encode() + data


def _flood_call(wait: bool, meta: dict[str, object]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "flood", "arguments": {"megabytes": MEGABYTES, "wait": wait},
        "_meta": {"progressToken": 1, **meta}}}


def _handshake_session(port: int) -> str:
    """Initialize a handshake-era session over a connection that reads; its id."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(_post(port, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "deaf", "version": "1"}}}, {}))
        got = b""
        while b"\r\n\r\n" not in got:
            got += sock.recv(65536)
    head = got.split(b"\r\n\r\n")[0].decode("latin-1")
    return next(line.split(":", 1)[1].strip() for line in head.split("\r\n")
                if line.lower().startswith("mcp-session-id:"))


def _text(result: Any) -> str:
    return str(result.content[0].text)


def _status(client: Any) -> dict[str, int]:
    return json.loads(_text(client.call_tool("status")))  # type: ignore[no-any-return]


def _record(row: dict[str, object]) -> None:
    path = os.environ.get("BACKPRESSURE_LOG")
    if path:
        with open(path, "a") as log:
            log.write(json.dumps(row) + "\n")


@pytest.mark.parametrize("wait", [True, False], ids=["awaiting", "not-awaiting"])
@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_client_that_never_reads_a_flood_costs_bounded_memory_while_others_are_served(
    flood_server: tuple[str, str], era: str, wait: bool
) -> None:
    driver, flood_url = flood_server
    port = _port(flood_url)
    with connect_http(flood_url) as other:
        before = _status(other)
        ended = before["finished"] + before["cancelled"]
        if era == "2026-07-28":
            request = _post(port, _flood_call(wait, STATELESS),
                            {"MCP-Protocol-Version": era, "Mcp-Method": "tools/call", "Mcp-Name": "flood"})
        else:
            session = _handshake_session(port)
            headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": era}
            request = _post(port, _flood_call(wait, {}), headers)
        deaf = _deaf(port)
        try:
            deaf.sendall(request)
            served = 0
            deadline = time.monotonic() + PATIENCE
            while True:
                assert _text(other.call_tool("add", {"a": served, "b": 1})) == str(served + 1)
                served += 1
                now = _status(other)
                if now["finished"] + now["cancelled"] > ended and now["running"] == 0:
                    break
                assert time.monotonic() < deadline, now
                time.sleep(0.05)
        finally:
            deaf.close()
    growth = now["VmHWM"] - before["VmRSS"]
    _record({"driver": driver, "era": era, "wait": wait, "rss_before_kb": before["VmRSS"],
             "peak_after_kb": now["VmHWM"], "produced_mb": now["produced"] // 2**20, "served": served,
             "cancelled": now["cancelled"] > before["cancelled"]})
    assert growth < BOUND_KB, (before, now)
    # A handler that awaits its progress is parked while the client does not read: others
    # are served throughout (one that never awaits holds its loop until it is done).
    assert served >= (5 if wait and era == "2026-07-28" else 1)


def test_a_client_that_never_reads_leaves_nothing_behind_when_it_goes(flood_server: tuple[str, str]) -> None:
    flood_url = flood_server[1]
    port = _port(flood_url)
    with connect_http(flood_url) as other:
        before = _status(other)
        deaf = _deaf(port)
        deaf.sendall(_post(port, _flood_call(True, STATELESS),
                           {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                            "Mcp-Name": "flood"}))
        deadline = time.monotonic() + PATIENCE
        while _status(other)["running"] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        deaf.close()  # while its handler waits for it to read
        while (now := _status(other))["running"] or now["fds"] > before["fds"]:
            assert time.monotonic() < deadline, (before, now)
            time.sleep(0.05)
    assert now["cancelled"] == before["cancelled"] + 1


def test_clients_that_reset_their_connections_do_not_bring_the_server_down(
    flood_server: tuple[str, str]
) -> None:
    port = _port(flood_server[1])
    add = _post(port, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": 1, "b": 2}, "_meta": STATELESS}},
        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "add"})
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(add)
            got = b""
            while b'"result"' not in got:
                chunk = sock.recv(65536)
                assert chunk, got
                got += chunk
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close: RST
    with connect_http(flood_server[1]) as client:
        assert _text(client.call_tool("add", {"a": 1, "b": 2})) == "3"


def _head(sock: socket.socket, size: int) -> bytes:
    """The first ``size`` bytes the server sent on ``sock``."""
    got = b""
    while len(got) < size and (chunk := sock.recv(size - len(got))):
        got += chunk
    return got


@pytest.mark.parametrize("driver", ["asyncio", "anyio", "trio", "sync"])  # (uvicorn owns its sockets)
def test_a_churn_of_refused_clients_that_never_close_holds_boundedly_many_descriptors(driver: str) -> None:
    # Each gets a 400 and a lingering close (it might still be sending), then never ends its
    # side: lingering, they no longer count against max_connections, so they are bounded
    # on their own (before, each held a descriptor for LINGER_SECONDS: all 1,000 at once).
    port = free_port()
    with running_http_server(sys.executable, [FLOOD, driver, "http", str(port)], None, port, "/mcp") as url, \
            connect_http(url) as other, contextlib.ExitStack() as stack:
        before = _status(other)["fds"]
        for _ in range(CHURN):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=30))
            sock.sendall(b"NOT HTTP\r\n\r\n")
            assert _head(sock, 12) == b"HTTP/1.1 400"  # and the server closes it
        after = _status(other)["fds"]
    assert after - before <= MAX_LINGERING + 4, (before, after)  # (+ one still being aborted)


@pytest.mark.parametrize("driver", ["asyncio", "anyio", "trio", "sync"])
def test_a_connection_closed_after_the_last_request_its_client_announced_does_not_linger(driver: str) -> None:
    # "Connection: close", answered: the client sends no more, so no reset can destroy the
    # answer and the server closes at once (before, it lingered for LINGER_SECONDS).
    port = free_port()
    last = f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode()
    with running_http_server(sys.executable, [FLOOD, driver, "http", str(port)], None, port, "/mcp") as url, \
            connect_http(url) as other, contextlib.ExitStack() as stack:
        before = _status(other)["fds"]
        for _ in range(MAX_LINGERING // 2):
            sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=30))
            sock.sendall(last)
            assert _head(sock, 9) == b"HTTP/1.1 "
        after = _status(other)["fds"]
    assert after - before <= 8, (before, after)  # (one or two may not be closed yet)


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_answer_held_for_a_client_that_never_reads_holds_up_no_other_client(driver: str) -> None:
    # A client pipelines eight 2 MiB results and never reads: the first ones fill the
    # socket (and the transport's buffer), the next congests the connection, and the one
    # after it is held until the stall timeout (600 s here); the rest are not read. Another
    # client's answers are not held behind it (they waited for that timeout).
    port = free_port()
    env = {**os.environ, "FLOOD_STALL": "600"}
    big = b"".join(_post(port, {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "big", "arguments": {"megabytes": 2}, "_meta": STATELESS}},
        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "big"})
        for n in range(1, 9))
    with running_http_server(sys.executable, [FLOOD, driver, "http", str(port)], env, port, "/mcp") as url, \
            connect_http(url, config=ClientConfig(request_timeout=20.0)) as other:
        deaf = _deaf(port)
        try:
            deaf.sendall(big)
            deadline = time.monotonic() + PATIENCE
            began, steady, served = 0, time.monotonic(), 0
            while time.monotonic() < steady + 1.0 or began < 3:  # until no big call began for 1 s
                assert _text(other.call_tool("add", {"a": served, "b": 1})) == str(served + 1)
                served += 1
                if (now := _status(other)["big"]) != began:
                    began, steady = now, time.monotonic()
                assert time.monotonic() < deadline, began
                time.sleep(0.02)
        finally:
            deaf.close()
    assert began < 8  # one was held: those behind it were never read


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_client_that_writes_without_end_while_its_request_is_answered_costs_bounded_memory(
    driver: str
) -> None:
    # Its flood is answered (and never read: the stall timeout is 600 s here) while it sends
    # 128 MB of pipelined requests: they are not all kept; past one request ahead it is
    # dropped (uvicorn stops reading instead).
    port = free_port()
    env = {**os.environ, "FLOOD_STALL": "600"}
    add = _post(port, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": 1, "b": 2}, "_meta": STATELESS}},
        {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "add"})
    chunk = add * (2**20 // len(add))
    with running_http_server(sys.executable, [FLOOD, driver, "http", str(port)], env, port, "/mcp") as url, \
            connect_http(url) as other:
        before = _status(other)
        deaf = _deaf(port)
        try:
            deaf.sendall(_post(port, _flood_call(True, STATELESS), {
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "flood"}))
            deaf.settimeout(2.0)
            sent = 0
            with contextlib.suppress(OSError):  # reset, or a server that stopped reading
                while sent < 128 * 2**20:
                    sent += deaf.send(chunk)
            now = _status(other)
        finally:
            deaf.close()
    assert now["VmHWM"] - before["VmRSS"] < 32 * 1024, (sent, before, now)


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_slowloris_flood_from_one_address_locks_no_other_client_out(driver: str) -> None:
    # Twenty heads trickling in from 127.0.0.2 (a line per round, never ending within the
    # test) against 16 connections at most: a client from 127.0.0.1 takes the place of
    # one of them each time it connects (uvicorn sets no such bound: it is served anyway).
    port = free_port()
    env = {**os.environ, "FLOOD_MAX_CONNECTIONS": "16", "FLOOD_HEADER_TIMEOUT": "300"}
    with running_http_server(sys.executable, [FLOOD, driver, "http", str(port)], env, port, "/mcp") as url:
        slow: list[socket.socket] = []
        try:
            for _ in range(20):
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                slow.append(sock)
                sock.bind(("127.0.0.2", 0))
                sock.connect(("127.0.0.1", port))
                sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            for n in range(3):
                for sock in slow:
                    with contextlib.suppress(OSError):  # one that took the place of another
                        sock.sendall(b"X-Slow: 1\r\n")
                with connect_http(url, config=ClientConfig(request_timeout=20.0)) as client:
                    assert _text(client.call_tool("add", {"a": n, "b": 1})) == str(n + 1)
        finally:
            for sock in slow:
                sock.close()


# ---------------------------------------------------------------- slow request bodies

BODY_TIMEOUT = 1.0  # flood_server.py's


@pytest.mark.parametrize("stalls", [False, True], ids=["never-ending", "stalled"])
def test_a_request_body_that_does_not_end_in_time_gets_408(
    flood_server: tuple[str, str], stalls: bool
) -> None:
    port = _port(flood_server[1])
    with socket.create_connection(("127.0.0.1", port), timeout=0.1) as sock:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                     b"1\r\n[\r\n")
        started = time.monotonic()
        got = b""
        while b"\r\n\r\n" not in got and time.monotonic() < started + PATIENCE:
            if not stalls:
                with contextlib.suppress(OSError):
                    sock.sendall(b"1\r\n \r\n")  # whitespace, a byte at a time, forever
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                break
            got += chunk
        elapsed = time.monotonic() - started
    assert got.startswith(b"HTTP/1.1 408 "), got[:200]
    assert elapsed >= BODY_TIMEOUT * 0.9


# ---------------------------------------------------------------- request smuggling


def test_a_request_framed_by_both_transfer_encoding_and_content_length_gets_400_and_close(
    flood_server: tuple[str, str]
) -> None:
    # RFC 9112 section 6.1: the server MUST close after responding, so the request hidden
    # after the chunked body is never read (uvicorn on h11 answered both).
    port = _port(flood_server[1])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": 1, "b": 2}, "_meta": STATELESS}}).encode()
    hidden = b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
    smuggled = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
                f"Mcp-Method: tools/call\r\nMcp-Name: add\r\nTransfer-Encoding: chunked\r\n"
                f"Content-Length: 5\r\n\r\n{len(body):x}\r\n").encode() + body + b"\r\n0\r\n\r\n" + hidden
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(smuggled)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    assert got.startswith(b"HTTP/1.1 400 "), got[:200]
    assert got.count(b"HTTP/1.1 ") == 1, got


# ---------------------------------------------------------------- invalid UTF-8

BAD_UTF8 = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":"\xc3("}}}'


def test_invalid_utf8_in_a_post_is_a_parse_error(flood_server: tuple[str, str]) -> None:
    port = _port(flood_server[1])
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Content-Length: {len(BAD_UTF8)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head + BAD_UTF8)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    assert got.startswith(b"HTTP/1.1 400 ")
    assert json.loads(got.split(b"\r\n\r\n", 1)[1])["error"]["code"] == -32700


# ---------------------------------------------------------------- WebSocket and stdio


SOCKET_DRIVERS = ["asyncio", "anyio", "trio", "sync"]
INITIALIZE: dict[str, Any] = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _upgrade(sock: socket.socket) -> WSConnection:
    """The WebSocket handshake on ``sock`` (its answer is read)."""
    client = WSConnection(ConnectionType.CLIENT)
    sock.sendall(client.send(ws.Request(host="127.0.0.1", target="/", subprotocols=["mcp"])))
    while True:
        client.receive_data(sock.recv(4096))
        if any(isinstance(event, ws.AcceptConnection) for event in client.events()):
            return client


class _WsProbe:
    """A WebSocket client that reads: it asks for ``status``."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.ws = _upgrade(self.sock)
        self.rid = 0
        self.call({**INITIALIZE, "id": None})
        self.sock.sendall(self.ws.send(ws.Message(data=json.dumps(INITIALIZED))))

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        self.rid += 1
        self.sock.sendall(self.ws.send(ws.Message(data=json.dumps({**message, "id": self.rid}))))
        while True:
            self.ws.receive_data(self.sock.recv(65536))
            for event in self.ws.events():
                if isinstance(event, ws.TextMessage) and json.loads(event.data).get("id") == self.rid:
                    return json.loads(event.data)  # type: ignore[no-any-return]

    def status(self) -> dict[str, int]:
        answer = self.call({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "status"}})
        return json.loads(answer["result"]["content"][0]["text"])  # type: ignore[no-any-return]


@pytest.mark.parametrize("driver", SOCKET_DRIVERS)
def test_a_websocket_client_that_never_reads_a_flood_costs_bounded_memory(driver: str) -> None:
    port = free_port()
    with running_http_server(sys.executable, [FLOOD, driver, "websocket", str(port)], None, port, "/"):
        probe = _WsProbe(port)
        before = probe.status()
        deaf = _deaf(port)
        try:
            client = _upgrade(deaf)  # the last it reads
            for message in [INITIALIZE, INITIALIZED, _flood_call(True, {})]:
                deaf.sendall(client.send(ws.Message(data=json.dumps(message))))
            deadline = time.monotonic() + PATIENCE
            while (now := probe.status())["cancelled"] == 0:  # the stall timeout drops it
                assert time.monotonic() < deadline, now
                time.sleep(0.05)
            while probe.status()["fds"] > before["fds"]:  # and closes it, though it never reads
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            deaf.close()
            probe.sock.close()
    _record({"driver": driver, "transport": "websocket", "rss_before_kb": before["VmRSS"],
             "peak_after_kb": now["VmHWM"], "produced_mb": now["produced"] // 2**20, "cancelled": True})
    assert now["VmHWM"] - before["VmRSS"] < BOUND_KB, (before, now)
    assert now["running"] == 0


@pytest.mark.parametrize("driver", SOCKET_DRIVERS)
def test_results_held_for_a_websocket_client_that_never_reads_are_bounded_in_bytes(driver: str) -> None:
    # Twenty pipelined 4 MiB results: past max_held_bytes of held answers the connection
    # is dropped at once, as one past max_buffer_bytes is, long before the stall timeout.
    port = free_port()
    env = {**os.environ, "FLOOD_STALL": "600"}
    with running_http_server(sys.executable, [FLOOD, driver, "websocket", str(port)], env, port, "/"):
        probe = _WsProbe(port)
        before = probe.status()
        deaf = _deaf(port)
        try:
            client = _upgrade(deaf)  # the last it reads
            calls = [{"jsonrpc": "2.0", "id": n, "method": "tools/call",
                      "params": {"name": "big", "arguments": {"megabytes": 4}}} for n in range(1, 21)]
            for message in [INITIALIZE, INITIALIZED, *calls]:
                deaf.sendall(client.send(ws.Message(data=json.dumps(message))))
            deadline = time.monotonic() + PATIENCE / 3
            while (now := probe.status())["fds"] > before["fds"]:  # the deaf connection is closed
                assert time.monotonic() < deadline, now
                time.sleep(0.05)
        finally:
            deaf.close()
            probe.sock.close()
    _record({"driver": driver, "transport": "websocket-held", "rss_before_kb": before["VmRSS"],
             "peak_after_kb": now["VmHWM"], "rss_after_kb": now["VmRSS"]})


@contextlib.contextmanager
def _stalled_stdio(driver: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A stdio flood server past ``initialize`` whose client never read the flood: the stall
    timeout ended its session. Yields it and its RSS (KiB) before the flood."""
    proc = subprocess.Popen([sys.executable, FLOOD, driver, "stdio"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0
        before = _proc_kb(proc.pid, "VmRSS")
        for message in [INITIALIZED, _flood_call(True, {})]:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        # Not a byte more is read from stdout: the stall timeout ends the session.
        assert proc.stderr.readline().strip() == b"flood cancelled"
        yield proc, before
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()


@pytest.mark.parametrize("driver", SOCKET_DRIVERS)
def test_a_stdio_client_that_never_reads_a_flood_costs_bounded_memory(driver: str) -> None:
    with _stalled_stdio(driver) as (proc, before):
        peak = _proc_kb(proc.pid, "VmHWM")
        out, _ = proc.communicate(timeout=PATIENCE)  # stdin ends; what was left is written; it exits
    _record({"driver": driver, "transport": "stdio", "rss_before_kb": before, "peak_after_kb": peak})
    assert proc.returncode == 0
    assert peak - before < BOUND_KB
    assert len(out) < 8 * 2**20  # at most about what was queued when the session ended


@pytest.mark.parametrize("driver", SOCKET_DRIVERS)
def test_a_stdio_server_whose_client_stopped_reading_exits_with_stdin_still_open(driver: str) -> None:
    # The stall ended the session: nothing more can be answered, so the server does not
    # go on reading and dropping stdin until a client that may never close it does.
    with _stalled_stdio(driver) as (proc, _):
        assert proc.wait(timeout=PATIENCE) == 0  # stdin is still open, stdout never read


@pytest.mark.parametrize("driver", SOCKET_DRIVERS)
def test_pipelined_results_larger_than_the_output_bound_all_reach_a_client_that_reads(driver: str) -> None:
    # Six 1 MiB results asked for at once, then stdin ends: the finished results wait for
    # the client to read (never counted as a client that does not) and none is lost at EOF.
    calls = [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "big", "arguments": {}}}
             for n in range(1, 7)]
    lines = [INITIALIZE, INITIALIZED, *calls]
    done = subprocess.run([sys.executable, FLOOD, driver, "stdio"],
                          input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
                          capture_output=True, timeout=PATIENCE, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == list(range(7))
    assert all(len(answers[n]["result"]["content"][0]["text"]) == 2**20 for n in range(1, 7))


@pytest.mark.parametrize("driver", SOCKET_DRIVERS)
def test_a_stdio_client_that_never_reads_and_closes_stdin_does_not_keep_the_server(driver: str) -> None:
    # Results held for it, then the stall ends the session: at EOF the server exits
    # rather than wait forever to write what nobody will read.
    calls = [{"jsonrpc": "2.0", "id": n, "method": "tools/call",
              "params": {"name": "big", "arguments": {"megabytes": 4}}} for n in range(1, 9)]
    proc = subprocess.Popen([sys.executable, FLOOD, driver, "stdio"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None
    try:
        proc.stdin.write(b"".join(json.dumps(line).encode() + b"\n"
                                  for line in [INITIALIZE, INITIALIZED, *calls]))
        proc.stdin.close()
        assert proc.wait(timeout=PATIENCE) == 0  # stdout was never read
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _proc_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as lines:
        for line in lines:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


@pytest.mark.parametrize("driver", SOCKET_DRIVERS)
def test_invalid_utf8_on_stdio_is_a_parse_error(driver: str) -> None:
    done = subprocess.run([sys.executable, FLOOD, driver, "stdio"], input=BAD_UTF8 + b"\n",
                          capture_output=True, timeout=PATIENCE, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    [answer] = [json.loads(line) for line in done.stdout.splitlines()]
    assert answer["id"] is None and answer["error"]["code"] == -32700


@pytest.mark.parametrize("driver", SOCKET_DRIVERS)
def test_invalid_utf8_in_a_websocket_text_frame_fails_the_connection_with_1007(driver: str) -> None:
    port = free_port()
    with running_http_server(sys.executable, [FLOOD, driver, "websocket", str(port)], None, port, "/"), \
            socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        client = _upgrade(sock)
        mask = b"\x00\x00\x00\x00"  # RFC 6455 5.3: a client masks; a zero key keeps the bytes as they are
        sock.sendall(bytes([0x81, 0x80 | len(BAD_UTF8)]) + mask + BAD_UTF8)  # one text frame
        closed = None
        while closed is None and (data := sock.recv(65536)):
            client.receive_data(data)
            closed = next((e for e in client.events() if isinstance(e, ws.CloseConnection)), None)
    assert closed is not None and closed.code == 1007  # RFC 6455 8.1: invalid UTF-8 in a text message
