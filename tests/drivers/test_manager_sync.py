"""The blocking ServerManager against real stdio servers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from peer_servers import free_port, running_http_server, sdk_server

from mcp_sansio.errors import ConnectionClosed, RequestError
from mcp_sansio.hostconfig import HttpServerConfig
from mcp_sansio.manager import ConnectionState
from mcp_sansio.types import ElicitRequestParams, ElicitResult
from mcp_sansio_sync import StdioConnection
from mcp_sansio_sync.manager import ServerManager

from .driver_adapter import text_of
from .manager_helpers import (
    DEMO,
    FAST_RESTART,
    NONEXISTENT,
    QUICK,
    entry,
    hinted,
    hostile,
    manager_server,
    most_starting_at_once,
)

pytestmark = pytest.mark.peer


@pytest.fixture
def remote_url() -> Iterator[str]:
    """An official-SDK server over Streamable HTTP, for a remote entry."""
    port = free_port()
    command, args = sdk_server("sdk_server", "--transport", "streamable-http", "--port", str(port))
    with running_http_server(command, args, None, port, "/mcp") as url:
        yield url


def test_servers_connect_fail_and_restart_after_a_crash(remote_url: str) -> None:
    entries = [entry("demo", DEMO), entry("broken", NONEXISTENT),
               entry("remote", HttpServerConfig(url=remote_url)),
               entry("crashy", hostile("crash-after", "3"))]
    with ServerManager(entries, restart=FAST_RESTART, client_config=QUICK) as manager:
        manager.connect_all()
        assert {name: status.state.value for name, status in manager.states.items()} == {
            "demo": "connected", "broken": "failed", "remote": "connected", "crashy": "connected"}
        assert "mcp__demo__echo" in [tool.name for tool in manager.tools()]
        assert text_of(manager.call_tool("mcp__demo__echo", {"message": "hi"})) == "hi"
        first = manager.connect("crashy")
        with pytest.raises(ConnectionClosed):
            for _ in range(3):
                manager.call_tool("mcp__crashy__poke")
        assert manager.states["crashy"].state is ConnectionState.FAILED
        assert text_of(manager.call_tool("mcp__crashy__poke")) == "ok"
        second = manager.connect("crashy")
        assert isinstance(first, StdioConnection) and isinstance(second, StdioConnection)
        assert second.pid != first.pid
        assert text_of(manager.call_tool("mcp__remote__echo", {"message": "far"})) == "far"



def test_no_more_than_three_start_at_once(tmp_path: Path) -> None:
    log = tmp_path / "starts.jsonl"
    entries = [entry(f"s{i}", manager_server("--init-delay", "0.2", "--log", str(log))) for i in range(5)]
    with ServerManager(entries) as manager:
        manager.connect_all()
        assert {status.state for status in manager.states.values()} == {ConnectionState.CONNECTED}
    assert most_starting_at_once(log) == 3


def test_url_elicitations_are_answered_inline_then_the_call_is_retried() -> None:
    seen: list[str | None] = []

    def accept(params: ElicitRequestParams) -> ElicitResult:
        seen.append(params.url)
        return ElicitResult(action="accept")

    servers = [entry("auth", manager_server("--elicit-failures", "5"))]
    with ServerManager(servers, on_elicitation=accept) as manager:
        with pytest.raises(RequestError):
            manager.call_tool("mcp__auth__authorize")
        assert len(seen) == 3
        assert text_of(manager.call_tool("mcp__auth__authorize")) == "authorized"


@pytest.mark.parametrize(("ttl_ms", "cached"), [(600_000, True), (0, False)])
def test_tools_listings_are_cached_as_the_servers_hints_say(ttl_ms: int, cached: bool) -> None:
    with ServerManager(hinted(ttl_ms), client_config=QUICK) as manager:
        assert manager.connect("hinted").era == "modern"
        assert [tool.name for tool in manager.list_tools("hinted")] == ["grow"]
        manager.call_tool("mcp__hinted__grow")
        names = [tool.name for tool in manager.list_tools("hinted")]
        assert names == (["grow"] if cached else ["grow", "extra"])
        reads = [manager.read_resource("hinted", "counter://reads") for _ in range(2)]
        assert [read.contents[0].text for read in reads] == (["1", "1"] if cached else ["1", "2"])
