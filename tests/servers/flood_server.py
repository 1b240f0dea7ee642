"""A server whose tool floods its client with notifications, on any driver (backpressure tests).

    python flood_server.py DRIVER TRANSPORT [PORT]

DRIVER: asyncio, anyio, trio, sync, or asgi (uvicorn; HTTP only). TRANSPORT: http,
websocket or stdio. Tools: ``flood`` (``megabytes`` of progress notifications in pieces of
``piece`` bytes, awaiting each one when ``wait``), ``add``, ``big`` (a result of
``megabytes`` MiB), and ``status`` (this process's memory, open descriptors, how many
floods run, ended or were cancelled, and how many ``big`` calls began).
The limits are the defaults but for a short ``stall_timeout`` (``FLOOD_STALL`` seconds
if set) and ``body_timeout``, so a stalled stream or body is dropped within the test's patience;
``FLOOD_MAX_CONNECTIONS`` and ``FLOOD_HEADER_TIMEOUT`` set those HTTP limits.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys

import anyio

from mcp_sansio import Context, MCPServer
from mcp_sansio.server.flow import FlowLimits
from mcp_sansio.server.http import HttpConfig
from mcp_sansio.server.http11 import HttpLimits
from mcp_sansio.server.websocket import WebSocketConfig

STALL = float(os.environ.get("FLOOD_STALL", "2.0"))
BODY_TIMEOUT = 1.0
app = MCPServer("flood", version="1.0.0")
STATE = {"running": 0, "finished": 0, "cancelled": 0, "produced": 0, "big": 0}


@app.tool()
async def flood(ctx: Context, megabytes: int = 200, piece: int = 16384, wait: bool = True) -> str:
    """Send ``megabytes`` MB of progress notifications."""
    STATE["running"] += 1
    text = "x" * piece
    try:
        for step in range(megabytes * 1024 * 1024 // piece):
            sent = ctx.report_progress(step, message=text)
            STATE["produced"] += piece
            if wait:
                await sent
    except BaseException:
        STATE["cancelled"] += 1
        print("flood cancelled", file=sys.stderr, flush=True)
        raise
    finally:
        STATE["running"] -= 1
    STATE["finished"] += 1
    return "flooded"


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def big(megabytes: int = 1) -> str:
    """A result of ``megabytes`` MiB: several at once pass the stream's byte bound."""
    STATE["big"] += 1
    return "x" * (megabytes << 20)


@app.tool()
def status() -> str:
    """This process's memory (kB), descriptors, and the floods."""
    fields = {}
    with open("/proc/self/status") as lines:
        for line in lines:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0])
    return json.dumps({**STATE, **fields, "fds": len(os.listdir("/proc/self/fd"))})


def main() -> None:
    driver, transport = sys.argv[1], sys.argv[2]
    port = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    limits = HttpLimits(stall_timeout=STALL, body_timeout=BODY_TIMEOUT,
                        header_timeout=float(os.environ.get("FLOOD_HEADER_TIMEOUT", "10")))
    config = HttpConfig.loopback(limits=limits,
                                 max_connections=int(os.environ.get("FLOOD_MAX_CONNECTIONS", "1024")))
    flow = FlowLimits(stall_timeout=STALL)
    if driver == "asgi":
        import uvicorn

        from mcp_sansio_asgi import AsgiApp

        asgi = AsgiApp(app, config=config)
        uvicorn.run(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        return
    module = {"asyncio": "mcp_sansio_asyncio", "anyio": "mcp_sansio_anyio", "trio": "mcp_sansio_anyio",
              "sync": "mcp_sansio_sync"}[driver]
    serve = __import__(f"{module}.serve", fromlist=["serve"])
    if transport == "http":
        call = functools.partial(serve.serve_http, app, port=port, config=config)
    elif transport == "websocket":
        call = functools.partial(serve.serve_websocket, app, port=port,
                                 config=WebSocketConfig.loopback(flow=flow))
    else:
        call = functools.partial(serve.serve_stdio, app, flow=flow)
    if driver == "sync":
        call()
    elif driver == "asyncio":
        asyncio.run(call())
    else:
        anyio.run(call, backend=driver if driver == "trio" else "asyncio")


if __name__ == "__main__":
    main()
