"""The official Python SDK's client (``mcp``) as a hostile-server target: it starts the server
``MCP_FUZZ_SERVER_ARGV`` names (or connects to ``MCP_FUZZ_SERVER_URL``), initializes, lists
tools, calls ``echo`` and exits 0; on an error it prints the error's type and message and exits
1. Every request uses the timeout
``MCP_FUZZ_CLIENT_TIMEOUT`` (seconds), the SDK's own ``read_timeout_seconds``."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    """One session's script."""
    timeout = float(os.environ.get("MCP_FUZZ_CLIENT_TIMEOUT", "5"))
    url = os.environ.get("MCP_FUZZ_SERVER_URL")
    if url:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, read_timeout_seconds=timeout) as session,
        ):
            await session.initialize()
            await session.list_tools()
            await session.call_tool("echo", {"text": "hi"})
        print("ok")
        return
    argv = json.loads(os.environ["MCP_FUZZ_SERVER_ARGV"])
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, read_timeout_seconds=timeout) as session,
    ):
        await session.initialize()
        await session.list_tools()
        await session.call_tool("echo", {"text": "hi"})
    print("ok")


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as exc:  # the script's verdict: what the SDK raised, by type
        leaves = []
        todo: list[BaseException] = [exc]
        while todo:
            one = todo.pop()
            if isinstance(one, BaseExceptionGroup):
                todo += one.exceptions
            else:
                leaves.append(f"{type(one).__name__}: {one}"[:200])
        print(f"error: {type(exc).__name__}: {exc} [{'; '.join(leaves)}]"[:800], file=sys.stderr)
        sys.exit(1)
