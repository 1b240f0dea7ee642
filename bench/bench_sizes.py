"""How server cost grows with the size of a message: CPU per ``tools/call`` answering a text of
1 KiB, 64 KiB and 1 MiB, and the server's peak RSS, for ours, the SDK, FastMCP and the floors.

Usage: ``python bench/bench_sizes.py [--rounds R] [--sizes 1024,65536,1048576] [--json FILE]``.

The tool is ``text(size)`` (``add_server.py``, ``sdk_add_server.py``, ``fastmcp_add_server.py``;
the floors answer it too), called over Streamable HTTP after the 2025-11-25 handshake on one
keep-alive connection, one request at a time, as in ``bench_server.py``: ours with
``async def text`` on the loop (the transport's cost, no thread hand-off), JSON and SSE
answers, h11 and the ASGI app under uvicorn; the SDK and FastMCP under uvicorn (JSON); the
bare h11 and ASGI floors. Per row: server CPU per call (``/proc/PID/schedstat``), the same
per KiB answered, and ``VmHWM`` (peak RSS) after the calls. Rows alternate within each round
and the best round is kept. A cost per KiB that falls as the size grows is a fixed cost
amortised; one that rises is a copy or a scan too many.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__":  # run as a script: make the package ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_server import (
    ADD,
    ASGI_SERVE,
    FASTMCP,
    HERE,
    PY,
    SDK,
    SSE_SERVE,
    cpu_ns,
    free_port,
    http_server,
    session,
)

Command = Callable[[int], list[str]]
ROWS: dict[str, Command] = {
    "SDK MCPServer (uvicorn) JSON": lambda p: [PY, SDK, "--http", str(p), "--json"],
    "FastMCP 4.2 (uvicorn) JSON": lambda p: [PY, FASTMCP, "--http", str(p), "--json"],
    "mcp-sansio h11 JSON": lambda p: [PY, "-m", "mcp_sansio_cli", "serve", ADD, "--http", str(p)],
    "mcp-sansio h11 SSE": lambda p: [PY, "-c", SSE_SERVE, ADD, str(p)],
    "floor (bare h11) JSON": lambda p: [PY, str(HERE / "h11_floor_server.py"), str(p)],
    "floor (bare h11) SSE": lambda p: [PY, str(HERE / "h11_floor_server.py"), str(p), "sse"],
    "mcp-sansio ASGI JSON": lambda p: [PY, "-c", ASGI_SERVE, ADD, str(p), "json"],
    "floor (bare ASGI) JSON": lambda p: [PY, str(HERE / "asgi_floor_app.py"), str(p)],
}


def peak_rss_kib(pid: int) -> int:
    """``VmHWM`` of the process: its peak resident set, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def measure(command: Command, size: int) -> tuple[float, int]:
    """Server CPU microseconds per call of ``text(size)``, and its peak RSS (KiB) after them."""
    calls = max(20, min(1000, 4_000_000 // size))
    port = free_port()
    with http_server(command(port), port) as proc, session(port, 20) as post:
        def text(rid: int) -> None:
            reply = post({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                          "params": {"name": "text", "arguments": {"size": size}}})
            result = reply.get("result")
            assert isinstance(result, dict), reply
            assert len(result["content"][0]["text"]) == size, reply

        for rid in range(100, 100 + max(5, calls // 10)):  # warm-up, at this size
            text(rid)
        start = cpu_ns(proc.pid)
        for rid in range(10_000, 10_000 + calls):
            text(rid)
        used = cpu_ns(proc.pid) - start
        return used / calls / 1000, peak_rss_kib(proc.pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--sizes", default="1024,65536,1048576")
    parser.add_argument("--json", help="also write the results here")
    options = parser.parse_args()
    os.environ["BENCH_ASYNC_ADD"] = "1"  # ours: async def text, on the loop
    sizes = [int(size) for size in options.sizes.split(",")]
    best: dict[tuple[str, int], tuple[float, int]] = {}
    for _ in range(options.rounds):
        for size in sizes:
            for name, command in ROWS.items():
                us, rss = measure(command, size)
                old = best.get((name, size))
                best[name, size] = (min(us, old[0]), max(rss, old[1])) if old else (us, rss)
                print(f"  {name:30} {size:>8} B {us:10.1f} us  {rss / 1024:7.1f} MiB", file=sys.stderr,
                      flush=True)
    print(f"\nServer CPU per tools/call by answer size (best of {options.rounds} alternated rounds; "
          f"load {os.getloadavg()[0]:.2f}; {time.strftime('%Y-%m-%d')})\n")
    head = " | ".join(f"{size // 1024} KiB: us (us/KiB), peak MiB" for size in sizes)
    print(f"| server | {head} |")
    print("|---|" + "---|" * len(sizes))
    for name in ROWS:
        cells = []
        for size in sizes:
            us, rss = best[name, size]
            cells.append(f"{us:,.1f} ({us / (size / 1024):,.2f}), {rss / 1024:.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if options.json:
        rows = [{"server": n, "size": s, "us_per_call": v[0], "peak_rss_kib": v[1]}
                for (n, s), v in best.items()]
        Path(options.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
