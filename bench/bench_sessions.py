"""How the HTTP server's cost grows with the sessions it holds (issue #20, "a server whose
cost stays flat").

Usage: ``python bench/bench_sessions.py [--sessions 1,1000,10000,50000] [--calls N] [--repeat R]
[--connections 0,1000,10000] [--waiting 0,1000,10000]``.

Pure core, no socket: one :class:`HttpServer` is given ``N`` live handshake-era sessions
(each opened by its own ``initialize`` + ``notifications/initialized``, as a client would),
then one session makes ``--calls`` ``tools/call`` requests; each is what a driver does per
request: feed the bytes, run the handler, answer, drain the bytes, ask for the next deadline.
Reported per ``N``: the CPU per session opened (over the whole set-up), the CPU per call, the
ratio of that to the one-session figure, and the RSS the sessions cost. Runs alternate
between ``N`` values, ``--repeat`` times, and the best of each is kept. ``--connections``
measures the same call beside that many other open (idle, keep-alive) connections instead:
what each request costs as the connections a server holds grow; ``--waiting`` beside that many
other sessions each waiting for its client's answer to a question (an elicitation, with its
timeout), as a server with many users at a form is.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import time

from mcp_sansio.server import Ask, HandlerCallReceived, MCPServer
from mcp_sansio.server.http import HttpConfig, HttpServer

INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
ASKABLE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
    "clientInfo": {"name": "bench", "version": "1"}}})
ASK = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {
    "a": 1, "b": 2}}})


def _app() -> MCPServer:
    app = MCPServer("add-server", version="1.0.0")

    @app.tool()
    def add(a: float, b: float) -> str:
        """Add two numbers."""
        return repr(a + b)

    return app


def _post(body: str, session: str | None = None) -> bytes:
    head = ["POST /mcp HTTP/1.1", "host: 127.0.0.1:8000", "content-type: application/json",
            "accept: application/json, text/event-stream", f"content-length: {len(body)}"]
    if session is not None:
        head += [f"mcp-session-id: {session}", "mcp-protocol-version: 2025-11-25"]
    return ("\r\n".join(head) + "\r\n\r\n" + body).encode()


def _serve(server: HttpServer, conn: int, data: bytes, now: float) -> bytes:
    """What a driver does with one request: bytes in, handlers run, bytes out, deadline."""
    server.receive_data(conn, data, now)
    while (event := server.next_event()) is not None:
        if isinstance(event, HandlerCallReceived):
            server.respond(event.call, event.handler.fn(**event.arguments), now=now)
    out = server.data_to_send(conn)
    server.next_deadline()
    return out


def _session_id(response: bytes) -> str:
    for line in response.split(b"\r\n"):
        if line.lower().startswith(b"mcp-session-id:"):
            return line.split(b":", 1)[1].strip().decode()
    raise RuntimeError(f"no session id in {response[:200]!r}")


def run(sessions: int, calls: int, connections: int = 0, waiting: int = 0) -> tuple[float, float, float]:
    """CPU seconds per session opened, per call, and KiB of RSS per session (beside
    ``connections`` other open connections and ``waiting`` sessions waiting for an answer)."""
    gc.collect()
    limits = {"max_sessions": sessions + waiting + 1, "max_connections": connections + waiting + 2,
              "max_connections_per_peer": connections + waiting + 2}
    if "max_sessions_per_peer" in HttpConfig.__struct_fields__:
        limits["max_sessions_per_peer"] = sessions + waiting + 1
    config = HttpConfig.loopback(**limits)
    try:
        server = HttpServer(_app(), secret=b"s" * 32, entropy=b"e" * 32, config=config)
    except TypeError:  # a checkout from before per-process entropy, for before/after runs
        server = HttpServer(_app(), secret=b"s" * 32, config=config)  # type: ignore[call-arg]  # old API
    for _ in range(connections):
        server.connection_made(0.0)
    conn = server.connection_made(0.0)
    for _ in range(waiting):  # each asks its client a question and waits (its call runs on)
        other = server.connection_made(0.0)
        sid = _session_id(_serve(server, other, _post(ASKABLE), 0.0))
        _serve(server, other, _post(INITIALIZED, sid), 0.0)
        server.receive_data(other, _post(ASK, sid), 0.0)
        event = server.next_event()
        assert isinstance(event, HandlerCallReceived)
        server.ask(event.call, [Ask.elicit("Your name?", {"type": "object", "properties": {}})], now=0.0)
        server.data_to_send(other)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.process_time()
    ids = []
    for _ in range(sessions):
        sid = _session_id(_serve(server, conn, _post(INIT), 0.0))
        _serve(server, conn, _post(INITIALIZED, sid), 0.0)
        ids.append(sid)
    opened = time.process_time() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    call = _post(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}), ids[0])
    assert b'"3.0"' in _serve(server, conn, call, 1.0)
    start = time.process_time()
    for i in range(calls):
        _serve(server, conn, call, 1.0 + i * 1e-6)
    per_call = (time.process_time() - start) / calls
    return opened / sessions, per_call, rss / sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="1,1000,10000,50000")
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--connections", help="other open connections to measure beside, e.g. 0,1000,10000")
    parser.add_argument("--waiting", help="other sessions waiting for an answer to measure beside")
    options = parser.parse_args()
    if options.connections or options.waiting:
        beside(options, [int(n) for n in (options.connections or options.waiting).split(",")],
               "open connections" if options.connections else "waiting sessions")
        return
    counts = [int(n) for n in options.sessions.split(",")]
    best: dict[int, tuple[float, float, float]] = {}
    for _ in range(options.repeat):
        for n in counts:  # alternate: every N in every round
            got = run(n, options.calls)
            old = best.get(n)
            best[n] = got if old is None else (min(old[0], got[0]), min(old[1], got[1]), max(old[2], got[2]))
    base = best[counts[0]][1]
    print(f"{'sessions':>9} {'us/session opened':>18} {'us/call':>9} {'x 1st':>6} {'KiB RSS/session':>16}")
    for n in counts:
        opened, per_call, rss = best[n]
        print(f"{n:>9} {opened * 1e6:>18.1f} {per_call * 1e6:>9.1f} {per_call / base:>6.2f} {rss:>16.2f}")


def beside(options: argparse.Namespace, counts: list[int], what: str) -> None:
    """The per-call figure beside each count of ``what`` (other open connections, or
    sessions waiting for an answer)."""
    best: dict[int, float] = {}
    for _ in range(options.repeat):
        for n in counts:
            if what == "open connections":
                per_call = run(1, options.calls, connections=n)[1]
            else:
                per_call = run(1, options.calls, waiting=n)[1]
            best[n] = min(per_call, best.get(n, per_call))
    base = best[counts[0]]
    print(f"{what:>17} {'us/call':>9} {'x 1st':>6}")
    for n in counts:
        print(f"{n:>17} {best[n] * 1e6:>9.1f} {best[n] / base:>6.2f}")


if __name__ == "__main__":
    main()
