"""Instructions per ``tools/call`` of a server process, counted by valgrind: the measure of
``bench_server.py`` that does not move with the machine's load.

Usage: ``python bench/count_server.py [--calls N] [--only ROW] [--baseline DIR]``.

Each server (the HTTP rows of ``bench_server.py`` with the ``async def`` tool, and their
floors) runs twice under ``valgrind --tool=cachegrind``: once through the handshake and
warm-up only, once with ``--calls`` more calls. The difference of the two totals over
``--calls`` is the user-space instructions one call costs the server: start-up, imports
and the handshake cancel out. System calls are not counted (``strace -c`` shows the same
three per call for ours and the floors: ``epoll_wait``, ``recvfrom``, ``sendto``).

Time per instruction is not the same for every program (a larger working set misses more
caches), so this count ranks versions of one server; the CPU ratios of ``bench_server.py``
remain the targets' measure.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__":  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_server import ADD, ASGI_SERVE, HERE, PY, SSE_SERVE, call, free_port, http_server, session

ROWS: dict[str, Callable[[str, int], list[str]]] = {
    "h11 JSON": lambda add, port: [PY, "-m", "mcp_sansio_cli", "serve", add, "--http", str(port)],
    "h11 JSON floor": lambda add, port: [PY, str(HERE / "h11_floor_server.py"), str(port)],
    "h11 SSE": lambda add, port: [PY, "-c", SSE_SERVE, add, str(port)],
    "h11 SSE floor": lambda add, port: [PY, str(HERE / "h11_floor_server.py"), str(port), "sse"],
    "ASGI JSON": lambda add, port: [PY, "-c", ASGI_SERVE, add, str(port), "json"],
    "ASGI JSON floor": lambda add, port: [PY, str(HERE / "asgi_floor_app.py"), str(port)],
    "ASGI SSE": lambda add, port: [PY, "-c", ASGI_SERVE, add, str(port), "sse"],
    "ASGI SSE floor": lambda add, port: [PY, str(HERE / "asgi_floor_app.py"), str(port), "sse"],
}


def instructions(row: str, calls: int, tree: str | None) -> int:
    """The server's total user-space instructions over the handshake, warm-up and ``calls``."""
    port = free_port()
    add = str(Path(tree, "bench", "add_server.py")) if tree else ADD
    env = {**os.environ, "BENCH_ASYNC_ADD": "1", "PYTHONHASHSEED": "0"}
    if tree:  # the tree's packages first, and not the working directory's (see bench_server)
        env |= {"PYTHONPATH": os.pathsep.join([tree, os.path.join(tree, "drivers")]), "PYTHONSAFEPATH": "1"}
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "cachegrind.out")
        valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}"]
        # (valgrind writes its counts as the server ends: give it time to)
        with http_server([*valgrind, *ROWS[row](add, port)], port, env=env, cwd=scratch, start_timeout=300,
                         stop_timeout=120), session(port, 100) as post:
            for rid in range(1000, 1000 + calls):
                reply = post(call(rid))
                assert "result" in reply, reply
        found = re.search(r"^summary: (\d+)", Path(out).read_text(), re.MULTILINE)
        assert found is not None, f"no cachegrind summary for {row}"
        return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--only", help="run only the rows that start with this")
    parser.add_argument("--baseline", help="a source tree to count a (before) twin of each of our rows from")
    options = parser.parse_args()
    if options.only and not any(row.startswith(options.only) for row in ROWS):
        parser.error(f"--only {options.only!r} starts no row; the rows: {', '.join(ROWS)}")
    results: dict[str, float] = {}
    for row in ROWS:
        if options.only and not row.startswith(options.only):
            continue
        trees: list[tuple[str, str | None]] = [(row, None)]
        if options.baseline and not row.endswith("floor"):
            trees.append((f"{row} (before)", options.baseline))
        for name, tree in trees:
            per_call = (instructions(row, options.calls, tree) - instructions(row, 0, tree)) / options.calls
            results[name] = per_call
            print(f"  {name:24} {per_call / 1000:8.1f}k", file=sys.stderr, flush=True)
    print(f"\nUser-space instructions per tools/call of the server ({options.calls} calls, valgrind)\n")
    print("| row | k instructions / call | this / floor |")
    print("|---|---|---|")
    for name, per_call in results.items():
        base = name.removesuffix(" (before)")
        floor = results.get(base if base.endswith("floor") else f"{base} floor")
        versus = f"{per_call / floor:.2f}x" if floor else ""
        print(f"| {name} | {per_call / 1000:.1f} | {versus} |")


if __name__ == "__main__":
    main()
