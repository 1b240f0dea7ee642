"""Every driver against the reference "everything" server (TypeScript SDK) over HTTP.

The server runs in ``streamableHttp`` mode (sessions, an event store for resumption)
and in ``sse`` mode (the legacy 2024-11-05 transport); ``transport="auto"`` must pick
the right one. Restarting the server forgets every session, and ``tests/http_proxy.py``
drops a response stream midway.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from peer_servers import TESTS_DIR, everything_http, free_port, running_http_server

from mcp_sansio import SUPPORTED_VERSIONS, ClientConfig
from mcp_sansio.retry import RetryPolicy
from mcp_sansio.types import (
    CreateMessageRequestParams,
    ElicitRequestParams,
    ElicitResult,
    PromptReference,
    TextContent,
)

from .driver_adapter import Driver, Restartable, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

LONG_RUNNING = "trigger-long-running-operation"
PROXY = TESTS_DIR / "http_proxy.py"
QUICK = ClientConfig(request_timeout=20.0, initialize_timeout=20.0)


@pytest.fixture(scope="module")
def streamable_url() -> Iterator[str]:
    """One everything server in ``streamableHttp`` mode for the module."""
    port = free_port()
    with running_http_server(*everything_http("streamableHttp", port), port, "/mcp") as url:
        yield url


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    """One everything server in legacy ``sse`` mode for the module."""
    port = free_port()
    with running_http_server(*everything_http("sse", port), port, "/sse") as url:
        yield url


async def test_auto_picks_streamable_http_with_a_session(driver: Driver, streamable_url: str) -> None:
    async with driver.connect_http(streamable_url) as client:
        assert client.transport == "streamable-http"
        assert client.session_id
        assert client.server_info.name == "mcp-servers/everything"
        assert client.protocol_version in SUPPORTED_VERSIONS
        names = {tool.name for tool in await client.list_tools()}
        assert {"echo", "get-sum", LONG_RUNNING} <= names
        assert text_of(await client.call_tool("echo", {"message": "héllo"})) == "Echo: héllo"
        await client.ping()


async def test_auto_falls_back_to_the_legacy_sse_transport(driver: Driver, sse_url: str) -> None:
    seen: list[float] = []
    async with driver.connect_http(sse_url) as client:
        assert client.transport == "sse"
        assert client.session_id is None
        assert text_of(await client.call_tool("get-sum", {"a": 2, "b": 40})) == "The sum of 2 and 40 is 42."
        result = await client.call_tool(LONG_RUNNING, {"duration": 0.2, "steps": 2},
                                        on_progress=lambda progress, total, message: seen.append(progress))
        await client.ping()
    assert "Steps: 2" in text_of(result)
    assert seen == [1, 2]


async def test_progress_arrives_on_the_post_stream(driver: Driver, streamable_url: str) -> None:
    seen: list[tuple[float, float | None]] = []
    async with driver.connect_http(streamable_url, config=QUICK) as client:
        result = await client.call_tool(
            LONG_RUNNING, {"duration": 0.3, "steps": 3},
            on_progress=lambda progress, total, message: seen.append((progress, total)))
    assert "Steps: 3" in text_of(result)
    assert seen == [(1, 3), (2, 3), (3, 3)]


async def test_sampling_and_elicitation_are_answered_over_http(driver: Driver, streamable_url: str) -> None:
    async def sample(params: CreateMessageRequestParams) -> dict[str, object]:
        return {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "stub-1"}

    async def elicit(params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada", "check": True})

    async with driver.connect_http(streamable_url, config=QUICK, on_sampling=sample,
                                   on_elicitation=elicit) as client:
        sampled = text_of(await client.call_tool("trigger-sampling-request", {"prompt": "meaning?"}))
        elicited = await client.call_tool("trigger-elicitation-request")
    assert '"model": "stub-1"' in sampled and "forty-two" in sampled
    text = "\n".join(block.text for block in elicited.content if isinstance(block, TextContent))
    assert "- Name: Ada" in text


async def test_resources_and_prompts_are_read_over_http(driver: Driver, streamable_url: str) -> None:
    uri = "demo://resource/dynamic/text/7"
    async with driver.connect_http(streamable_url, config=QUICK) as client:
        resources = {resource.uri for resource in await client.list_resources()}
        assert "demo://resource/static/document/instructions.md" in resources
        [contents] = (await client.read_resource(uri)).contents
        assert contents.text is not None and contents.text.startswith("Resource 7:")
        assert "simple-prompt" in {prompt.name for prompt in await client.list_prompts()}
        rendered = await client.get_prompt("completable-prompt", {"department": "Sales", "name": "Eve"})
        department = await client.complete(PromptReference(name="completable-prompt"), "department", "Eng")
    content = rendered.messages[0].content
    assert isinstance(content, TextContent) and "Eve" in content.text
    assert department.completion.values == ["Engineering"]


@pytest.mark.parametrize("blocking", [False, True], ids=["loop-runs", "loop-held"])
async def test_a_restarted_server_gets_a_new_session_without_an_error(driver: Driver, blocking: bool) -> None:
    port = free_port()
    with Restartable(*everything_http("streamableHttp", port), port, "/mcp") as server:
        async with driver.connect_http(server.url, config=QUICK) as client:
            assert text_of(await client.call_tool("echo", {"message": "one"})) == "Echo: one"
            first = client.session_id
            await server.restart(blocking=blocking)  # the new process knows no session
            assert text_of(await client.call_tool("echo", {"message": "two"})) == "Echo: two"
            assert client.session_id not in (None, first)


async def test_a_stream_cut_midway_is_resumed_with_last_event_id(
    driver: Driver, streamable_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "proxy.jsonl"
    port = free_port()
    target = streamable_url.removeprefix("http://127.0.0.1:").removesuffix("/mcp")
    # The priming event (55 bytes as chunked) and the first progress event (173) pass;
    # the cut falls inside the second, while the tool still runs: its answer comes later.
    args = [str(PROXY), str(port), target, "300", LONG_RUNNING, str(log)]
    seen: list[float] = []
    # The server's demo event store hands the SDK an event id where a stream id belongs,
    # so only what was stored before the resumption reaches the new stream: resume once
    # the tool is done (after 0.6 s) and its answer is stored.
    config = msgspec.structs.replace(QUICK, retry=RetryPolicy(initial_delay=1.5, jitter=0.0))
    with running_http_server(sys.executable, args, None, port, "/mcp") as url:
        async with driver.connect_http(url, config=config) as client:
            result = await client.call_tool(LONG_RUNNING, {"duration": 0.6, "steps": 3},
                                            on_progress=lambda done, total, message: seen.append(done))
    assert "Steps: 3" in text_of(result)
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    cut = entries.index({"cut": True})
    assert any(e.get("request", "").startswith("GET /mcp") and "last-event-id" in e["headers"]
               for e in entries[cut:])
    assert seen == [1, 2, 3]
