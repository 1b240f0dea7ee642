"""A server written as a FastMCP user writes one (bare decorators, ``-> int``, a blocking
``def``, ``print()``), served by every driver in tests/drivers/test_serve_habits.py and met
by five clients nobody here wrote in bench/client_matrix.py.

Only what the blocking driver can run too: plain handlers, and ``async`` ones that await
nothing but their ``Context``'s questions to the client.
"""

from __future__ import annotations

import threading
import time

from mcp_sansio import Context, MCPServer, ToolError

app = MCPServer("newcomer", version="1.0.0")


@app.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool
def sleepy(seconds: float, ctx: Context) -> str:
    """Say so (progress 0), then block the calling thread for ``seconds`` (a plain def: it
    runs in a worker thread)."""
    ctx.report_progress(0, 1, "sleeping")
    time.sleep(seconds)
    return f"slept {seconds}"


@app.tool
def chatty(word: str) -> str:
    """print() to stdout, as careless handlers do (it must not reach the protocol stream)."""
    print(f"debugging {word}")  # the point of the test
    return word.upper()


@app.tool
async def progress(ctx: Context, steps: int = 3) -> str:
    """Report progress at every step."""
    for step in range(1, steps + 1):
        ctx.report_progress(step, steps)
    return f"did {steps} steps"


@app.tool
def report(ctx: Context, steps: int = 2) -> str:
    """Report progress from a plain def (its Context hands the calls to the loop), a moment
    apart: the TypeScript SDK runs notification handlers a tick late, so progress that
    arrives in the same read as the result is dropped there."""
    for step in range(1, steps + 1):
        ctx.report_progress(step, steps)
        time.sleep(0.05)
    return f"reported {steps} steps"


@app.tool
def refuse(city: str) -> str:
    """Fail with a message meant for the client."""
    raise ToolError(f"no such city: {city}")


@app.tool
def ask_from_def(ctx: Context) -> str:
    """Ask the client from a plain def: refused, saying it needs an async def."""
    ctx.elicit("Who are you?")
    return "unreachable"


@app.tool
def leak() -> str:
    """Fail with an exception whose text is not meant for the client."""
    raise ValueError("secret internal detail /etc/passwd")


@app.tool
def grow_later(name: str, delay: float = 0.2) -> str:
    """Add the tool ``name`` from a background thread after ``delay`` seconds, outside any
    request, and tell every client (``app.notify_list_changed``)."""
    def grow() -> None:
        time.sleep(delay)
        app.add_tool(lambda: name, name=name)
        app.notify_list_changed("tools")

    threading.Thread(target=grow, daemon=True).start()
    return "growing"


@app.resource("newcomer://readme", mime_type="text/plain")
def readme() -> str:
    """A fixed resource."""
    return "read me"


@app.prompt
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"
