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
import resource
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final, Protocol, TypedDict, cast

if TYPE_CHECKING:
    import cProfile

SERVER: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fast_server.py")
ECHO_ARGS: Final[dict[str, object]] = {"message": "hello world"}
IN_FLIGHT: Final = 32

Call = Callable[[str, dict[str, object]], Awaitable[str]]
SyncCall = Callable[[str, dict[str, object]], str]
Job = Callable[[], Coroutine[object, object, None]]
Gather = Callable[[Sequence[Job]], Awaitable[None]]
Results = dict[str, float | str | None]


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


def cpu_seconds() -> float:
    """User + system CPU time of this process (the client only: the server is a child)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mb() -> float:
    """``VmRSS`` of this process, in MB (10^6 bytes)."""
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError("no VmRSS in /proc/self/status")


class _Round:
    """Times one round (client CPU and wall clock); profiles it if the plan says so."""

    def __init__(self, plan: Plan, section: str) -> None:
        self._profiler: cProfile.Profile | None = None
        if plan["profile"] == section:
            import cProfile

            self._profiler = cProfile.Profile()
        self._out = plan["profile_out"]
        self.cpu = self.wall = self._cpu0 = self._wall0 = 0.0

    def __enter__(self) -> _Round:
        if self._profiler is not None:
            self._profiler.enable()
        self._cpu0, self._wall0 = cpu_seconds(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall0
        self.cpu = cpu_seconds() - self._cpu0
        if self._profiler is not None:
            self._profiler.disable()
            self._profiler.dump_stats(self._out)


def _per_call(rounds: list[_Round], calls: int, pick: Callable[[list[float]], float]) -> tuple[float, float]:
    """(CPU, wall) seconds per call of the rounds, each picked by ``pick`` (min or median)."""
    return pick([r.cpu for r in rounds]) / calls, pick([r.wall for r in rounds]) / calls


def _check(text: str, size: int) -> None:
    if len(text) != size:
        raise RuntimeError(f"wrong tool result: {text[:80]!r}... ({len(text)} chars, expected {size})")


def _record(out: Results, plan: Plan, seq: list[_Round], conc: list[_Round], big: list[_Round]) -> None:
    """Store the best round (noise on a shared machine only adds) and, as ``*_median``, the median."""
    for suffix, pick in (("", min), ("_median", statistics.median)):
        if seq:
            cpu, wall = _per_call(seq, plan["seq_calls"], pick)
            out[f"seq_cpu_us{suffix}"], out[f"seq_wall_us{suffix}"] = cpu * 1e6, wall * 1e6
        if conc:
            cpu, wall = _per_call(conc, plan["conc_calls"], pick)
            out[f"conc_calls_s{suffix}"], out[f"conc_cpu_us{suffix}"] = 1 / wall, cpu * 1e6
        if big:
            cpu, wall = _per_call(big, 1, pick)
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
    _check(await call("echo", ECHO_ARGS), len("hello world"))
    sections = plan["sections"]
    seq: list[_Round] = []
    conc: list[_Round] = []
    big: list[_Round] = []
    if "seq" in sections:
        for _ in range(plan["seq_warmup"]):
            await call("echo", ECHO_ARGS)
        for _ in range(plan["seq_rounds"]):
            with _Round(plan, "seq") as r:
                for _ in range(plan["seq_calls"]):
                    await call("echo", ECHO_ARGS)
            seq.append(r)
    if "conc" in sections:
        await gather(_jobs(call, plan["conc_warmup"]))
        for _ in range(plan["conc_rounds"]):
            jobs = _jobs(call, plan["conc_calls"])
            with _Round(plan, "conc") as r:
                await gather(jobs)
            conc.append(r)
    if "big" in sections:
        size: dict[str, object] = {"size": plan["big_bytes"]}
        _check(await call("big", size), plan["big_bytes"])
        for _ in range(plan["big_rounds"]):
            with _Round(plan, "big") as r:
                await call("big", size)
            big.append(r)
    _record(out, plan, seq, conc, big)
    return out


def run_sync(call: SyncCall, plan: Plan) -> Results:
    """The same workloads through a blocking ``call``; there is no 32-in-flight one."""
    out: Results = {"rss_mb": rss_mb()}
    _check(call("echo", ECHO_ARGS), len("hello world"))
    sections = plan["sections"]
    seq: list[_Round] = []
    big: list[_Round] = []
    if "seq" in sections:
        for _ in range(plan["seq_warmup"]):
            call("echo", ECHO_ARGS)
        for _ in range(plan["seq_rounds"]):
            with _Round(plan, "seq") as r:
                for _ in range(plan["seq_calls"]):
                    call("echo", ECHO_ARGS)
            seq.append(r)
    if "big" in sections:
        size: dict[str, object] = {"size": plan["big_bytes"]}
        _check(call("big", size), plan["big_bytes"])
        for _ in range(plan["big_rounds"]):
            with _Round(plan, "big") as r:
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
            result = await session.call_tool(name, arguments)
            block = result.content[0]
            if not isinstance(block, TextContent):
                raise TypeError(f"expected text, got {block!r}")
            return block.text

        yield call


class _ToolResult(Protocol):
    """What our drivers' ``call_tool`` returns (a ``CallToolResult``)."""

    @property
    def content(self) -> Sequence[object]: ...


class _AsyncDriverClient(Protocol):
    async def call_tool(self, name: str, arguments: Mapping[str, object] | None = None) -> _ToolResult: ...


class _SyncDriverClient(Protocol):
    def call_tool(self, name: str, arguments: Mapping[str, object] | None = None) -> _ToolResult: ...


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


def _text_getter() -> Callable[[_ToolResult], str]:
    from mcp_sansio.types import TextContent

    def text_of(result: _ToolResult) -> str:
        block = result.content[0]
        if not isinstance(block, TextContent):
            raise TypeError(f"expected text, got {block!r}")
        return block.text

    return text_of


@contextlib.asynccontextmanager
async def async_driver_client(module: str, command: str, args: list[str]) -> AsyncIterator[Call]:
    """One of our async drivers, through its ``connect_stdio``."""
    connect = cast(AsyncConnect, driver_connect(module))
    text_of = _text_getter()
    async with connect(command, args) as client:

        async def call(name: str, arguments: dict[str, object]) -> str:
            return text_of(await client.call_tool(name, arguments))

        yield call


@contextlib.contextmanager
def sync_driver_client(command: str, args: list[str]) -> Iterator[SyncCall]:
    """Our blocking driver, through its ``connect_stdio``."""
    connect = cast(SyncConnect, driver_connect("mcp_sansio_sync"))
    text_of = _text_getter()
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
