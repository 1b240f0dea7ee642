"""Every driver against the official Python SDK's Streamable HTTP server (``sdk_server.py``).

The server runs stateful (sessions, SSE answers), stateless, and stateful with JSON
answers. It speaks the stateless 2026-07-28 era, which ``protocol="auto"`` must pick;
pinned to 2025-11-25 the client speaks the handshake era instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import pytest
from peer_servers import free_port, running_http_server, sdk_server

from mcp_sansio import ClientConfig
from mcp_sansio.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    TextContent,
)

from .driver_adapter import Driver, Restartable, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

MODES = {"stateful": (), "stateless": ("--stateless",), "json-response": ("--json-response",)}
HANDSHAKE = ClientConfig(protocol="2025-11-25", request_timeout=20.0, initialize_timeout=20.0)


class Server(NamedTuple):
    mode: str
    url: str


def sdk_http(mode: str, port: int) -> tuple[str, list[str], None, int, str]:
    """``running_http_server`` arguments for ``sdk_server.py`` in ``mode`` on ``port``."""
    command, args = sdk_server("sdk_server", "--transport", "streamable-http", "--port", str(port),
                               *MODES[mode])
    return command, args, None, port, "/mcp"


@pytest.fixture(scope="module", params=list(MODES))
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """One SDK server per mode for the module."""
    with running_http_server(*sdk_http(request.param, free_port())) as url:
        yield Server(request.param, url)


async def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    [message] = params.messages
    assert isinstance(message.content, TextContent)
    return CreateMessageResult(role="assistant", content=TextContent(text=message.content.text[::-1]),
                               model="model-x")


async def elicit(params: ElicitRequestParams) -> ElicitResult:
    assert params.message == "Who are you?"
    return ElicitResult(action="accept", content={"name": "Ada", "age": 36})


async def test_auto_picks_the_stateless_era(driver: Driver, server: Server) -> None:
    seen: list[float] = []
    async with driver.connect_http(server.url) as client:
        assert client.protocol_version == "2026-07-28"
        assert client.session_id is None and client.transport == "streamable-http"
        assert client.server_info.name == "mcp-sansio-sdk-test-server"
        assert {"echo", "progress", "sample"} <= {tool.name for tool in await client.list_tools()}
        result = await client.call_tool("progress", {"steps": 3},
                                        on_progress=lambda done, total, message: seen.append(done))
        [resource] = await client.list_resources()
        [contents] = (await client.read_resource(resource.uri)).contents
        [prompt] = await client.list_prompts()
        rendered = await client.get_prompt(prompt.name, {"code": "x = 1"})
        await client.ping()
    assert text_of(result) == "did 3 steps"
    assert seen == ([] if server.mode == "json-response" else [1, 2, 3])  # JSON answers carry no progress
    assert contents.text == "Hello, resource!"
    assert isinstance(rendered.messages[0].content, TextContent)
    assert "x = 1" in rendered.messages[0].content.text


async def test_pinned_revision_speaks_the_handshake_era(driver: Driver, server: Server) -> None:
    async with driver.connect_http(server.url, config=HANDSHAKE) as client:
        assert client.protocol_version == "2025-11-25"
        assert (client.session_id is not None) == (server.mode != "stateless")
        assert text_of(await client.call_tool("echo", {"message": "a\nb"})) == "a\nb"
        assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == "5"
        assert [r.uri for r in await client.list_resources()] == ["test://static/hello"]
        await client.ping()


async def test_server_requests_are_answered_in_the_stateless_era(driver: Driver, server: Server) -> None:
    async with driver.connect_http(server.url, on_sampling=sample, on_elicitation=elicit) as client:
        assert text_of(await client.call_tool("sample", {"prompt": "olleh"})) == "model-x: hello"
        assert text_of(await client.call_tool("elicit")) == "hello Ada, 36"


# Only a stateful server answering with SSE can ask the client in the handshake era.
@pytest.mark.parametrize("server", ["stateful"], indirect=True)
async def test_server_requests_are_answered_on_a_stateful_session(driver: Driver, server: Server) -> None:
    async with driver.connect_http(server.url, config=HANDSHAKE, on_sampling=sample,
                                   on_elicitation=elicit) as client:
        assert text_of(await client.call_tool("sample", {"prompt": "olleh"})) == "model-x: hello"
        assert text_of(await client.call_tool("elicit")) == "hello Ada, 36"


@pytest.mark.parametrize("blocking", [False, True], ids=["loop-runs", "loop-held"])
async def test_a_restarted_stateful_server_gets_a_new_session_without_an_error(driver: Driver, blocking: bool
                                                                              ) -> None:
    with Restartable(*sdk_http("stateful", free_port())) as restartable:
        async with driver.connect_http(restartable.url, config=HANDSHAKE) as client:
            assert text_of(await client.call_tool("echo", {"message": "one"})) == "one"
            first = client.session_id
            await restartable.restart(blocking=blocking)  # the new process knows no session: 404
            assert text_of(await client.call_tool("echo", {"message": "two"})) == "two"
            assert client.session_id not in (None, first)
