"""A FastMCP user's server (tests/servers/newcomer_app.py) under ``mcp-sansio serve`` on every
driver: a blocking plain ``def`` tool stalls no other client, ``print()`` does not corrupt the
stdio stream, a list change announced outside any request reaches connected clients, a
plain ``-> int`` tool answers each era what it allows, and error details can be masked."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from peer_servers import free_port, running_http_server

from mcp_sansio import ClientConfig, NotificationReceived
from mcp_sansio_sync import connect_http, connect_stdio

APP = str(Path(__file__).parent.parent / "servers" / "newcomer_app.py")
SERVER_DRIVERS = ["asyncio", "anyio", "trio", "sync"]
HANDSHAKE = ClientConfig(protocol="2025-11-25")
PROMPT = 1.5  # seconds: what "answers promptly" means on a loaded machine (the sleeper takes 4)


def serve(driver: str, *more: str) -> list[str]:
    """The ``mcp-sansio serve`` command line; the blocking driver gets worker threads."""
    threads = ["--threads", "4"] if driver == "sync" else []
    return [sys.executable, "-m", "mcp_sansio_cli", "serve", APP, "--driver", driver, *threads, *more]


@pytest.fixture(scope="module", params=SERVER_DRIVERS)
def server_driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def http_url(server_driver: str) -> Iterator[str]:
    port = free_port()
    command = serve(server_driver, "--http", str(port))
    with running_http_server(command[0], command[1:], None, port, "/mcp") as url:
        yield url


def text(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined, no-any-return]


def lines(driver: str, *messages: dict[str, object], answers: int, more: tuple[str, ...] = ()) -> tuple[
        list[tuple[float, dict[str, object]]], str]:
    """Write ``messages`` to a stdio server at once; the first ``answers`` lines it prints
    (each with when it came, in seconds after writing), and its stderr after stdin closed."""
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    proc = subprocess.Popen(serve(driver, *more), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(json.dumps(init).encode() + b"\n")
        proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 0  # started: time from here on
        start = time.monotonic()
        proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        proc.stdin.flush()
        got = []
        for _ in range(answers):
            line = proc.stdout.readline()
            got.append((time.monotonic() - start, json.loads(line)))
        proc.stdin.close()
        rest = proc.stdout.read()
        assert not rest.strip(), rest
        return got, proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait(30)


def call(rid: int, name: str, arguments: dict[str, object]) -> dict[str, object]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


# ---------------------------------------------------------------- a blocking def (#18 item 4)


def test_stdio_a_blocking_def_tool_does_not_hold_up_a_ping(server_driver: str) -> None:
    got, _ = lines(server_driver, call(1, "sleepy", {"seconds": 4}), PING, call(3, "add", {"a": 1, "b": 2}),
                   answers=3)
    (t_ping, ping), (t_add, add), (t_sleep, sleep) = got
    assert (ping["id"], add["id"], sleep["id"]) == (2, 3, 1)
    assert t_ping < PROMPT and t_add < PROMPT and t_sleep >= 3.5


def test_http_a_blocking_def_tool_does_not_stall_another_client(http_url: str) -> None:
    started = threading.Event()
    done: list[str] = []

    def sleeper() -> None:
        with connect_http(http_url) as client:
            done.append(text(client.call_tool("sleepy", {"seconds": 4},
                                              on_progress=lambda p, t, m: started.set())))

    thread = threading.Thread(target=sleeper, daemon=True)
    thread.start()
    assert started.wait(30), "the sleeping tool never reported that it started"
    begin = time.monotonic()
    with connect_http(http_url) as other:
        assert text(other.call_tool("add", {"a": 2, "b": 40})) == "42"
        other.list_tools()
        assert time.monotonic() - begin < PROMPT
    thread.join(30)
    assert done == ["slept 4.0"]


def test_asking_the_client_from_a_def_in_a_worker_thread_says_so(server_driver: str) -> None:
    got, _ = lines(server_driver, call(1, "ask_from_def", {}), answers=1)
    [(_, answer)] = got
    assert answer["result"] == {"isError": True, "content": [{"type": "text", "text": (
        "asking the client (elicit, sample, list_roots) awaits its answer: make the handler an async def")}]}


# ---------------------------------------------------------------- print() (#18 item 5)


def test_print_in_a_stdio_server_goes_to_stderr_not_into_the_stream(server_driver: str) -> None:
    got, stderr = lines(server_driver, call(1, "chatty", {"word": "hi"}), call(2, "add", {"a": 1, "b": 1}),
                        answers=2)
    assert sorted((answer for _, answer in got), key=lambda answer: str(answer["id"])) == [
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "HI"}]}},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "2"}],
                                               "structuredContent": {"result": 2}}},
    ]  # (each ran in a worker thread: in either order)
    assert "debugging hi" in stderr


# ---------------------------------------------------------------- list_changed from outside (#18 item 7)


def wait_for_list_changed(client: object, seen: list[str]) -> None:
    deadline = time.monotonic() + 20
    while "notifications/tools/list_changed" not in seen and time.monotonic() < deadline:
        client.ping()  # type: ignore[attr-defined]  # the blocking client reads while it waits
        time.sleep(0.05)
    assert "notifications/tools/list_changed" in seen


def test_stdio_a_list_change_announced_outside_a_request_reaches_the_client(server_driver: str) -> None:
    seen: list[str] = []
    command = serve(server_driver)
    with connect_stdio(command[0], command[1:], config=HANDSHAKE,
                       on_notification=lambda n: seen.append(n.method)) as client:
        assert text(client.call_tool("grow_later", {"name": "extra"})) == "growing"
        wait_for_list_changed(client, seen)
        assert "extra" in [tool.name for tool in client.list_tools()]


def test_http_a_list_change_announced_outside_a_request_reaches_the_client(http_url: str) -> None:
    seen: list[str] = []

    def note(notification: NotificationReceived) -> None:
        seen.append(notification.method)

    with connect_http(http_url, config=HANDSHAKE, on_notification=note) as client:
        name = f"extra_{time.monotonic_ns()}"  # the module's server is shared by the tests
        assert text(client.call_tool("grow_later", {"name": name})) == "growing"
        wait_for_list_changed(client, seen)
        assert name in [tool.name for tool in client.list_tools()]


# ---------------------------------------------------------------- -> int in both eras (#18 items 1, 2)


@pytest.mark.parametrize("config", [ClientConfig(), HANDSHAKE], ids=["2026-07-28", "2025-11-25"])
def test_a_plain_int_tool_answers_each_era_what_it_allows(http_url: str, config: ClientConfig) -> None:
    with connect_http(http_url, config=config) as client:
        listed = {tool.name: tool for tool in client.list_tools()}
        added = client.call_tool("add", {"a": 2, "b": 3})
        assert text(added) == "5"
        if config.protocol == "auto":
            assert listed["add"].output_schema == {"type": "integer"} and added.structured_content == 5
        else:
            assert listed["add"].output_schema == {
                "type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"],
                "x-fastmcp-wrap-result": True}
            assert added.structured_content == {"result": 5}


# ---------------------------------------------------------------- errors (#17)


def test_masked_error_details_reach_the_log_not_the_client(server_driver: str) -> None:
    got, stderr = lines(server_driver, call(1, "leak", {}), call(2, "refuse", {"city": "X"}),
                        call(3, "add", {"a": 1, "b": 2, "c": 3}), answers=3, more=("--mask-error-details",))
    answers = {answer["id"]: answer["result"] for _, answer in got}
    assert answers[1] == {"content": [{"type": "text", "text": "Error calling tool 'leak'"}], "isError": True}
    assert answers[2] == {"content": [{"type": "text", "text": "no such city: X"}], "isError": True}
    assert "unknown field `c`" in answers[3]["content"][0]["text"]  # type: ignore[index]
    assert "ValueError: secret internal detail /etc/passwd" in stderr  # the traceback, for the operator


def test_a_def_tool_in_flight_when_input_ends_is_still_answered(server_driver: str) -> None:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    piped = b"".join(json.dumps(m).encode() + b"\n" for m in (init, call(1, "sleepy", {"seconds": 0.5})))
    done = subprocess.run(serve(server_driver), input=piped, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[1]["result"] == {"content": [{"type": "text", "text": "slept 0.5"}]}


def test_our_cli_prints_a_bare_int_structured_result_of_2026() -> None:
    server = " ".join(serve("asyncio"))
    done = subprocess.run([sys.executable, "-m", "mcp_sansio_cli", "call", "add", "--stdio", server,
                           "--args", '{"a": 2, "b": 3}'], capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, b"5\n"), done.stderr
