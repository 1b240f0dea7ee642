"""The bundled demo MCP server, written with ``MCPServer`` and served by the asyncio driver.

Run it with ``python -m mcp_sansio_cli.demo_server`` (stdio), or
``mcp-sansio serve -m mcp_sansio_cli.demo_server --http 8000``. The long task reports
progress at every step and stops when the client cancels it.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Final

import msgspec

from mcp_sansio import Context, MCPServer

__all__ = ["app", "main"]

_README: Final = (
    "mcp-sansio demo server\n\nA pure state machine on one side, a thin asyncio driver on the other."
)

app = MCPServer(
    "mcp-sansio-demo", version="0.1.0", title="mcp-sansio demo server",
    instructions="A demo server: try the long_task tool to watch progress.",
)


@app.tool()
def echo(message: str) -> str:
    """Echo a message back."""
    return message


@app.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return repr(a + b)


@app.tool()
async def long_task(
    ctx: Context,
    steps: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 20,
    interval: Annotated[float, msgspec.Meta(ge=0, le=5)] = 0.1,
) -> str:
    """Work for a while, reporting progress at every step."""
    for step in range(1, steps + 1):
        await asyncio.sleep(interval)
        ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"finished {steps} steps"


app.add_resource("demo://readme", text=_README, name="readme", mime_type="text/plain")


@app.prompt()
def greeting(name: str) -> str:
    """Say hello to someone."""
    return f"Say hello to {name}."


def main() -> None:
    """Serve one client on stdin/stdout until stdin closes."""
    from mcp_sansio_asyncio.serve import serve_stdio

    asyncio.run(serve_stdio(app))


if __name__ == "__main__":
    main()
