"""Every driver's ``ServerManager`` against real servers: a mix of transports, batched
start-up, restarts, timeouts, URL elicitation retries, cached listings, result budgets.

Each case runs on each driver (``driver``: asyncio, anyio on asyncio and on trio,
blocking) through ``driver.manager(...)``; a case left out on a driver says why beside it.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import anyio
import pytest
from peer_servers import (
    SERVERS_DIR,
    everything_http,
    everything_stdio,
    free_port,
    running_http_server,
    sdk_server,
)

from mcp_sansio.errors import ConnectionClosed, LocalProtocolError, RequestError, RequestTimeout
from mcp_sansio.hostconfig import HttpServerConfig, Transport
from mcp_sansio.manager_lifecycle import ConnectionState, ServerUnavailable
from mcp_sansio.result_policy import OverflowAction, ResultPolicy
from mcp_sansio.types import ElicitRequestParams, ElicitResult, TextContent
from mcp_sansio_anyio.manager import ServerManager as AnyioServerManager

from .driver_adapter import CONCURRENT_DRIVERS, ClientUnderTest, Driver, ManagerUnderTest, text_of
from .manager_helpers import (
    DEMO,
    FAST_RESTART,
    NONEXISTENT,
    QUICK,
    entry,
    eventually,
    hinted,
    hostile,
    manager_server,
    most_starting_at_once,
    stdio,
)

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

MCP1_PYTHON = Path(__file__).resolve().parents[2] / ".venv-mcp1" / "bin" / "python"


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    """The everything server over Streamable HTTP."""
    port = free_port()
    with running_http_server(*everything_http("streamableHttp", port), port, "/mcp") as url:
        yield url


def states_of(manager: ManagerUnderTest) -> dict[str, str]:
    """Every server's state, by name."""
    return {name: status.state.value for name, status in manager.states.items()}


async def stdio_client(manager: ManagerUnderTest, name: str) -> ClientUnderTest:
    """The live client of the stdio server ``name`` (it has a ``pid``)."""
    client = await manager.connect(name)
    assert hasattr(client, "pid"), client
    return cast(ClientUnderTest, client)


async def test_a_mix_of_real_servers_connects_in_one_call(driver: Driver, everything_url: str) -> None:
    entries = [
        entry("everything", stdio(*everything_stdio())),
        entry("everything-http", HttpServerConfig(url=everything_url)),
        entry("sdk", stdio(*sdk_server("sdk_server"))),
        entry("broken", NONEXISTENT),
        entry("off", DEMO, disabled=True),
    ]
    async with driver.manager(entries, client_config=QUICK) as manager:
        await manager.connect_all()
        assert states_of(manager) == {"everything": "connected", "everything-http": "connected",
                                      "sdk": "connected", "broken": "failed", "off": "disabled"}
        broken = manager.states["broken"]
        assert broken.error is not None and "No such file" in broken.error
        assert (broken.scope.name, broken.source) == ("PROJECT", "/project/.mcp.json")
        names = {tool.name: tool for tool in await manager.tools()}
        assert {"mcp__everything__echo", "mcp__everything-http__echo", "mcp__sdk__add"} <= names.keys()
        assert (names["mcp__sdk__add"].server, names["mcp__sdk__add"].tool.name) == ("sdk", "add")
        assert manager.states["sdk"].tool_count == len(await manager.list_tools("sdk"))
        over_http = await manager.call_tool("mcp__everything-http__echo", {"message": "hi"})
        assert "hi" in text_of(over_http)
        assert text_of(await manager.call_tool("mcp__sdk__add", {"a": 2, "b": 3})) == "5"
        assert [r.uri for r in await manager.list_resources("sdk")] == ["test://static/hello"]
        assert [p.name for p in await manager.list_prompts("sdk")] == ["review"]
        with pytest.raises(ServerUnavailable, match="disabled") as refused:
            await manager.connect("off")
        assert refused.value.state is ConnectionState.DISABLED


async def test_no_more_than_three_stdio_servers_start_at_once(driver: Driver, tmp_path: Path) -> None:
    log = tmp_path / "starts.jsonl"
    entries = [entry(f"s{i}", manager_server("--init-delay", "0.3", "--log", str(log))) for i in range(7)]
    async with driver.manager(entries) as manager:
        began = time.monotonic()
        await manager.connect_all()
        elapsed = time.monotonic() - began
        assert set(states_of(manager).values()) == {"connected"}
    assert most_starting_at_once(log) == 3
    assert elapsed >= 0.9  # three batches of 0.3 s


async def test_connect_returns_the_same_live_client(driver: Driver) -> None:
    async with driver.manager([entry("demo", DEMO)]) as manager:
        client = await manager.connect("demo")
        assert await manager.connect("demo") is client
        assert client.server_info.name


