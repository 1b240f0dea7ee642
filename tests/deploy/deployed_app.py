"""The server the deployment tests run behind HAProxy: several ``mcp-sansio serve --http
--store redis://...`` processes, or ``uvicorn deployed_app:asgi --workers 3``.

Every answer names the process that gave it (``whoami``, the progress messages of
``count``, the status message and result of the tasks ``job`` and ``confirm``), so that a
test sees where the balancer sent each request.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio

from mcp_sansio import Context, MCPServer
from mcp_sansio_asgi import AsgiApp

app = MCPServer("deployed", version="1.0.0")


@app.tool()
def whoami() -> str:
    """The process id of the worker that answered."""
    return str(os.getpid())


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
async def count(ctx: Context, n: int = 5, delay: float = 0.1, poll: bool = False, done: str = "") -> str:
    """Report progress ``n`` times, ``delay`` seconds apart (``poll``: end the SSE stream
    after the first, so that the client resumes it, SEP-1699; ``done``: a file written as
    it returns)."""
    for step in range(1, n + 1):
        ctx.report_progress(step, n, f"{os.getpid()}")
        if poll and step == 1:
            ctx.close_sse_stream()
        if delay:
            await anyio.sleep(delay)
    if done:
        Path(done).write_text("done")  # noqa: ASYNC240  (a few bytes, once)
    return f"counted {n} at {os.getpid()}"


@app.tool()
def steps(ctx: Context, n: int = 5, delay: float = 0.1) -> str:
    """``count`` as a plain ``def`` (a handler thread on every driver, the blocking one too)."""
    for step in range(1, n + 1):
        ctx.report_progress(step, n, f"{os.getpid()}")
        time.sleep(delay)
    return f"stepped {n} at {os.getpid()}"


@app.tool()
async def ask(ctx: Context) -> str:
    """Ask the user's name (elicitation)."""
    answer = await ctx.elicit("Who are you?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"hello {answer.content['name'] if answer.content else '?'}"


@app.tool(task_support="optional")
async def job(ctx: Context, seconds: float = 1.0, mark: str = "", done: str = "") -> str:
    """A task (tasks extension) that works ``seconds``; its status message names its worker.
    ``mark``: a file the handler writes when it is cancelled; ``done``: one it writes as it
    returns."""
    ctx.start_task(str(os.getpid()))
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if mark:
            # a few bytes, once, while cancelled (no await is possible here)
            Path(mark).write_text(f"cancelled at {os.getpid()}")  # noqa: ASYNC240
        raise
    if done:
        Path(done).write_text("done")  # noqa: ASYNC240  (a few bytes, once)
    return f"done at {os.getpid()}"


@app.tool(task_support="optional")
async def confirm(ctx: Context) -> str:
    """A task that asks the user's name (answered with ``tasks/update``)."""
    ctx.start_task(str(os.getpid()))
    answer = await ctx.elicit("Who are you?", {"type": "object", "properties": {"name": {"type": "string"}}},
                              key="who")
    return f"hello {answer.content['name'] if answer.content else '?'} at {os.getpid()}"


def _asgi() -> object:
    store = os.environ.get("MCP_SANSIO_STORE")
    return app.asgi(store=store) if store else AsgiApp(app)  # both spellings, one app


asgi = _asgi()
