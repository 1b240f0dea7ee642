"""Every driver over WebSocket against the official SDK 1.x server (``tests/servers/ws_server.py``).

A smoke test per driver; ``test_websocket_peer.py`` covers the transport in depth with
the asyncio driver. The server runs in ``.venv-mcp1`` (made by ``scripts/dev setup``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from peer_servers import SERVERS_DIR, free_port, running_http_server

from mcp_sansio import ClientConfig, ConnectionClosed
from mcp_sansio.types import ResourceContents

from .driver_adapter import Driver, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

MCP1_PYTHON = Path(__file__).resolve().parents[2] / ".venv-mcp1" / "bin" / "python"


def _ws_server() -> Iterator[str]:
    if not MCP1_PYTHON.is_file():
        pytest.fail(f"{MCP1_PYTHON} is missing: run `scripts/dev setup`", pytrace=False)
    port = free_port()
    args = [str(SERVERS_DIR / "ws_server.py"), "--port", str(port)]
    with running_http_server(str(MCP1_PYTHON), args, None, port, "/ws") as url:
        yield url.replace("http://", "ws://", 1)


@pytest.fixture(scope="module")
def ws_url() -> Iterator[str]:
    """One server for the module's well-behaved tests."""
    yield from _ws_server()


@pytest.fixture
def doomed_ws_url() -> Iterator[str]:
    """A server of its own, for a test that kills it."""
    yield from _ws_server()


async def test_a_session_over_websocket_calls_reads_pings_and_closes(driver: Driver, ws_url: str) -> None:
    config = ClientConfig(close_timeout=10.0)
    async with driver.connect_websocket(ws_url, config=config, ping_interval=0.05) as client:
        assert client.subprotocol == "mcp" and client.url == ws_url
        assert client.server_info.name == "mcp-sansio-ws-test-server"
        assert [tool.name for tool in await client.list_tools()] == ["echo", "add", "slow", "kill_server"]
        assert text_of(await client.call_tool("echo", {"message": "a\nb é"})) == "a\nb é"
        [contents] = (await client.read_resource("test://greeting")).contents
        assert isinstance(contents, ResourceContents) and contents.text == "hello over websocket"
        await anyio.sleep(0.2)  # keepalive pings are due: a missing Pong would fail the connection
        assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
        await client.ping()
        started = time.monotonic()
    # The server answered our Close frame and closed TCP, rather than close_timeout ending it.
    assert time.monotonic() - started < 5.0


async def test_a_server_killed_mid_call_fails_the_call_with_connection_closed(
    driver: Driver, doomed_ws_url: str
) -> None:
    async with driver.connect_websocket(doomed_ws_url) as client:
        with pytest.raises(ConnectionClosed):
            await client.call_tool("kill_server")
        assert client.closed
