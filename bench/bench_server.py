"""Server CPU per ``tools/call``: mcp-sansio's server against the official SDK's ``MCPServer``
and FastMCP 4.2.

Usage: ``python bench/bench_server.py [--calls N] [--json FILE] [--only TRANSPORT] [--baseline DIR]``.

Every server answers the same tool (``add(a, b)``, the sum as text: ``add_server.py`` for
ours, ``sdk_add_server.py`` for the SDK's, ``fastmcp_add_server.py`` for FastMCP's) to the
same client, one request at a time, after
the 2025-11-25 handshake. What is measured is the **server process's** CPU time (user +
system, from ``/proc/PID/schedstat``, nanoseconds) over ``--calls`` calls after a warm-up,
divided by the number of calls; the client's CPU is not counted. Rows:

- stdio: the SDK; FastMCP; ours (``mcp-sansio serve bench/add_server.py``) with the asyncio, anyio
  and blocking drivers; the floor, ``stdio_floor_server.py`` (a line loop decoding with
  msgspec and answering: the same work with no MCP library).
- Streamable HTTP, JSON answers: the SDK and FastMCP under uvicorn (``json_response=True``); ours
  (``mcp-sansio serve ... --http``, asyncio and blocking drivers); our ASGI app under uvicorn.
- Streamable HTTP, SSE answers: the SDK and FastMCP under uvicorn (their default); ours and our ASGI app
  with ``response_mode="sse"``.
- Every HTTP row of ours is run twice: with the plain ``def add`` (the default policy runs it
  in a worker thread) and, marked "async def", with ``async def add`` (``BENCH_ASYNC_ADD=1``:
  run on the loop), so the transport's own cost shows apart from the thread handoff.

``--baseline DIR`` adds a "(before)" row beside each of ours, run from the source tree in
``DIR`` (e.g. ``git worktree add /tmp/before main``; its ``mcp_sansio`` and ``drivers``
come first on ``PYTHONPATH``), in the same alternated rounds: a change's before/after.

Targets (issue #12): at least 10x less CPU per call than the SDK on every transport, and
within 3x of the floor over stdio. Issue #20: over HTTP, JSON within 1.2x of the bare h11
floor, SSE within 1.5x, the ASGI app within 1.5x of the bare ASGI app.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).parent
PY = sys.executable
ADD = str(HERE / "add_server.py")
SDK = str(HERE / "sdk_add_server.py")
FASTMCP = str(HERE / "fastmcp_add_server.py")
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
SSE_SERVE = ("import asyncio, runpy, sys; from mcp_sansio_asyncio import serve_http; "
             "from mcp_sansio.server.http import HttpConfig; "
             "app = runpy.run_path(sys.argv[1])['app']; "
             "config = HttpConfig.loopback(response_mode='sse'); "
             "asyncio.run(serve_http(app, port=int(sys.argv[2]), config=config))")
ASGI_SERVE = ("import runpy, sys, uvicorn; from mcp_sansio.server.http import HttpConfig; "
              "from mcp_sansio_asgi import AsgiApp; "
              "app = runpy.run_path(sys.argv[1])['app']; "
              "mode = sys.argv[3]; "
              "uvicorn.run(AsgiApp(app, config=HttpConfig.loopback(response_mode=mode)), host='127.0.0.1', "
              "port=int(sys.argv[2]), log_level='warning')")


def cpu_ns(pid: int) -> int:
    """CPU time the process has used, in nanoseconds."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def call(rid: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": rid, "b": 0.5}}}


def measure_stdio(command: list[str], calls: int, warmup: int) -> float:
    """Microseconds of server CPU per call over stdio."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def send(message: dict[str, object]) -> None:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def answer() -> dict[str, object]:
        while True:
            message: dict[str, object] = json.loads(stdout.readline())
            if "id" in message:
                return message

    try:
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        answer()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for rid in range(1, warmup + 1):
            send(call(rid))
            answer()
        start = cpu_ns(proc.pid)
        for rid in range(warmup + 1, warmup + calls + 1):
            send(call(rid))
            reply = answer()
            assert "result" in reply, reply
        used = cpu_ns(proc.pid) - start
    finally:
        stdin.close()
        proc.wait(10)
    return used / calls / 1000


@contextmanager
def http_server(command: list[str], port: int, *, env: dict[str, str] | None = None, cwd: str | None = None,
                start_timeout: float = 30, stop_timeout: float = 10) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` until it listens on ``port`` (``start_timeout`` at most); at the end,
    SIGTERM, then SIGKILL if it has not ended within ``stop_timeout``."""
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{command} did not listen on {port}") from None
                time.sleep(0.05)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(stop_timeout)
        except subprocess.TimeoutExpired:  # (the SDK holding 10,000 sessions takes longer to end)
            proc.kill()
            proc.wait()


