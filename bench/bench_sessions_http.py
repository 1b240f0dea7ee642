"""How a real server's cost per call grows with the sessions it holds, over sockets, beside
the official SDK, FastMCP and the bare h11 floor (issue #20's scaling table).

Usage: ``python bench/bench_sessions_http.py [--sessions 1,1000,10000] [--calls N] [--only NAME]``.

For each size N and each server (alternated within a size), a fresh server process is given
N - 1 other live handshake-era sessions (``initialize`` + ``notifications/initialized``
each, as a client would, over one keep-alive connection), then one more session makes
``--calls`` ``tools/call`` requests. Reported: the server's CPU per call
(``/proc/PID/schedstat``) and its ratio to the same server's one-session figure, the CPU
each session cost to open, and the server's RSS with N sessions. ``bench_sessions.py``
measures the pure core alone (up to 50,000 sessions, in memory); this is the same question
asked of whole servers, the peers' included. The floor keeps no sessions (its cost cannot
grow): it is the line the others are read against.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__":  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_server import (
    ADD,
    ASGI_SERVE,
    FASTMCP,
    HERE,
    INIT,
    PY,
    SDK,
    call,
    cpu_ns,
    free_port,
    http_server,
    session,
)

SERVERS: dict[str, Callable[[int], list[str]]] = {
    "mcp-sansio h11 (asyncio)": lambda port: [PY, "-m", "mcp_sansio_cli", "serve", ADD, "--http", str(port)],
    "mcp-sansio ASGI (uvicorn)": lambda port: [PY, "-c", ASGI_SERVE, ADD, str(port), "json"],
    "SDK MCPServer (uvicorn)": lambda port: [PY, SDK, "--http", str(port), "--json"],
    "FastMCP 4.2 (uvicorn)": lambda port: [PY, FASTMCP, "--http", str(port), "--json"],
    "floor (bare h11)": lambda port: [PY, str(HERE / "h11_floor_server.py"), str(port)],
}
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def open_sessions(port: int, count: int) -> None:
    """Open ``count`` sessions (handshake and ``initialized``), one after another."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    try:
        for _ in range(count):
            conn.request("POST", "/mcp", init, HEADERS)
            response = conn.getresponse()
            response.read()
            assert response.status == 200, response.status
            headers = {**HEADERS, "mcp-session-id": response.getheader("mcp-session-id") or "",
                       "mcp-protocol-version": "2025-11-25"}
            conn.request("POST", "/mcp", initialized, headers)
            conn.getresponse().read()
    finally:
        conn.close()


def rss_kib(pid: int) -> int:
    """The process's resident set, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def measure(command: Callable[[int], list[str]], sessions: int, calls: int) -> dict[str, float]:
    """One fresh server holding ``sessions`` sessions: what a call and a session cost."""
    port = free_port()
    with http_server(command(port), port) as proc:
        cpu = cpu_ns(proc.pid)
        open_sessions(port, sessions - 1)
        open_cpu = (cpu_ns(proc.pid) - cpu) / max(sessions - 1, 1) / 1e6
        with session(port, max(50, calls // 10)) as post:
            cpu = cpu_ns(proc.pid)
            for rid in range(10_000, 10_000 + calls):
                reply = post(call(rid))
                assert "result" in reply, reply
            per_call = (cpu_ns(proc.pid) - cpu) / calls / 1000
        rss = rss_kib(proc.pid)
    return {"us_per_call": per_call, "ms_cpu_per_session": open_cpu, "rss_mib": rss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--sessions", default="1,1000,10000")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--only", help="run only the servers whose name starts with this")
    options = parser.parse_args()
    sizes = [int(n) for n in options.sessions.split(",")]
    servers = {name: cmd for name, cmd in SERVERS.items()
               if not options.only or name.startswith(options.only)}
    if not servers:
        parser.error(f"--only {options.only!r} starts no server name; the servers: {', '.join(SERVERS)}")
    os.environ["BENCH_ASYNC_ADD"] = "1"  # our tool as an async def: the transport's cost, no thread handoff
    results: dict[tuple[str, int], dict[str, float]] = {}
    for size in sizes:
        for name, command in servers.items():
            results[name, size] = row = measure(command, size, options.calls)
            print(f"  {name:28} {size:>7} sessions {row['us_per_call']:8.1f} us/call", file=sys.stderr,
                  flush=True)
    print(f"\nServer CPU per tools/call beside N live sessions ({options.calls} calls; load "
          f"{os.getloadavg()[0]:.2f})\n")
    print("| server | sessions | CPU us/call | / 1 session | CPU ms per session opened | RSS MiB |")
    print("|---|---|---|---|---|---|")
    for (name, size), row in results.items():
        one = results.get((name, sizes[0]))
        ratio = f"{row['us_per_call'] / one['us_per_call']:.2f}x" if one else ""
        opened = f"{row['ms_cpu_per_session']:.2f}" if size > 1 else ""
        print(f"| {name} | {size:,} | {row['us_per_call']:.1f} | {ratio} | {opened} | {row['rss_mib']:.0f} |")


if __name__ == "__main__":
    main()
