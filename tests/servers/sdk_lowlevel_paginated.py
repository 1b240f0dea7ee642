"""A low-level official-SDK server whose list results come in pages, over stdio.

Pages hold ``PAGE_SIZE`` (10) items and ``nextCursor`` is the offset of the next
page as a string. The counts cover each edge: 25 tools (pages of 10, 10, 5),
20 resources (exactly two full pages, the second without ``nextCursor``) and
7 prompts (one page, no cursor at all). An unknown cursor is an
``INVALID_PARAMS`` error. ``tools/call`` of ``tool-N`` answers ``"called tool-N"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListPromptsResult,
    ListResourcesResult,
    ListToolsResult,
    PaginatedRequestParams,
    Prompt,
    Resource,
    TextContent,
    Tool,
)

PAGE_SIZE = 10
TOOLS = [
    Tool(name=f"tool-{i}", description=f"Tool number {i}", input_schema={"type": "object"}) for i in range(25)
]
RESOURCES = [Resource(name=f"resource-{i}", uri=f"test://paginated/{i}") for i in range(20)]
PROMPTS = [Prompt(name=f"prompt-{i}") for i in range(7)]

ItemT = TypeVar("ItemT")


def page(items: Sequence[ItemT], params: PaginatedRequestParams | None) -> tuple[list[ItemT], str | None]:
    """Return the page the cursor in ``params`` points at, and the next page's cursor.

    Raises:
        MCPError: The cursor is not one this server handed out.
    """
    cursor = params.cursor if params is not None else None
    start = 0
    if cursor is not None:
        if not cursor.isdecimal() or int(cursor) >= len(items):
            raise MCPError(code=INVALID_PARAMS, message=f"unknown cursor {cursor!r}")
        start = int(cursor)
    end = start + PAGE_SIZE
    return list(items[start:end]), str(end) if end < len(items) else None


async def list_tools(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> ListToolsResult:
    """Serve one page of ``TOOLS``."""
    tools, next_cursor = page(TOOLS, params)
    return ListToolsResult(tools=tools, next_cursor=next_cursor)


async def list_resources(
    ctx: ServerRequestContext, params: PaginatedRequestParams | None
) -> ListResourcesResult:
    """Serve one page of ``RESOURCES``."""
    resources, next_cursor = page(RESOURCES, params)
    return ListResourcesResult(resources=resources, next_cursor=next_cursor)


async def list_prompts(ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> ListPromptsResult:
    """Serve one page of ``PROMPTS``."""
    prompts, next_cursor = page(PROMPTS, params)
    return ListPromptsResult(prompts=prompts, next_cursor=next_cursor)


async def call_tool(ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
    """Answer a call of any listed tool with its name."""
    if params.name not in {tool.name for tool in TOOLS}:
        raise MCPError(code=INVALID_PARAMS, message=f"unknown tool {params.name!r}")
    return CallToolResult(content=[TextContent(type="text", text=f"called {params.name}")])


server: Server = Server(
    "mcp-sansio-paginated-test-server",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_prompts=list_prompts,
)


async def main() -> None:
    """Serve over stdio until stdin closes."""
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
