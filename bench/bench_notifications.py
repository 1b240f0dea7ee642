"""Client CPU to take a flood of notifications with a trivial handler, on every driver.

A tiny stdio server (``--server``, below) answers ``tools/call flood {count}`` by writing
``count`` ``notifications/message`` lines and then the result. The client counts them in
its ``on_notification`` handler (``async def`` on the async drivers, a plain function on
the blocking one) and waits until the handler has seen them all. Measured: the client
process's CPU (user + system, ``getrusage``) and wall time from the call to the last
notification handled, each driver in a fresh process, best of ``--rounds``.

Run: ``python bench/bench_notifications.py [--count 100000] [--rounds 3] [DRIVER ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Final

DRIVERS: Final = ("asyncio", "anyio-asyncio", "anyio-trio", "sync")
_BATCH: Final = 256  # notifications per os.write


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ------------------------------------------------------------------ the server


def serve() -> None:
    """Answer initialize, tools/list and tools/call flood; one JSON line per message."""
    note = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"tick"}}\n'
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue
        if method == "initialize":
            result: dict[str, object] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {},
                                         "logging": {}}, "serverInfo": {"name": "flood", "version": "1"}}
        elif method == "tools/call":
            count = int(message["params"]["arguments"]["count"])
            for start in range(0, count, _BATCH):
                os.write(1, note * min(_BATCH, count - start))
            result = {"content": [{"type": "text", "text": "done"}]}
        else:
            result = {}
        os.write(1, json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")


# ------------------------------------------------------------------ one client


def measure(driver: str, count: int) -> dict[str, float]:
    """One round on ``driver``: CPU and wall seconds until ``count`` notifications were handled."""
    server = [sys.executable, os.path.abspath(__file__), "--server"]
    if driver == "sync":
        from mcp_sansio_sync import connect_stdio as connect_sync

        seen = [0]

        def on_sync(event: object) -> None:
            seen[0] += 1

        with connect_sync(server[0], server[1:], on_notification=on_sync) as client:
            cpu, wall = _cpu(), time.perf_counter()
            client.call_tool("flood", {"count": count}, timeout=600)
            while seen[0] < count:
                client.ping()
            return {"cpu": _cpu() - cpu, "wall": time.perf_counter() - wall}

    async def run() -> dict[str, float]:
        import anyio

        if driver == "asyncio":
            from mcp_sansio_asyncio import connect_stdio
        else:
            from mcp_sansio_anyio import connect_stdio  # type: ignore[assignment]  # same signature
        seen = 0
        done = anyio.Event()

        async def on_notification(event: object) -> None:
            nonlocal seen
            seen += 1
            if seen == count:
                done.set()

        async with connect_stdio(server[0], server[1:], on_notification=on_notification) as client:
            cpu, wall = _cpu(), time.perf_counter()
            await client.call_tool("flood", {"count": count}, timeout=600)
            await done.wait()
            return {"cpu": _cpu() - cpu, "wall": time.perf_counter() - wall}

    if driver == "asyncio":
        import asyncio

        return asyncio.run(run())
    import anyio

    return anyio.run(run, backend="trio" if driver == "anyio-trio" else "asyncio")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("drivers", nargs="*", metavar="DRIVER", help=f"some of {', '.join(DRIVERS)} (all)")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.server:
        serve()
        return
    unknown = set(args.drivers) - set(DRIVERS)
    if unknown:
        parser.error(f"unknown drivers {sorted(unknown)}: choose from {', '.join(DRIVERS)}")
    if args.worker:
        print(json.dumps(measure(args.worker, args.count)))
        return
    print(f"{args.count} notifications/message, trivial handler; client CPU and wall, best of {args.rounds}")
    for driver in args.drivers or DRIVERS:
        rounds = [json.loads(subprocess.run(
            [sys.executable, __file__, "--worker", driver, "--count", str(args.count)],
            check=True, capture_output=True, text=True).stdout) for _ in range(args.rounds)]
        cpu, wall = min(r["cpu"] for r in rounds), min(r["wall"] for r in rounds)
        print(f"  {driver:14} CPU {cpu:6.2f} s ({cpu / args.count * 1e6:5.1f} us each)   wall {wall:6.2f} s")


if __name__ == "__main__":
    main()
