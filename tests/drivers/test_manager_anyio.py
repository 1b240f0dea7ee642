"""The anyio ServerManager, on asyncio and on trio, against real stdio servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from peer_servers import free_port, running_http_server, sdk_server

from mcp_sansio.errors import ConnectionClosed, LocalProtocolError
from mcp_sansio.hostconfig import HttpServerConfig
from mcp_sansio.manager import ConnectionState
from mcp_sansio_anyio import StdioConnection
from mcp_sansio_anyio.manager import ServerManager

from .driver_adapter import text_of
from .manager_helpers import (
    DEMO,
    FAST_RESTART,
    NONEXISTENT,
    QUICK,
    entry,
    hinted,
    hostile,
    listings_follow_the_hints,
    manager_server,
    most_starting_at_once,
)

pytestmark = [pytest.mark.anyio, pytest.mark.peer]


@pytest.fixture
def remote_url() -> Iterator[str]:
    """An official-SDK server over Streamable HTTP, for a remote entry."""
    port = free_port()
    command, args = sdk_server("sdk_server", "--transport", "streamable-http", "--port", str(port))
    with running_http_server(command, args, None, port, "/mcp") as url:
        yield url


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """The anyio manager runs on both backends."""
    backend: str = request.param
    return backend


async def test_servers_connect_fail_and_restart_after_a_crash(remote_url: str) -> None:
    entries = [entry("demo", DEMO), entry("broken", NONEXISTENT),
               entry("remote", HttpServerConfig(url=remote_url)),
               entry("crashy", hostile("crash-after", "3"))]
    async with ServerManager(entries, restart=FAST_RESTART, client_config=QUICK) as manager:
        await manager.connect_all()
        states = manager.states
        assert {name: status.state.value for name, status in states.items()} == {
            "demo": "connected", "broken": "failed", "remote": "connected", "crashy": "connected"}
        assert text_of(await manager.call_tool("mcp__remote__echo", {"message": "far"})) == "far"
        assert "mcp__demo__echo" in [tool.name for tool in await manager.tools()]
        assert text_of(await manager.call_tool("mcp__demo__echo", {"message": "hi"})) == "hi"
        first = await manager.connect("crashy")
        with pytest.raises(ConnectionClosed):
            for _ in range(3):
                await manager.call_tool("mcp__crashy__poke")
        assert manager.states["crashy"].state is ConnectionState.FAILED
        assert text_of(await manager.call_tool("mcp__crashy__poke")) == "ok"
        second = await manager.connect("crashy")
        assert isinstance(first, StdioConnection) and isinstance(second, StdioConnection)
        assert second.pid != first.pid


async def test_no_more_than_three_start_at_once(tmp_path: Path) -> None:
    log = tmp_path / "starts.jsonl"
    entries = [entry(f"s{i}", manager_server("--init-delay", "0.2", "--log", str(log))) for i in range(5)]
    async with ServerManager(entries) as manager:
        await manager.connect_all()
        assert {status.state for status in manager.states.values()} == {ConnectionState.CONNECTED}
    assert most_starting_at_once(log) == 3


async def test_the_manager_runs_only_inside_async_with() -> None:
    with pytest.raises(LocalProtocolError, match="async with"):
        await ServerManager([entry("demo", DEMO)]).connect_all()


@pytest.mark.parametrize(("ttl_ms", "cached"), [(600_000, True), (0, False)])
async def test_tools_listings_are_cached_as_the_servers_hints_say(ttl_ms: int, cached: bool) -> None:
    async with ServerManager(hinted(ttl_ms), client_config=QUICK) as manager:
        await listings_follow_the_hints(manager, cached)
