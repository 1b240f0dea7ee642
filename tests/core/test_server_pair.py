"""The client core and the server core together, in memory, in both eras (tests/pair.py).

Handlers run on the shared ``ServerRunner`` over the pair's manual loop, so every feature
is checked from the application's ``MCPServer`` to the client's events.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pair import Faults, HttpPair, Pair

from mcp_sansio import (
    ClientConfig,
    NotificationReceived,
    ProgressReceived,
    RequestFailed,
    ResponseReceived,
)
from mcp_sansio.server import Ask, ClientInitialized, Context, MCPServer, ResourceSubscribed
from mcp_sansio.types import (
    CallToolResult,
    ClientCapabilities,
    CompleteResult,
    CreateMessageResult,
    ElicitResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsResult,
    ListToolsResult,
    LoggingMessageNotificationParams,
    ReadResourceResult,
    RootsCapability,
    TextContent,
)

ERAS = ["2025-11-25", "2026-07-28"]
ALL_ERAS = ["2024-11-05", "2025-03-26", "2025-06-18", *ERAS]
CAPS = ClientCapabilities(sampling={}, elicitation={"form": {}}, roots=RootsCapability())
ANSWERS: dict[str, object] = {
    "elicitation/create": lambda p: {"action": "accept", "content": {"answer": p.message}},
    "sampling/createMessage": {"role": "assistant", "model": "m",
                               "content": {"type": "text", "text": "Paris"}},
    "roots/list": {"roots": [{"uri": "file:///repo"}]},
}


class Weather(msgspec.Struct):
    city: str
    celsius: float


def _app() -> MCPServer:
    app = MCPServer("pair", version="1.0")

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @app.tool()
    async def weather(city: str) -> Weather:
        return Weather(city=city, celsius=21.5)

    @app.tool()
    async def chatty(ctx: Context) -> str:
        for step in range(3):
            ctx.report_progress(step + 1, 3, f"step {step + 1}")
        ctx.info("working")
        ctx.debug("details")
        ctx.warning("careful")
        ctx.error("oops")
        return "done"

    @app.tool()
    async def interview(ctx: Context) -> str:
        name = await ctx.elicit("name", {"type": "object"})
        color = await ctx.elicit("color", {"type": "object"})
        return f"{name.content} {color.content}"

    @app.tool()
    async def everything(ctx: Context) -> str:
        elicited, sampled, roots = await ctx.ask(Ask.elicit("who"), Ask.sample("capital?", max_tokens=9),
                                                  Ask.list_roots())
        assert isinstance(elicited, ElicitResult) and isinstance(sampled, CreateMessageResult)
        assert isinstance(roots, ListRootsResult) and isinstance(sampled.content, TextContent)
        return f"{elicited.content} {sampled.content.text} {roots.roots[0].uri}"

    @app.tool()
    async def single(ctx: Context) -> str:
        sampled = await ctx.sample("capital?", max_tokens=5)
        roots = await ctx.list_roots()
        url = await ctx.elicit_url("open", "https://example.com")
        return f"{sampled.model} {len(roots.roots)} {url.action}"

    @app.tool()
    async def remember(ctx: Context) -> str:
        ctx.state.setdefault("runs", 0)
        ctx.state["runs"] = ctx.state["runs"] + 1  # type: ignore[operator]
        await ctx.elicit("more", {"type": "object"})
        return f"runs={ctx.state['runs']} cancelled={ctx.cancelled} id={ctx.request_id}"

    @app.tool()
    async def who(ctx: Context) -> str:
        info = ctx.client_info
        return f"{ctx.protocol_version} {info.name if info else None} {ctx.client_capabilities.sampling}"

    @app.tool()
    async def forever(ctx: Context) -> str:
        await ctx.elicit("never answered", {"type": "object"}, key="forever")
        return "unreachable in the handshake era"

    @app.tool()
    def broken() -> str:
        raise ValueError("broken tool")

    @app.tool()
    async def broken_async() -> str:
        raise ValueError("broken async tool")

    @app.tool()
    async def bad_value() -> object:
        return object()

    app.add_resource("test://static", text="static text")

    @app.resource("test://item/{n}")
    async def item(n: int) -> str:
        return f"item {n}"

    @app.prompt()
    def review(code: str) -> str:
        return f"review {code}"

    app.add_completion(prompt="review", argument="code", values=["python", "perl"])
    return app


def _pair(protocol: str, **kwargs: Any) -> Pair:
    pair = Pair(_app(), config=ClientConfig(protocol=protocol), capabilities=kwargs.pop("capabilities", CAPS),
                answers=kwargs.pop("answers", ANSWERS), **kwargs)
    pair.start()
    pair.take_client_events()
    return pair


def _result(pair: Pair, rid: int) -> Any:
    for event in pair.take_client_events():
        if isinstance(event, ResponseReceived) and event.request_id == rid:
            return event.result
        if isinstance(event, RequestFailed) and event.request_id == rid:
            return event
    raise AssertionError(f"no answer to {rid}")


def _tool(pair: Pair, name: str, arguments: dict[str, object] | None = None) -> CallToolResult:
    rid = pair.client.call_tool(name, arguments or {}, now=pair.now)
    pair.settle()
    result = _result(pair, rid)
    assert isinstance(result, CallToolResult), result
    return result


R = TypeVar("R")


def _as(kind: type[R], value: object) -> R:
    """``value``, which must be a ``kind`` (and is typed as one)."""
    assert isinstance(value, kind), value
    return value


def _text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("protocol", ALL_ERAS)
def test_the_handshake_or_discovery_settles_the_era(protocol: str) -> None:
    pair = Pair(_app(), config=ClientConfig(protocol=protocol))
    pair.start()
    assert pair.client.protocol_version == protocol
    initialized = [e for e in pair.server_events if isinstance(e, ClientInitialized)]
    assert len(initialized) == (0 if protocol == "2026-07-28" else 1)


@pytest.mark.parametrize("protocol", ALL_ERAS)
def test_a_plain_tool_is_called(protocol: str) -> None:
    assert _text(_tool(_pair(protocol), "add", {"a": 2, "b": 3})) == "5"


@pytest.mark.parametrize("protocol", ALL_ERAS)
def test_our_client_accepts_a_plain_int_result_in_every_era(protocol: str) -> None:
    result = _tool(_pair(protocol), "add", {"a": 2, "b": 3})
    assert result.structured_content == (5 if protocol == "2026-07-28" else {"result": 5})


@pytest.mark.parametrize("protocol", ERAS)
def test_a_change_announced_by_the_app_outside_a_request_reaches_the_client(protocol: str) -> None:
    pair = _pair(protocol)
    pair.client.listen(now=0.0)
    pair.settle()
    pair.take_client_events()
    app = pair.server.app
    app.remove_tool("add")
    app.notify_list_changed("tools")
    pair.settle()
    methods = [e.method for e in pair.take_client_events() if isinstance(e, NotificationReceived)]
    assert methods == ["notifications/tools/list_changed"]
    pair.runner.cancel_all()  # the transport is gone: the app no longer reaches it
    pair.runner.cancel_all()
    app.notify_list_changed("tools")
    pair.settle()
    assert not pair.take_client_events()


@pytest.mark.parametrize("protocol", ERAS)
def test_a_resource_update_announced_by_the_app_reaches_its_subscribers(protocol: str) -> None:
    pair = _pair(protocol)
    pair.client.subscribe_resource("test://static", now=0.0)
    pair.settle()
    pair.take_client_events()
    pair.server.app.notify_resource_updated("test://static")
    pair.settle()
    updated = [e for e in pair.take_client_events() if isinstance(e, NotificationReceived)]
    assert [e.method for e in updated] == ["notifications/resources/updated"]


@pytest.mark.parametrize("protocol", ERAS)
def test_a_structured_async_tool_answers_structured_content(protocol: str) -> None:
    result = _tool(_pair(protocol), "weather", {"city": "Oslo"})
    assert result.structured_content == {"city": "Oslo", "celsius": 21.5}


@pytest.mark.parametrize("protocol", ERAS)
def test_every_list_arrives(protocol: str) -> None:
    pair = _pair(protocol)
    ids = [pair.client.list_tools(now=0.0), pair.client.list_resources(now=0.0),
           pair.client.list_resource_templates(now=0.0), pair.client.list_prompts(now=0.0)]
    pair.settle()
    results = {e.request_id: e.result for e in pair.take_client_events() if isinstance(e, ResponseReceived)}
    assert len(_as(ListToolsResult, results[ids[0]]).tools) == 12
    assert [r.uri for r in _as(ListResourcesResult, results[ids[1]]).resources] == ["test://static"]
    templates = _as(ListResourceTemplatesResult, results[ids[2]]).resource_templates
    assert [t.uri_template for t in templates] == ["test://item/{n}"]
    assert [p.name for p in _as(ListPromptsResult, results[ids[3]]).prompts] == ["review"]


@pytest.mark.parametrize("protocol", ERAS)
def test_lists_follow_every_page(protocol: str) -> None:
    app = _app()
    app.config = msgspec.structs.replace(app.config, page_size=3)
    pair = Pair(app, config=ClientConfig(protocol=protocol))
    pair.start()
    rid = pair.client.list_tools(now=0.0)
    pair.settle()
    assert len(_result(pair, rid).tools) == 12


@pytest.mark.parametrize("protocol", ERAS)
def test_progress_and_logs_reach_the_client(protocol: str) -> None:
    pair = _pair(protocol)
    pair.client.set_logging_level("info", now=0.0)
    pair.settle()
    pair.take_client_events()
    rid = pair.client.call_tool("chatty", {}, now=0.0)
    pair.settle()
    events = pair.take_client_events()
    progress = [(e.progress, e.message) for e in events if isinstance(e, ProgressReceived)]
    assert progress == [(1, "step 1"), (2, "step 2"), (3, "step 3")]
    logs = [_as(LoggingMessageNotificationParams, e.params).data for e in events
            if isinstance(e, NotificationReceived) and e.method == "notifications/message"]
    assert logs == ["working", "careful", "oops"]
    assert any(isinstance(e, ResponseReceived) and e.request_id == rid for e in events)


@pytest.mark.parametrize("protocol", ERAS)
def test_one_question_at_a_time_in_both_eras(protocol: str) -> None:
    assert _text(_tool(_pair(protocol), "interview")) == "{'answer': 'name'} {'answer': 'color'}"


@pytest.mark.parametrize("protocol", ERAS)
def test_several_questions_in_one_round(protocol: str) -> None:
    assert _text(_tool(_pair(protocol), "everything")) == "{'answer': 'who'} Paris file:///repo"


@pytest.mark.parametrize("protocol", ERAS)
def test_sampling_roots_and_url_elicitation(protocol: str) -> None:
    caps = ClientCapabilities(sampling={}, elicitation={"form": {}, "url": {}}, roots=RootsCapability())
    answers = {**ANSWERS, "elicitation/create": {"action": "accept"}}
    assert _text(_tool(_pair(protocol, capabilities=caps, answers=answers), "single")) == "m 1 accept"


def test_state_kept_by_a_handler_survives_its_rounds() -> None:
    result = _tool(_pair("2026-07-28"), "remember")
    assert _text(result).startswith("runs=2 cancelled=False id=")


def test_the_handshake_era_runs_a_handler_once() -> None:
    assert _text(_tool(_pair("2025-11-25"), "remember")).startswith("runs=1 ")


@pytest.mark.parametrize("protocol", ERAS)
def test_a_handler_sees_who_asked(protocol: str) -> None:
    assert _text(_tool(_pair(protocol), "who")) == f"{protocol} mcp-sansio {{}}"


def test_a_missing_capability_is_a_tool_error_in_the_handshake_era() -> None:
    result = _tool(_pair("2025-11-25", capabilities=ClientCapabilities()), "single")
    assert result.is_error and "sampling" in _text(result)


def test_a_missing_capability_is_an_error_in_the_stateless_era() -> None:
    pair = _pair("2026-07-28", capabilities=ClientCapabilities())
    rid = pair.client.call_tool("single", {}, now=0.0)
    pair.settle()
    failed = _result(pair, rid)
    assert isinstance(failed, RequestFailed) and failed.error is not None and failed.error.code == -32021


@pytest.mark.parametrize("protocol", ERAS)
def test_a_failing_handler_is_a_tool_error(protocol: str) -> None:
    pair = _pair(protocol)
    assert _text(_tool(pair, "broken")) == "broken tool"
    assert _text(_tool(pair, "broken_async")) == "broken async tool"


@pytest.mark.parametrize("protocol", ERAS)
def test_a_value_the_method_cannot_send_is_a_tool_error(protocol: str) -> None:
    result = _tool(_pair(protocol), "bad_value")
    assert result.is_error


@pytest.mark.parametrize("protocol", ERAS)
def test_resources_prompts_and_completions(protocol: str) -> None:
    pair = _pair(protocol)
    read = pair.client.read_resource("test://item/7", now=0.0)
    static = pair.client.read_resource("test://static", now=0.0)
    prompt = pair.client.get_prompt("review", {"code": "x"}, now=0.0)
    complete = pair.client.complete({"type": "ref/prompt", "name": "review"}, "code", "py", now=0.0)
    pair.settle()
    results = {e.request_id: e.result for e in pair.take_client_events() if isinstance(e, ResponseReceived)}
    assert _as(ReadResourceResult, results[read]).contents[0].text == "item 7"
    assert _as(ReadResourceResult, results[static]).contents[0].text == "static text"
    assert _as(TextContent, _as(GetPromptResult, results[prompt]).messages[0].content).text == "review x"
    assert _as(CompleteResult, results[complete]).completion.values == ["python"]


@pytest.mark.parametrize("protocol", ["2025-11-25"])
def test_cancelling_a_call_stops_its_handler(protocol: str) -> None:
    pair = _pair(protocol, answers={})
    rid = pair.client.call_tool("forever", {}, now=0.0)
    pair.settle()
    assert pair.runner.running == 1
    pair.client.cancel(rid, now=0.0)
    pair.settle()
    assert pair.runner.running == 0
    assert all(task.finished for task in pair.loop.tasks)


def test_an_unanswered_question_times_out_in_the_handler() -> None:
    app = _app()
    app.config = msgspec.structs.replace(app.config, request_timeout=5.0)
    pair = Pair(app, config=ClientConfig(protocol="2025-11-25", request_timeout=60.0), capabilities=CAPS)
    pair.start()
    rid = pair.client.call_tool("forever", {}, now=0.0)
    pair.settle()
    pair.take_client_events()
    pair.advance(6.0)
    assert _text(_result(pair, rid)) == "the client did not answer in time"


@pytest.mark.parametrize("protocol", ERAS)
def test_subscriptions_and_list_changes_reach_the_client(protocol: str) -> None:
    pair = _pair(protocol)
    pair.client.subscribe_resource("test://static", now=0.0)
    pair.client.listen(now=0.0)
    pair.settle()
    pair.take_client_events()
    pair.server.notify_resource_updated("test://static")
    pair.server.notify_list_changed("tools")
    pair.settle()
    methods = [e.method for e in pair.take_client_events() if isinstance(e, NotificationReceived)]
    assert "notifications/resources/updated" in methods and "notifications/tools/list_changed" in methods
    if protocol == "2025-11-25":
        assert ResourceSubscribed(uri="test://static") in pair.server_events


def test_the_client_leaving_cancels_running_handlers() -> None:
    pair = _pair("2025-11-25", answers={})
    pair.client.call_tool("forever", {}, now=0.0)
    pair.settle()
    pair.server.receive_data(b"", pair.now)
    pair.runner.pump()
    pair.settle()
    assert pair.runner.terminated and pair.runner.running == 0


@given(st.integers(0, 2**16), st.sampled_from(ERAS))
@settings(max_examples=25, deadline=None)
def test_any_chunking_and_delay_gives_the_same_answers(seed: int, protocol: str) -> None:
    pair = Pair(_app(), config=ClientConfig(protocol=protocol), capabilities=CAPS, answers=ANSWERS,
                faults=Faults(seed=seed, split=True, delay=0.25))
    pair.start()
    for _ in range(10):
        pair.advance(0.25)
    pair.take_client_events()
    ids = [pair.client.call_tool("add", {"a": i, "b": 1}, now=pair.now) for i in range(3)]
    ids.append(pair.client.call_tool("interview", {}, now=pair.now))
    for _ in range(20):
        pair.advance(0.25)
    results = {e.request_id: e.result for e in pair.take_client_events() if isinstance(e, ResponseReceived)}
    assert [_text(results[i]) for i in ids[:3]] == ["1", "2", "3"]  # type: ignore[arg-type]
    assert _text(results[ids[3]]) == "{'answer': 'name'} {'answer': 'color'}"  # type: ignore[arg-type]


def test_dropped_lines_lose_requests_not_the_server() -> None:
    pair = Pair(_app(), config=ClientConfig(protocol="2025-11-25", request_timeout=5.0),
                faults=Faults(seed=3, drop=0.5))
    pair.client.start(now=0.0)
    for _ in range(40):
        pair.advance(1.0)
        if pair.client.protocol_version is not None:
            break
    pair.faults = Faults()
    if pair.client.protocol_version is None:  # the handshake itself was lost: start over
        return
    assert _text(_tool(pair, "add", {"a": 1, "b": 1})) == "2"


def test_reordered_lines_still_get_every_answer() -> None:
    pair = _pair("2026-07-28")
    pair.faults = Faults(seed=1, reorder=1.0)
    ids = [pair.client.call_tool("add", {"a": i, "b": 0}, now=0.0) for i in range(4)]
    pair.settle()
    results = {e.request_id: e.result for e in pair.take_client_events() if isinstance(e, ResponseReceived)}
    assert sorted(_text(results[i]) for i in ids) == ["0", "1", "2", "3"]  # type: ignore[arg-type]


def test_more_questioning_calls_than_connections_all_finish_over_http() -> None:
    """Each call's SSE stream holds a connection while it waits for the client's answer;
    the pool keeps one connection for answers, so eight such calls on eight connections
    (one more is the GET stream) finish instead of waiting forever."""
    pair = HttpPair(_app(), config=ClientConfig(protocol="2025-11-25", max_connections=8), capabilities=CAPS,
                    answers=ANSWERS)
    pair.start()
    ids = [pair.client.call_tool("interview", {}, now=pair.now) for _ in range(8)]
    for _ in range(10):
        pair.advance(0.1)
    results = {e.request_id: e.result for e in pair.take_client_events() if isinstance(e, ResponseReceived)}
    assert [_text(results[i]) for i in ids] == ["{'answer': 'name'} {'answer': 'color'}"] * 8  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", ERAS)
def test_a_handler_that_changes_the_tools_tells_the_clients(protocol: str) -> None:
    pair = _pair(protocol)
    app = pair.server.app

    def grow(ctx: Context) -> str:
        app.add_tool(lambda: "new", name="grown")
        ctx.notify_list_changed("tools")
        return "grew"

    app.add_tool(grow)
    pair.client.listen(now=0.0)
    pair.settle()
    pair.take_client_events()
    rid = pair.client.call_tool("grow", {}, now=pair.now)
    pair.settle()
    events = pair.take_client_events()
    methods = [e.method for e in events if isinstance(e, NotificationReceived)]
    assert "notifications/tools/list_changed" in methods
    assert any(isinstance(e, ResponseReceived) and e.request_id == rid for e in events)
