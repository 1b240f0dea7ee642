"""The shared server runner's dispatch of the closed ``ServerEvent`` union: it runs the
handler calls, keeps the core's own answers to itself, and passes every other event on."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any

import pytest
from pair import StepLoop
from server_helpers import request, send, server_for, take

from mcp_sansio.errors import RequestError
from mcp_sansio.events import ConnectionTerminated, MessageDiscarded, NotificationReceived
from mcp_sansio.server import ClientInitialized, MCPServer, ResourceSubscribed, ServerEvent, ToolError
from mcp_sansio.server.signature import HandlerSignature
from mcp_sansio_base.server import ServerRunner

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}


def _app() -> MCPServer:
    app = MCPServer("s")
    app.add_tool(lambda a: str(a + 1), name="inc")  # an untyped parameter: any JSON
    app.add_resource("test://r", text="r")
    app.report_answers = True  # the core's own answers become RequestAnswered events
    return app


def test_the_runner_runs_calls_and_passes_on_the_events_it_does_not_act_on() -> None:
    server = server_for(_app())
    seen: list[ServerEvent] = []
    runner = ServerRunner(server, StepLoop(lambda: 0.0), seen.append)
    send(server, request(0, "initialize", INIT), {"jsonrpc": "2.0", "method": "notifications/initialized"},
         {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
         request(1, "resources/subscribe", {"uri": "test://r"}),
         request(2, "tools/call", {"name": "inc", "arguments": {"a": 1}}))
    server.receive_data(b"not json\n", 0.0)
    runner.pump()
    answers = {message["id"]: message for message in take(server) if "id" in message}
    assert answers[2]["result"]["content"] == [{"type": "text", "text": "2"}]
    assert [type(event) for event in seen] == [ClientInitialized, NotificationReceived, ResourceSubscribed,
                                               MessageDiscarded]
    assert not runner.terminated
    server.receive_data(b"", 1.0)
    runner.pump()
    assert runner.terminated and isinstance(seen[-1], ConnectionTerminated)


def test_a_later_deadline_keeps_the_armed_timer_and_is_armed_when_that_fires() -> None:
    server = server_for(_app())
    now = [0.0]
    loop = StepLoop(lambda: now[0])
    runner = ServerRunner(server, loop)
    deadline: list[float | None] = [5.0]
    fired: list[float] = []
    # A stand-in for the core's timing: the test moves the deadline and records the fires.
    server.next_deadline = lambda: deadline[0]  # type: ignore[method-assign]  # stand-in, see above
    server.handle_timeout = fired.append  # type: ignore[method-assign, assignment]  # stand-in

    def armed() -> list[float]:
        return sorted(t.when for t in loop.timers if not t.cancelled)

    runner.pump()
    assert armed() == [5.0]
    deadline[0] = 7.0  # later (a request moved an idle timeout): no new timer per pump
    runner.pump()
    runner.pump()
    assert armed() == [5.0] and len(loop.timers) == 1
    deadline[0] = 3.0  # sooner: armed at once
    runner.pump()
    assert armed() == [3.0]
    deadline[0] = 7.0
    now[0] = 3.0
    loop.fire_due()  # fires early for the core (nothing due), whose pump arms the later one
    assert fired == [3.0] and armed() == [7.0]
    deadline[0] = None
    runner.pump()
    assert armed() == [7.0]  # no deadline: the armed timer fires once, harmlessly


_seen: contextvars.ContextVar[str] = contextvars.ContextVar("_seen", default="unset")


def test_an_async_def_that_never_awaits_is_answered_inline_in_a_context_of_its_own() -> None:
    app = MCPServer("s")

    @app.tool()
    async def inc(a: int) -> str:
        _seen.set("set by the handler")  # would leak into the driver's context if run there
        return str(a + 1)

    server = server_for(app)
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    send(server, request(0, "initialize", INIT), {"jsonrpc": "2.0", "method": "notifications/initialized"},
         request(1, "tools/call", {"name": "inc", "arguments": {"a": 1}}))
    runner.pump()
    answers = {message["id"]: message for message in take(server) if "id" in message}
    assert answers[1]["result"]["content"] == [{"type": "text", "text": "2"}]
    assert not loop.tasks  # answered in the pump: no task, no loop turn
    assert _seen.get() == "unset"


def test_an_async_def_that_never_awaits_fails_its_call_like_any_handler() -> None:
    app = MCPServer("s")

    @app.tool()
    async def broken() -> str:
        raise ToolError("no luck")

    server = server_for(app)
    runner = ServerRunner(server, StepLoop(lambda: 0.0))
    send(server, request(0, "initialize", INIT), {"jsonrpc": "2.0", "method": "notifications/initialized"},
         request(1, "tools/call", {"name": "broken", "arguments": {}}))
    runner.pump()
    answers = {message["id"]: message for message in take(server) if "id" in message}
    assert answers[1]["result"]["isError"] is True
    assert answers[1]["result"]["content"] == [{"type": "text", "text": "no luck"}]


class _AsyncCallable:
    async def __call__(self) -> str:
        return "x"


def _plain() -> str:
    return "x"


async def _returns() -> str:
    return "x"


async def _awaits() -> str:
    return await _returns()


async def _iterates(items: Any) -> None:
    async for _ in items:
        pass


async def _enters(manager: Any) -> None:
    async with manager:
        pass


class _Handlers:
    async def method(self) -> str:
        return "x"


@pytest.mark.parametrize(("fn", "suspends"), [
    (_plain, False),
    (_returns, False),
    (_Handlers().method, False),
    (_awaits, True),
    (_iterates, True),
    (_enters, True),
    (functools.partial(_returns), True),  # not read: taken to suspend
    (_AsyncCallable(), True),
])
def test_a_handler_is_read_as_suspending_only_when_its_code_can_yield(
        fn: Callable[..., object], suspends: bool) -> None:
    assert HandlerSignature(fn, name="h").suspends is suspends


def _cycle():  # type: ignore[no-untyped-def]  # unannotated: no output schema to derive
    value: dict[str, object] = {}
    value["self"] = value
    return value


def _deep():  # type: ignore[no-untyped-def]  # as above
    value: list[object] = []
    for _ in range(100_000):
        value = [value]
    return value


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


def _raise_unprintable() -> str:
    raise _Unprintable


def _raise_with_unsendable_data() -> str:
    raise RequestError(-32000, "refused", data=object())


@pytest.mark.parametrize(("fn", "answer"), [
    (_cycle, {"isError": True}),  # a cycle: RecursionError while encoding
    (_deep, {"isError": True}),  # nested too deep
    (_raise_unprintable, {"isError": True, "content": [{"type": "text", "text": "_Unprintable"}]}),
    (_raise_with_unsendable_data, {"code": -32000, "message": "refused"}),
], ids=["cycle", "deep", "unprintable-error", "unsendable-error-data"])
def test_a_value_or_error_that_cannot_be_sent_fails_the_call_and_the_runner_goes_on(
        fn: Callable[[], object], answer: dict[str, object]) -> None:
    app = MCPServer("s")
    app.add_tool(fn, name="odd")
    app.add_tool(lambda: "fine", name="fine")
    server = server_for(app)
    runner = ServerRunner(server, StepLoop(lambda: 0.0))
    send(server, request(0, "initialize", INIT), {"jsonrpc": "2.0", "method": "notifications/initialized"},
         request(1, "tools/call", {"name": "odd", "arguments": {}}),
         request(2, "tools/call", {"name": "fine", "arguments": {}}))
    runner.pump()
    answers = {message["id"]: message for message in take(server) if "id" in message}
    got = answers[1]["result"] if "result" in answers[1] else answers[1]["error"]
    assert {key: got[key] for key in answer} == answer
    assert answers[2]["result"]["content"] == [{"type": "text", "text": "fine"}]

def test_arm_by_arms_a_deadline_sooner_than_the_armed_timer_and_asks_nothing_otherwise() -> None:
    server = server_for(_app())
    loop = StepLoop(lambda: 0.0)
    runner = ServerRunner(server, loop)
    deadline: list[float | None] = [None]
    asked: list[float | None] = []

    def next_deadline() -> float | None:  # a stand-in for the core's timing that counts the asks
        asked.append(deadline[0])
        return deadline[0]

    server.next_deadline = next_deadline  # type: ignore[method-assign]  # stand-in, see above

    def armed() -> list[float]:
        return sorted(t.when for t in loop.timers if not t.cancelled)

    runner.arm_by(None)  # nothing armed
    assert asked == [] and armed() == []
    deadline[0] = 5.0
    runner.arm_by(5.0)  # no timer yet: armed from the core's deadline
    assert asked == [5.0] and armed() == [5.0]
    deadline[0] = 4.0  # (the core has an earlier one than the input added)
    runner.arm_by(9.0)  # the timer armed fires sooner: the core is not asked
    assert asked == [5.0] and armed() == [5.0]
    runner.arm_by(4.5)
    assert asked == [5.0, 4.0] and armed() == [4.0]
