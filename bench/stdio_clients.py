"""The clients of the stdio benchmark and the workloads they run, one client per process.

``PYTHONPATH=.:drivers python bench/stdio_clients.py CLIENT PLAN_JSON`` (as
``bench_stdio.py`` runs it) connects CLIENT to
``bench/fast_server.py``, reads its RSS, runs the sequential, 32-in-flight and big-result
workloads the plan asks for, and prints one JSON object of results on stdout. Only the
chosen client's libraries are imported, so imports and RSS stay isolated per client.
CPU time is ``getrusage(RUSAGE_SELF)`` of this process alone, never the server's.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Final, Protocol, TypedDict, cast

from bench._common import (
    ECHO_ARGS,
    PICKS,
    Call,
    Results,
    Round,
    ToolResult,
    check_text,
    configure_otel_from_env,
    first_text,
    per_call,
    record_seq,
    sansio_text_getter,
    sequential,
)

SERVER: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fast_server.py")
IN_FLIGHT: Final = 32

SyncCall = Callable[[str, dict[str, object]], str]
Job = Callable[[], Coroutine[object, object, None]]
Gather = Callable[[Sequence[Job]], Awaitable[None]]


class Plan(TypedDict):
    """What a worker runs; counts are calls, rounds repeat a timed loop (the best is kept)."""

    sections: list[str]  # any of "seq", "conc", "big"
    seq_warmup: int
    seq_calls: int
    seq_rounds: int
    conc_warmup: int
    conc_calls: int
    conc_rounds: int
    big_bytes: int
    big_rounds: int
    profile: str  # a section to run under cProfile, or ""
    profile_out: str  # where its pstats go
    pin: int  # a CPU for this process and the server it starts, or -1


# ------------------------------------------------------------------ measuring


def rss_mb() -> float:
    """``VmRSS`` of this process, in MB (10^6 bytes)."""
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError("no VmRSS in /proc/self/status")


def _profile_out(plan: Plan, section: str) -> str | None:
    """Where the pstats of ``section`` go, if the plan profiles it."""
    return plan["profile_out"] if plan["profile"] == section else None


def _record(out: Results, plan: Plan, seq: list[Round], conc: list[Round], big: list[Round]) -> None:
    """Store the best round (noise on a shared machine only adds) and, as ``*_median``, the median."""
    record_seq(out, seq, plan["seq_calls"])
    for suffix, pick in PICKS:
        if conc:
            cpu, wall = per_call(conc, plan["conc_calls"], pick)
            out[f"conc_calls_s{suffix}"], out[f"conc_cpu_us{suffix}"] = 1 / wall, cpu * 1e6
        if big:
            cpu, wall = per_call(big, 1, pick)
            out[f"big_mb_s{suffix}"] = plan["big_bytes"] / wall / 1e6
            out[f"big_cpu_ms{suffix}"] = cpu * 1e3


def _jobs(call: Call, total: int) -> list[Job]:
    """``IN_FLIGHT`` jobs sharing ``total`` sequential echo calls: 32 always in flight."""
    each = total // IN_FLIGHT

    async def job() -> None:
        for _ in range(each):
            await call("echo", ECHO_ARGS)

    return [job] * IN_FLIGHT


async def run_async(call: Call, gather: Gather, plan: Plan) -> Results:
    """Run the plan's workloads through an async ``call``; ``gather`` runs jobs concurrently."""
    out: Results = {"rss_mb": rss_mb()}
    check_text(await call("echo", ECHO_ARGS), len("hello world"))
    sections = plan["sections"]
    seq: list[Round] = []
    conc: list[Round] = []
    big: list[Round] = []
    if "seq" in sections:
        seq = await sequential(call, warmup=plan["seq_warmup"], calls=plan["seq_calls"],
                               rounds=plan["seq_rounds"], profile_out=_profile_out(plan, "seq"))
    if "conc" in sections:
        await gather(_jobs(call, plan["conc_warmup"]))
        for _ in range(plan["conc_rounds"]):
            jobs = _jobs(call, plan["conc_calls"])
            with Round(_profile_out(plan, "conc")) as r:
                await gather(jobs)
            conc.append(r)
    if "big" in sections:
        size: dict[str, object] = {"size": plan["big_bytes"]}
        check_text(await call("big", size), plan["big_bytes"])
        for _ in range(plan["big_rounds"]):
            with Round(_profile_out(plan, "big")) as r:
                await call("big", size)
            big.append(r)
    _record(out, plan, seq, conc, big)
    return out


def run_sync(call: SyncCall, plan: Plan) -> Results:
    """The same workloads through a blocking ``call``; there is no 32-in-flight one."""
    out: Results = {"rss_mb": rss_mb()}
    check_text(call("echo", ECHO_ARGS), len("hello world"))
    sections = plan["sections"]
    seq: list[Round] = []
    big: list[Round] = []
    if "seq" in sections:
        for _ in range(plan["seq_warmup"]):
            call("echo", ECHO_ARGS)
        for _ in range(plan["seq_rounds"]):
            with Round(_profile_out(plan, "seq")) as r:
                for _ in range(plan["seq_calls"]):
                    call("echo", ECHO_ARGS)
            seq.append(r)
    if "big" in sections:
        size: dict[str, object] = {"size": plan["big_bytes"]}
        check_text(call("big", size), plan["big_bytes"])
        for _ in range(plan["big_rounds"]):
            with Round(_profile_out(plan, "big")) as r:
                call("big", size)
            big.append(r)
    _record(out, plan, seq, [], big)
    if "conc" in sections:
        out["conc_calls_s"] = out["conc_cpu_us"] = None  # n/a: one call at a time
    return out


