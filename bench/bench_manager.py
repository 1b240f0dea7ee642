"""Start-up of many stdio servers through the asyncio ``ServerManager``.

Connects ``--servers`` (20) stdio servers at once with ``connect_all``. Each is this file run
with ``--serve``: a tiny server that sleeps ``--delay`` (0.3 s) before answering
``initialize`` and logs, on the machine's monotonic clock (shared by every process), when
its process started and when it answered. Reported: the total time of ``connect_all``; the
slowest single start-up (the worst of a few managers with one server each); their ratio
against the ideal, ``ceil(servers / max_local)`` batches; and the most servers seen
starting at once, which must not exceed ``max_local`` (3).

Run: ``python bench/bench_manager.py [--servers N] [--delay S] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

MAX_LOCAL: Final = 3
SINGLE_RUNS: Final = 3
SCRIPT: Final = os.path.abspath(__file__)


def serve(delay: float, log: str) -> None:
    """The benchmark's server: answer ``initialize`` after ``delay`` s, then anything else."""
    def record(event: str) -> None:
        with open(log, "a", encoding="utf-8") as file:
            file.write(json.dumps({"event": event, "at": time.monotonic()}) + "\n")

    record("start")
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        reply: dict[str, object] = {"jsonrpc": "2.0", "id": message["id"]}
        if message["method"] == "initialize":
            time.sleep(delay)
            record("ready")
            reply["result"] = {"protocolVersion": "2025-11-25", "capabilities": {},
                               "serverInfo": {"name": "bench-manager", "version": "1"}}
        else:
            reply["error"] = {"code": -32601, "message": "method not found"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def most_at_once(log: Path) -> int:
    """The most servers between their start and their ``initialize`` answer at one time."""
    events = sorted((event["at"], event["event"] == "start")
                    for event in map(json.loads, log.read_text().splitlines()))
    starting = most = 0
    for _, is_start in events:
        starting += 1 if is_start else -1
        most = max(most, starting)
    return most


async def connect(servers: int, delay: float, log: Path) -> float:
    """Connect ``servers`` servers with one manager; return the seconds ``connect_all`` took."""
    from mcp_sansio.hostconfig import Scope, ServerEntry, ServerState, StdioServerConfig
    from mcp_sansio_asyncio.manager import ServerManager

    config = StdioServerConfig(command=sys.executable,
                               args=(SCRIPT, "--serve", str(delay), str(log)))
    entries = [ServerEntry(name=f"s{i}", config=config, scope=Scope.USER, source="bench",
                           state=ServerState.ENABLED, state_source="bench") for i in range(servers)]
    async with ServerManager(entries, max_local=MAX_LOCAL) as manager:
        began = time.perf_counter()
        await manager.connect_all()
        elapsed = time.perf_counter() - began
        failed = [status for status in manager.states.values() if status.state.value != "connected"]
        if failed:
            raise SystemExit(f"bench_manager: {failed[0].name} did not connect: {failed[0].error}")
    return elapsed


def main() -> None:
    """Parse the options, run the benchmark, print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--servers", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.3, help="seconds before answering initialize")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--serve", nargs=2, metavar=("DELAY", "LOG"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve(float(options.serve[0]), options.serve[1])
        return
    with tempfile.TemporaryDirectory() as tmp:
        singles = [asyncio.run(connect(1, options.delay, Path(tmp, f"single{run}.log")))
                   for run in range(SINGLE_RUNS)]
        log = Path(tmp, "all.log")
        total = asyncio.run(connect(options.servers, options.delay, log))
        at_once = most_at_once(log)
    slowest = max(singles)
    batches = math.ceil(options.servers / MAX_LOCAL)
    results = {
        "servers": options.servers, "delay_s": options.delay, "max_local": MAX_LOCAL,
        "total_s": round(total, 3), "slowest_single_s": round(slowest, 3),
        "total_over_slowest": round(total / slowest, 2), "ideal_batches": batches,
        "total_over_ideal": round(total / (batches * slowest), 2), "most_starting_at_once": at_once,
        "pass": at_once <= MAX_LOCAL,
    }
    print(f"{options.servers} stdio servers, each {options.delay:g} s to answer initialize,"
          f" max_local={MAX_LOCAL}")
    print(f"  connect_all total        {total:7.3f} s")
    print(f"  slowest single start-up  {slowest:7.3f} s   (worst of {SINGLE_RUNS})")
    print(f"  total / slowest single   {total / slowest:7.2f}     (ideal: {batches} batches;"
          f" total / ideal = {results['total_over_ideal']})")
    verdict = "PASS" if results["pass"] else "FAIL"
    print(f"  most starting at once    {at_once:7d}     (limit {MAX_LOCAL}): {verdict}")
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2) + "\n")
    if not results["pass"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
