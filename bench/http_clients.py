"""The clients of the HTTP / stateless-era benchmark, one client per process.

``PYTHONPATH=.:drivers python bench/http_clients.py CLIENT PLAN_JSON`` (as ``bench_http.py``
runs it) connects CLIENT to the official SDK's test server (``tests/servers/sdk_server.py``)
over Streamable HTTP (the plan's URL, a server the orchestrator runs) or over stdio (the
plan's command, started here), lists the tools once, runs sequential ``tools/call echo``
rounds and prints one JSON object: the negotiated protocol and CPU and wall time per
call. Only the chosen client's libraries are imported. CPU is ``getrusage(RUSAGE_SELF)``
of this process alone, never the server's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Final, NamedTuple, TypedDict, cast

from bench._common import (
    ECHO_ARGS,
    Call,
    Results,
    check_text,
    configure_otel_from_env,
    first_text,
    record_seq,
    sansio_text_getter,
    sequential,
)

HANDSHAKE: Final = "2025-11-25"
STATELESS: Final = "2026-07-28"


class Plan(TypedDict):
    """What a worker runs; ``rounds`` timed rounds of ``calls`` (the best is kept)."""

    transport: str  # "http" or "stdio"
    target: list[str]  # http: [url]; stdio: [command, *args]
    warmup: int
    calls: int
    rounds: int
    pin: int  # a CPU for this process (and a stdio server it starts), or -1
    profile_out: str  # where the pstats of the timed rounds go, or "" for no profiling


class Connected(NamedTuple):
    """A connected client: how to call a tool, and the revision it negotiated."""

    call: Call
    protocol: str


# ------------------------------------------------------------------- clients


@contextlib.asynccontextmanager
async def sdk_client(plan: Plan, mode: str | None) -> AsyncIterator[Connected]:
    """The official SDK's ``mcp.Client`` (``streamable_http_client`` or ``stdio_client`` +
    ``ClientSession``), in ``mode`` (``"legacy"``: the initialize handshake) or, with
    ``None``, its default (``"auto"``: ``server/discover``, falling back to initialize).

    The tools are listed once up front, as a host would: ``call_tool`` lists them itself
    the first time it meets a tool (to validate structured output, and for the stateless
    era's ``x-mcp-header`` parameters).
    """
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.types import TextContent

    command, *args = plan["target"]
    server = command if plan["transport"] == "http" else StdioServerParameters(command=command, args=args)
    client = Client(server) if mode is None else Client(server, mode=mode)
    async with client:
        await client.list_tools()

        async def call(name: str, arguments: dict[str, object]) -> str:
            return first_text((await client.call_tool(name, arguments)).content, TextContent)

        yield Connected(call, client.protocol_version)


@contextlib.asynccontextmanager
async def sansio_client(plan: Plan, protocol: str) -> AsyncIterator[Connected]:
    """Ours: ``mcp_sansio_asyncio.connect_http`` (or ``connect_stdio``) speaking ``protocol``."""
    from mcp_sansio import ClientConfig
    from mcp_sansio_asyncio import connect_http, connect_stdio

    config = ClientConfig(protocol=protocol)
    command, *args = plan["target"]
    connect = (connect_http(command, config=config) if plan["transport"] == "http"
               else connect_stdio(command, args, config=config))
    text_of = sansio_text_getter()
    async with connect as client:
        await client.list_tools()

        async def call(name: str, arguments: dict[str, object]) -> str:
            return text_of(await client.call_tool(name, arguments))

        yield Connected(call, client.protocol_version)


Factory = Callable[[Plan], contextlib.AbstractAsyncContextManager[Connected]]

CLIENTS: Final[Mapping[str, Factory]] = {
    "sdk-legacy": lambda plan: sdk_client(plan, "legacy"),
    "sdk-default": lambda plan: sdk_client(plan, None),
    f"ours-{HANDSHAKE}": lambda plan: sansio_client(plan, HANDSHAKE),
    f"ours-{STATELESS}": lambda plan: sansio_client(plan, STATELESS),
}


# -------------------------------------------------------------------- worker


async def run(name: str, plan: Plan) -> Results:
    """Connect client ``name``, check one echo, time the sequential rounds."""
    async with CLIENTS[name](plan) as (call, protocol):
        check_text(await call("echo", ECHO_ARGS), len("hello world"))
        rounds = await sequential(call, warmup=plan["warmup"], calls=plan["calls"],
                                  rounds=plan["rounds"], profile_out=plan["profile_out"] or None)
    out: Results = {"protocol": protocol}
    record_seq(out, rounds, plan["calls"])
    return out


def main(argv: list[str]) -> None:
    """``http_clients.py CLIENT PLAN_JSON``: print the results as JSON."""
    name, plan = argv[0], cast(Plan, json.loads(argv[1]))
    configure_otel_from_env()
    if plan["pin"] >= 0:
        os.sched_setaffinity(0, {plan["pin"]})  # a stdio server inherits it
    print(json.dumps(asyncio.run(run(name, plan))))


if __name__ == "__main__":
    main(sys.argv[1:])