def _body(response: http.client.HTTPResponse) -> dict[str, object]:
    data = response.read()
    if response.getheader("content-type", "").startswith("text/event-stream"):
        for line in data.split(b"\n"):
            if line.startswith(b"data:") and line[5:].strip():
                message: dict[str, object] = json.loads(line[5:])
                if "id" in message:
                    return message
        raise AssertionError(f"no answer in {data!r}")
    result: dict[str, object] = json.loads(data)
    return result


Post = Callable[[dict[str, object]], dict[str, object]]


@contextmanager
def session(port: int, warmup: int) -> Iterator[Post]:
    """One keep-alive connection past the 2025-11-25 handshake and ``warmup`` calls; what
    POSTs a message on it and gives the answer (JSON or from the SSE body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

    def post(message: dict[str, object]) -> http.client.HTTPResponse:
        conn.request("POST", "/mcp", json.dumps(message), headers)
        return conn.getresponse()

    try:
        first = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        _body(first)
        headers["mcp-session-id"] = first.getheader("mcp-session-id") or ""
        headers["mcp-protocol-version"] = "2025-11-25"
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}).read()
        for rid in range(1, warmup + 1):
            _body(post(call(rid)))
        yield lambda message: _body(post(message))
    finally:
        conn.close()


def measure_http(command: list[str], port: int, calls: int, warmup: int) -> float:
    """Microseconds of server CPU per call over Streamable HTTP (one keep-alive connection)."""
    with http_server(command, port) as proc, session(port, warmup) as post:
        start = cpu_ns(proc.pid)
        for rid in range(warmup + 1, warmup + calls + 1):
            reply = post(call(rid))
            assert "result" in reply, reply
        used = cpu_ns(proc.pid) - start
    return used / calls / 1000


def with_baseline(table: list[tuple[str, str, Callable[[], float]]],
                  baseline: str) -> list[tuple[str, str, Callable[[], float]]]:
    """``table`` with a "(before)" twin of each mcp-sansio row, run from the tree ``baseline``.

    ``PYTHONSAFEPATH`` keeps the working directory (``-m``, ``-c``) off the front of
    ``sys.path``: run from a checkout, it would put that checkout's ``mcp_sansio`` before
    the baseline's, and the "(before)" row would measure the new core."""
    path = os.pathsep.join([baseline, os.path.join(baseline, "drivers")])
    out = []
    for transport, server, run in table:
        out.append((transport, server, run))
        if server.startswith("mcp-sansio"):
            before = with_env(with_env(run, "PYTHONPATH", path), "PYTHONSAFEPATH", "1")
            out.append((transport, f"{server} (before)", before))
    return out


def with_env(run: Callable[[], float], name: str, value: str) -> Callable[[], float]:
    """``run`` with ``name=value`` in the environment its server inherits."""
    def wrapped() -> float:
        saved = os.environ.get(name)
        os.environ[name] = value
        try:
            return run()
        finally:
            if saved is None:
                del os.environ[name]
            else:
                os.environ[name] = saved
    return wrapped


def with_async_add(table: Iterator[tuple[str, str, Callable[[], float]]]
                   ) -> Iterator[tuple[str, str, Callable[[], float]]]:
    """``table`` with an "async def" twin of each of our HTTP rows (``BENCH_ASYNC_ADD=1``)."""
    for transport, server, run in table:
        yield transport, server, run
        if server.startswith("mcp-sansio") and transport.startswith("HTTP"):
            yield transport, f"{server} async def", with_env(run, "BENCH_ASYNC_ADD", "1")


