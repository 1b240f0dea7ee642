"""Every driver against a TypeScript SDK server that asks its questions on the GET stream only
(``tests/peers/ts_get_stream_server.mjs``, as the conformance suite's elicitation mocks do) and
opens that stream late: the app's first request waits for the stream's response head, so the
question the server sends as that request arrives is not dropped; a stream that never opens
holds requests for ``get_stream_wait`` only.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from peer_servers import free_port, node_binary, peers_dir, running_http_server

from mcp_sansio import ClientConfig
from mcp_sansio.types import ElicitRequestParams, ElicitResult

from .driver_adapter import Driver, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

PEERS = Path(__file__).resolve().parent.parent / "peers"
HANDSHAKE = ClientConfig(protocol="2025-11-25", request_timeout=10.0, initialize_timeout=20.0)


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server script beside a ``node_modules`` (ES modules resolve from their own place)."""
    home = tmp_path_factory.mktemp("ts-get-stream-server")
    (home / "node_modules").symlink_to(peers_dir() / "node_modules")
    shutil.copy(PEERS / "ts_get_stream_server.mjs", home)
    return home / "ts_get_stream_server.mjs"


def serve(script: Path, get_delay_ms: int) -> Iterator[str]:
    port = free_port()
    with running_http_server(node_binary(), [str(script), str(port), str(get_delay_ms)], None, port,
                             "/mcp") as url:
        yield url


@pytest.fixture(scope="module")
def late_get_stream(script: Path) -> Iterator[str]:
    """The server opening each GET stream 300 ms late: well within ``get_stream_wait``."""
    yield from serve(script, 300)


@pytest.fixture(scope="module")
def no_get_stream(script: Path) -> Iterator[str]:
    """The server opening each GET stream a minute late: never, for these tests."""
    yield from serve(script, 60_000)


async def answer(params: ElicitRequestParams) -> ElicitResult:
    assert params.message == "Who are you?"
    return ElicitResult(action="accept", content={"name": "Ada"})


async def test_a_question_sent_on_the_get_stream_as_the_first_request_arrives_is_answered(
        driver: Driver, late_get_stream: str) -> None:
    async with driver.connect_http(late_get_stream, config=HANDSHAKE, on_elicitation=answer) as client:
        assert text_of(await client.call_tool("ask")) == "hello Ada"


async def test_requests_wait_for_a_get_stream_that_never_opens_only_get_stream_wait(
        driver: Driver, no_get_stream: str) -> None:
    config = ClientConfig(protocol="2025-11-25", request_timeout=10.0, get_stream_wait=0.2)
    async with driver.connect_http(no_get_stream, config=config) as client:
        assert text_of(await client.call_tool("echo")) == "echo"  # not held until the 10 s timeout