async def test_a_crashed_server_is_restarted_on_its_next_use(driver: Driver) -> None:
    servers = [entry("crashy", hostile("crash-after", "3"))]
    async with driver.manager(servers, restart=FAST_RESTART, client_config=QUICK) as manager:
        first = await stdio_client(manager, "crashy")
        with pytest.raises(ConnectionClosed):
            for _ in range(3):
                await manager.call_tool("mcp__crashy__poke")
        crashed = manager.states["crashy"]
        assert (crashed.state, crashed.attempts) == (ConnectionState.FAILED, 1)
        assert "crashing after 3 requests" in crashed.stderr_tail
        assert text_of(await manager.call_tool("mcp__crashy__poke")) == "ok"
        second = await stdio_client(manager, "crashy")
        assert manager.states["crashy"].state is ConnectionState.CONNECTED
        assert second.pid != first.pid


async def test_states_notice_a_server_that_died_between_uses(driver: Driver) -> None:
    async with driver.manager([entry("demo", DEMO)], restart=FAST_RESTART) as manager:
        client = await stdio_client(manager, "demo")
        assert client.pid is not None
        assert "mcp__demo__echo" in [tool.name for tool in await manager.tools()]
        os.kill(client.pid, signal.SIGKILL)
        await eventually(lambda: manager.states["demo"].state is ConnectionState.FAILED)
        assert text_of(await manager.call_tool("mcp__demo__echo", {"message": "back"})) == "back"


async def test_a_server_slower_than_mcp_timeout_fails_while_the_others_connect(driver: Driver) -> None:
    # MCP_TIMEOUT bounds every server's connect: the demo server must start within it even
    # on a loaded machine (a Python start there can take over a second), the slow one never.
    entries = [entry("slow", hostile("slow-start", "60")), entry("demo", DEMO)]
    async with driver.manager(entries, env={"MCP_TIMEOUT": "4000"}, client_config=QUICK) as manager:
        began = time.monotonic()
        await manager.connect_all()
        assert time.monotonic() - began < 15
        assert states_of(manager) == {"slow": "failed", "demo": "connected"}
        assert "(initialize_timeout 4 s): initialize went unanswered" in (manager.states["slow"].error or "")


async def test_tool_calls_time_out_per_server_and_per_call(driver: Driver) -> None:
    servers = [entry("stall", hostile("stall", timeout=0.3))]
    async with driver.manager(servers, client_config=QUICK) as manager:
        await manager.connect_all()
        began = time.monotonic()
        with pytest.raises(RequestTimeout):
            await manager.call_tool("mcp__stall__poke")
        assert 0.25 < time.monotonic() - began < 2
        began = time.monotonic()
        with pytest.raises(RequestTimeout):
            await manager.call_tool("mcp__stall__poke", timeout=0.1)
        assert time.monotonic() - began < 0.3
        assert manager.states["stall"].state is ConnectionState.CONNECTED


async def test_a_url_elicitation_error_is_handed_over_then_retried(driver: Driver) -> None:
    seen: list[str | None] = []

    async def accept(params: ElicitRequestParams) -> ElicitResult:
        seen.append(params.url)
        return ElicitResult(action="accept")

    servers = [entry("auth", manager_server("--elicit-failures", "2"))]
    async with driver.manager(servers, on_elicitation=accept) as manager:
        assert text_of(await manager.call_tool("mcp__auth__authorize")) == "authorized"
    assert seen == ["https://example.com/auth"] * 2


async def test_url_elicitation_retries_stop_after_three(driver: Driver) -> None:
    seen: list[str | None] = []

    async def accept(params: ElicitRequestParams) -> dict[str, object]:
        seen.append(params.elicitation_id)
        return {"action": "accept"}

    servers = [entry("auth", manager_server("--elicit-failures", "10"))]
    async with driver.manager(servers, on_elicitation=accept) as manager:
        with pytest.raises(RequestError) as failed:
            await manager.call_tool("mcp__auth__authorize")
    assert failed.value.code == -32042
    assert seen == ["e1"] * 3


async def test_a_declined_url_elicitation_is_not_retried(driver: Driver) -> None:
    async def decline(params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="decline")

    servers = [entry("auth", manager_server("--elicit-failures", "1"))]
    async with driver.manager(servers, on_elicitation=decline) as manager:
        with pytest.raises(RequestError, match="URL elicitation required"):
            await manager.call_tool("mcp__auth__authorize")


async def test_list_changed_refreshes_the_cached_tools(driver: Driver) -> None:
    async with driver.manager([entry("grow", manager_server())]) as manager:
        tools = await manager.list_tools("grow")
        assert [tool.name for tool in tools] == ["echo", "big", "grow", "authorize"]
        assert await manager.list_tools("grow") == tools
        await manager.call_tool("mcp__grow__grow")

        async def grown() -> bool:
            return "extra" in [tool.name for tool in await manager.list_tools("grow")]

        await eventually(grown)
        assert "mcp__grow__extra" in [tool.name for tool in await manager.tools()]
        assert manager.states["grow"].tool_count == 5


