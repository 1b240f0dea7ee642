"""What the shared Redis store costs per ``tools/call``, against the in-memory default.

Usage: ``python bench/bench_store.py [--calls N] [--rounds R] [--json FILE]`` (needs
``redis-server`` on PATH: it starts one on a free loopback port, ``--save '' --appendonly no``).

One handshake-era session of ``add_server.py`` served by ``mcp-sansio serve --http`` (asyncio
driver), with JSON answers and with SSE answers, with the in-memory stores and with
``--store redis://...``; one client on one keep-alive connection, one request at a time.
Per call it reports:

- ``server us``: the server process's CPU (``/proc/PID/schedstat``), as ``bench_server.py``;
- ``wall us``: the client's wall time per round trip (what a caller waits; the Redis round
  trips are in it, Redis's own CPU is not in ``server us``);
- ``store trips``: Redis commands the server sent per call (``INFO stats``
  ``total_commands_processed`` before and after, minus this bench's own two ``INFO`` calls),
  and ``round trips``: Redis's reads (``total_reads_processed``; a pipeline arrives in one).

The rows alternate (memory, Redis, memory, Redis, ...) over ``--rounds`` rounds and the
median of each is reported, so that a loaded machine affects both alike.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__":  # run as a script: make the package ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_server import ADD, PY, call, cpu_ns, free_port, http_server, session

SSE_SERVE = ("import asyncio, runpy, sys; from mcp_sansio_asyncio import serve_http; "
             "from mcp_sansio.server.http import HttpConfig; "
             "app = runpy.run_path(sys.argv[1])['app']; "
             "store = sys.argv[3] if sys.argv[3] != '-' else None; "
             "asyncio.run(serve_http(app, port=int(sys.argv[2]), store=store, "
             "config=HttpConfig.loopback(response_mode='sse')))")


def redis_counts(port: int) -> tuple[int, int]:
    """Redis's ``INFO stats``: commands processed, and reads (a pipeline arrives in one: a
    round trip)."""
    import redis

    client = redis.Redis(port=port)
    try:
        stats = client.info("stats")
        return int(stats["total_commands_processed"]), int(stats["total_reads_processed"])
    finally:
        client.close()


def measure(mode: str, store: str | None, redis_port: int, calls: int, warmup: int) -> dict[str, float]:
    port = free_port()
    if mode == "JSON":
        command = [PY, "-m", "mcp_sansio_cli", "serve", ADD, "--http", str(port)]
        command += [] if store is None else ["--store", store]
    else:
        command = [PY, "-c", SSE_SERVE, ADD, str(port), store or "-"]
    with http_server(command, port) as proc, session(port, warmup) as post:
        commands, reads = redis_counts(redis_port)
        cpu = cpu_ns(proc.pid)
        wall = time.perf_counter()
        for rid in range(warmup + 1, warmup + calls + 1):
            reply = post(call(rid))
            assert "result" in reply, reply
        wall = time.perf_counter() - wall
        used = cpu_ns(proc.pid) - cpu
        commands_after, reads_after = redis_counts(redis_port)
        # (this bench's second connection: its INFO, one command, in one read)
        commands, reads = commands_after - commands - 1, reads_after - reads - 1
    return {"server_us": used / calls / 1000, "wall_us": wall / calls * 1e6,
            "store_commands": commands / calls, "round_trips": reads / calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the results here")
    options = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("bench_store: redis-server is not on PATH (apt-get install redis-server)")
    redis_port = free_port()
    server = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                redis_counts(redis_port)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        store = f"redis://127.0.0.1:{redis_port}/0"
        warm = max(50, options.calls // 10)
        samples: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _ in range(options.rounds):
            for mode in ("JSON", "SSE"):
                for name, url in (("memory", None), ("redis", store)):
                    samples.setdefault((mode, name), []).append(
                        measure(mode, url, redis_port, options.calls, warm))
        results = []
        print(f"{'answers':8} {'store':7} {'server us':>10} {'wall us':>9} {'commands':>9} "
              f"{'round trips':>12}")
        for (mode, name), runs in samples.items():
            row = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            results.append({"answers": mode, "store": name, **row})
            print(f"{mode:8} {name:7} {row['server_us']:10.1f} {row['wall_us']:9.1f} "
                  f"{row['store_commands']:9.2f} {row['round_trips']:12.2f}")
    finally:
        server.terminate()
        server.wait(10)
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
