"""An official-SDK 1.x MCP server over WebSocket, the peer of ``test_websocket_peer.py``.

mcp 2 dropped the WebSocket transport, so this runs in ``.venv-mcp1`` (``mcp<2``, made by
``scripts/dev setup``): a FastMCP server with the tools ``echo``, ``add``, ``slow`` and
``kill_server`` (SIGKILLs this process mid-call), the resource ``test://greeting`` and
the prompt ``greet``, served through ``mcp.server.websocket.websocket_server`` by uvicorn
at ``ws://127.0.0.1:PORT/ws``.

Usage: ``.venv-mcp1/bin/python ws_server.py --port N``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import warnings
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

F = TypeVar("F", bound=Callable[..., Any])
Streams = tuple[Any, Any]


class FastMcp(Protocol):
    """The part of mcp 1.x's ``FastMCP`` used here."""

    # The low-level server; FastMCP's own transports run it on their streams this way.
    _mcp_server: Any

    def tool(self) -> Callable[[F], F]: ...
    def resource(self, uri: str) -> Callable[[F], F]: ...
    def prompt(self) -> Callable[[F], F]: ...


# Imported by name: mypy checks this file against the mcp 2 of the main venv, which has
# neither module, while it runs under mcp 1.x.
_fastmcp = importlib.import_module("mcp.server.fastmcp")
_websocket = importlib.import_module("mcp.server.websocket")
websocket_server: Callable[[Scope, Receive, Send], AbstractAsyncContextManager[Streams]] = (
    _websocket.websocket_server
)
# The transport is deprecated in 1.x, which is why it is tested against the last SDK that has it.
warnings.simplefilter("ignore", DeprecationWarning)

server: FastMcp = _fastmcp.FastMCP("mcp-sansio-ws-test-server", log_level="WARNING")


@server.tool()
def echo(message: str) -> str:
    """Return ``message`` unchanged."""
    return message


@server.tool()
def add(a: int, b: int) -> int:
    """Return ``a + b``."""
    return a + b


@server.tool()
async def slow(seconds: float) -> str:
    """Answer after ``seconds``."""
    await anyio.sleep(seconds)
    return f"slept {seconds:g}"


@server.tool()
def kill_server() -> str:
    """Die at once, as ``kill -9`` would: the call is never answered."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@server.resource("test://greeting")
def greeting() -> str:
    """A static text resource."""
    return "hello over websocket"


@server.prompt()
def greet(name: str) -> str:
    """A prompt with one argument."""
    return f"Say hello to {name}."


async def mcp_endpoint(websocket: WebSocket) -> None:
    """Run one MCP session on an accepted WebSocket (subprotocol ``mcp``)."""
    lowlevel = server._mcp_server
    async with websocket_server(websocket.scope, websocket.receive, websocket.send) as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


def main() -> None:
    """Serve on 127.0.0.1 until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = Starlette(routes=[WebSocketRoute("/ws", endpoint=mcp_endpoint)])
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
