"""The host layer of every driver's ``ServerManager``: the first listing, prompts as named
commands, resources across servers, and calls that start only the server they route to.

Against real servers: the reference "everything" server over stdio (it registers tools
after ``notifications/initialized`` and announces them with ``list_changed``), the demo
server, and a server that cannot start.
"""

from __future__ import annotations

import os

import pytest
from peer_servers import everything_stdio

from mcp_sansio.manager import NamedPrompt, ServerResource, ServerResourceTemplate
from mcp_sansio.manager_lifecycle import ConnectionState, ServerUnavailable
from mcp_sansio.naming import UnknownPromptName, UnknownToolName
from mcp_sansio.types import TextContent

from .driver_adapter import Driver, text_of
from .manager_helpers import DEMO, NONEXISTENT, QUICK, entry, stdio

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

EVERYTHING = entry("everything", stdio(*everything_stdio()))


async def test_first_tools_listing_shows_the_tools_announced_after_initialized(driver: Driver) -> None:
    async with driver.manager([EVERYTHING], client_config=QUICK) as manager:
        await manager.connect_all()
        first = {tool.name for tool in await manager.tools()}
        listed_now = await (await manager.connect("everything")).list_tools()
        assert first == {f"mcp__everything__{tool.name}" for tool in listed_now}
        assert "mcp__everything__echo" in first
        assert manager.states["everything"].tool_count == len(listed_now)


async def test_prompts_are_named_like_tools_and_got_by_that_name(driver: Driver) -> None:
    async with driver.manager([EVERYTHING, entry("demo", DEMO)], client_config=QUICK) as manager:
        await manager.connect_all()
        prompts = await manager.prompts()
        assert {prompt.name for prompt in prompts} >= {"mcp__everything__simple-prompt",
                                                       "mcp__demo__greeting"}
        assert all(isinstance(prompt, NamedPrompt) for prompt in prompts)
        got = await manager.get_prompt("mcp__demo__greeting", {"name": "Ada"})
        assert isinstance(got.messages[0].content, TextContent) and "Ada" in got.messages[0].content.text
        simple = await manager.get_prompt("mcp__everything__simple-prompt")
        assert simple.messages[0].content == TextContent(text="This is a simple prompt without arguments.")
        with pytest.raises(UnknownPromptName, match="no prompt is named 'mcp__demo__nope'"):
            await manager.get_prompt("mcp__demo__nope")


async def test_resources_of_every_server_come_with_the_server_name(driver: Driver) -> None:
    async with driver.manager([EVERYTHING, entry("demo", DEMO)], client_config=QUICK) as manager:
        await manager.connect_all()
        found = await manager.resources()
        servers = {(item.server, type(item)) for item in found}
        assert (("demo", ServerResource) in servers and ("everything", ServerResource) in servers
                and ("everything", ServerResourceTemplate) in servers)
        readme = next(item for item in found if isinstance(item, ServerResource) and item.server == "demo")
        read = await manager.read_resource(readme.server, readme.resource.uri)
        assert read.contents[0].uri == readme.resource.uri


async def test_a_call_starts_only_the_server_its_name_routes_to(driver: Driver) -> None:
    entries = [entry("demo", DEMO), entry("broken", NONEXISTENT), EVERYTHING]
    async with driver.manager(entries, client_config=QUICK) as manager:
        assert text_of(await manager.call_tool("mcp__demo__echo", {"message": "hi"})) == "hi"
        assert {name: status.state for name, status in manager.states.items()} == {
            "demo": ConnectionState.CONNECTED, "broken": ConnectionState.PENDING,
            "everything": ConnectionState.PENDING}


async def test_a_name_no_server_may_have_starts_nothing(driver: Driver) -> None:
    async with driver.manager([entry("demo", DEMO)], client_config=QUICK) as manager:
        with pytest.raises(UnknownToolName, match="no tool is named 'mcp__other__echo'"):
            await manager.call_tool("mcp__other__echo")
        assert manager.states["demo"].state is ConnectionState.PENDING


async def test_a_call_on_a_server_that_failed_says_so_and_why(driver: Driver) -> None:
    async with driver.manager([entry("broken", NONEXISTENT)], client_config=QUICK) as manager:
        with pytest.raises(ServerUnavailable, match=r"tool 'mcp__broken__echo': server 'broken' failed: .*"
                                                    r"nonexistent") as caught:
            await manager.call_tool("mcp__broken__echo")
        assert caught.value.server == "broken" and caught.value.state is ConnectionState.FAILED


async def test_stdio_servers_start_behind_the_shell_prefix(driver: Driver) -> None:
    env = {**os.environ, "MCP_SANSIO_SHELL_PREFIX": "env MCP_SANSIO_PREFIXED=yes"}
    async with driver.manager([EVERYTHING], env=env, client_config=QUICK) as manager:
        assert '"MCP_SANSIO_PREFIXED": "yes"' in text_of(await manager.call_tool("mcp__everything__get-env"))
        assert manager.states["everything"].shell_prefix == "env MCP_SANSIO_PREFIXED=yes"
