"""The asyncio WebSocket driver against a real WebSocket MCP server (official SDK 1.x).

The server, ``tests/servers/ws_server.py``, runs in ``.venv-mcp1`` (mcp<2, the last SDK
with a WebSocket transport) made by ``scripts/dev setup``; without it these tests fail.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from peer_servers import SERVERS_DIR, free_port, running_http_server

from mcp_sansio import SUPPORTED_VERSIONS, ClientConfig, ConnectError, ConnectionClosed
from mcp_sansio.errors import Unauthorized
from mcp_sansio.types import CallToolResult, ResourceContents, TextContent
from mcp_sansio_asyncio.websocket import connect_websocket

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

MCP1_PYTHON = Path(__file__).resolve().parents[2] / ".venv-mcp1" / "bin" / "python"


def text_of(result: CallToolResult) -> str:
    """The text of a tool result's only block."""
    [block] = result.content
    assert isinstance(block, TextContent), block
    return block.text


@pytest.fixture
def anyio_backend() -> str:
    """The driver under test is asyncio's."""
    return "asyncio"


def _ws_server() -> Iterator[str]:
    """Run ``ws_server.py`` under mcp 1.x; yield its ``ws://`` URL."""
    if not MCP1_PYTHON.is_file():
        pytest.fail(f"{MCP1_PYTHON} is missing: run `scripts/dev setup` (it installs mcp<2, whose"
                    " WebSocket server these tests talk to)", pytrace=False)
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


async def test_the_upgrade_negotiates_subprotocol_mcp_and_initializes(ws_url: str) -> None:
    async with connect_websocket(ws_url) as client:
        assert client.subprotocol == "mcp"
        assert client.url == ws_url
        assert client.server_info.name == "mcp-sansio-ws-test-server"
        assert client.protocol_version in SUPPORTED_VERSIONS
        assert client.server_capabilities.tools is not None


async def test_tools_are_listed_and_called(ws_url: str) -> None:
    async with connect_websocket(ws_url) as client:
        assert [tool.name for tool in await client.list_tools()] == ["echo", "add", "slow", "kill_server"]
        assert text_of(await client.call_tool("echo", {"message": "a\nb é"})) == "a\nb é"
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert text_of(added) == "5" and added.structured_content == {"result": 5}


async def test_resources_and_prompts_are_read(ws_url: str) -> None:
    async with connect_websocket(ws_url) as client:
        [resource] = await client.list_resources()
        assert resource.uri == "test://greeting"
        [contents] = (await client.read_resource("test://greeting")).contents
        assert isinstance(contents, ResourceContents) and contents.text == "hello over websocket"
        [prompt] = await client.list_prompts()
        assert prompt.name == "greet"
        [message] = (await client.get_prompt("greet", {"name": "Ada"})).messages
        assert message.content == TextContent(text="Say hello to Ada.")


async def test_ping_round_trips(ws_url: str) -> None:
    async with connect_websocket(ws_url) as client:
        await client.ping()


async def test_concurrent_calls_are_matched_to_their_answers(ws_url: str) -> None:
    async with connect_websocket(ws_url) as client:
        # (3 s: 20 round trips fit well within it on a loaded machine; they took 0.1 s when idle)
        slow = asyncio.ensure_future(client.call_tool("slow", {"seconds": 3}))
        echoes = await asyncio.gather(*(client.call_tool("echo", {"message": f"m{i}"}) for i in range(20)))
        assert not slow.done()  # the quick ones overtook it
        assert [text_of(r) for r in echoes] == [f"m{i}" for i in range(20)]
        assert text_of(await slow) == "slept 3"


async def test_a_cancelled_call_leaves_the_connection_usable(ws_url: str) -> None:
    async with connect_websocket(ws_url) as client:
        slow = asyncio.ensure_future(client.call_tool("slow", {"seconds": 30}))
        await asyncio.sleep(0.1)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        assert text_of(await client.call_tool("echo", {"message": "still here"})) == "still here"


async def test_keepalive_pings_are_answered_by_the_server(ws_url: str) -> None:
    async with connect_websocket(ws_url, ping_interval=0.05) as client:
        await asyncio.sleep(0.4)  # several Ping/Pong rounds; a missing Pong would fail the connection
        assert text_of(await client.call_tool("echo", {"message": "alive"})) == "alive"


async def test_leaving_the_block_runs_the_closing_handshake(ws_url: str) -> None:
    config = ClientConfig(close_timeout=10.0)
    async with connect_websocket(ws_url, config=config) as client:
        await client.ping()
        started = time.monotonic()
    # Leaving waits until the connection is closed: the server answered our Close frame
    # and closed TCP, rather than the wait running into close_timeout.
    assert time.monotonic() - started < 5.0


async def test_a_server_killed_mid_call_fails_every_call_with_connection_closed(doomed_ws_url: str) -> None:
    async with connect_websocket(doomed_ws_url) as client:
        slow = asyncio.ensure_future(client.call_tool("slow", {"seconds": 30}))
        await asyncio.sleep(0.1)  # the slow call is out
        with pytest.raises(ConnectionClosed):
            await client.call_tool("kill_server")
        with pytest.raises(ConnectionClosed):
            await slow


async def test_an_unknown_path_is_refused_with_its_http_status(ws_url: str) -> None:
    # Starlette closes a WebSocket it has no route for before accepting it; uvicorn answers 403.
    with pytest.raises(Unauthorized) as info:
        async with connect_websocket(ws_url.replace("/ws", "/nowhere")):
            pass
    assert info.value.status == 403


async def test_nobody_listening_raises_a_connect_error() -> None:
    with pytest.raises(ConnectError, match="Connection refused"):
        async with connect_websocket(f"ws://127.0.0.1:{free_port()}/ws"):
            pass


async def test_wss_speaks_tls_first(ws_url: str) -> None:
    # The peer speaks plain HTTP, so the TLS handshake fails before any WebSocket byte.
    with pytest.raises(ConnectError, match="the TLS handshake failed: "):
        async with connect_websocket(ws_url.replace("ws://", "wss://", 1)):
            pass