async def asyncio_gather(jobs: Sequence[Job]) -> None:
    """Run ``jobs`` concurrently with ``asyncio.gather``."""
    import asyncio

    await asyncio.gather(*(job() for job in jobs))


async def anyio_gather(jobs: Sequence[Job]) -> None:
    """Run ``jobs`` concurrently in an anyio task group (under asyncio or trio)."""
    import anyio

    async with anyio.create_task_group() as group:
        for job in jobs:
            group.start_soon(job)


# ------------------------------------------------------------------- clients


@contextlib.asynccontextmanager
async def sdk_client(command: str, args: list[str]) -> AsyncIterator[Call]:
    """The official SDK: ``stdio_client`` + ``ClientSession``, tools listed once.

    ``call_tool`` lists the tools by itself the first time it meets an unknown tool (to
    validate structured content), so the list is fetched up front, as a host would.
    """
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.types import TextContent

    server = StdioServerParameters(command=command, args=args)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()

        async def call(name: str, arguments: dict[str, object]) -> str:
            return first_text((await session.call_tool(name, arguments)).content, TextContent)

        yield call


class _AsyncDriverClient(Protocol):
    async def call_tool(self, name: str, arguments: Mapping[str, object] | None = None) -> ToolResult: ...


class _SyncDriverClient(Protocol):
    def call_tool(self, name: str, arguments: Mapping[str, object] | None = None) -> ToolResult: ...


AsyncConnect = Callable[[str, Sequence[str]], contextlib.AbstractAsyncContextManager[_AsyncDriverClient]]
SyncConnect = Callable[[str, Sequence[str]], contextlib.AbstractContextManager[_SyncDriverClient]]


def driver_connect(module: str) -> object:
    """``connect_stdio`` of one of our driver packages (the drivers share its API).

    Raises:
        ImportError: the driver is not importable (yet) or has no ``connect_stdio``.
    """
    driver = importlib.import_module(module)
    try:
        connect: object = driver.connect_stdio
    except AttributeError as exc:
        raise ImportError(f"{module} has no connect_stdio") from exc
    return connect


@contextlib.asynccontextmanager
async def async_driver_client(module: str, command: str, args: list[str]) -> AsyncIterator[Call]:
    """One of our async drivers, through its ``connect_stdio``."""
    connect = cast(AsyncConnect, driver_connect(module))
    text_of = sansio_text_getter()
    async with connect(command, args) as client:

        async def call(name: str, arguments: dict[str, object]) -> str:
            return text_of(await client.call_tool(name, arguments))

        yield call


@contextlib.contextmanager
def sync_driver_client(command: str, args: list[str]) -> Iterator[SyncCall]:
    """Our blocking driver, through its ``connect_stdio``."""
    connect = cast(SyncConnect, driver_connect("mcp_sansio_sync"))
    text_of = sansio_text_getter()
    with connect(command, args) as client:

        def call(name: str, arguments: dict[str, object]) -> str:
            return text_of(client.call_tool(name, arguments))

        yield call


def _floor(command: str, args: list[str]) -> contextlib.AbstractAsyncContextManager[Call]:
    from bench.stdio_floors import floor_client

    return floor_client(command, args)


def _blocking_floor(command: str, args: list[str]) -> contextlib.AbstractContextManager[SyncCall]:
    from bench.stdio_floors import blocking_floor_client

    return blocking_floor_client(command, args)


# -------------------------------------------------------------------- worker

AsyncFactory = Callable[[str, list[str]], contextlib.AbstractAsyncContextManager[Call]]
SyncFactory = Callable[[str, list[str]], contextlib.AbstractContextManager[SyncCall]]

ASYNC_CLIENTS: Final[Mapping[str, AsyncFactory]] = {
    "sdk": sdk_client,
    "asyncio": lambda c, a: async_driver_client("mcp_sansio_asyncio", c, a),
    "anyio-asyncio": lambda c, a: async_driver_client("mcp_sansio_anyio", c, a),
    "anyio-trio": lambda c, a: async_driver_client("mcp_sansio_anyio", c, a),
    "floor": _floor,
}
SYNC_CLIENTS: Final[Mapping[str, SyncFactory]] = {
    "sync": sync_driver_client,
    "blocking-floor": _blocking_floor,
}


def run_client(name: str, plan: Plan) -> Results:
    """Connect client ``name`` to the fast server and run ``plan``.

    Raises:
        ImportError: the client's driver is not importable.
    """
    command, args = sys.executable, [SERVER]
    if plan["pin"] >= 0:
        os.sched_setaffinity(0, {plan["pin"]})  # the server inherits it
    if name in SYNC_CLIENTS:
        with SYNC_CLIENTS[name](command, args) as sync_call:
            return run_sync(sync_call, plan)
    gather = anyio_gather if name.startswith("anyio") else asyncio_gather

    async def main() -> Results:
        async with ASYNC_CLIENTS[name](command, args) as call:
            return await run_async(call, gather, plan)

    if name == "anyio-trio":
        import anyio

        return anyio.run(main, backend="trio")
    import asyncio  # not at the top: the blocking clients' RSS must not include it

    return asyncio.run(main())


def main(argv: list[str]) -> None:
    """``stdio_clients.py CLIENT PLAN_JSON``: print the results (or why skipped) as JSON.

    CLIENT ``baseline`` prints only the RSS of the worker process itself.
    """
    name, plan = argv[0], cast(Plan, json.loads(argv[1]))
    configure_otel_from_env()
    if name == "baseline":  # the worker itself, connected to nothing
        print(json.dumps({"rss_mb": rss_mb()}))
        return
    try:
        results = run_client(name, plan)
    except ImportError as exc:
        results = {"skipped": f"not importable: {exc}"}
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
