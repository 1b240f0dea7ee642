"""The server the serve tests run with every driver (``mcp-sansio serve ... --driver D``).

Only what the blocking driver can run too: plain handlers, and ``async`` ones that await
nothing but their ``Context``'s questions to the client.
"""

from __future__ import annotations

import asyncio
import sys

from mcp_sansio import Context, MCPServer

app = MCPServer("served-by-every-driver", version="1.0.0")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
async def ask(ctx: Context) -> str:
    """Ask the user's name (elicitation)."""
    answer = await ctx.elicit("Who are you?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"hello {answer.content['name'] if answer.content else '?'}"


@app.tool()
async def progress(ctx: Context, steps: int = 3) -> str:
    """Report progress at every step."""
    for step in range(1, steps + 1):
        ctx.report_progress(step, steps)
    return f"did {steps} steps"


@app.tool()
def give_up() -> str:
    """Raise a cancellation of its own (no task of its was cancelled)."""
    raise asyncio.CancelledError


@app.tool()
async def give_up_at_once() -> str:
    """The same from an ``async def`` that awaits nothing."""
    raise asyncio.CancelledError


@app.tool()
def exits() -> str:
    """Exit, as a command-line library does on bad arguments."""
    sys.exit(3)


app.add_resource("served://hello", text="hello, resource", name="hello", mime_type="text/plain")


@app.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"
