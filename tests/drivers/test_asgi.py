"""``AsgiApp(app)`` under uvicorn (one worker and two), with every driver as the client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from peer_servers import free_port, running_http_server, sdk_server

from mcp_sansio import ClientConfig
from mcp_sansio.types import ElicitRequestParams, ElicitResult

from .driver_adapter import Driver, text_of
from .test_serve import INIT, post, raw

pytestmark = [pytest.mark.anyio]

HANDSHAKE = ClientConfig(protocol="2025-11-25", request_timeout=20.0, initialize_timeout=20.0)


@pytest.fixture(scope="module")
def uvicorn_url() -> Iterator[str]:
    port = free_port()
    with running_http_server(*sdk_server("asgi_app", "--port", str(port)), None, port, "/mcp") as url:
        yield url


@pytest.fixture(scope="module")
def workers_url() -> Iterator[str]:
    port = free_port()
    with running_http_server(*sdk_server("asgi_app", "--port", str(port), "--workers", "2"), None, port,
                             "/mcp") as url:
        yield url


async def name_ada(params: ElicitRequestParams) -> ElicitResult:
    assert params.message == "Who are you?"
    return ElicitResult(action="accept", content={"name": "Ada"})


@pytest.mark.peer
async def test_every_driver_is_served_by_uvicorn_in_both_eras(driver: Driver, uvicorn_url: str) -> None:
    async with driver.connect_http(uvicorn_url, on_elicitation=name_ada) as client:
        assert (client.protocol_version, client.session_id) == ("2026-07-28", None)
        assert text_of(await client.call_tool("add", {"a": 1, "b": 2})) == "3.0"
        assert text_of(await client.call_tool("ask", {})) == "hello Ada"
    async with driver.connect_http(uvicorn_url, config=HANDSHAKE, on_elicitation=name_ada) as client:
        assert client.protocol_version == "2025-11-25" and client.session_id
        tools = {"add", "whoami", "ask", "sleep", "give_up", "give_up_at_once"}
        assert {tool.name for tool in await client.list_tools()} == tools
        assert text_of(await client.call_tool("ask", {})) == "hello Ada"


@pytest.mark.peer
@pytest.mark.parametrize("tool", ["give_up", "give_up_at_once"])
async def test_a_handler_raising_a_cancellation_of_its_own_fails_its_call_and_the_app_goes_on(
        driver: Driver, uvicorn_url: str, tool: str) -> None:
    async with driver.connect_http(uvicorn_url, config=HANDSHAKE) as client:
        result = await client.call_tool(tool, {})
        assert result.is_error and text_of(result) == "CancelledError"
        assert text_of(await client.call_tool("add", {"a": 1, "b": 2})) == "3.0"


@pytest.mark.peer
async def test_stateless_input_rounds_hold_across_workers_sharing_the_secret(driver: Driver,
                                                                             workers_url: str) -> None:
    async with driver.connect_http(workers_url, on_elicitation=name_ada) as client:
        for _ in range(6):  # each round may come back to the other worker
            assert text_of(await client.call_tool("ask", {})) == "hello Ada"


def test_uvicorn_passes_repeated_headers_and_the_app_refuses_them(uvicorn_url: str) -> None:
    port = uvicorn_url.split(":")[2].split("/", maxsplit=1)[0]
    origins = f"Origin: http://evil.example\r\nOrigin: http://127.0.0.1:{port}\r\n"
    two_origins = raw(uvicorn_url, post(INIT, extra=origins))
    assert two_origins.startswith(b"HTTP/1.1 403 ") and b"Origin header is repeated" in two_origins
    two_hosts = raw(uvicorn_url, post(INIT, extra="Host: evil.example\r\n"))
    assert two_hosts.startswith(b"HTTP/1.1 400 ")
