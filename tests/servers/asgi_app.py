"""An ``MCPServer`` served as an ASGI application by uvicorn (``--workers N`` for several).

Tools: ``add`` (the sum as text), ``whoami`` (the worker's pid), ``ask`` (elicits a name,
which in 2026-07-28 is an ``input_required`` round that may come back to another worker),
``sleep`` (waits, cancellable with anyio, so it runs under trio too).
"""

from __future__ import annotations

import argparse
import asyncio
import os

import anyio
import uvicorn

from mcp_sansio import Context, MCPServer
from mcp_sansio.server.http import HttpConfig
from mcp_sansio_asgi import AsgiApp

app = MCPServer("asgi-test-server", version="1.0.0")


@app.tool()
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return repr(a + b)


@app.tool()
def whoami() -> str:
    """The serving worker's process id."""
    return str(os.getpid())


@app.tool()
async def ask(ctx: Context) -> str:
    """Ask the user's name."""
    answer = await ctx.elicit("Who are you?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"hello {answer.content['name'] if answer.content else '?'}"


@app.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then say so."""
    await anyio.sleep(seconds)
    return "slept"


@app.tool()
def give_up() -> str:
    """Raise a cancellation of its own (in a worker thread)."""
    raise asyncio.CancelledError


@app.tool()
async def give_up_at_once() -> str:
    """The same from an ``async def`` that awaits nothing (run inline)."""
    raise asyncio.CancelledError


# ASGI_APP_PUBLIC=1: as deployed behind a public name (no Host allow-list, no allowed origins).
PUBLIC = os.environ.get("ASGI_APP_PUBLIC") == "1"
SECRET = b"shared by every worker 0123456789"
asgi = AsgiApp(app, secret=SECRET, config=HttpConfig()) if PUBLIC else AsgiApp(app, secret=SECRET)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    options = parser.parse_args()
    uvicorn.run("asgi_app:asgi", host="0.0.0.0" if PUBLIC else "127.0.0.1", port=options.port,
                workers=options.workers, log_level="warning", app_dir=os.path.dirname(__file__))


if __name__ == "__main__":
    main()
