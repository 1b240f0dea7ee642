"""The ASGI contract of ``AsgiApp``, driven in-process by a minimal host on asyncio and trio."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import MutableMapping
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread
import pytest

from mcp_sansio import MCPServer
from mcp_sansio.server.http import HttpConfig
from mcp_sansio.server.http11 import HttpLimits
from mcp_sansio_asgi import AsgiApp

pytestmark = [pytest.mark.anyio]

Message = MutableMapping[str, Any]



class Host:
    """A minimal ASGI server: the lifespan in a task, each request driven by hand."""

    def __init__(self, app: AsgiApp) -> None:
        self.app = app
        self._to_app, self._lifespan_in = anyio.create_memory_object_stream[Message](4)
        self.lifespan_out: list[Message] = []
        self._said = anyio.Event()

    async def start(self, group: anyio.abc.TaskGroup) -> None:
        async def send(message: Message) -> None:
            self.lifespan_out.append(message)
            self._said.set()

        async def lifespan() -> None:
            await self.app({"type": "lifespan"}, self._lifespan_in.receive, send)

        group.start_soon(lifespan)
        await self._to_app.send({"type": "lifespan.startup"})
        await self._said.wait()

    async def stop(self) -> None:
        self._said = anyio.Event()
        await self._to_app.send({"type": "lifespan.shutdown"})
        with anyio.fail_after(5):
            await self._said.wait()
        assert self.lifespan_out[-1] == {"type": "lifespan.shutdown.complete"}

    async def request(self, body: object, *, headers: dict[str, str] | None = None,
                      leave_after: float = 0.0) -> list[Message]:
        """POST ``body``; every message the app sent (leaving after ``leave_after`` s if > 0)."""
        sent: list[Message] = []
        fields = {"host": "127.0.0.1:8000", "accept": "application/json, text/event-stream",
                  "content-type": "application/json", **(headers or {})}
        scope = {"type": "http", "method": "POST", "path": "/mcp", "query_string": b"",
                 "headers": [(k.encode(), v.encode()) for k, v in fields.items()]}
        inbox: list[Message] = [{"type": "http.request", "body": json.dumps(body).encode()}]

        async def receive() -> Message:
            if inbox:
                return inbox.pop()
            if not leave_after:
                await anyio.sleep_forever()
            await anyio.sleep(leave_after)
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            sent.append(message)

        with anyio.fail_after(5):
            await self.app(scope, receive, send)
        return sent


def modern(rid: int, method: str, params: dict[str, object] | None = None) -> dict[str, object]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**(params or {}), "_meta": meta}}


HEADERS = {"mcp-protocol-version": "2026-07-28"}


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def sleeper() -> tuple[MCPServer, anyio.Event]:
    app = MCPServer("in-process")
    seen = anyio.Event()

    @app.tool()
    async def nap() -> str:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            seen.set()
            raise
        return "rested"

    @app.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return app, seen


async def test_a_stateless_call_is_answered_on_asyncio_and_trio() -> None:
    app, _ = sleeper()
    host = Host(AsgiApp(app))
    async with anyio.create_task_group() as group:
        await host.start(group)
        call = modern(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        headers = {**HEADERS, "mcp-method": "tools/call", "mcp-name": "add"}
        start, body = await host.request(call, headers=headers)
        await host.stop()
    assert host.lifespan_out[0] == {"type": "lifespan.startup.complete"}
    assert start["status"] == 200 and (b"content-type", b"application/json") in start["headers"]
    assert json.loads(body["body"])["result"]["content"] == [{"type": "text", "text": "5"}]


async def test_a_client_that_leaves_cancels_its_stateless_call() -> None:
    app, seen = sleeper()
    host = Host(AsgiApp(app))
    async with anyio.create_task_group() as group:
        await host.start(group)
        sent = await host.request(modern(1, "tools/call", {"name": "nap", "arguments": {}}),
                                  headers={**HEADERS, "mcp-method": "tools/call", "mcp-name": "nap"},
                                  leave_after=0.2)
        with anyio.fail_after(5):
            await seen.wait()
        await host.stop()
    assert sent == []


async def test_an_oversized_body_is_refused_with_413() -> None:
    app, _ = sleeper()
    limits = HttpLimits(max_body_bytes=64)
    host = Host(AsgiApp(app, config=HttpConfig.loopback(limits=limits)))
    async with anyio.create_task_group() as group:
        await host.start(group)
        start, _ = await host.request(modern(1, "tools/call", {"name": "add", "arguments": {"a": "x" * 100}}))
        await host.stop()
    assert start["status"] == 413


async def test_without_the_lifespan_a_request_gets_500_saying_so() -> None:
    app, _ = sleeper()
    start, body = await Host(AsgiApp(app)).request(modern(1, "ping"), headers=HEADERS)
    assert start["status"] == 500 and b"lifespan" in body["body"]


async def test_a_websocket_scope_is_refused() -> None:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "websocket.connect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await AsgiApp(sleeper()[0])({"type": "websocket", "path": "/mcp"}, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1003}]


async def test_a_blocking_def_tool_does_not_stall_another_request() -> None:
    app = MCPServer("blocking")
    started = threading.Event()

    @app.tool
    def block(seconds: float) -> str:
        started.set()
        time.sleep(seconds)
        return "woke"

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    host = Host(AsgiApp(app))
    answers: dict[str, float] = {}
    blocked = anyio.Event()

    async def call(name: str, arguments: dict[str, object]) -> None:
        headers = {**HEADERS, "mcp-method": "tools/call", "mcp-name": name}
        await host.request(modern(1, "tools/call", {"name": name, "arguments": arguments}), headers=headers)
        answers[name] = anyio.current_time()
        if name == "block":
            blocked.set()

    async with anyio.create_task_group() as group:
        await host.start(group)
        two_seconds: dict[str, object] = {"seconds": 2}
        group.start_soon(call, "block", two_seconds)
        assert await anyio.to_thread.run_sync(started.wait, 5)  # it blocks: now the other request
        begin = anyio.current_time()
        await call("add", {"a": 1, "b": 2})
        assert "block" not in answers and answers["add"] - begin < 1.5
        with anyio.fail_after(10):
            await blocked.wait()
        await host.stop()


async def test_a_handler_still_running_at_shutdown_has_ended_when_the_lifespan_completes() -> None:
    app = MCPServer("in-process")
    running = anyio.Event()
    ended: list[str] = []

    @app.tool()
    async def nap() -> str:
        running.set()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.1)  # its cleanup takes a while
            ended.append("cancelled")
            raise
        return "rested"

    host = Host(AsgiApp(app))
    headers = {**HEADERS, "mcp-method": "tools/call", "mcp-name": "nap"}
    async with anyio.create_task_group() as group:
        await host.start(group)
        call = modern(1, "tools/call", {"name": "nap", "arguments": {}})
        group.start_soon(functools.partial(host.request, call, headers=headers))
        with anyio.fail_after(5):
            await running.wait()
        await host.stop()
        assert ended == ["cancelled"]  # before lifespan.shutdown.complete was sent


async def test_a_blocking_def_handler_running_at_shutdown_does_not_hold_the_lifespan() -> None:
    app = MCPServer("in-process")
    started, release = threading.Event(), threading.Event()

    @app.tool
    def block() -> str:
        started.set()
        release.wait(10)
        return "woke"

    host = Host(AsgiApp(app))
    headers = {**HEADERS, "mcp-method": "tools/call", "mcp-name": "block"}
    try:
        async with anyio.create_task_group() as group:
            await host.start(group)
            call = modern(1, "tools/call", {"name": "block", "arguments": {}})
            group.start_soon(functools.partial(host.request, call, headers=headers))
            assert await anyio.to_thread.run_sync(started.wait, 5)
            begin = anyio.current_time()
            await host.stop()  # its thread is left to finish on its own
            assert anyio.current_time() - begin < 5
    finally:
        release.set()