@pytest.mark.parametrize(("ttl_ms", "cached"), [(600_000, True), (0, False)])
async def test_tools_listings_are_cached_as_the_servers_hints_say(driver: Driver, ttl_ms: int,
                                                                  cached: bool) -> None:
    async with driver.manager(hinted(ttl_ms), client_config=QUICK) as manager:
        assert (await manager.connect("hinted")).era == "modern"
        assert [tool.name for tool in await manager.list_tools("hinted")] == ["grow"]
        await manager.call_tool("mcp__hinted__grow")  # changes the tools without notifying anyone
        names = [tool.name for tool in await manager.list_tools("hinted")]
        assert names == (["grow"] if cached else ["grow", "extra"])
        reads = [await manager.read_resource("hinted", "counter://reads") for _ in range(2)]
        assert [read.contents[0].text for read in reads] == (["1", "1"] if cached else ["1", "2"])


async def test_an_over_budget_result_is_persisted_under_result_dir(driver: Driver, tmp_path: Path) -> None:
    policy = ResultPolicy(max_tokens=100, action=OverflowAction.PERSIST)
    servers = [entry("s", manager_server())]
    async with driver.manager(servers, result_dir=tmp_path, result_policy=policy) as manager:
        result = await manager.call_tool("mcp__s__big", {"size": 10_000})
    [note] = result.content
    assert isinstance(note, TextContent)
    [path] = [path async for path in anyio.Path(tmp_path).iterdir()]
    assert str(path) in note.text and await path.read_text() == "x" * 10_000


async def test_an_over_budget_result_is_truncated_by_default(driver: Driver) -> None:
    servers = [entry("s", manager_server())]
    async with driver.manager(servers, env={"MAX_MCP_OUTPUT_TOKENS": "100"}) as manager:
        result = await manager.call_tool("mcp__s__big", {"size": 10_000})
    assert [text_of(result)[:3], len(text_of(result))] == ["xxx", 400]
    assert "truncated 9,600 of 10,000 characters" in str(result.content[-1])


# Not on the blocking driver: its manager is used from one thread, so nothing can close it
# while connect_all() holds that thread, and its attempts run in worker threads, which
# cannot be stopped (close() waits for their handshakes to end).
@pytest.mark.parametrize("driver", CONCURRENT_DRIVERS, indirect=True)
async def test_aclose_stops_an_attempt_under_way(driver: Driver) -> None:
    async with driver.manager([entry("slow", hostile("slow-start", "30"))], client_config=QUICK) as manager:
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.connect_all)
            await eventually(lambda: manager.states["slow"].state is ConnectionState.CONNECTING)
            await manager.aclose()
        assert manager.states["slow"].state is ConnectionState.PENDING


# Only anyio's: its connections live in the task group that ``async with`` opens; the
# asyncio and blocking managers work without one (they are closed with aclose() / close()).
@pytest.mark.parametrize("driver", ["anyio-asyncio", "anyio-trio"], indirect=True)
async def test_the_anyio_manager_runs_only_inside_async_with(driver: Driver) -> None:
    with pytest.raises(LocalProtocolError, match="async with"):
        await AnyioServerManager([entry("demo", DEMO)]).connect_all()


async def test_a_ws_server_is_reached_through_the_websocket_driver(driver: Driver) -> None:
    if not MCP1_PYTHON.is_file():
        pytest.fail(f"{MCP1_PYTHON} is missing: run `scripts/dev setup`", pytrace=False)
    port = free_port()
    args = [str(SERVERS_DIR / "ws_server.py"), "--port", str(port)]
    with running_http_server(str(MCP1_PYTHON), args, None, port, "/ws") as url:
        config = HttpServerConfig(url=url.replace("http://", "ws://", 1), transport=Transport.WS)
        async with driver.manager([entry("ws", config)]) as manager:
            assert text_of(await manager.call_tool("mcp__ws__echo", {"message": "over ws"})) == "over ws"
            assert manager.states["ws"].transport == "ws"


async def test_a_server_answering_401_needs_auth(driver: Driver) -> None:
    port = free_port()
    command, args = sdk_server("hostile_http", "unauthorized", str(port))
    with running_http_server(command, args, None, port, "/mcp") as url:
        async with driver.manager([entry("locked", HttpServerConfig(url=url))]) as manager:
            await manager.connect_all()
            status = manager.states["locked"]
            assert (status.state, status.transport) == (ConnectionState.NEEDS_AUTH, "http")
            with pytest.raises(ServerUnavailable, match="needs authorization: HTTP 401"):
                await manager.connect("locked")


async def test_a_name_listed_twice_by_one_server_reaches_the_model_once(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    async with driver.manager([entry("srv", hostile("duplicates"))], client_config=QUICK) as manager:
        await manager.connect_all()
        tools = await manager.tools()
        assert [(tool.name, tool.tool.description) for tool in tools] == [
            ("mcp__srv__poke", "Provoke the server"), ("mcp__srv__other", "Provoke the server")]
        prompts = await manager.prompts()
        assert [(each.name, each.prompt.description) for each in prompts] == [("mcp__srv__greet", "first")]
        assert text_of(await manager.call_tool("mcp__srv__poke")) == "ok"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "server 'srv' listed the tool name 'poke' more than once: the first of each is used, " \
           "the others are left out" in warnings
    assert any(w.startswith("server 'srv' listed the prompt name 'greet' more than once") for w in warnings)