def rows(calls: int) -> Iterator[tuple[str, str, Callable[[], float]]]:
    warm = max(50, calls // 10)
    serve = [PY, "-m", "mcp_sansio_cli", "serve", ADD]
    def stdio(command: list[str]) -> Callable[[], float]:
        return lambda: measure_stdio(command, calls, warm)

    def http(command: Callable[[int], list[str]]) -> Callable[[], float]:
        def run() -> float:
            port = free_port()
            return measure_http(command(port), port, calls, warm)
        return run

    yield "stdio", "SDK MCPServer", stdio([PY, SDK])
    yield "stdio", "FastMCP 4.2", stdio([PY, FASTMCP])
    for driver in ("asyncio", "anyio", "sync"):
        yield "stdio", f"mcp-sansio ({driver})", stdio([*serve, "--driver", driver])
    yield "stdio", "floor (msgspec line loop)", stdio([PY, str(HERE / "stdio_floor_server.py")])
    yield "HTTP JSON", "SDK MCPServer (uvicorn)", http(lambda p: [PY, SDK, "--http", str(p), "--json"])
    yield "HTTP JSON", "FastMCP 4.2 (uvicorn)", http(lambda p: [PY, FASTMCP, "--http", str(p), "--json"])
    for driver in ("asyncio", "sync"):
        yield "HTTP JSON", f"mcp-sansio h11 ({driver})", http(
            lambda p, d=driver: [*serve, "--driver", d, "--http", str(p)])  # type: ignore[misc]
    yield "HTTP JSON", "floor (bare h11)", http(lambda p: [PY, str(HERE / "h11_floor_server.py"), str(p)])
    yield "HTTP JSON", "mcp-sansio ASGI (uvicorn)", http(lambda p: [PY, "-c", ASGI_SERVE, ADD, str(p),
                                                                   "json"])
    yield "HTTP JSON", "floor (bare ASGI, uvicorn)", http(lambda p: [PY, str(HERE / "asgi_floor_app.py"),
                                                                    str(p)])
    yield "HTTP SSE", "SDK MCPServer (uvicorn)", http(lambda p: [PY, SDK, "--http", str(p)])
    yield "HTTP SSE", "FastMCP 4.2 (uvicorn)", http(lambda p: [PY, FASTMCP, "--http", str(p)])
    yield "HTTP SSE", "mcp-sansio h11 (asyncio)", http(lambda p: [PY, "-c", SSE_SERVE, ADD, str(p)])
    yield "HTTP SSE", "floor (bare h11)", http(lambda p: [PY, str(HERE / "h11_floor_server.py"), str(p),
                                                         "sse"])
    yield "HTTP SSE", "mcp-sansio ASGI (uvicorn)", http(lambda p: [PY, "-c", ASGI_SERVE, ADD, str(p), "sse"])
    yield "HTTP SSE", "floor (bare ASGI, uvicorn)", http(lambda p: [PY, str(HERE / "asgi_floor_app.py"),
                                                                   str(p), "sse"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over every row, best kept")
    parser.add_argument("--only", help="run only the rows whose transport starts with this")
    parser.add_argument("--baseline", help="a source tree to run a (before) twin of each of our rows from")
    options = parser.parse_args()
    every = list(with_async_add(rows(options.calls)))
    table = [r for r in every if options.only is None or r[0].startswith(options.only)]
    if not table:
        parser.error(f"--only {options.only!r} starts no transport; the transports: "
                     f"{', '.join(dict.fromkeys(r[0] for r in every))}")
    if options.baseline:
        table = with_baseline(table, options.baseline)
    best: dict[tuple[str, str], float] = {}
    for _ in range(options.rounds):  # alternate: every contender once per round
        for transport, server, run in table:
            us = run()
            best[transport, server] = min(us, best.get((transport, server), us))
            print(f"  {transport:10} {server:40} {us:8.1f} us", file=sys.stderr, flush=True)
    results = [{"transport": t, "server": n, "us_per_call": us} for (t, n), us in best.items()]
    print(f"\nServer CPU per tools/call ({options.calls} sequential calls after a warm-up, best of "
          f"{options.rounds} alternated rounds; load {os.getloadavg()[0]:.2f})\n")
    print("| transport | server | CPU us/call | SDK / this | FastMCP / this | this / floor |")
    print("|---|---|---|---|---|---|")
    for (transport, server), us in best.items():
        sdk = next((v for (t, n), v in best.items() if t == transport and n.startswith("SDK")), None)
        fast = next((v for (t, n), v in best.items() if t == transport and n.startswith("FastMCP")), None)
        family = "ASGI" if "ASGI" in server else "h11" if "h11" in server else ""
        floor = next((v for (t, n), v in best.items() if t == transport and n.startswith("floor")
                      and family in n), None)
        versus = f"{us / floor:.2f}x" if floor is not None else ""
        ratio = f"{sdk / us:.1f}x" if sdk is not None else ""
        to_fast = f"{fast / us:.1f}x" if fast is not None else ""
        print(f"| {transport} | {server} | {us:.1f} | {ratio} | {to_fast} | {versus} |")
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
